//! The greedy rewrite driver (MLIR's `applyPatternsGreedily`): a worklist of
//! ops; each op is erased if trivially dead, else folded, else offered to its
//! rewrite patterns. Changed ops' users and operands' producers go back on
//! the worklist. An iteration cap bounds the work; not converging is not an
//! error.

use std::collections::VecDeque;

use smallvec::SmallVec;

use crate::builder::Builder;
use crate::context::{Context, OpId, ValueId};
use crate::spec::{FoldFn, OpState, RewriteFn, Traits};

/// Which patterns the driver applies.
#[derive(Clone, Copy, Debug)]
pub enum Patterns<'p> {
    /// Each op's fold and canonicalization rewrites.
    Canonical,
    /// The delayed rewrites (lowerings) registered for this phase.
    Phase(&'p str),
}

/// Driver settings.
#[derive(Clone, Copy, Debug)]
pub struct GreedyConfig {
    /// Cap on worklist pops, as a multiple of the initial number of ops.
    pub max_iterations: usize,
    /// Erase unused pure ops.
    pub remove_dead: bool,
}

impl Default for GreedyConfig {
    fn default() -> Self {
        GreedyConfig {
            max_iterations: 10,
            remove_dead: true,
        }
    }
}

/// What the driver did.
#[derive(Clone, Copy, Debug, Default)]
pub struct GreedyStats {
    pub folded: u64,
    pub rewritten: u64,
    pub erased: u64,
    /// False when the iteration cap stopped the driver.
    pub converged: bool,
}

impl GreedyStats {
    /// Whether anything changed.
    pub fn changed(&self) -> bool {
        self.folded + self.rewritten + self.erased > 0
    }
}

/// Whether `op` has no effects and can be removed when its results are unused.
pub fn is_trivially_dead(ctx: &Context, op: OpId) -> bool {
    let t = ctx.spec(op).traits;
    if t.intersects(Traits::TERMINATOR | Traits::SYMBOL) {
        return false;
    }
    if !ctx.results(op).iter().all(|&r| ctx.unused(r)) {
        return false;
    }
    t.contains(Traits::DEAD_IF_UNUSED) || is_side_effect_free(ctx, op)
}

/// Whether `op` (and, for recursively pure ops, everything nested) is pure.
pub fn is_side_effect_free(ctx: &Context, op: OpId) -> bool {
    let t = ctx.spec(op).traits;
    if t.contains(Traits::PURE) {
        return true;
    }
    if t.contains(Traits::RECURSIVELY_PURE) {
        return ctx.walk_nested(op).into_iter().all(|o| {
            let tt = ctx.spec(o).traits;
            tt.intersects(Traits::PURE | Traits::RECURSIVELY_PURE | Traits::TERMINATOR)
                && !tt.intersects(Traits::READS | Traits::WRITES | Traits::ALLOCATES)
        });
    }
    false
}

/// The fold the canonicalizer applies to ops of `spec`: none for
/// constant-like ops (a constant folds to itself).
pub fn canonical_fold(spec: &crate::spec::OpSpec) -> Option<FoldFn> {
    spec.fold
        .filter(|_| !spec.traits.contains(Traits::CONSTANT_LIKE))
}

/// Applies `fold` to `op` (whose state is `st`): the values that replace
/// its results (constants materialized before `op`), or `None` where it
/// does not fold or folds to its own results. `op` is left in place.
pub fn apply_fold(
    ctx: &mut Context,
    op: OpId,
    st: &OpState,
    fold: FoldFn,
) -> Option<SmallVec<[ValueId; 2]>> {
    let res = fold(ctx, st)?;
    let own = ctx.results(op);
    let is_self = res
        .iter()
        .zip(own)
        .all(|(r, &o)| *r == crate::spec::FoldResult::Value(o));
    if is_self {
        return None;
    }
    Builder::before(ctx, op).materialize_fold(st, &res)
}

struct Worklist {
    queue: VecDeque<OpId>,
    queued: Vec<bool>,
}

impl Worklist {
    fn push(&mut self, op: OpId) {
        let i = op.index();
        if i >= self.queued.len() {
            self.queued.resize(i + 1, false);
        }
        if !self.queued[i] {
            self.queued[i] = true;
            self.queue.push_back(op);
        }
    }
    fn pop(&mut self) -> Option<OpId> {
        let op = self.queue.pop_front()?;
        self.queued[op.index()] = false;
        Some(op)
    }
}

fn push_users_and_producers(
    ctx: &Context,
    wl: &mut Worklist,
    vals: &[ValueId],
    operands: &[ValueId],
) {
    for &v in vals {
        if let Some(d) = ctx.def_op(v) {
            wl.push(d);
        }
        for u in ctx.uses(v) {
            wl.push(u.op);
        }
    }
    for &v in operands {
        if let Some(d) = ctx.def_op(v) {
            wl.push(d);
        }
    }
}

/// Applies `patterns` to every op of the module until nothing changes or the
/// cap is reached.
pub fn apply_greedily(ctx: &mut Context, patterns: Patterns, cfg: GreedyConfig) -> GreedyStats {
    let ops = ctx.walk_all();
    apply_greedily_to(ctx, ops, patterns, cfg)
}

/// Like [`apply_greedily`], starting from `ops` only (new work is still added).
pub fn apply_greedily_to(
    ctx: &mut Context,
    ops: Vec<OpId>,
    patterns: Patterns,
    cfg: GreedyConfig,
) -> GreedyStats {
    let mut stats = GreedyStats::default();
    let mut wl = Worklist {
        queue: VecDeque::with_capacity(ops.len()),
        queued: vec![false; ctx.num_ops()],
    };
    let cap = (ops.len().max(16)) * cfg.max_iterations.max(1);
    for op in ops {
        wl.push(op);
    }
    let registry = ctx.registry().clone();
    let mut pops = 0usize;
    while let Some(op) = wl.pop() {
        pops += 1;
        if pops > cap {
            return stats;
        }
        if !ctx.alive(op) {
            continue;
        }
        if cfg.remove_dead && ctx.op(op).parent.is_some() && is_trivially_dead(ctx, op) {
            let operands: SmallVec<[ValueId; 4]> = SmallVec::from_slice(ctx.operands(op));
            ctx.erase_op(op);
            stats.erased += 1;
            push_users_and_producers(ctx, &mut wl, &[], &operands);
            continue;
        }
        if ctx.op(op).parent.is_none() {
            continue;
        }
        let spec = registry.spec(ctx.op(op).kind);
        let (fold, rewrites): (_, SmallVec<[RewriteFn; 4]>) = match patterns {
            Patterns::Canonical => (
                canonical_fold(spec),
                spec.rewrites.iter().copied().collect(),
            ),
            Patterns::Phase(p) => (
                None,
                spec.lowerings
                    .iter()
                    .filter(|(ph, _)| *ph == p)
                    .map(|(_, f)| *f)
                    .collect(),
            ),
        };
        if fold.is_none() && rewrites.is_empty() {
            continue;
        }
        let st = OpState::of(ctx, op);
        let mut replacement = None;
        // Ops are numbered in creation order: those from here on are new.
        let first_new = ctx.num_ops();
        if let Some(fold) = fold {
            replacement = apply_fold(ctx, op, &st, fold);
            if replacement.is_some() {
                stats.folded += 1;
            }
        }
        if replacement.is_none() {
            for rw in rewrites {
                let mut b = Builder::before(ctx, op);
                if let Some(vals) = rw(&mut b, &st) {
                    replacement = Some(vals);
                    stats.rewritten += 1;
                    break;
                }
            }
        }
        if let Some(vals) = replacement {
            let operands: SmallVec<[ValueId; 4]> = SmallVec::from_slice(ctx.operands(op));
            if ctx.alive(op) {
                ctx.replace_op(op, &vals);
            }
            push_users_and_producers(ctx, &mut wl, &vals, &operands);
            // Every op the rewrite created (also those nested in new
            // regions, e.g. a lowering's loop body) gets its turn, as in
            // MLIR's greedy driver.
            for i in first_new..ctx.num_ops() {
                let o = OpId(i as u32);
                if ctx.alive(o) {
                    wl.push(o);
                }
            }
            // New ops built before `op` may themselves simplify further.
            for &v in &vals {
                if let Some(d) = ctx.def_op(v) {
                    for &o in ctx.operands(d) {
                        if let Some(dd) = ctx.def_op(o) {
                            wl.push(dd);
                        }
                    }
                }
            }
        }
    }
    stats.converged = true;
    stats
}
