//! The ownership rule both backends apply at a block's terminator
//! ([`crate::translate`] explains the rules): each `vec`/`mat` operand is
//! moved when the block owns it (first occurrence only) and copied
//! otherwise, so what a terminator passes on is owned by the receiver; then
//! the block frees the owned buffers it defined and did not move.

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
