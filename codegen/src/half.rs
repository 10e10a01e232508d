//! `f16` and `bf16` in the native backends: both hold a 16-bit float as the
//! `f32` of the same value (in registers and in memory), compute in `f32`
//! like `dialects::arith::eval`, and round each inexact result back to the
//! type with the integer and float sequences below. One algorithm serves
//! Cranelift and LLVM (and PTX) through [`Emit`], so the backends cannot
//! drift apart; the interpreter rounds with an independent integer
//! algorithm (`ir::types::round_float`), which the differential tests
//! compare against.
//!
//! Rounding a float `x` of `F` fraction bits (23 for `f32`, 52 for `f64`)
//! to `p` fraction bits (10 for `f16`, 7 for `bf16`), ties to even:
//! - normal results: add `2^(F-p-1) - 1` plus the lowest kept bit to the
//!   bits of `|x|` and clear the `F - p` low bits (a carry out of the
//!   fraction steps the exponent, which is exactly the rounding up);
//! - below the smallest normal `2^emin`: `(|x| + c) - c` with
//!   `c = 2^(emin - p + F)`, whose unit in the last place is the format's
//!   subnormal step, so the float addition rounds to it;
//! - above the largest finite value: infinity; then `x`'s sign;
//! - NaN: its top `p` fraction bits with the quiet bit set, as hardware
//!   conversions and `half` do.

/// A width of one value in the sequences.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum W {
    I32,
    I64,
    F32,
    F64,
}

/// Two-operand integer operations (`LShr` is a logical shift right).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum IntOp {
    Add,
    Sub,
    And,
    Or,
    Shl,
    LShr,
}

/// Two-operand float operations (IEEE, no fast-math).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum FloatOp {
    Add,
    Sub,
    Mul,
    CopySign,
}

/// Comparisons, giving a backend boolean.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Cmp {
    /// Ordered float `<`.
    FLt,
    /// Ordered float `>`.
    FGt,
    /// Float unordered (a NaN operand).
    FUno,
    /// Unsigned integer `<`.
    ULt,
    /// Unsigned integer `>=`.
    UGe,
    /// Integer `==`.
    Eq,
}

/// Conversions between widths.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Conv {
    /// `i16` to `i32`, zero-extending.
    Zext16,
    /// `i32` to `i16`, keeping the low bits.
    Trunc16,
    /// Unsigned `i32` to `f32` (exact below 2^24).
    U32ToF32,
    /// `f32` to unsigned `i32`, toward zero, saturating.
    F32ToU32,
    /// `f64` to `f32`, rounding (exact for the values converted here).
    F64ToF32,
}

/// The operations a backend provides to the sequences, on its own values.
pub(crate) trait Emit {
    type V: Clone;
    /// A constant of width `w`; for a float width, `bits` are its bits.
    fn konst(&mut self, w: W, bits: u64) -> Self::V;
    /// The same bits at width `to` (of the same size).
    fn bitcast(&mut self, x: Self::V, from: W, to: W) -> Self::V;
    fn int(&mut self, op: IntOp, w: W, a: Self::V, b: Self::V) -> Self::V;
    fn float(&mut self, op: FloatOp, w: W, a: Self::V, b: Self::V) -> Self::V;
    fn fabs(&mut self, w: W, x: Self::V) -> Self::V;
    fn cmp(&mut self, p: Cmp, w: W, a: Self::V, b: Self::V) -> Self::V;
    /// `c ? a : b`, where `c` came from [`Emit::cmp`].
    fn select(&mut self, w: W, c: Self::V, a: Self::V, b: Self::V) -> Self::V;
    fn convert(&mut self, c: Conv, x: Self::V) -> Self::V;
}

/// The format parameters of `f16` (`bf16` when `bf16`): fraction bits, the
/// smallest normal exponent, the largest finite value.
fn format(bf16: bool) -> (u32, i32, f64) {
    if bf16 {
        (7, -126, (2.0 - 2f64.powi(-7)) * 2f64.powi(127))
    } else {
        (10, -14, 65504.0)
    }
}

fn fconst<E: Emit>(e: &mut E, w: W, v: f64) -> E::V {
    let bits = if w == W::F32 {
        (v as f32).to_bits() as u64
    } else {
        v.to_bits()
    };
    e.konst(w, bits)
}

/// Rounds `x` (an `f32`, or an `f64` when `wide`) to `f16` (`bf16` when
/// `bf16`), ties to even, directly (never through `f32` first); the
/// result is the `f32` holding the rounded value.
pub(crate) fn round<E: Emit>(e: &mut E, bf16: bool, x: E::V, wide: bool) -> E::V {
    let (fw, iw, frac) = if wide {
        (W::F64, W::I64, 52u32)
    } else {
        (W::F32, W::I32, 23u32)
    };
    let (p, emin, max) = format(bf16);
    let shift = frac - p;
    let low_mask = (1u64 << shift) - 1;
    let keep_mask = if wide {
        !low_mask
    } else {
        !low_mask & 0xFFFF_FFFF
    };
    // Normal range: round the bits of |x|.
    let a = e.fabs(fw, x.clone());
    let b = e.bitcast(a.clone(), fw, iw);
    let sh = e.konst(iw, shift as u64);
    let kept = e.int(IntOp::LShr, iw, b.clone(), sh);
    let one = e.konst(iw, 1);
    let lsb = e.int(IntOp::And, iw, kept, one);
    let bias = e.konst(iw, (1u64 << (shift - 1)) - 1);
    let up = e.int(IntOp::Add, iw, b, bias);
    let up = e.int(IntOp::Add, iw, up, lsb);
    let mask = e.konst(iw, keep_mask);
    let rn = e.int(IntOp::And, iw, up, mask);
    let rn = e.bitcast(rn, iw, fw);
    // Subnormal range: let the float addition round to the step.
    let c = fconst(e, fw, 2f64.powi(emin - p as i32 + frac as i32));
    let sum = e.float(FloatOp::Add, fw, a.clone(), c.clone());
    let rs = e.float(FloatOp::Sub, fw, sum, c);
    let smallest = fconst(e, fw, 2f64.powi(emin));
    let small = e.cmp(Cmp::FLt, fw, a, smallest);
    let r = e.select(fw, small, rs, rn);
    // Overflow, then the sign.
    let maxv = fconst(e, fw, max);
    let big = e.cmp(Cmp::FGt, fw, r.clone(), maxv);
    let inf = fconst(e, fw, f64::INFINITY);
    let r = e.select(fw, big, inf, r);
    let r = e.float(FloatOp::CopySign, fw, r, x.clone());
    // NaN: the kept fraction bits, quiet.
    let xb = e.bitcast(x.clone(), fw, iw);
    let mask = e.konst(iw, keep_mask);
    let nb = e.int(IntOp::And, iw, xb, mask);
    let quiet = e.konst(iw, 1u64 << (frac - 1));
    let nb = e.int(IntOp::Or, iw, nb, quiet);
    let nan_r = e.bitcast(nb, iw, fw);
    let nan = e.cmp(Cmp::FUno, fw, x.clone(), x);
    let r = e.select(fw, nan, nan_r, r);
    if wide {
        e.convert(Conv::F64ToF32, r)
    } else {
        r
    }
}

/// The `f32` holding the `f16` (`bf16`) whose bits are the `i16` `h`,
/// exactly as `ir::types::half_from_bits` (a signaling NaN stays one).
pub(crate) fn from_bits<E: Emit>(e: &mut E, bf16: bool, h: E::V) -> E::V {
    let h = e.convert(Conv::Zext16, h);
    let k = |e: &mut E, v: u64| e.konst(W::I32, v);
    if bf16 {
        let s = k(e, 16);
        let b = e.int(IntOp::Shl, W::I32, h, s);
        return e.bitcast(b, W::I32, W::F32);
    }
    let m8000 = k(e, 0x8000);
    let sign = e.int(IntOp::And, W::I32, h.clone(), m8000);
    let s16 = k(e, 16);
    let sign = e.int(IntOp::Shl, W::I32, sign, s16);
    let s10 = k(e, 10);
    let exp = e.int(IntOp::LShr, W::I32, h.clone(), s10);
    let m1f = k(e, 0x1F);
    let exp = e.int(IntOp::And, W::I32, exp, m1f);
    let m3ff = k(e, 0x3FF);
    let frac = e.int(IntOp::And, W::I32, h, m3ff);
    let s13 = k(e, 13);
    let frac13 = e.int(IntOp::Shl, W::I32, frac.clone(), s13);
    // Normal: (exp + 112) << 23 | frac << 13.
    let s23 = k(e, 23);
    let ebits = e.int(IntOp::Shl, W::I32, exp.clone(), s23);
    let rebias = k(e, 112 << 23);
    let ebits = e.int(IntOp::Add, W::I32, ebits, rebias);
    let normal = e.int(IntOp::Or, W::I32, ebits, frac13.clone());
    // Infinity or NaN: all exponent bits, the fraction as it is.
    let infexp = k(e, 0x7F80_0000);
    let infnan = e.int(IntOp::Or, W::I32, infexp, frac13);
    // Subnormal or zero: frac * 2^-24, exact.
    let ff = e.convert(Conv::U32ToF32, frac);
    let step = fconst(e, W::F32, 2f64.powi(-24));
    let sub = e.float(FloatOp::Mul, W::F32, ff, step);
    let sub = e.bitcast(sub, W::F32, W::I32);
    let zero = k(e, 0);
    let is_sub = e.cmp(Cmp::Eq, W::I32, exp.clone(), zero);
    let all = k(e, 0x1F);
    let is_top = e.cmp(Cmp::Eq, W::I32, exp, all);
    let r = e.select(W::I32, is_top, infnan, normal);
    let r = e.select(W::I32, is_sub, sub, r);
    let r = e.int(IntOp::Or, W::I32, r, sign);
    e.bitcast(r, W::I32, W::F32)
}

/// The `i16` bits of the `f16` (`bf16`) held in the `f32` `x`, exactly as
/// `ir::types::half_to_bits`.
pub(crate) fn to_bits<E: Emit>(e: &mut E, bf16: bool, x: E::V) -> E::V {
    let b = e.bitcast(x, W::F32, W::I32);
    let k = |e: &mut E, v: u64| e.konst(W::I32, v);
    if bf16 {
        let s = k(e, 16);
        let h = e.int(IntOp::LShr, W::I32, b, s);
        return e.convert(Conv::Trunc16, h);
    }
    let s16 = k(e, 16);
    let sign = e.int(IntOp::LShr, W::I32, b.clone(), s16);
    let m8000 = k(e, 0x8000);
    let sign = e.int(IntOp::And, W::I32, sign, m8000);
    let m7f = k(e, 0x7FFF_FFFF);
    let a = e.int(IntOp::And, W::I32, b, m7f);
    let s13 = k(e, 13);
    let top = e.int(IntOp::LShr, W::I32, a.clone(), s13);
    // Infinity or NaN: all exponent bits and the top fraction bits.
    let m3ff = k(e, 0x3FF);
    let fr = e.int(IntOp::And, W::I32, top.clone(), m3ff);
    let m7c00 = k(e, 0x7C00);
    let infnan = e.int(IntOp::Or, W::I32, fr, m7c00);
    // Normal: the exponent rebiased by -112.
    let rebias = k(e, 112 << 10);
    let normal = e.int(IntOp::Sub, W::I32, top, rebias);
    // Subnormal or zero: |x| * 2^24 is the fraction, exact.
    let af = e.bitcast(a.clone(), W::I32, W::F32);
    let scale = fconst(e, W::F32, 2f64.powi(24));
    let scaled = e.float(FloatOp::Mul, W::F32, af, scale);
    let sub = e.convert(Conv::F32ToU32, scaled);
    let smallest = k(e, 0x3880_0000);
    let is_sub = e.cmp(Cmp::ULt, W::I32, a.clone(), smallest);
    let infbits = k(e, 0x7F80_0000);
    let is_top = e.cmp(Cmp::UGe, W::I32, a, infbits);
    let r = e.select(W::I32, is_top, infnan, normal);
    let r = e.select(W::I32, is_sub, sub, r);
    let r = e.int(IntOp::Or, W::I32, r, sign);
    e.convert(Conv::Trunc16, r)
}

/// `arith.bitcast` where either side is `f16` or `bf16` (the other one of
/// `i16`, `f16`, `bf16`): all 16 bits travel, a signaling NaN included.
/// A half float is held as its `f32`, an `i16` as itself.
pub(crate) fn bitcast<E: Emit>(e: &mut E, from: &ir::Type, to: &ir::Type, x: E::V) -> E::V {
    let bits = if from.is_half() {
        to_bits(e, *from == ir::Type::BF16, x)
    } else {
        x
    };
    if to.is_half() {
        from_bits(e, *to == ir::Type::BF16, bits)
    } else {
        bits
    }
}
