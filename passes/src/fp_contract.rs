//! `fp-contract`: marks every float `addf`, `subf`, `mulf`, `divf`,
//! `remf` and `negf` of the module with the fast-math flag `contract`
//! ([`ir::FastMath`]), which allows the native backends and PTX to compute
//! a marked multiply feeding a marked add or subtract as one fused
//! multiply-add (`codegen::contract`). It is what `l0-opt
//! --fp-contract=fast` runs before the pipeline and again before code
//! generation (so ops that lowering creates are marked too); clang's
//! `-ffp-contract=fast` is the model. Without it L0 never contracts, and
//! every operation is rounded as the interpreter rounds it.

use ir::pass::{Pass, PassInfo, PassOptions, PassStats};
use ir::{Context, Diagnostic, FastMath};

/// The pass.
pub struct FpContract;

/// The ops that take the mark.
const MARKED: [&str; 6] = [
    "arith.addf",
    "arith.subf",
    "arith.mulf",
    "arith.divf",
    "arith.remf",
    "arith.negf",
];

/// Marks the float ops of the module with `contract`; returns how many
/// gained the flag.
pub fn mark(ctx: &mut Context) -> usize {
    let mut n = 0;
    for op in ctx.walk_all() {
        if !MARKED.contains(&ctx.op_name(op)) {
            continue;
        }
        let float = ctx
            .results(op)
            .first()
            .is_some_and(|&r| ctx.ty(r).is_float());
        if float && !FastMath::of(ctx, op).contains(FastMath::CONTRACT) {
            FastMath::add_to(ctx, op, FastMath::CONTRACT);
            n += 1;
        }
    }
    n
}

impl Pass for FpContract {
    fn name(&self) -> &'static str {
        "fp-contract"
    }
    fn run(&mut self, ctx: &mut Context, stats: &mut PassStats) -> Result<(), Diagnostic> {
        stats.add("marked", mark(ctx) as u64);
        Ok(())
    }
}

fn create(opts: &PassOptions) -> Result<Box<dyn Pass>, String> {
    opts.check_known("fp-contract", &[])?;
    Ok(Box::new(FpContract))
}

/// Registration record.
pub fn info() -> PassInfo {
    PassInfo {
        name: "fp-contract",
        description: "mark float add/sub/mul/div/rem/neg ops with fastmath<contract> (fused multiply-add allowed)",
        options: &[],
        create,
    }
}
