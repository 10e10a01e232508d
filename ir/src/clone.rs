//! Cloning IR with a value mapping: inlining a region's body at a builder's
//! insertion point (used by lowerings that inline op bodies and by fusion).

use std::collections::HashMap;

use smallvec::SmallVec;

use crate::builder::Builder;
use crate::context::{BlockId, RegionId, ValueId};
use crate::spec::{OpState, Traits};

/// A mapping from source values to their clones (or to the values that
/// replace them).
pub type ValueMap = HashMap<ValueId, ValueId>;

fn mapped(map: &ValueMap, v: ValueId) -> ValueId {
    map.get(&v).copied().unwrap_or(v)
}

/// Clones the ops of block `src` at `b`'s insertion point, except a final
/// terminator, and returns the terminator's operands after mapping (empty if
/// the block has no terminator).
///
/// `map` translates values of the source to values at the destination: the
/// caller seeds it (usually with `src`'s block arguments); every cloned
/// result is added to it. Values not in `map` (defined outside `src`) are used
/// as they are. Nested regions are cloned recursively, with fresh blocks and
/// block arguments (also recorded in `map`).
///
/// Ops are created through [`Builder::create`], so with `b.smart` set the
/// clones are folded, rewritten and hash-consed like any new op; a cloned
/// result may then map to an existing value. Clear `b.smart` for a verbatim
/// copy.
pub fn clone_block_into(b: &mut Builder, src: BlockId, map: &mut ValueMap) -> Vec<ValueId> {
    let ops = b.ctx.block_ops(src);
    let term = ops
        .last()
        .copied()
        .filter(|&t| b.ctx.has_traits(t, Traits::TERMINATOR));
    for &op in &ops {
        if Some(op) == term {
            break;
        }
        clone_op_into(b, op, map);
    }
    match term {
        Some(t) => b.ctx.operands(t).iter().map(|&v| mapped(map, v)).collect(),
        None => Vec::new(),
    }
}

/// Clones one op (with its regions) at `b`'s insertion point, recording its
/// results in `map`; returns the values that stand for its results.
pub fn clone_op_into(
    b: &mut Builder,
    op: crate::context::OpId,
    map: &mut ValueMap,
) -> SmallVec<[ValueId; 2]> {
    let mut st = OpState::of(b.ctx, op);
    st.existing = None;
    for v in st.operands.iter_mut() {
        *v = mapped(map, *v);
    }
    let regions: SmallVec<[RegionId; 2]> = st
        .regions
        .iter()
        .map(|&r| clone_region(b, r, map))
        .collect();
    st.regions = regions;
    let olds: SmallVec<[ValueId; 2]> = SmallVec::from_slice(b.ctx.results(op));
    let news = b.create(st);
    for (&o, &n) in olds.iter().zip(news.iter()) {
        if b.ctx.value_name(n).is_none() {
            b.ctx.copy_name(o, n);
        }
        map.insert(o, n);
    }
    news
}

/// Clones region `r` (every block, terminators included) into a new
/// detached region (to be adopted by an op built with `b`); block arguments
/// and results are recorded in `map`.
pub fn clone_region(b: &mut Builder, r: RegionId, map: &mut ValueMap) -> RegionId {
    let nr = b.ctx.new_region();
    let blocks = b.ctx.region(r).blocks.clone();
    let saved = b.insertion_point();
    // Every block first, so that a branch to a later block finds its clone.
    let mut block_map: HashMap<BlockId, BlockId> = HashMap::new();
    for &blk in &blocks {
        let nb = b.ctx.new_block();
        b.ctx.push_block(nr, nb);
        block_map.insert(blk, nb);
        for a in b.ctx.block_args(blk).to_vec() {
            let ty = b.ctx.ty(a).clone();
            let na = b.ctx.add_block_arg(nb, ty, None);
            b.ctx.copy_name(a, na);
            map.insert(a, na);
        }
    }
    for &blk in &blocks {
        let nb = block_map[&blk];
        b.set_end(nb);
        for op in b.ctx.block_ops(blk) {
            clone_op_into(b, op, map);
        }
    }
    if blocks.len() > 1 {
        for &blk in &blocks {
            let nb = block_map[&blk];
            if let Some(t) = b.ctx.terminator(nb) {
                let succs: SmallVec<[(BlockId, u32); 2]> = b
                    .ctx
                    .successors(t)
                    .iter()
                    .map(|&(s, n)| (block_map.get(&s).copied().unwrap_or(s), n))
                    .collect();
                b.ctx.set_successors(t, &succs);
            }
        }
    }
    b.restore(saved);
    nr
}
