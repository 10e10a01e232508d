//! The builder: creates operations at an insertion point. Creation through
//! [`Builder::create`] is *smart* (LMS, Rompf et al. POPL'13 §3): the op's
//! fold and rewrites run first, so nothing is built that a rewrite would
//! change, and a pure region-free op is hash-consed: an identical op already
//! visible from the insertion point (in the same block before it, or in an
//! enclosing block) is returned instead of a new one (global value numbering
//! at construction time).

use std::hash::{Hash, Hasher};

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::attributes::Attribute;
use crate::context::{BlockId, Context, Loc, OpId, RegionId, ValueId};
use crate::spec::{FoldResult, OpKind, OpState, Traits};
use crate::types::Type;

/// The hash-consing key of a pure op: kind, operands (sorted for commutative
/// ops), attributes and result types.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct GvnKey {
    pub kind: OpKind,
    pub operands: SmallVec<[ValueId; 4]>,
    pub attrs: Vec<(String, Attribute)>,
    pub types: SmallVec<[Type; 2]>,
}

impl Hash for GvnKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.kind.hash(state);
        self.operands.hash(state);
        for (k, a) in &self.attrs {
            k.hash(state);
            a.hash(state);
        }
        self.types.hash(state);
    }
}

impl GvnKey {
    /// The key of `state`, normalizing commutative operands by id.
    pub fn of(ctx: &Context, state: &OpState) -> GvnKey {
        let mut operands = state.operands.clone();
        if ctx
            .registry()
            .spec(state.kind)
            .traits
            .contains(Traits::COMMUTATIVE)
        {
            operands.sort();
        }
        GvnKey {
            kind: state.kind,
            operands,
            attrs: state.attrs.clone(),
            types: state.result_types.clone(),
        }
    }
}

/// Map from hash-consing keys to the op that first had the key.
pub type GvnTable = FxHashMap<GvnKey, OpId>;

/// Whether `op` (which must be in a block) dominates the insertion point
/// "in `block`, before `before` (or at the end)": it sits earlier in the same
/// block or in an enclosing block, without crossing an isolated-from-above op.
pub fn dominates_point(ctx: &Context, op: OpId, block: BlockId, before: Option<OpId>) -> bool {
    dominates_point_anchored(ctx, op, block, before, &[])
}

/// [`dominates_point`] where some blocks are still detached (a region being
/// built for an op not created yet): `anchors` maps such a block to the
/// insertion point where its op will be created, and the walk continues
/// from there.
pub fn dominates_point_anchored(
    ctx: &Context,
    op: OpId,
    block: BlockId,
    before: Option<OpId>,
    anchors: &[Anchor],
) -> bool {
    let Some(target) = ctx.op(op).parent else {
        return false;
    };
    let mut b = block;
    let mut pos = before;
    loop {
        if b == target {
            return match pos {
                None => true,
                Some(p) => ctx.is_before_in_block(op, p),
            };
        }
        let Some(parent) = ctx.block_parent_op(b) else {
            match anchors.iter().rev().find(|a| a.block == b) {
                Some(a) => {
                    b = a.at_block;
                    pos = a.at_before;
                    continue;
                }
                None => return false,
            }
        };
        if ctx.has_traits(parent, Traits::ISOLATED_FROM_ABOVE) {
            return false;
        }
        pos = Some(parent);
        match ctx.op(parent).parent {
            Some(pb) => b = pb,
            None => return false,
        }
    }
}

/// A detached block being built by [`Builder::build_region`], and the
/// insertion point where the op owning its region will be created.
#[derive(Copy, Clone, Debug)]
pub struct Anchor {
    pub block: BlockId,
    pub at_block: BlockId,
    pub at_before: Option<OpId>,
}

/// Creates ops at an insertion point: the end of a block, or before an op.
pub struct Builder<'a> {
    pub ctx: &'a mut Context,
    block: BlockId,
    before: Option<OpId>,
    /// Location given to ops created without one.
    pub loc: Loc,
    /// Apply folds, rewrites and hash-consing in [`Builder::create`] (default on).
    pub smart: bool,
    /// Regions under construction (innermost last).
    anchors: Vec<Anchor>,
}

impl<'a> Builder<'a> {
    /// A builder appending to `block`.
    pub fn at_end(ctx: &'a mut Context, block: BlockId) -> Builder<'a> {
        Builder {
            ctx,
            block,
            before: None,
            loc: Loc::UNKNOWN,
            smart: true,
            anchors: Vec::new(),
        }
    }
    /// A builder inserting before `op` (which must be in a block).
    pub fn before(ctx: &'a mut Context, op: OpId) -> Builder<'a> {
        let block = ctx
            .op(op)
            .parent
            .expect("insertion point op is not in a block");
        let loc = ctx.loc(op);
        Builder {
            ctx,
            block,
            before: Some(op),
            loc,
            smart: true,
            anchors: Vec::new(),
        }
    }
    /// A builder inserting right after `op` (which must be in a block), with
    /// `op`'s location.
    pub fn after(ctx: &'a mut Context, op: OpId) -> Builder<'a> {
        let loc = ctx.loc(op);
        let mut b = match ctx.op(op).next {
            Some(next) => Builder::before(ctx, next),
            None => {
                let block = ctx.op(op).parent.expect("op is not in a block");
                Builder::at_end(ctx, block)
            }
        };
        b.loc = loc;
        b
    }
    /// Moves the insertion point to the end of `block`.
    pub fn set_end(&mut self, block: BlockId) {
        self.block = block;
        self.before = None;
    }
    /// Moves the insertion point to just before `op`.
    pub fn set_before(&mut self, op: OpId) {
        self.block = self.ctx.op(op).parent.expect("op is not in a block");
        self.before = Some(op);
    }
    /// The insertion point `(block, before)`.
    pub fn insertion_point(&self) -> (BlockId, Option<OpId>) {
        (self.block, self.before)
    }
    /// Restores an insertion point from [`Builder::insertion_point`].
    pub fn restore(&mut self, ip: (BlockId, Option<OpId>)) {
        self.block = ip.0;
        self.before = ip.1;
    }

    /// A state for op `name` (which must be registered) at the builder's location.
    pub fn state(
        &self,
        name: &str,
        operands: &[ValueId],
        result_types: &[Type],
        attrs: Vec<(String, Attribute)>,
    ) -> OpState {
        OpState {
            kind: self.ctx.registry().expect_kind(name),
            operands: SmallVec::from_slice(operands),
            result_types: result_types.iter().cloned().collect(),
            attrs,
            regions: SmallVec::new(),
            successors: Default::default(),
            loc: self.loc,
            existing: None,
        }
    }

    /// Smart-creates op `name` and returns its result values (or the values
    /// a fold or rewrite produced instead). Panics if no dialect registers
    /// `name` (a bug in the caller): for names that come from input, use
    /// [`Builder::try_op`].
    pub fn op(
        &mut self,
        name: &str,
        operands: &[ValueId],
        result_types: &[Type],
        attrs: Vec<(String, Attribute)>,
    ) -> SmallVec<[ValueId; 2]> {
        let st = self.state(name, operands, result_types, attrs);
        self.create(st)
    }
    /// [`Builder::op`] for a single-result op.
    pub fn op1(
        &mut self,
        name: &str,
        operands: &[ValueId],
        ty: Type,
        attrs: Vec<(String, Attribute)>,
    ) -> ValueId {
        self.op(name, operands, &[ty], attrs)[0]
    }
    /// Smart-creates op `name` with regions; returns its results.
    pub fn op_with_regions(
        &mut self,
        name: &str,
        operands: &[ValueId],
        result_types: &[Type],
        attrs: Vec<(String, Attribute)>,
        regions: &[RegionId],
    ) -> SmallVec<[ValueId; 2]> {
        let mut st = self.state(name, operands, result_types, attrs);
        st.regions = SmallVec::from_slice(regions);
        self.create(st)
    }

    /// [`Builder::op_with_regions`] for an op name that may not be
    /// registered (e.g. one a plugin or a user names at run time): an
    /// unknown name, or operand, result or region counts the op's spec does
    /// not allow, is an error at the builder's location instead of a panic.
    /// (`op`, `op1` and `op_with_regions` take names the caller's own code
    /// registers, and panic on a bug there.)
    pub fn try_op_with_regions(
        &mut self,
        name: &str,
        operands: &[ValueId],
        result_types: &[Type],
        attrs: Vec<(String, Attribute)>,
        regions: &[RegionId],
    ) -> Result<SmallVec<[ValueId; 2]>, crate::diag::Diagnostic> {
        let err = |m: String| crate::diag::Diagnostic::error(self.loc, m);
        let Some(kind) = self.ctx.registry().kind(name) else {
            return Err(err(format!(
                "cannot build '{name}': no dialect registers this op"
            )));
        };
        let spec = self.ctx.registry().spec(kind);
        for (what, arity, n) in [
            ("operands", spec.operands, operands.len()),
            ("results", spec.results, result_types.len()),
            ("regions", spec.regions, regions.len()),
        ] {
            if !arity.allows(n) {
                return Err(err(format!(
                    "cannot build '{name}' with {n} {what} (expected {arity:?})"
                )));
            }
        }
        Ok(self.op_with_regions(name, operands, result_types, attrs, regions))
    }
    /// [`Builder::try_op_with_regions`] without regions.
    pub fn try_op(
        &mut self,
        name: &str,
        operands: &[ValueId],
        result_types: &[Type],
        attrs: Vec<(String, Attribute)>,
    ) -> Result<SmallVec<[ValueId; 2]>, crate::diag::Diagnostic> {
        self.try_op_with_regions(name, operands, result_types, attrs, &[])
    }
    /// [`Builder::try_op`] for a single-result op.
    pub fn try_op1(
        &mut self,
        name: &str,
        operands: &[ValueId],
        ty: Type,
        attrs: Vec<(String, Attribute)>,
    ) -> Result<ValueId, crate::diag::Diagnostic> {
        Ok(self.try_op(name, operands, &[ty], attrs)?[0])
    }

    /// The constant `attr` of type `ty`, through the registry's materializer.
    pub fn constant(&mut self, attr: Attribute, ty: &Type) -> ValueId {
        let f = self
            .ctx
            .registry()
            .materialize
            .expect("no constant materializer registered");
        f(self, &attr, ty).expect("constant cannot be materialized")
    }

    /// Creates the op without folding, rewriting or hash-consing, inserts it
    /// at the insertion point and returns it.
    pub fn create_raw(&mut self, st: OpState) -> OpId {
        let op = self.ctx.create_op(
            st.kind,
            &st.operands,
            &st.result_types,
            st.attrs,
            &st.regions,
            st.loc,
        );
        if !st.successors.is_empty() {
            self.ctx.set_successors(op, &st.successors);
        }
        self.ctx.insert_op(op, self.block, self.before);
        op
    }

    /// Smart construction: fold, then rewrites, then hash-consing, then
    /// insertion. Returns one value per result of `st`.
    pub fn create(&mut self, st: OpState) -> SmallVec<[ValueId; 2]> {
        if self.smart {
            if let Some(vals) = self.try_simplify(&st) {
                for &r in &st.regions {
                    self.ctx.erase_region(r);
                }
                return vals;
            }
        }
        let spec_traits = self.ctx.registry().spec(st.kind).traits;
        // Terminators (a branch names its successors, which the key does
        // not hold) are never shared.
        let gvn = self.smart
            && spec_traits.contains(Traits::PURE)
            && !spec_traits.contains(Traits::TERMINATOR)
            && st.regions.is_empty()
            && st.successors.is_empty();
        let key = gvn.then(|| GvnKey::of(self.ctx, &st));
        if let Some(key) = &key {
            if let Some(&found) = self.ctx.gvn.get(key) {
                let visible = self.ctx.alive(found)
                    && dominates_point_anchored(
                        self.ctx,
                        found,
                        self.block,
                        self.before,
                        &self.anchors,
                    )
                    && GvnKey::of(self.ctx, &OpState::of(self.ctx, found)) == *key;
                if visible {
                    return SmallVec::from_slice(self.ctx.results(found));
                }
            }
        }
        let op = self.create_raw(st);
        if let Some(key) = key {
            self.ctx.gvn.insert(key, op);
        }
        SmallVec::from_slice(self.ctx.results(op))
    }

    /// Applies `st`'s fold, then its rewrites; returns replacement values if
    /// one applied. Constants produced by a fold are materialized here.
    pub fn try_simplify(&mut self, st: &OpState) -> Option<SmallVec<[ValueId; 2]>> {
        let spec = self.ctx.registry().spec(st.kind);
        let traits = spec.traits;
        let fold = spec.fold;
        let rewrites = spec.rewrites.clone();
        if let (Some(fold), false) = (fold, traits.contains(Traits::CONSTANT_LIKE)) {
            if let Some(results) = fold(self.ctx, st) {
                if let Some(vals) = self.materialize_fold(st, &results) {
                    return Some(vals);
                }
            }
        }
        for rw in rewrites {
            if let Some(vals) = rw(self, st) {
                return Some(vals);
            }
        }
        None
    }

    /// Turns fold results into values, materializing constants.
    pub fn materialize_fold(
        &mut self,
        st: &OpState,
        results: &[FoldResult],
    ) -> Option<SmallVec<[ValueId; 2]>> {
        let mut vals = SmallVec::new();
        let saved = self.loc;
        self.loc = st.loc;
        for (r, ty) in results.iter().zip(st.result_types.iter()) {
            match r {
                FoldResult::Value(v) => vals.push(*v),
                FoldResult::Constant(a) => {
                    let f = self.ctx.registry().materialize?;
                    let v = f(self, a, ty)?;
                    vals.push(v);
                }
            }
        }
        self.loc = saved;
        Some(vals)
    }

    /// Builds a detached single-block region with arguments of `arg_types`;
    /// `body` fills it (the insertion point is the new block's end meanwhile).
    pub fn build_region(
        &mut self,
        arg_types: &[Type],
        body: impl FnOnce(&mut Builder, &[ValueId]),
    ) -> RegionId {
        let (r, b) = self.ctx.new_region_with_block(arg_types);
        let saved = self.insertion_point();
        self.anchors.push(Anchor {
            block: b,
            at_block: saved.0,
            at_before: saved.1,
        });
        self.set_end(b);
        let args = self.ctx.block_args(b).to_vec();
        body(self, &args);
        self.restore(saved);
        self.anchors.pop();
        r
    }
}

/// Registers every existing op of `kinds` (usually constants) nested under the
/// module in the hash-consing table, so smart construction reuses them.
pub fn seed_gvn(ctx: &mut Context, pred: impl Fn(&Context, OpId) -> bool) {
    for op in ctx.walk_all() {
        let spec = ctx.spec(op);
        if spec.is_pure() && ctx.regions(op).is_empty() && pred(ctx, op) {
            let key = GvnKey::of(ctx, &OpState::of(ctx, op));
            ctx.gvn.entry(key).or_insert(op);
        }
    }
}

/// Forgets every hash-consing entry (after large rewrites such as CSE).
pub fn clear_gvn(ctx: &mut Context) {
    ctx.gvn.clear();
}
