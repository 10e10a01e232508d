//! Fusion of sibling sequential loops (issue 42, item 9: siblings of one
//! size share a loop): two `scf.for`s over the same bounds, one after the
//! other in a block, become one loop that carries both loops' values. The
//! chunk loops of two user-defined reduces over one vector
//! (`dialects::vec_combine`) each fold the chunk in a loop of their own;
//! fused, each element is read once for both. This is classic loop fusion
//! (Allen and Kennedy, "Optimizing Compilers for Modern Architectures",
//! section 8.6) restricted to loops that need no dependence test:
//!
//! - the same lower bound, upper bound and step (a positive constant);
//! - neither body can fault or write memory: speculatable ops, reads
//!   proved in bounds (`{in_bounds}`), `scf.if`, and inner `scf.for`s of
//!   the same kind, so no fault and no store changes order;
//! - the second loop uses nothing the first computes, nor anything defined
//!   between them;
//! - neither loop carries an attribute (a marked loop keeps its identity).
//!
//! Each carried value still sees its own loop's values in the same order,
//! so every result is exactly the original's.

use ir::clone::{clone_block_into, ValueMap};
use ir::{Builder, Context, OpId};

/// Fuses every such pair, repeatedly; returns how many loops went.
pub fn fuse_sibling_fors(ctx: &mut Context) -> u64 {
    let mut fused = 0;
    loop {
        let mut changed = false;
        for a in ctx.walk_all() {
            if !ctx.alive(a) || !ctx.is(a, "scf.for") {
                continue;
            }
            if let Some(b) = sibling(ctx, a) {
                merge(ctx, a, b);
                fused += 1;
                changed = true;
            }
        }
        if !changed {
            return fused;
        }
    }
}

/// The next `scf.for` after `a` in its block that [`merge`] may fuse
/// with it. Ops between stay where they are, after the fused loop, so the
/// second loop's work moves before them. It has no effect and no fault, so
/// that is unobservable, unless an op between writes memory that it reads
/// (`arr.load`): then only ops that cannot write may stand between.
fn sibling(ctx: &Context, a: OpId) -> Option<OpId> {
    if !plain(ctx, a) || !quiet(ctx, a) || !positive_step(ctx, a) {
        return None;
    }
    let mut between = Vec::new();
    let mut cur = ctx.op(a).next;
    while let Some(o) = cur {
        if ctx.is(o, "scf.for") {
            let same = (0..3).all(|k| ctx.operand(o, k) == ctx.operand(a, k));
            let loads = ctx
                .walk_nested(o)
                .into_iter()
                .any(|x| ctx.is(x, "arr.load"));
            let writes = between
                .iter()
                .any(|&x| !crate::code_motion::speculatable(ctx, x));
            let ok = same
                && plain(ctx, o)
                && quiet(ctx, o)
                && independent(ctx, o, a, &between)
                && !(loads && writes);
            return ok.then_some(o);
        }
        if ctx.has_traits(o, ir::spec::Traits::TERMINATOR) || !ctx.regions(o).is_empty() {
            return None;
        }
        between.push(o);
        cur = ctx.op(o).next;
    }
    None
}

/// Whether loop `l` carries no attribute (a marked loop, such as a
/// sequential fold's `l0.left_fold`, keeps its identity).
fn plain(ctx: &Context, l: OpId) -> bool {
    ctx.op(l).attrs.is_empty()
}

fn positive_step(ctx: &Context, l: OpId) -> bool {
    ctx.try_operand(l, 2)
        .and_then(|s| crate::code_motion::constant(ctx, s))
        .is_some_and(|s| s > 0)
}

/// Whether loop `l` and everything in it can neither fault nor write
/// memory (nor call, emit or branch): see the module doc.
fn quiet(ctx: &Context, l: OpId) -> bool {
    ctx.walk_nested(l)
        .into_iter()
        .all(|o| match ctx.op_name(o) {
            "scf.yield" | "scf.if" => true,
            "scf.for" => positive_step(ctx, o),
            "vec.get" | "mat.get" | "arr.load" => ctx.attr(o, "in_bounds").is_some(),
            _ => crate::code_motion::speculatable(ctx, o),
        })
}

/// Whether loop `b` (after `a`) uses no result of `a` and no value defined
/// by an op of `between`, in its operands or anywhere inside it.
fn independent(ctx: &Context, b: OpId, a: OpId, between: &[OpId]) -> bool {
    std::iter::once(b).chain(ctx.walk_nested(b)).all(|o| {
        ctx.operands(o).iter().all(|&v| match ctx.def_op(v) {
            Some(d) => d != a && !between.contains(&d),
            None => true,
        })
    })
}

/// Replaces loops `a` and `b` (same bounds) by one loop at `a`'s place
/// that carries `a`'s values, then `b`'s, with `a`'s body then `b`'s.
fn merge(ctx: &mut Context, a: OpId, b: OpId) {
    let (lb, ub, step) = (ctx.operand(a, 0), ctx.operand(a, 1), ctx.operand(a, 2));
    let inits_a: Vec<_> = ctx.operands(a)[3..].to_vec();
    let inits_b: Vec<_> = ctx.operands(b)[3..].to_vec();
    let na = inits_a.len();
    let (body_a, body_b) = (ctx.op_block(a, 0), ctx.op_block(b, 0));
    let mut inits = inits_a.clone();
    inits.extend(&inits_b);
    let mut builder = Builder::before(ctx, a);
    builder.smart = false;
    let results = dialects::scf::build_for(&mut builder, lb, ub, step, &inits, |bb, iv, accs| {
        let mut out = Vec::new();
        for (body, accs) in [(body_a, &accs[..na]), (body_b, &accs[na..])] {
            let args = bb.ctx.block_args(body).to_vec();
            let mut map = ValueMap::default();
            map.insert(args[0], iv);
            for (&old, &new) in args[1..].iter().zip(accs) {
                map.insert(old, new);
            }
            out.extend(clone_block_into(bb, body, &mut map));
        }
        out
    });
    let old: Vec<_> = ctx
        .results(a)
        .iter()
        .chain(ctx.results(b))
        .copied()
        .collect();
    for (o, n) in old.into_iter().zip(results.iter().copied()) {
        ctx.copy_name(o, n);
        ctx.replace_all_uses(o, n);
    }
    ctx.erase_op(b);
    ctx.erase_op(a);
}
