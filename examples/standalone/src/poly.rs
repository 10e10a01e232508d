//! The `poly` dialect: one op, `poly.eval`, the value at `x` of a polynomial
//! with constant coefficients.
//!
//! ```text
//! %y = poly.eval %x [1.0, -2.0, 3.0] : f64          // custom form
//! %y = "poly.eval"(%x) {coefficients = [1.0 : f64, -2.0 : f64, 3.0 : f64]}
//!        : (f64) -> f64                             // generic form
//! ```
//!
//! * **Semantics**: `c0 + c1*x + ... + cn*x^n` by Horner's rule,
//!   `((cn*x + c(n-1))*x + ...)*x + c0`, each step an IEEE multiply then an
//!   add in the op's type (`f32` or `f64`; coefficients are rounded to it).
//!   No coefficients is the zero polynomial. No faults.
//! * **Verifier**: one float operand, one result of the same type; the
//!   coefficients are an array of finite floats.
//! * **Fold**: a constant `x` folds to the constant value (the same Horner
//!   steps as at run time, so the fold is exact); a polynomial of degree 0
//!   or with no coefficients folds to its constant.
//! * **Canonicalization** (a construction-time rewrite): trailing zero
//!   coefficients are dropped (`x^n` terms with a zero factor); this changes
//!   no result except the sign of a zero and NaN/infinity propagation
//!   (`0*inf`), which is why it is a rewrite in a dialect of this template
//!   and would be guarded by a fast-math flag in a production one.
//! * **Lowering** (phase `poly`, before L0's `gen` and `arr` phases): the
//!   Horner chain of `arith.mulf`/`arith.addf` with `arith.constant`s.

use smallvec::smallvec;

use ir::ast::SyntaxError;
use ir::custom::{CustomParser, ParsedOp};
use ir::interp::{Interp, RtValue, RunError};
use ir::printer::Printer;
use ir::spec::{Arity, FoldResult, OpSpec, OpState, Registry, Traits};
use ir::{Attribute, Builder, Context, OpId, Type, ValueId};

/// The op's name.
pub const EVAL: &str = "poly.eval";
/// The attribute holding the coefficients, lowest degree first.
pub const COEFFICIENTS: &str = "coefficients";
/// The lowering phase of this dialect, run before L0's phases.
pub const PHASE: &str = "poly";

/// The coefficients of a `poly.eval` state, lowest degree first.
pub fn coefficients(attrs: &[(String, Attribute)]) -> Option<Vec<f64>> {
    match attrs.iter().find(|(k, _)| k == COEFFICIENTS)?.1 {
        Attribute::Array(ref cs) => cs.iter().map(Attribute::as_float).collect(),
        _ => None,
    }
}

/// The coefficients as an attribute of element type `ty`.
pub fn coefficients_attr(cs: &[f64], ty: &Type) -> (String, Attribute) {
    let arr = cs
        .iter()
        .map(|&c| Attribute::float(c, ty.clone()))
        .collect();
    (COEFFICIENTS.to_string(), Attribute::Array(arr))
}

/// Horner's rule in `f64`, or in `f32` when `f32` (each coefficient and each
/// step rounded to `f32`, as the lowered code computes).
pub fn horner(cs: &[f64], x: f64, f32: bool) -> f64 {
    if f32 {
        let x = x as f32;
        cs.iter().rev().fold(0.0f32, |acc, &c| acc * x + c as f32) as f64
    } else {
        cs.iter().rev().fold(0.0, |acc, &c| acc * x + c)
    }
}

fn verify(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = ctx.ty(ctx.operand(op, 0));
    if !t.is_float() {
        return Err(format!("operand must be f32 or f64, but got '{t}'"));
    }
    let r = ctx.ty(ctx.result(op, 0));
    if r != t {
        return Err(format!(
            "result type '{r}' differs from the operand's '{t}'"
        ));
    }
    let attrs = &ctx.op(op).attrs;
    let Some(cs) = coefficients(attrs) else {
        return Err("needs 'coefficients', an array of floats".into());
    };
    if cs.iter().any(|c| !c.is_finite()) {
        return Err("coefficients must be finite".into());
    }
    Ok(())
}

fn interpret(
    it: &mut Interp,
    op: OpId,
    args: &[RtValue],
) -> Result<smallvec::SmallVec<[RtValue; 2]>, RunError> {
    let cs = coefficients(&it.ctx.op(op).attrs).unwrap_or_default();
    Ok(smallvec![match args[0] {
        RtValue::F32(x) => RtValue::F32(horner(&cs, x as f64, true) as f32),
        RtValue::F64(x) => RtValue::F64(horner(&cs, x, false)),
        _ => return Err(RunError::at(it.ctx, op, "expected a float operand")),
    }])
}

fn fold(ctx: &Context, st: &OpState) -> Option<smallvec::SmallVec<[FoldResult; 1]>> {
    let cs = coefficients(&st.attrs)?;
    let ty = st.result_types.first()?;
    let f32 = *ty == Type::F32;
    let value = if cs.len() <= 1 {
        cs.first().copied().unwrap_or(0.0)
    } else {
        let def = ctx.def_op(*st.operands.first()?)?;
        if !ctx.has_traits(def, Traits::CONSTANT_LIKE) {
            return None;
        }
        horner(&cs, ctx.attr(def, "value")?.as_float()?, f32)
    };
    Some(smallvec![FoldResult::Constant(Attribute::float(
        value,
        ty.clone()
    ))])
}

/// Drops trailing zero coefficients.
fn trim_zeros(b: &mut Builder, st: &OpState) -> Option<smallvec::SmallVec<[ValueId; 2]>> {
    let mut cs = coefficients(&st.attrs)?;
    if cs.last() != Some(&0.0) {
        return None;
    }
    while cs.last() == Some(&0.0) {
        cs.pop();
    }
    let ty = st.result_types.first()?.clone();
    let attrs = vec![coefficients_attr(&cs, &ty)];
    Some(smallvec![b.op1(EVAL, &st.operands, ty, attrs)])
}

/// Horner's rule as `arith` ops.
fn lower(b: &mut Builder, st: &OpState) -> Option<smallvec::SmallVec<[ValueId; 2]>> {
    let cs = coefficients(&st.attrs)?;
    let ty = st.result_types.first()?.clone();
    let x = *st.operands.first()?;
    let constant = |b: &mut Builder, c: f64| {
        let attrs = vec![("value".to_string(), Attribute::float(c, ty.clone()))];
        b.op1("arith.constant", &[], ty.clone(), attrs)
    };
    let mut acc = constant(b, *cs.last().unwrap_or(&0.0));
    for &c in cs.iter().rev().skip(1) {
        let m = b.op1("arith.mulf", &[acc, x], ty.clone(), vec![]);
        let k = constant(b, c);
        acc = b.op1("arith.addf", &[m, k], ty.clone(), vec![]);
    }
    Some(smallvec![acc])
}

/// `poly.eval %x [c0, c1, ...] {attrs} : T`.
fn print(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let cs = coefficients(&ctx.op(op).attrs).unwrap_or_default();
    p.w(" ");
    p.value(ctx.operand(op, 0));
    let list: Vec<String> = cs.iter().map(|c| format!("{c:?}")).collect();
    p.w(&format!(" [{}]", list.join(", ")));
    p.attr_dict(op, &[COEFFICIENTS]);
    p.w(" : ");
    p.ty(&ctx.ty(ctx.operand(op, 0)).clone());
    Ok(())
}

fn parse(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    use ir::ast::AstItemKind;
    let x = cp.expect_value()?;
    let mut list = cp.expect_square()?;
    let mut cs = Vec::new();
    while !list.at_end() {
        let c = match list.expect_literal()? {
            (AstItemKind::Float(f), _) => f,
            (AstItemKind::Int(i), _) => i as f64,
            _ => return Err(list.error("expected a number")),
        };
        cs.push(c);
        if !list.try_punct(",") {
            break;
        }
    }
    list.finish()?;
    let mut attrs = Vec::new();
    cp.optional_attr_dict(&mut attrs);
    cp.expect_punct(":")?;
    let ty = cp.expect_type()?;
    attrs.push(coefficients_attr(&cs, &ty));
    Ok(ParsedOp {
        operands: vec![(x, Some(ty.clone()))],
        result_types: vec![ty],
        attrs,
        ..Default::default()
    })
}

/// Registers `poly.eval` and the `poly` phase (first, before L0's).
pub fn register(r: &mut Registry) {
    r.register(
        OpSpec::new(
            EVAL,
            "a polynomial with constant coefficients, evaluated at x",
        )
        .operands(Arity::Exactly(1))
        .results(Arity::Exactly(1))
        .traits(Traits::PURE)
        .verify(verify)
        .fold(fold)
        .rewrite(trim_zeros)
        .interpret(interpret)
        .custom_form(print, parse)
        .lowering(PHASE, lower),
    );
    if !r.phases.contains(&PHASE) {
        r.phases.insert(0, PHASE);
    }
}
