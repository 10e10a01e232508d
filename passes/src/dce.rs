//! `dce`: erases operations whose results are unused and that have no
//! effects (pure ops, loops/conditionals whose bodies are pure, and
//! `gen.loop`s whose bodies only emit to their own generators or those of
//! loops nested in them), to a fixpoint: erasing an op may make its
//! operands' producers dead (LMS's DCE by reachability from the effects and
//! results).
//!
//! Effects are tracked per allocation (issue 13): an allocation (`arr.alloc`,
//! `var.new`) that is only ever written (`arr.store`, `var.set`) or freed,
//! never read, passed, yielded or returned, is dead with all its writes,
//! wherever they sit (loops, branches, parallel bodies). A write that would
//! have faulted (out of bounds) goes with it: a pass may turn a fault into a
//! result, never a result into a fault.
//!
//! An unused `arr.to_vec`, `arr.len` or `arr.load {in_bounds}` goes like a
//! pure op.
//!
//! A store (`arr.store`, `var.set`) into a local allocation (one that never
//! escapes, [`crate::alias::Aliases::is_local`]) is dead when no op that
//! may read that allocation can run after it: none later in its block or
//! in the blocks around it, and none anywhere in a loop that holds the
//! store (the next iteration runs it after).

use crate::alias::{is_memory, Aliases};
use ir::pass::{Pass, PassInfo, PassOptions, PassStats};
use ir::rewrite::is_trivially_dead;
use ir::{BlockId, Context, Diagnostic, OpId, Traits, ValueId};

/// The pass.
pub struct Dce;

impl Pass for Dce {
    fn name(&self) -> &'static str {
        "dce"
    }
    fn handles_cfg(&self) -> bool {
        true
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
        let w = write_only_allocations(ctx) + dead_stores(ctx);
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
        if !ctx.alive(op)
            || !(ctx.is(op, "arr.alloc")
                || ctx.is(op, "var.new")
                || ctx.is(op, "memref.alloc")
                || ctx.is(op, "memref.alloca"))
        {
            continue;
        }
        let r = ctx.result(op, 0);
        let write_only = ctx.uses(r).iter().all(|u| {
            (u.index == 0
                && (ctx.is(u.op, "arr.store")
                    || ctx.is(u.op, "var.set")
                    || ctx.is(u.op, "arr.free")
                    || ctx.is(u.op, "memref.dealloc")))
                || (u.index == 1 && ctx.is(u.op, "memref.store"))
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

/// Whether operand `i` of `op` is only the target of a write (or a free):
/// the use reads nothing. Uses that pass a buffer on (selects, yields,
/// carried values) read nothing either, but their results alias it and are
/// checked themselves.
fn write_target_or_flow(ctx: &Context, op: OpId, i: usize) -> bool {
    match ctx.op_name(op) {
        "arr.store" | "var.set" | "arr.free" | "gpu.dealloc" | "gpu.memcpy" | "memref.dealloc" => {
            i == 0
        }
        "memref.store" => i == 1,
        n if dialects::memref::is_view(n) => i == 0,
        "arith.select" | "scf.yield" | "scf.condition" | "scf.for" | "scf.while" => true,
        _ => false,
    }
}

/// The ancestor of `op` (or `op` itself) that sits directly in `block`.
fn ancestor_in(ctx: &Context, mut op: OpId, block: BlockId) -> Option<OpId> {
    loop {
        let p = ctx.op(op).parent?;
        if p == block {
            return Some(op);
        }
        op = ctx.block_parent_op(p)?;
    }
}

/// Whether `r` may run after `s` in one run of the function holding `s`:
/// later in a block around `s`, or anywhere in a region op around `s` that
/// may run its regions again (anything but `scf.if`).
fn may_run_after(ctx: &Context, s: OpId, r: OpId) -> bool {
    let mut cur = s;
    loop {
        let Some(b) = ctx.op(cur).parent else {
            return false;
        };
        // Branches may lead from `s`'s block to any block of its region,
        // and back to it.
        let several = ctx
            .block_region(b)
            .is_some_and(|reg| ctx.region(reg).blocks.len() > 1);
        if several
            && ctx
                .block_parent_op(b)
                .is_some_and(|p| ctx.is_ancestor(p, r))
        {
            return true;
        }
        if let Some(x) = ancestor_in(ctx, r, b) {
            if x != cur && ctx.is_before_in_block(cur, x) {
                return true;
            }
        }
        let Some(p) = ctx.block_parent_op(b) else {
            return false;
        };
        if ctx.has_traits(p, Traits::ISOLATED_FROM_ABOVE) {
            return false;
        }
        if !ctx.is(p, "scf.if") && ctx.is_ancestor(p, r) {
            return true;
        }
        cur = p;
    }
}

/// Erases stores into local allocations that nothing reads afterwards.
fn dead_stores(ctx: &mut Context) -> u64 {
    let stores: Vec<OpId> = ctx
        .walk_all()
        .into_iter()
        .filter(|&o| ctx.is(o, "arr.store") || ctx.is(o, "var.set") || ctx.is(o, "memref.store"))
        .collect();
    if stores.is_empty() {
        return 0;
    }
    let aliases = Aliases::compute(ctx);
    // Every use of a memory value that may read it: (value, user).
    let mut reads: Vec<(ValueId, OpId)> = Vec::new();
    for op in ctx.walk_all() {
        for (i, &v) in ctx.operands(op).iter().enumerate() {
            if is_memory(ctx.ty(v)) && !write_target_or_flow(ctx, op, i) {
                reads.push((v, op));
            }
        }
    }
    let mut erased = 0;
    for s in stores {
        let t = ctx.operand(s, usize::from(ctx.is(s, "memref.store")));
        if !aliases.is_local(t) {
            continue;
        }
        let read_later = reads
            .iter()
            .any(|&(v, r)| ctx.alive(r) && aliases.may_alias(v, t) && may_run_after(ctx, s, r));
        if !read_later {
            ctx.erase_op(s);
            erased += 1;
        }
    }
    erased
}

/// An unused `arr.to_vec`, `arr.len` or `arr.load {in_bounds}`: it only
/// reads its buffer (and `to_vec` allocates the vector it returns), and
/// cannot fault, so it goes like a pure op (MLIR's rule for ops with only
/// read and allocate effects); the buffer may then be write-only.
fn unused_read(ctx: &Context, op: OpId) -> bool {
    (ctx.is(op, "arr.to_vec")
        || ctx.is(op, "arr.len")
        || (ctx.is(op, "arr.load") && ctx.attr(op, "in_bounds").is_some()))
        && ctx.results(op).iter().all(|&r| ctx.unused(r))
}

/// Erases the trivially dead ops, to a fixpoint.
fn dead_ops(ctx: &mut Context) -> u64 {
    let mut work: Vec<OpId> = ctx.walk_all();
    let mut erased = 0;
    // Visit uses before definitions: reverse pre-order handles straight-line
    // code in one sweep; the worklist catches the rest.
    while let Some(op) = work.pop() {
        if !ctx.alive(op) || ctx.op(op).parent.is_none() {
            continue;
        }
        // A `gen.loop` whose emits all go to its own handles (or to those of
        // loops inside it) is dead like a pure op when its results are unused.
        let dead = is_trivially_dead(ctx, op)
            || (ctx.is(op, dialects::gen::LOOP) && dialects::gen::is_dead_loop(ctx, op))
            || unused_read(ctx, op);
        if !dead {
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
