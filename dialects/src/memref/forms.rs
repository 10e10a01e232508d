//! The custom forms of the `memref` ops, in MLIR's spelling (see the
//! table in [`super`]). `memref.subview`'s is in [`super::subview`].

use ir::ast::{AstValueRef, SyntaxError};
use ir::custom::{CustomParser, ParsedOp};
use ir::printer::Printer;
use ir::{Attribute, Context, OpId, Type};

/// MLIR's name of the operand groups' sizes, which only the generic form
/// carries (L0 keeps it as read and ignores it).
pub(super) const SEGMENTS: &str = "operand_segment_sizes";

fn index_operands(vals: Vec<AstValueRef>) -> impl Iterator<Item = (AstValueRef, Option<Type>)> {
    vals.into_iter().map(|v| (v, Some(Type::Index)))
}

/// The type after `:`, which must be a memref.
fn memref_type(cp: &mut CustomParser) -> Result<Type, SyntaxError> {
    cp.expect_punct(":")?;
    let at = cp.loc();
    let t = cp.expect_type()?;
    if t.as_memref().is_none() {
        return Err(SyntaxError {
            offset: at,
            message: format!("expected a memref type, found '{t}'"),
        });
    }
    Ok(t)
}

/// `(%d0, ...) {attrs} : memref<...>`.
pub(super) fn parse_alloc(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let mut p = ParsedOp::default();
    let mut sizes = cp.expect_paren()?;
    let vals = sizes.value_list()?;
    sizes.finish()?;
    if cp.try_square().is_some() {
        return Err(cp.error("symbol operands need an affine layout, which L0 does not have"));
    }
    p.operands.extend(index_operands(vals));
    cp.optional_attr_dict(&mut p.attrs);
    p.result_types.push(memref_type(cp)?);
    Ok(p)
}

pub(super) fn print_alloc(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    p.w("(");
    p.values(ctx.operands(op));
    p.w(")");
    p.attr_dict(op, &[SEGMENTS]);
    p.w(" : ");
    p.ty(ctx.ty(ctx.result(op, 0)));
    Ok(())
}

/// MLIR 16's generic form: `operand_segment_sizes = array<i32: n, 0>`.
pub(super) fn alloc_generic_attrs(ctx: &Context, op: OpId) -> Vec<(String, Attribute)> {
    let mut attrs: Vec<(String, Attribute)> = ctx
        .op(op)
        .attrs
        .iter()
        .filter(|(k, _)| k != SEGMENTS)
        .cloned()
        .collect();
    attrs.push((
        SEGMENTS.into(),
        Attribute::Keyword(format!("array<i32: {}, 0>", ctx.operands(op).len())),
    ));
    attrs
}

/// `%m {attrs} : memref<...>`.
pub(super) fn parse_dealloc(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let mut p = ParsedOp::default();
    let m = cp.expect_value()?;
    cp.optional_attr_dict(&mut p.attrs);
    let t = memref_type(cp)?;
    p.operands.push((m, Some(t)));
    Ok(p)
}

pub(super) fn print_dealloc(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let m = ctx.operand(op, 0);
    p.w(" ");
    p.value(m);
    p.attr_dict(op, &[]);
    p.w(" : ");
    p.ty(ctx.ty(m));
    Ok(())
}

/// `%m[%i, ...]` then `{attrs} : memref<...>`: the memref and indices.
fn access(cp: &mut CustomParser, p: &mut ParsedOp) -> Result<Type, SyntaxError> {
    let m = cp.expect_value()?;
    let mut idx = cp.expect_square()?;
    let vals = idx.value_list()?;
    idx.finish()?;
    cp.optional_attr_dict(&mut p.attrs);
    let t = memref_type(cp)?;
    p.operands.push((m, Some(t.clone())));
    p.operands.extend(index_operands(vals));
    Ok(t)
}

pub(super) fn parse_load(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let mut p = ParsedOp::default();
    let t = access(cp, &mut p)?;
    if let Some(m) = t.as_memref() {
        p.result_types.push(m.elem.clone());
    }
    Ok(p)
}

pub(super) fn parse_store(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let mut p = ParsedOp::default();
    let x = cp.expect_value()?;
    cp.expect_punct(",")?;
    let t = access(cp, &mut p)?;
    let elem = t.as_memref().map(|m| m.elem.clone());
    p.operands.insert(0, (x, elem));
    Ok(p)
}

fn print_access(p: &mut Printer, op: OpId, base: usize) {
    let ctx = p.ctx();
    let ops = ctx.operands(op);
    p.w(" ");
    if base == 1 {
        p.value(ops[0]);
        p.w(", ");
    }
    p.value(ops[base]);
    p.w("[");
    p.values(&ops[base + 1..]);
    p.w("]");
    p.attr_dict(op, &[]);
    p.w(" : ");
    p.ty(ctx.ty(ops[base]));
}

pub(super) fn print_load(p: &mut Printer, op: OpId) -> std::fmt::Result {
    print_access(p, op, 0);
    Ok(())
}

pub(super) fn print_store(p: &mut Printer, op: OpId) -> std::fmt::Result {
    if p.ctx().operands(op).len() < 2 {
        p.w(" <<malformed memref.store>>");
        return Ok(());
    }
    print_access(p, op, 1);
    Ok(())
}

/// `%m, %c {attrs} : memref<...>`.
pub(super) fn parse_dim(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let mut p = ParsedOp::default();
    let m = cp.expect_value()?;
    cp.expect_punct(",")?;
    let c = cp.expect_value()?;
    cp.optional_attr_dict(&mut p.attrs);
    let t = memref_type(cp)?;
    p.operands.push((m, Some(t)));
    p.operands.push((c, Some(Type::Index)));
    p.result_types.push(Type::Index);
    Ok(p)
}

pub(super) fn print_dim(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let (m, c) = (ctx.operand(op, 0), ctx.operand(op, 1));
    p.w(" ");
    p.value(m);
    p.w(", ");
    p.value(c);
    p.attr_dict(op, &[]);
    p.w(" : ");
    p.ty(ctx.ty(m));
    Ok(())
}

/// `%m {attrs} : T to U`.
pub(super) fn parse_cast(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let mut p = ParsedOp::default();
    let m = cp.expect_value()?;
    cp.optional_attr_dict(&mut p.attrs);
    let from = memref_type(cp)?;
    cp.expect_keyword("to")?;
    let to = cp.expect_type()?;
    p.operands.push((m, Some(from)));
    p.result_types.push(to);
    Ok(p)
}

pub(super) fn print_cast(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let m = ctx.operand(op, 0);
    p.w(" ");
    p.value(m);
    p.attr_dict(op, &[]);
    p.w(" : ");
    p.ty(ctx.ty(m));
    p.w(" to ");
    p.ty(ctx.ty(ctx.result(op, 0)));
    Ok(())
}

/// `%a, %b {attrs} : T to U`.
pub(super) fn parse_copy(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let mut p = ParsedOp::default();
    let a = cp.expect_value()?;
    cp.expect_punct(",")?;
    let b = cp.expect_value()?;
    cp.optional_attr_dict(&mut p.attrs);
    let ta = memref_type(cp)?;
    cp.expect_keyword("to")?;
    let tb = cp.expect_type()?;
    p.operands.push((a, Some(ta)));
    p.operands.push((b, Some(tb)));
    Ok(p)
}

pub(super) fn print_copy(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let (a, b) = (ctx.operand(op, 0), ctx.operand(op, 1));
    p.w(" ");
    p.value(a);
    p.w(", ");
    p.value(b);
    p.attr_dict(op, &[]);
    p.w(" : ");
    p.ty(ctx.ty(a));
    p.w(" to ");
    p.ty(ctx.ty(b));
    Ok(())
}
