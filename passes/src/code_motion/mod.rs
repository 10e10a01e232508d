//! `code-motion`: computes a better schedule for pure ops (LMS's code motion,
//! Rompf et al.; MLIR's loop-invariant code motion):
//! - *hoisting*: a speculatable pure op in the body of a loop (`scf.for`,
//!   `gen.loop`) whose operands are all defined outside the loop moves in
//!   front of the loop, so it runs once instead of once per iteration;
//! - *sinking*: a pure op whose only uses are inside one branch of an
//!   `scf.if` (in the same block) moves into that branch, so it runs only
//!   when needed.
//!
//! Only ops that can never fault are hoisted as they are (constants,
//! `arith` ops other than integer division and remainder by a divisor that
//! may be zero, lengths): moving a faulting op out of a loop that runs zero
//! times would introduce an error. Those that can fault move under a guard
//! instead ([`guarded`]). Sinking only
//! ever removes executions, so any pure op may sink, as long as nothing in
//! its regions reads memory ([`effect_free_inside`]): it moves past the ops
//! between it and the branch, which may write.
//!
//! Whole loops (`gen.loop`, `scf.for`) that compute the same value in every
//! iteration of the loop around them are hoisted too (issue 9, item 4: a
//! reduction over an invariant vector inside a map), when they cannot fault
//! and have no effect: every op inside is pure and speculatable, a nested
//! loop's size is provably non-negative, every emit goes to a generator
//! inside, and every `vec.get(v, j)` reads at the index `j` of a loop (inside)
//! that runs over exactly `vec.len(v)`.
//!
//! Reads that cannot fault (`arr.len`, `var.get`) are hoisted too when no op
//! in the loop may write their allocation (effects per allocation, issue 13:
//! [`crate::alias`]): ops on different allocations move past each other.

pub(crate) mod guarded;

use crate::alias::{Aliases, Effects};
use ir::pass::{Pass, PassInfo, PassOptions, PassStats};
use ir::{BlockId, Context, Diagnostic, OpId, Traits, ValueId};

/// The pass.
pub struct CodeMotion;

impl Pass for CodeMotion {
    fn name(&self) -> &'static str {
        "code-motion"
    }
    fn run(&mut self, ctx: &mut Context, stats: &mut PassStats) -> Result<(), Diagnostic> {
        code_motion(ctx).record(stats);
        Ok(())
    }
}

fn is_loop(ctx: &Context, op: OpId) -> bool {
    ctx.is(op, "scf.for")
        || ctx.is(op, "scf.forall")
        || ctx.is(op, "scf.while")
        || ctx.is(op, "gen.loop")
}

/// A read that cannot fault and that no write of `lp` (described by
/// `writes`) may change.
fn invariant_read(ctx: &Context, op: OpId, writes: &Effects, aliases: &Aliases) -> bool {
    if !(ctx.is(op, "arr.len") || ctx.is(op, "var.get")) || writes.unknown_write {
        return false;
    }
    let a = ctx.operand(op, 0);
    !writes.writes.iter().any(|&w| aliases.may_alias(a, w))
}

/// Pure, region-free, and unable to fault.
pub(crate) fn speculatable(ctx: &Context, op: OpId) -> bool {
    if !ctx.has_traits(op, Traits::PURE) || !ctx.regions(op).is_empty() {
        return false;
    }
    let name = ctx.op_name(op);
    match name {
        // Only a zero divisor faults (MIN / -1 wraps).
        "arith.divsi" | "arith.remsi" | "arith.divui" | "arith.remui" | "arith.ceildivsi"
        | "arith.floordivsi" | "arith.ceildivui" => {
            constant(ctx, ctx.operand(op, 1)).is_some_and(|d| d != 0)
        }
        // Records are built and read without a fault.
        "vec.len" | "mat.rows" | "mat.cols" | "struct.new" | "struct.get" => true,
        _ => name.starts_with("arith."),
    }
}

/// The loop whose index `v` is and its size `n`, when that loop runs over
/// `[0, n)` with step 1 (a `gen.loop`, or an `scf.for` from 0 by 1).
pub(crate) fn index_range(ctx: &Context, v: ValueId) -> Option<(OpId, ValueId)> {
    let ir::context::ValueDef::BlockArg(b, 0) = ctx.value(v).def else {
        return None;
    };
    let lp = ctx.block_parent_op(b)?;
    match ctx.op_name(lp) {
        "gen.loop" => Some((lp, ctx.operand(lp, 0))),
        "scf.for"
            if constant(ctx, ctx.operand(lp, 0)) == Some(0)
                && constant(ctx, ctx.operand(lp, 2)) == Some(1) =>
        {
            Some((lp, ctx.operand(lp, 1)))
        }
        _ => None,
    }
}

/// The loop whose index `v` is, when that loop runs over `[0, n)` with
/// step 1 and `is_n(n)`.
pub(crate) fn loop_over(ctx: &Context, v: ValueId, is_n: impl Fn(ValueId) -> bool) -> Option<OpId> {
    index_range(ctx, v).and_then(|(lp, n)| is_n(n).then_some(lp))
}

/// Whether `n` is `name(x)` (a one-operand size op such as `vec.len`).
pub(crate) fn is_size_of(ctx: &Context, n: ValueId, name: &str, x: ValueId) -> bool {
    ctx.def_op_named(n, name)
        .is_some_and(|l| ctx.operand(l, 0) == x)
}

/// Whether `v` is the index of a loop inside `root` (or of `root`) that
/// runs over `[0, vec.len(vec))`.
fn index_over(ctx: &Context, v: ValueId, vec: ValueId, root: OpId) -> bool {
    loop_over(ctx, v, |n| is_size_of(ctx, n, "vec.len", vec))
        .is_some_and(|lp| lp == root || ctx.is_ancestor(root, lp))
}

/// The integer constant `v` is, if it is one.
pub(crate) fn constant(ctx: &Context, v: ValueId) -> Option<i64> {
    ctx.def_op_named(v, "arith.constant")
        .and_then(|c| ctx.attr(c, "value"))
        .and_then(|a| a.as_int())
}

/// Whether `gen.emit` op `emit` emits to a generator of `root` or of a loop
/// inside it.
pub(super) fn emits_inside(ctx: &Context, emit: OpId, root: OpId) -> bool {
    dialects::gen::handle_owner(ctx, ctx.operand(emit, 0))
        .is_some_and(|l| l == root || ctx.is_ancestor(root, l))
}

/// Whether loop `root` (with everything in it) has no effect and cannot
/// fault, so that running it once more (or once when it would not have
/// run) changes nothing but time.
pub(crate) fn harmless_loop(ctx: &Context, root: OpId) -> bool {
    if !(ctx.is(root, "gen.loop") || ctx.is(root, "scf.for")) {
        return false;
    }
    std::iter::once(root)
        .chain(ctx.walk_nested(root))
        .all(|o| match ctx.op_name(o) {
            "gen.loop" => dialects::gen::lower::non_negative(ctx, ctx.operand(o, 0)),
            "scf.for" => constant(ctx, ctx.operand(o, 2)).is_some_and(|s| s > 0),
            "gen.emit" => emits_inside(ctx, o, root),
            "gen.end" | "scf.yield" | "scf.if" => true,
            "vec.get" => index_over(ctx, ctx.operand(o, 1), ctx.operand(o, 0), root),
            _ => speculatable(ctx, o),
        })
}

/// Whether every value `op` and the ops inside it use from outside `op` is
/// defined outside `lp`.
fn invariant_deep(ctx: &Context, op: OpId, lp: OpId) -> bool {
    std::iter::once(op).chain(ctx.walk_nested(op)).all(|o| {
        ctx.operands(o).iter().all(|&v| {
            ctx.value_block(v)
                .is_some_and(|b| ctx.block_in_op(b, op) || !ctx.block_in_op(b, lp))
        })
    })
}

/// Whether every operand of `op` is defined outside `lp`.
fn invariant(ctx: &Context, op: OpId, lp: OpId) -> bool {
    ctx.operands(op)
        .iter()
        .all(|&v| ctx.value_block(v).is_some_and(|b| !ctx.block_in_op(b, lp)))
}

/// Hoists invariant ops out of `lp`'s body block; returns how many moved
/// (`(plain, guarded)`, see [`guarded`]).
fn hoist_from(ctx: &mut Context, lp: OpId, aliases: &Aliases) -> (u64, u64) {
    let (mut n, mut g) = (0, 0);
    let parent = ctx.op(lp).parent.unwrap();
    let effects = Effects::of(ctx, lp);
    let body = guarded::body_block(ctx, lp);
    let mut guard = None;
    for &r in ctx.regions(lp).to_vec().iter() {
        for b in ctx.region(r).blocks.clone() {
            // Whether no op before this point that stays in the body can
            // fault (only then may one that can fault leave, guarded).
            let mut safe_prefix = Some(b) == body;
            // In order, so an op whose operands were just hoisted follows them.
            for op in ctx.block_ops(b) {
                let movable = speculatable(ctx, op) || invariant_read(ctx, op, &effects, aliases);
                let whole_loop = !movable && harmless_loop(ctx, op) && invariant_deep(ctx, op, lp);
                if whole_loop || (movable && invariant(ctx, op, lp)) {
                    ctx.move_op(op, parent, Some(lp));
                    n += 1;
                } else if safe_prefix
                    && guarded::guardable(ctx, op, lp)
                    && guarded::hoist_guarded(ctx, op, lp, &mut guard)
                {
                    g += 1;
                } else if !guarded::cannot_fault(ctx, op) {
                    safe_prefix = false;
                }
            }
        }
    }
    (n, g)
}

/// The branch block of `if_op` (one of its regions' blocks) that contains
/// `user`, at any depth.
fn branch_of(ctx: &Context, user: OpId, if_op: OpId) -> Option<BlockId> {
    let mut b = ctx.op(user).parent?;
    loop {
        let p = ctx.block_parent_op(b)?;
        if p == if_op {
            return Some(b);
        }
        b = ctx.op(p).parent?;
    }
}

/// The branch block of `if_op` that contains every use of `op`'s results.
fn single_branch(ctx: &Context, op: OpId, if_op: OpId) -> Option<BlockId> {
    let mut target = None;
    for &r in ctx.results(op) {
        for u in ctx.uses(r) {
            let b = branch_of(ctx, u.op, if_op)?;
            if *target.get_or_insert(b) != b {
                return None;
            }
        }
    }
    target
}

/// Whether nothing in `op` touches memory ([`Effects::of`], which reads
/// the ops in its regions too) or emits to a generator outside it, so that
/// running `op` later in its block, after ops that may write, computes the
/// same. A pure op's trait speaks for the op alone, not for its regions: a
/// `vec.map` whose body reads a variable (`var.get`) is pure as an op, and
/// sinking it past a `var.set` of that variable would read the new value.
fn effect_free_inside(ctx: &Context, op: OpId) -> bool {
    Effects::of(ctx, op).is_empty()
        && ctx
            .walk_nested(op)
            .into_iter()
            .all(|o| !ctx.is(o, "gen.emit") || emits_inside(ctx, o, op))
}

/// Sinks pure ops of `block` into the one `scf.if` branch that uses them.
fn sink_in(ctx: &mut Context, block: BlockId) -> u64 {
    let mut n = 0;
    // Backwards, so an op feeding a sunk op can follow it in.
    for op in ctx.block_ops(block).into_iter().rev() {
        if !ctx.alive(op)
            || !ctx.has_traits(op, Traits::PURE)
            || ctx.results(op).is_empty()
            || !effect_free_inside(ctx, op)
        {
            continue;
        }
        let users: Vec<OpId> = ctx
            .results(op)
            .iter()
            .flat_map(|&r| ctx.uses(r).iter().map(|u| u.op))
            .collect();
        let Some(&first) = users.first() else {
            continue;
        };
        // The `scf.if` in this block that holds the first use.
        let mut anc = first;
        while ctx.op(anc).parent != Some(block) {
            match ctx.parent_op(anc) {
                Some(p) => anc = p,
                None => break,
            }
        }
        if ctx.op(anc).parent != Some(block) || !ctx.is(anc, "scf.if") || anc == op {
            continue;
        }
        if let Some(b) = single_branch(ctx, op, anc) {
            let first_op = ctx.block(b).first;
            ctx.move_op(op, b, first_op);
            n += 1;
        }
    }
    n
}

/// Hoists loop invariants (innermost loops first, so that they bubble out
/// level by level); returns how many ops moved, `(plain, guarded)`.
pub fn hoist_counted(ctx: &mut Context) -> (u64, u64) {
    let (mut hoisted, mut guarded) = (0, 0);
    let aliases = Aliases::compute(ctx);
    for op in ctx.walk_all().into_iter().rev() {
        if ctx.alive(op) && is_loop(ctx, op) {
            let (h, g) = hoist_from(ctx, op, &aliases);
            hoisted += h;
            guarded += g;
        }
    }
    (hoisted, guarded)
}

/// Runs hoisting (innermost loops first) and then sinking on the module.
/// Returns what moved.
pub fn code_motion(ctx: &mut Context) -> Moved {
    let (hoisted, guarded) = hoist_counted(ctx);
    let mut sunk = 0;
    let mut blocks = vec![ctx.top];
    for op in ctx.walk_all() {
        for &r in ctx.regions(op) {
            blocks.extend(ctx.region(r).blocks.iter().copied());
        }
    }
    for b in blocks {
        sunk += sink_in(ctx, b);
    }
    Moved {
        hoisted,
        guarded,
        sunk,
    }
}

/// What [`code_motion`] moved.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Moved {
    /// Ops hoisted out of loops as they are.
    pub hoisted: u64,
    /// Ops that may fault hoisted under a guard ([`guarded`]).
    pub guarded: u64,
    /// Ops sunk into a branch.
    pub sunk: u64,
}

impl Moved {
    /// Adds the counts to `stats` (`hoisted`, `hoisted-guarded`, `sunk`).
    pub fn record(self, stats: &mut PassStats) {
        stats.add("hoisted", self.hoisted);
        stats.add("hoisted-guarded", self.guarded);
        stats.add("sunk", self.sunk);
    }
}

fn create(opts: &PassOptions) -> Result<Box<dyn Pass>, String> {
    opts.check_known("code-motion", &[])?;
    Ok(Box::new(CodeMotion))
}

/// Registration record.
pub fn info() -> PassInfo {
    PassInfo {
        name: "code-motion",
        description:
            "hoist loop-invariant ops out of loops and sink ops into the branch that uses them",
        options: &[],
        create,
    }
}
