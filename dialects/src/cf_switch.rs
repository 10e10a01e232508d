//! `cf.switch` (MLIR's): a branch to one of several blocks chosen by an
//! integer.
//!
//! ```text
//! cf.switch %flag : i32, [
//!   default: ^bb1(%a : i32),
//!   42: ^bb2(%b : i32),
//!   43: ^bb3
//! ]
//! ```
//!
//! The operands are the flag, then the default successor's operands, then
//! each case's (the IR's successor operands); the successors are the
//! default, then one per case. The case values are the attribute
//! `case_values`, kept as an array of integers of the flag's type and
//! written by MLIR's generic form as `dense<[42, 43]> : vector<2xi32>`
//! with `case_operand_segments` and `operand_segment_sizes` (which the IR
//! keeps as the successors' operand counts). The flag is an integer of at
//! least 8 bits (MLIR takes no `index`); the case values are distinct.
//!
//! Canonicalization (MLIR's `SimplifyConstSwitchValue` and
//! `SimplifySwitchWithOnlyDefault`): a switch on a constant, or with no
//! case, becomes a `cf.br`. The native backends compile it as a chain of
//! compares, first case first.

use smallvec::SmallVec;

use ir::ast::AstItemKind;
use ir::ast::SyntaxError;
use ir::custom::{CustomParser, ParsedOp};
use ir::interp::{Interp, RtValue, RunError};
use ir::printer::Printer;
use ir::spec::{Arity, OpSpec, Registry, Traits};
use ir::{Attribute, Builder, Context, OpId, OpState, Type, ValueId};

use crate::scf::constant_int;

/// The attribute holding the case values.
pub const CASE_VALUES: &str = "case_values";
use crate::cf::SEGMENTS;
const CASE_SEGMENTS: &str = "case_operand_segments";

/// The case values of switch `op` (as sign-extended `i64`s), if well formed.
pub fn case_values(ctx: &Context, op: OpId) -> Option<Vec<i64>> {
    match ctx.attr(op, CASE_VALUES) {
        Some(Attribute::Array(items)) => items.iter().map(|a| a.as_int()).collect(),
        None => Some(Vec::new()),
        _ => None,
    }
}

/// `v` as a value of integer type `ty`, sign-extended from its width:
/// MLIR prints case values unsigned (`4294967293` for an `i32` -3), so
/// either reading of the bits is accepted.
fn wrap(v: i128, ty: &Type) -> Option<i64> {
    let w = if *ty == Type::Index {
        64
    } else {
        ty.int_width()?
    };
    if w == 0 || w > 64 || v < -(1i128 << (w - 1)) || v >= (1i128 << w) {
        return None;
    }
    let s = 128 - w;
    Some(((v << s) >> s) as i64)
}

fn parse_switch(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let mut p = ParsedOp::default();
    let flag = cp.expect_value()?;
    cp.expect_punct(":")?;
    let ty = cp.expect_type()?;
    p.operands.push((flag, Some(ty.clone())));
    cp.expect_punct(",")?;
    let mut inner = cp.expect_square()?;
    inner.expect_keyword("default")?;
    inner.expect_punct(":")?;
    inner.successor(&mut p)?;
    let mut cases = Vec::new();
    while inner.try_punct(",") {
        let (lit, at) = inner.expect_literal()?;
        let at_lit = |message: String| SyntaxError {
            offset: at,
            message,
        };
        let AstItemKind::Int(v) = lit else {
            return Err(at_lit("expected an integer case value".into()));
        };
        let v =
            wrap(v, &ty).ok_or_else(|| at_lit(format!("case value {v} does not fit '{ty}'")))?;
        inner.expect_punct(":")?;
        inner.successor(&mut p)?;
        cases.push(Attribute::int(v, ty.clone()));
    }
    inner.finish()?;
    if !cases.is_empty() {
        p.attrs.push((CASE_VALUES.into(), Attribute::Array(cases)));
    }
    cp.optional_attr_dict(&mut p.attrs);
    Ok(p)
}

fn print_switch(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let Some(vals) = case_values(ctx, op) else {
        p.w(" <<malformed cf.switch>>");
        return Ok(());
    };
    if ctx.successors(op).len() != vals.len() + 1 || ctx.num_own_operands(op) != 1 {
        p.w(" <<malformed cf.switch>>");
        return Ok(());
    }
    let flag = ctx.operand(op, 0);
    p.w(" ");
    p.value(flag);
    p.w(" : ");
    p.ty(ctx.ty(flag));
    p.w(", [");
    p.newline();
    p.w("  default: ");
    p.successor(op, 0);
    for (k, v) in vals.iter().enumerate() {
        p.w(",");
        p.newline();
        p.w(&format!("  {v}: "));
        p.successor(op, k + 1);
    }
    p.newline();
    p.w("]");
    p.attr_dict(op, &[CASE_VALUES]);
    Ok(())
}

/// The integers of an `array<i32: ...>` attribute.
fn ints(a: &Attribute) -> Option<Vec<i64>> {
    match a {
        Attribute::Array(items) => items.iter().map(|i| i.as_int()).collect(),
        _ => None,
    }
}

/// The generic form's operand counts per successor, from MLIR's
/// `operand_segment_sizes = array<i32: 1, d, c>` and
/// `case_operand_segments = array<i32: c1, ...>` (both removed).
fn switch_counts(
    attrs: &mut Vec<(String, Attribute)>,
    n: usize,
    succs: usize,
) -> Result<Vec<u32>, String> {
    if succs == 0 {
        return Err("'cf.switch' takes a default successor".into());
    }
    let take = |attrs: &mut Vec<(String, Attribute)>, names: &[&str]| {
        let pos = attrs
            .iter()
            .position(|(k, _)| names.contains(&k.as_str()))?;
        Some(attrs.remove(pos).1)
    };
    let segs = take(attrs, &SEGMENTS);
    let cases = take(attrs, &[CASE_SEGMENTS]);
    let (Some(segs), cases) = (segs, cases) else {
        return if n == 1 {
            Ok(vec![0; succs])
        } else {
            Err("'cf.switch' with successor operands needs 'operand_segment_sizes'".into())
        };
    };
    let bad = || {
        format!(
            "'operand_segment_sizes' and 'case_operand_segments' must give the {n} operands to the {succs} successors"
        )
    };
    let segs = ints(&segs).ok_or_else(bad)?;
    let cases = match cases {
        Some(c) => ints(&c).ok_or_else(bad)?,
        None => vec![0; succs - 1],
    };
    match segs.as_slice() {
        &[1, d, c]
            if d >= 0
                && cases.len() == succs - 1
                && cases.iter().all(|&x| x >= 0)
                && cases.iter().map(|&x| x as i128).sum::<i128>() == c as i128
                && 1 + d as i128 + c as i128 == n as i128 =>
        {
            Ok(std::iter::once(d).chain(cases).map(|x| x as u32).collect())
        }
        _ => Err(bad()),
    }
}

/// MLIR 16's generic attributes: the case values as dense elements, and
/// the operand segments.
fn switch_generic_attrs(ctx: &Context, op: OpId) -> Vec<(String, Attribute)> {
    let mut attrs: Vec<(String, Attribute)> = ctx
        .op(op)
        .attrs
        .iter()
        .filter(|(k, _)| k.as_str() != CASE_VALUES)
        .cloned()
        .collect();
    let succs = ctx.successors(op);
    let join = |xs: &mut dyn Iterator<Item = String>| xs.collect::<Vec<_>>().join(", ");
    let cases: Vec<u32> = succs.iter().skip(1).map(|s| s.1).collect();
    let total: u32 = cases.iter().sum();
    let d = succs.first().map_or(0, |s| s.1);
    attrs.push((
        CASE_SEGMENTS.into(),
        Attribute::Keyword(format!(
            "array<i32{}{}>",
            if cases.is_empty() { "" } else { ": " },
            join(&mut cases.iter().map(|c| c.to_string()))
        )),
    ));
    let flag = ctx.operands(op).first().map(|&f| ctx.ty(f).to_string());
    if let (Some(vals), Some(elem)) = (case_values(ctx, op).filter(|v| !v.is_empty()), flag) {
        attrs.push((
            CASE_VALUES.into(),
            Attribute::Keyword(format!(
                "dense<[{}]> : vector<{}x{elem}>",
                join(&mut vals.iter().map(|v| v.to_string())),
                vals.len()
            )),
        ));
    }
    attrs.push((
        "operand_segment_sizes".into(),
        Attribute::Keyword(format!("array<i32: 1, {d}, {total}>")),
    ));
    attrs
}

fn verify_switch(ctx: &Context, op: OpId) -> Result<(), String> {
    if ctx.num_own_operands(op) != 1 {
        return Err("expects one flag operand before the successor operands".into());
    }
    let ty = ctx.ty(ctx.operand(op, 0));
    // MLIR takes integers, not `index`.
    if *ty == Type::Index || ty.int_width().is_none_or(|w| w < 8) {
        return Err(format!(
            "flag must be an integer of at least 8 bits, not '{ty}'"
        ));
    }
    let Some(vals) = case_values(ctx, op) else {
        return Err(format!("'{CASE_VALUES}' must be an array of integers"));
    };
    let succs = ctx.successors(op).len();
    if succs != vals.len() + 1 {
        return Err(format!(
            "number of case values ({}) must be the number of case destinations ({})",
            vals.len(),
            succs.saturating_sub(1)
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for v in &vals {
        if !seen.insert(v) {
            return Err(format!("case value {v} appears twice"));
        }
    }
    Ok(())
}

/// The operand range of successor `i` among `op`'s forwarded operands.
fn range(ctx: &Context, op: OpId, i: usize) -> std::ops::Range<usize> {
    let counts: Vec<usize> = ctx.successors(op).iter().map(|s| s.1 as usize).collect();
    let start: usize = counts[..i].iter().sum();
    start..start + counts[i]
}

fn interp_switch(
    it: &mut Interp,
    op: OpId,
    args: &[RtValue],
) -> Result<SmallVec<[RtValue; 2]>, RunError> {
    let ctx = it.ctx;
    let x = args
        .first()
        .and_then(|a| a.as_int())
        .ok_or_else(|| RunError::at(ctx, op, "flag is not an integer"))?;
    let vals =
        case_values(ctx, op).ok_or_else(|| RunError::at(ctx, op, "malformed case values"))?;
    let i = crate::scf::switch_op::chosen(&vals, x);
    let r = range(ctx, op, i);
    let out = args[1..][r].iter().cloned().collect();
    it.branch_to(i);
    Ok(out)
}

/// A switch on a constant or with only a default: a `cf.br`.
fn simplify_switch(b: &mut Builder, st: &OpState) -> Option<SmallVec<[ValueId; 2]>> {
    let op = st.existing?;
    let ctx = &*b.ctx;
    let vals = case_values(ctx, op)?;
    if st.successors.len() != vals.len() + 1 || ctx.num_own_operands(op) != 1 {
        return None;
    }
    let i = if vals.is_empty() {
        0
    } else {
        crate::scf::switch_op::chosen(&vals, constant_int(ctx, st.operands[0])?)
    };
    let args: Vec<ValueId> = ctx.successor_operands(op, i).to_vec();
    let mut br = b.state("cf.br", &args, &[], Vec::new());
    br.successors.push((st.successors[i].0, args.len() as u32));
    b.create_raw(br);
    Some(SmallVec::new())
}

pub fn register(r: &mut Registry) {
    r.register(
        OpSpec::new(
            "cf.switch",
            "a branch to the block of the case equal to an integer flag, or to the default",
        )
        .operands(Arity::AtLeast(1))
        .traits(Traits::TERMINATOR | Traits::PURE)
        .successor_counts(switch_counts)
        .generic_attrs(switch_generic_attrs, |_, _| {})
        .verify(verify_switch)
        .interpret(interp_switch)
        .rewrite(simplify_switch)
        .custom_form(print_switch, parse_switch),
    );
}
