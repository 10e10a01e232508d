//! `memref.reinterpret_cast`: a view of the source's allocation with the
//! given offset, sizes and strides (MLIR's op), and `memref.rank`.
//!
//! ```text
//! %v = memref.reinterpret_cast %m to offset: [%o], sizes: [4, %n], strides: [%n, 1]
//!     : memref<?xf32> to memref<4x?xf32, strided<[?, 1], offset: ?>>
//! ```
//!
//! The lists are kept as [`super::subview`]'s are (`static_offsets` with
//! one entry, `static_sizes`, `static_strides`, [`DYNAMIC`] for an
//! operand; the operands are the source, then the dynamic entries). The
//! source's own offset, sizes and strides do not matter: element
//! `(i0, i1, ...)` of the result is element `o + i0*t0 + i1*t1 + ...` of
//! the allocation. The result type states what the lists state and may
//! add what the operands are at run time (checked, as for `memref.cast`).
//!
//! MLIR leaves a view outside the allocation undefined; the interpreter
//! and `lower` fault, with the op's location, where a non-empty view
//! reaches outside it. L0 takes no negative offset, size or stride.
//!
//! Canonicalization: constant operands become static entries, with a
//! cast back where the result type changes; a view source (a cast,
//! subview, reinterpret_cast, collapse or expand, or the base of
//! `extract_strided_metadata`) is looked through to the memref it views,
//! whose allocation is the same; and a reinterpret_cast that restates that
//! memref's own offset, sizes and strides is that memref (cast to the
//! result type where it differs).

use smallvec::{smallvec, SmallVec};

use ir::custom::{CustomParser, ParsedOp};
use ir::interp::{Interp, RtValue, RunError};
use ir::printer::Printer;
use ir::spec::{Arity, FoldResult, OpSpec, OpState, Registry, Traits};
use ir::{Attribute, Builder, Context, MemRefType, OpId, StridedLayout, Type, ValueId};

use super::subview::{encode, generic_attrs, mixed, mixed_of, parse_list, Mixed, LISTS};

/// The type the lists state for a result with elements `elem`: static
/// sizes, strides and offset where the entries are constants.
pub fn stated(elem: &Type, parts: &[Vec<Mixed>; 3]) -> MemRefType {
    let stat = |m: &Mixed| match m {
        Mixed::Static(v) => Some(*v),
        Mixed::Dynamic(_) => None,
    };
    MemRefType {
        shape: parts[1]
            .iter()
            .map(|m| stat(m).and_then(|v| u64::try_from(v).ok()))
            .collect(),
        elem: elem.clone(),
        layout: Some(StridedLayout {
            strides: parts[2].iter().map(stat).collect(),
            offset: parts[0].first().and_then(stat),
        }),
    }
}

fn parse(cp: &mut CustomParser) -> Result<ParsedOp, ir::ast::SyntaxError> {
    let mut p = ParsedOp::default();
    let src = cp.expect_value()?;
    cp.expect_keyword("to")?;
    let mut vals = Vec::new();
    let mut lists = Vec::new();
    for (k, word) in ["offset", "sizes", "strides"].iter().enumerate() {
        if k > 0 {
            cp.expect_punct(",")?;
        }
        cp.expect_keyword(word)?;
        cp.expect_punct(":")?;
        lists.push(parse_list(cp, &mut vals)?);
    }
    cp.optional_attr_dict(&mut p.attrs);
    cp.expect_punct(":")?;
    let from = cp.expect_type()?;
    cp.expect_keyword("to")?;
    let to = cp.expect_type()?;
    super::subview::push_lists(&mut p, src, vals, lists);
    p.operands[0].1 = Some(from);
    p.result_types.push(to);
    Ok(p)
}

fn print(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let Some(parts) = mixed(ctx, op) else {
        p.w(" <<malformed memref.reinterpret_cast>>");
        return Ok(());
    };
    let src = ctx.operand(op, 0);
    p.w(" ");
    p.value(src);
    p.w(" to");
    for (k, list) in parts.iter().enumerate() {
        p.w(["", ","][usize::from(k > 0)]);
        p.w([" offset: [", " sizes: [", " strides: ["][k]);
        super::subview::print_entries(p, list);
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

fn verify(ctx: &Context, op: OpId) -> Result<(), String> {
    let src = super::operand_memref(ctx, op, 0)?;
    let res = super::result_memref(ctx, op)?;
    if src.elem != res.elem {
        return Err(format!(
            "the result's elements '{}' differ from the source's '{}'",
            res.elem, src.elem
        ));
    }
    let parts = mixed(ctx, op).ok_or_else(|| {
        "'static_offsets', 'static_sizes' and 'static_strides' must be integer lists whose dynamic entries match the operands".to_string()
    })?;
    let want = [1, res.rank(), res.rank()];
    for (k, list) in parts.iter().enumerate() {
        if list.len() != want[k] {
            return Err(format!(
                "expects {} {} ({}), got {}",
                want[k],
                &LISTS[k][7..],
                if k == 0 { "one" } else { "the result's rank" },
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
    let st = stated(&res.elem, &parts);
    super::check_result_agrees(ctx, op, st, "stated")
}

fn interpret(
    it: &mut Interp,
    op: OpId,
    args: &[RtValue],
) -> Result<SmallVec<[RtValue; 2]>, RunError> {
    let ctx = it.ctx;
    let lists = super::subview::run_lists(ctx, op, args, "malformed reinterpret_cast")?;
    Ok(smallvec![super::interp::reinterpret_of(
        ctx, op, &args[0], lists
    )?])
}

/// The value that source `v`'s allocation comes from through views
/// (a reinterpret_cast reads only the allocation): the first operand of a
/// view op ([`super::VIEWS`]) or of `extract_strided_metadata` (its base).
fn allocation_source(ctx: &Context, v: ValueId) -> Option<ValueId> {
    let d = ctx.def_op(v)?;
    let name = ctx.op_name(d);
    let base = name == super::metadata::NAME && ctx.result(d, 0) == v;
    (super::is_view(name) || base).then(|| ctx.operand(d, 0))
}

/// Whether `parts` state exactly `x`'s own offset, sizes and strides:
/// each entry a constant equal to what `x`'s type states, or the value
/// that `extract_strided_metadata` of `x` gives for it, or (a size) the
/// operand that gave `x` that size.
fn restates(ctx: &Context, x: ValueId, parts: &[Vec<Mixed>; 3]) -> bool {
    let Some(t) = ctx.ty(x).as_memref() else {
        return false;
    };
    let r = t.rank();
    if parts[0].len() != 1 || parts[1].len() != r || parts[2].len() != r {
        return false;
    }
    let known = super::metadata::stated(t);
    let entries: Vec<Mixed> = parts.iter().flatten().copied().collect();
    entries.iter().enumerate().all(|(k, m)| match m {
        Mixed::Static(c) => known[k] == Some(*c),
        Mixed::Dynamic(v) => {
            let of_x = ctx
                .def_op_named(*v, super::metadata::NAME)
                .is_some_and(|d| ctx.operand(d, 0) == x && ctx.results(d).get(k + 1) == Some(v));
            let size = (1..=r).contains(&k) && super::canon::size_of(ctx, x, k - 1) == Some(*m);
            of_x || size
        }
    })
}

/// A reinterpret_cast that restates its allocation source's own metadata
/// is that source (a cast to the result type where it differs). Constant
/// operands become static entries (a cast back to the old type where that
/// changes it), and a view source is looked through to its allocation
/// source ([`allocation_source`]). MLIR's `ReinterpretCastOp` folds and
/// `ReinterpretCastOpExtractStridedMetadataFolder`.
fn canonicalize(b: &mut Builder, st: &OpState) -> Option<SmallVec<[ValueId; 2]>> {
    let ctx = &*b.ctx;
    let parts = mixed_of(&st.attrs, &st.operands)?;
    let x = allocation_source(ctx, st.operands[0]).unwrap_or(st.operands[0]);
    if restates(ctx, x, &parts) {
        let to = st.result_types.first()?;
        if ctx.ty(x) == to {
            return Some(smallvec![x]);
        }
        if super::cast_compatible(ctx.ty(x).as_memref()?, to.as_memref()?) {
            return Some(smallvec![b.op1("memref.cast", &[x], to.clone(), vec![])]);
        }
    }
    let mut new_parts = parts.clone();
    let mut changed = super::subview::static_constants(ctx, &mut new_parts, &[0, 0, 0]);
    let mut src = st.operands[0];
    if let Some(s) = allocation_source(ctx, src) {
        src = s;
        changed = true;
    }
    if !changed {
        return None;
    }
    let old = st.result_types.first()?.as_memref()?.clone();
    let new = stated(&old.elem, &new_parts);
    if !super::cast_compatible(&new, &old) {
        return None;
    }
    // The new result type: the old one with what the constants add.
    let (os, oo) = old.strides_and_offset();
    let (ns, no) = new.strides_and_offset();
    let ty = MemRefType {
        shape: old
            .shape
            .iter()
            .zip(&new.shape)
            .map(|(a, b)| a.or(*b))
            .collect(),
        elem: old.elem.clone(),
        layout: Some(StridedLayout {
            strides: os.iter().zip(&ns).map(|(a, b)| a.or(*b)).collect(),
            offset: oo.or(no),
        }),
    };
    let (mut attrs, vals) = encode(&new_parts);
    attrs.extend(
        st.attrs
            .iter()
            .filter(|(k, _)| !LISTS.contains(&k.as_str()) && k != super::forms::SEGMENTS)
            .cloned(),
    );
    let mut operands = vec![src];
    operands.extend(vals);
    let keep = ty.strides_and_offset() == old.strides_and_offset() && ty.shape == old.shape;
    let new_ty = if keep {
        st.result_types[0].clone()
    } else {
        Type::MemRef(std::rc::Rc::new(ty))
    };
    let v = b.op1("memref.reinterpret_cast", &operands, new_ty, attrs);
    if keep {
        return Some(smallvec![v]);
    }
    let old_ty = st.result_types[0].clone();
    Some(smallvec![b.op1("memref.cast", &[v], old_ty, vec![])])
}

fn parse_rank(cp: &mut CustomParser) -> Result<ParsedOp, ir::ast::SyntaxError> {
    let mut p = ParsedOp::default();
    let m = cp.expect_value()?;
    cp.optional_attr_dict(&mut p.attrs);
    cp.expect_punct(":")?;
    let t = cp.expect_type()?;
    p.operands.push((m, Some(t)));
    p.result_types.push(Type::Index);
    Ok(p)
}

fn print_rank(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let m = ctx.operand(op, 0);
    p.w(" ");
    p.value(m);
    p.attr_dict(op, &[]);
    p.w(" : ");
    p.ty(ctx.ty(m));
    Ok(())
}

fn verify_rank(ctx: &Context, op: OpId) -> Result<(), String> {
    super::operand_memref(ctx, op, 0)?;
    if *ctx.ty(ctx.result(op, 0)) != Type::Index {
        return Err("the result must be 'index'".into());
    }
    Ok(())
}

/// The rank of a (ranked) memref is a constant.
fn fold_rank(ctx: &Context, st: &OpState) -> Option<SmallVec<[FoldResult; 1]>> {
    let m = ctx.ty(*st.operands.first()?).as_memref()?;
    Some(smallvec![FoldResult::Constant(Attribute::int(
        m.rank() as i64,
        Type::Index
    ))])
}

fn interpret_rank(
    it: &mut Interp,
    op: OpId,
    args: &[RtValue],
) -> Result<SmallVec<[RtValue; 2]>, RunError> {
    let m = super::interp::view(it.ctx, op, &args[0])?;
    Ok(smallvec![RtValue::Int(m.sizes.len() as i64)])
}

/// Registers `memref.reinterpret_cast` and `memref.rank`.
pub(super) fn register(r: &mut Registry) {
    r.register(
        OpSpec::new(
            "memref.reinterpret_cast",
            "a view of the source's allocation with the given offset, sizes and strides",
        )
        .operands(Arity::AtLeast(1))
        .results(Arity::Exactly(1))
        .traits(Traits::DEAD_IF_UNUSED)
        .verify(verify)
        .interpret(interpret)
        .rewrite(canonicalize)
        .rewrite(super::canon::dead_alloc_of_view)
        .generic_attrs(generic_attrs, |_, _| {})
        .custom_form(print, parse),
    );
    r.register(
        OpSpec::new("memref.rank", "the number of dimensions of a memref")
            .operands(Arity::Exactly(1))
            .results(Arity::Exactly(1))
            .traits(Traits::PURE)
            .verify(verify_rank)
            .interpret(interpret_rank)
            .fold(fold_rank)
            .custom_form(print_rank, parse_rank),
    );
}
