//! `speculate`: speculative rewriting of loops (LMS, Rompf et al., "Optimizing
//! Data Structures in High-Level Programs", POPL'13, speculative rewriting;
//! Click and Cooper's optimistic combined analyses).
//!
//! For an `scf.for` with iter_args, assume optimistically that every
//! loop-carried value keeps its initial value. Clone the body with each
//! assumed iter_arg replaced by its initial value, through the smart
//! constructors (so every fold and rewrite applies under the assumption),
//! and look at what the clone yields: an iter_arg whose yield is its initial
//! value again keeps the assumption; the others lose it, and the clone is
//! redone with fewer assumptions until nothing changes (a fixpoint, at most
//! one round per iter_arg). The clone is only a test and is erased; then
//! the real loop is rewritten: each iter_arg that kept its assumption is
//! its initial value, inside the body and after the loop. This finds what
//! no pessimistic pass finds, e.g. a variable (after `mem2reg`) that a loop
//! reassigns only to the value it already holds.
//!
//! Sound by induction over the iterations: if every assumed value holds on
//! entry to an iteration, the body yields the same values, so they hold on
//! entry to the next, and after the loop (also when it runs zero times).
//! Nothing moves and nothing is evaluated that was not, so faults and
//! effects stay as they were. `scf.while` loops are handled the same way,
//! their loop-carried values being the `before` region's arguments: one
//! iteration is the `before` region, then the `after` region on the values
//! `scf.condition` forwards; a result whose forwarded value is defined
//! outside the loop is that value.

use ir::clone::{clone_block_into, ValueMap};
use ir::pass::{Pass, PassInfo, PassOptions, PassStats};
use ir::{Builder, Context, Diagnostic, OpId, ValueId};

/// The pass.
pub struct Speculate;

impl Pass for Speculate {
    fn name(&self) -> &'static str {
        "speculate"
    }
    fn run(&mut self, ctx: &mut Context, stats: &mut PassStats) -> Result<(), Diagnostic> {
        stats.add("invariant-iter-args", speculate(ctx));
        crate::lower::simplify(ctx, stats);
        Ok(())
    }
}

/// The loop-carried values of a loop: `(initial values, the arguments
/// that receive them each iteration)`; `scf.for`'s iter_args or
/// `scf.while`'s `before` arguments.
fn carried(ctx: &Context, op: OpId) -> (Vec<ValueId>, Vec<ValueId>) {
    let first = ctx.region_block(ctx.regions(op)[0]);
    if ctx.is(op, "scf.for") {
        (
            ctx.operands(op)[3..].to_vec(),
            ctx.block_args(first)[1..].to_vec(),
        )
    } else {
        (ctx.operands(op).to_vec(), ctx.block_args(first).to_vec())
    }
}

/// Which of `op`'s loop-carried values keep their initial value in every
/// iteration, under the assumption `assumed`: clones one iteration (the
/// body; for `scf.while` the `before` region, then the `after` region on
/// the forwarded values) before `op`, and erases the clone.
fn holds(ctx: &mut Context, op: OpId, assumed: &[bool]) -> Vec<bool> {
    let (inits, args) = carried(ctx, op);
    let regions = ctx.regions(op).to_vec();
    let mut map = ValueMap::default();
    for (k, &a) in args.iter().enumerate() {
        if assumed[k] {
            map.insert(a, inits[k]);
        }
    }
    let first_new = ctx.num_ops();
    let yields = {
        let mut b = Builder::before(ctx, op);
        let first = b.ctx.region_block(regions[0]);
        let out = clone_block_into(&mut b, first, &mut map);
        if regions.len() == 2 {
            // scf.while: `out` is (condition, forwarded...).
            let after = b.ctx.region_block(regions[1]);
            for (k, &a) in b.ctx.block_args(after).to_vec().iter().enumerate() {
                if let Some(&f) = out.get(k + 1) {
                    map.insert(a, f);
                }
            }
            clone_block_into(&mut b, after, &mut map)
        } else {
            out
        }
    };
    let out = (0..args.len())
        .map(|k| assumed[k] && yields.get(k) == Some(&inits[k]))
        .collect();
    // Erase the clone: the ops created here that sit in `op`'s block, last
    // first (users before their operands; nested ops go with their parents).
    let home = ctx.op(op).parent;
    for i in (first_new..ctx.num_ops()).rev() {
        let o = OpId(i as u32);
        if ctx.alive(o) && ctx.op(o).parent.is_some() && ctx.op(o).parent == home {
            ctx.erase_op(o);
        }
    }
    out
}

/// Rewrites every `scf.for` and `scf.while` whose loop-carried values
/// provably keep their initial values; returns how many were replaced.
pub fn speculate(ctx: &mut Context) -> u64 {
    let mut replaced = 0;
    let loops: Vec<OpId> = ctx
        .walk_all()
        .into_iter()
        .filter(|&o| ctx.is(o, "scf.for") || ctx.is(o, "scf.while"))
        .collect();
    for op in loops {
        if !ctx.alive(op) || ctx.op(op).parent.is_none() {
            continue;
        }
        let n = carried(ctx, op).0.len();
        if n == 0 {
            continue;
        }
        let mut assumed = vec![true; n];
        loop {
            let next = holds(ctx, op, &assumed);
            if next == assumed {
                break;
            }
            assumed = next;
            if !assumed.iter().any(|&a| a) {
                break;
            }
        }
        let (inits, args) = carried(ctx, op);
        let results = ctx.results(op).to_vec();
        for k in 0..n {
            if assumed[k] {
                ctx.replace_all_uses(args[k], inits[k]);
                if ctx.is(op, "scf.for") {
                    ctx.replace_all_uses(results[k], inits[k]);
                }
                replaced += 1;
            }
        }
        if ctx.is(op, "scf.while") {
            // A result, and an `after` argument, is the value
            // `scf.condition` forwards: one defined outside the loop is
            // that value.
            let before = ctx.region_block(ctx.regions(op)[0]);
            let after = ctx.region_block(ctx.regions(op)[1]);
            let after_args = ctx.block_args(after).to_vec();
            if let Some(cond) = ctx.terminator(before) {
                let fwd = ctx.operands(cond)[1..].to_vec();
                for (j, &f) in fwd.iter().enumerate() {
                    let outside = match ctx.def_op(f) {
                        Some(d) => !ctx.is_ancestor(op, d),
                        None => !ctx
                            .block_parent_op(ctx_block_of(ctx, f))
                            .is_some_and(|p| ctx.is_ancestor(op, p)),
                    };
                    if outside {
                        if let Some(&r) = results.get(j) {
                            ctx.replace_all_uses(r, f);
                        }
                        if let Some(&a) = after_args.get(j) {
                            ctx.replace_all_uses(a, f);
                        }
                    }
                }
            }
        }
    }
    replaced
}

/// The block whose argument `v` is.
fn ctx_block_of(ctx: &Context, v: ValueId) -> ir::BlockId {
    match ctx.value(v).def {
        ir::context::ValueDef::BlockArg(b, _) => b,
        ir::context::ValueDef::Result(op, _) => ctx.op(op).parent.expect("placed"),
    }
}

fn create(opts: &PassOptions) -> Result<Box<dyn Pass>, String> {
    opts.check_known("speculate", &[])?;
    Ok(Box::new(Speculate))
}

/// Registration record.
pub fn info() -> PassInfo {
    PassInfo {
        name: "speculate",
        description: "optimistically prove loop-carried values (scf.for iter_args) invariant by rewriting the body under that assumption",
        options: &[],
        create,
    }
}
