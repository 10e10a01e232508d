//! The `arr` dialect: explicit mutable 1-D buffers, the level just above
//! code generation (IR-SPEC §3, `LEVELS.md` "arr").
//!
//! | op | operands -> results | effect |
//! |---|---|---|
//! | `arr.alloc(n)` | `index -> arr<T>` | allocates `n` zero-initialised elements (`{uninit}`: undefined until stored) |
//! | `arr.load(a, i)` | `arr<T>, index -> T` | reads `a`; faults out of bounds |
//! | `arr.store(a, i, x)` | `arr<T>, index, T` | writes `a`; faults out of bounds |
//! | `arr.len(a)` | `arr<T> -> index` | reads `a` (pushes change it) |
//! | `arr.push(a, x)` | `arr<T>, T` | appends (grows the buffer) |
//! | `arr.from_vec(v)` | `vec<T> -> arr<T>` | allocates a copy |
//! | `arr.to_vec(a)` | `arr<T> -> vec<T>` | reads `a`; the lowering emits it as `a`'s last use |
//! | `arr.find_or_insert(keys, k)` | `arr<K>, K -> index` | position of `k`, appending it if absent |
//! | `arr.free(a)` | `arr<T>` | releases a buffer not converted to a vec |
//!
//! `arr.alloc {uninit}` (scalar elements only) leaves the elements
//! undefined, and native code allocates without zeroing. Lowerings add it
//! where they store every element before any read (a collect or scan loop
//! with one emit per iteration). The interpreter checks that promise: the
//! elements start as a marker ([`Uninit`]), and `arr.load` of one, or
//! `arr.to_vec` of a buffer holding one, faults.
//!
//! No `arr` op is pure. At run time an `arr<T>` is
//! `RtValue::Arr(Rc<RefCell<Vec<RtValue>>>)`; `arr.free` clears the buffer,
//! so a use after free faults as out of bounds. Elements of `arr<vec<T>>`
//! start as empty vectors and elements of `arr<arr<T>>` as fresh empty
//! buffers. Keys of `arr.find_or_insert` compare like run-time values
//! (floats by bit pattern).
//!
//! Each op has a custom form (`%x = arr.load %a, %i : arr<f64>`), declared
//! with its spec (`docs/custom-forms.md`).

use std::cell::RefCell;
use std::rc::Rc;

use smallvec::{smallvec, SmallVec};

use ir::interp::{Interp, MatValue, RtValue, RunError};
use ir::spec::{Arity, OpSpec, Registry, Traits};
use ir::{Builder, Context, OpId, Type, ValueId};

use crate::util::{as_size, zero_value};

/// Largest number of elements `arr.alloc` accepts (an error beyond, never an abort).
pub const MAX_ALLOC: usize = 1 << 32;

// ----- builder helpers ------------------------------------------------------

/// `arr.alloc(n) : arr<elem>`.
pub fn alloc(b: &mut Builder, n: ValueId, elem: Type) -> ValueId {
    b.op1("arr.alloc", &[n], Type::arr(elem), vec![])
}
/// The attribute of an `arr.alloc` whose elements are undefined until stored.
pub const UNINIT: &str = "uninit";

/// The attribute of an `arr.load` that copies an element which may be
/// undefined (a `memref.realloc`'s copy loop: the undefined elements of the
/// old allocation stay undefined in the new one). The interpreter returns
/// the undefined marker instead of faulting, and the `arr.store` that takes
/// it stores the marker; the native backends ignore the attribute.
pub const COPIES_UNINIT: &str = "copies_uninit";

/// The interpreter's element of an `arr.alloc {uninit}` not yet stored.
#[derive(Debug)]
pub struct Uninit;

/// `arr.alloc(n) : arr<elem>` for a lowering that stores every element
/// before anything reads the buffer: `{uninit}` where `elem` is a scalar
/// (native code does not zero it), a plain zeroed `arr.alloc` otherwise
/// (vector and array elements must start as empty values).
pub fn alloc_overwritten(b: &mut Builder, n: ValueId, elem: Type) -> ValueId {
    let attrs = if elem.is_scalar() {
        vec![(UNINIT.to_string(), ir::Attribute::Unit)]
    } else {
        vec![]
    };
    b.op1("arr.alloc", &[n], Type::arr(elem), attrs)
}

fn is_uninit(v: &RtValue) -> bool {
    matches!(v, RtValue::Opaque(o) if o.is::<Uninit>())
}

fn read_uninit(ctx: &Context, op: OpId) -> RunError {
    RunError::at(
        ctx,
        op,
        "reads an element of an 'arr.alloc {uninit}' buffer before it is stored",
    )
}

/// `arr.load(a, i)` (the result type is `a`'s element type).
pub fn load(b: &mut Builder, a: ValueId, i: ValueId) -> ValueId {
    let t = elem_of(b.ctx, a);
    b.op1("arr.load", &[a, i], t, vec![])
}
/// `arr.load(a, i) {in_bounds}`: a read the caller has proved in bounds
/// (the twin of [`store_in_bounds`]); code generators omit its check.
pub fn load_in_bounds(b: &mut Builder, a: ValueId, i: ValueId) -> ValueId {
    let t = elem_of(b.ctx, a);
    b.op1("arr.load", &[a, i], t, crate::util::in_bounds_attr())
}
/// `arr.load(a, i) {in_bounds, copies_uninit}`: a proved read that only
/// feeds an `arr.store` (see [`COPIES_UNINIT`]).
pub fn load_copy_in_bounds(b: &mut Builder, a: ValueId, i: ValueId) -> ValueId {
    let t = elem_of(b.ctx, a);
    let mut attrs = crate::util::in_bounds_attr();
    attrs.push((COPIES_UNINIT.to_string(), ir::Attribute::Unit));
    b.op1("arr.load", &[a, i], t, attrs)
}
/// `arr.store(a, i, x)`.
pub fn store(b: &mut Builder, a: ValueId, i: ValueId, x: ValueId) {
    b.op("arr.store", &[a, i, x], &[], vec![]);
}
/// `arr.store(a, i, x) {in_bounds}`: a store the caller has proved in
/// bounds (e.g. `a` was allocated with `n` elements and `i` is the
/// induction variable of a loop over `[0, n)`); code generators omit its
/// bounds check.
pub fn store_in_bounds(b: &mut Builder, a: ValueId, i: ValueId, x: ValueId) {
    b.op("arr.store", &[a, i, x], &[], crate::util::in_bounds_attr());
}
/// `arr.len(a)`.
pub fn len(b: &mut Builder, a: ValueId) -> ValueId {
    b.op1("arr.len", &[a], Type::Index, vec![])
}
/// `arr.push(a, x)`.
pub fn push(b: &mut Builder, a: ValueId, x: ValueId) {
    b.op("arr.push", &[a, x], &[], vec![]);
}
/// `arr.from_vec(v)`.
pub fn from_vec(b: &mut Builder, v: ValueId) -> ValueId {
    let t = b.ctx.ty(v).elem().cloned().unwrap_or(Type::F64);
    b.op1("arr.from_vec", &[v], Type::arr(t), vec![])
}
/// `arr.to_vec(a)`.
pub fn to_vec(b: &mut Builder, a: ValueId) -> ValueId {
    let t = elem_of(b.ctx, a);
    b.op1("arr.to_vec", &[a], Type::vec(t), vec![])
}
/// `arr.find_or_insert(keys, k)`.
pub fn find_or_insert(b: &mut Builder, keys: ValueId, k: ValueId) -> ValueId {
    b.op1("arr.find_or_insert", &[keys, k], Type::Index, vec![])
}
/// `arr.free(a)`.
pub fn free(b: &mut Builder, a: ValueId) {
    b.op("arr.free", &[a], &[], vec![]);
}

fn elem_of(ctx: &Context, a: ValueId) -> Type {
    match ctx.ty(a) {
        Type::Arr(t) => (**t).clone(),
        other => other.clone(),
    }
}

/// The zero value of `ty` for a freshly allocated element.
pub fn zero_of(ty: &Type) -> RtValue {
    match ty {
        Type::Vec(_) => RtValue::Vec(Rc::new(Vec::new())),
        Type::Mat(_) => RtValue::Mat(Rc::new(MatValue {
            rows: 0,
            cols: 0,
            data: Vec::new(),
        })),
        Type::Arr(_) => RtValue::Arr(Rc::new(RefCell::new(Vec::new()))),
        t => zero_value(t),
    }
}

// ----- verifiers ------------------------------------------------------------

fn arr_elem(ctx: &Context, op: OpId, i: usize) -> Result<&Type, String> {
    match ctx.ty(ctx.operand(op, i)) {
        Type::Arr(t) => Ok(t),
        t => Err(format!("operand #{i} must be an 'arr<T>', got '{t}'")),
    }
}

fn expect_index(ctx: &Context, op: OpId, i: usize) -> Result<(), String> {
    match ctx.ty(ctx.operand(op, i)) {
        Type::Index => Ok(()),
        t => Err(format!("operand #{i} must be 'index', got '{t}'")),
    }
}

fn expect_ty(ctx: &Context, v: ValueId, want: &Type, what: &str) -> Result<(), String> {
    let got = ctx.ty(v);
    if got == want {
        Ok(())
    } else {
        Err(format!("{what} has type '{got}', expected '{want}'"))
    }
}

fn verify_alloc(ctx: &Context, op: OpId) -> Result<(), String> {
    expect_index(ctx, op, 0)?;
    match ctx.ty(ctx.result(op, 0)) {
        Type::Arr(t) if ctx.attr(op, UNINIT).is_some() && !t.is_scalar() => Err(format!(
            "'{{uninit}}' needs scalar elements, but they are '{t}'"
        )),
        Type::Arr(_) => Ok(()),
        t => Err(format!("result must be an 'arr<T>', got '{t}'")),
    }
}

fn verify_load(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = arr_elem(ctx, op, 0)?.clone();
    expect_index(ctx, op, 1)?;
    expect_ty(ctx, ctx.result(op, 0), &t, "result")
}

fn verify_store(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = arr_elem(ctx, op, 0)?.clone();
    expect_index(ctx, op, 1)?;
    expect_ty(ctx, ctx.operand(op, 2), &t, "stored value")
}

fn verify_len(ctx: &Context, op: OpId) -> Result<(), String> {
    arr_elem(ctx, op, 0)?;
    expect_ty(ctx, ctx.result(op, 0), &Type::Index, "result")
}

fn verify_push(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = arr_elem(ctx, op, 0)?.clone();
    expect_ty(ctx, ctx.operand(op, 1), &t, "pushed value")
}

fn verify_from_vec(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = match ctx.ty(ctx.operand(op, 0)) {
        Type::Vec(t) => (**t).clone(),
        t => return Err(format!("operand #0 must be a 'vec<T>', got '{t}'")),
    };
    expect_ty(ctx, ctx.result(op, 0), &Type::arr(t), "result")
}

fn verify_to_vec(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = arr_elem(ctx, op, 0)?.clone();
    expect_ty(ctx, ctx.result(op, 0), &Type::vec(t), "result")
}

fn verify_find_or_insert(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = arr_elem(ctx, op, 0)?.clone();
    expect_ty(ctx, ctx.operand(op, 1), &t, "key")?;
    expect_ty(ctx, ctx.result(op, 0), &Type::Index, "result")
}

fn verify_free(ctx: &Context, op: OpId) -> Result<(), String> {
    arr_elem(ctx, op, 0).map(|_| ())
}

// ----- semantics ------------------------------------------------------------

type Res = Result<SmallVec<[RtValue; 2]>, RunError>;

/// The buffer of run-time value `v`, or a fault at `op`.
pub(crate) fn buffer<'v>(
    ctx: &Context,
    op: OpId,
    v: &'v RtValue,
) -> Result<&'v Rc<RefCell<Vec<RtValue>>>, RunError> {
    match v {
        RtValue::Arr(a) => Ok(a),
        _ => Err(RunError::at(ctx, op, "operand is not an array buffer")),
    }
}

/// `v` as an index into `[0, len)`, or a fault at `op`.
pub(crate) fn index(ctx: &Context, op: OpId, v: &RtValue, len: usize) -> Result<usize, RunError> {
    match v.as_int() {
        Some(i) if i >= 0 && (i as u64) < len as u64 => Ok(i as usize),
        Some(i) => Err(RunError::at(
            ctx,
            op,
            format!("index {i} is out of bounds for an array of length {len}"),
        )),
        None => Err(RunError::at(ctx, op, "expected an integer index")),
    }
}

/// A fresh buffer of `n` zero elements of `elem` (see [`zero_of`]), or a
/// fault at `op` beyond [`MAX_ALLOC`] or when memory runs out.
pub fn zeroed_buffer(ctx: &Context, op: OpId, n: usize, elem: &Type) -> Result<RtValue, RunError> {
    new_buffer(ctx, op, n, elem, false)
}

/// A fresh buffer of `n` [`Uninit`] markers (elements undefined until
/// stored: reading one faults), with [`zeroed_buffer`]'s faults.
pub fn uninit_buffer(ctx: &Context, op: OpId, n: usize, elem: &Type) -> Result<RtValue, RunError> {
    new_buffer(ctx, op, n, elem, true)
}

/// [`zeroed_buffer`], or with `uninit` a buffer of [`Uninit`] markers.
fn new_buffer(
    ctx: &Context,
    op: OpId,
    n: usize,
    elem: &Type,
    uninit: bool,
) -> Result<RtValue, RunError> {
    if n > MAX_ALLOC {
        return Err(RunError::at(
            ctx,
            op,
            format!("allocation of {n} elements is too large"),
        ));
    }
    let mut data = Vec::new();
    if data.try_reserve_exact(n).is_err() {
        return Err(RunError::at(
            ctx,
            op,
            format!("cannot allocate {n} elements"),
        ));
    }
    if uninit {
        data.resize(n, RtValue::Opaque(Rc::new(Uninit)));
    } else if matches!(elem, Type::Arr(_)) {
        data.extend((0..n).map(|_| zero_of(elem)));
    } else {
        data.resize(n, zero_of(elem));
    }
    Ok(RtValue::Arr(Rc::new(RefCell::new(data))))
}

fn interp_alloc(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let ctx = it.ctx;
    let n = as_size(ctx, op, &args[0])?;
    let elem = elem_of(ctx, ctx.result(op, 0));
    let uninit = ctx.attr(op, UNINIT).is_some();
    Ok(smallvec![new_buffer(ctx, op, n, &elem, uninit)?])
}

fn interp_load(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let ctx = it.ctx;
    let a = buffer(ctx, op, &args[0])?.borrow();
    let i = index(ctx, op, &args[1], a.len())?;
    if is_uninit(&a[i]) && ctx.attr(op, COPIES_UNINIT).is_none() {
        return Err(read_uninit(ctx, op));
    }
    Ok(smallvec![a[i].clone()])
}

fn interp_store(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let ctx = it.ctx;
    let buf = buffer(ctx, op, &args[0])?;
    let mut a = buf
        .try_borrow_mut()
        .map_err(|_| RunError::at(ctx, op, "array is already borrowed"))?;
    let i = index(ctx, op, &args[1], a.len())?;
    a[i] = args[2].clone();
    Ok(smallvec![])
}

fn interp_len(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let n = buffer(it.ctx, op, &args[0])?.borrow().len();
    Ok(smallvec![RtValue::Int(n as i64)])
}

fn interp_push(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let ctx = it.ctx;
    let buf = buffer(ctx, op, &args[0])?;
    let mut a = buf
        .try_borrow_mut()
        .map_err(|_| RunError::at(ctx, op, "array is already borrowed"))?;
    a.push(args[1].clone());
    Ok(smallvec![])
}

fn interp_from_vec(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    match &args[0] {
        RtValue::Vec(v) => Ok(smallvec![RtValue::Arr(Rc::new(RefCell::new(
            v.as_ref().clone()
        )))]),
        _ => Err(RunError::at(it.ctx, op, "operand is not a vector")),
    }
}

fn interp_to_vec(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let a = buffer(it.ctx, op, &args[0])?.borrow();
    if a.iter().any(is_uninit) {
        return Err(read_uninit(it.ctx, op));
    }
    Ok(smallvec![RtValue::Vec(Rc::new(a.clone()))])
}

fn interp_find_or_insert(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let ctx = it.ctx;
    let buf = buffer(ctx, op, &args[0])?;
    let mut a = buf
        .try_borrow_mut()
        .map_err(|_| RunError::at(ctx, op, "array is already borrowed"))?;
    let pos = match a.iter().position(|x| *x == args[1]) {
        Some(p) => p,
        None => {
            a.push(args[1].clone());
            a.len() - 1
        }
    };
    Ok(smallvec![RtValue::Int(pos as i64)])
}

fn interp_free(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let ctx = it.ctx;
    let buf = buffer(ctx, op, &args[0])?;
    let mut a = buf
        .try_borrow_mut()
        .map_err(|_| RunError::at(ctx, op, "array is already borrowed"))?;
    *a = Vec::new();
    Ok(smallvec![])
}

/// Registers the `arr` ops.
pub fn register(r: &mut Registry) {
    let one = Arity::Exactly(1);
    r.register(
        OpSpec::new(
            "arr.alloc",
            "allocates a zero-initialised buffer of n elements",
        )
        .operands(one)
        .results(one)
        .traits(Traits::ALLOCATES)
        .assembly_format("operands attr-dict : type(results)")
        .verify(verify_alloc)
        .interpret(interp_alloc),
    );
    r.register(
        OpSpec::new("arr.load", "reads element i of a buffer")
            .operands(Arity::Exactly(2))
            .results(one)
            .traits(Traits::READS)
            .assembly_format("operands attr-dict : type(first)")
            .infer(crate::util::infer_elem)
            .verify(verify_load)
            .interpret(interp_load),
    );
    r.register(
        OpSpec::new("arr.store", "writes element i of a buffer")
            .operands(Arity::Exactly(3))
            .traits(Traits::WRITES)
            .assembly_format("operands attr-dict : type(first)")
            .verify(verify_store)
            .interpret(interp_store)
            .poison(ir::poison::PoisonRule::PoisonsBuffer),
    );
    r.register(
        OpSpec::new("arr.len", "the current length of a buffer")
            .operands(one)
            .results(one)
            .traits(Traits::READS)
            .assembly_format("operands attr-dict : type(operands)")
            .infer(crate::util::infer_index)
            .verify(verify_len)
            .interpret(interp_len),
    );
    r.register(
        OpSpec::new("arr.push", "appends an element, growing the buffer")
            .operands(Arity::Exactly(2))
            .traits(Traits::READS | Traits::WRITES | Traits::ALLOCATES)
            .assembly_format("operands attr-dict : type(first)")
            .verify(verify_push)
            .interpret(interp_push),
    );
    r.register(
        OpSpec::new("arr.from_vec", "a new buffer holding a copy of a vector")
            .operands(one)
            .results(one)
            .traits(Traits::ALLOCATES)
            .assembly_format("operands attr-dict : type(operands)")
            .infer(crate::util::infer_arr_of_elem)
            .verify(verify_from_vec)
            .interpret(interp_from_vec),
    );
    r.register(
        OpSpec::new("arr.to_vec", "the buffer's contents as an immutable vector")
            .operands(one)
            .results(one)
            .traits(Traits::READS | Traits::ALLOCATES)
            .assembly_format("operands attr-dict : type(operands)")
            .infer(crate::util::infer_vec_of_elem)
            .verify(verify_to_vec)
            .interpret(interp_to_vec),
    );
    r.register(
        OpSpec::new(
            "arr.find_or_insert",
            "the position of a key in a buffer of keys, appending it if absent",
        )
        .operands(Arity::Exactly(2))
        .results(one)
        .traits(Traits::READS | Traits::WRITES | Traits::ALLOCATES)
        .assembly_format("operands attr-dict : type(first)")
        .infer(crate::util::infer_index)
        .verify(verify_find_or_insert)
        .interpret(interp_find_or_insert),
    );
    r.register(
        OpSpec::new("arr.free", "releases a buffer")
            .operands(one)
            .traits(Traits::WRITES)
            .assembly_format("operands attr-dict : type(operands)")
            .verify(verify_free)
            .interpret(interp_free),
    );
}
