//! Simplification of regions of several blocks, run by `canonicalize`
//! after its patterns (MLIR's `simplifyRegions` and the `cf.br`
//! canonicalizations):
//!
//! - an `scf.execute_region` of several blocks in a function body gives
//!   its blocks to the body (MLIR's `MultiBlockExecuteInliner`);
//! - blocks that the entry block does not reach are erased;
//! - a branch to a block that holds nothing but an unconditional branch
//!   (whose arguments only that branch uses) goes straight to that
//!   branch's target (MLIR's
//!   `SimplifyPassThroughBr`/`SimplifyPassThroughCondBranch`);
//! - a block whose only predecessor ends in an unconditional branch to it
//!   is merged into that predecessor, its arguments replaced by the
//!   branch's operands (MLIR's `SimplifyBrToBlockWithSinglePred`);
//! - of two blocks that do the same thing (the same ops with the same
//!   attributes, operands and successors, up to their own values, none of
//!   which is used outside them), branches to the second go to the first,
//!   which leaves the second unreachable (the simple case of MLIR's
//!   `mergeIdenticalBlocks`).
//!
//! Each step keeps every use dominated: a value the forwarded branch names
//! that is not the pass-through block's own argument dominates that block,
//! so it dominates each of its predecessors too.

use ir::{BlockId, Context, OpId, RegionId, ValueId};

/// Simplifies every region of several blocks; returns how many blocks were
/// erased or merged and branches redirected.
pub fn simplify_regions(ctx: &mut Context) -> u64 {
    // An scf.execute_region of several blocks in a function body: its
    // blocks join the body (MLIR's `MultiBlockExecuteInliner`).
    let mut changes = 0;
    while let Some(op) = ctx.walk_all().into_iter().find(|&op| {
        ctx.is(op, "scf.execute_region")
            && ctx
                .regions(op)
                .iter()
                .any(|&r| ctx.region(r).blocks.len() > 1)
            && ctx.parent_op(op).is_some_and(|p| ctx.is(p, "func.func"))
            && !crate::scf_to_cf::in_kernel(ctx, op)
    }) {
        crate::scf_to_cf::convert_execute_region(ctx, op);
        changes += 1;
    }
    let regions: Vec<RegionId> = ctx
        .walk_all()
        .into_iter()
        .flat_map(|op| ctx.regions(op).to_vec())
        .filter(|&r| ctx.region(r).blocks.len() > 1)
        .collect();
    for r in regions {
        // Each round makes progress; the bound only guards against a cycle
        // of pass-through blocks.
        for _ in 0..64 {
            let n = erase_unreachable(ctx, r)
                + forward_pass_through(ctx, r)
                + merge_blocks(ctx, r)
                + merge_identical_blocks(ctx, r);
            if n == 0 {
                break;
            }
            changes += n;
        }
    }
    changes
}

fn successors(ctx: &Context, b: BlockId) -> Vec<BlockId> {
    ctx.terminator(b)
        .map(|t| ctx.successors(t).iter().map(|s| s.0).collect())
        .unwrap_or_default()
}

/// Erases the blocks of `r` that its entry block does not reach.
fn erase_unreachable(ctx: &mut Context, r: RegionId) -> u64 {
    let blocks = ctx.region(r).blocks.clone();
    let Some(&entry) = blocks.first() else {
        return 0;
    };
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![entry];
    seen.insert(entry);
    while let Some(b) = stack.pop() {
        for s in successors(ctx, b) {
            if seen.insert(s) {
                stack.push(s);
            }
        }
    }
    let dead: Vec<BlockId> = blocks.into_iter().filter(|b| !seen.contains(b)).collect();
    // Values of a dead block are used only in dead blocks (a reachable block
    // is not dominated by an unreachable one): erase them all together.
    let ops: Vec<OpId> = dead.iter().flat_map(|&b| ctx.block_ops(b)).collect();
    for &op in &ops {
        ctx.set_operands(op, &[]);
    }
    for op in ops {
        ctx.erase_op(op);
    }
    for &b in &dead {
        ctx.remove_block(b);
    }
    dead.len() as u64
}

/// The target and operands of block `b` when it holds nothing but a
/// `cf.br` (to another block).
fn pass_through(ctx: &Context, b: BlockId) -> Option<(BlockId, Vec<ValueId>)> {
    let t = ctx.terminator(b)?;
    if ctx.block(b).first != Some(t) || !ctx.is(t, "cf.br") {
        return None;
    }
    let &(target, _) = ctx.successors(t).first()?;
    // Its arguments may be used by the branch alone (a block it dominates
    // could use them too, and would lose them).
    let local = ctx
        .block_args(b)
        .iter()
        .all(|&a| ctx.uses(a).iter().all(|u| u.op == t));
    (target != b && local).then(|| (target, ctx.successor_operands(t, 0).to_vec()))
}

/// Redirects branches to pass-through blocks to those blocks' targets.
fn forward_pass_through(ctx: &mut Context, r: RegionId) -> u64 {
    let mut n = 0;
    for b in ctx.region(r).blocks.clone() {
        let Some(t) = ctx.terminator(b) else { continue };
        for i in 0..ctx.successors(t).len() {
            let (s, _) = ctx.successors(t)[i];
            if s == b {
                continue;
            }
            let Some((target, args)) = pass_through(ctx, s) else {
                continue;
            };
            let given = ctx.successor_operands(t, i).to_vec();
            let params = ctx.block_args(s).to_vec();
            let new_args: Vec<ValueId> = args
                .iter()
                .map(|v| match params.iter().position(|p| p == v) {
                    Some(k) => given[k],
                    None => *v,
                })
                .collect();
            ctx.set_successor(t, i, target, &new_args);
            n += 1;
        }
    }
    n
}

/// Merges each block whose only predecessor branches to it unconditionally
/// into that predecessor.
fn merge_blocks(ctx: &mut Context, r: RegionId) -> u64 {
    let mut n = 0;
    let blocks = ctx.region(r).blocks.clone();
    for &b in blocks.iter().skip(1) {
        if ctx.block_region(b) != Some(r) {
            continue;
        }
        let preds = ctx.predecessors(b);
        let [p] = preds.as_slice() else { continue };
        let p = *p;
        if p == b {
            continue;
        }
        let Some(t) = ctx.terminator(p) else { continue };
        if !ctx.is(t, "cf.br") {
            continue;
        }
        let args = ctx.successor_operands(t, 0).to_vec();
        for (a, v) in ctx.block_args(b).to_vec().into_iter().zip(args) {
            ctx.replace_all_uses(a, v);
        }
        ctx.erase_op(t);
        ctx.splice_block(b, p, None);
        ctx.remove_block(b);
        n += 1;
    }
    n
}

/// Whether block `b` does what block `a` does (see the module
/// documentation); neither may define values used outside itself.
fn identical(ctx: &Context, a: BlockId, b: BlockId) -> bool {
    let (aa, ba) = (ctx.block_args(a), ctx.block_args(b));
    if aa.len() != ba.len() || aa.iter().zip(ba).any(|(x, y)| ctx.ty(*x) != ctx.ty(*y)) {
        return false;
    }
    let (ao, bo) = (ctx.block_ops(a), ctx.block_ops(b));
    if ao.len() != bo.len() {
        return false;
    }
    let local =
        |blk: BlockId, v: ValueId| ctx.uses(v).iter().all(|u| ctx.op(u.op).parent == Some(blk));
    let mut map: std::collections::HashMap<ValueId, ValueId> =
        ba.iter().copied().zip(aa.iter().copied()).collect();
    if !aa.iter().all(|&v| local(a, v)) || !ba.iter().all(|&v| local(b, v)) {
        return false;
    }
    for (&x, &y) in ao.iter().zip(&bo) {
        let (dx, dy) = (ctx.op(x), ctx.op(y));
        let same = dx.kind == dy.kind
            && dx.attrs == dy.attrs
            && ctx.regions(x).is_empty()
            && ctx.regions(y).is_empty()
            && ctx.successors(x) == ctx.successors(y)
            && ctx.operands(x).len() == ctx.operands(y).len()
            && ctx
                .operands(x)
                .iter()
                .zip(ctx.operands(y))
                .all(|(vx, vy)| map.get(vy).unwrap_or(vy) == vx)
            && ctx.results(x).len() == ctx.results(y).len()
            && ctx
                .results(x)
                .iter()
                .zip(ctx.results(y))
                .all(|(rx, ry)| ctx.ty(*rx) == ctx.ty(*ry) && local(a, *rx) && local(b, *ry));
        if !same {
            return false;
        }
        map.extend(
            ctx.results(y)
                .iter()
                .copied()
                .zip(ctx.results(x).iter().copied()),
        );
    }
    true
}

/// Sends the branches to a block identical to an earlier one (not the
/// entry block) to the earlier one.
fn merge_identical_blocks(ctx: &mut Context, r: RegionId) -> u64 {
    let blocks = ctx.region(r).blocks.clone();
    let mut n = 0;
    for (j, &b) in blocks.iter().enumerate().skip(2) {
        let Some(&a) = blocks[1..j]
            .iter()
            .find(|&&a| ctx.block_region(a) == Some(r) && identical(ctx, a, b))
        else {
            continue;
        };
        for p in ctx.predecessors(b) {
            let Some(t) = ctx.terminator(p) else { continue };
            for i in 0..ctx.successors(t).len() {
                if ctx.successors(t)[i].0 == b {
                    let args = ctx.successor_operands(t, i).to_vec();
                    ctx.set_successor(t, i, a, &args);
                    n += 1;
                }
            }
        }
    }
    n
}

/// Splits `op`'s block after `op`: the ops that follow move to a new block
/// placed right after it, with one argument per result of `op`, which
/// replace the results. Returns the new block. The caller ends `op`'s
/// block with a branch.
pub fn split_after(ctx: &mut Context, op: OpId) -> BlockId {
    let blk = ctx.op(op).parent.expect("op in a block");
    let cont = ctx.new_block();
    ctx.insert_block_after(blk, cont);
    let mut cur = ctx.op(op).next;
    while let Some(o) = cur {
        cur = ctx.op(o).next;
        ctx.move_op(o, cont, None);
    }
    for res in ctx.results(op).to_vec() {
        let ty = ctx.ty(res).clone();
        let a = ctx.add_block_arg(cont, ty, None);
        ctx.copy_name(res, a);
        ctx.replace_all_uses(res, a);
    }
    cont
}

/// Appends `cf.br ^target(args)` at the end of block `b`.
pub fn append_br(ctx: &mut Context, b: BlockId, target: BlockId, args: &[ValueId], loc: ir::Loc) {
    append_branch(ctx, b, "cf.br", &[], &[(target, args)], loc);
}

/// Appends branch `name` at the end of block `b`: its own operands `own`,
/// then each successor with the operands it forwards; returns the branch.
pub fn append_branch(
    ctx: &mut Context,
    b: BlockId,
    name: &str,
    own: &[ValueId],
    successors: &[(BlockId, &[ValueId])],
    loc: ir::Loc,
) -> OpId {
    let mut bld = ir::Builder::at_end(ctx, b);
    bld.loc = loc;
    let operands: Vec<ValueId> = own
        .iter()
        .chain(successors.iter().flat_map(|(_, args)| args.iter()))
        .copied()
        .collect();
    let mut st = bld.state(name, &operands, &[], Vec::new());
    st.successors = successors
        .iter()
        .map(|&(t, args)| (t, args.len() as u32))
        .collect();
    bld.create_raw(st)
}
