//! Floating-point contraction: which float adds and subtracts are computed
//! as one fused multiply-add (rounded once). One decision, taken here on
//! the IR, serves Cranelift, LLVM and PTX, so that every backend contracts
//! the same operations, except where contracting is slower (contraction
//! is a permission): Cranelift's paired `f64x2` reduction lanes keep the
//! multiply and the add ([`crate::translate::slp`]).
//!
//! An `arith.addf` or `arith.subf` of `f32`/`f64` carrying the fast-math
//! flag `contract` ([`ir::FastMath`]) whose operand is an `arith.mulf`
//! carrying `contract` too is contracted, as LLVM's `-ffp-contract=on`
//! contracts an `a * b + c` within one expression:
//! - `addf(mulf(a, b), c)` and `addf(c, mulf(a, b))` are `fma(a, b, c)`
//!   (the left operand wins when both are products);
//! - `subf(mulf(a, b), c)` is `fma(a, b, -c)`;
//! - `subf(c, mulf(a, b))` is `fma(-a, b, c)`.
//!
//! Negation is exact, so each is the exact `a * b ± c` rounded once. An op
//! without the flag, or a product without it, is never contracted: by
//! default L0 rounds every operation (`--fp-contract=off`). A product with
//! other uses is still computed for them; `f16`/`bf16` (computed in `f32`
//! and rounded per op) are not contracted.

use ir::context::ValueDef;
use ir::{Context, FastMath, OpId, Type, ValueId};

/// A contracted op: `(neg_product ? -a : a) * b + (neg_addend ? -c : c)`,
/// rounded once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fma {
    /// The product's operands.
    pub a: ValueId,
    pub b: ValueId,
    /// The addend.
    pub c: ValueId,
    /// The product is subtracted (`c - a * b`).
    pub neg_product: bool,
    /// The addend is subtracted (`a * b - c`).
    pub neg_addend: bool,
    /// The op's operand (0 or 1) that is the product.
    pub product: usize,
    /// The product's op.
    pub mul: OpId,
}

/// The fused multiply-add computing `op`, if `op` is contracted (see the
/// module documentation).
pub fn fma_of(ctx: &Context, op: OpId) -> Option<Fma> {
    let name = ctx.op_name(op);
    if name != "arith.addf" && name != "arith.subf" {
        return None;
    }
    let t = ctx.ty(*ctx.results(op).first()?);
    if !matches!(t, Type::F32 | Type::F64) || !FastMath::of(ctx, op).contains(FastMath::CONTRACT) {
        return None;
    }
    let opnd = ctx.operands(op);
    let product = |v: ValueId| match ctx.value(v).def {
        ValueDef::Result(m, 0)
            if ctx.op_name(m) == "arith.mulf"
                && FastMath::of(ctx, m).contains(FastMath::CONTRACT) =>
        {
            Some(m)
        }
        _ => None,
    };
    let sub = name == "arith.subf";
    let (k, mul) = match (product(opnd[0]), product(opnd[1])) {
        (Some(m), _) => (0, m),
        (None, Some(m)) => (1, m),
        _ => return None,
    };
    let (a, b) = (ctx.operand(mul, 0), ctx.operand(mul, 1));
    Some(Fma {
        a,
        b,
        c: opnd[1 - k],
        neg_product: sub && k == 1,
        neg_addend: sub && k == 0,
        product: k,
        mul,
    })
}
