//! The `vec` dialect (IR-SPEC §3): immutable 1-D value arrays with value
//! semantics. Every op is pure; sizes and indices are checked at run time
//! (an out-of-bounds `vec.get` or a length mismatch in a zipWith `vec.map`,
//! `vec.add/sub/mul` or `vec.dot` is a [`RunError`], never a panic).
//!
//! Ops (each also has a custom form, declared with its spec: `docs/custom-forms.md`):
//! `vec.len(v) -> index`, `vec.get(v, i) -> T`, `vec.iota(n) -> vec<index>`,
//! `vec.fill(n, x) -> vec<T>`, `vec.map(v1..vk) ({^bb0(e1..ek): vec.yield y})`,
//! `vec.yield`, `vec.reduce(v, init) {kind = #gen.reduce<add|mul|min|max>}`,
//! `vec.sum(v)`, `vec.dot(a, b)`, `vec.filter(v) ({^bb0(e): vec.yield keep})`,
//! `vec.scan(v, init) {kind}` (inclusive), `vec.add/sub/mul(a, b)`,
//! `vec.scale(v, s)`; slices and literals (`vec.reverse`, `vec.slice`,
//! `vec.concat`, `vec.from_elements`) are in [`crate::vec_slices`].
//!
//! Arithmetic (`sum`, `dot`, `reduce`, `scan`, `add/sub/mul/scale`) is
//! defined on the numeric element types `i32`, `i64`, `index`, `f32`, `f64`
//! (not `i1`): integers wrap (two's complement at the type's width), floats
//! are IEEE. `sum` and `dot` are left folds starting from the zero of the
//! element type (`+0.0` for floats); `dot` multiplies then adds (no fused
//! multiply-add). Element operations have exactly the semantics of the
//! `arith` ops the lowering uses (`addi/addf`, `muli/mulf`, ...; the code
//! calls `arith::eval`): in particular `min`/`max` on floats are
//! `arith.minf`/`arith.maxf`, IEEE-754 `minimum`/`maximum` (NaN if either
//! operand is NaN, `-0 < +0`), and on integers signed `mini`/`maxi`.
//!
//! Construction-time rewrites (applied by the smart builder and by
//! `canonicalize`), all exact:
//! - `vec.len(fill(n, x))`, `vec.len(iota(n))` -> `n`;
//!   `vec.len(map(v1..vk))` -> `vec.len(v1)` when the inputs' lengths are
//!   provably equal (k = 1, or the same value / same-length producers), so a
//!   zipWith size fault is never hidden; `vec.len(scale(v, s))` -> `vec.len(v)`;
//!   `vec.len(mat.row(m, i))` -> `mat.cols(m)` (like deleting an unused
//!   pure op, this can remove the row's out-of-bounds fault).
//! - `vec.get(fill(n, x), i)` -> `x`, `vec.get(iota(n), i)` -> `i`, only
//!   where `i` is provably in `[0, n)` ([`index_in_range`], or the read is
//!   marked `in_bounds`): the read's value is used, so its out-of-bounds
//!   fault must stay (a wrong result with exit 0 is worse than the fault).
//! - `vec.get(mat.row(m, i) {transposed}, j)` -> `mat.get(m, i, j)
//!   {transposed}`: element `j` of column `i`, read in place with both
//!   checks (the messages are `mat.get`'s).
//! - `vec.map` over `vec.fill(n, x)`: the body reads `x` and the input
//!   becomes `vec.iota(n)` ([`read_fills`]).
//! - integer elements only: `add(v, fill(n, 0))`, `add(fill(n, 0), v)`,
//!   `sub(v, fill(n, 0))`, `mul(v, fill(n, 1))`, `mul(fill(n, 1), v)` -> `v`,
//!   and only where `n` is provably `vec.len(v)` (e.g. `n` is `vec.len(v)`
//!   itself), since the op faults at run time when the lengths differ. Not
//!   for floats (`-0.0 + 0.0 = +0.0`).
//! - `vec.scale(v, 1)` -> `v` (exact for floats too).
//! - `map(f, map(g, v))` is *not* folded: that is fusion's job.
//!
//! Lowering to `gen` (phase `"gen"`, see LEVELS.md): `vec.map`, `filter`,
//! `iota`, `fill`, `add/sub/mul`, `scale` become collect loops, `sum`, `dot`,
//! `reduce` reduce loops, `scan` a scan loop. Zipping ops check equal lengths
//! with `scf.assert` first. `vec.len` and `vec.get` stay.

use smallvec::{smallvec, SmallVec};

use ir::interp::{Interp, RtValue, RunError};
use ir::spec::{Arity, OpSpec, OpState, Registry, Traits};
use ir::{Attribute, Builder, Context, OpId, RegionId, Type, ValueId};

use crate::gen::{Generator, Monoid};

type Vals = SmallVec<[RtValue; 2]>;
type Repl = Option<SmallVec<[ValueId; 2]>>;

/// The largest number of elements an op may create at run time.
pub const MAX_ELEMS: usize = 1 << 30;

// ----- shared helpers (also used by `mat`) ---------------------------------

/// Whether `t` is an element type the arithmetic ops accept.
pub fn is_numeric(t: &Type) -> bool {
    matches!(
        t,
        Type::I32 | Type::I64 | Type::Index | Type::F32 | Type::F64
    )
}

/// A binary arithmetic operation on scalars.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Min,
    Max,
}

impl BinOp {
    /// The kind named by a `#gen.reduce<k>` (or `#gen.scan<k>`) attribute.
    pub fn from_kind_attr(a: &Attribute) -> Option<BinOp> {
        let d = a.as_dialect()?;
        if d.dialect != "gen" || !(d.name == "reduce" || d.name == "scan") || d.params.len() != 1 {
            return None;
        }
        BinOp::from_name(d.params[0].as_str()?)
    }
    /// `add`, `mul`, `min`, `max`.
    pub fn from_name(s: &str) -> Option<BinOp> {
        Some(match s {
            "add" => BinOp::Add,
            "mul" => BinOp::Mul,
            "min" => BinOp::Min,
            "max" => BinOp::Max,
            _ => return None,
        })
    }
    /// The monoid name used in `#gen.reduce<..>`.
    pub fn name(self) -> &'static str {
        match self {
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::Mul => "mul",
            BinOp::Min => "min",
            BinOp::Max => "max",
        }
    }
    /// The `arith` op computing this on elements of type `t`.
    pub fn arith_op(self, t: &Type) -> &'static str {
        let f = t.is_float();
        match (self, f) {
            (BinOp::Add, false) => "arith.addi",
            (BinOp::Add, true) => "arith.addf",
            (BinOp::Sub, false) => "arith.subi",
            (BinOp::Sub, true) => "arith.subf",
            (BinOp::Mul, false) => "arith.muli",
            (BinOp::Mul, true) => "arith.mulf",
            (BinOp::Min, false) => "arith.mini",
            (BinOp::Min, true) => "arith.minf",
            (BinOp::Max, false) => "arith.maxi",
            (BinOp::Max, true) => "arith.maxf",
        }
    }
}

/// Applies `op` to two scalars of type `ty`, with exactly the semantics of
/// the corresponding `arith` op (see [`BinOp::arith_op`]).
pub fn binop(
    ctx: &Context,
    at: OpId,
    op: BinOp,
    ty: &Type,
    a: &RtValue,
    b: &RtValue,
) -> Result<RtValue, RunError> {
    use crate::arith::eval::{binary, Bin, Scalar};
    if let (Type::Struct(st), RtValue::Struct(xs), RtValue::Struct(ys)) = (ty, a, b) {
        let mut out = Vec::with_capacity(xs.len());
        for ((_, t), (x, y)) in st.fields.iter().zip(xs.iter().zip(ys.iter())) {
            out.push(binop(ctx, at, op, t, x, y)?);
        }
        return Ok(RtValue::Struct(std::rc::Rc::new(out)));
    }
    let bin = match (op, ty.is_float()) {
        (BinOp::Add, false) => Bin::AddI,
        (BinOp::Add, true) => Bin::AddF,
        (BinOp::Sub, false) => Bin::SubI,
        (BinOp::Sub, true) => Bin::SubF,
        (BinOp::Mul, false) => Bin::MulI,
        (BinOp::Mul, true) => Bin::MulF,
        (BinOp::Min, false) => Bin::MinI,
        (BinOp::Min, true) => Bin::MinF,
        (BinOp::Max, false) => Bin::MaxI,
        (BinOp::Max, true) => Bin::MaxF,
    };
    let (Some(x), Some(y)) = (Scalar::from_rt(a, ty), Scalar::from_rt(b, ty)) else {
        return Err(RunError::at(
            ctx,
            at,
            format!("expected operands of type '{ty}'"),
        ));
    };
    binary(bin, ty, x, y)
        .map(|r| r.to_rt(ty))
        .map_err(|m| RunError::at(ctx, at, m))
}

/// The zero of scalar type `ty` as an attribute.
pub fn zero_attr(ty: &Type) -> Attribute {
    if ty.is_float() {
        Attribute::float(0.0, ty.clone())
    } else {
        Attribute::int(0, ty.clone())
    }
}

/// The element type of a `vec`/`mat` value's type.
pub fn elem_of(ctx: &Context, v: ValueId) -> Option<Type> {
    ctx.ty(v).elem().cloned()
}

/// Reads a vector operand.
pub fn as_vec<'v>(
    ctx: &Context,
    op: OpId,
    v: &'v RtValue,
) -> Result<&'v std::rc::Rc<Vec<RtValue>>, RunError> {
    v.as_vec()
        .ok_or_else(|| RunError::at(ctx, op, "expected a vector operand"))
}

/// Reads an index operand as a position `< len`, or faults.
pub fn as_index(
    ctx: &Context,
    op: OpId,
    v: &RtValue,
    len: usize,
    what: &str,
) -> Result<usize, RunError> {
    match v.as_int() {
        Some(i) if i >= 0 && (i as u64) < len as u64 => Ok(i as usize),
        Some(i) => Err(RunError::at(
            ctx,
            op,
            format!("{what} {i} out of bounds for length {len}"),
        )),
        None => Err(RunError::at(ctx, op, "expected an integer index")),
    }
}

/// Reads a size operand, or faults (negative or too large).
pub fn as_size(ctx: &Context, op: OpId, v: &RtValue) -> Result<usize, RunError> {
    let n = crate::util::as_size(ctx, op, v)?;
    check_size(ctx, op, n)?;
    Ok(n)
}

/// Faults when `n` elements are more than [`MAX_ELEMS`].
pub fn check_size(ctx: &Context, op: OpId, n: usize) -> Result<(), RunError> {
    if n > MAX_ELEMS {
        return Err(RunError::at(
            ctx,
            op,
            format!("size {n} is too large (limit {MAX_ELEMS})"),
        ));
    }
    Ok(())
}

/// A `vec` run-time value.
pub fn vec_value(items: Vec<RtValue>) -> RtValue {
    RtValue::Vec(std::rc::Rc::new(items))
}

/// The constant attribute behind `v`, if a constant-like op defines it.
pub fn const_attr(ctx: &Context, v: ValueId) -> Option<&Attribute> {
    let d = ctx.def_op(v)?;
    if !ctx.has_traits(d, Traits::CONSTANT_LIKE) {
        return None;
    }
    ctx.attr(d, "value")
}

/// Whether `v` is the integer constant `k`.
fn is_int_const(ctx: &Context, v: ValueId, k: i64) -> bool {
    matches!(const_attr(ctx, v), Some(Attribute::Int(x, t)) if *x == k && t.is_integer())
}

/// Whether `v` is the constant one (integer 1 or float 1.0).
fn is_one(ctx: &Context, v: ValueId) -> bool {
    match const_attr(ctx, v) {
        Some(Attribute::Int(x, t)) => *x == 1 && t.is_integer(),
        Some(Attribute::Float(x, _)) => *x == 1.0,
        _ => false,
    }
}

/// What a vector's length provably equals: the length of another vector
/// (`Vec`) or an `index` value (`Size`).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum LenKey {
    Vec(ValueId),
    Size(ValueId),
}

/// The length key of vector `v`: follows ops whose result length is exactly
/// an input's length (1-input `map`, `scale`, zipWith `map` whose inputs
/// provably agree), a size operand (`fill`, `iota`, `arr.to_vec` of an
/// `arr.alloc`), or another collect of the same loop emitted to alike
/// ([`crate::gen::same_length_collect`]).
pub fn len_key(ctx: &Context, v: ValueId) -> LenKey {
    let mut cur = v;
    for _ in 0..64 {
        let Some(d) = ctx.def_op(cur) else {
            break;
        };
        match ctx.op_name(d) {
            "vec.fill" | "vec.iota" => return size_key(ctx, ctx.operand(d, 0)),
            // A fresh buffer of `n` elements made a vector, where nothing
            // can change the buffer's length (`arr.push`, or passing it on
            // to code that might).
            "arr.to_vec" => match ctx.def_op_named(ctx.operand(d, 0), "arr.alloc") {
                Some(a) if fixed_length(ctx, ctx.result(a, 0)) => {
                    return size_key(ctx, ctx.operand(a, 0))
                }
                _ => break,
            },
            "vec.scale" | "vec.reverse" => cur = ctx.operand(d, 0),
            "gen.loop" => match crate::gen::same_length_collect(ctx, cur) {
                Some(w) if w != cur => cur = w,
                _ => break,
            },
            "vec.map" => {
                let ins = ctx.operands(d);
                let k0 = len_key(ctx, ins[0]);
                if ins[1..].iter().all(|&w| len_key(ctx, w) == k0) {
                    return k0;
                }
                break;
            }
            _ => break,
        }
    }
    LenKey::Vec(cur)
}

/// Whether buffer `a` keeps its length: its only uses read or write its
/// elements, read its length, or make it a vector.
fn fixed_length(ctx: &Context, a: ValueId) -> bool {
    ctx.uses(a).iter().all(|u| {
        matches!(
            ctx.op_name(u.op),
            "arr.store" | "arr.load" | "arr.len" | "arr.to_vec"
        ) && u.index == 0
    })
}

/// The length key of an `index` value used as a size.
pub fn size_key(ctx: &Context, n: ValueId) -> LenKey {
    match ctx.def_op_named(n, "vec.len") {
        Some(l) => len_key(ctx, ctx.operand(l, 0)),
        None => LenKey::Size(n),
    }
}

/// Generators for the gen lowerings, from the vec dialect's [`BinOp`]s
/// (thin adapters over [`crate::gen::Generator`]).
pub struct Gen;

impl Gen {
    /// `#gen.collect` of `T` elements.
    pub fn collect(elem: &Type) -> Generator {
        Generator::collect(elem.clone())
    }
    /// `#gen.reduce<op>` of `T` (`op` must be a monoid: add, mul, min, max).
    pub fn reduce(op: BinOp, elem: &Type) -> Generator {
        Generator::reduce(monoid(op), elem.clone())
    }
    /// `#gen.scan<op>` of `T`.
    pub fn scan(op: BinOp, elem: &Type) -> Generator {
        Generator::scan(monoid(op), elem.clone())
    }
}

fn monoid(op: BinOp) -> Monoid {
    Monoid::from_name(op.name()).expect("reduction operator is not a monoid")
}

/// Builds `gen.loop(size, inits...)` with generators `gens`; `body` fills the
/// body given `%i` and the handles (see [`crate::gen::build_loop`]).
pub fn build_gen_loop(
    b: &mut Builder,
    size: ValueId,
    inits: &[ValueId],
    gens: Vec<Generator>,
    body: impl FnOnce(&mut Builder, ValueId, &[ValueId]),
) -> SmallVec<[ValueId; 2]> {
    crate::gen::build_loop(b, size, inits, &gens, body)
}

pub use crate::gen::emit;

/// `vec.len(v)`.
pub fn len(b: &mut Builder, v: ValueId) -> ValueId {
    b.op1("vec.len", &[v], Type::Index, vec![])
}

/// `scf.assert(arith.cmpi eq a b) {msg}`, unless `a` and `b` are the same value.
pub fn assert_eq_sizes(b: &mut Builder, x: ValueId, y: ValueId, msg: &str) {
    if x == y {
        return;
    }
    let c = crate::arith::build_cmpi(b, "eq", x, y);
    crate::scf::build_assert(b, c, msg);
}

/// Checks that every vector of `vs` has the length of the first (unless
/// provably equal) and returns that length.
pub(crate) fn checked_len(b: &mut Builder, vs: &[ValueId], msg: &str) -> ValueId {
    let n = len(b, vs[0]);
    let k0 = len_key(b.ctx, vs[0]);
    for &w in &vs[1..] {
        if len_key(b.ctx, w) == k0 {
            continue;
        }
        let m = len(b, w);
        assert_eq_sizes(b, n, m, msg);
    }
    n
}

fn get(b: &mut Builder, v: ValueId, i: ValueId) -> Option<ValueId> {
    let t = elem_of(b.ctx, v)?;
    Some(b.op1("vec.get", &[v, i], t, vec![]))
}

/// `vec.get(v, i) {in_bounds}`: a read the caller has proved in bounds (the
/// twin of [`crate::arr::load_in_bounds`]).
pub fn get_in_bounds(b: &mut Builder, v: ValueId, i: ValueId) -> ValueId {
    let t = elem_of(b.ctx, v).expect("a vector");
    b.op1("vec.get", &[v, i], t, crate::util::in_bounds_attr())
}

// ----- verifiers ---------------------------------------------------------

fn ty(ctx: &Context, v: ValueId) -> &Type {
    ctx.ty(v)
}

fn vec_elem(ctx: &Context, op: OpId, i: usize) -> Result<Type, String> {
    vec_type(ctx, ctx.operand(op, i), &format!("operand #{i}"))
}

/// The element type of `v`, or `"<what> must be a vec, but got '<type>'"`.
pub(crate) fn vec_type(ctx: &Context, v: ValueId, what: &str) -> Result<Type, String> {
    match ctx.ty(v) {
        Type::Vec(t) => Ok((**t).clone()),
        t => Err(format!("{what} must be a vec, but got '{t}'")),
    }
}

fn expect(ctx: &Context, v: ValueId, want: &Type, what: &str) -> Result<(), String> {
    if ty(ctx, v) != want {
        return Err(format!(
            "{what} must have type '{want}', but got '{}'",
            ty(ctx, v)
        ));
    }
    Ok(())
}

/// A numeric scalar (elementwise arithmetic, dot products, scaling).
fn scalar_numeric(t: &Type) -> Result<(), String> {
    if matches!(t, Type::Struct(_)) {
        return Err(format!(
            "element type must be i32, i64, index, f32 or f64, but got '{t}'"
        ));
    }
    numeric(t)
}

/// A numeric scalar, or a struct of numeric fields (a reduction or scan
/// of records folds each field apart).
pub(crate) fn numeric(t: &Type) -> Result<(), String> {
    if let Type::Struct(st) = t {
        return st.fields.iter().try_for_each(|(_, f)| numeric(f));
    }
    if is_numeric(t) {
        Ok(())
    } else {
        Err(format!(
            "element type must be i32, i64, index, f32 or f64, but got '{t}'"
        ))
    }
}

fn result(ctx: &Context, op: OpId) -> ValueId {
    ctx.result(op, 0)
}

fn verify_len(ctx: &Context, op: OpId) -> Result<(), String> {
    vec_elem(ctx, op, 0)?;
    expect(ctx, result(ctx, op), &Type::Index, "result")
}

fn verify_get(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = vec_elem(ctx, op, 0)?;
    expect(ctx, ctx.operand(op, 1), &Type::Index, "index operand")?;
    expect(ctx, result(ctx, op), &t, "result")
}

fn verify_iota(ctx: &Context, op: OpId) -> Result<(), String> {
    expect(ctx, ctx.operand(op, 0), &Type::Index, "size operand")?;
    expect(ctx, result(ctx, op), &Type::vec(Type::Index), "result")
}

fn verify_fill(ctx: &Context, op: OpId) -> Result<(), String> {
    expect(ctx, ctx.operand(op, 0), &Type::Index, "size operand")?;
    let t = ty(ctx, ctx.operand(op, 1)).clone();
    expect(ctx, result(ctx, op), &Type::vec(t), "result")
}

/// Checks the body of `vec.map`/`vec.filter`: arguments of `args` types and
/// a `vec.yield` of one value of type `yields`.
fn verify_body(ctx: &Context, op: OpId, args: &[Type], yields: &Type) -> Result<(), String> {
    let r = ctx.regions(op)[0];
    if ctx.region(r).blocks.len() != 1 {
        return Err("region must have exactly one block".into());
    }
    let b = ctx.region_block(r);
    let got: Vec<&Type> = ctx.block_args(b).iter().map(|&a| ctx.ty(a)).collect();
    if got.len() != args.len() {
        return Err(format!(
            "region must take {} arguments (one per input), but takes {}",
            args.len(),
            got.len()
        ));
    }
    for (i, (g, w)) in got.iter().zip(args).enumerate() {
        if *g != w {
            return Err(format!("region argument #{i} must have type '{w}' (the input's element type), but has '{g}'"));
        }
    }
    let Some(t) = ctx.terminator(b) else {
        return Err("region must end with 'vec.yield'".into());
    };
    if !ctx.is(t, "vec.yield") {
        return Err("region must end with 'vec.yield'".into());
    }
    let ys = ctx.operands(t);
    if ys.len() != 1 {
        return Err(format!(
            "'vec.yield' must yield one value, but yields {}",
            ys.len()
        ));
    }
    if ctx.ty(ys[0]) != yields {
        return Err(format!(
            "body must yield '{yields}', but yields '{}'",
            ctx.ty(ys[0])
        ));
    }
    Ok(())
}

fn verify_map(ctx: &Context, op: OpId) -> Result<(), String> {
    let mut args = Vec::new();
    for i in 0..ctx.operands(op).len() {
        args.push(vec_elem(ctx, op, i)?);
    }
    let Type::Vec(u) = ty(ctx, result(ctx, op)) else {
        return Err(format!(
            "result must be a vec, but got '{}'",
            ty(ctx, result(ctx, op))
        ));
    };
    verify_body(ctx, op, &args, u)
}

fn verify_filter(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = vec_elem(ctx, op, 0)?;
    expect(ctx, result(ctx, op), &Type::vec(t.clone()), "result")?;
    verify_body(ctx, op, &[t], &Type::I1)
}

fn verify_yield(ctx: &Context, op: OpId) -> Result<(), String> {
    match ctx.parent_op(op) {
        Some(p)
            if [
                "vec.map",
                "vec.filter",
                "vec.reduce",
                "vec.scan",
                "vec.hist",
            ]
            .iter()
            .any(|n| ctx.is(p, n)) =>
        {
            Ok(())
        }
        _ => Err(
            "expects parent op 'vec.map', 'vec.filter', 'vec.reduce', 'vec.scan' or 'vec.hist'"
                .into(),
        ),
    }
}

pub(crate) fn verify_kind(ctx: &Context, op: OpId) -> Result<(), String> {
    match ctx.attr(op, "kind") {
        Some(a) if BinOp::from_kind_attr(a).is_some() => Ok(()),
        Some(a) => Err(format!(
            "'kind' must be #gen.reduce<add|mul|min|max>, but is {a}"
        )),
        None => Err("requires a 'kind' attribute #gen.reduce<add|mul|min|max>".into()),
    }
}

fn verify_reduce(ctx: &Context, op: OpId) -> Result<(), String> {
    if crate::vec_combine::has_combiner(ctx, op) {
        return crate::vec_combine::verify(ctx, op, false);
    }
    verify_kind(ctx, op)?;
    let t = vec_elem(ctx, op, 0)?;
    numeric(&t)?;
    expect(ctx, ctx.operand(op, 1), &t, "init operand")?;
    expect(ctx, result(ctx, op), &t, "result")
}

fn verify_scan(ctx: &Context, op: OpId) -> Result<(), String> {
    if crate::vec_combine::has_combiner(ctx, op) {
        return crate::vec_combine::verify(ctx, op, true);
    }
    verify_kind(ctx, op)?;
    let t = vec_elem(ctx, op, 0)?;
    numeric(&t)?;
    expect(ctx, ctx.operand(op, 1), &t, "init operand")?;
    expect(ctx, result(ctx, op), &Type::vec(t), "result")
}

fn verify_sum(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = vec_elem(ctx, op, 0)?;
    numeric(&t)?;
    expect(ctx, result(ctx, op), &t, "result")
}

fn verify_dot(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = vec_elem(ctx, op, 0)?;
    scalar_numeric(&t)?;
    expect(ctx, ctx.operand(op, 1), &Type::vec(t.clone()), "operand #1")?;
    expect(ctx, result(ctx, op), &t, "result")
}

fn verify_elementwise(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = vec_elem(ctx, op, 0)?;
    scalar_numeric(&t)
}

fn verify_scale(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = vec_elem(ctx, op, 0)?;
    scalar_numeric(&t)?;
    expect(ctx, ctx.operand(op, 1), &t, "scale operand")?;
    expect(ctx, result(ctx, op), &Type::vec(t), "result")
}

// ----- interpreter ---------------------------------------------------------

fn interp_len(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let v = as_vec(it.ctx, op, &a[0])?;
    Ok(smallvec![RtValue::Int(v.len() as i64)])
}

fn interp_get(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let v = as_vec(it.ctx, op, &a[0])?;
    let i = as_index(it.ctx, op, &a[1], v.len(), "index")?;
    Ok(smallvec![v[i].clone()])
}

fn interp_iota(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let n = as_size(it.ctx, op, &a[0])?;
    Ok(smallvec![vec_value(
        (0..n as i64).map(RtValue::Int).collect()
    )])
}

fn interp_fill(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let n = as_size(it.ctx, op, &a[0])?;
    Ok(smallvec![vec_value(vec![a[1].clone(); n])])
}

fn interp_map(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let ctx = it.ctx;
    let mut ins = Vec::with_capacity(a.len());
    for x in a {
        ins.push(as_vec(ctx, op, x)?.clone());
    }
    let n = ins[0].len();
    if let Some(w) = ins.iter().find(|w| w.len() != n) {
        return Err(RunError::at(
            ctx,
            op,
            format!("size mismatch: inputs of length {n} and {}", w.len()),
        ));
    }
    let r = ctx.regions(op)[0];
    let mut out = Vec::with_capacity(n);
    let mut args: Vec<RtValue> = Vec::with_capacity(ins.len());
    for i in 0..n {
        args.clear();
        args.extend(ins.iter().map(|w| w[i].clone()));
        let ys = it.run_region(r, &args)?;
        let y = ys
            .into_iter()
            .next()
            .ok_or_else(|| RunError::at(ctx, op, "body yielded no value"))?;
        out.push(y);
    }
    Ok(smallvec![vec_value(out)])
}

fn interp_filter(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let ctx = it.ctx;
    let v = as_vec(ctx, op, &a[0])?.clone();
    let r = ctx.regions(op)[0];
    let mut out = Vec::new();
    for x in v.iter() {
        let ys = it.run_region(r, std::slice::from_ref(x))?;
        let keep = ys
            .first()
            .and_then(|y| y.as_bool())
            .ok_or_else(|| RunError::at(ctx, op, "body must yield an i1"))?;
        if keep {
            out.push(x.clone());
        }
    }
    Ok(smallvec![vec_value(out)])
}

fn yield_values(_: &mut Interp, _: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    Ok(a.iter().cloned().collect())
}

pub(crate) fn kind_of(ctx: &Context, op: OpId) -> Result<BinOp, RunError> {
    ctx.attr(op, "kind")
        .and_then(BinOp::from_kind_attr)
        .ok_or_else(|| RunError::at(ctx, op, "invalid 'kind' attribute"))
}

fn elem_type(ctx: &Context, op: OpId) -> Type {
    ctx.ty(ctx.operand(op, 0))
        .elem()
        .cloned()
        .unwrap_or(Type::F64)
}

fn fold_vec(
    ctx: &Context,
    op: OpId,
    k: BinOp,
    t: &Type,
    init: RtValue,
    v: &[RtValue],
) -> Result<RtValue, RunError> {
    let mut acc = init;
    for x in v {
        acc = binop(ctx, op, k, t, &acc, x)?;
    }
    Ok(acc)
}

fn interp_reduce(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let ctx = it.ctx;
    if crate::vec_combine::has_combiner(ctx, op) {
        return crate::vec_combine::interp(it, op, a, false);
    }
    let k = kind_of(ctx, op)?;
    let v = as_vec(ctx, op, &a[0])?;
    Ok(smallvec![fold_vec(
        ctx,
        op,
        k,
        &elem_type(ctx, op),
        a[1].clone(),
        v
    )?])
}

fn interp_sum(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let ctx = it.ctx;
    let t = elem_type(ctx, op);
    let v = as_vec(ctx, op, &a[0])?;
    let zero = crate::util::zero_value(&t);
    Ok(smallvec![fold_vec(ctx, op, BinOp::Add, &t, zero, v)?])
}

fn same_len(ctx: &Context, op: OpId, x: &[RtValue], y: &[RtValue]) -> Result<(), RunError> {
    if x.len() != y.len() {
        return Err(RunError::at(
            ctx,
            op,
            format!(
                "size mismatch: operands of length {} and {}",
                x.len(),
                y.len()
            ),
        ));
    }
    Ok(())
}

fn interp_dot(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let ctx = it.ctx;
    let t = elem_type(ctx, op);
    let x = as_vec(ctx, op, &a[0])?;
    let y = as_vec(ctx, op, &a[1])?;
    same_len(ctx, op, x, y)?;
    let mut acc = crate::util::zero_value(&t);
    for (p, q) in x.iter().zip(y.iter()) {
        let m = binop(ctx, op, BinOp::Mul, &t, p, q)?;
        acc = binop(ctx, op, BinOp::Add, &t, &acc, &m)?;
    }
    Ok(smallvec![acc])
}

fn interp_scan(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let ctx = it.ctx;
    if crate::vec_combine::has_combiner(ctx, op) {
        return crate::vec_combine::interp(it, op, a, true);
    }
    let k = kind_of(ctx, op)?;
    let t = elem_type(ctx, op);
    let v = as_vec(ctx, op, &a[0])?;
    let mut acc = a[1].clone();
    let mut out = Vec::with_capacity(v.len());
    for x in v.iter() {
        acc = binop(ctx, op, k, &t, &acc, x)?;
        out.push(acc.clone());
    }
    Ok(smallvec![vec_value(out)])
}

fn elementwise(it: &mut Interp, op: OpId, a: &[RtValue], k: BinOp) -> Result<Vals, RunError> {
    let ctx = it.ctx;
    let t = elem_type(ctx, op);
    let x = as_vec(ctx, op, &a[0])?;
    let y = as_vec(ctx, op, &a[1])?;
    same_len(ctx, op, x, y)?;
    let mut out = Vec::with_capacity(x.len());
    for (p, q) in x.iter().zip(y.iter()) {
        out.push(binop(ctx, op, k, &t, p, q)?);
    }
    Ok(smallvec![vec_value(out)])
}

fn interp_add(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    elementwise(it, op, a, BinOp::Add)
}
fn interp_sub(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    elementwise(it, op, a, BinOp::Sub)
}
fn interp_mul(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    elementwise(it, op, a, BinOp::Mul)
}

fn interp_scale(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let ctx = it.ctx;
    let t = elem_type(ctx, op);
    let x = as_vec(ctx, op, &a[0])?;
    let mut out = Vec::with_capacity(x.len());
    for p in x.iter() {
        out.push(binop(ctx, op, BinOp::Mul, &t, p, &a[1])?);
    }
    Ok(smallvec![vec_value(out)])
}

// ----- construction-time rewrites ------------------------------------------

fn rw_len(b: &mut Builder, st: &OpState) -> Repl {
    let v = *st.operands.first()?;
    if let Some(d) = b.ctx.def_op_named(v, "vec.from_elements") {
        let n = b.ctx.operands(d).len() as i64;
        return Some(smallvec![crate::arith::const_int(b, n, &Type::Index)]);
    }
    match len_key(b.ctx, v) {
        LenKey::Size(n) if b.ctx.ty(n) == &Type::Index => Some(smallvec![n]),
        LenKey::Vec(w) => match b.ctx.def_op_named(w, "mat.row") {
            // Every row of m is cols(m) long, every column rows(m) (the
            // thesis's structural size analysis, Henriksen 2014 §6.1): the
            // length no longer depends on which row, so it is invariant in
            // a loop over the rows.
            Some(r) => {
                let m = b.ctx.operand(r, 0);
                let len_op = crate::mat::row_len_op(b.ctx, r);
                Some(smallvec![b.op1(len_op, &[m], Type::Index, vec![])])
            }
            None if w != v => Some(smallvec![len(b, w)]),
            None => None,
        },
        _ => None,
    }
}

/// `vec.map` over a `vec.fill(n, x)`: every element the body gets from it
/// is `x`, so the body reads `x` itself and the fill becomes `vec.iota(n)`
/// (same length and the same faults for a negative `n`, and a zip still
/// checks it against the other inputs). A replicated value is then never
/// built, and a replicated transpose is read through (issue 44, item 2:
/// `vec.fill(n, mat.transpose(m))`, then rows of it).
fn read_fills(b: &mut Builder, st: &OpState) -> Repl {
    let r = *st.regions.first()?;
    let blk = match b.ctx.region(r).blocks.as_slice() {
        [blk] => *blk,
        _ => return None,
    };
    let old_args: Vec<ValueId> = b.ctx.block_args(blk).to_vec();
    if old_args.len() != st.operands.len() {
        return None;
    }
    let fills: Vec<Option<(ValueId, ValueId)>> = st
        .operands
        .iter()
        .map(|&v| {
            let d = b.ctx.def_op_named(v, "vec.fill")?;
            Some((b.ctx.operand(d, 0), b.ctx.operand(d, 1)))
        })
        .collect();
    if fills.iter().all(Option::is_none) {
        return None;
    }
    let arg_types: Vec<Type> = old_args
        .iter()
        .zip(&fills)
        .map(|(&a, f)| match f {
            Some(_) => Type::Index,
            None => b.ctx.ty(a).clone(),
        })
        .collect();
    let mut operands = st.operands.clone();
    for (k, f) in fills.iter().enumerate() {
        if let Some((n, _)) = *f {
            operands[k] = b.op1("vec.iota", &[n], Type::vec(Type::Index), vec![]);
        }
    }
    let (nr, nb) = b.ctx.new_region_with_block(&arg_types);
    let new_args: Vec<ValueId> = b.ctx.block_args(nb).to_vec();
    for (k, f) in fills.iter().enumerate() {
        let to = match *f {
            Some((_, x)) => x,
            None => new_args[k],
        };
        b.ctx.replace_uses_where(old_args[k], to, |_, _| true);
        b.ctx.copy_name(old_args[k], new_args[k]);
    }
    b.ctx.splice_block(blk, nb, None);
    let mut nst = st.clone();
    nst.existing = None;
    nst.regions = smallvec![nr];
    nst.operands = operands;
    Some(b.create(nst).into_iter().collect())
}

fn rw_get(b: &mut Builder, st: &OpState) -> Repl {
    let (&v, &i) = (st.operands.first()?, st.operands.get(1)?);
    let d = b.ctx.def_op(v)?;
    let r = match b.ctx.op_name(d) {
        "vec.fill" => b.ctx.operand(d, 1),
        "vec.iota" => i,
        // A constant index in range reads that operand; any other read
        // stays (and faults out of range).
        "vec.from_elements" => {
            let c = match const_attr(b.ctx, i)? {
                Attribute::Int(c, _) => usize::try_from(*c).ok()?,
                _ => return None,
            };
            return b.ctx.operands(d).get(c).map(|&x| smallvec![x]);
        }
        // Element `j` of column `i` of `m` is entry `(i, j)` of its
        // transpose, read in place with the same two checks (the column
        // index against `cols(m)`, the element's against `rows(m)`), so a
        // column read at several indices is never copied (issue 44, item 2).
        "mat.row" if crate::mat::row_is_transposed(b.ctx, d) => {
            let (m, col) = (b.ctx.operand(d, 0), b.ctx.operand(d, 1));
            let t = st.result_types.first()?.clone();
            let attrs = vec![crate::mat::transposed_attr()];
            return Some(smallvec![b.op1("mat.get", &[m, col, i], t, attrs)]);
        }
        _ => return None,
    };
    // The element is known, but the read still faults when `i` is outside
    // `[0, n)`: without a proof the get keeps its check.
    let proven = st.attrs.iter().any(|(k, _)| k == "in_bounds")
        || index_in_range(b.ctx, i, size_key(b.ctx, b.ctx.operand(d, 0)));
    (proven && b.ctx.ty(r) == st.result_types.first()?).then(|| smallvec![r])
}

/// Whether index `i` is provably inside `[0, len)` for a vector whose length
/// has the key `len` ([`len_key`]): `i` and the length are constants with
/// `0 <= i < len`, or `i` is the induction variable of an enclosing
/// `gen.loop` whose size has the key `len`, or of an `scf.for` from the
/// constant 0 whose upper bound has it. (The `bounds` pass proves more and
/// marks the read `in_bounds`.)
pub fn index_in_range(ctx: &Context, i: ValueId, len: LenKey) -> bool {
    if let (Some(Attribute::Int(x, _)), LenKey::Size(n)) = (const_attr(ctx, i), len) {
        return matches!(const_attr(ctx, n), Some(Attribute::Int(m, _)) if 0 <= *x && x < m);
    }
    let Some(blk) = ctx.value_block(i) else {
        return false;
    };
    if ctx.block_args(blk).first() != Some(&i) {
        return false;
    }
    let Some(l) = ctx.block_parent_op(blk) else {
        return false;
    };
    let bound = match ctx.op_name(l) {
        "gen.loop" => ctx.operand(l, 0),
        "scf.for" if is_int_const(ctx, ctx.operand(l, 0), 0) => ctx.operand(l, 1),
        _ => return false,
    };
    size_key(ctx, bound) == len
}

/// `w` is `fill(n, c)` with `c` the integer constant `k` and `n` provably
/// the length of `v`.
fn is_fill_of(ctx: &Context, w: ValueId, k: i64, v: ValueId) -> bool {
    let Some(d) = ctx.def_op_named(w, "vec.fill") else {
        return false;
    };
    is_int_const(ctx, ctx.operand(d, 1), k) && size_key(ctx, ctx.operand(d, 0)) == len_key(ctx, v)
}

fn identity_rewrite(b: &mut Builder, st: &OpState, k: i64, commutes: bool) -> Repl {
    let (&x, &y) = (st.operands.first()?, st.operands.get(1)?);
    let t = b.ctx.ty(x).clone();
    if !t.elem().is_some_and(|e| e.is_integer())
        || b.ctx.ty(y) != &t
        || st.result_types.first() != Some(&t)
    {
        return None;
    }
    if is_fill_of(b.ctx, y, k, x) {
        return Some(smallvec![x]);
    }
    if commutes && is_fill_of(b.ctx, x, k, y) {
        return Some(smallvec![y]);
    }
    None
}

fn rw_add(b: &mut Builder, st: &OpState) -> Repl {
    identity_rewrite(b, st, 0, true)
}
fn rw_sub(b: &mut Builder, st: &OpState) -> Repl {
    identity_rewrite(b, st, 0, false)
}
fn rw_mul(b: &mut Builder, st: &OpState) -> Repl {
    identity_rewrite(b, st, 1, true)
}

fn rw_scale(b: &mut Builder, st: &OpState) -> Repl {
    let (&v, &s) = (st.operands.first()?, st.operands.get(1)?);
    (is_one(b.ctx, s) && st.result_types.first() == Some(b.ctx.ty(v))).then(|| smallvec![v])
}

// ----- lowering to gen -----------------------------------------------------

/// Moves the body of a `vec.map`/`vec.filter` (all but the `vec.yield`) to
/// the builder's insertion point, its arguments replaced by `args`; returns
/// the yielded value.
fn inline_body(b: &mut Builder, region: RegionId, args: &[ValueId]) -> Option<ValueId> {
    let blk = b.ctx.region_block(region);
    let term = b.ctx.terminator(blk)?;
    for (&a, &v) in b.ctx.block_args(blk).to_vec().iter().zip(args) {
        b.ctx.replace_all_uses(a, v);
    }
    let (dest, before) = b.insertion_point();
    for op in b.ctx.block_ops(blk) {
        if op != term {
            b.ctx.move_op(op, dest, before);
        }
    }
    b.ctx.operands(term).first().copied()
}

fn body_ok(ctx: &Context, st: &OpState, nargs: usize) -> bool {
    let Some(&r) = st.regions.first() else {
        return false;
    };
    if ctx.region(r).blocks.len() != 1 {
        return false;
    }
    let blk = ctx.region_block(r);
    ctx.block_args(blk).len() == nargs
        && ctx
            .terminator(blk)
            .is_some_and(|t| ctx.is(t, "vec.yield") && ctx.operands(t).len() == 1)
}

fn lower_map(b: &mut Builder, st: &OpState) -> Repl {
    let ins = st.operands.clone();
    let out = st.result_types.first()?.elem()?.clone();
    if ins.is_empty()
        || !body_ok(b.ctx, st, ins.len())
        || ins.iter().any(|&v| elem_of(b.ctx, v).is_none())
    {
        return None;
    }
    let region = st.regions[0];
    let n = checked_len(b, &ins, "size mismatch in vec.map");
    Some(build_gen_loop(
        b,
        n,
        &[],
        vec![Gen::collect(&out)],
        |b, i, h| {
            let es: Vec<ValueId> = ins.iter().map(|&v| get(b, v, i).unwrap()).collect();
            if let Some(y) = inline_body(b, region, &es) {
                emit(b, h[0], y);
            }
        },
    ))
}

fn lower_filter(b: &mut Builder, st: &OpState) -> Repl {
    let v = *st.operands.first()?;
    let t = elem_of(b.ctx, v)?;
    if !body_ok(b.ctx, st, 1) {
        return None;
    }
    let region = st.regions[0];
    let n = len(b, v);
    Some(build_gen_loop(
        b,
        n,
        &[],
        vec![Gen::collect(&t)],
        |b, i, h| {
            let e = get(b, v, i).unwrap();
            let Some(keep) = inline_body(b, region, &[e]) else {
                return;
            };
            let h0 = h[0];
            let then = b.build_region(&[], |b, _| {
                emit(b, h0, e);
                b.op("scf.yield", &[], &[], vec![]);
            });
            let els = b.build_region(&[], |b, _| {
                b.op("scf.yield", &[], &[], vec![]);
            });
            b.op_with_regions("scf.if", &[keep], &[], vec![], &[then, els]);
        },
    ))
}

fn lower_fold(b: &mut Builder, v: ValueId, init: ValueId, g: Generator) -> Repl {
    elem_of(b.ctx, v)?;
    let n = len(b, v);
    Some(build_gen_loop(b, n, &[init], vec![g], |b, i, h| {
        let e = get(b, v, i).unwrap();
        emit(b, h[0], e);
    }))
}

fn lower_reduce(b: &mut Builder, st: &OpState) -> Repl {
    let k = BinOp::from_kind_attr(st.attr("kind")?)?;
    let (&v, &init) = (st.operands.first()?, st.operands.get(1)?);
    let t = elem_of(b.ctx, v)?;
    lower_fold(b, v, init, Gen::reduce(k, &t))
}

fn lower_scan(b: &mut Builder, st: &OpState) -> Repl {
    let k = BinOp::from_kind_attr(st.attr("kind")?)?;
    let (&v, &init) = (st.operands.first()?, st.operands.get(1)?);
    let t = elem_of(b.ctx, v)?;
    lower_fold(b, v, init, Gen::scan(k, &t))
}

fn lower_reduce_combiner(b: &mut Builder, st: &OpState) -> Repl {
    crate::vec_combine::lower(b, st, false)
}

fn lower_scan_combiner(b: &mut Builder, st: &OpState) -> Repl {
    crate::vec_combine::lower(b, st, true)
}

fn lower_sum(b: &mut Builder, st: &OpState) -> Repl {
    let v = *st.operands.first()?;
    let t = elem_of(b.ctx, v)?;
    let zero = crate::structs::build_fields(b, &t, &mut |b, t| Some(b.constant(zero_attr(t), t)))?;
    lower_fold(b, v, zero, Gen::reduce(BinOp::Add, &t))
}

fn lower_dot(b: &mut Builder, st: &OpState) -> Repl {
    let (&x, &y) = (st.operands.first()?, st.operands.get(1)?);
    let t = elem_of(b.ctx, x)?;
    elem_of(b.ctx, y)?;
    let n = checked_len(b, &[x, y], "size mismatch in vec.dot");
    let zero = b.constant(zero_attr(&t), &t);
    let mul = BinOp::Mul.arith_op(&t);
    Some(build_gen_loop(
        b,
        n,
        &[zero],
        vec![Gen::reduce(BinOp::Add, &t)],
        |b, i, h| {
            let p = get(b, x, i).unwrap();
            let q = get(b, y, i).unwrap();
            let m = b.op1(mul, &[p, q], t.clone(), vec![]);
            emit(b, h[0], m);
        },
    ))
}

fn lower_iota(b: &mut Builder, st: &OpState) -> Repl {
    let n = *st.operands.first()?;
    Some(build_gen_loop(
        b,
        n,
        &[],
        vec![Gen::collect(&Type::Index)],
        |b, i, h| emit(b, h[0], i),
    ))
}

fn lower_fill(b: &mut Builder, st: &OpState) -> Repl {
    let (&n, &x) = (st.operands.first()?, st.operands.get(1)?);
    let t = b.ctx.ty(x).clone();
    Some(build_gen_loop(
        b,
        n,
        &[],
        vec![Gen::collect(&t)],
        |b, _, h| emit(b, h[0], x),
    ))
}

fn lower_elementwise(b: &mut Builder, st: &OpState, k: BinOp, msg: &str) -> Repl {
    let (&x, &y) = (st.operands.first()?, st.operands.get(1)?);
    let t = elem_of(b.ctx, x)?;
    elem_of(b.ctx, y)?;
    let name = k.arith_op(&t);
    let n = checked_len(b, &[x, y], msg);
    Some(build_gen_loop(
        b,
        n,
        &[],
        vec![Gen::collect(&t)],
        |b, i, h| {
            let p = get(b, x, i).unwrap();
            let q = get(b, y, i).unwrap();
            let r = b.op1(name, &[p, q], t.clone(), vec![]);
            emit(b, h[0], r);
        },
    ))
}

fn lower_add(b: &mut Builder, st: &OpState) -> Repl {
    lower_elementwise(b, st, BinOp::Add, "size mismatch in vec.add")
}
fn lower_sub(b: &mut Builder, st: &OpState) -> Repl {
    lower_elementwise(b, st, BinOp::Sub, "size mismatch in vec.sub")
}
fn lower_mul(b: &mut Builder, st: &OpState) -> Repl {
    lower_elementwise(b, st, BinOp::Mul, "size mismatch in vec.mul")
}

fn lower_scale(b: &mut Builder, st: &OpState) -> Repl {
    let (&x, &s) = (st.operands.first()?, st.operands.get(1)?);
    let t = elem_of(b.ctx, x)?;
    let name = BinOp::Mul.arith_op(&t);
    let n = len(b, x);
    Some(build_gen_loop(
        b,
        n,
        &[],
        vec![Gen::collect(&t)],
        |b, i, h| {
            let p = get(b, x, i).unwrap();
            let r = b.op1(name, &[p, s], t.clone(), vec![]);
            emit(b, h[0], r);
        },
    ))
}

// ----- registration --------------------------------------------------------

use crate::util::pure;

/// Registers the `vec` ops.
pub fn register(r: &mut Registry) {
    r.register(
        pure("vec.len", "the length of a vector", 1)
            .assembly_format("operands attr-dict : type(operands)")
            .infer(crate::util::infer_index)
            .verify(verify_len)
            .interpret(interp_len)
            .rewrite(rw_len),
    );
    r.register(
        pure("vec.get", "element i of a vector (faults out of bounds)", 2)
            .assembly_format("operands attr-dict : type(first)")
            .infer(crate::util::infer_elem)
            .verify(verify_get)
            .interpret(interp_get)
            .rewrite(rw_get),
    );
    r.register(
        pure("vec.iota", "the vector 0, 1, ..., n-1", 1)
            .assembly_format("operands attr-dict")
            .infer(crate::util::infer_vec_index)
            .verify(verify_iota)
            .interpret(interp_iota)
            .lowering("gen", lower_iota),
    );
    r.register(
        pure("vec.fill", "n copies of a value", 2)
            .assembly_format("operands attr-dict : type(results)")
            .verify(verify_fill)
            .interpret(interp_fill)
            .poison(ir::poison::PoisonRule::Carries)
            .lowering("gen", lower_fill),
    );
    r.register(
        OpSpec::new(
            "vec.map",
            "applies the body to the elements of k equal-length vectors (zipWith)",
        )
        .operands(Arity::AtLeast(1))
        .results(Arity::Exactly(1))
        .regions(Arity::Exactly(1))
        .traits(Traits::PURE | Traits::REGIONS_NEED_TERMINATOR)
        .assembly_format("(operands) attr-dict : type(operands) -> type(results) regions")
        .verify(verify_map)
        .rewrite(read_fills)
        .interpret(interp_map)
        .lowering("gen", lower_map),
    );
    r.register(
        OpSpec::new(
            "vec.yield",
            "yields the value of a vec.map or vec.filter body",
        )
        .operands(Arity::AtLeast(0))
        .traits(Traits::TERMINATOR | Traits::PURE)
        .assembly_format("operands attr-dict : type(operands)")
        .verify(verify_yield)
        .interpret(yield_values),
    );
    r.register(
        pure(
            "vec.reduce",
            "folds a vector from an initial value with a monoid (kind) or a combiner region",
            2,
        )
        .regions(Arity::Between(0, 1))
        .traits(Traits::PURE | Traits::REGIONS_NEED_TERMINATOR)
        .assembly_format("$kind? operands attr-dict : type(first) regions")
        .infer(crate::util::infer_elem)
        .verify(verify_reduce)
        .interpret(interp_reduce)
        .lowering("gen", lower_reduce)
        .lowering("gen", lower_reduce_combiner),
    );
    r.register(
        pure("vec.sum", "the sum of a vector's elements", 1)
            .assembly_format("operands attr-dict : type(operands)")
            .infer(crate::util::infer_elem)
            .verify(verify_sum)
            .interpret(interp_sum)
            .lowering("gen", lower_sum),
    );
    r.register(
        pure("vec.dot", "the dot product of two equal-length vectors", 2)
            .assembly_format("operands attr-dict : type(first)")
            .infer(crate::util::infer_elem)
            .verify(verify_dot)
            .interpret(interp_dot)
            .lowering("gen", lower_dot),
    );
    r.register(
        OpSpec::new(
            "vec.filter",
            "the elements for which the body yields true, in order",
        )
        .operands(Arity::Exactly(1))
        .results(Arity::Exactly(1))
        .regions(Arity::Exactly(1))
        .traits(Traits::PURE | Traits::REGIONS_NEED_TERMINATOR)
        .assembly_format("operands attr-dict : type(operands) regions")
        .infer(crate::util::infer_same)
        .verify(verify_filter)
        .interpret(interp_filter)
        .lowering("gen", lower_filter),
    );
    r.register(
        pure("vec.scan", "the inclusive running fold of a vector", 2)
            .regions(Arity::Between(0, 1))
            .traits(Traits::PURE | Traits::REGIONS_NEED_TERMINATOR)
            .assembly_format("$kind? operands attr-dict : type(first) regions")
            .infer(crate::util::infer_same)
            .verify(verify_scan)
            .interpret(interp_scan)
            .lowering("gen", lower_scan)
            .lowering("gen", lower_scan_combiner),
    );
    r.register(
        pure("vec.add", "elementwise sum of two equal-length vectors", 2)
            .traits(Traits::SAME_OPERANDS_AND_RESULT_TYPE)
            .assembly_format("operands attr-dict : type(first)")
            .infer(crate::util::infer_same)
            .verify(verify_elementwise)
            .interpret(interp_add)
            .rewrite(rw_add)
            .lowering("gen", lower_add),
    );
    r.register(
        pure(
            "vec.sub",
            "elementwise difference of two equal-length vectors",
            2,
        )
        .traits(Traits::SAME_OPERANDS_AND_RESULT_TYPE)
        .assembly_format("operands attr-dict : type(first)")
        .infer(crate::util::infer_same)
        .verify(verify_elementwise)
        .interpret(interp_sub)
        .rewrite(rw_sub)
        .lowering("gen", lower_sub),
    );
    r.register(
        pure(
            "vec.mul",
            "elementwise product of two equal-length vectors",
            2,
        )
        .traits(Traits::SAME_OPERANDS_AND_RESULT_TYPE)
        .assembly_format("operands attr-dict : type(first)")
        .infer(crate::util::infer_same)
        .verify(verify_elementwise)
        .interpret(interp_mul)
        .rewrite(rw_mul)
        .lowering("gen", lower_mul),
    );
    r.register(
        pure("vec.scale", "multiplies every element by a scalar", 2)
            .assembly_format("operands attr-dict : type(first)")
            .infer(crate::util::infer_same)
            .verify(verify_scale)
            .interpret(interp_scale)
            .rewrite(rw_scale)
            .lowering("gen", lower_scale),
    );
}
