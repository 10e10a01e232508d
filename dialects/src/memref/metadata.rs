//! `memref.extract_strided_metadata`: a view's allocation, offset, sizes
//! and strides as values (MLIR's op).
//!
//! ```text
//! %base, %offset, %sizes:2, %strides:2 = memref.extract_strided_metadata %m
//!     : memref<?x4xf32> -> memref<f32>, index, index, index, index, index
//! ```
//!
//! Results: `%base`, a rank-0 memref of the allocation's elements with the
//! identity layout (element `()` is the allocation's first element; it is
//! a view of the allocation, as `reinterpret_cast`'s source is), then the
//! offset, one size and one stride per dimension of `%m`, as `index`.
//!
//! Canonicalization: the offset, sizes and strides that `%m`'s type
//! states are constants (MLIR's fold). [`super::reinterpret`] looks
//! through `%base` to `%m` and folds a `reinterpret_cast` that restates
//! `%m`'s own metadata to `%m`.

use smallvec::{smallvec, SmallVec};

use ir::ast::SyntaxError;
use ir::custom::{CustomParser, ParsedOp};
use ir::interp::{Interp, MemRefValue, RtValue, RunError};
use ir::printer::Printer;
use ir::spec::{Arity, OpSpec, OpState, Registry, Traits};
use ir::{Builder, Context, MemRefType, OpId, Type, ValueId};

/// The op's name.
pub const NAME: &str = "memref.extract_strided_metadata";

/// The metadata that type `t` states, in result order after `%base`:
/// the offset, the sizes, the strides (`None` where dynamic).
pub fn stated(t: &MemRefType) -> Vec<Option<i64>> {
    let (strides, offset) = t.strides_and_offset();
    let mut out = vec![offset];
    out.extend(
        t.shape
            .iter()
            .map(|d| d.and_then(|n| i64::try_from(n).ok())),
    );
    out.extend(strides);
    out
}

/// `%m attr-dict : T -> memref<E>, index, ...`.
fn parse(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let mut p = ParsedOp::default();
    let m = cp.expect_value()?;
    cp.optional_attr_dict(&mut p.attrs);
    cp.expect_punct(":")?;
    let t = cp.expect_type()?;
    cp.expect_punct("->")?;
    loop {
        p.result_types.push(cp.expect_type()?);
        if !cp.try_punct(",") {
            break;
        }
    }
    p.operands.push((m, Some(t)));
    Ok(p)
}

fn print(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let m = ctx.operand(op, 0);
    p.w(" ");
    p.value(m);
    p.attr_dict(op, &[]);
    p.w(" : ");
    p.ty(ctx.ty(m));
    p.w(" -> ");
    for (i, r) in ctx.results(op).iter().enumerate() {
        if i > 0 {
            p.w(", ");
        }
        p.ty(ctx.ty(*r));
    }
    Ok(())
}

fn verify(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = super::operand_memref(ctx, op, 0)?;
    let rs = ctx.results(op);
    if rs.len() != 2 + 2 * t.rank() {
        return Err(format!(
            "expects {} results (the base, the offset, a size and a stride per dimension), got {}",
            2 + 2 * t.rank(),
            rs.len()
        ));
    }
    let base = MemRefType {
        shape: vec![],
        elem: t.elem.clone(),
        layout: None,
    };
    if ctx.ty(rs[0]).as_memref() != Some(&base) {
        return Err(format!(
            "the base must be '{}', got '{}'",
            Type::MemRef(std::rc::Rc::new(base)),
            ctx.ty(rs[0])
        ));
    }
    if rs[1..].iter().any(|r| *ctx.ty(*r) != Type::Index) {
        return Err("the offset, sizes and strides must be 'index'".into());
    }
    Ok(())
}

fn interpret(
    it: &mut Interp,
    op: OpId,
    args: &[RtValue],
) -> Result<SmallVec<[RtValue; 2]>, RunError> {
    let m = super::interp::view(it.ctx, op, &args[0])?;
    let base = MemRefValue {
        buf: m.buf.clone(),
        offset: 0,
        sizes: vec![],
        strides: vec![],
    };
    let mut out: SmallVec<[RtValue; 2]> = smallvec![super::interp::wrap(base)];
    out.push(RtValue::Int(m.offset));
    out.extend(m.sizes.iter().map(|&n| RtValue::Int(n)));
    out.extend(m.strides.iter().map(|&s| RtValue::Int(s)));
    Ok(out)
}

/// The stated metadata that still has uses becomes constants; the op is
/// rebuilt so that those results are unused (and it is not rewritten
/// again).
fn canonicalize(b: &mut Builder, st: &OpState) -> Option<SmallVec<[ValueId; 2]>> {
    let op = st.existing?;
    let ctx = &*b.ctx;
    let m = *st.operands.first()?;
    let known = stated(ctx.ty(m).as_memref()?);
    let rs = ctx.results(op).to_vec();
    if known.len() + 1 != rs.len() {
        return None;
    }
    let used = |k: usize| !ctx.uses(rs[k + 1]).is_empty();
    if !(0..known.len()).any(|k| known[k].is_some() && used(k)) {
        return None;
    }
    let fresh = b.op(NAME, &[m], &st.result_types, st.attrs.clone());
    let mut out: SmallVec<[ValueId; 2]> = smallvec![fresh[0]];
    for (k, c) in known.iter().enumerate() {
        out.push(match c {
            Some(c) => crate::arith::const_int(b, *c, &Type::Index),
            None => fresh[k + 1],
        });
    }
    Some(out)
}

/// Registers `memref.extract_strided_metadata`.
pub(super) fn register(r: &mut Registry) {
    r.register(
        OpSpec::new(
            NAME,
            "a view's allocation, offset, sizes and strides as values",
        )
        .operands(Arity::Exactly(1))
        .results(Arity::AtLeast(2))
        .traits(Traits::DEAD_IF_UNUSED)
        .verify(verify)
        .interpret(interpret)
        .rewrite(canonicalize)
        .custom_form(print, parse),
    );
}
