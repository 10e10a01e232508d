//! `canonicalize`: applies every op's folds and canonicalization rewrites to
//! a fixpoint with the greedy driver, erasing dead pure ops on the way
//! (MLIR's canonicalizer). The same rewrites run at construction time in the
//! smart builder. Regions of several blocks are then simplified
//! ([`crate::cfg`]).

use ir::builder::seed_gvn;
use ir::pass::{Pass, PassInfo, PassOptions, PassStats};
use ir::rewrite::{apply_greedily, GreedyConfig, Patterns};
use ir::{Context, Diagnostic, OpId, Traits};

/// The pass.
pub struct Canonicalize {
    pub config: GreedyConfig,
}

impl Pass for Canonicalize {
    fn name(&self) -> &'static str {
        "canonicalize"
    }
    fn handles_cfg(&self) -> bool {
        true
    }
    fn run(&mut self, ctx: &mut Context, stats: &mut PassStats) -> Result<(), Diagnostic> {
        canonicalize(ctx, self.config, stats);
        stats.add("constants-merged", hoist_constants(ctx));
        Ok(())
    }
}

/// Runs the canonicalizer on the whole module; constants that folds produce
/// are shared with existing ones (hash-consed).
pub fn canonicalize(ctx: &mut Context, config: GreedyConfig, stats: &mut PassStats) {
    seed_gvn(ctx, |c, op| c.has_traits(op, Traits::CONSTANT_LIKE));
    let mut s = apply_greedily(ctx, Patterns::Canonical, config);
    // Branches folded to constants leave blocks to erase and merge, which
    // may leave ops to fold.
    for _ in 0..8 {
        if ctx.first_cfg_op().is_some() {
            // As MLIR's folder does, constants go to the entry block first,
            // so that a block left holding a constant and a branch becomes
            // a pass-through block.
            let merged = hoist_constants(ctx);
            stats.add("constants-merged", merged);
            if merged > 0 {
                ir::builder::clear_gvn(ctx);
                seed_gvn(ctx, |c, op| c.has_traits(op, Traits::CONSTANT_LIKE));
            }
        }
        let n = crate::cfg::simplify_regions(ctx);
        stats.add("blocks-simplified", n);
        if n == 0 {
            break;
        }
        let again = apply_greedily(ctx, Patterns::Canonical, config);
        s.folded += again.folded;
        s.rewritten += again.rewritten;
        s.erased += again.erased;
        s.converged = again.converged;
    }
    ir::builder::clear_gvn(ctx);
    stats.add("folded", s.folded);
    stats.add("rewritten", s.rewritten);
    stats.add("erased", s.erased);
    stats.add("not-converged", (!s.converged) as u64);
}

/// MLIR's constant placement: every `arith.constant` of a function moves to
/// the start of the function's entry block (in the order they first appear),
/// and constants of equal value and type become one. Returns how many were
/// merged away. Constants are pure, so moving them changes nothing but the
/// order of the text; a function's body may read any value defined above.
pub fn hoist_constants(ctx: &mut Context) -> u64 {
    let funcs: Vec<OpId> = ctx
        .walk_all()
        .into_iter()
        .filter(|&op| ctx.is(op, "func.func") && !ctx.regions(op).is_empty())
        .collect();
    let mut merged = 0;
    for f in funcs {
        let entry = ctx.region_block(ctx.regions(f)[0]);
        // The function's constants, not those of functions nested in it.
        let consts: Vec<OpId> = ctx
            .walk_nested(f)
            .into_iter()
            .filter(|&op| {
                ctx.is(op, "arith.constant")
                    && ctx.results(op).len() == 1
                    && ctx.op(op).attrs.len() == 1
                    && nearest_func(ctx, op) == Some(f)
            })
            .collect();
        // Constants go before `first`, the first op of the entry block that
        // is not a constant already in place.
        let mut first = ctx.iter_block(entry).next();
        let mut kept: Vec<(OpId, ir::Attribute, ir::Type)> = Vec::new();
        for op in consts {
            let Some(value) = ctx.attr(op, "value").cloned() else {
                continue;
            };
            let r = ctx.result(op, 0);
            let ty = ctx.ty(r).clone();
            if first == Some(op) {
                first = ctx.op(op).next;
            }
            if let Some(&(k, _, _)) = kept.iter().find(|(_, v, t)| *v == value && *t == ty) {
                let to = ctx.result(k, 0);
                ctx.replace_all_uses(r, to);
                ctx.erase_op(op);
                merged += 1;
                continue;
            }
            if ctx.op(op).parent != Some(entry) || ctx.op(op).next != first {
                ctx.move_op(op, entry, first);
            }
            kept.push((op, value, ty));
        }
    }
    merged
}

/// The innermost `func.func` around `op`.
fn nearest_func(ctx: &Context, op: OpId) -> Option<OpId> {
    let mut p = ctx.parent_op(op);
    while let Some(q) = p {
        if ctx.is(q, "func.func") {
            return Some(q);
        }
        p = ctx.parent_op(q);
    }
    None
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
