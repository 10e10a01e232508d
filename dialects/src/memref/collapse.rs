//! `memref.collapse_shape`: a view that merges groups of consecutive
//! dimensions into one (MLIR's op).
//!
//! ```text
//! %v = memref.collapse_shape %m [[0, 1], [2]] : memref<?x4x5xf32> into memref<?x5xf32>
//! ```
//!
//! The `reassociation` attribute lists, for each result dimension, the
//! source dimensions it merges: together they are `0, 1, ..., rank - 1`
//! in order, and no group is empty (a rank-0 result has no groups, and
//! every source size must then be 1). A group's size is the product of
//! its sizes; its stride is the stride of its last dimension of size
//! other than 1 (of its first if all are 1). A group must be contiguous:
//! every dimension of size other than 1 has the stride of the group times
//! the sizes after it. The verifier checks that where the types say it;
//! the interpreter and `lower` fault, at the op, where a run-time view is
//! not (MLIR leaves it undefined). An empty view (a size 0 anywhere) is
//! always contiguous, so that composing two collapses keeps the faults.
//!
//! Canonicalization: a collapse whose groups are single dimensions and
//! whose type is the source's folds to the source; a collapse of a
//! collapse composes the groups; a collapse of a cast from a more static
//! type collapses the cast's source; a collapse of an `expand_shape` by
//! the same groups folds where the expand cannot fault.

use smallvec::{smallvec, SmallVec};

use ir::ast::SyntaxError;
use ir::custom::{CustomParser, ParsedOp};
use ir::interp::{Interp, RtValue, RunError};
use ir::printer::Printer;
use ir::spec::{Arity, FoldResult, OpSpec, OpState, Registry, Traits};
use ir::{Attribute, Builder, Context, MemRefType, OpId, StridedLayout, Type, ValueId};

/// The attribute holding the groups.
pub const REASSOCIATION: &str = "reassociation";

/// The groups of a collapse with attributes `attrs`, if well formed as
/// lists of integers (not yet checked against the ranks).
pub fn groups_of(attrs: &[(String, Attribute)]) -> Option<Vec<Vec<usize>>> {
    let a = attrs.iter().find(|(k, _)| k == REASSOCIATION)?;
    let Attribute::Array(gs) = &a.1 else {
        return None;
    };
    gs.iter()
        .map(|g| match g {
            Attribute::Array(ds) => ds
                .iter()
                .map(|d| d.as_int().and_then(|v| usize::try_from(v).ok()))
                .collect(),
            _ => None,
        })
        .collect()
}

/// [`groups_of`] of an existing op.
pub fn groups(ctx: &Context, op: OpId) -> Option<Vec<Vec<usize>>> {
    groups_of(&ctx.op(op).attrs)
}

/// The index of the dimension whose stride a group takes: its last of a
/// size other than 1, or its first where every size is 1 (`sizes` are the
/// group's sizes, `None` where dynamic: possibly other than 1).
pub fn stride_dim(sizes: &[Option<u64>]) -> usize {
    sizes.iter().rposition(|s| *s != Some(1)).unwrap_or(0)
}

/// The result type of collapsing `src` by `groups`: sizes the products
/// (dynamic where a factor is), strides per [`stride_dim`] (dynamic where
/// that dimension's size is dynamic and an earlier one could be the one,
/// as MLIR infers), the source's offset; the identity layout where the
/// source has it.
pub fn infer(src: &MemRefType, groups: &[Vec<usize>]) -> MemRefType {
    let shape: Vec<Option<u64>> = groups
        .iter()
        .map(|g| {
            g.iter().try_fold(1u64, |acc, &d| {
                src.shape[d].and_then(|n| acc.checked_mul(n))
            })
        })
        .collect();
    let layout = src.layout.as_ref().map(|_| {
        let (s, o) = src.strides_and_offset();
        StridedLayout {
            strides: groups
                .iter()
                .map(|g| {
                    // Static only where the dimension whose stride it is
                    // is known: its size static, or no other candidate
                    // before it (a dynamic size may be 1 at run time).
                    let sizes: Vec<Option<u64>> = g.iter().map(|&d| src.shape[d]).collect();
                    let k = stride_dim(&sizes);
                    if k == 0 || sizes[k].is_some() {
                        s[g[k]]
                    } else {
                        None
                    }
                })
                .collect(),
            offset: o,
        }
    });
    MemRefType {
        shape,
        elem: src.elem.clone(),
        layout,
    }
}

/// `[[0, 1], [2]]`: the groups of a collapse or an expand, as the
/// [`REASSOCIATION`] attribute's value.
pub(super) fn parse_groups(cp: &mut CustomParser) -> Result<Attribute, SyntaxError> {
    let mut outer = cp.expect_square()?;
    let mut gs = Vec::new();
    while !outer.at_end() {
        let mut inner = outer.expect_square()?;
        let mut g = Vec::new();
        while !inner.at_end() {
            let (lit, at) = inner.expect_literal()?;
            match lit {
                ir::ast::AstItemKind::Int(v) if (0..=i64::MAX as i128).contains(&v) => {
                    g.push(Attribute::int(v as i64, Type::I64))
                }
                _ => {
                    return Err(SyntaxError {
                        offset: at,
                        message: "expected a dimension number".into(),
                    })
                }
            }
            if !inner.try_punct(",") {
                break;
            }
        }
        inner.finish()?;
        gs.push(Attribute::Array(g));
        if !outer.try_punct(",") {
            break;
        }
    }
    outer.finish()?;
    Ok(Attribute::Array(gs))
}

/// `memref.collapse_shape %m [[0, 1], [2]] : T into U`.
fn parse(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let mut p = ParsedOp::default();
    let src = cp.expect_value()?;
    let gs = parse_groups(cp)?;
    cp.optional_attr_dict(&mut p.attrs);
    cp.expect_punct(":")?;
    let from = cp.expect_type()?;
    cp.expect_keyword("into")?;
    let to = cp.expect_type()?;
    p.operands.push((src, Some(from)));
    p.attrs.push((REASSOCIATION.to_string(), gs));
    p.result_types.push(to);
    Ok(p)
}

/// Prints ` [[0, 1], [2]]`.
pub(super) fn print_groups(p: &mut Printer, gs: &[Vec<usize>]) {
    p.w(" [");
    for (i, g) in gs.iter().enumerate() {
        if i > 0 {
            p.w(", ");
        }
        let ds: Vec<String> = g.iter().map(|d| d.to_string()).collect();
        p.w(&format!("[{}]", ds.join(", ")));
    }
    p.w("]");
}

fn print(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let Some(gs) = groups(ctx, op) else {
        p.w(" <<malformed memref.collapse_shape>>");
        return Ok(());
    };
    let src = ctx.operand(op, 0);
    p.w(" ");
    p.value(src);
    print_groups(p, &gs);
    p.attr_dict(op, &[REASSOCIATION]);
    p.w(" : ");
    p.ty(ctx.ty(src));
    p.w(" into ");
    p.ty(ctx.ty(ctx.result(op, 0)));
    Ok(())
}

/// The groups of reshape `op` from `src` to `res`, checked: equal
/// elements, one group per dimension of the narrower side (the result of
/// a collapse, the source of an expand), the wider side's dimensions in
/// order, no group empty; a rank-0 narrow side needs every wide size to
/// be 1.
pub(super) fn checked_groups(
    ctx: &Context,
    op: OpId,
    src: &MemRefType,
    res: &MemRefType,
    collapse: bool,
) -> Result<Vec<Vec<usize>>, String> {
    let gs =
        groups(ctx, op).ok_or("'reassociation' must be a list of lists of dimension numbers")?;
    if src.elem != res.elem {
        return Err(format!(
            "the result's elements '{}' differ from the source's '{}'",
            res.elem, src.elem
        ));
    }
    let (narrow, narrow_side, wide, wide_side) = if collapse {
        (res, "result", src, "source")
    } else {
        (src, "source", res, "result")
    };
    if gs.len() != narrow.rank() {
        return Err(format!(
            "expects {} groups (the {narrow_side}'s rank), got {}",
            narrow.rank(),
            gs.len()
        ));
    }
    let flat: Vec<usize> = gs.iter().flatten().copied().collect();
    if gs.is_empty() {
        if wide.shape.iter().any(|d| *d != Some(1)) {
            return Err(if collapse {
                "a collapse to rank 0 needs every source size to be 1".into()
            } else {
                "an expand from rank 0 needs every result size to be 1".into()
            });
        }
    } else if gs.iter().any(|g| g.is_empty()) || flat != (0..wide.rank()).collect::<Vec<_>>() {
        return Err(format!(
            "the groups must hold the {wide_side}'s dimensions 0 to {} in order, each group non-empty",
            wide.rank().saturating_sub(1)
        ));
    }
    Ok(gs)
}

fn verify(ctx: &Context, op: OpId) -> Result<(), String> {
    let src = super::operand_memref(ctx, op, 0)?;
    let res = super::result_memref(ctx, op)?;
    let gs = checked_groups(ctx, op, src, res, true)?;
    static_contiguity(src, &gs)?;
    let inferred = infer(src, &gs);
    super::check_result_agrees(ctx, op, inferred, "inferred")
}

/// Checks that each group of `src` is contiguous where its type says the
/// sizes and strides (an empty view always is).
fn static_contiguity(src: &MemRefType, gs: &[Vec<usize>]) -> Result<(), String> {
    if src.shape.contains(&Some(0)) {
        return Ok(());
    }
    let (s, _) = src.strides_and_offset();
    for (r, g) in gs.iter().enumerate() {
        let sizes: Vec<Option<u64>> = g.iter().map(|&d| src.shape[d]).collect();
        let base = s[g[stride_dim(&sizes)]];
        let mut after: Option<i64> = Some(1);
        for (i, &d) in g.iter().enumerate().rev() {
            if sizes[i] != Some(1) {
                if let (Some(st), Some(b), Some(a)) = (s[d], base, after) {
                    if b.checked_mul(a) != Some(st) {
                        return Err(format!(
                            "group {r} is not contiguous: dimension {d} has stride {st}, not {}",
                            b.saturating_mul(a)
                        ));
                    }
                }
            }
            after = match (after, sizes[i]) {
                (Some(a), Some(n)) => a.checked_mul(n as i64),
                _ => None,
            };
        }
    }
    Ok(())
}

/// A collapse of `x` by `gs` in place of one whose result type is `old`:
/// the collapse with its inferred type, then a cast back where that
/// differs; `None` where the types do not allow it.
fn rebuild(
    b: &mut Builder,
    x: ValueId,
    gs: &[Vec<usize>],
    old: &Type,
) -> Option<SmallVec<[ValueId; 2]>> {
    let xt = b.ctx.ty(x).as_memref()?.clone();
    let old_m = old.as_memref()?;
    if gs.is_empty() && xt.shape.iter().any(|d| *d != Some(1)) {
        return None;
    }
    static_contiguity(&xt, gs).ok()?;
    let inferred = infer(&xt, gs);
    if !super::cast_compatible(&inferred, old_m) {
        return None;
    }
    let attr = Attribute::Array(
        gs.iter()
            .map(|g| {
                Attribute::Array(
                    g.iter()
                        .map(|&d| Attribute::int(d as i64, Type::I64))
                        .collect(),
                )
            })
            .collect(),
    );
    let same = inferred == *old_m;
    let ty = Type::MemRef(std::rc::Rc::new(inferred));
    let v = b.op1(
        "memref.collapse_shape",
        &[x],
        ty,
        vec![(REASSOCIATION.to_string(), attr)],
    );
    if same {
        return Some(smallvec![v]);
    }
    Some(smallvec![b.op1("memref.cast", &[v], old.clone(), vec![])])
}

/// A collapse of a collapse is one collapse by the composed groups; a
/// collapse of a `memref.cast` from a more static type collapses the
/// cast's source (the result type inferred again, then cast back). MLIR's
/// `ComposeReassociativeReshapeOps` and `CollapseShapeOpMemRefCastFolder`.
/// The composed collapse faults exactly where one of the two would: a
/// non-empty view whose merged dimensions are not contiguous.
fn canonicalize(b: &mut Builder, st: &OpState) -> Option<SmallVec<[ValueId; 2]>> {
    let ctx = &*b.ctx;
    let src = *st.operands.first()?;
    let gs = groups_of(&st.attrs)?;
    let old = st.result_types.first()?.clone();
    if let Some(inner) = ctx.def_op_named(src, "memref.collapse_shape") {
        let gi = groups(ctx, inner)?;
        let composed: Option<Vec<Vec<usize>>> = gs
            .iter()
            .map(|g| {
                g.iter()
                    .map(|&d| gi.get(d).cloned())
                    .collect::<Option<Vec<_>>>()
                    .map(|v| v.concat())
            })
            .collect();
        let x = ctx.operand(inner, 0);
        return rebuild(b, x, &composed?, &old);
    }
    let x = super::canon::cast_source(ctx, src)?;
    rebuild(b, x, &gs, &old)
}

fn interpret(
    it: &mut Interp,
    op: OpId,
    args: &[RtValue],
) -> Result<SmallVec<[RtValue; 2]>, RunError> {
    let ctx = it.ctx;
    let gs = groups(ctx, op).ok_or_else(|| RunError::at(ctx, op, "malformed collapse_shape"))?;
    Ok(smallvec![super::interp::collapse_of(
        ctx, op, &args[0], &gs
    )?])
}

/// Single-dimension groups and the source's type: the source. A collapse
/// of an expand by the same groups back to the expand's source type is
/// that source, where the expand cannot fault: static source sizes and
/// sizes in MLIR 16's form (the verifier checked they multiply to the
/// source's); an expand's groups are always contiguous.
fn fold(ctx: &Context, st: &OpState) -> Option<SmallVec<[FoldResult; 1]>> {
    let src = *st.operands.first()?;
    let gs = groups_of(&st.attrs)?;
    let res = st.result_types.first()?;
    if ctx.ty(src) == res && gs.iter().all(|g| g.len() == 1) {
        return Some(smallvec![FoldResult::Value(src)]);
    }
    let e = ctx.def_op_named(src, "memref.expand_shape")?;
    let x = ctx.operand(e, 0);
    let static_sizes = ctx.ty(x).as_memref()?.shape.iter().all(Option::is_some);
    let inferred = ctx.operands(e).len() == 1;
    (ctx.ty(x) == res && static_sizes && inferred && groups(ctx, e)? == gs)
        .then(|| smallvec![FoldResult::Value(x)])
}

/// Registers `memref.collapse_shape`.
pub(super) fn register(r: &mut Registry) {
    r.register(
        OpSpec::new(
            "memref.collapse_shape",
            "a view merging groups of consecutive dimensions",
        )
        .operands(Arity::Exactly(1))
        .results(Arity::Exactly(1))
        .traits(Traits::DEAD_IF_UNUSED)
        .verify(verify)
        .interpret(interpret)
        .fold(fold)
        .rewrite(canonicalize)
        .rewrite(super::canon::dead_alloc_of_view)
        .custom_form(print, parse),
    );
}
