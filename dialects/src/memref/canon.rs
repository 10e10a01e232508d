//! Canonicalization of the `memref` ops (MLIR's folds and patterns of the
//! same names; see [`super`]).

use std::rc::Rc;

use smallvec::{smallvec, SmallVec};

use ir::spec::{FoldResult, OpState};
use ir::{Attribute, Builder, Context, MemRefType, OpId, Type, ValueId};

use super::subview::{mixed, Mixed};
use crate::arith::fold::constant_int;

/// Whether every size, stride and offset that `b` states statically `a`
/// states too (then a cast from `a` to `b` checks nothing).
pub fn at_least_as_static(a: &MemRefType, b: &MemRefType) -> bool {
    let (sa, oa) = a.strides_and_offset();
    let (sb, ob) = b.strides_and_offset();
    let covers = |x: &Option<i64>, y: &Option<i64>| y.is_none() || x.is_some();
    a.shape
        .iter()
        .zip(&b.shape)
        .all(|(x, y)| y.is_none() || x.is_some())
        && sa.iter().zip(&sb).all(|(x, y)| covers(x, y))
        && covers(&oa, &ob)
}

/// The source of `v` if `v` is a `memref.cast` from a type at least as
/// static as its result (MLIR's `canFoldIntoConsumerOp`): a consumer may
/// use the source instead.
pub fn cast_source(ctx: &Context, v: ValueId) -> Option<ValueId> {
    let d = ctx.def_op(v)?;
    if !ctx.is(d, "memref.cast") {
        return None;
    }
    let src = ctx.operand(d, 0);
    let (a, b) = (ctx.ty(src).as_memref()?, ctx.ty(v).as_memref()?);
    at_least_as_static(a, b).then_some(src)
}

/// A `load`, `store`, `dealloc`, `copy` or `cast` of a cast from a more
/// static type uses the cast's source instead.
pub(super) fn through_cast(b: &mut Builder, st: &OpState) -> Option<SmallVec<[ValueId; 2]>> {
    let ctx = &*b.ctx;
    let mut ns = st.clone();
    let mut changed = false;
    for v in ns.operands.iter_mut() {
        if let Some(s) = cast_source(ctx, *v) {
            *v = s;
            changed = true;
        }
    }
    if !changed {
        return None;
    }
    ns.existing = None;
    Some(b.create(ns))
}

/// A copy of a memref onto itself, or of no elements (a static size 0 in
/// either type), does nothing: it is erased (MLIR's `FoldSelfCopy` and
/// `FoldEmptyCopy`). Copies between views of different sizes are
/// undefined, so an empty one need not fault.
pub(super) fn erase_noop_copy(b: &mut Builder, st: &OpState) -> Option<SmallVec<[ValueId; 2]>> {
    let ctx = &*b.ctx;
    let (from, to) = (*st.operands.first()?, *st.operands.get(1)?);
    let empty = |v: ValueId| {
        ctx.ty(v)
            .as_memref()
            .is_some_and(|m| m.shape.contains(&Some(0)))
    };
    (from == to || empty(from) || empty(to)).then(SmallVec::new)
}

/// An identity cast is its operand.
pub(super) fn fold_cast(ctx: &Context, st: &OpState) -> Option<SmallVec<[FoldResult; 1]>> {
    let src = *st.operands.first()?;
    (ctx.ty(src) == st.result_types.first()?).then(|| smallvec![FoldResult::Value(src)])
}

/// `memref.dim` of a static size is that size.
pub(super) fn fold_dim(ctx: &Context, st: &OpState) -> Option<SmallVec<[FoldResult; 1]>> {
    let m = ctx.ty(*st.operands.first()?).as_memref()?;
    let c = usize::try_from(constant_int(ctx, *st.operands.get(1)?)?).ok()?;
    let n = (*m.shape.get(c)?)?;
    Some(smallvec![FoldResult::Constant(Attribute::int(
        n as i64,
        Type::Index
    ))])
}

/// The position among the dynamic sizes of dimension `c` of `m`.
fn dynamic_position(m: &MemRefType, c: usize) -> Option<usize> {
    m.shape.get(c)?.is_none().then_some(())?;
    Some(m.shape[..c].iter().filter(|d| d.is_none()).count())
}

/// Size `k` of memref `m` where it is known: the static size of its type,
/// or the operand that gives it to the op defining `m` (an allocation's
/// size operand, a `subview`'s or `reinterpret_cast`'s size entry, an
/// `expand_shape`'s `output_shape` entry).
pub(super) fn size_of(ctx: &Context, m: ValueId, k: usize) -> Option<Mixed> {
    let t = ctx.ty(m).as_memref()?;
    if let Some(n) = *t.shape.get(k)? {
        return Some(Mixed::Static(i64::try_from(n).ok()?));
    }
    let d = ctx.def_op(m)?;
    match ctx.op_name(d) {
        "memref.alloc" | "memref.alloca" => Some(Mixed::Dynamic(
            *ctx.operands(d).get(dynamic_position(t, k)?)?,
        )),
        "memref.reinterpret_cast" => mixed(ctx, d)?[1].get(k).copied(),
        "memref.subview" => mixed(ctx, d)?[1].get(kept_dim(ctx, d, k)?).copied(),
        "memref.expand_shape" => super::expand::output_shape(ctx, d)??.get(k).copied(),
        _ => None,
    }
}

/// `memref.dim` of a size the defining op gives ([`size_of`]) is that
/// size; of a cast, the dim of the cast's source.
pub(super) fn dim_of_definition(b: &mut Builder, st: &OpState) -> Option<SmallVec<[ValueId; 2]>> {
    let ctx = &*b.ctx;
    let (m, c) = (*st.operands.first()?, *st.operands.get(1)?);
    let k = usize::try_from(constant_int(ctx, c)?).ok()?;
    let d = ctx.def_op(m)?;
    if ctx.is(d, "memref.cast") {
        let src = ctx.operand(d, 0);
        return Some(smallvec![b.op1(
            "memref.dim",
            &[src, c],
            Type::Index,
            vec![]
        )]);
    }
    match size_of(ctx, m, k)? {
        Mixed::Dynamic(v) => Some(smallvec![v]),
        Mixed::Static(n) => Some(smallvec![crate::arith::const_int(b, n, &Type::Index)]),
    }
}

/// The source dimension of subview `op` that its result's dimension `k`
/// is (a rank-reducing subview drops some).
fn kept_dim(ctx: &Context, op: OpId, k: usize) -> Option<usize> {
    let drop = super::subview::drop_mask(ctx, op)?;
    (0..drop.len()).filter(|&j| !drop[j]).nth(k)
}

/// Whether use `i` of `user` only writes into or frees the memref.
fn write_only_use(ctx: &Context, user: OpId, i: usize) -> bool {
    (ctx.is(user, "memref.dealloc") && i == 0) || (ctx.is(user, "memref.store") && i == 1)
}

/// An allocation that is only stored into and freed, directly or through
/// casts and subviews of it, is erased with all those ops (MLIR's
/// `SimplifyDeadAlloc`; the views only add checks of a program whose
/// stores nothing reads).
pub(super) fn dead_alloc(b: &mut Builder, st: &OpState) -> Option<SmallVec<[ValueId; 2]>> {
    erase_dead_alloc(b.ctx, st.existing?).then(SmallVec::new)
}

/// [`dead_alloc`] tried from a cast or subview: on the allocation it views
/// (whose own visit came too early when a use of the view folded later).
pub(super) fn dead_alloc_of_view(b: &mut Builder, st: &OpState) -> Option<SmallVec<[ValueId; 2]>> {
    // Only on existing IR: a view being built has no uses yet, so its
    // allocation would look dead.
    st.existing?;
    let mut v = *st.operands.first()?;
    loop {
        let d = b.ctx.def_op(v)?;
        match b.ctx.op_name(d) {
            n if super::is_view(n) => v = b.ctx.operand(d, 0),
            "memref.alloc" | "memref.alloca" => {
                return erase_dead_alloc(b.ctx, d).then(SmallVec::new)
            }
            _ => return None,
        }
    }
}

/// Erases allocation `op` with its views, stores and deallocs if that is
/// all that uses it; returns whether it did.
fn erase_dead_alloc(ctx: &mut Context, op: OpId) -> bool {
    let b = ctx;
    // The views of the allocation and the ops that use them.
    let mut values = vec![b.result(op, 0)];
    let mut users: Vec<OpId> = Vec::new();
    let mut k = 0;
    while k < values.len() {
        let v = values[k];
        k += 1;
        for u in b.uses(v) {
            let view = super::is_view(b.op_name(u.op)) && u.index == 0;
            if view {
                values.push(b.result(u.op, 0));
            } else if !write_only_use(b, u.op, u.index as usize) {
                return false;
            }
            users.push(u.op);
        }
    }
    let mut operands = Vec::new();
    // Views come before their users in `users`: erase from the back.
    for &u in users.iter().rev() {
        operands.extend_from_slice(b.operands(u));
        b.erase_op(u);
    }
    operands.extend_from_slice(b.operands(op));
    b.erase_op(op);
    // The driver revisits only the allocation's own operands: erase what
    // the erased users left dead (the stored values and indices).
    while let Some(v) = operands.pop() {
        let Some(d) = b.def_op(v) else { continue };
        if b.alive(d) && ir::rewrite::is_trivially_dead(b, d) {
            operands.extend_from_slice(b.operands(d));
            b.erase_op(d);
        }
    }
    true
}

/// Constant dynamic sizes of an allocation become static ones, with a cast
/// back to the old type (MLIR's `SimplifyAllocConst`).
pub(super) fn constant_alloc_sizes(
    b: &mut Builder,
    st: &OpState,
) -> Option<SmallVec<[ValueId; 2]>> {
    let ctx = &*b.ctx;
    let old = st.result_types.first()?.as_memref()?.clone();
    let mut dynamic = st.operands.iter();
    let mut shape = Vec::new();
    let mut keep = Vec::new();
    let mut changed = false;
    for d in &old.shape {
        match d {
            Some(n) => shape.push(Some(*n)),
            None => {
                let v = *dynamic.next()?;
                match constant_int(ctx, v).and_then(|c| u64::try_from(c).ok()) {
                    Some(c) => {
                        shape.push(Some(c));
                        changed = true;
                    }
                    None => {
                        shape.push(None);
                        keep.push(v);
                    }
                }
            }
        }
    }
    if !changed {
        return None;
    }
    let new_ty = Type::memref(shape, old.elem.clone(), old.layout.clone());
    let name = ctx.registry().spec(st.kind).name;
    let v = b.op1(name, &keep, new_ty, st.attrs.clone());
    let old_ty = Type::MemRef(Rc::new(old));
    Some(smallvec![b.op1("memref.cast", &[v], old_ty, vec![])])
}
