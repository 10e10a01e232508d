//! `memref.subview`: a strided window of a memref (MLIR's op).
//!
//! ```text
//! %v = memref.subview %m[%i, 0] [4, %n] [1, 2]
//!     : memref<?x?xf32> to memref<4x?xf32, strided<[?, ?], offset: ?>>
//! ```
//!
//! Each of the offsets, sizes and strides lists has one entry per
//! dimension, a constant or an `index` operand. The IR keeps MLIR's
//! representation: the attributes `static_offsets`, `static_sizes` and
//! `static_strides` hold the constants, with [`DYNAMIC`] where the entry
//! is an operand; the operands are the source, then the dynamic offsets,
//! sizes and strides in that order. Dimension `k` of the result starts at
//! `offsets[k]` of the source and takes `sizes[k]` elements `strides[k]`
//! apart; the result's layout has offset `o + sum(offsets[k] * s[k])` and
//! strides `strides[k] * s[k]`, for the source's offset `o` and strides
//! `s`.
//!
//! A result of lower rank drops dimensions of static size 1 (a
//! rank-reducing subview, MLIR's): `memref.subview %m[%i, 0] [1, 4] [1, 1]
//! : memref<8x4xf32> to memref<4xf32, strided<[1], offset: ?>>` is row
//! `%i`. Which dimensions go is computed from the types alone, sizes and
//! strides ([`dropped_dims`]), as MLIR's rank-reduction mask is.
//!
//! Canonicalization (MLIR's `OpWithOffsetSizesAndStridesConstantArgumentFolder`
//! and the cast folding of `SubViewOp`): a subview of the whole source
//! folds to the source, or becomes a `memref.cast` of it; constant
//! operands become static entries (a zero stride stays an operand, and a
//! window that they would prove outside a static source is left to fault
//! as written, as in MLIR), a source `memref.cast` from a more static type is looked
//! through, and the result type is inferred again ([`infer`]); where it
//! differs from the old one a `memref.cast` restores the old type.

use smallvec::{smallvec, SmallVec};

use ir::ast::{AstItemKind, SyntaxError};
use ir::custom::{CustomParser, ParsedOp};
use ir::interp::{Interp, RtValue, RunError};
use ir::printer::Printer;
use ir::spec::{Arity, FoldResult, OpSpec, OpState, Registry, Traits};
use ir::{Attribute, Builder, Context, MemRefType, OpId, StridedLayout, Type, ValueId};

use super::DYNAMIC;

/// The attributes of the three lists, in order.
pub const LISTS: [&str; 3] = ["static_offsets", "static_sizes", "static_strides"];

/// One entry of a list: a constant, or an operand.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mixed {
    Static(i64),
    Dynamic(ValueId),
}

fn ints(a: Option<&Attribute>) -> Option<Vec<i64>> {
    match a? {
        Attribute::Array(items) => items.iter().map(|i| i.as_int()).collect(),
        _ => None,
    }
}

/// The offsets, sizes and strides of a subview with attributes `attrs`
/// and operands `operands` (the source first), or `None` if malformed.
pub fn mixed_of(attrs: &[(String, Attribute)], operands: &[ValueId]) -> Option<[Vec<Mixed>; 3]> {
    let get = |name: &str| ints(attrs.iter().find(|(k, _)| k == name).map(|(_, a)| a));
    let mut dynamic = operands.iter().skip(1);
    let mut out: [Vec<Mixed>; 3] = Default::default();
    for (k, name) in LISTS.iter().enumerate() {
        for v in get(name)? {
            out[k].push(if v == DYNAMIC {
                Mixed::Dynamic(*dynamic.next()?)
            } else {
                Mixed::Static(v)
            });
        }
    }
    dynamic.next().is_none().then_some(out)
}

/// [`mixed_of`] for an existing op.
pub fn mixed(ctx: &Context, op: OpId) -> Option<[Vec<Mixed>; 3]> {
    mixed_of(&ctx.op(op).attrs, ctx.operands(op))
}

/// The attributes and dynamic operands of the lists `parts`.
pub(super) fn encode(parts: &[Vec<Mixed>; 3]) -> (Vec<(String, Attribute)>, Vec<ValueId>) {
    let mut attrs = Vec::new();
    let mut vals = Vec::new();
    for (k, list) in parts.iter().enumerate() {
        let items = list
            .iter()
            .map(|m| match m {
                Mixed::Static(v) => Attribute::int(*v, Type::I64),
                Mixed::Dynamic(v) => {
                    vals.push(*v);
                    Attribute::int(DYNAMIC, Type::I64)
                }
            })
            .collect();
        attrs.push((LISTS[k].to_string(), Attribute::Array(items)));
    }
    (attrs, vals)
}

/// The result type MLIR infers for a subview of `src` with these lists:
/// sizes from the static sizes; strides `strides[k] * s[k]` and offset
/// `o + sum(offsets[k] * s[k])`, each dynamic where an input is.
pub fn infer(src: &MemRefType, parts: &[Vec<Mixed>; 3]) -> Option<MemRefType> {
    let (s, o) = src.strides_and_offset();
    let stat = |m: &Mixed| match m {
        Mixed::Static(v) => Some(*v),
        Mixed::Dynamic(_) => None,
    };
    let [offs, sizes, steps] = parts;
    let mut offset = o;
    let mut strides = Vec::new();
    for k in 0..src.rank() {
        offset = match (offset, stat(&offs[k]), s[k]) {
            (Some(acc), Some(x), Some(sk)) => x.checked_mul(sk).and_then(|p| acc.checked_add(p)),
            _ => None,
        };
        strides.push(match (stat(&steps[k]), s[k]) {
            (Some(t), Some(sk)) => t.checked_mul(sk),
            _ => None,
        });
    }
    let shape = sizes
        .iter()
        .map(|m| stat(m).and_then(|v| u64::try_from(v).ok()))
        .collect();
    Some(MemRefType {
        shape,
        elem: src.elem.clone(),
        layout: Some(StridedLayout { strides, offset }),
    })
}

/// The dimensions of `inferred` (a subview's full-rank type, [`infer`])
/// that its result type `result` drops, MLIR's rank-reduction mask for
/// subviews (`computeMemRefRankReductionMask`): none where the ranks
/// agree. Otherwise the candidates are the dimensions of static size 1;
/// if there are exactly as many as ranks to drop, all go. Else strides
/// decide, in dimension order: a candidate goes while its stride occurs
/// more often among the not yet dropped dimensions of `inferred` than
/// among `result`'s (a dynamic stride counts as one value), so among
/// candidates of equal stride the first ones go. `None` when the count
/// of dropped dimensions does not come out right. The caller checks that
/// the remaining sizes and strides agree with `result`.
pub fn dropped_dims(inferred: &MemRefType, result: &MemRefType) -> Option<Vec<bool>> {
    let n = inferred.rank();
    if n == result.rank() {
        return Some(vec![false; n]);
    }
    let mut drop: Vec<bool> = inferred.shape.iter().map(|d| *d == Some(1)).collect();
    let want = n.checked_sub(result.rank())?;
    let count = |d: &[bool]| d.iter().filter(|x| **x).count();
    if count(&drop) == want {
        return Some(drop);
    }
    let (si, _) = inferred.strides_and_offset();
    let (sr, _) = result.strides_and_offset();
    let occurrences = |s: &[Option<i64>]| {
        let mut m: std::collections::HashMap<Option<i64>, usize> = Default::default();
        for x in s {
            *m.entry(*x).or_default() += 1;
        }
        m
    };
    let mut left = occurrences(&si);
    let in_result = occurrences(&sr);
    for k in 0..n {
        if !drop[k] {
            continue;
        }
        let l = left.get(&si[k]).copied().unwrap_or(0);
        let r = in_result.get(&si[k]).copied().unwrap_or(0);
        match l.cmp(&r) {
            std::cmp::Ordering::Greater => *left.get_mut(&si[k])? -= 1,
            std::cmp::Ordering::Equal => drop[k] = false,
            std::cmp::Ordering::Less => return None,
        }
    }
    (count(&drop) == want).then_some(drop)
}

/// [`dropped_dims`] of an existing subview.
pub fn drop_mask(ctx: &Context, op: OpId) -> Option<Vec<bool>> {
    let parts = mixed(ctx, op)?;
    let src = ctx.ty(*ctx.operands(op).first()?).as_memref()?;
    let res = ctx.ty(ctx.results(op).first().copied()?).as_memref()?;
    dropped_dims(&infer(src, &parts)?, res)
}

/// `t` without the dimensions `drop` marks (their sizes and strides).
pub fn reduce(t: &MemRefType, drop: &[bool]) -> MemRefType {
    let (strides, offset) = t.strides_and_offset();
    let keep = |k: &usize| !drop.get(*k).copied().unwrap_or(false);
    MemRefType {
        shape: (0..t.rank()).filter(keep).map(|k| t.shape[k]).collect(),
        elem: t.elem.clone(),
        layout: Some(StridedLayout {
            strides: (0..t.rank()).filter(keep).map(|k| strides[k]).collect(),
            offset,
        }),
    }
}

/// The end of a view op's custom form: the source (its type still to be
/// set), the list operands (`index`) and the three list attributes.
pub(super) fn push_lists(
    p: &mut ParsedOp,
    src: ir::ast::AstValueRef,
    vals: Vec<ir::ast::AstValueRef>,
    lists: Vec<Vec<i64>>,
) {
    p.operands.push((src, None));
    p.operands
        .extend(vals.into_iter().map(|v| (v, Some(Type::Index))));
    for (k, l) in lists.into_iter().enumerate() {
        let items = l
            .into_iter()
            .map(|v| Attribute::int(v, Type::I64))
            .collect();
        p.attrs
            .push((LISTS[k].to_string(), Attribute::Array(items)));
    }
}

/// Prints a list's entries, comma-separated, without brackets.
pub(super) fn print_entries(p: &mut Printer, list: &[Mixed]) {
    for (i, m) in list.iter().enumerate() {
        if i > 0 {
            p.w(", ");
        }
        match m {
            Mixed::Static(v) => p.w(&v.to_string()),
            Mixed::Dynamic(v) => p.value(*v),
        }
    }
}

/// Turns each dynamic entry of list `k` whose operand is a constant of at
/// least `least[k]` into a static entry; whether any changed.
pub(super) fn static_constants(ctx: &Context, parts: &mut [Vec<Mixed>], least: &[i64]) -> bool {
    let mut changed = false;
    for (list, &least) in parts.iter_mut().zip(least) {
        for m in list.iter_mut() {
            if let Mixed::Dynamic(v) = m {
                if let Some(c) = crate::arith::fold::constant_int(ctx, *v).filter(|c| *c >= least) {
                    *m = Mixed::Static(c);
                    changed = true;
                }
            }
        }
    }
    changed
}

/// MLIR's dense `array<i64: ...>` of `vals`, as the generic form prints it.
pub(super) fn dense_i64(vals: &[String]) -> Attribute {
    let body = if vals.is_empty() {
        String::new()
    } else {
        format!(": {}", vals.join(", "))
    };
    Attribute::Keyword(format!("array<i64{body}>"))
}

/// `[a, %b, ...]`: one list, its constants and operands.
pub(super) fn parse_list(
    cp: &mut CustomParser,
    vals: &mut Vec<ir::ast::AstValueRef>,
) -> Result<Vec<i64>, SyntaxError> {
    let mut inner = cp.expect_square()?;
    let mut out = Vec::new();
    if inner.at_end() {
        return Ok(out);
    }
    loop {
        if let Some(v) = inner.try_value() {
            vals.push(v);
            out.push(DYNAMIC);
        } else {
            let (lit, at) = inner.expect_literal()?;
            match lit {
                AstItemKind::Int(v) if v > DYNAMIC as i128 && v <= i64::MAX as i128 => {
                    out.push(v as i64)
                }
                _ => {
                    return Err(SyntaxError {
                        offset: at,
                        message: "expected an SSA value or a 64-bit integer".into(),
                    })
                }
            }
        }
        if !inner.try_punct(",") {
            break;
        }
    }
    inner.finish()?;
    Ok(out)
}

fn parse(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let mut p = ParsedOp::default();
    let src = cp.expect_value()?;
    let mut vals = Vec::new();
    let lists: Vec<Vec<i64>> = (0..3)
        .map(|_| parse_list(cp, &mut vals))
        .collect::<Result<_, _>>()?;
    cp.optional_attr_dict(&mut p.attrs);
    cp.expect_punct(":")?;
    let from = cp.expect_type()?;
    cp.expect_keyword("to")?;
    let to = cp.expect_type()?;
    push_lists(&mut p, src, vals, lists);
    p.operands[0].1 = Some(from);
    p.result_types.push(to);
    Ok(p)
}

fn print(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let Some(parts) = mixed(ctx, op) else {
        p.w(" <<malformed memref.subview>>");
        return Ok(());
    };
    let src = ctx.operand(op, 0);
    p.w(" ");
    p.value(src);
    for (k, list) in parts.iter().enumerate() {
        p.w(if k == 0 { "[" } else { " [" });
        print_entries(p, list);
        p.w("]");
    }
    let mut skip: Vec<&str> = LISTS.to_vec();
    skip.push(super::forms::SEGMENTS);
    p.attr_dict(op, &skip);
    p.w(" : ");
    p.ty(ctx.ty(src));
    p.w(" to ");
    p.ty(ctx.ty(ctx.result(op, 0)));
    Ok(())
}

/// MLIR 16's generic form: the three lists as `array<i64: ...>` and the
/// operand groups' sizes.
pub(super) fn generic_attrs(ctx: &Context, op: OpId) -> Vec<(String, Attribute)> {
    let mut attrs: Vec<(String, Attribute)> = ctx
        .op(op)
        .attrs
        .iter()
        .filter(|(k, _)| !LISTS.contains(&k.as_str()) && k != super::forms::SEGMENTS)
        .cloned()
        .collect();
    let Some(parts) = mixed(ctx, op) else {
        return ctx.op(op).attrs.iter().cloned().collect();
    };
    let mut counts = Vec::new();
    for (k, list) in parts.iter().enumerate() {
        let vals: Vec<String> = list
            .iter()
            .map(|m| match m {
                Mixed::Static(v) => v.to_string(),
                Mixed::Dynamic(_) => DYNAMIC.to_string(),
            })
            .collect();
        counts.push(
            list.iter()
                .filter(|m| matches!(m, Mixed::Dynamic(_)))
                .count(),
        );
        attrs.push((LISTS[k].into(), dense_i64(&vals)));
    }
    attrs.push((
        super::forms::SEGMENTS.into(),
        Attribute::Keyword(format!(
            "array<i32: 1, {}, {}, {}>",
            counts[0], counts[1], counts[2]
        )),
    ));
    attrs
}

fn verify(ctx: &Context, op: OpId) -> Result<(), String> {
    let src = super::operand_memref(ctx, op, 0)?;
    let res = super::result_memref(ctx, op)?;
    let parts = mixed(ctx, op).ok_or_else(|| {
        "'static_offsets', 'static_sizes' and 'static_strides' must be integer lists whose dynamic entries match the operands".to_string()
    })?;
    for (k, list) in parts.iter().enumerate() {
        if list.len() != src.rank() {
            return Err(format!(
                "expects {} {} (the source's rank), got {}",
                src.rank(),
                &LISTS[k][7..],
                list.len()
            ));
        }
        for m in list {
            match m {
                Mixed::Static(v) if *v < 0 => {
                    return Err(format!("{} must not be negative, got {v}", &LISTS[k][7..]))
                }
                Mixed::Dynamic(v) if *ctx.ty(*v) != Type::Index => {
                    return Err(format!("dynamic {} must be 'index'", &LISTS[k][7..]))
                }
                _ => {}
            }
        }
    }
    if res.rank() > src.rank() {
        return Err(format!(
            "the result's rank {} exceeds the source's {}",
            res.rank(),
            src.rank()
        ));
    }
    let inferred = infer(src, &parts).ok_or("malformed subview")?;
    let drop = dropped_dims(&inferred, res).ok_or_else(|| {
        format!(
            "result type '{}' is not the inferred '{}' with dimensions of static size 1 dropped",
            ctx.ty(ctx.result(op, 0)),
            Type::MemRef(std::rc::Rc::new(inferred.clone()))
        )
    })?;
    let inferred = if res.rank() < src.rank() {
        reduce(&inferred, &drop)
    } else {
        inferred
    };
    super::check_result_agrees(ctx, op, inferred, "inferred")
}

/// The run-time offsets, sizes and strides of `op` (a subview or a
/// `reinterpret_cast`) with operand values `args`: the constants, and the
/// dynamic entries from the operands after the source, in order.
pub(super) fn run_lists(
    ctx: &Context,
    op: OpId,
    args: &[RtValue],
    malformed: &str,
) -> Result<[Vec<i64>; 3], RunError> {
    let parts = mixed(ctx, op).ok_or_else(|| RunError::at(ctx, op, malformed))?;
    let mut dynamic = args[1..].iter();
    let mut lists: [Vec<i64>; 3] = Default::default();
    for (k, list) in parts.iter().enumerate() {
        for m in list {
            lists[k].push(match m {
                Mixed::Static(v) => *v,
                Mixed::Dynamic(_) => dynamic
                    .next()
                    .and_then(|a| a.as_int())
                    .ok_or_else(|| RunError::at(ctx, op, "expected an integer"))?,
            });
        }
    }
    Ok(lists)
}

fn interpret(
    it: &mut Interp,
    op: OpId,
    args: &[RtValue],
) -> Result<SmallVec<[RtValue; 2]>, RunError> {
    let ctx = it.ctx;
    let lists = run_lists(ctx, op, args, "malformed subview")?;
    let drop = drop_mask(ctx, op).ok_or_else(|| RunError::at(ctx, op, "malformed subview"))?;
    Ok(smallvec![super::interp::subview_of(
        ctx, op, &args[0], lists, &drop
    )?])
}

/// Whether lists `parts` take the whole of source `src`: offsets 0, its
/// sizes (static, or the operand that gave it a dynamic size:
/// [`super::canon::size_of`]), strides 1.
fn whole(ctx: &Context, src: ValueId, parts: &[Vec<Mixed>; 3]) -> bool {
    let [offs, sizes, steps] = parts;
    let rank = ctx.ty(src).as_memref().map_or(0, |t| t.rank());
    offs.len() == rank
        && (0..rank).all(|k| {
            offs[k] == Mixed::Static(0)
                && steps[k] == Mixed::Static(1)
                && super::canon::size_of(ctx, src, k) == Some(sizes[k])
        })
}

/// Whether a dimension's static offset, size and stride reach past the
/// source's static size (the subview faults).
fn outside(t: &MemRefType, parts: &[Vec<Mixed>; 3]) -> bool {
    let [offs, sizes, steps] = parts;
    (0..t.rank().min(offs.len())).any(|k| match (offs[k], sizes[k], steps[k], t.shape[k]) {
        (Mixed::Static(o), Mixed::Static(n), Mixed::Static(s), Some(dim)) if n > 0 => (n - 1)
            .checked_mul(s)
            .and_then(|x| x.checked_add(o))
            .is_none_or(|last| last < 0 || last as u64 >= dim),
        _ => false,
    })
}

/// A subview of the whole source whose type is the source's is the
/// source (MLIR's `SubViewOp::fold`).
fn fold(ctx: &Context, st: &OpState) -> Option<SmallVec<[FoldResult; 1]>> {
    let src = *st.operands.first()?;
    if ctx.ty(src) != st.result_types.first()? {
        return None;
    }
    whole(ctx, src, &mixed_of(&st.attrs, &st.operands)?).then(|| smallvec![FoldResult::Value(src)])
}

/// Constant operands become static entries, and a source `memref.cast`
/// from a more static type is looked through; the result type is inferred
/// again and cast back to the old one where it differs.
fn canonicalize(b: &mut Builder, st: &OpState) -> Option<SmallVec<[ValueId; 2]>> {
    let ctx = &*b.ctx;
    let parts = mixed_of(&st.attrs, &st.operands)?;
    let old = st.result_types.first()?.as_memref()?.clone();
    // A subview of the whole source is a cast of it (where the types
    // differ only in static information).
    let src_ty = ctx.ty(st.operands[0]).as_memref()?;
    if whole(ctx, st.operands[0], &parts) && super::cast_compatible(src_ty, &old) {
        let to = st.result_types[0].clone();
        return Some(smallvec![b.op1(
            "memref.cast",
            &[st.operands[0]],
            to,
            vec![]
        )]);
    }
    let mut new_parts = parts.clone();
    // A zero stride stays an operand, as in MLIR.
    let mut changed = static_constants(ctx, &mut new_parts, &[0, 0, 1]);
    let mut src = st.operands[0];
    if let Some(s) = super::canon::cast_source(ctx, src) {
        src = s;
        changed = true;
    }
    if !changed {
        return None;
    }
    // A window that constants prove outside a static source keeps its
    // operands, so that it faults as written (MLIR does not fold it
    // either).
    let new_src = ctx.ty(src).as_memref()?;
    if outside(new_src, &new_parts) {
        return None;
    }
    // The dimensions dropped stay the same ones, or ones with the same
    // static sizes and strides (the same view).
    let drop = dropped_dims(&infer(src_ty, &parts)?, &old)?;
    let full = infer(new_src, &new_parts)?;
    let mut inferred = full.clone();
    if old.rank() < full.rank() {
        inferred = reduce(&full, &drop);
        let again = dropped_dims(&full, &inferred)?;
        let (si, _) = full.strides_and_offset();
        let same_view = (0..drop.len()).all(|k| drop[k] == again[k] || si[k].is_some())
            && reduce(&full, &again) == inferred;
        if !same_view {
            return None;
        }
    }
    if inferred.rank() != old.rank() || !super::cast_compatible(&inferred, &old) {
        return None;
    }
    let (mut attrs, vals) = encode(&new_parts);
    attrs.extend(
        st.attrs
            .iter()
            .filter(|(k, _)| !LISTS.contains(&k.as_str()) && k != super::forms::SEGMENTS)
            .cloned(),
    );
    let mut operands = vec![src];
    operands.extend(vals);
    let new_ty = Type::MemRef(std::rc::Rc::new(inferred.clone()));
    let v = b.op1("memref.subview", &operands, new_ty.clone(), attrs);
    if inferred == old {
        return Some(smallvec![v]);
    }
    let old_ty = Type::MemRef(std::rc::Rc::new(old));
    Some(smallvec![b.op1("memref.cast", &[v], old_ty, vec![])])
}

/// Registers `memref.subview`.
pub(super) fn register(r: &mut Registry) {
    r.register(
        OpSpec::new("memref.subview", "a strided window of a memref")
            .operands(Arity::AtLeast(1))
            .results(Arity::Exactly(1))
            .traits(Traits::DEAD_IF_UNUSED)
            .verify(verify)
            .interpret(interpret)
            .fold(fold)
            .rewrite(canonicalize)
            .rewrite(super::canon::dead_alloc_of_view)
            .generic_attrs(generic_attrs, |_, _| {})
            .custom_form(print, parse),
    );
}
