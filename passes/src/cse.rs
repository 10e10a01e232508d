//! `cse`: dominance-based common-subexpression elimination. Blocks are
//! walked in order with a scoped table: an op in a nested region sees the
//! ops of every enclosing block before it, never those of sibling regions,
//! and nothing crosses an isolated-from-above op. The blocks of a region
//! of several blocks are walked along its dominator tree, so an op also
//! sees the pure ops of the blocks that dominate its own (MLIR's CSE). Commutative operands are
//! normalized. Pure ops are merged freely. Reads of memory (`arr.load`,
//! `arr.len`, `var.get`) are tracked per allocation (IR-SPEC §3): a read is
//! merged with an earlier identical read, or forwarded from an earlier
//! `arr.store`/`var.set` of the same element, only when no write that may
//! touch the same allocation ran in between. Whether two buffers may be
//! the same allocation is [`crate::alias::Aliases`]' points-to question
//! (through selects, branch results and carried values); an op that may
//! write memory it does not name (a call, a kernel launch) forgets every
//! read. A read inside the regions of
//! an op that writes (a loop body whose later writes run before the next
//! iteration's reads) is never merged with a read from outside.

use std::hash::{Hash, Hasher};

use hashbrown::HashTable;
use rustc_hash::{FxHashMap, FxHasher};
use smallvec::SmallVec;

use crate::alias::{Aliases, Effects};
use dialects::arith::constant_int;
use ir::builder::GvnKey;
use ir::pass::{Pass, PassInfo, PassOptions, PassStats};
use ir::{BlockId, Context, Diagnostic, OpState, RegionId, Traits, ValueId};

/// The pass.
pub struct Cse;

impl Pass for Cse {
    fn name(&self) -> &'static str {
        "cse"
    }
    fn handles_cfg(&self) -> bool {
        true
    }
    fn run(&mut self, ctx: &mut Context, stats: &mut PassStats) -> Result<(), Diagnostic> {
        stats.add("eliminated", cse(ctx));
        Ok(())
    }
}

/// A known read: the values that stand for its results, and the
/// allocation it reads.
#[derive(Clone)]
struct Known {
    values: SmallVec<[ValueId; 2]>,
    alloc: ValueId,
}

struct Scopes {
    aliases: Aliases,
    /// The pure ops seen, per enclosing block: a table of op ids hashed and
    /// compared through the ops themselves ([`pure_hash`], [`pure_eq`]), so
    /// an entry costs 4 bytes instead of a copy of the op's key.
    pure: Vec<HashTable<ir::OpId>>,
    reads: Vec<FxHashMap<GvnKey, Known>>,
    eliminated: u64,
}

impl Scopes {
    /// Forgets the reads that a write to `written` may change (`None`: a
    /// write to unknown memory, which forgets every read).
    fn invalidate(&mut self, written: Option<&[ValueId]>) {
        match written {
            None => self.reads.iter_mut().for_each(|m| m.clear()),
            Some(ws) => {
                let aliases = &self.aliases;
                for m in self.reads.iter_mut() {
                    m.retain(|_, k| !ws.iter().any(|&w| aliases.may_alias(k.alloc, w)));
                }
            }
        }
    }
}

/// The allocations `op` (and everything nested in it) may write, or `None`
/// when it may write memory it does not name.
fn written(ctx: &Context, op: ir::OpId) -> Option<Vec<ValueId>> {
    let e = Effects::of(ctx, op);
    (!e.unknown_write).then_some(e.writes)
}

/// The allocation a read-only op reads (its first operand), for the ops
/// whose reads are known.
fn read_alloc(ctx: &Context, op: ir::OpId) -> Option<ValueId> {
    match ctx.op_name(op) {
        "arr.load" | "arr.len" | "var.get" => Some(ctx.operand(op, 0)),
        _ => None,
    }
}

/// Runs CSE on the whole module and returns the number of ops removed.
pub fn cse(ctx: &mut Context) -> u64 {
    let mut s = Scopes {
        aliases: Aliases::compute(ctx),
        pure: Vec::new(),
        reads: Vec::new(),
        eliminated: 0,
    };
    let top = ctx.top;
    walk_block(ctx, top, &mut s);
    s.eliminated
}

fn has_write_effects(ctx: &Context, op: ir::OpId) -> bool {
    let e = Effects::of(ctx, op);
    e.unknown_write || !e.writes.is_empty()
}

/// The hash of a pure op: kind, operands (sorted for commutative ops),
/// attributes and result types, as [`GvnKey`] hashes them.
fn pure_hash(ctx: &Context, op: ir::OpId) -> u64 {
    let mut h = FxHasher::default();
    let d = ctx.op(op);
    d.kind.hash(&mut h);
    if ctx.spec(op).traits.contains(Traits::COMMUTATIVE) {
        let mut ops: SmallVec<[ValueId; 4]> = SmallVec::from_slice(&d.operands);
        ops.sort();
        ops.hash(&mut h);
    } else {
        d.operands.hash(&mut h);
    }
    for (k, a) in &d.attrs {
        k.hash(&mut h);
        a.hash(&mut h);
    }
    for &r in &d.results {
        ctx.ty(r).hash(&mut h);
    }
    h.finish()
}

/// Whether pure ops `a` and `b` are equal up to the order of a commutative
/// op's operands (the same relation as equal [`GvnKey`]s).
fn pure_eq(ctx: &Context, a: ir::OpId, b: ir::OpId) -> bool {
    let (da, db) = (ctx.op(a), ctx.op(b));
    if da.kind != db.kind
        || da.operands.len() != db.operands.len()
        || da.results.len() != db.results.len()
        || da.attrs != db.attrs
    {
        return false;
    }
    let same_operands = if da.operands.values() == db.operands.values() {
        true
    } else if ctx.spec(a).traits.contains(Traits::COMMUTATIVE) {
        let mut x: SmallVec<[ValueId; 4]> = SmallVec::from_slice(&da.operands);
        let mut y: SmallVec<[ValueId; 4]> = SmallVec::from_slice(&db.operands);
        x.sort();
        y.sort();
        x == y
    } else {
        false
    };
    same_operands
        && da
            .results
            .iter()
            .zip(&db.results)
            .all(|(&x, &y)| ctx.ty(x) == ctx.ty(y))
}

fn walk_block(ctx: &mut Context, b: BlockId, s: &mut Scopes) {
    s.pure.push(HashTable::new());
    s.reads.push(FxHashMap::default());
    walk_ops(ctx, b, s);
    s.pure.pop();
    s.reads.pop();
}

/// The blocks of region `r`. A region of several blocks is walked along its
/// dominator tree (MLIR's CSE): a block sees the pure ops of the blocks
/// that dominate it. Reads are not carried from one block to another: a
/// write on another path (a loop's back edge, a sibling branch) may run
/// between them.
fn walk_region(ctx: &mut Context, r: RegionId, s: &mut Scopes) {
    let blocks = ctx.region(r).blocks.clone();
    if blocks.len() <= 1 {
        for blk in blocks {
            walk_block(ctx, blk, s);
        }
        return;
    }
    let dom = ir::dominance::RegionDominance::new(ctx, r);
    let mut children: FxHashMap<BlockId, Vec<BlockId>> = FxHashMap::default();
    let mut unreachable = Vec::new();
    for &b in &blocks[1..] {
        match dom.immediate_dominator(b) {
            Some(p) => children.entry(p).or_default().push(b),
            None => unreachable.push(b),
        }
    }
    enum Step {
        Enter(BlockId),
        Leave,
    }
    let mut saved_reads = Vec::new();
    let mut stack = vec![Step::Enter(blocks[0])];
    while let Some(step) = stack.pop() {
        match step {
            Step::Enter(b) => {
                s.pure.push(HashTable::new());
                saved_reads.push(std::mem::take(&mut s.reads));
                s.reads.push(FxHashMap::default());
                walk_ops(ctx, b, s);
                stack.push(Step::Leave);
                if let Some(cs) = children.get(&b) {
                    stack.extend(cs.iter().rev().map(|&c| Step::Enter(c)));
                }
            }
            Step::Leave => {
                s.pure.pop();
                s.reads = saved_reads.pop().expect("entered");
            }
        }
    }
    for b in unreachable {
        walk_block(ctx, b, s);
    }
}

/// The ops of block `b`, in the scopes already pushed for it.
fn walk_ops(ctx: &mut Context, b: BlockId, s: &mut Scopes) {
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
                walk_region(ctx, r, s);
            }
            if let Some(r) = saved_reads {
                s.reads = r;
            }
            if let Some((p, r)) = saved {
                s.pure = p;
                s.reads = r;
            }
            if writes {
                let w = written(ctx, op);
                s.invalidate(w.as_deref());
            }
            continue;
        }
        let is_read = traits.contains(Traits::READS)
            && !traits.intersects(Traits::WRITES | Traits::ALLOCATES);
        if !(traits.contains(Traits::PURE) || is_read) || ctx.results(op).is_empty() {
            if has_write_effects(ctx, op) {
                let in_bounds = cannot_fault(ctx, op, s);
                let w = written(ctx, op);
                s.invalidate(w.as_deref());
                if in_bounds {
                    forward_store(ctx, op, s);
                }
            }
            continue;
        }
        if is_read {
            let key = GvnKey::of(ctx, &OpState::of(ctx, op));
            let found = s.reads.iter().rev().find_map(|m| m.get(&key).cloned());
            match (found, read_alloc(ctx, op)) {
                (Some(k), _) if k.values.len() == ctx.results(op).len() => {
                    ctx.replace_op(op, &k.values);
                    s.eliminated += 1;
                }
                (None, Some(alloc)) => {
                    let values = SmallVec::from_slice(ctx.results(op));
                    s.reads
                        .last_mut()
                        .unwrap()
                        .insert(key, Known { values, alloc });
                }
                // A read of memory it does not name is not remembered.
                _ => {}
            }
            continue;
        }
        let hash = pure_hash(ctx, op);
        let found = s
            .pure
            .iter()
            .rev()
            .find_map(|m| m.find(hash, |&o| pure_eq(ctx, o, op)).copied());
        match found {
            Some(prev) => {
                let new: SmallVec<[ValueId; 2]> = SmallVec::from_slice(ctx.results(prev));
                ctx.replace_op(op, &new);
                s.eliminated += 1;
            }
            None => {
                let c = &*ctx;
                s.pure
                    .last_mut()
                    .unwrap()
                    .insert_unique(hash, op, |&o| pure_hash(c, o));
            }
        }
    }
}

/// Whether store `op` provably cannot fault, so that its value may be
/// forwarded ([`forward_store`]): a `var.set`, or an `arr.store` marked
/// `in_bounds`, at a constant index inside an `arr.alloc` of constant size,
/// or whose element an earlier read (or forwarded store) of this scope
/// already accessed (arrays never change length). A store that
/// may fault keeps its loads: once they read the stored value directly,
/// `dce` would erase the store as unread, and its fault with it, while its
/// value is still used.
fn cannot_fault(ctx: &Context, op: ir::OpId, s: &Scopes) -> bool {
    if !ctx.is(op, "arr.store") {
        return true;
    }
    if ctx.attr(op, "in_bounds").is_some() {
        return true;
    }
    // A constant index into an allocation of constant size.
    let alloc_size = ctx
        .def_op_named(ctx.operand(op, 0), "arr.alloc")
        .and_then(|a| constant_int(ctx, ctx.operand(a, 0)));
    if let (Some(i), Some(n)) = (constant_int(ctx, ctx.operand(op, 1)), alloc_size) {
        return 0 <= i && i < n;
    }
    read_keys(ctx, op).is_some_and(|(keys, _)| {
        keys.iter()
            .any(|key| s.reads.iter().any(|m| m.contains_key(key)))
    })
}

/// The keys of the reads of the element that store `op` writes (`arr.load
/// %a, %i` without and with `in_bounds`, or `var.get %v`), and the stored
/// value.
fn read_keys(ctx: &Context, op: ir::OpId) -> Option<([GvnKey; 2], ValueId)> {
    let (load, operands, x): (_, SmallVec<[ValueId; 4]>, _) = match ctx.op_name(op) {
        "arr.store" => (
            "arr.load",
            smallvec::smallvec![ctx.operand(op, 0), ctx.operand(op, 1)],
            ctx.operand(op, 2),
        ),
        "var.set" => (
            "var.get",
            smallvec::smallvec![ctx.operand(op, 0)],
            ctx.operand(op, 1),
        ),
        _ => return None,
    };
    let kind = ctx.registry().kind(load)?;
    let key = |attrs| {
        let st = OpState {
            kind,
            operands: operands.clone(),
            result_types: smallvec::smallvec![ctx.ty(x).clone()],
            attrs,
            regions: SmallVec::new(),
            successors: Default::default(),
            loc: ctx.loc(op),
            existing: None,
        };
        GvnKey::of(ctx, &st)
    };
    let keys = [
        key(vec![]),
        key(vec![("in_bounds".to_string(), ir::Attribute::Unit)]),
    ];
    Some((keys, x))
}

/// After a store, a later read of the same element (no aliasing write in
/// between) is the stored value: `arr.store %a, %i, %x` then `arr.load
/// %a, %i` (with or without `in_bounds`), `var.set %v, %x` then `var.get
/// %v`. Only for stores that cannot fault ([`cannot_fault`]).
fn forward_store(ctx: &Context, op: ir::OpId, s: &mut Scopes) {
    let Some((keys, x)) = read_keys(ctx, op) else {
        return;
    };
    let alloc = ctx.operand(op, 0);
    for key in keys {
        let values = smallvec::smallvec![x];
        s.reads
            .last_mut()
            .unwrap()
            .insert(key, Known { values, alloc });
    }
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
