//! Proves reads in bounds: a `vec.get(v, i)` whose index `i` is the
//! induction variable of an enclosing `gen.loop` (or `scf.for` from 0 by 1,
//! its size the upper bound) whose size is `vec.len(v)`
//! (the same SSA value, or a length equated with it by
//! `scf.assert(arith.cmpi eq ...)` ops that dominate the read, or that
//! code motion hoisted in front of the loop under the guard "the loop
//! runs"), or `mat.cols(m)` when `v` is a row of `m`, or whose
//! size is the size of the loop that produced `v` with one unconditional
//! emit per index, can never fault, and gets the unit
//! attribute `in_bounds`. Code generators may then omit the bounds check
//! (L0's certificates for bounds checks, Henriksen 2014, play this role).
//! Transformations that clone a read to indices inside the same range
//! (e.g. `split-reductions`) keep the attribute. A read at the same index
//! as a dominating in-bounds read of a vector of equal length (the same
//! `vec.len`, or lengths equated by dominating asserts) is in bounds too.

use std::collections::HashMap;

use ir::builder::dominates_point;
use ir::{Attribute, Context, OpId, ValueId};

/// The `scf.assert(arith.cmpi eq, a, b)` ops of the module, as `(assert, a, b)`.
pub(crate) fn equality_asserts(ctx: &Context) -> Vec<(OpId, ValueId, ValueId)> {
    let mut out = Vec::new();
    for op in ctx.walk_all() {
        if !ctx.is(op, "scf.assert") {
            continue;
        }
        let c = ctx.operand(op, 0);
        let Some(cmp) = ctx.def_op_named(c, "arith.cmpi") else {
            continue;
        };
        if dialects::arith::predicate_of(ctx, cmp) != Some("eq") {
            continue;
        }
        out.push((op, ctx.operand(cmp, 0), ctx.operand(cmp, 1)));
    }
    out
}

/// Length values known equal at `read`, as a union-find map (see [`find`]):
/// joined by the equality asserts that dominate `read` (an assert that does
/// not dominate the read, e.g. one in a branch not taken, proves nothing
/// there).
fn equal_at(
    ctx: &Context,
    asserts: &[(OpId, ValueId, ValueId)],
    read: OpId,
) -> HashMap<ValueId, ValueId> {
    let mut rep: HashMap<ValueId, ValueId> = HashMap::new();
    let Some(blk) = ctx.op(read).parent else {
        return rep;
    };
    for &(op, x, y) in asserts {
        if !holds_at(ctx, op, blk, read) {
            continue;
        }
        let (x, y) = (find(&rep, x), find(&rep, y));
        if x != y {
            rep.insert(x, y);
        }
    }
    rep
}

/// Whether assert `op` has run (and passed) whenever `read` (in `blk`)
/// runs: it dominates the read, or it sits in the then-branch of a guard
/// `scf.if %c` (code motion's guarded hoisting) that comes before an op
/// around the read that runs only when `%c` holds: a loop whose run
/// condition `%c` is, or the then-branch of another `scf.if %c`. The
/// guard's condition is the certificate (Henriksen 2014 §4.2).
fn holds_at(ctx: &Context, op: OpId, blk: ir::BlockId, read: OpId) -> bool {
    if dominates_point(ctx, op, blk, Some(read)) {
        return true;
    }
    let Some(then_blk) = ctx.op(op).parent else {
        return false;
    };
    let Some(guard) = ctx.block_parent_op(then_blk) else {
        return false;
    };
    let then_of = |g: OpId| ctx.region(ctx.regions(g)[0]).blocks[0];
    if !ctx.is(guard, "scf.if") || then_of(guard) != then_blk {
        return false;
    }
    let cond = ctx.operand(guard, 0);
    let mut o = read;
    while let Some(a) = ctx.parent_op(o) {
        let covered = crate::code_motion::guarded::is_run_condition(ctx, a, cond)
            || (ctx.is(a, "scf.if")
                && ctx.operand(a, 0) == cond
                && ctx.op(o).parent == Some(then_of(a)));
        if covered && ctx.op(a).parent == ctx.op(guard).parent && ctx.is_before_in_block(guard, a) {
            return true;
        }
        o = a;
    }
    false
}

/// The representative of `v` in union-find map `rep`.
fn find(rep: &HashMap<ValueId, ValueId>, mut v: ValueId) -> ValueId {
    while let Some(&p) = rep.get(&v) {
        if p == v {
            break;
        }
        v = p;
    }
    v
}

/// Whether `v` is the vector of a collect or scan generator with one
/// unconditional emit at the top of the body of a `gen.loop` of size
/// `size`: such a loop yields exactly `size` elements (what `fuse` leaves
/// when it replaces `vec.len(v)` by the producer's size).
fn exact_output_of_size(ctx: &Context, v: ValueId, size: ValueId) -> bool {
    use dialects::gen::{self, GenKind};
    let Some(p) = ctx.def_op_named(v, gen::LOOP) else {
        return false;
    };
    if ctx.operand(p, 0) != size {
        return false;
    }
    let Ok(gens) = gen::try_generators(ctx, p) else {
        return false;
    };
    let offsets = gen::result_offsets(&gens);
    let Some(k) = ctx.results(p).iter().position(|&r| r == v) else {
        return false;
    };
    let Some(g) = offsets.iter().position(|&o| o == k) else {
        return false;
    };
    let h = gen::handles(ctx, p)[g];
    matches!(gens[g].kind, GenKind::Collect | GenKind::Scan(_))
        && gen::exact_emit(ctx, gen::body(ctx, p), h).is_some()
}

/// Whether `v` is a row of a matrix `m` (`mat.row(m, _)`) and `size` is
/// `mat.cols(m)`: every row is that long (`mat.rows(m)` for a column,
/// `mat.row {transposed}`).
fn row_of_cols(ctx: &Context, v: ValueId, size: ValueId) -> bool {
    let Some(r) = ctx.def_op_named(v, "mat.row") else {
        return false;
    };
    ctx.def_op_named(size, dialects::mat::row_len_op(ctx, r))
        .is_some_and(|c| ctx.operand(c, 0) == ctx.operand(r, 0))
}

/// The results of the `vec.len(v)` ops.
fn lens_of(ctx: &Context, v: ValueId) -> Vec<ValueId> {
    ctx.uses(v)
        .iter()
        .filter(|u| ctx.is(u.op, "vec.len"))
        .map(|u| ctx.result(u.op, 0))
        .collect()
}

/// Whether read `op` (`vec.get(v, i)`) is at the index of another read
/// proved in bounds, `vec.get(w, i) {in_bounds}`, that dominates it, where
/// `vec.len(w)` and `vec.len(v)` are equal by the asserts that hold at `op`
/// (a zipped map's second read, computed at a user-defined reduce's chunk
/// loop by fusion's substitution).
fn twin_read(ctx: &Context, asserts: &[(OpId, ValueId, ValueId)], op: OpId) -> bool {
    let (v, i) = (ctx.operand(op, 0), ctx.operand(op, 1));
    let Some(blk) = ctx.op(op).parent else {
        return false;
    };
    let mine = lens_of(ctx, v);
    let twins: Vec<ValueId> = ctx
        .uses(i)
        .iter()
        .filter(|u| {
            u.index == 1
                && u.op != op
                && ctx.is(u.op, "vec.get")
                && ctx.attr(u.op, "in_bounds").is_some()
                && dominates_point(ctx, u.op, blk, Some(op))
        })
        .map(|u| ctx.operand(u.op, 0))
        .collect();
    if twins.contains(&v) {
        return true;
    }
    if twins.is_empty() || mine.is_empty() || asserts.is_empty() {
        return false;
    }
    let rep = equal_at(ctx, asserts, op);
    twins.iter().any(|&w| {
        lens_of(ctx, w)
            .iter()
            .any(|&l| mine.iter().any(|&m| find(&rep, l) == find(&rep, m)))
    })
}

/// Whether `mat.get(m, a, b)` op `op` (entry `(b, a)` of `m` with
/// `{transposed}`) can never fault: its row index is the index of an
/// enclosing loop over `[0, n)` with `n` equal to `mat.rows(m)`, and its
/// column index one over `mat.cols(m)`. A size equals a dimension when it
/// is the same value as the `mat.from` operand or a `mat.rows`/`mat.cols`
/// of `m`, or is equated with one by the equality asserts (`asserts`, from
/// [`equality_asserts`]) that hold at `op`.
pub(crate) fn mat_get_in_bounds(
    ctx: &Context,
    asserts: &[(OpId, ValueId, ValueId)],
    op: OpId,
) -> bool {
    if !ctx.is(op, "mat.get") {
        return false;
    }
    let m = ctx.operand(op, 0);
    let (r, c) = dialects::mat::get_entry(ctx, op);
    let dims = |which: usize, size_op: &str| -> Vec<ValueId> {
        let mut out: Vec<ValueId> = ctx
            .uses(m)
            .iter()
            .filter(|u| ctx.is(u.op, size_op))
            .map(|u| ctx.result(u.op, 0))
            .collect();
        if let Some(f) = ctx.def_op_named(m, "mat.from") {
            out.push(ctx.operand(f, which));
        }
        out
    };
    let mut rep = None;
    let mut within = |i: ValueId, dims: Vec<ValueId>| {
        let Some((_, size)) = crate::code_motion::index_range(ctx, i) else {
            return false;
        };
        if dims.contains(&size) {
            return true;
        }
        if dims.is_empty() || asserts.is_empty() {
            return false;
        }
        let rep = rep.get_or_insert_with(|| equal_at(ctx, asserts, op));
        let s = find(rep, size);
        dims.iter().any(|&d| find(rep, d) == s)
    };
    within(r, dims(1, "mat.rows")) && within(c, dims(2, "mat.cols"))
}

/// Marks provably in-bounds `vec.get` ops; returns how many were marked.
pub fn mark_in_bounds(ctx: &mut Context) -> u64 {
    let asserts = equality_asserts(ctx);
    let mut marks: Vec<OpId> = Vec::new();
    for op in ctx.walk_all() {
        if !ctx.is(op, "vec.get") || ctx.attr(op, "in_bounds").is_some() {
            continue;
        }
        let (v, i) = (ctx.operand(op, 0), ctx.operand(op, 1));
        // Is `i` the induction variable of an enclosing gen.loop, or of an
        // `scf.for` from 0 by 1 (the sequential loop of a user-defined
        // reduce or scan)? Then `i` is in `[0, size)`.
        let Some((_, size)) = crate::code_motion::index_range(ctx, i) else {
            if twin_read(ctx, &asserts, op) {
                marks.push(op);
            }
            continue;
        };
        let len_of_v = ctx
            .def_op_named(size, "vec.len")
            .is_some_and(|len| ctx.operand(len, 0) == v)
            || row_of_cols(ctx, v, size);
        // Another `vec.len(v)` equal to the size at this read (the
        // dominating asserts are gathered once per read).
        let same_len = || {
            let lens = lens_of(ctx, v);
            if lens.contains(&size) {
                return true;
            }
            if lens.is_empty() || asserts.is_empty() {
                return false;
            }
            let rep = equal_at(ctx, &asserts, op);
            let s = find(&rep, size);
            lens.iter().any(|&l| find(&rep, l) == s)
        };
        if len_of_v || exact_output_of_size(ctx, v, size) || same_len() {
            marks.push(op);
        }
    }
    for &op in &marks {
        ctx.set_attr(op, "in_bounds", Attribute::Unit);
    }
    marks.len() as u64
}
