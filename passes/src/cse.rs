//! `cse`: dominance-based common-subexpression elimination. Blocks are
//! walked in order with a scoped table: an op in a nested region sees the
//! ops of every enclosing block before it, never those of sibling regions,
//! and nothing crosses an isolated-from-above op. Commutative operands are
//! normalized. Pure ops are merged freely; ops that only read memory are
//! merged only when no op with a write (or unknown) effect ran in between,
//! and a read inside the regions of an op that writes (a loop body whose
//! later writes run before the next iteration's reads) is never merged with
//! a read from outside.

use rustc_hash::FxHashMap;

use ir::builder::GvnKey;
use ir::pass::{Pass, PassInfo, PassOptions, PassStats};
use ir::{BlockId, Context, Diagnostic, OpState, Traits};

/// The pass.
pub struct Cse;

impl Pass for Cse {
    fn name(&self) -> &'static str {
        "cse"
    }
    fn run(&mut self, ctx: &mut Context, stats: &mut PassStats) -> Result<(), Diagnostic> {
        stats.add("eliminated", cse(ctx));
        Ok(())
    }
}

struct Scopes {
    pure: Vec<FxHashMap<GvnKey, ir::OpId>>,
    reads: Vec<FxHashMap<GvnKey, ir::OpId>>,
    eliminated: u64,
}

/// Runs CSE on the whole module and returns the number of ops removed.
pub fn cse(ctx: &mut Context) -> u64 {
    let mut s = Scopes {
        pure: Vec::new(),
        reads: Vec::new(),
        eliminated: 0,
    };
    let top = ctx.top;
    walk_block(ctx, top, &mut s);
    s.eliminated
}

fn has_write_effects(ctx: &Context, op: ir::OpId) -> bool {
    let t = ctx.spec(op).traits;
    if t.contains(Traits::PURE) || t.contains(Traits::TERMINATOR) {
        return false;
    }
    if t.contains(Traits::READS) && !t.intersects(Traits::WRITES | Traits::ALLOCATES) {
        return false;
    }
    if t.contains(Traits::RECURSIVELY_PURE) {
        return ctx
            .walk_nested(op)
            .into_iter()
            .any(|o| has_write_effects(ctx, o));
    }
    true
}

fn walk_block(ctx: &mut Context, b: BlockId, s: &mut Scopes) {
    s.pure.push(FxHashMap::default());
    s.reads.push(FxHashMap::default());
    let mut cur = ctx.block(b).first;
    while let Some(op) = cur {
        cur = ctx.op(op).next;
        let spec = ctx.spec(op);
        let traits = spec.traits;
        let regions = ctx.regions(op).to_vec();
        if !regions.is_empty() {
            let isolated = traits.contains(Traits::ISOLATED_FROM_ABOVE);
            let writes = has_write_effects(ctx, op);
            let saved = if isolated {
                Some((std::mem::take(&mut s.pure), std::mem::take(&mut s.reads)))
            } else {
                None
            };
            // A region whose op writes memory sees no read from outside: in a
            // loop, a write later in the body runs before the read of the next
            // iteration.
            let saved_reads = (writes && !isolated).then(|| std::mem::take(&mut s.reads));
            for r in regions {
                for blk in ctx.region(r).blocks.clone() {
                    walk_block(ctx, blk, s);
                }
            }
            if let Some(r) = saved_reads {
                s.reads = r;
            }
            if let Some((p, r)) = saved {
                s.pure = p;
                s.reads = r;
            }
            if has_write_effects(ctx, op) {
                s.reads.iter_mut().for_each(|m| m.clear());
            }
            continue;
        }
        let is_read = traits.contains(Traits::READS)
            && !traits.intersects(Traits::WRITES | Traits::ALLOCATES);
        if !(traits.contains(Traits::PURE) || is_read) || ctx.results(op).is_empty() {
            if has_write_effects(ctx, op) {
                s.reads.iter_mut().for_each(|m| m.clear());
            }
            continue;
        }
        let key = GvnKey::of(ctx, &OpState::of(ctx, op));
        let table = if is_read { &mut s.reads } else { &mut s.pure };
        let found = table.iter().rev().find_map(|m| m.get(&key).copied());
        match found {
            Some(prev) => {
                let new: smallvec::SmallVec<[ir::ValueId; 2]> =
                    smallvec::SmallVec::from_slice(ctx.results(prev));
                ctx.replace_op(op, &new);
                s.eliminated += 1;
            }
            None => {
                table.last_mut().unwrap().insert(key, op);
            }
        }
    }
    s.pure.pop();
    s.reads.pop();
}

fn create(opts: &PassOptions) -> Result<Box<dyn Pass>, String> {
    opts.check_known("cse", &[])?;
    Ok(Box::new(Cse))
}

/// Registration record.
pub fn info() -> PassInfo {
    PassInfo {
        name: "cse",
        description: "eliminate common subexpressions (dominance-based, never across effects)",
        options: &[],
        create,
    }
}
