//! `canonicalize`: applies every op's folds and canonicalization rewrites to
//! a fixpoint with the greedy driver, erasing dead pure ops on the way
//! (MLIR's canonicalizer). The same rewrites run at construction time in the
//! smart builder.

use ir::builder::seed_gvn;
use ir::pass::{Pass, PassInfo, PassOptions, PassStats};
use ir::rewrite::{apply_greedily, GreedyConfig, Patterns};
use ir::{Context, Diagnostic, Traits};

/// The pass.
pub struct Canonicalize {
    pub config: GreedyConfig,
}

impl Pass for Canonicalize {
    fn name(&self) -> &'static str {
        "canonicalize"
    }
    fn run(&mut self, ctx: &mut Context, stats: &mut PassStats) -> Result<(), Diagnostic> {
        canonicalize(ctx, self.config, stats);
        Ok(())
    }
}

/// Runs the canonicalizer on the whole module; constants that folds produce
/// are shared with existing ones (hash-consed).
pub fn canonicalize(ctx: &mut Context, config: GreedyConfig, stats: &mut PassStats) {
    seed_gvn(ctx, |c, op| c.has_traits(op, Traits::CONSTANT_LIKE));
    let s = apply_greedily(ctx, Patterns::Canonical, config);
    ir::builder::clear_gvn(ctx);
    stats.add("folded", s.folded);
    stats.add("rewritten", s.rewritten);
    stats.add("erased", s.erased);
    stats.add("not-converged", (!s.converged) as u64);
}

fn create(opts: &PassOptions) -> Result<Box<dyn Pass>, String> {
    opts.check_known("canonicalize", &["max-iterations", "remove-dead"])?;
    Ok(Box::new(Canonicalize {
        config: GreedyConfig {
            max_iterations: opts.get_usize("max-iterations", 10)?,
            remove_dead: opts.get_bool("remove-dead", true)?,
        },
    }))
}

/// Registration record.
pub fn info() -> PassInfo {
    PassInfo {
        name: "canonicalize",
        description: "fold constants and apply canonicalization rewrites to a fixpoint",
        options: &[
            (
                "max-iterations",
                "worklist cap as a multiple of the op count (default 10)",
            ),
            ("remove-dead", "erase unused pure ops (default true)"),
        ],
        create,
    }
}
