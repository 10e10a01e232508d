//! User-defined operators of `vec.reduce` and `vec.scan` (issue 42, item 1):
//! the combiner-region form, beside the `kind` form of [`crate::vec`].
//!
//! ```text
//! %r = vec.reduce %v, %ne : vec<T> {
//! ^bb0(%a: T, %b: T):
//!   ...
//!   vec.yield %c : T
//! }
//! ```
//! (generic: `"vec.reduce"(%v, %ne) ({...}) : (vec<T>, T) -> T`; `vec.scan`
//! is the same with result `vec<T>`, inclusive.)
//!
//! Contract (Futhark's `reduce`/`scan`): the operator is associative and
//! `%ne` is its neutral element. The result is the fold in an order fixed
//! by the length alone: here the left fold `((ne ⊕ v0) ⊕ v1) ⊕ ...`, on
//! every backend and thread count, so a program that breaks the contract
//! still gets one deterministic answer. `T` is any scalar type or a struct
//! (e.g. an argmin over `struct<v: f64, i: index>`); the combiner may fault
//! (its fault is the op's, at the faulting op).
//!
//! Lowering (phase `gen`; for struct elements from `split-structs`, which
//! then splits the loop): `reduce` becomes an `scf.for` carrying the
//! accumulator, `scan` the same loop storing each running value into fresh
//! buffers. Both are sequential loops: the parallel and GPU forms, and
//! fusing a producer into them, are left for `gen` generators with
//! combiner regions.

use smallvec::{smallvec, SmallVec};

use ir::interp::{Interp, RtValue, RunError};
use ir::{Builder, Context, OpId, OpState, Type, ValueId};

type Vals = SmallVec<[RtValue; 2]>;
type Repl = Option<SmallVec<[ValueId; 2]>>;

/// The attribute that marks the `scf.for` a combiner's reduce or scan
/// lowers to (its value: the op's name): a left fold, which no kernel runs.
pub const SEQUENTIAL_ATTR: &str = "l0.left_fold";

/// Whether `op` (a `vec.reduce` or `vec.scan`) has a combiner region.
pub fn has_combiner(ctx: &Context, op: OpId) -> bool {
    !ctx.regions(op).is_empty()
}

/// Verifies the combiner form: no `kind`, a `vec<T>` input, an `ne` of
/// type `T`, result `result` (`T` or `vec<T>`), and a region of one block
/// `(T, T)` ending in `vec.yield` of one `T`.
pub fn verify(ctx: &Context, op: OpId, scan: bool) -> Result<(), String> {
    no_kind(ctx, op)?;
    let Some(t) = ctx.ty(ctx.operand(op, 0)).elem().cloned() else {
        return Err(format!(
            "operand #0 must be a vec, but got '{}'",
            ctx.ty(ctx.operand(op, 0))
        ));
    };
    if matches!(t, Type::Vec(_) | Type::Mat(_) | Type::Arr(_)) {
        return Err(format!(
            "a combiner's element type must be a scalar or a struct, but is '{t}'"
        ));
    }
    let ne = ctx.ty(ctx.operand(op, 1));
    if *ne != t {
        return Err(format!(
            "the neutral element must have the element type '{t}', but has '{ne}'"
        ));
    }
    let want = if scan {
        Type::vec(t.clone())
    } else {
        t.clone()
    };
    let got = ctx.ty(ctx.result(op, 0));
    if *got != want {
        return Err(format!("result must be '{want}', but is '{got}'"));
    }
    verify_region(ctx, op, &t)
}

/// An op with a combiner region must not have a `kind` too.
pub(crate) fn no_kind(ctx: &Context, op: OpId) -> Result<(), String> {
    match ctx.attr(op, "kind") {
        Some(_) => Err("takes either a 'kind' or a combiner region, not both".into()),
        None => Ok(()),
    }
}

/// The terminator of combiner region `r` when the region has the shape the
/// lowerings inline: two arguments and one yielded value.
pub(crate) fn combiner_terminator(ctx: &Context, r: ir::RegionId) -> Option<OpId> {
    let blk = ctx.region_block(r);
    let term = ctx.terminator(blk)?;
    (ctx.block_args(blk).len() == 2 && ctx.operands(term).len() == 1).then_some(term)
}

/// Checks the combiner region of `op`: one block `(T, T)` ending in
/// `vec.yield` of one `T`.
pub(crate) fn verify_region(ctx: &Context, op: OpId, t: &Type) -> Result<(), String> {
    let t = t.clone();
    let r = ctx.regions(op)[0];
    if ctx.region(r).blocks.len() != 1 {
        return Err("the combiner region must have exactly one block".into());
    }
    let b = ctx.region_block(r);
    let args = ctx.block_args(b);
    if args.len() != 2 || args.iter().any(|&a| *ctx.ty(a) != t) {
        let got: Vec<String> = args.iter().map(|&a| ctx.ty(a).to_string()).collect();
        return Err(format!(
            "the combiner must take two arguments of type '{t}', but takes ({})",
            got.join(", ")
        ));
    }
    let term = ctx.terminator(b).filter(|&y| ctx.is(y, "vec.yield"));
    let Some(term) = term else {
        return Err("the combiner region must end with 'vec.yield'".into());
    };
    let ys = ctx.operands(term);
    if ys.len() != 1 || *ctx.ty(ys[0]) != t {
        let got: Vec<String> = ys.iter().map(|&y| ctx.ty(y).to_string()).collect();
        return Err(format!(
            "the combiner must yield one '{t}', but yields ({})",
            got.join(", ")
        ));
    }
    Ok(())
}

/// Interprets `vec.hist` with a combiner: for each `j` in order with
/// `is[j]` in range, `dest[is[j]] = op(dest[is[j]], vs[j])` on a copy of
/// `dest` (as the `kind` form, [`crate::vec_scatter`]).
pub fn interp_hist(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let ctx = it.ctx;
    let mut out = crate::vec::as_vec(ctx, op, &a[0])?.as_ref().clone();
    let is = crate::vec::as_vec(ctx, op, &a[1])?.clone();
    let vs = crate::vec::as_vec(ctx, op, &a[2])?.clone();
    if is.len() != vs.len() {
        return Err(RunError::at(
            ctx,
            op,
            format!(
                "size mismatch in vec.hist: {} indices and {} values",
                is.len(),
                vs.len()
            ),
        ));
    }
    let r = ctx.regions(op)[0];
    for (i, v) in is.iter().zip(vs.iter()) {
        let i = i
            .as_int()
            .ok_or_else(|| RunError::at(ctx, op, "expected an index"))?;
        let Some(k) = usize::try_from(i).ok().filter(|&k| k < out.len()) else {
            continue;
        };
        let ys = it.run_region(r, &[out[k].clone(), v.clone()])?;
        out[k] = ys
            .into_iter()
            .next()
            .ok_or_else(|| RunError::at(ctx, op, "the combiner yielded no value"))?;
    }
    Ok(smallvec![crate::vec::vec_value(out)])
}

/// Interprets the combiner form: the left fold from `a[1]` over the
/// vector `a[0]`, every running value (`scan`) or the last (`reduce`).
pub fn interp(it: &mut Interp, op: OpId, a: &[RtValue], scan: bool) -> Result<Vals, RunError> {
    let ctx = it.ctx;
    let v = crate::vec::as_vec(ctx, op, &a[0])?.clone();
    let r = ctx.regions(op)[0];
    let mut acc = a[1].clone();
    let mut out = Vec::with_capacity(if scan { v.len() } else { 0 });
    for x in v.iter() {
        let ys = it.run_region(r, &[acc, x.clone()])?;
        acc = ys
            .into_iter()
            .next()
            .ok_or_else(|| RunError::at(ctx, op, "the combiner yielded no value"))?;
        if scan {
            out.push(acc.clone());
        }
    }
    Ok(smallvec![if scan {
        crate::vec::vec_value(out)
    } else {
        acc
    }])
}

/// Lowers the combiner form to a sequential `scf.for` carrying the
/// accumulator (see the module doc); `scan` stores each running value, one
/// buffer per leaf field of `T`, and a struct `T`'s field vectors are
/// zipped back into records by a `vec.map` (which `split-structs` turns
/// into the field vectors themselves). Runs at phase `gen`, and from
/// `split-structs` for struct values, which then splits the loop. `None`
/// for a malformed region.
pub fn lower(b: &mut Builder, st: &OpState, scan: bool) -> Repl {
    let (&v, &ne) = (st.operands.first()?, st.operands.get(1)?);
    let t = b.ctx.ty(v).elem()?.clone();
    let &r = st.regions.first()?;
    let term = combiner_terminator(b.ctx, r)?;
    let n = crate::vec::len(b, v);
    let zero = crate::arith::const_int(b, 0, &Type::Index);
    let one = crate::arith::const_int(b, 1, &Type::Index);
    let leaves = t.named_leaves();
    let outs: Vec<ValueId> = match scan {
        true => leaves
            .iter()
            .map(|(_, lt)| crate::arr::alloc(b, n, lt.clone()))
            .collect(),
        false => Vec::new(),
    };
    let acc = crate::scf::build_for(b, zero, n, one, &[ne], |b, i, accs| {
        let x = crate::vec::get_in_bounds(b, v, i);
        let c = inline_combiner(b, r, term, accs[0], x);
        for ((path, lt), &o) in leaves.iter().zip(&outs) {
            let f = field_at(b, c, path, lt);
            crate::arr::store_in_bounds(b, o, i, f);
        }
        vec![c]
    });
    // Marks the loop as this op's left fold (for the GPU lowering's count
    // of loops left on the host, `passes::gpu`).
    if let Some(lp) = b.ctx.def_op(acc[0]) {
        let name = if scan { "vec.scan" } else { "vec.reduce" };
        b.ctx
            .set_attr(lp, SEQUENTIAL_ATTR, ir::Attribute::Str(name.to_string()));
    }
    if !scan {
        return Some(smallvec![acc[0]]);
    }
    let vecs: Vec<ValueId> = outs.iter().map(|&o| crate::arr::to_vec(b, o)).collect();
    if t.as_struct().is_none() {
        return Some(smallvec![vecs[0]]);
    }
    // Records from their field vectors.
    let arg_types: Vec<Type> = leaves.iter().map(|(_, lt)| lt.clone()).collect();
    let t2 = t.clone();
    let body = b.build_region(&arg_types, |b, es| {
        let mut it = es.iter().copied();
        if let Some(s) = crate::structs::build_fields(b, &t2, &mut |_, _| it.next()) {
            b.op("vec.yield", &[s], &[], vec![]);
        }
    });
    let zipped = b.op_with_regions("vec.map", &vecs, &[Type::vec(t)], vec![], &[body]);
    Some(smallvec![*zipped.first()?])
}

/// The leaf field of `c` at `path` (`.a.b`; empty: `c` itself), of type
/// `lt`, through `struct.get`s.
fn field_at(b: &mut Builder, c: ValueId, path: &str, lt: &Type) -> ValueId {
    let names: Vec<&str> = path.split('.').filter(|p| !p.is_empty()).collect();
    let mut cur = c;
    for (k, name) in names.iter().enumerate() {
        let ty = match b.ctx.ty(cur).as_struct() {
            Some(st) => st
                .fields
                .iter()
                .find(|(n, _)| n == name)
                .map_or(lt.clone(), |(_, t)| t.clone()),
            None => lt.clone(),
        };
        let ty = if k + 1 == names.len() { lt.clone() } else { ty };
        cur = b.op1(
            "struct.get",
            &[cur],
            ty,
            vec![("field".into(), ir::Attribute::Str(name.to_string()))],
        );
    }
    cur
}

/// Moves the combiner's ops (of region `r`, terminator `term`, as
/// [`combiner_terminator`] found it) to the insertion point with its
/// arguments replaced by `acc` and `x`; returns the yielded value.
pub(crate) fn inline_combiner(
    b: &mut Builder,
    r: ir::RegionId,
    term: OpId,
    acc: ValueId,
    x: ValueId,
) -> ValueId {
    let blk = b.ctx.region_block(r);
    let args = b.ctx.block_args(blk).to_vec();
    b.ctx.replace_all_uses(args[0], acc);
    b.ctx.replace_all_uses(args[1], x);
    let (dest, before) = b.insertion_point();
    for op in b.ctx.block_ops(blk) {
        if op != term {
            b.ctx.move_op(op, dest, before);
        }
    }
    b.ctx.operand(term, 0)
}
