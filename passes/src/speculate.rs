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
//! effects stay as they were. `scf.while` loops are left alone.

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

/// Which of `op`'s iter_args keep their initial value in every iteration,
/// under the assumption `assumed`: clones the body once before `op` and
/// erases the clone.
fn holds(ctx: &mut Context, op: OpId, assumed: &[bool]) -> Vec<bool> {
    let inits: Vec<ValueId> = ctx.operands(op)[3..].to_vec();
    let body = ctx.region_block(ctx.regions(op)[0]);
    let args: Vec<ValueId> = ctx.block_args(body)[1..].to_vec();
    let mut map = ValueMap::default();
    for (k, &a) in args.iter().enumerate() {
        if assumed[k] {
            map.insert(a, inits[k]);
        }
    }
    let first_new = ctx.num_ops();
    let yields = {
        let mut b = Builder::before(ctx, op);
        clone_block_into(&mut b, body, &mut map)
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

/// Rewrites every `scf.for` whose iter_args provably keep their initial
/// values; returns how many iter_args were replaced.
pub fn speculate(ctx: &mut Context) -> u64 {
    let mut replaced = 0;
    let loops: Vec<OpId> = ctx
        .walk_all()
        .into_iter()
        .filter(|&o| ctx.is(o, "scf.for"))
        .collect();
    for op in loops {
        if !ctx.alive(op) || ctx.op(op).parent.is_none() {
            continue;
        }
        let n = ctx.results(op).len();
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
        let inits: Vec<ValueId> = ctx.operands(op)[3..].to_vec();
        let body = ctx.region_block(ctx.regions(op)[0]);
        let args: Vec<ValueId> = ctx.block_args(body)[1..].to_vec();
        let results = ctx.results(op).to_vec();
        for k in 0..n {
            if assumed[k] {
                ctx.replace_all_uses(args[k], inits[k]);
                ctx.replace_all_uses(results[k], inits[k]);
                replaced += 1;
            }
        }
    }
    replaced
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
