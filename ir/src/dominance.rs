//! Dominance between the blocks of a region of several blocks (MLIR's
//! `DominanceInfo` for SSACFG regions), for the verifier and for passes that
//! move values across blocks.
//!
//! Algorithm: Cooper, Harvey and Kennedy, "A Simple, Fast Dominance
//! Algorithm" (2001), §3: immediate dominators by iterating
//! `idom(b) = intersect(idom of b's processed predecessors)` in reverse
//! postorder until nothing changes. A block that the entry block does not
//! reach has no dominator; MLIR treats every use there as dominated, and
//! so does [`RegionDominance::dominates`].

use std::collections::HashMap;

use crate::context::{BlockId, Context, RegionId};

/// The dominator tree of one region.
pub struct RegionDominance {
    /// Reverse-postorder number of each block the entry reaches.
    order: HashMap<BlockId, usize>,
    /// Immediate dominator of each numbered block, by number (the entry's
    /// is itself).
    idom: Vec<usize>,
    /// The numbered blocks, in reverse postorder.
    rpo: Vec<BlockId>,
}

impl RegionDominance {
    /// Computes the dominator tree of region `r` from its blocks'
    /// terminators' successors. O(blocks * edges) in the worst case, about
    /// linear in practice.
    pub fn new(ctx: &Context, r: RegionId) -> RegionDominance {
        let blocks = &ctx.region(r).blocks;
        let mut order = HashMap::new();
        let Some(&entry) = blocks.first() else {
            return RegionDominance {
                order,
                idom: Vec::new(),
                rpo: Vec::new(),
            };
        };
        // Postorder by an explicit depth-first search.
        let succs = |b: BlockId| -> Vec<BlockId> {
            ctx.terminator(b)
                .map(|t| ctx.successors(t).iter().map(|s| s.0).collect())
                .unwrap_or_default()
        };
        let mut post: Vec<BlockId> = Vec::new();
        let mut seen: HashMap<BlockId, ()> = HashMap::new();
        let mut stack: Vec<(BlockId, Vec<BlockId>)> = vec![(entry, succs(entry))];
        seen.insert(entry, ());
        while let Some((b, rest)) = stack.last_mut() {
            match rest.pop() {
                Some(s) => {
                    if seen.insert(s, ()).is_none() {
                        let ss = succs(s);
                        stack.push((s, ss));
                    }
                }
                None => {
                    post.push(*b);
                    stack.pop();
                }
            }
        }
        let rpo: Vec<BlockId> = post.into_iter().rev().collect();
        for (i, &b) in rpo.iter().enumerate() {
            order.insert(b, i);
        }
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); rpo.len()];
        for (i, &b) in rpo.iter().enumerate() {
            for s in succs(b) {
                if let Some(&j) = order.get(&s) {
                    preds[j].push(i);
                }
            }
        }
        const UNDEF: usize = usize::MAX;
        let mut idom = vec![UNDEF; rpo.len()];
        idom[0] = 0;
        let intersect = |idom: &[usize], mut a: usize, mut b: usize| {
            while a != b {
                while a > b {
                    a = idom[a];
                }
                while b > a {
                    b = idom[b];
                }
            }
            a
        };
        let mut changed = true;
        while changed {
            changed = false;
            for i in 1..rpo.len() {
                let mut new = UNDEF;
                for &p in &preds[i] {
                    if idom[p] == UNDEF {
                        continue;
                    }
                    new = if new == UNDEF {
                        p
                    } else {
                        intersect(&idom, p, new)
                    };
                }
                if new != UNDEF && idom[i] != new {
                    idom[i] = new;
                    changed = true;
                }
            }
        }
        RegionDominance { order, idom, rpo }
    }

    /// The immediate dominator of `b`: `None` for the entry block and for
    /// a block the entry does not reach.
    pub fn immediate_dominator(&self, b: BlockId) -> Option<BlockId> {
        let &j = self.order.get(&b)?;
        (j != 0).then(|| self.rpo[self.idom[j]])
    }

    /// Whether the entry block reaches `b`.
    pub fn reachable(&self, b: BlockId) -> bool {
        self.order.contains_key(&b)
    }

    /// Whether block `a` dominates block `b` (every block dominates
    /// itself; every block dominates an unreachable one).
    pub fn dominates(&self, a: BlockId, b: BlockId) -> bool {
        let Some(&j) = self.order.get(&b) else {
            return true;
        };
        let Some(&i) = self.order.get(&a) else {
            return false;
        };
        let mut cur = j;
        loop {
            if cur == i {
                return true;
            }
            if cur == 0 {
                return false;
            }
            cur = self.idom[cur];
        }
    }
}

/// Dominator trees computed on demand, one per region.
#[derive(Default)]
pub struct DominanceCache {
    regions: HashMap<RegionId, RegionDominance>,
}

impl DominanceCache {
    /// Whether block `a` dominates block `b`; both in region `r`.
    pub fn dominates(&mut self, ctx: &Context, r: RegionId, a: BlockId, b: BlockId) -> bool {
        if a == b {
            return true;
        }
        self.regions
            .entry(r)
            .or_insert_with(|| RegionDominance::new(ctx, r))
            .dominates(a, b)
    }
}
