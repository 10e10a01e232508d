//! The ownership rule both backends apply at a block's terminator
//! ([`crate::translate`] explains the rules): each `vec`/`mat` operand is
//! moved when the block owns it (first occurrence only) and copied
//! otherwise, so what a terminator passes on is owned by the receiver; then
//! the block frees the owned buffers it defined and did not move. A vector
//! stored into an array is moved when this is its last use
//! ([`movable_into_array`]), and `arr.to_vec`/`arr.free` take or release a
//! buffer in place only at its last use ([`is_last_use`]).

use rustc_hash::FxHashSet;

use ir::{BlockId, Context, OpId, ValueId};

use crate::abi;

/// How a terminator passes one operand on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Transfer {
    /// Not a buffer: passed as is.
    Plain,
    /// An owned buffer of this block, handed over.
    Move,
    /// A buffer that is borrowed, or passed more than once: a fresh copy.
    Copy,
}

/// The transfer of each operand of `term` (the terminator of `blk`), and
/// the buffers of `blk` (arguments and results of its ops) in `owned` that
/// must be freed after them.
pub(crate) fn terminator_transfer(
    ctx: &Context,
    blk: BlockId,
    term: OpId,
    owned: &FxHashSet<ValueId>,
) -> (Vec<(ValueId, Transfer)>, Vec<ValueId>) {
    let mut moved = FxHashSet::default();
    let ops = ctx
        .operands(term)
        .iter()
        .map(|&v| {
            let t = if !abi::is_buffer(ctx.ty(v)) {
                Transfer::Plain
            } else if owned.contains(&v) && ctx.value_block(v) == Some(blk) && moved.insert(v) {
                Transfer::Move
            } else {
                Transfer::Copy
            };
            (v, t)
        })
        .collect();
    let defined = ctx.block_args(blk).iter().copied().chain(
        ctx.iter_block(blk)
            .flat_map(|op| ctx.results(op).iter().copied()),
    );
    let to_free = defined
        .filter(|v| owned.contains(v) && !moved.contains(v))
        .collect();
    (ops, to_free)
}

/// Whether buffer `x`, stored into an array by `op` (`arr.store` /
/// `arr.push`), may be moved there instead of copied: `x` is owned by the
/// op's block (`owned`), `op` is its last use and names it once.
pub(crate) fn movable_into_array(
    ctx: &Context,
    owned: &FxHashSet<ValueId>,
    x: ValueId,
    op: OpId,
) -> bool {
    let here = ctx.op(op).parent;
    owned.contains(&x)
        && here.is_some()
        && ctx.value_block(x) == here
        && is_last_use(ctx, x, op)
        && ctx.operands(op).iter().filter(|&&o| o == x).count() == 1
}

/// Whether `op` (`to_vec`, `free`, or a store moving a vector) is the last
/// use of `a`: for a buffer, no other value names it ([`unaliased`]); it
/// is not inside a
/// loop nested below `a`'s block, and every other use of `a` sits in an op
/// of that block strictly before the one containing `op`.
pub(crate) fn is_last_use(ctx: &Context, a: ValueId, op: OpId) -> bool {
    let Some(home) = ctx.value_block(a) else {
        return false;
    };
    if abi_is_arr(ctx, a) && !unaliased(ctx, a, op) {
        return false;
    }
    let Some(anchor) = ancestor_in(ctx, op, home, true) else {
        return false;
    };
    uses_through_views(ctx, a)
        .into_iter()
        .filter(|&u| u != op)
        .all(|u| {
            ancestor_in(ctx, u, home, false)
                .is_some_and(|ua| ua != anchor && ctx.is_before_in_block(ua, anchor))
        })
}

/// The ops that use buffer `a` or a borrowed view of it: a `vec`/`mat`
/// made by `mat.from`, `mat.row`, `arith.select` or `vec.get` (an element
/// vector) shares `a`'s memory ([`crate::translate`]), so a use of the view
/// is a use of `a` (a `mat.from %v` returned after `%v` was handed to
/// `arr.from_vec` would read memory the array then owns).
fn uses_through_views(ctx: &Context, a: ValueId) -> Vec<OpId> {
    let mut out = Vec::new();
    let mut work = vec![a];
    let mut seen = FxHashSet::default();
    while let Some(v) = work.pop() {
        if !seen.insert(v) {
            continue;
        }
        for u in ctx.uses(v) {
            out.push(u.op);
            let view = matches!(
                ctx.op_name(u.op),
                "mat.from" | "mat.row" | "arith.select" | "vec.get"
            );
            if view {
                work.extend(
                    ctx.results(u.op)
                        .iter()
                        .copied()
                        .filter(|&r| abi::is_buffer(ctx.ty(r))),
                );
            }
        }
    }
    out
}

/// The ancestor of `op` (or `op` itself) in block `home`; `None` when there
/// is none, or, with `no_loops`, when a loop lies between.
fn ancestor_in(ctx: &Context, mut op: OpId, home: BlockId, no_loops: bool) -> Option<OpId> {
    loop {
        let blk = ctx.op(op).parent?;
        if blk == home {
            return Some(op);
        }
        let parent = ctx.block_parent_op(blk)?;
        if no_loops && matches!(ctx.op_name(parent), "scf.for" | "scf.forall" | "scf.while") {
            return None;
        }
        op = parent;
    }
}

fn abi_is_arr(ctx: &Context, a: ValueId) -> bool {
    matches!(ctx.ty(a), ir::Type::Arr(_))
}

/// Whether every use of buffer `v` only accesses it (loads, stores into it,
/// pushes, frees, `to_vec`): it flows into no other value (a select, a
/// branch or loop result, a carried value, a call, a stored element).
fn accessed_only(ctx: &Context, v: ValueId) -> bool {
    ctx.uses(v)
        .iter()
        .all(|u| dialects::alias::accessed_only(ctx, u.op, u.index as usize))
}

/// Whether buffer `a`, taken or released in place by `op`, is named by no
/// other value that a later op could use (effects per allocation,
/// [`dialects::alias`]). Either `a` is a fresh allocation that never flows
/// elsewhere, or it is the element `outer[i]` of a buffer of buffers
/// loaded once per iteration at the index `i` of the loop around it (the
/// bucket lowering's pattern), where `outer` is fresh, never flows
/// elsewhere, and no other op reads its elements in that loop or after it.
/// Anything else is copied (`to_vec`) or emptied (`free`) instead: taking
/// a buffer that another name still reaches would free it twice.
fn unaliased(ctx: &Context, a: ValueId, op: OpId) -> bool {
    if !accessed_only(ctx, a) {
        return false;
    }
    let Some(def) = ctx.def_op(a) else {
        return false;
    };
    if dialects::alias::is_fresh_allocation(ctx, def) {
        return true;
    }
    if !ctx.is(def, "arr.load") {
        return false;
    }
    let (outer, i) = (ctx.operand(def, 0), ctx.operand(def, 1));
    let Some(body) = ctx.op(def).parent else {
        return false;
    };
    let Some(lp) = ctx.block_parent_op(body) else {
        return false;
    };
    let induction = matches!(ctx.op_name(lp), "scf.for" | "scf.forall")
        && ctx.block_args(body).first() == Some(&i);
    if !induction
        || ctx.op(op).parent != Some(body)
        || !ctx
            .def_op(outer)
            .is_some_and(|d| dialects::alias::is_fresh_allocation(ctx, d))
        || !accessed_only(ctx, outer)
    {
        return false;
    }
    let Some(home) = ctx.op(lp).parent else {
        return false;
    };
    // Every other element read of `outer` runs before the loop.
    ctx.uses(outer).iter().filter(|u| u.op != def).all(|u| {
        let reads = matches!(
            ctx.op_name(u.op),
            "arr.load" | "arr.to_vec" | "arr.find_or_insert" | "gpu.memcpy"
        );
        !reads
            || ancestor_in(ctx, u.op, home, false)
                .is_some_and(|x| x != lp && ctx.is_before_in_block(x, lp))
    })
}

/// Whether `a` is a fresh `arr.alloc` that no op but
/// `arr.find_or_insert` writes: every use is `arr.find_or_insert` (as its
/// buffer), `arr.len`, `arr.load`, `arr.to_vec` or `arr.free`, so it never
/// flows elsewhere either. A hash index of its keys then stays valid
/// ([`crate::runtime::l0rt_find_or_insert_hashed`]); the bucket lowering's
/// key buffers are such arrays.
pub fn keys_only(ctx: &Context, a: ValueId) -> bool {
    ctx.def_op_named(a, "arr.alloc").is_some()
        && ctx.uses(a).iter().all(|u| match ctx.op_name(u.op) {
            "arr.find_or_insert" | "arr.len" | "arr.load" | "arr.to_vec" | "arr.free" => {
                u.index == 0
            }
            _ => false,
        })
}
