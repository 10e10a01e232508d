//! `memref.expand_shape`: a view that splits each dimension of its source
//! into a group of consecutive dimensions (MLIR's op, the inverse of
//! [`super::collapse`]).
//!
//! ```text
//! %v = memref.expand_shape %m [[0, 1], [2]] : memref<?x5xf32> into memref<?x4x5xf32>
//! %w = memref.expand_shape %m [[0, 1], [2]] output_shape [%a, %b, 5] : memref<?x5xf32> into memref<?x?x5xf32>
//! ```
//!
//! The `reassociation` attribute lists, for each *source* dimension, the
//! result dimensions it splits into: together they are `0, 1, ...` in
//! order, no group empty (a rank-0 source has no groups, and every result
//! size must then be 1).
//!
//! **Sizes.** The result type states them. Two spellings give its
//! dynamic sizes:
//! - MLIR 16's form (no `output_shape`) infers them: a group has at most
//!   one dynamic size, which is the source's size divided by the group's
//!   static sizes; the op faults where that division leaves a remainder.
//! - Newer MLIR's `output_shape [...]` lists every result size, constants
//!   where the type is static and `index` operands where it is dynamic
//!   (kept in `static_output_shape`, [`DYNAMIC`] for an operand). Each
//!   group's sizes must multiply to the source's size; the op faults where
//!   they do not (MLIR leaves it undefined). L0 prints this form only
//!   where a size is an operand, so what mlir-opt-16 can read it gets.
//!
//! **Strides.** The last dimension of a group has the source dimension's
//! stride; each other one the stride of the next times its size. The
//! offset is the source's; the identity layout stays the identity.
//!
//! **Canonicalization.** A split into single dimensions with the source's
//! type folds to the source; `expand_shape` of a `collapse_shape` by the
//! same groups back to the collapse's source type folds to that source
//! where the types prove the collapse contiguous (static sizes and
//! strides), and [`super::collapse`] folds the other order; constant
//! `output_shape` operands become static sizes (then a `memref.cast` back).

use smallvec::{smallvec, SmallVec};

use ir::ast::SyntaxError;
use ir::custom::{CustomParser, ParsedOp};
use ir::interp::{Interp, RtValue, RunError};
use ir::printer::Printer;
use ir::spec::{Arity, FoldResult, OpSpec, OpState, Registry, Traits};
use ir::{Attribute, Builder, Context, MemRefType, OpId, StridedLayout, Type, ValueId};

use super::collapse::{groups, groups_of, REASSOCIATION};
use super::subview::Mixed;
use super::DYNAMIC;

/// The attribute holding the `output_shape` list.
pub const OUTPUT: &str = "static_output_shape";

/// The `output_shape` of an expand with attributes `attrs` and operands
/// `operands`: `Some(None)` in MLIR 16's form (none given), `Some(Some(l))`
/// with one entry per result dimension, `None` where malformed (entries
/// that are not integers, or dynamic entries that do not match the
/// operands after the source).
pub fn output_shape_of(
    attrs: &[(String, Attribute)],
    operands: &[ValueId],
) -> Option<Option<Vec<Mixed>>> {
    let Some((_, a)) = attrs.iter().find(|(k, _)| k == OUTPUT) else {
        return (operands.len() == 1).then_some(None);
    };
    let Attribute::Array(items) = a else {
        return None;
    };
    let mut vals = operands.get(1..)?.iter();
    let list = items
        .iter()
        .map(|i| match i.as_int()? {
            DYNAMIC => vals.next().map(|v| Mixed::Dynamic(*v)),
            v => Some(Mixed::Static(v)),
        })
        .collect::<Option<Vec<_>>>()?;
    vals.next().is_none().then_some(Some(list))
}

/// [`output_shape_of`] of an existing op.
pub fn output_shape(ctx: &Context, op: OpId) -> Option<Option<Vec<Mixed>>> {
    output_shape_of(&ctx.op(op).attrs, ctx.operands(op))
}

/// The strides of splitting a dimension of stride `base` into `sizes`
/// (`None` where unknown): the last is `base`, each other one the next
/// one's times its size.
pub fn group_strides(base: Option<i64>, sizes: &[Option<u64>]) -> Vec<Option<i64>> {
    let mut out = vec![None; sizes.len()];
    let mut s = base;
    for k in (0..sizes.len()).rev() {
        out[k] = s;
        s = match (s, sizes[k]) {
            (Some(s), Some(n)) => i64::try_from(n).ok().and_then(|n| s.checked_mul(n)),
            _ => None,
        };
    }
    out
}

/// The result type of expanding `src` by `groups` into sizes `shape`:
/// strides per [`group_strides`] (1 for the unit dimensions of a rank-0
/// source), the source's offset; the identity layout where the source has
/// it.
pub fn infer(src: &MemRefType, groups: &[Vec<usize>], shape: &[Option<u64>]) -> MemRefType {
    let layout = src.layout.as_ref().map(|_| {
        let (s, o) = src.strides_and_offset();
        let mut strides = vec![Some(1); shape.len()];
        for (r, g) in groups.iter().enumerate() {
            let sizes: Vec<Option<u64>> = g.iter().map(|&d| shape[d]).collect();
            for (&d, st) in g.iter().zip(group_strides(s[r], &sizes)) {
                strides[d] = st;
            }
        }
        StridedLayout { strides, offset: o }
    });
    MemRefType {
        shape: shape.to_vec(),
        elem: src.elem.clone(),
        layout,
    }
}

/// `%m [[0, 1], [2]] (output_shape [%a, 4, %b])? : T into U`.
fn parse(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let mut p = ParsedOp::default();
    let src = cp.expect_value()?;
    let gs = super::collapse::parse_groups(cp)?;
    let mut vals = Vec::new();
    let list = if cp.try_keyword("output_shape") {
        Some(super::subview::parse_list(cp, &mut vals)?)
    } else {
        None
    };
    cp.optional_attr_dict(&mut p.attrs);
    cp.expect_punct(":")?;
    let from = cp.expect_type()?;
    cp.expect_keyword("into")?;
    let to = cp.expect_type()?;
    p.operands.push((src, Some(from)));
    p.operands
        .extend(vals.into_iter().map(|v| (v, Some(Type::Index))));
    p.attrs.push((REASSOCIATION.to_string(), gs));
    if let Some(l) = list {
        let items = l.into_iter().map(|v| Attribute::int(v, Type::I64));
        p.attrs
            .push((OUTPUT.to_string(), Attribute::Array(items.collect())));
    }
    p.result_types.push(to);
    Ok(p)
}

fn print(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let (Some(gs), Some(out)) = (groups(ctx, op), output_shape(ctx, op)) else {
        p.w(" <<malformed memref.expand_shape>>");
        return Ok(());
    };
    let src = ctx.operand(op, 0);
    p.w(" ");
    p.value(src);
    super::collapse::print_groups(p, &gs);
    if let Some(list) = out.filter(|l| l.iter().any(|m| matches!(m, Mixed::Dynamic(_)))) {
        p.w(" output_shape [");
        super::subview::print_entries(p, &list);
        p.w("]");
    }
    p.attr_dict(op, &[REASSOCIATION, OUTPUT]);
    p.w(" : ");
    p.ty(ctx.ty(src));
    p.w(" into ");
    p.ty(ctx.ty(ctx.result(op, 0)));
    Ok(())
}

/// The generic form: `static_output_shape` as `array<i64: ...>`, as
/// newer MLIR writes it.
fn generic_attrs(ctx: &Context, op: OpId) -> Vec<(String, Attribute)> {
    ctx.op(op)
        .attrs
        .iter()
        .map(|(k, a)| match a {
            Attribute::Array(items) if k == OUTPUT => {
                let vs: Vec<String> = items
                    .iter()
                    .map(|i| i.as_int().unwrap_or(DYNAMIC).to_string())
                    .collect();
                (k.clone(), super::subview::dense_i64(&vs))
            }
            _ => (k.clone(), a.clone()),
        })
        .collect()
}

fn verify(ctx: &Context, op: OpId) -> Result<(), String> {
    let src = super::operand_memref(ctx, op, 0)?;
    let res = super::result_memref(ctx, op)?;
    let gs = super::collapse::checked_groups(ctx, op, src, res, false)?;
    let out = output_shape(ctx, op).ok_or(
        "'static_output_shape' must be an integer list whose dynamic entries match the operands after the source",
    )?;
    if let Some(list) = &out {
        if list.len() != res.rank() {
            return Err(format!(
                "expects {} output sizes (the result's rank), got {}",
                res.rank(),
                list.len()
            ));
        }
        for (k, m) in list.iter().enumerate() {
            let agrees = match m {
                Mixed::Static(v) if *v < 0 => {
                    return Err(format!("output size {k} must not be negative, got {v}"))
                }
                Mixed::Static(v) => res.shape[k] == u64::try_from(*v).ok(),
                Mixed::Dynamic(v) => {
                    if *ctx.ty(*v) != Type::Index {
                        return Err("dynamic output sizes must be 'index'".into());
                    }
                    res.shape[k].is_none()
                }
            };
            if !agrees {
                return Err(format!(
                    "output size {k} does not agree with the result type's size"
                ));
            }
        }
    }
    for (r, g) in gs.iter().enumerate() {
        let sizes: Vec<Option<u64>> = g.iter().map(|&d| res.shape[d]).collect();
        let dynamic = sizes.iter().filter(|s| s.is_none()).count();
        let product = sizes
            .iter()
            .flatten()
            .try_fold(1u64, |a, &n| a.checked_mul(n))
            .ok_or_else(|| format!("the static sizes of group {r} overflow"))?;
        if out.is_none() && dynamic > 1 {
            return Err(format!(
                "group {r} has {dynamic} dynamic sizes: give them with 'output_shape'"
            ));
        }
        if out.is_none() && dynamic == 1 && product == 0 {
            return Err(format!(
                "the dynamic size of group {r} cannot be inferred next to a size 0: give it with 'output_shape'"
            ));
        }
        if let Some(n) = src.shape[r] {
            let wrong = if dynamic == 0 {
                product != n
            } else if product == 0 {
                n != 0
            } else {
                n % product != 0
            };
            if wrong {
                return Err(format!(
                    "group {r}'s sizes cannot multiply to the source's size {n}"
                ));
            }
        }
    }
    let inferred = infer(src, &gs, &res.shape);
    super::check_result_agrees(ctx, op, inferred, "inferred")
}

fn interpret(
    it: &mut Interp,
    op: OpId,
    args: &[RtValue],
) -> Result<SmallVec<[RtValue; 2]>, RunError> {
    let ctx = it.ctx;
    let malformed = || RunError::at(ctx, op, "malformed expand_shape");
    let gs = groups(ctx, op).ok_or_else(malformed)?;
    let out = output_shape(ctx, op).ok_or_else(malformed)?;
    // The given sizes: constants, and the operands in order.
    let given = match out {
        None => None,
        Some(list) => {
            let mut dyns = args[1..].iter();
            let mut v = Vec::new();
            for m in list {
                v.push(match m {
                    Mixed::Static(c) => c,
                    Mixed::Dynamic(_) => {
                        dyns.next().and_then(|a| a.as_int()).ok_or_else(malformed)?
                    }
                });
            }
            Some(v)
        }
    };
    Ok(smallvec![super::interp::expand_of(
        ctx,
        op,
        &args[0],
        &gs,
        given.as_deref()
    )?])
}

/// A split into single dimensions with the source's type is the source;
/// so is an expand of a collapse by the same groups back to its source's
/// type, where that type proves the collapse contiguous.
fn fold(ctx: &Context, st: &OpState) -> Option<SmallVec<[FoldResult; 1]>> {
    let src = *st.operands.first()?;
    let gs = groups_of(&st.attrs)?;
    let res = st.result_types.first()?;
    if ctx.ty(src) == res && gs.iter().all(|g| g.len() == 1) {
        return Some(smallvec![FoldResult::Value(src)]);
    }
    let c = ctx.def_op_named(src, "memref.collapse_shape")?;
    let x = ctx.operand(c, 0);
    let t = ctx.ty(x).as_memref()?;
    let (strides, _) = t.strides_and_offset();
    let proven = t.shape.iter().all(Option::is_some) && strides.iter().all(Option::is_some);
    (st.operands.len() == 1 && ctx.ty(x) == res && proven && groups(ctx, c)? == gs)
        .then(|| smallvec![FoldResult::Value(x)])
}

/// Constant `output_shape` operands become static sizes; the result type
/// is inferred again and cast back to the old one.
fn canonicalize(b: &mut Builder, st: &OpState) -> Option<SmallVec<[ValueId; 2]>> {
    let ctx = &*b.ctx;
    let mut lists = [output_shape_of(&st.attrs, &st.operands)??];
    if !super::subview::static_constants(ctx, &mut lists, &[0]) {
        return None;
    }
    let [list] = lists;
    let old = st.result_types.first()?.as_memref()?.clone();
    let src = ctx.ty(st.operands[0]).as_memref()?;
    let gs = groups_of(&st.attrs)?;
    let shape: Vec<Option<u64>> = list
        .iter()
        .map(|m| match m {
            Mixed::Static(c) => u64::try_from(*c).ok(),
            Mixed::Dynamic(_) => None,
        })
        .collect();
    let new = infer(src, &gs, &shape);
    if !super::cast_compatible(&new, &old) {
        return None;
    }
    let mut attrs: Vec<(String, Attribute)> = st
        .attrs
        .iter()
        .filter(|(k, _)| k != OUTPUT)
        .cloned()
        .collect();
    let mut operands = vec![st.operands[0]];
    if list.iter().any(|m| matches!(m, Mixed::Dynamic(_))) {
        let mut items = Vec::new();
        for m in &list {
            items.push(Attribute::int(
                match m {
                    Mixed::Static(c) => *c,
                    Mixed::Dynamic(v) => {
                        operands.push(*v);
                        DYNAMIC
                    }
                },
                Type::I64,
            ));
        }
        attrs.push((OUTPUT.to_string(), Attribute::Array(items)));
    }
    let new_ty = Type::MemRef(std::rc::Rc::new(new.clone()));
    let v = b.op1("memref.expand_shape", &operands, new_ty, attrs);
    if new == old {
        return Some(smallvec![v]);
    }
    let old_ty = st.result_types[0].clone();
    Some(smallvec![b.op1("memref.cast", &[v], old_ty, vec![])])
}

/// Registers `memref.expand_shape`.
pub(super) fn register(r: &mut Registry) {
    r.register(
        OpSpec::new(
            "memref.expand_shape",
            "a view splitting each dimension into a group of dimensions",
        )
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
