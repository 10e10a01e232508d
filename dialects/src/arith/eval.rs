//! Scalar semantics of the arith ops, shared by the interpreter and the
//! folder so that folding a constant gives exactly what running the op gives.
//!
//! Integers are carried as `i64` sign-extended from the type's width (so an
//! `i1` `true` is `-1` here, as in MLIR's signless-as-signed view); every
//! integer result is truncated to the width and sign-extended again
//! (wrapping arithmetic). `f32` values are computed in `f32`; `f16` and
//! `bf16` values are held as `Scalar::F32`, computed in `f32` and rounded to
//! their type (ties to even). For `+ - * /`, `sqrt` and `fma` that gives the
//! correctly rounded result: `f32` has at least `2p + 2` significant bits
//! for both (Figueroa, "When is double rounding innocuous?", 1995).

use ir::interp::RtValue;
use ir::types::{half_from_bits, half_to_bits, round_float};
use ir::{Attribute, Type};

/// Rounds an `f32` result to `ty` when `ty` is `f16` or `bf16`.
pub fn round_half(ty: &Type, x: f32) -> f32 {
    if ty.is_half() {
        round_float(x as f64, ty) as f32
    } else {
        x
    }
}

/// A scalar operand or result of an arith op.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Scalar {
    /// An integer of any integer type, sign-extended from its width.
    Int(i64),
    /// An `f32`, or an `f16`/`bf16` value (exact in `f32`).
    F32(f32),
    F64(f64),
}

/// Truncates `v` to the width of integer type `ty` and sign-extends it
/// (`i1`: `0` or `-1`). Other types leave `v` unchanged.
pub fn sext(v: i64, ty: &Type) -> i64 {
    match ty.int_width() {
        Some(0) => 0,
        Some(w) if w < 64 => (v << (64 - w)) >> (64 - w),
        _ => v,
    }
}

/// `v` as an unsigned number of the width of `ty`.
pub fn zext(v: i64, ty: &Type) -> u64 {
    match ty.int_width() {
        Some(0) => 0,
        Some(w) if w < 64 => (v as u64) & ((1u64 << w) - 1),
        _ => v as u64,
    }
}

impl Scalar {
    /// Reads a run-time value of type `ty`.
    pub fn from_rt(v: &RtValue, ty: &Type) -> Option<Scalar> {
        match (v, ty) {
            (RtValue::Bool(b), t) if t.is_integer() => Some(Scalar::Int(sext(*b as i64, t))),
            (RtValue::Int(i), t) if t.is_integer() => Some(Scalar::Int(sext(*i, t))),
            (RtValue::F32(x), Type::F16 | Type::BF16 | Type::F32) => Some(Scalar::F32(*x)),
            (RtValue::F64(x), Type::F64) => Some(Scalar::F64(*x)),
            _ => None,
        }
    }
    /// The run-time value of type `ty` (`i1` as `Bool`, `i32` sign-extended).
    pub fn to_rt(self, ty: &Type) -> RtValue {
        match self {
            Scalar::Int(v) if *ty == Type::I1 => RtValue::Bool(v & 1 != 0),
            Scalar::Int(v) => RtValue::Int(sext(v, ty)),
            Scalar::F32(x) => RtValue::F32(x),
            Scalar::F64(x) => RtValue::F64(x),
        }
    }
    /// Reads a constant attribute of type `ty` (`Bool` counts as `i1`).
    pub fn from_attr(a: &Attribute, ty: &Type) -> Option<Scalar> {
        match (a, ty) {
            (Attribute::Int(v, t), _) if t == ty && ty.is_integer() => {
                Some(Scalar::Int(sext(*v, ty)))
            }
            (Attribute::Bool(b), Type::I1) => Some(Scalar::Int(-(*b as i64))),
            (Attribute::Float(x, t), Type::F16 | Type::BF16 | Type::F32) if t == ty => {
                Some(Scalar::F32(*x as f32))
            }
            (Attribute::Float(x, Type::F64), Type::F64) => Some(Scalar::F64(*x)),
            _ => None,
        }
    }
    /// The constant attribute of type `ty` (`i1` as `Int(0|1, i1)`).
    pub fn to_attr(self, ty: &Type) -> Attribute {
        match self {
            Scalar::Int(v) => Attribute::int(v, ty.clone()),
            Scalar::F32(x) => Attribute::Float(x as f64, ty.clone()),
            Scalar::F64(x) => Attribute::Float(x, Type::F64),
        }
    }
    /// The integer, if this is one.
    pub fn int(self) -> Option<i64> {
        match self {
            Scalar::Int(v) => Some(v),
            _ => None,
        }
    }
    /// Whether this is the float `v` bit for bit.
    pub fn is_float_bits(self, v: f64) -> bool {
        match self {
            Scalar::F32(x) => x.to_bits() == (v as f32).to_bits(),
            Scalar::F64(x) => x.to_bits() == v.to_bits(),
            Scalar::Int(_) => false,
        }
    }
}

/// Binary ops whose operands and result share one type.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum Bin {
    AddI,
    SubI,
    MulI,
    DivSI,
    RemSI,
    AndI,
    OrI,
    XorI,
    MinI,
    MaxI,
    AddF,
    SubF,
    MulF,
    DivF,
    MinF,
    MaxF,
    Pow,
    ShLI,
    ShRSI,
    ShRUI,
    DivUI,
    RemUI,
    CeilDivSI,
    FloorDivSI,
    CeilDivUI,
    MinUI,
    MaxUI,
    RemF,
    MinNumF,
    MaxNumF,
    CopySign,
}

impl Bin {
    pub const ALL: [Bin; 31] = [
        Bin::AddI,
        Bin::SubI,
        Bin::MulI,
        Bin::DivSI,
        Bin::RemSI,
        Bin::AndI,
        Bin::OrI,
        Bin::XorI,
        Bin::MinI,
        Bin::MaxI,
        Bin::AddF,
        Bin::SubF,
        Bin::MulF,
        Bin::DivF,
        Bin::MinF,
        Bin::MaxF,
        Bin::Pow,
        Bin::ShLI,
        Bin::ShRSI,
        Bin::ShRUI,
        Bin::DivUI,
        Bin::RemUI,
        Bin::CeilDivSI,
        Bin::FloorDivSI,
        Bin::CeilDivUI,
        Bin::MinUI,
        Bin::MaxUI,
        Bin::RemF,
        Bin::MinNumF,
        Bin::MaxNumF,
        Bin::CopySign,
    ];
    /// Whether the op faults at run time on some operands (integer
    /// division and remainder by zero): it may not be executed
    /// speculatively.
    pub fn can_fault(self) -> bool {
        matches!(
            self,
            Bin::DivSI
                | Bin::RemSI
                | Bin::DivUI
                | Bin::RemUI
                | Bin::CeilDivSI
                | Bin::FloorDivSI
                | Bin::CeilDivUI
        )
    }
    /// The op of discriminant `k`.
    pub const fn of(k: u8) -> Bin {
        Bin::ALL[k as usize]
    }
}

/// Unary ops whose operand and result share one type.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum Un {
    NegF,
    Sqrt,
    Exp,
    Log,
    Sin,
    Cos,
    Abs,
    Tanh,
    Erf,
    Floor,
    Ceil,
    /// To the nearest integer, halves away from zero (C's `round`).
    Round,
}

impl Un {
    pub const ALL: [Un; 12] = [
        Un::NegF,
        Un::Sqrt,
        Un::Exp,
        Un::Log,
        Un::Sin,
        Un::Cos,
        Un::Abs,
        Un::Tanh,
        Un::Erf,
        Un::Floor,
        Un::Ceil,
        Un::Round,
    ];
    /// The op of discriminant `k`.
    pub const fn of(k: u8) -> Un {
        Un::ALL[k as usize]
    }
}

/// Casts.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum Cast {
    SIToFP,
    FPToSI,
    IndexCast,
    ExtF,
    TruncF,
    ExtSI,
    ExtUI,
    TruncI,
    UIToFP,
    FPToUI,
    IndexCastUI,
    Bitcast,
}

impl Cast {
    pub const ALL: [Cast; 12] = [
        Cast::SIToFP,
        Cast::FPToSI,
        Cast::IndexCast,
        Cast::ExtF,
        Cast::TruncF,
        Cast::ExtSI,
        Cast::ExtUI,
        Cast::TruncI,
        Cast::UIToFP,
        Cast::FPToUI,
        Cast::IndexCastUI,
        Cast::Bitcast,
    ];
    /// The op of discriminant `k`.
    pub const fn of(k: u8) -> Cast {
        Cast::ALL[k as usize]
    }
}

/// `x` toward zero, saturated to the signed range of `w` bits (NaN gives
/// 0), as Rust's `as` does at 8, 16, 32 and 64 bits, at every width. (An `f32` widened to
/// `f64` first converts the same: the widening is exact.)
pub fn saturate_signed(x: f64, w: u32) -> i64 {
    if w == 0 || x.is_nan() {
        return 0;
    }
    if w >= 64 {
        return x as i64;
    }
    // The bounds are powers of two, exact in f64 at every width.
    let bound = 2f64.powi(w as i32 - 1);
    let t = x.trunc();
    if t >= bound {
        (1i64 << (w - 1)) - 1
    } else if t < -bound {
        -(1i64 << (w - 1))
    } else {
        t as i64
    }
}

/// `x` toward zero, saturated to `[0, 2^w - 1]` (NaN gives 0).
pub fn saturate_unsigned(x: f64, w: u32) -> u64 {
    if w == 0 || x.is_nan() {
        return 0;
    }
    if w >= 64 {
        return x as u64;
    }
    let t = x.trunc();
    if t <= 0.0 {
        0
    } else if t >= 2f64.powi(w as i32) {
        (1u64 << w) - 1
    } else {
        t as u64
    }
}

/// The bit width of integer type `ty` (`index` is 64 bits).
pub fn width(ty: &Type) -> u32 {
    ty.int_width().unwrap_or(64)
}

/// A shift of `x` (of type `ty`) by `amount` (read unsigned): `shli`,
/// `shrsi` or `shrui`. MLIR leaves a shift by the width or more undefined
/// (poison); L0 defines it as shifting every bit out (0, or the sign for
/// `shrsi`), identically in the interpreter and the native backends, and
/// never folds it.
fn shift(op: Bin, ty: &Type, x: i64, amount: i64) -> i64 {
    let w = width(ty);
    let a = zext(amount, ty);
    if a >= w as u64 {
        return match op {
            Bin::ShRSI if x < 0 => -1,
            _ => 0,
        };
    }
    let a = a as u32;
    match op {
        Bin::ShLI => x.wrapping_shl(a),
        Bin::ShRSI => x >> a,
        _ => (zext(x, ty) >> a) as i64,
    }
}

/// The run-time fault of integer division or remainder by zero.
pub const DIV_BY_ZERO: &str = "integer division by zero";
const BAD_KIND: &str = "operands have the wrong type";

macro_rules! min_max {
    ($min:ident, $max:ident, $t:ty) => {
        /// IEEE-754 `minimum`: NaN if either operand is NaN, `-0 < +0`.
        pub fn $min(a: $t, b: $t) -> $t {
            if a.is_nan() {
                a
            } else if b.is_nan() {
                b
            } else if a < b {
                a
            } else if b < a {
                b
            } else if a.is_sign_negative() {
                a
            } else {
                b
            }
        }
        /// IEEE-754 `maximum`: NaN if either operand is NaN, `-0 < +0`.
        pub fn $max(a: $t, b: $t) -> $t {
            if a.is_nan() {
                a
            } else if b.is_nan() {
                b
            } else if a > b {
                a
            } else if b > a {
                b
            } else if a.is_sign_positive() {
                a
            } else {
                b
            }
        }
    };
}
min_max!(min_f64, max_f64, f64);
min_max!(min_f32, max_f32, f32);

/// Evaluates a binary op at type `ty`. `Err` is a run-time fault (or, for
/// A float op of `Bin` on `x` and `y` of one float type (`f64` or `f32`),
/// with that type's `min`/`max` (NaN-propagating) helpers; a non-float
/// op returns `Err(BAD_KIND)` from the enclosing function.
macro_rules! float_binary {
    ($op:expr, $x:expr, $y:expr, $min:ident, $max:ident) => {{
        let (x, y) = ($x, $y);
        match $op {
            Bin::AddF => x + y,
            Bin::SubF => x - y,
            Bin::MulF => x * y,
            Bin::DivF => x / y,
            Bin::MinF => $min(x, y),
            Bin::MaxF => $max(x, y),
            Bin::Pow => x.powf(y),
            Bin::RemF => x % y,
            Bin::MinNumF | Bin::MaxNumF if x.is_nan() => y,
            Bin::MinNumF | Bin::MaxNumF if y.is_nan() => x,
            Bin::MinNumF => $min(x, y),
            Bin::MaxNumF => $max(x, y),
            Bin::CopySign => x.copysign(y),
            _ => return Err(BAD_KIND),
        }
    }};
}

/// A float op of `Un` on `x` of either float type.
macro_rules! float_unary {
    ($op:expr, $x:expr) => {{
        let x = $x;
        match $op {
            Un::NegF => -x,
            Un::Sqrt => x.sqrt(),
            Un::Exp => x.exp(),
            Un::Log => x.ln(),
            Un::Sin => x.sin(),
            Un::Cos => x.cos(),
            Un::Abs => x.abs(),
            Un::Tanh => x.tanh(),
            Un::Erf => Erf::erf(x),
            Un::Floor => x.floor(),
            Un::Ceil => x.ceil(),
            Un::Round => x.round(),
        }
    }};
}

/// The error function from the C library the native backends call (Rust's
/// standard library has none), so every backend gets the same bits.
trait Erf {
    fn erf(self) -> Self;
}

extern "C" {
    #[link_name = "erf"]
    fn c_erf(x: f64) -> f64;
    #[link_name = "erff"]
    fn c_erff(x: f32) -> f32;
}

impl Erf for f64 {
    fn erf(self) -> f64 {
        // SAFETY: a pure C function of one double.
        unsafe { c_erf(self) }
    }
}

impl Erf for f32 {
    fn erf(self) -> f32 {
        // SAFETY: a pure C function of one float.
        unsafe { c_erff(self) }
    }
}

/// `math.fma`: `a * b + c` rounded once (f16/bf16 computed in `f32`, then
/// rounded to the type, as every float op of those types).
pub fn fma(ty: &Type, a: Scalar, b: Scalar, c: Scalar) -> Result<Scalar, &'static str> {
    use Scalar::*;
    Ok(match (a, b, c) {
        (F64(x), F64(y), F64(z)) => F64(x.mul_add(y, z)),
        (F32(x), F32(y), F32(z)) => F32(round_half(ty, x.mul_add(y, z))),
        _ => return Err(BAD_KIND),
    })
}

/// operands of the wrong kind, a type error that verification rejects).
pub fn binary(op: Bin, ty: &Type, a: Scalar, b: Scalar) -> Result<Scalar, &'static str> {
    use Scalar::*;
    let r = match (a, b) {
        (Int(x), Int(y)) => {
            let v = match op {
                Bin::AddI => x.wrapping_add(y),
                Bin::SubI => x.wrapping_sub(y),
                Bin::MulI => x.wrapping_mul(y),
                Bin::DivSI | Bin::RemSI if y == 0 => return Err(DIV_BY_ZERO),
                Bin::DivSI => x.wrapping_div(y),
                Bin::RemSI => x.wrapping_rem(y),
                Bin::AndI => x & y,
                Bin::OrI => x | y,
                Bin::XorI => x ^ y,
                Bin::MinI => x.min(y),
                Bin::MaxI => x.max(y),
                Bin::ShLI | Bin::ShRSI | Bin::ShRUI => shift(op, ty, x, y),
                _ if op.can_fault() && y == 0 => return Err(DIV_BY_ZERO),
                Bin::DivUI => (zext(x, ty) / zext(y, ty)) as i64,
                Bin::RemUI => (zext(x, ty) % zext(y, ty)) as i64,
                Bin::CeilDivUI => {
                    let (a, b) = (zext(x, ty), zext(y, ty));
                    (a / b + u64::from(a % b != 0)) as i64
                }
                Bin::CeilDivSI | Bin::FloorDivSI => {
                    // Truncated quotient, adjusted by one toward +inf
                    // (ceil) or -inf (floor) when inexact; MIN / -1 wraps.
                    let (q, r) = (x.wrapping_div(y), x.wrapping_rem(y));
                    let same_sign = (r < 0) == (y < 0);
                    match op {
                        Bin::CeilDivSI if r != 0 && same_sign => q.wrapping_add(1),
                        Bin::FloorDivSI if r != 0 && !same_sign => q.wrapping_sub(1),
                        _ => q,
                    }
                }
                Bin::MinUI => {
                    if zext(x, ty) <= zext(y, ty) {
                        x
                    } else {
                        y
                    }
                }
                Bin::MaxUI => {
                    if zext(x, ty) >= zext(y, ty) {
                        x
                    } else {
                        y
                    }
                }
                _ => return Err(BAD_KIND),
            };
            Int(sext(v, ty))
        }
        (F64(x), F64(y)) => F64(float_binary!(op, x, y, min_f64, max_f64)),
        (F32(x), F32(y)) => F32(round_half(ty, float_binary!(op, x, y, min_f32, max_f32))),
        _ => return Err(BAD_KIND),
    };
    Ok(r)
}

/// Evaluates a unary op at type `ty`.
pub fn unary(op: Un, ty: &Type, a: Scalar) -> Result<Scalar, &'static str> {
    use Scalar::*;
    Ok(match a {
        Int(x) if op == Un::Abs => Int(sext(x.wrapping_abs(), ty)),
        F64(x) => F64(float_unary!(op, x)),
        F32(x) => F32(round_half(ty, float_unary!(op, x))),
        Int(_) => return Err(BAD_KIND),
    })
}

/// Evaluates a cast to type `to`. `fptosi` saturates like Rust's `as`
/// (NaN gives 0, out-of-range values the nearest bound of `to`).
pub fn cast(op: Cast, from: &Type, to: &Type, a: Scalar) -> Result<Scalar, &'static str> {
    use Scalar::*;
    Ok(match (op, a, to) {
        (Cast::ExtSI | Cast::TruncI, Int(v), t) => Int(sext(v, t)),
        (Cast::ExtUI, Int(v), t) => Int(sext(zext(v, from) as i64, t)),
        (Cast::IndexCastUI, Int(v), t) if width(from) < width(t) => Int(zext(v, from) as i64),
        (Cast::IndexCastUI, Int(v), t) => Int(sext(v, t)),
        (Cast::UIToFP, Int(v), Type::F32) => F32(zext(v, from) as f32),
        (Cast::UIToFP, Int(v), t) if t.is_half() => {
            F32(round_float(zext(v, from) as f64, t) as f32)
        }
        (Cast::UIToFP, Int(v), Type::F64) => F64(zext(v, from) as f64),
        // Saturating like `fptosi`: NaN and negatives give 0, values past
        // the maximum give the all-ones maximum.
        (Cast::FPToUI, F32(_) | F64(_), t) if t.is_integer() && *t != Type::I1 => {
            let x = as_f64(a).ok_or(BAD_KIND)?;
            Int(sext(saturate_unsigned(x, width(t)) as i64, t))
        }
        (Cast::Bitcast, a, t) if from == t => a,
        // Bit for bit, in the value's own width (never through `f64`,
        // which would quiet a signaling NaN).
        (Cast::Bitcast, a, t) => {
            let bits = match a {
                Int(v) => zext(v, from),
                F64(x) => x.to_bits(),
                F32(x) if from.is_half() => half_to_bits(x, from) as u64,
                F32(x) => x.to_bits() as u64,
            };
            match t {
                Type::F64 => F64(f64::from_bits(bits)),
                Type::F32 => F32(f32::from_bits(bits as u32)),
                t if t.is_half() => F32(half_from_bits(bits as u16, t)),
                t => Int(sext(bits as i64, t)),
            }
        }
        (Cast::SIToFP, Int(v), Type::F32) => F32(v as f32),
        (Cast::SIToFP, Int(v), t) if t.is_half() => F32(round_float(v as f64, t) as f32),
        (Cast::SIToFP, Int(v), Type::F64) => F64(v as f64),
        (Cast::FPToSI, F32(_) | F64(_), t) if t.is_integer() && *t != Type::I1 => {
            Int(saturate_signed(as_f64(a).ok_or(BAD_KIND)?, width(t)))
        }
        (Cast::IndexCast, Int(v), t) if t.is_integer() => Int(sext(v, t)),
        (Cast::ExtF, F32(x), Type::F64) => F64(x as f64),
        (Cast::ExtF, F32(x), Type::F32) => F32(x),
        (Cast::TruncF, F64(x), t) if t.is_half() || *t == Type::F32 => {
            F32(round_float(x, t) as f32)
        }
        (Cast::TruncF, F32(x), t) if t.is_half() => F32(round_float(x as f64, t) as f32),
        _ => return Err(BAD_KIND),
    })
}

/// The `cmpi` predicates (MLIR's names).
pub const CMPI_PREDICATES: &[&str] = &[
    "eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge",
];
/// The `cmpf` predicates (MLIR's names).
pub const CMPF_PREDICATES: &[&str] = &[
    "false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule",
    "une", "uno", "true",
];

/// The predicate a `cmpi` (`float` false) or `cmpf` attribute names: a
/// string, or MLIR's integer encoding (the position in [`CMPI_PREDICATES`]
/// or [`CMPF_PREDICATES`], which follow MLIR's enum order:
/// `{predicate = 2 : i64}` is `slt`).
pub fn predicate_name(a: Option<&Attribute>, float: bool) -> Option<&'static str> {
    let list = if float {
        CMPF_PREDICATES
    } else {
        CMPI_PREDICATES
    };
    match a? {
        Attribute::Str(s) => list.iter().copied().find(|p| p == s),
        Attribute::Int(k, _) => usize::try_from(*k).ok().and_then(|k| list.get(k).copied()),
        _ => None,
    }
}

/// Compares two integers of type `ty` (sign-extended) under `pred`.
pub fn cmpi(pred: &str, ty: &Type, a: i64, b: i64) -> Option<bool> {
    let (ua, ub) = (zext(a, ty), zext(b, ty));
    Some(match pred {
        "eq" => a == b,
        "ne" => a != b,
        "slt" => a < b,
        "sle" => a <= b,
        "sgt" => a > b,
        "sge" => a >= b,
        "ult" => ua < ub,
        "ule" => ua <= ub,
        "ugt" => ua > ub,
        "uge" => ua >= ub,
        _ => return None,
    })
}

/// Compares two floats under `pred` (`o*`: ordered, false on NaN; `u*`:
/// unordered, true on NaN).
pub fn cmpf(pred: &str, a: f64, b: f64) -> Option<bool> {
    let uno = a.is_nan() || b.is_nan();
    Some(match pred {
        "false" => false,
        "oeq" => a == b,
        "ogt" => a > b,
        "oge" => a >= b,
        "olt" => a < b,
        "ole" => a <= b,
        "one" => !uno && a != b,
        "ord" => !uno,
        "ueq" => uno || a == b,
        "ugt" => uno || a > b,
        "uge" => uno || a >= b,
        "ult" => uno || a < b,
        "ule" => uno || a <= b,
        "une" => a != b,
        "uno" => uno,
        "true" => true,
        _ => return None,
    })
}

/// The float of a float scalar, widened.
pub fn as_f64(s: Scalar) -> Option<f64> {
    match s {
        Scalar::F32(x) => Some(x as f64),
        Scalar::F64(x) => Some(x),
        Scalar::Int(_) => None,
    }
}

/// Whether `op` may cast `from` to `to` (what the verifier accepts):
/// `sitofp` i32/i64/index -> f32/f64; `fptosi` f32/f64 -> i32/i64/index;
/// `index_cast` between `index` and i32/i64 (one side `index`);
/// `extf` f32 -> f64; `truncf` f64 -> f32. `i1` is not a cast operand
/// (its signed value would be -1: use `select`).
pub fn cast_ok(op: Cast, from: &Type, to: &Type) -> bool {
    let int = |t: &Type| t.is_integer() && *t != Type::I1;
    // Signless integers of a width (not `index`), as MLIR's ext/trunc.
    let fixed = |t: &Type| t.is_integer() && *t != Type::Index;
    let fwidth = |t: &Type| t.float_width().unwrap_or(0);
    match op {
        Cast::ExtSI | Cast::ExtUI => fixed(from) && fixed(to) && width(from) < width(to),
        Cast::TruncI => fixed(from) && fixed(to) && width(from) > width(to),
        Cast::UIToFP => (int(from) || *from == Type::I1) && to.is_float(),
        Cast::FPToUI => from.is_float() && int(to),
        Cast::IndexCastUI => {
            int(from) && int(to) && ((*from == Type::Index) != (*to == Type::Index))
        }
        // Between same-width integers (not `index`) and floats.
        Cast::Bitcast => {
            let bits = |t: &Type| {
                if fixed(t) {
                    t.int_width()
                } else {
                    t.float_width()
                }
            };
            bits(from).is_some() && bits(from) == bits(to)
        }
        Cast::SIToFP => int(from) && to.is_float(),
        Cast::FPToSI => from.is_float() && int(to),
        Cast::IndexCast => int(from) && int(to) && ((*from == Type::Index) != (*to == Type::Index)),
        Cast::ExtF => from.is_float() && to.is_float() && fwidth(from) < fwidth(to),
        Cast::TruncF => from.is_float() && to.is_float() && fwidth(from) > fwidth(to),
    }
}
