//! `dce`: erases operations whose results are unused and that have no
//! effects (pure ops, and loops/conditionals whose bodies are pure), to a
//! fixpoint: erasing an op may make its operands' producers dead (LMS's DCE
//! by reachability from the effects and results).

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
