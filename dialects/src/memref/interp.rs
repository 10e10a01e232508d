//! Running the `memref` ops: a view is an allocation (a shared buffer of
//! run-time values), an offset, sizes and strides. Whatever MLIR leaves
//! undefined faults here with the op's location (see [`super`]).

use std::cell::RefCell;
use std::rc::Rc;

use smallvec::{smallvec, SmallVec};

use ir::interp::{Interp, MemRefValue, RtValue, RunError};
use ir::{Context, MemRefType, OpId};

use crate::arr::{Uninit, MAX_ALLOC};

type Res = Result<SmallVec<[RtValue; 2]>, RunError>;

/// Operand `v` of `op` as a memref; a located error where it is not one.
pub(super) fn view<'v>(
    ctx: &Context,
    op: OpId,
    v: &'v RtValue,
) -> Result<&'v MemRefValue, RunError> {
    match v {
        RtValue::Opaque(o) => o
            .downcast_ref::<MemRefValue>()
            .ok_or_else(|| RunError::at(ctx, op, "operand is not a memref")),
        _ => Err(RunError::at(ctx, op, "operand is not a memref")),
    }
}

/// `m` as a run-time value.
pub(super) fn wrap(m: MemRefValue) -> RtValue {
    RtValue::Opaque(Rc::new(m))
}

fn int(ctx: &Context, op: OpId, v: &RtValue) -> Result<i64, RunError> {
    v.as_int()
        .ok_or_else(|| RunError::at(ctx, op, "expected an integer operand"))
}

fn memref_ty(ctx: &Context, v: ir::ValueId) -> Option<&MemRefType> {
    ctx.ty(v).as_memref()
}

/// Checks that `m` has the static sizes, strides and offset of type `t`.
fn check_static(ctx: &Context, op: OpId, m: &MemRefValue, t: &MemRefType) -> Result<(), RunError> {
    let (strides, offset) = t.strides_and_offset();
    for (k, d) in t.shape.iter().enumerate() {
        if let Some(d) = d {
            if m.sizes[k] != *d as i64 {
                return Err(RunError::at(
                    ctx,
                    op,
                    format!(
                        "dimension {k} has size {}, but the type '{t}' says {d}",
                        m.sizes[k]
                    ),
                ));
            }
        }
    }
    // The stride of a dimension of size 1 or 0 is never used.
    for (k, s) in strides.iter().enumerate() {
        if let Some(s) = s {
            if m.strides[k] != *s && m.sizes[k] > 1 {
                return Err(RunError::at(
                    ctx,
                    op,
                    format!(
                        "dimension {k} has stride {}, but the type '{t}' says {s}",
                        m.strides[k]
                    ),
                ));
            }
        }
    }
    if let Some(o) = offset {
        if m.offset != o {
            return Err(RunError::at(
                ctx,
                op,
                format!(
                    "the view has offset {}, but the type '{t}' says {o}",
                    m.offset
                ),
            ));
        }
    }
    Ok(())
}

/// `memref.alloc` and `memref.alloca`: every element undefined until stored.
pub(super) fn alloc(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let ctx = it.ctx;
    let t = memref_ty(ctx, ctx.result(op, 0))
        .ok_or_else(|| RunError::at(ctx, op, "result is not a memref"))?;
    let mut dynamic = args.iter();
    let mut sizes = Vec::with_capacity(t.rank());
    for d in &t.shape {
        let n = match d {
            Some(n) => *n as i64,
            None => {
                let v = dynamic
                    .next()
                    .ok_or_else(|| RunError::at(ctx, op, "missing a size operand"))?;
                int(ctx, op, v)?
            }
        };
        if n < 0 {
            return Err(RunError::at(ctx, op, format!("negative size {n}")));
        }
        sizes.push(n);
    }
    let (strides, offset) = t.strides_and_offset();
    let (strides, offset) = match (
        strides.iter().copied().collect::<Option<Vec<i64>>>(),
        offset,
    ) {
        (Some(s), Some(o)) => (s, o),
        // Identity layouts with dynamic sizes: row-major strides.
        _ if t.layout.is_none() => (MemRefValue::row_major_strides(&sizes), 0),
        _ => return Err(RunError::at(ctx, op, "an allocated layout must be static")),
    };
    let too_large = || RunError::at(ctx, op, "the allocation is too large");
    // One past the last element the layout addresses.
    let mut extent: i64 = if sizes.contains(&0) { 0 } else { offset + 1 };
    if extent > 0 {
        for (n, s) in sizes.iter().zip(&strides) {
            extent = (n - 1)
                .checked_mul(*s)
                .and_then(|x| extent.checked_add(x))
                .ok_or_else(too_large)?;
        }
    }
    let data = uninit_buffer(ctx, op, extent)?;
    Ok(smallvec![wrap(MemRefValue {
        buf: Rc::new(RefCell::new(data)),
        offset,
        sizes,
        strides,
    })])
}

/// A new allocation of `n >= 0` elements, none stored yet (each reads as
/// [`Uninit`]); a located fault where `n` is above [`MAX_ALLOC`] or the
/// memory cannot be reserved.
pub(super) fn uninit_buffer(ctx: &Context, op: OpId, n: i64) -> Result<Vec<RtValue>, RunError> {
    let too_large = || RunError::at(ctx, op, "the allocation is too large");
    if n as u64 > MAX_ALLOC as u64 {
        return Err(too_large());
    }
    let mut data = Vec::new();
    data.try_reserve_exact(n as usize)
        .map_err(|_| too_large())?;
    data.resize(n as usize, RtValue::Opaque(Rc::new(Uninit)));
    Ok(data)
}

pub(super) fn dealloc(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let m = view(it.ctx, op, &args[0])?;
    let mut b = m
        .buf
        .try_borrow_mut()
        .map_err(|_| RunError::at(it.ctx, op, "memref is already borrowed"))?;
    if b.is_empty() && !m.sizes.contains(&0) {
        return Err(RunError::at(it.ctx, op, "memref is freed twice"));
    }
    *b = Vec::new();
    Ok(smallvec![])
}

/// The position in the allocation of element `idx` of `m`.
fn position(ctx: &Context, op: OpId, m: &MemRefValue, idx: &[RtValue]) -> Result<usize, RunError> {
    let mut pos = m.offset;
    for (k, v) in idx.iter().enumerate() {
        let i = int(ctx, op, v)?;
        if i < 0 || i >= m.sizes[k] {
            return Err(RunError::at(
                ctx,
                op,
                format!(
                    "index {i} is out of bounds for dimension {k} of size {}",
                    m.sizes[k]
                ),
            ));
        }
        pos += i * m.strides[k];
    }
    let len = m.buf.borrow().len();
    if pos < 0 || pos as usize >= len {
        return Err(RunError::at(
            ctx,
            op,
            "accesses memory outside its allocation (freed by 'memref.dealloc'?)",
        ));
    }
    Ok(pos as usize)
}

pub(super) fn load(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let ctx = it.ctx;
    let m = view(ctx, op, &args[0])?;
    let pos = position(ctx, op, m, &args[1..])?;
    let v = m.buf.borrow()[pos].clone();
    if matches!(&v, RtValue::Opaque(o) if o.is::<Uninit>()) {
        return Err(RunError::at(ctx, op, "reads an element never stored"));
    }
    Ok(smallvec![v])
}

pub(super) fn store(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let ctx = it.ctx;
    let m = view(ctx, op, &args[1])?;
    let pos = position(ctx, op, m, &args[2..])?;
    m.buf
        .try_borrow_mut()
        .map_err(|_| RunError::at(ctx, op, "memref is already borrowed"))?[pos] = args[0].clone();
    Ok(smallvec![])
}

pub(super) fn dim(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let ctx = it.ctx;
    let m = view(ctx, op, &args[0])?;
    let c = int(ctx, op, &args[1])?;
    match usize::try_from(c).ok().and_then(|c| m.sizes.get(c)) {
        Some(&n) => Ok(smallvec![RtValue::Int(n)]),
        None => Err(RunError::at(
            ctx,
            op,
            format!("dimension {c} is out of range for rank {}", m.sizes.len()),
        )),
    }
}

pub(super) fn cast(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let ctx = it.ctx;
    let m = view(ctx, op, &args[0])?;
    let t = memref_ty(ctx, ctx.result(op, 0))
        .ok_or_else(|| RunError::at(ctx, op, "result is not a memref"))?;
    check_static(ctx, op, m, t)?;
    Ok(smallvec![args[0].clone()])
}

/// `memref.subview`: offsets, sizes and strides, each a list of the rank;
/// the dimensions `drop` marks are left out of the result.
pub(super) fn subview_of(
    ctx: &Context,
    op: OpId,
    src: &RtValue,
    parts: [Vec<i64>; 3],
    drop: &[bool],
) -> Result<RtValue, RunError> {
    let m = view(ctx, op, src)?;
    let [offs, sizes, steps] = parts;
    let mut offset = m.offset;
    let mut strides = Vec::with_capacity(sizes.len());
    let overflow = || RunError::at(ctx, op, "the subview's offset or strides overflow");
    for k in 0..sizes.len() {
        let (o, n, t) = (offs[k], sizes[k], steps[k]);
        let last = (n - 1).checked_mul(t).and_then(|x| x.checked_add(o));
        if o < 0 || n < 0 || t < 0 || (n > 0 && last.is_none_or(|l| l >= m.sizes[k])) {
            return Err(RunError::at(
                ctx,
                op,
                format!(
                    "the subview [offset {o}, size {n}, stride {t}] of dimension {k} is outside its size {}",
                    m.sizes[k]
                ),
            ));
        }
        offset = o
            .checked_mul(m.strides[k])
            .and_then(|x| offset.checked_add(x))
            .ok_or_else(overflow)?;
        strides.push(t.checked_mul(m.strides[k]).ok_or_else(overflow)?);
    }
    // A rank-reducing subview leaves out its dimensions of size 1.
    let keep = |k: &usize| !drop.get(*k).copied().unwrap_or(false);
    let out = MemRefValue {
        buf: m.buf.clone(),
        offset,
        sizes: (0..sizes.len()).filter(keep).map(|k| sizes[k]).collect(),
        strides: (0..strides.len())
            .filter(keep)
            .map(|k| strides[k])
            .collect(),
    };
    view_result(ctx, op, out)
}

/// `memref.reinterpret_cast`: the view of `src`'s allocation with offset
/// `parts[0][0]`, sizes `parts[1]` and strides `parts[2]`, which must lie
/// inside the allocation where it is not empty.
pub(super) fn reinterpret_of(
    ctx: &Context,
    op: OpId,
    src: &RtValue,
    parts: [Vec<i64>; 3],
) -> Result<RtValue, RunError> {
    let m = view(ctx, op, src)?;
    let [offs, sizes, strides] = parts;
    let offset = offs[0];
    if offset < 0 || sizes.iter().chain(&strides).any(|&x| x < 0) {
        return Err(RunError::at(
            ctx,
            op,
            format!("the view [offset {offset}, sizes {sizes:?}, strides {strides:?}] has a negative entry"),
        ));
    }
    let len = m.buf.borrow().len() as i64;
    if !sizes.contains(&0) {
        let last = sizes
            .iter()
            .zip(&strides)
            .try_fold(offset, |acc, (&n, &t)| {
                (n - 1).checked_mul(t).and_then(|x| acc.checked_add(x))
            });
        if last.is_none_or(|l| l >= len) {
            return Err(RunError::at(
                ctx,
                op,
                format!("the view [offset {offset}, sizes {sizes:?}, strides {strides:?}] reaches outside its allocation of {len} elements"),
            ));
        }
    }
    let out = MemRefValue {
        buf: m.buf.clone(),
        offset,
        sizes,
        strides,
    };
    view_result(ctx, op, out)
}

/// `memref.collapse_shape` of `src` by `groups` ([`super::collapse`]):
/// faults where a group of the run-time view is not contiguous (an empty
/// view always is).
pub(super) fn collapse_of(
    ctx: &Context,
    op: OpId,
    src: &RtValue,
    groups: &[Vec<usize>],
) -> Result<RtValue, RunError> {
    let m = view(ctx, op, src)?;
    let mut sizes = Vec::new();
    let mut strides = Vec::new();
    let empty = m.sizes.contains(&0);
    for (r, g) in groups.iter().enumerate() {
        let gs: Vec<Option<u64>> = g.iter().map(|&d| u64::try_from(m.sizes[d]).ok()).collect();
        let base = m.strides[g[super::collapse::stride_dim(&gs)]];
        let size: i64 = g.iter().map(|&d| m.sizes[d]).product();
        if !empty {
            let mut after = 1i64;
            for &d in g.iter().rev() {
                if m.sizes[d] != 1 && base.checked_mul(after) != Some(m.strides[d]) {
                    return Err(RunError::at(
                        ctx,
                        op,
                        format!(
                            "group {r} of the view (sizes {:?}, strides {:?}) is not contiguous",
                            m.sizes, m.strides
                        ),
                    ));
                }
                after = after.saturating_mul(m.sizes[d]);
            }
        }
        sizes.push(size);
        strides.push(base);
    }
    let out = MemRefValue {
        buf: m.buf.clone(),
        offset: m.offset,
        sizes,
        strides,
    };
    view_result(ctx, op, out)
}

/// `memref.expand_shape` of `src` by `groups` ([`super::expand`]), with
/// the `given` result sizes (newer MLIR's `output_shape`) or, where none,
/// the result type's static sizes and each group's one dynamic size
/// inferred. Faults where a group's sizes do not multiply to its source
/// dimension's size (or a size cannot be inferred).
pub(super) fn expand_of(
    ctx: &Context,
    op: OpId,
    src: &RtValue,
    groups: &[Vec<usize>],
    given: Option<&[i64]>,
) -> Result<RtValue, RunError> {
    let m = view(ctx, op, src)?;
    let t = memref_ty(ctx, ctx.result(op, 0))
        .ok_or_else(|| RunError::at(ctx, op, "result is not a memref"))?;
    let rank = t.rank();
    let mut sizes = vec![1i64; rank];
    let mut strides = vec![1i64; rank];
    for (r, g) in groups.iter().enumerate() {
        let n = m.sizes[r];
        let mut gs: Vec<i64> = Vec::new();
        for &d in g {
            gs.push(match (given, t.shape[d]) {
                (Some(l), _) => l[d],
                (None, Some(s)) => i64::try_from(s).unwrap_or(i64::MAX),
                (None, None) => {
                    // The one dynamic size of the group: the rest divides n.
                    let rest = g.iter().filter_map(|&e| t.shape[e]).try_fold(1i64, |a, s| {
                        i64::try_from(s).ok().and_then(|s| a.checked_mul(s))
                    });
                    match rest {
                        Some(p) if p != 0 && n % p == 0 => n / p,
                        _ => {
                            return Err(RunError::at(
                                ctx,
                                op,
                                format!(
                                    "group {r}'s static sizes do not divide the source's size {n}"
                                ),
                            ))
                        }
                    }
                }
            });
        }
        let product = gs
            .iter()
            .try_fold(1i64, |a, &s| if s < 0 { None } else { a.checked_mul(s) });
        if product != Some(n) {
            return Err(RunError::at(
                ctx,
                op,
                format!("the sizes {gs:?} of group {r} do not multiply to the source's size {n}"),
            ));
        }
        let mut s = m.strides[r];
        for (k, &d) in g.iter().enumerate().rev() {
            sizes[d] = gs[k];
            strides[d] = s;
            s = s.saturating_mul(gs[k]);
        }
    }
    let out = MemRefValue {
        buf: m.buf.clone(),
        offset: m.offset,
        sizes,
        strides,
    };
    view_result(ctx, op, out)
}

/// The view `out` as the result of `op`, checked against the static
/// sizes, strides and offset of its type.
fn view_result(ctx: &Context, op: OpId, out: MemRefValue) -> Result<RtValue, RunError> {
    let t = memref_ty(ctx, ctx.result(op, 0))
        .ok_or_else(|| RunError::at(ctx, op, "result is not a memref"))?;
    check_static(ctx, op, &out, t)?;
    Ok(wrap(out))
}

pub(super) fn copy(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let ctx = it.ctx;
    let (a, b) = (view(ctx, op, &args[0])?, view(ctx, op, &args[1])?);
    if a.sizes != b.sizes {
        return Err(RunError::at(
            ctx,
            op,
            format!(
                "source of sizes {:?} and target of sizes {:?} differ",
                a.sizes, b.sizes
            ),
        ));
    }
    // Read everything first: the views may overlap.
    let mut vals = Vec::new();
    let mut idx = vec![0i64; a.sizes.len()];
    let total: i64 = a.sizes.iter().product();
    for _ in 0..total {
        let at: Vec<RtValue> = idx.iter().map(|&i| RtValue::Int(i)).collect();
        let v = a.buf.borrow()[position(ctx, op, a, &at)?].clone();
        if matches!(&v, RtValue::Opaque(o) if o.is::<Uninit>()) {
            return Err(RunError::at(ctx, op, "reads an element never stored"));
        }
        vals.push((position(ctx, op, b, &at)?, v));
        for k in (0..idx.len()).rev() {
            idx[k] += 1;
            if idx[k] < a.sizes[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    let mut buf = b
        .buf
        .try_borrow_mut()
        .map_err(|_| RunError::at(ctx, op, "memref is already borrowed"))?;
    for (p, v) in vals {
        buf[p] = v;
    }
    Ok(smallvec![])
}
