//! MLIR's extended integer arithmetic: the full result of an addition or a
//! multiplication, as two values.
//!
//! ```text
//! %sum, %overflow = arith.addui_extended %a, %b : i64, i1
//! %low, %high = arith.mulsi_extended %a, %b : i32
//! %low, %high = arith.mului_extended %a, %b : i64
//! ```
//!
//! Operands are of one integer type `T` (`i1`, `i8`, `i16`, `i32` or `i64`; not
//! `index`, as in MLIR). `addui_extended` gives the wrapped sum and an `i1`
//! that is true when the unsigned sum does not fit in `T` (the carry).
//! `mulsi_extended` and `mului_extended` give the low and high halves (each
//! of type `T`) of the double-width product of the operands read as signed
//! or unsigned. None can fault, so every fold is exact.
//!
//! Folds (MLIR's): constant operands; `addui_extended(x, 0)` is `(x,
//! false)`; a product with 0 is `(0, 0)`; `mului_extended(x, 1)` is `(x, 0)`.
//! Canonicalization: with the second result unused, the op becomes
//! `addi`/`muli` (and a constant stands for the unused result), and a
//! constant operand moves to the right.

use smallvec::{smallvec, SmallVec};

use ir::ast::SyntaxError;
use ir::custom::{CustomParser, ParsedOp};
use ir::interp::{Interp, RtValue, RunError};
use ir::printer::Printer;
use ir::spec::{Arity, FoldResult, OpSpec, OpState, Registry, Traits};
use ir::{Builder, Context, OpId, Type, ValueId};

use super::eval::{sext, zext, Scalar};
use super::fold::{constant_sint, constant_to_right};

/// Which extended op.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Extended {
    AddUI,
    MulSI,
    MulUI,
}

impl Extended {
    fn of(name: &str) -> Option<Extended> {
        Some(match name {
            "arith.addui_extended" => Extended::AddUI,
            "arith.mulsi_extended" => Extended::MulSI,
            "arith.mului_extended" => Extended::MulUI,
            _ => return None,
        })
    }

    /// The single-result op computing the first result alone.
    fn narrow(self) -> &'static str {
        match self {
            Extended::AddUI => "arith.addi",
            _ => "arith.muli",
        }
    }
}

/// The bit width of an operand type (`None`: not an extended op's type).
fn width(ty: &Type) -> Option<u32> {
    match ty {
        Type::Index => None,
        t => t.int_width(),
    }
}

/// Both results of `k` on `a` and `b` of type `ty`, as sign-extended
/// integers (see [`super::eval`]; the carry is `0` or `-1`, an `i1`).
pub fn eval(k: Extended, a: i64, b: i64, ty: &Type) -> (i64, i64) {
    let w = width(ty).unwrap_or(64);
    let mask: u128 = (1u128 << w) - 1;
    let (ua, ub) = (zext(a, ty) as u128, zext(b, ty) as u128);
    match k {
        Extended::AddUI => {
            let sum = (ua + ub) & mask;
            (sext(sum as i64, ty), -((sum < ua) as i64))
        }
        Extended::MulUI => {
            let p = ua * ub;
            (
                sext((p & mask) as i64, ty),
                sext(((p >> w) & mask) as i64, ty),
            )
        }
        Extended::MulSI => {
            let p = (sext(a, ty) as i128) * (sext(b, ty) as i128);
            let bits = p as u128;
            (
                sext((bits & mask) as i64, ty),
                sext(((bits >> w) & mask) as i64, ty),
            )
        }
    }
}

fn kind_of(ctx: &Context, op: OpId) -> Extended {
    Extended::of(ctx.op_name(op)).expect("registered extended op")
}

fn verify(ctx: &Context, op: OpId) -> Result<(), String> {
    let (a, b) = (ctx.operand(op, 0), ctx.operand(op, 1));
    let t = ctx.ty(a);
    if width(t).is_none() {
        return Err(format!(
            "operands must be signless integers (i1, i8, i16, i32, i64), got '{t}'"
        ));
    }
    if ctx.ty(b) != t {
        return Err(format!(
            "operands must have the same type, got '{t}' and '{}'",
            ctx.ty(b)
        ));
    }
    let second = match kind_of(ctx, op) {
        Extended::AddUI => Type::I1,
        _ => t.clone(),
    };
    let (r0, r1) = (ctx.ty(ctx.result(op, 0)), ctx.ty(ctx.result(op, 1)));
    if r0 != t || *r1 != second {
        return Err(format!(
            "results must be '{t}' and '{second}', got '{r0}' and '{r1}'"
        ));
    }
    Ok(())
}

fn interp(it: &mut Interp, op: OpId, args: &[RtValue]) -> Result<SmallVec<[RtValue; 2]>, RunError> {
    let ctx = it.ctx;
    let t = ctx.ty(ctx.operand(op, 0));
    let int = |v: &RtValue| match Scalar::from_rt(v, t) {
        Some(Scalar::Int(i)) => Ok(i),
        _ => Err(RunError::at(ctx, op, "operands are not integers")),
    };
    let (a, b) = (int(&args[0])?, int(&args[1])?);
    let (r0, r1) = eval(kind_of(ctx, op), a, b, t);
    let t1 = ctx.ty(ctx.result(op, 1));
    Ok(smallvec![
        Scalar::Int(r0).to_rt(t),
        Scalar::Int(r1).to_rt(t1)
    ])
}

fn fold(ctx: &Context, st: &OpState) -> Option<SmallVec<[FoldResult; 1]>> {
    let k = Extended::of(ctx.registry().spec(st.kind).name)?;
    let t = ctx.ty(st.operands[0]);
    let t1 = st.result_types.get(1)?;
    let (a, b) = (
        constant_sint(ctx, st.operands[0], t),
        constant_sint(ctx, st.operands[1], t),
    );
    let c = |v: i64, ty: &Type| FoldResult::Constant(Scalar::Int(v).to_attr(ty));
    if let (Some(a), Some(b)) = (a, b) {
        let (r0, r1) = eval(k, a, b, t);
        return Some(smallvec![c(r0, t), c(r1, t1)]);
    }
    let x = st.operands[0];
    match (k, b) {
        (Extended::AddUI, Some(0)) => Some(smallvec![FoldResult::Value(x), c(0, t1)]),
        (Extended::MulSI | Extended::MulUI, Some(0)) => Some(smallvec![c(0, t), c(0, t1)]),
        // 1 is 1 only at a width above 1 (an i1 `true` is -1 when signed).
        (Extended::MulUI, Some(1)) if *t != Type::I1 => {
            Some(smallvec![FoldResult::Value(x), c(0, t1)])
        }
        _ => None,
    }
}

/// A constant operand moves to the right; with the second result unused,
/// the single-result op replaces it.
fn rewrite(b: &mut Builder, st: &OpState) -> Option<SmallVec<[ValueId; 2]>> {
    if let Some(r) = constant_to_right(b, st) {
        return Some(r);
    }
    let k = Extended::of(b.ctx.registry().spec(st.kind).name)?;
    let (x, y) = (st.operands[0], st.operands[1]);
    let op = st.existing?;
    if !b.ctx.unused(b.ctx.result(op, 1)) {
        return None;
    }
    let t = st.result_types[0].clone();
    let t1 = st.result_types[1].clone();
    let r0 = b.op1(k.narrow(), &[x, y], t, vec![]);
    let dead = super::const_int(b, 0, &t1);
    Some(smallvec![r0, dead])
}

/// ` %a, %b : T, i1` (`addui_extended`) or ` %a, %b : T`.
fn print(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    p.w(" ");
    p.values(ctx.operands(op));
    p.attr_dict(op, &[]);
    p.w(" : ");
    p.ty(ctx.ty(ctx.operand(op, 0)));
    if kind_of(ctx, op) == Extended::AddUI {
        p.w(", ");
        p.ty(ctx.ty(ctx.result(op, 1)));
    }
    Ok(())
}

fn parse_add(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    parse(cp, true)
}

fn parse_mul(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    parse(cp, false)
}

fn parse(cp: &mut CustomParser, add: bool) -> Result<ParsedOp, SyntaxError> {
    let at = cp.loc();
    let vals = cp.value_list()?;
    if vals.len() != 2 {
        return Err(SyntaxError {
            offset: at,
            message: format!("expected 2 operands, found {}", vals.len()),
        });
    }
    let mut attrs = Vec::new();
    cp.optional_attr_dict(&mut attrs);
    cp.expect_punct(":")?;
    let t = cp.expect_type()?;
    let second = if add {
        cp.expect_punct(",")?;
        cp.expect_type()?
    } else {
        t.clone()
    };
    Ok(ParsedOp {
        successors: Vec::new(),
        operands: vals.into_iter().map(|v| (v, Some(t.clone()))).collect(),
        result_types: vec![t, second],
        attrs,
        regions: vec![],
    })
}

/// Registers the three extended ops.
pub fn register(r: &mut Registry) {
    let ops: [(&'static str, &'static str, bool); 3] = [
        (
            "arith.addui_extended",
            "wrapped sum and unsigned carry (i1)",
            true,
        ),
        (
            "arith.mulsi_extended",
            "low and high halves of the signed double-width product",
            false,
        ),
        (
            "arith.mului_extended",
            "low and high halves of the unsigned double-width product",
            false,
        ),
    ];
    for (name, summary, add) in ops {
        let parse_fn: ir::spec::ParseFn = if add { parse_add } else { parse_mul };
        r.register(
            OpSpec::new(name, summary)
                .operands(Arity::Exactly(2))
                .results(Arity::Exactly(2))
                .traits(Traits::PURE | Traits::COMMUTATIVE)
                .verify(verify)
                .fold(fold)
                .rewrite(rewrite)
                .interpret(interp)
                .custom_form(print, parse_fn),
        );
    }
}

/// The kind of extended op `name`, if it is one.
pub fn kind(name: &str) -> Option<Extended> {
    Extended::of(name)
}
