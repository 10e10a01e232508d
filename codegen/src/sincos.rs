//! A sine and a cosine of one operand computed by one call to the C
//! library's `sincos` (`sincosf` at `f32`), as LLVM's instruction selection
//! does for its `llvm.sin`/`llvm.cos` intrinsics. One decision, taken here
//! on the IR, serves Cranelift and LLVM; kernels on the device keep two
//! calls (libdevice).
//!
//! glibc computes `sincos` with the code of `sin` and `cos`, so both results
//! are bit for bit those of the separate calls, and of the interpreter
//! (checked on 4*10^7 random `f64` and `f32` operands, NaNs and infinities
//! included). Where two calls cost about 26 ns on this project's machines,
//! one `sincos` costs about 21 (Parboil's mri-q computes both per sample).
//!
//! The pair: in one block, the first `math.sin` and the first `math.cos`
//! (`arith.sin`/`arith.cos` in L0's registry) of one `f32` or `f64` value.
//! The earlier of the two (the leader) makes the call and binds both
//! results; the later one is then already bound and emits nothing. Another
//! sine or cosine of the same value in the block (CSE merges them, but a
//! pipeline may skip CSE) is a call of its own.

use ir::{Context, OpId, Type, ValueId};

/// A sine and a cosine of one operand, computed together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SinCos {
    /// The operand.
    pub x: ValueId,
    /// The sine's result.
    pub sin: ValueId,
    /// The cosine's result.
    pub cos: ValueId,
    /// The op of the pair that comes first in the block, which makes the
    /// call.
    pub leader: OpId,
}

/// The pair `op` belongs to, if `op` is a sine or cosine of `f32`/`f64`
/// paired as the module documentation says.
pub fn pair_of(ctx: &Context, op: OpId) -> Option<SinCos> {
    let other = match ctx.op_name(op) {
        "arith.sin" => "arith.cos",
        "arith.cos" => "arith.sin",
        _ => return None,
    };
    let x = ctx.try_operand(op, 0)?;
    let r = ctx.try_result(op, 0)?;
    if !matches!(ctx.ty(r), Type::F32 | Type::F64) || ctx.ty(x) != ctx.ty(r) {
        return None;
    }
    let block = ctx.op(op).parent?;
    // The first op named `name` with operand `x` in `block`.
    let first = |name: &str| {
        ctx.uses(x)
            .iter()
            .map(|u| u.op)
            .filter(|&u| {
                ctx.op_name(u) == name
                    && ctx.op(u).parent == Some(block)
                    && ctx.try_result(u, 0).is_some_and(|v| ctx.ty(v) == ctx.ty(r))
            })
            .reduce(|a, b| if ctx.is_before_in_block(b, a) { b } else { a })
    };
    if first(ctx.op_name(op)) != Some(op) {
        return None;
    }
    let partner = first(other)?;
    let leader = if ctx.is_before_in_block(op, partner) {
        op
    } else {
        partner
    };
    let (s, c) = if other == "arith.cos" {
        (op, partner)
    } else {
        (partner, op)
    };
    Some(SinCos {
        x,
        sin: ctx.try_result(s, 0)?,
        cos: ctx.try_result(c, 0)?,
        leader,
    })
}

/// The C library function computing both, at `f32` or at `f64`.
pub(crate) fn libm_name(f32: bool) -> &'static str {
    if f32 {
        "sincosf"
    } else {
        "sincos"
    }
}
