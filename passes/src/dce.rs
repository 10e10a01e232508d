//! `dce`: erases operations whose results are unused and that have no
//! effects (pure ops, and loops/conditionals whose bodies are pure), to a
//! fixpoint: erasing an op may make its operands' producers dead (LMS's DCE
//! by reachability from the effects and results).
//!
//! Effects are tracked per allocation (issue 13): an allocation (`arr.alloc`,
//! `var.new`) that is only ever written (`arr.store`, `var.set`) or freed,
//! never read, passed, yielded or returned, is dead with all its writes,
//! wherever they sit (loops, branches, parallel bodies). A write that would
//! have faulted (out of bounds) goes with it: a pass may turn a fault into a
//! result, never a result into a fault.

use ir::pass::{Pass, PassInfo, PassOptions, PassStats};
use ir::rewrite::is_trivially_dead;
use ir::{Context, Diagnostic, OpId};

/// The pass.
pub struct Dce;

impl Pass for Dce {
    fn name(&self) -> &'static str {
        "dce"
    }
    fn run(&mut self, ctx: &mut Context, stats: &mut PassStats) -> Result<(), Diagnostic> {
        stats.add("erased", dce(ctx));
        Ok(())
    }
}

/// Erases dead ops everywhere; returns how many were erased (nested ops of an
/// erased op are not counted).
pub fn dce(ctx: &mut Context) -> u64 {
    let mut erased = dead_ops(ctx);
    // `dead_ops` runs to its own fixpoint; only erased writes can make
    // more ops dead (the values they stored).
    loop {
        let w = write_only_allocations(ctx);
        if w == 0 {
            return erased;
        }
        erased += w + dead_ops(ctx);
    }
}

/// Erases each allocation whose every use is the buffer or variable operand
/// of a write (`arr.store`, `var.set`) or of `arr.free`, with those uses.
fn write_only_allocations(ctx: &mut Context) -> u64 {
    let mut erased = 0;
    for op in ctx.walk_all() {
        if !ctx.alive(op) || !(ctx.is(op, "arr.alloc") || ctx.is(op, "var.new")) {
            continue;
        }
        let r = ctx.result(op, 0);
        let write_only = ctx.uses(r).iter().all(|u| {
            u.index == 0
                && (ctx.is(u.op, "arr.store")
                    || ctx.is(u.op, "var.set")
                    || ctx.is(u.op, "arr.free"))
        });
        if !write_only {
            continue;
        }
        let users: Vec<OpId> = ctx.uses(r).iter().map(|u| u.op).collect();
        for u in users {
            ctx.erase_op(u);
            erased += 1;
        }
        ctx.erase_op(op);
        erased += 1;
    }
    erased
}

/// Erases the trivially dead ops, to a fixpoint.
fn dead_ops(ctx: &mut Context) -> u64 {
    let mut work: Vec<OpId> = ctx.walk_all();
    let mut erased = 0;
    // Visit uses before definitions: reverse pre-order handles straight-line
    // code in one sweep; the worklist catches the rest.
    while let Some(op) = work.pop() {
        if !ctx.alive(op) || ctx.op(op).parent.is_none() || !is_trivially_dead(ctx, op) {
            continue;
        }
        let operands = ctx.operands(op).to_vec();
        ctx.erase_op(op);
        erased += 1;
        for v in operands {
            if let Some(d) = ctx.def_op(v) {
                work.push(d);
            }
        }
    }
    erased
}

fn create(opts: &PassOptions) -> Result<Box<dyn Pass>, String> {
    opts.check_known("dce", &[])?;
    Ok(Box::new(Dce))
}

/// Registration record.
pub fn info() -> PassInfo {
    PassInfo {
        name: "dce",
        description: "erase unused operations without effects",
        options: &[],
        create,
    }
}
