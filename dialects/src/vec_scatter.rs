//! Indexed updates of the `vec` dialect (issue 42, items 2-4): Futhark's
//! `scatter` and `reduce_by_index`, MLIR's `tensor.insert`.
//!
//! | op | form | meaning |
//! |---|---|---|
//! | `vec.scatter(dest, is, vs)` | `vec.scatter %d, %is, %vs : vec<T>` | `dest` with `dest[is[j]] = vs[j]` for each `j` in order |
//! | `vec.hist(dest, is, vs) {kind}` | `vec.hist #gen.reduce<add> %d, %is, %vs : vec<T>` | `dest` with `dest[is[j]] = dest[is[j]] op vs[j]` for each `j` in order |
//! | `vec.hist(dest, is, vs) ({combiner})` | `vec.hist %d, %is, %vs : vec<T> { ^bb0(%a: T, %b: T): ... }` | the same with a user-defined operator ([`crate::vec_combine`]) |
//! | `vec.insert(v, i, x)` | `vec.insert %v, %i, %x : vec<T>` | `v` with element `i` replaced by `x` |
//!
//! `is` is a `vec<index>`. For `scatter` and `hist`, indices outside
//! `[0, len(dest))` are ignored (as in Futhark), `len(is) != len(vs)` is a
//! fault (`size mismatch in vec.scatter` / `vec.hist`), and updates apply in
//! the order of `j`: where indices repeat, the largest `j` wins a scatter,
//! and a histogram bin folds its values in order of `j`, grouped as
//! [`crate::vec_combine::hist`] says where no atomic computes the operator
//! exactly (so the result is the same on every backend and thread count). `hist` takes the `kind`s of
//! `vec.reduce` on numeric elements; `scatter` and `insert` take any scalar
//! element type. `insert` faults when `i` is out of bounds.
//!
//! Lowering (`scatter` and `hist` at phase `gen`, so that fusion sees the
//! loop and substitutes a `vec.fill` or cheap map of values into its reads;
//! `insert` at phase `arr`): a copy of `dest` into a buffer
//! (`arr.from_vec`; a `vec.fill` destination is a fresh `arr.alloc`
//! instead, filled only when its value is not the zero), a sequential `scf.for` over `j` that stores (or
//! combines) where the index is in range, then `arr.to_vec` (a chunked
//! histogram: [`crate::vec_combine::hist::lower`]'s loops instead of the
//! `scf.for`). `insert` copies and stores once. The copy is only in the IR: where `dest` is an
//! owned vector at its last use, the native backends' `arr.from_vec` takes
//! its buffer instead (`codegen::ownership::movable_into_array`), so a loop
//! of updates to one vector is O(1) per update.

use smallvec::smallvec;

use ir::interp::{Interp, RtValue, RunError};
use ir::spec::{OpState, Registry};
use ir::{Builder, Context, OpId, Type, ValueId};

use crate::vec::{as_vec, vec_value, BinOp};
use crate::vec_combine::hist::{self, HistOp};

type Vals = smallvec::SmallVec<[RtValue; 2]>;
type Repl = Option<smallvec::SmallVec<[ValueId; 2]>>;

fn scalar(t: &Type) -> bool {
    matches!(t, Type::I1) || crate::vec::is_numeric(t)
}

// ----- verifiers ---------------------------------------------------------

/// `(dest, is, vs)` and the result: `vec<T>`, `vec<index>`, `vec<T>`, `vec<T>`.
fn verify_update(ctx: &Context, op: OpId) -> Result<Type, String> {
    let t = crate::vec::vec_type(ctx, ctx.operand(op, 0), "operand #0 (destination)")?;
    if crate::vec::vec_type(ctx, ctx.operand(op, 1), "operand #1 (indices)")? != Type::Index {
        return Err(format!(
            "operand #1 (indices) must be 'vec<index>', but got '{}'",
            ctx.ty(ctx.operand(op, 1))
        ));
    }
    let want = ctx.ty(ctx.operand(op, 0)).clone();
    for (v, what) in [
        (ctx.operand(op, 2), "operand #2 (values)"),
        (ctx.result(op, 0), "the result"),
    ] {
        if *ctx.ty(v) != want {
            return Err(format!(
                "{what} must have type '{want}', but got '{}'",
                ctx.ty(v)
            ));
        }
    }
    Ok(t)
}

fn verify_scatter(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = verify_update(ctx, op)?;
    if !scalar(&t) {
        return Err(format!("elements must be scalars, but are '{t}'"));
    }
    Ok(())
}

fn verify_hist(ctx: &Context, op: OpId) -> Result<(), String> {
    if crate::vec_combine::has_combiner(ctx, op) {
        crate::vec_combine::no_kind(ctx, op)?;
        let t = verify_update(ctx, op)?;
        if !scalar(&t) {
            return Err(format!("elements must be scalars, but are '{t}'"));
        }
        return crate::vec_combine::verify_region(ctx, op, &t);
    }
    crate::vec::verify_kind(ctx, op)?;
    let t = verify_update(ctx, op)?;
    crate::vec::numeric(&t)
}

fn verify_insert(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = crate::vec::vec_type(ctx, ctx.operand(op, 0), "operand #0")?;
    if !scalar(&t) {
        return Err(format!("elements must be scalars, but are '{t}'"));
    }
    let i = ctx.ty(ctx.operand(op, 1));
    if *i != Type::Index {
        return Err(format!("operand #1 (index) must be 'index', but got '{i}'"));
    }
    let x = ctx.ty(ctx.operand(op, 2));
    if *x != t {
        return Err(format!(
            "operand #2 must have the element type '{t}', but got '{x}'"
        ));
    }
    let r = ctx.ty(ctx.result(op, 0));
    if r != ctx.ty(ctx.operand(op, 0)) {
        return Err(format!(
            "the result must have type '{}', but got '{r}'",
            ctx.ty(ctx.operand(op, 0))
        ));
    }
    Ok(())
}

// ----- interpreter -------------------------------------------------------

/// A copy of an indexed update's `dest` to update, then its `is` and `vs`.
pub(crate) type UpdateOperands<'a> = (Vec<RtValue>, &'a [RtValue], &'a [RtValue]);

/// The operands `a` of an indexed update (`dest`, `is`, `vs`) of op `op`
/// (named `name` in the fault); `is` and `vs` must have equal lengths.
pub(crate) fn update_operands<'a>(
    ctx: &ir::Context,
    op: OpId,
    a: &'a [RtValue],
    name: &str,
) -> Result<UpdateOperands<'a>, RunError> {
    let out = as_vec(ctx, op, &a[0])?.as_ref().clone();
    let is = as_vec(ctx, op, &a[1])?;
    let vs = as_vec(ctx, op, &a[2])?;
    if is.len() != vs.len() {
        return Err(RunError::at(
            ctx,
            op,
            format!(
                "size mismatch in {name}: {} indices and {} values",
                is.len(),
                vs.len()
            ),
        ));
    }
    Ok((out, is, vs))
}

/// Index `i` of an indexed update into `n` elements: its position, or
/// `None` outside `[0, n)` (ignored).
pub(crate) fn update_index(
    ctx: &ir::Context,
    op: OpId,
    i: &RtValue,
    n: usize,
) -> Result<Option<usize>, RunError> {
    let i = i
        .as_int()
        .ok_or_else(|| RunError::at(ctx, op, "expected an index"))?;
    Ok(usize::try_from(i).ok().filter(|&k| k < n))
}

/// Applies `(is[j], vs[j])` in order of `j` to a copy of `dest`, with
/// `update(old, new)`; out-of-range indices are skipped.
fn apply(
    it: &Interp,
    op: OpId,
    a: &[RtValue],
    name: &str,
    mut update: impl FnMut(&RtValue, &RtValue) -> Result<RtValue, RunError>,
) -> Result<Vals, RunError> {
    let ctx = it.ctx;
    let (mut out, is, vs) = update_operands(ctx, op, a, name)?;
    for (i, v) in is.iter().zip(vs.iter()) {
        if let Some(k) = update_index(ctx, op, i, out.len())? {
            out[k] = update(&out[k], v)?;
        }
    }
    Ok(smallvec![vec_value(out)])
}

fn interp_scatter(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    apply(it, op, a, "vec.scatter", |_, v| Ok(v.clone()))
}

fn interp_hist(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let hop =
        HistOp::of(it.ctx, op).ok_or_else(|| RunError::at(it.ctx, op, "malformed 'vec.hist'"))?;
    hist::interp(it, op, a, &hop)
}

fn interp_insert(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let ctx = it.ctx;
    let v = as_vec(ctx, op, &a[0])?;
    let i = crate::vec::as_index(ctx, op, &a[1], v.len(), "index")?;
    let mut out = v.as_ref().clone();
    out[i] = a[2].clone();
    Ok(smallvec![vec_value(out)])
}

// ----- lowerings to arr + scf --------------------------------------------

/// How an indexed update combines the old element with the new value.
enum Update {
    /// `scatter`: the new value.
    Store,
    /// `hist` with a `kind`.
    Kind(BinOp),
    /// `hist` with a combiner region (its terminator).
    Region(ir::RegionId, OpId),
}

/// The `arr` lowering of `scatter` and `hist`.
fn lower_update(b: &mut Builder, st: &OpState, k: Update, name: &str) -> Repl {
    let (&dest, &is, &vs) = (
        st.operands.first()?,
        st.operands.get(1)?,
        st.operands.get(2)?,
    );
    let t = b.ctx.ty(dest).elem()?.clone();
    let m = crate::vec::checked_len(b, &[is, vs], &format!("size mismatch in {name}"));
    let (a, n) = start_buffer(b, dest);
    let zero = crate::arith::const_int(b, 0, &Type::Index);
    let one = crate::arith::const_int(b, 1, &Type::Index);
    crate::scf::build_for(b, zero, m, one, &[], |b, j, _| {
        let i = crate::vec::get_in_bounds(b, is, j);
        let ok = crate::arith::build_in_range(b, i, n);
        crate::scf::build_if_then(b, ok, |b| {
            let x = crate::vec::get_in_bounds(b, vs, j);
            let x = match k {
                Update::Kind(k) => {
                    let old = crate::arr::load_in_bounds(b, a, i);
                    b.op1(k.arith_op(&t), &[old, x], t.clone(), vec![])
                }
                Update::Region(r, term) => {
                    let old = crate::arr::load_in_bounds(b, a, i);
                    crate::vec_combine::inline_combiner(b, r, term, old, x)
                }
                Update::Store => x,
            };
            crate::arr::store_in_bounds(b, a, i, x);
        });
        vec![]
    });
    Some(smallvec![crate::arr::to_vec(b, a)])
}

/// `(n, x)` when `v` is `n` copies of `x`: a `vec.fill`, or the collect
/// loop a `vec.fill` lowers to (one generator, fed `x` from outside at the
/// top of its body and nothing else).
fn fill_of(ctx: &Context, v: ValueId) -> Option<(ValueId, ValueId)> {
    let d = ctx.def_op(v)?;
    if ctx.is(d, "vec.fill") {
        return Some((*ctx.operands(d).first()?, *ctx.operands(d).get(1)?));
    }
    if !ctx.is(d, crate::gen::LOOP) || ctx.results(d).len() != 1 || ctx.operands(d).len() != 1 {
        return None;
    }
    let gens = crate::gen::try_generators(ctx, d).ok()?;
    if !matches!(gens.as_slice(), [g] if matches!(g.kind, crate::gen::GenKind::Collect)) {
        return None;
    }
    let ops = ctx.block_ops(crate::gen::body(ctx, d));
    let [emit, end] = ops.as_slice() else {
        return None;
    };
    if !ctx.is(*emit, crate::gen::EMIT) || !ctx.is(*end, "gen.end") {
        return None;
    }
    let x = *ctx.operands(*emit).get(1)?;
    let inside = ctx.value_block(x).is_some_and(|b| ctx.block_in_op(b, d));
    (!inside).then(|| (ctx.operand(d, 0), x))
}

/// Whether `x` is a constant equal to the zero `arr.alloc` fills with
/// (`0`, `+0.0`, `false`).
fn is_alloc_zero(ctx: &Context, x: ValueId) -> bool {
    let Some(value) = ctx
        .def_op(x)
        .filter(|&d| ctx.is(d, "arith.constant"))
        .and_then(|d| ctx.attr(d, "value"))
    else {
        return false;
    };
    match value.as_float() {
        Some(f) => f.to_bits() == 0,
        None => value.as_int() == Some(0),
    }
}

/// The buffer an indexed update starts from and its length: a copy of
/// `dest`, or, where `dest` is `n` copies of `x` ([`fill_of`]), `n` fresh
/// elements (`arr.alloc`'s zeros, or `x` stored in a loop): the filled
/// vector itself is never built for the update (issue 42: a `vec.fill`
/// destination costs no vector).
fn start_buffer(b: &mut Builder, dest: ValueId) -> (ValueId, ValueId) {
    let Some((n, x)) = fill_of(b.ctx, dest) else {
        let a = crate::arr::from_vec(b, dest);
        let n = crate::vec::len(b, dest);
        return (a, n);
    };
    let t = b.ctx.ty(x).clone();
    let a = crate::arr::alloc(b, n, t);
    if !is_alloc_zero(b.ctx, x) {
        let zero = crate::arith::const_int(b, 0, &Type::Index);
        let one = crate::arith::const_int(b, 1, &Type::Index);
        crate::scf::build_for(b, zero, n, one, &[], |b, i, _| {
            crate::arr::store_in_bounds(b, a, i, x);
            vec![]
        });
    }
    (a, n)
}

fn lower_scatter(b: &mut Builder, st: &OpState) -> Repl {
    lower_update(b, st, Update::Store, "vec.scatter")
}

fn lower_hist(b: &mut Builder, st: &OpState) -> Repl {
    let hop = if let Some(&r) = st.regions.first() {
        let term = crate::vec_combine::combiner_terminator(b.ctx, r)?;
        HistOp::Region(r, term)
    } else {
        let k = st
            .attrs
            .iter()
            .find(|(n, _)| n == "kind")
            .and_then(|(_, a)| BinOp::from_kind_attr(a))?;
        HistOp::Kind(k, b.ctx.ty(*st.operands.first()?).elem()?.clone())
    };
    if hop.chunked(b.ctx) {
        return lower_chunked(b, st, &hop);
    }
    match hop {
        HistOp::Region(r, term) => lower_update(b, st, Update::Region(r, term), "vec.hist"),
        HistOp::Kind(k, _) => lower_update(b, st, Update::Kind(k), "vec.hist"),
    }
}

/// The chunked lowering of a histogram ([`hist::lower`]).
fn lower_chunked(b: &mut Builder, st: &OpState, hop: &HistOp) -> Repl {
    let (&dest, &is, &vs) = (
        st.operands.first()?,
        st.operands.get(1)?,
        st.operands.get(2)?,
    );
    let t = b.ctx.ty(dest).elem()?.clone();
    let m = crate::vec::checked_len(b, &[is, vs], "size mismatch in vec.hist");
    let (a, n) = start_buffer(b, dest);
    hist::lower(b, hop, &t, is, vs, m, a, n);
    Some(smallvec![crate::arr::to_vec(b, a)])
}

fn lower_insert(b: &mut Builder, st: &OpState) -> Repl {
    let (&v, &i, &x) = (
        st.operands.first()?,
        st.operands.get(1)?,
        st.operands.get(2)?,
    );
    let a = crate::arr::from_vec(b, v);
    // The checked store faults out of bounds, as the op does.
    crate::arr::store(b, a, i, x);
    Some(smallvec![crate::arr::to_vec(b, a)])
}

/// Registers the ops.
pub fn register(r: &mut Registry) {
    use crate::util::pure;
    r.register(
        pure(
            "vec.scatter",
            "dest with dest[is[j]] = vs[j] for each j in order (out-of-range indices ignored)",
            3,
        )
        .assembly_format("operands attr-dict : type(first)")
        .infer(crate::util::infer_same)
        .verify(verify_scatter)
        .interpret(interp_scatter)
        .lowering("gen", lower_scatter),
    );
    r.register(
        pure(
            "vec.hist",
            "dest with dest[is[j]] = dest[is[j]] op vs[j] for each j in order (out-of-range indices ignored)",
            3,
        )
        .regions(ir::spec::Arity::Between(0, 1))
        .traits(ir::Traits::PURE | ir::Traits::REGIONS_NEED_TERMINATOR)
        .assembly_format("$kind? operands attr-dict : type(first) regions")
        .infer(crate::util::infer_same)
        .verify(verify_hist)
        .interpret(interp_hist)
        .lowering("gen", lower_hist),
    );
    r.register(
        pure(
            "vec.insert",
            "v with element i replaced by x (faults out of bounds)",
            3,
        )
        .assembly_format("operands attr-dict : type(first)")
        .infer(crate::util::infer_same)
        .verify(verify_insert)
        .interpret(interp_insert)
        .lowering("arr", lower_insert),
    );
}
