//! Hoisting of loop-invariant ops that may fault, under a guard (issue 9,
//! item 5; Henriksen 2014, §4.2 assertions and §6.1 hoisting).
//!
//! An invariant check or read inside a loop (`scf.assert` of a zipWith's
//! sizes, `vec.get(v, k)` at an invariant `k`, `vec.dot` of invariant
//! vectors, an integer division) runs once per iteration and blocks the
//! ops that depend on it from leaving the loop. The thesis hoists such
//! assertions freely and notes (§6.1.1) that this is only sound when the
//! loop runs at least once; moving a fault is never allowed here. So an op
//! moves in front of its loop, wrapped in
//! `scf.if (the loop runs at least once) { op } else { zeros }`, when:
//! - it sits in the loop body's own block, so every iteration runs it;
//! - every op before it that stays in the body cannot fault, so in the
//!   first iteration nothing else could fault before it;
//! - it has no effect but its fault (pure, or `scf.assert`, or an `scf.if`
//!   or a loop holding only such ops: a guard made by an inner loop's
//!   hoisting, a reduce over invariant vectors) and
//!   scalar results (the else branch yields zeros, never read, since the
//!   loop then does not run);
//! - every value it uses is defined outside the loop.
//!
//! Then the first iteration of the original program runs the same op on
//! the same values, first: a program that faults still faults with the
//! same op's message and location, and one that does not, does not. Since
//! the op is invariant, its later executions repeat the first one. The
//! guard plays the role of the thesis's certificate: the ops that depend
//! on the hoisted op's results read the `scf.if`'s results, and are then
//! invariant in turn, so they can follow it out.

use ir::{BlockId, Builder, Context, OpId, Traits, Type, ValueId};

/// The condition "loop `lp` runs at least once", built in front of it, if
/// `lp` is a loop whose every iteration runs its body block from the top:
/// a `gen.loop` (size > 0; a negative size faults in the loop itself, after
/// the guard, which is then false) or an `scf.for` with a constant positive
/// step (lb < ub).
fn runs_once(ctx: &mut Context, lp: OpId) -> Option<ValueId> {
    match ctx.op_name(lp) {
        "gen.loop" => {
            // Its only other fault before the first iteration: a reduce or
            // scan without an init whose type has no identity.
            let gens = dialects::gen::try_generators(ctx, lp).ok()?;
            let identity = |g: &dialects::gen::Generator| {
                g.monoid()
                    .is_none_or(|m| m.identity_value(&g.elem).is_some())
            };
            if !gens.iter().all(identity) {
                return None;
            }
            let n = ctx.operand(lp, 0);
            let mut b = Builder::before(ctx, lp);
            let zero = b.constant(ir::Attribute::int(0, Type::Index), &Type::Index);
            Some(dialects::arith::build_cmpi(&mut b, "sgt", n, zero))
        }
        "scf.for" => {
            let step = super::constant(ctx, ctx.operand(lp, 2))?;
            if step <= 0 {
                return None;
            }
            let (lb, ub) = (ctx.operand(lp, 0), ctx.operand(lp, 1));
            let mut b = Builder::before(ctx, lp);
            Some(dialects::arith::build_cmpi(&mut b, "slt", lb, ub))
        }
        _ => None,
    }
}

/// Whether `cond` is the condition "loop `lp` runs at least once" as
/// [`runs_once`] builds it (either operand order): the certificate that
/// an op in the then-branch of `scf.if %cond`, placed before `lp`, ran
/// before any iteration of `lp` (`bounds` relies on it).
pub(crate) fn is_run_condition(ctx: &Context, lp: OpId, cond: ValueId) -> bool {
    let Some(c) = ctx.def_op_named(cond, "arith.cmpi") else {
        return false;
    };
    let (x, y) = (ctx.operand(c, 0), ctx.operand(c, 1));
    let pred = dialects::arith::predicate_of(ctx, c);
    let zero = |v| super::constant(ctx, v) == Some(0);
    let less = |a: ValueId, b: ValueId| match pred {
        Some("slt") => (x, y) == (a, b),
        Some("sgt") => (x, y) == (b, a),
        _ => false,
    };
    match ctx.op_name(lp) {
        "gen.loop" => {
            let n = ctx.operand(lp, 0);
            (pred == Some("sgt") && x == n && zero(y)) || (pred == Some("slt") && zero(x) && y == n)
        }
        "scf.for" => {
            super::constant(ctx, ctx.operand(lp, 2)).is_some_and(|s| s > 0)
                && less(ctx.operand(lp, 0), ctx.operand(lp, 1))
        }
        _ => false,
    }
}

/// The body block of `lp`, when it has exactly one region of one block.
pub(super) fn body_block(ctx: &Context, lp: OpId) -> Option<BlockId> {
    match ctx.regions(lp) {
        [r] => match ctx.region(*r).blocks[..] {
            [b] => Some(b),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `op` can never fault and has no effect that a fault hoisted
/// past it would skip (a conservative list).
pub(super) fn cannot_fault(ctx: &Context, op: OpId) -> bool {
    match ctx.op_name(op) {
        "gen.emit" | "gen.end" | "scf.yield" => true,
        // In bounds: proved so, or read at the index of a loop (around it)
        // over exactly the valid indices.
        "vec.get" => {
            let (v, i) = (ctx.operand(op, 0), ctx.operand(op, 1));
            ctx.attr(op, "in_bounds").is_some()
                || super::loop_over(ctx, i, |n| super::is_size_of(ctx, n, "vec.len", v)).is_some()
        }
        "mat.row" => {
            let (m, i) = (ctx.operand(op, 0), ctx.operand(op, 1));
            let count = dialects::mat::row_count_op(ctx, op);
            super::loop_over(ctx, i, |n| super::is_size_of(ctx, n, count, m)).is_some()
        }
        _ => super::speculatable(ctx, op) || super::harmless_loop(ctx, op),
    }
}

/// Whether `op` has no effect other than possibly faulting: a pure op
/// without regions, an `scf.assert`, or an `scf.if` or a loop of such ops
/// (a loop emitting only to its own generators, e.g. the reduce of a
/// `vec.dot` of invariant vectors, whose size check left it first).
fn only_faults(ctx: &Context, op: OpId) -> bool {
    match ctx.op_name(op) {
        "scf.assert" => true,
        // Regions of such ops; a loop's emits go to its own generators.
        "scf.if" | "scf.for" | "gen.loop" => {
            ctx.walk_nested(op)
                .into_iter()
                .all(|o| match ctx.op_name(o) {
                    "scf.yield" | "gen.end" => true,
                    "gen.emit" => super::emits_inside(ctx, o, op),
                    // Nested branches and loops: the walk visits their ops
                    // too (checking them again from each would take time
                    // exponential in the nesting depth).
                    "scf.if" | "scf.for" | "gen.loop" => true,
                    _ => only_faults(ctx, o),
                })
        }
        // A pure op computes results (terminators such as `gen.end` have none).
        _ => {
            ctx.has_traits(op, Traits::PURE)
                && ctx.regions(op).is_empty()
                && !ctx.results(op).is_empty()
        }
    }
}

/// Whether `op` (in `lp`'s body block) can be hoisted under a guard.
pub(super) fn guardable(ctx: &Context, op: OpId, lp: OpId) -> bool {
    only_faults(ctx, op)
        && ctx.results(op).iter().all(|&r| ctx.ty(r).is_scalar())
        && super::invariant_deep(ctx, op, lp)
}

/// Moves `op` in front of `lp` inside `scf.if (lp runs) { op }`, with
/// zeros in the else branch, and points its uses at the `scf.if`'s
/// results. `guard` caches the condition (built on first use). Returns
/// false (and changes nothing) when `lp` has no such condition.
pub(super) fn hoist_guarded(
    ctx: &mut Context,
    op: OpId,
    lp: OpId,
    guard: &mut Option<Option<ValueId>>,
) -> bool {
    let run = *guard.get_or_insert_with(|| runs_once(ctx, lp));
    let Some(run) = run else {
        return false;
    };
    // An inner guard on the same condition (the inner loop runs exactly
    // when this one does) needs no second guard.
    let same_guard = ctx.is(op, "scf.if") && ctx.operand(op, 0) == run;
    match super::constant(ctx, run).or(same_guard.then_some(1)) {
        // The loop surely runs: no guard needed. Surely not: leave it.
        Some(0) => return false,
        Some(_) => {
            let parent = ctx.op(lp).parent.unwrap();
            ctx.move_op(op, parent, Some(lp));
            return true;
        }
        None => {}
    }
    let results: Vec<ValueId> = ctx.results(op).to_vec();
    let types: Vec<Type> = results.iter().map(|&r| ctx.ty(r).clone()).collect();
    let mut b = Builder::before(ctx, lp);
    let new = dialects::scf::build_if(
        &mut b,
        run,
        &types,
        |b| {
            let (blk, _) = b.insertion_point();
            b.ctx.move_op(op, blk, None);
            results.clone()
        },
        |b| {
            types
                .iter()
                .map(|t| b.constant(dialects::vec::zero_attr(t), t))
                .collect()
        },
    );
    for (&old, &new) in results.iter().zip(new.iter()) {
        replace_uses_outside(ctx, old, new, op);
    }
    true
}

/// Replaces the uses of `old` by `new`, except those inside the guard that
/// now holds `op` (its own `scf.yield`).
fn replace_uses_outside(ctx: &mut Context, old: ValueId, new: ValueId, op: OpId) {
    if old == new {
        return;
    }
    let guard_block = ctx.op(op).parent;
    let uses = ctx.uses(old).to_vec();
    for u in uses {
        if ctx.op(u.op).parent != guard_block {
            ctx.set_operand(u.op, u.index as usize, new);
        }
    }
}
