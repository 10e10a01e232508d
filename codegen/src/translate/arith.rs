//! `arith` ops, matching `dialects::arith::eval` bit for bit:
//! integers wrap at their width; an `i1` is read as signed (`true` = -1) by
//! the arithmetic and signed ops, so it is negated to an `i8` 0/-1 first and
//! masked back to 0/1; `divsi`/`remsi` fault on zero and are guarded against
//! `MIN / -1`; `minf`/`maxf` are IEEE `minimum`/`maximum` built from compares
//! and selects (Cranelift's `fmin` may change a NaN's payload); `fptosi`
//! saturates; `exp log pow sin cos` call libm.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::immediates::{Ieee32, Ieee64};
use cranelift_codegen::ir::types::{F32, F64, I16, I32, I64, I8};
use cranelift_codegen::ir::{
    InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, Type as CType, Value,
};

use ir::{Attribute, Diagnostic, OpId, Type};

use super::{FnCx, Vals};
use crate::abi::{self, PTR};

pub(super) fn emit(cx: &mut FnCx, op: OpId, name: &str) -> Result<(), Diagnostic> {
    if let Some(k) = dialects::arith::extended::kind(name) {
        extended(cx, op, k);
        return Ok(());
    }
    let ctx = cx.ctx;
    let opnd: Vec<_> = ctx.operands(op).to_vec();
    let Some(&res) = ctx.results(op).first() else {
        return Err(cx.unsupported(op));
    };
    let rty = ctx.ty(res).clone();
    let short = &name["arith.".len()..];
    let fma = crate::contract::fma_of(ctx, op);
    if let Some(p) = crate::sincos::pair_of(ctx, op) {
        return sincos(cx, op, p);
    }
    let r: Value = match short {
        "constant" => constant(cx, op, &rty)?,
        "select" => {
            let c = cx.get1(opnd[0]);
            let (a, b) = (cx.get(opnd[1]), cx.get(opnd[2]));
            let parts: Vals = a
                .iter()
                .zip(&b)
                .map(|(&x, &y)| cx.b.ins().select(c, x, y))
                .collect();
            cx.set(res, &parts);
            return Ok(());
        }
        "addi" | "subi" | "muli" | "andi" | "ori" | "xori" | "mini" | "maxi" | "minsi"
        | "maxsi" => {
            let (a, b) = int_operands(cx, &rty, opnd[0], opnd[1]);
            let r = match short {
                "addi" => cx.b.ins().iadd(a, b),
                "subi" => cx.b.ins().isub(a, b),
                "muli" => cx.b.ins().imul(a, b),
                "andi" => cx.b.ins().band(a, b),
                "ori" => cx.b.ins().bor(a, b),
                "xori" => cx.b.ins().bxor(a, b),
                "mini" | "minsi" => cx.b.ins().smin(a, b),
                _ => cx.b.ins().smax(a, b),
            };
            int_result(cx, &rty, r)
        }
        "minui" | "maxui" | "divui" | "remui" | "ceildivui" | "shli" | "shrui" => {
            // An i1 is read unsigned: its 0/1 byte as it is; another width
            // is masked to its bits.
            let (a, b) = (cx.get1(opnd[0]), cx.get1(opnd[1]));
            let (a, b) = (zext_int(cx, &rty, a), zext_int(cx, &rty, b));
            let r = match short {
                "minui" => cx.b.ins().umin(a, b),
                "maxui" => cx.b.ins().umax(a, b),
                "shli" | "shrui" => {
                    let shifted = if short == "shli" {
                        cx.b.ins().ishl(a, b)
                    } else {
                        cx.b.ins().ushr(a, b)
                    };
                    let ct = cx.b.func.dfg.value_type(a);
                    let zero = cx.iconst(ct, 0);
                    shift_in_range(cx, &rty, b, shifted, zero)
                }
                _ => {
                    div_by_zero_check(cx, op, name, b)?;
                    let q = cx.b.ins().udiv(a, b);
                    match short {
                        "divui" => q,
                        "remui" => cx.b.ins().urem(a, b),
                        _ => {
                            let r = cx.b.ins().urem(a, b);
                            let inexact = cx.b.ins().icmp_imm_s(IntCC::NotEqual, r, 0);
                            let ct = cx.b.func.dfg.value_type(a);
                            let one = cx.iconst(ct, 1);
                            let q1 = cx.b.ins().iadd(q, one);
                            cx.b.ins().select(inexact, q1, q)
                        }
                    }
                }
            };
            int_result(cx, &rty, r)
        }
        "shrsi" => {
            let (a, _) = int_operands(cx, &rty, opnd[0], opnd[0]);
            let amount = cx.get1(opnd[1]);
            let shifted = cx.b.ins().sshr(a, amount);
            let ct = cx.b.func.dfg.value_type(a);
            let sign = cx.b.ins().sshr_imm_s(a, i64::from(ct.bits()) - 1);
            let r = shift_in_range(cx, &rty, amount, shifted, sign);
            int_result(cx, &rty, r)
        }
        "ceildivsi" | "floordivsi" => {
            let (a, b) = int_operands(cx, &rty, opnd[0], opnd[1]);
            div_by_zero_check(cx, op, name, b)?;
            let ct = cx.b.func.dfg.value_type(b);
            let m1 = cx.b.ins().icmp_imm_s(IntCC::Equal, b, -1);
            let one = cx.iconst(ct, 1);
            let safe = cx.b.ins().select(m1, one, b);
            let q = cx.b.ins().sdiv(a, safe);
            let neg = cx.b.ins().ineg(a);
            let q = cx.b.ins().select(m1, neg, q);
            let r = cx.b.ins().srem(a, safe);
            // Inexact, and the remainder's sign equal to (ceil) or unlike
            // (floor) the divisor's: one step toward +inf or -inf.
            let inexact = cx.b.ins().icmp_imm_s(IntCC::NotEqual, r, 0);
            let rneg = cx.b.ins().icmp_imm_s(IntCC::SignedLessThan, r, 0);
            let bneg = cx.b.ins().icmp_imm_s(IntCC::SignedLessThan, b, 0);
            let same = cx.b.ins().icmp(IntCC::Equal, rneg, bneg);
            let r = if short == "ceildivsi" {
                let adjust = cx.b.ins().band(inexact, same);
                let q1 = cx.b.ins().iadd(q, one);
                cx.b.ins().select(adjust, q1, q)
            } else {
                let unlike = cx.b.ins().bxor_imm_s(same, 1);
                let adjust = cx.b.ins().band(inexact, unlike);
                let q1 = cx.b.ins().isub(q, one);
                cx.b.ins().select(adjust, q1, q)
            };
            int_result(cx, &rty, r)
        }
        "divsi" | "remsi" => {
            let (a, b) = int_operands(cx, &rty, opnd[0], opnd[1]);
            div_by_zero_check(cx, op, name, b)?;
            let ct = cx.b.func.dfg.value_type(b);
            let m1 = cx.b.ins().icmp_imm_s(IntCC::Equal, b, -1);
            let one = cx.iconst(ct, 1);
            let safe = cx.b.ins().select(m1, one, b);
            let r = if short == "divsi" {
                let q = cx.b.ins().sdiv(a, safe);
                let neg = cx.b.ins().ineg(a);
                cx.b.ins().select(m1, neg, q)
            } else {
                cx.b.ins().srem(a, safe)
            };
            int_result(cx, &rty, r)
        }
        "addf" | "subf" if fma.is_some() => {
            let f = fma.expect("guarded");
            let (mut a, b, mut c) = (cx.get1(f.a), cx.get1(f.b), cx.get1(f.c));
            if f.neg_product {
                a = cx.b.ins().fneg(a);
            }
            if f.neg_addend {
                c = cx.b.ins().fneg(c);
            }
            cx.b.ins().fma(a, b, c)
        }
        "addf" | "subf" | "mulf" | "divf" => {
            let (a, b) = (cx.get1(opnd[0]), cx.get1(opnd[1]));
            match short {
                "addf" => cx.b.ins().fadd(a, b),
                "subf" => cx.b.ins().fsub(a, b),
                "mulf" => cx.b.ins().fmul(a, b),
                _ => cx.b.ins().fdiv(a, b),
            }
        }
        "minf" | "maxf" | "minimumf" | "maximumf" => {
            let (a, b) = (cx.get1(opnd[0]), cx.get1(opnd[1]));
            min_max(cx, a, b, matches!(short, "minf" | "minimumf"))
        }
        "minnumf" | "maxnumf" => {
            // minimum/maximum, but a NaN operand yields the other one.
            let (a, b) = (cx.get1(opnd[0]), cx.get1(opnd[1]));
            let m = min_max(cx, a, b, short == "minnumf");
            let b_nan = cx.b.ins().fcmp(FloatCC::Unordered, b, b);
            let m = cx.b.ins().select(b_nan, a, m);
            let a_nan = cx.b.ins().fcmp(FloatCC::Unordered, a, a);
            cx.b.ins().select(a_nan, b, m)
        }
        "remf" => {
            let ct = cx.b.func.dfg.value_type(cx.get1(opnd[0]));
            let f = if ct == F32 { "fmodf" } else { "fmod" };
            let args = [cx.get1(opnd[0]), cx.get1(opnd[1])];
            cx.call_rt(f, &[ct, ct], &[ct], &args)?[0]
        }
        "pow" => {
            let ct = cx.b.func.dfg.value_type(cx.get1(opnd[0]));
            let f = if ct == F32 { "powf" } else { "pow" };
            let args = [cx.get1(opnd[0]), cx.get1(opnd[1])];
            cx.call_rt(f, &[ct, ct], &[ct], &args)?[0]
        }
        "negf" => {
            let a = cx.get1(opnd[0]);
            cx.b.ins().fneg(a)
        }
        "sqrt" => {
            let a = cx.get1(opnd[0]);
            cx.b.ins().sqrt(a)
        }
        "abs" => {
            let a = cx.get1(opnd[0]);
            match &rty {
                Type::I1 => a,
                t if t.is_integer() => cx.b.ins().iabs(a),
                _ => cx.b.ins().fabs(a),
            }
        }
        "floor" => {
            let a = cx.get1(opnd[0]);
            cx.b.ins().floor(a)
        }
        "ceil" => {
            let a = cx.get1(opnd[0]);
            cx.b.ins().ceil(a)
        }
        "copysign" => {
            let (a, b) = (cx.get1(opnd[0]), cx.get1(opnd[1]));
            cx.b.ins().fcopysign(a, b)
        }
        "fma" => {
            let (a, b, c) = (cx.get1(opnd[0]), cx.get1(opnd[1]), cx.get1(opnd[2]));
            cx.b.ins().fma(a, b, c)
        }
        // libm, as the interpreter (C's round: halves away from zero, where
        // Cranelift's `nearest` is ties to even).
        "exp" | "log" | "sin" | "cos" | "round" | "tanh" | "erf" => {
            let a = cx.get1(opnd[0]);
            let ct = cx.b.func.dfg.value_type(a);
            let f = crate::runtime::libm_unary(short, ct == F32).expect("a libm op");
            cx.call_rt(f, &[ct], &[ct], &[a])?[0]
        }
        "cmpi" => {
            let ity = ctx.ty(opnd[0]).clone();
            let (a, b) = int_operands(cx, &ity, opnd[0], opnd[1]);
            let cc = match pred(cx, op) {
                "eq" => IntCC::Equal,
                "ne" => IntCC::NotEqual,
                "slt" => IntCC::SignedLessThan,
                "sle" => IntCC::SignedLessThanOrEqual,
                "sgt" => IntCC::SignedGreaterThan,
                "sge" => IntCC::SignedGreaterThanOrEqual,
                "ult" => IntCC::UnsignedLessThan,
                "ule" => IntCC::UnsignedLessThanOrEqual,
                "ugt" => IntCC::UnsignedGreaterThan,
                "uge" => IntCC::UnsignedGreaterThanOrEqual,
                _ => return Err(cx.unsupported(op)),
            };
            cx.b.ins().icmp(cc, a, b)
        }
        "cmpf" => {
            let (a, b) = (cx.get1(opnd[0]), cx.get1(opnd[1]));
            let cc = match pred(cx, op) {
                p @ ("false" | "true") => {
                    let v = cx.iconst(I8, (p == "true") as i64);
                    return set1(cx, res, v);
                }
                "oeq" => FloatCC::Equal,
                "ogt" => FloatCC::GreaterThan,
                "oge" => FloatCC::GreaterThanOrEqual,
                "olt" => FloatCC::LessThan,
                "ole" => FloatCC::LessThanOrEqual,
                "one" => FloatCC::OrderedNotEqual,
                "ord" => FloatCC::Ordered,
                "ueq" => FloatCC::UnorderedOrEqual,
                "ugt" => FloatCC::UnorderedOrGreaterThan,
                "uge" => FloatCC::UnorderedOrGreaterThanOrEqual,
                "ult" => FloatCC::UnorderedOrLessThan,
                "ule" => FloatCC::UnorderedOrLessThanOrEqual,
                "une" => FloatCC::NotEqual,
                "uno" => FloatCC::Unordered,
                _ => return Err(cx.unsupported(op)),
            };
            cx.b.ins().fcmp(cc, a, b)
        }
        "sitofp" | "fptosi" | "index_cast" | "extf" | "truncf" => {
            let a = cx.get1(opnd[0]);
            let from = cx.b.func.dfg.value_type(a);
            let Some(to) = abi::scalar(&rty) else {
                return Err(cx.unsupported(op));
            };
            let half = rty.is_half().then_some(rty == Type::BF16);
            match (short, half) {
                ("sitofp", Some(bf16)) => {
                    // Through f64 (exact for i32, rounding i64 with 53 >=
                    // 2 * 11 + 2 bits: innocuous), then once to the type.
                    let a = widen_to_i32(cx, a, true);
                    let w = cx.b.ins().fcvt_from_sint(F64, a);
                    crate::half::round(cx, bf16, w, true)
                }
                ("truncf", Some(bf16)) => crate::half::round(cx, bf16, a, from == F64),
                _ => match short {
                    "sitofp" => {
                        let a = widen_to_i32(cx, a, true);
                        cx.b.ins().fcvt_from_sint(to, a)
                    }
                    "fptosi" => float_to_int_sat(cx, a, to, width(&rty), true),
                    "extf" | "truncf" if from == to => a,
                    "extf" => cx.b.ins().fpromote(to, a),
                    "truncf" => cx.b.ins().fdemote(to, a),
                    _ if from == to => a,
                    _ if from.bits() > to.bits() => cx.b.ins().ireduce(to, a),
                    _ => cx.b.ins().sextend(to, a),
                },
            }
        }
        "extsi" | "extui" | "trunci" | "uitofp" | "fptoui" | "index_castui" | "bitcast" => {
            // An i1 is a 0/1 byte: sign-extending it needs 0/-1 first, and
            // truncating to it keeps the low bit.
            let mut a = cx.get1(opnd[0]);
            let from = cx.b.func.dfg.value_type(a);
            let Some(to) = abi::scalar(&rty) else {
                return Err(cx.unsupported(op));
            };
            let from_ty = ctx.ty(opnd[0]).clone();
            if short == "bitcast" && (from_ty.is_half() || rty.is_half()) {
                let r = crate::half::bitcast(cx, &from_ty, &rty, a);
                return set1(cx, res, r);
            }
            if matches!(short, "extui" | "uitofp" | "index_castui") {
                a = zext_int(cx, &from_ty, a);
            }
            if short == "uitofp" && rty.is_half() {
                let a = widen_to_i32(cx, a, false);
                let w = cx.b.ins().fcvt_from_uint(F64, a);
                let r = crate::half::round(cx, rty == Type::BF16, w, true);
                return set1(cx, res, r);
            }
            match short {
                "extsi" => {
                    if *ctx.ty(opnd[0]) == Type::I1 {
                        a = cx.b.ins().ineg(a);
                    }
                    if from == to {
                        a
                    } else {
                        cx.b.ins().sextend(to, a)
                    }
                }
                "uitofp" => {
                    let a = widen_to_i32(cx, a, false);
                    cx.b.ins().fcvt_from_uint(to, a)
                }
                "fptoui" => float_to_int_sat(cx, a, to, width(&rty), false),
                _ if from == to => a,
                "bitcast" => cx.b.ins().bitcast(to, MemFlagsData::new(), a),
                _ if from.bits() > to.bits() => {
                    let r = cx.b.ins().ireduce(to, a);
                    int_result(cx, &rty, r)
                }
                _ => cx.b.ins().uextend(to, a),
            }
        }
        _ => return Err(cx.unsupported(op)),
    };
    let r = if rty.is_half() && ROUNDED.contains(&short) {
        crate::half::round(cx, rty == Type::BF16, r, false)
    } else if matches!(rty, Type::Int(_)) {
        // A cast to another width, or `abs`: back to the width's range.
        int_result(cx, &rty, r)
    } else {
        r
    };
    set1(cx, res, r)
}

fn width(ty: &Type) -> u32 {
    dialects::arith::eval::width(ty)
}

/// An integer of another width (`i4`, `i48`) as its bits, zero-extended
/// in its container; every other type's value as it is.
fn zext_int(cx: &mut FnCx, ty: &Type, v: Value) -> Value {
    match ty {
        Type::Int(w) => {
            let ct = cx.b.func.dfg.value_type(v);
            let mask = cx.iconst(ct, ((1u64 << w) - 1) as i64);
            cx.b.ins().band(v, mask)
        }
        _ => v,
    }
}

/// The float ops whose `f32` result an `f16`/`bf16` result rounds (the
/// others, `negf abs minf maxf select` and the like, are exact).
pub(crate) const ROUNDED: &[&str] = &[
    "addf", "subf", "mulf", "divf", "remf", "pow", "sqrt", "exp", "log", "sin", "cos", "tanh",
    "erf", "fma",
];

/// A paired sine and cosine ([`crate::sincos`]): the leader calls
/// `sincos(x, &s, &c)` with two stack slots and binds both results; the
/// other op is bound by then.
fn sincos(cx: &mut FnCx, op: OpId, p: crate::sincos::SinCos) -> Result<(), Diagnostic> {
    if p.leader != op {
        return Ok(());
    }
    let x = cx.get1(p.x);
    let ct = cx.b.func.dfg.value_type(x);
    let bytes = ct.bytes();
    let slot = cx.b.create_sized_stack_slot(StackSlotData::new(
        StackSlotKind::ExplicitSlot,
        2 * bytes,
        3,
    ));
    let s_at = cx.b.ins().stack_addr(PTR, slot, 0);
    let c_at = cx.b.ins().stack_addr(PTR, slot, bytes as i32);
    let f = crate::sincos::libm_name(ct == F32);
    cx.call_rt(f, &[ct, PTR, PTR], &[], &[x, s_at, c_at])?;
    let s = cx.b.ins().load(ct, super::trusted(), s_at, 0);
    let c = cx.b.ins().load(ct, super::trusted(), c_at, 0);
    cx.set(p.sin, &[s]);
    cx.set(p.cos, &[c]);
    Ok(())
}

fn set1(cx: &mut FnCx, res: ir::ValueId, v: Value) -> Result<(), Diagnostic> {
    cx.set(res, &[v]);
    Ok(())
}

fn pred(cx: &FnCx, op: OpId) -> &'static str {
    dialects::arith::predicate_of(cx.ctx, op).unwrap_or("")
}

/// The two operands of an integer op at type `ty`, with `i1` as 0/-1.
/// The fault of a division or remainder by zero unless `divisor` is
/// nonzero.
fn div_by_zero_check(
    cx: &mut FnCx,
    op: OpId,
    name: &str,
    divisor: Value,
) -> Result<(), Diagnostic> {
    let nz = cx.b.ins().icmp_imm_s(IntCC::NotEqual, divisor, 0);
    cx.check(
        nz,
        op,
        format!("'{name}' op {}", dialects::arith::eval::DIV_BY_ZERO),
        &[],
    )
}

/// `shifted` when `amount` (unsigned) is below the width of `ty`, else
/// `out` (Cranelift's shifts take the amount modulo the register's width;
/// L0 shifts every bit out, see `dialects::arith::eval`).
fn shift_in_range(cx: &mut FnCx, ty: &Type, amount: Value, shifted: Value, out: Value) -> Value {
    let w = dialects::arith::eval::width(ty);
    let ok =
        cx.b.ins()
            .icmp_imm_u(IntCC::UnsignedLessThan, amount, i64::from(w));
    cx.b.ins().select(ok, shifted, out)
}

fn int_operands(cx: &mut FnCx, ty: &Type, a: ir::ValueId, b: ir::ValueId) -> (Value, Value) {
    let (mut x, mut y) = (cx.get1(a), cx.get1(b));
    if *ty == Type::I1 {
        x = cx.b.ins().ineg(x);
        y = cx.b.ins().ineg(y);
    }
    (x, y)
}

/// `addui_extended` (sum, unsigned carry) and `mulsi/mului_extended` (low
/// and high halves of the product). An `i1` is 0/1 in an `i8`: its carry is
/// `a & b`-like through the same compare, and its high half is always 0
/// (`1 * 1` and `-1 * -1` are both 1).
fn extended(cx: &mut FnCx, op: OpId, k: dialects::arith::extended::Extended) {
    use dialects::arith::extended::Extended;
    let ctx = cx.ctx;
    let (a0, b0) = (ctx.operand(op, 0), ctx.operand(op, 1));
    let (r0, r1) = (ctx.result(op, 0), ctx.result(op, 1));
    let ty = ctx.ty(a0).clone();
    let (lo, hi) = match k {
        Extended::AddUI => {
            let (a, b) = (cx.get1(a0), cx.get1(b0));
            let s = cx.b.ins().iadd(a, b);
            let s = int_result(cx, &ty, s);
            let carry = cx.b.ins().icmp(IntCC::UnsignedLessThan, s, a);
            (s, carry)
        }
        Extended::MulUI | Extended::MulSI => {
            let (a, b) = if k == Extended::MulSI {
                int_operands(cx, &ty, a0, b0)
            } else {
                let (a, b) = (cx.get1(a0), cx.get1(b0));
                (zext_int(cx, &ty, a), zext_int(cx, &ty, b))
            };
            let lo = cx.b.ins().imul(a, b);
            let lo = int_result(cx, &ty, lo);
            let hi = match (&ty, k) {
                (Type::I1, _) => cx.iconst(I8, 0),
                (Type::I8 | Type::I16, _) => {
                    // The exact product in 32 bits, shifted down.
                    let signed = k == Extended::MulSI;
                    let (wa, wb) = (widen_to_i32(cx, a, signed), widen_to_i32(cx, b, signed));
                    let p = cx.b.ins().imul(wa, wb);
                    let ct = cx.b.func.dfg.value_type(a);
                    let h = cx.b.ins().ushr_imm_u(p, i64::from(ct.bits()));
                    cx.b.ins().ireduce(ct, h)
                }
                (Type::Int(w), _) => {
                    // Bits w..2w of the exact product (the operands are
                    // sign- or zero-extended from w), sign-extended from w.
                    let w = i64::from(*w);
                    let signed = k == Extended::MulSI;
                    let ct = cx.b.func.dfg.value_type(a);
                    let h = if ct.bits() < 64 {
                        let ext = |cx: &mut FnCx, v| {
                            if signed {
                                cx.b.ins().sextend(I64, v)
                            } else {
                                cx.b.ins().uextend(I64, v)
                            }
                        };
                        let (wa, wb) = (ext(cx, a), ext(cx, b));
                        let p = cx.b.ins().imul(wa, wb);
                        let h = cx.b.ins().ushr_imm_u(p, w);
                        cx.b.ins().ireduce(ct, h)
                    } else {
                        let low = cx.b.ins().imul(a, b);
                        let high = if signed {
                            cx.b.ins().smulhi(a, b)
                        } else {
                            cx.b.ins().umulhi(a, b)
                        };
                        let l = cx.b.ins().ushr_imm_u(low, w);
                        let h = cx.b.ins().ishl_imm_u(high, 64 - w);
                        cx.b.ins().bor(l, h)
                    };
                    int_result(cx, &ty, h)
                }
                (_, Extended::MulSI) => cx.b.ins().smulhi(a, b),
                _ => cx.b.ins().umulhi(a, b),
            };
            (lo, hi)
        }
    };
    cx.set(r0, &[lo]);
    cx.set(r1, &[hi]);
}

/// `a` sign- or zero-extended to `i32` when it is narrower (an `i1`'s 0/1
/// byte, `i8`, `i16`), so the conversions to float see a 32-bit integer.
fn widen_to_i32(cx: &mut FnCx, a: Value, signed: bool) -> Value {
    if cx.b.func.dfg.value_type(a).bits() >= 32 {
        a
    } else if signed {
        cx.b.ins().sextend(I32, a)
    } else {
        cx.b.ins().uextend(I32, a)
    }
}

/// A float to an integer of width `w` in a register of type `to`, toward
/// zero, saturating (NaN gives 0), as `dialects::arith::eval` does: at
/// `to`'s own width directly; below 32 bits through a saturating
/// conversion to `i32`, otherwise at `to`; then clamped to `w`'s range and
/// narrowed. An unsigned result of another width is left zero-extended
/// (the caller sign-extends it from `w`).
fn float_to_int_sat(cx: &mut FnCx, a: Value, to: CType, w: u32, signed: bool) -> Value {
    if w == to.bits() && w >= 32 {
        return if signed {
            cx.b.ins().fcvt_to_sint_sat(to, a)
        } else {
            cx.b.ins().fcvt_to_uint_sat(to, a)
        };
    }
    let at = if to.bits() < 32 { I32 } else { to };
    let w = i64::from(w);
    let r = if signed {
        let r = cx.b.ins().fcvt_to_sint_sat(at, a);
        let lo = cx.iconst(at, -(1 << (w - 1)));
        let hi = cx.iconst(at, (1 << (w - 1)) - 1);
        let r = cx.b.ins().smax(r, lo);
        cx.b.ins().smin(r, hi)
    } else {
        let r = cx.b.ins().fcvt_to_uint_sat(at, a);
        let hi = cx.iconst(at, (1 << w) - 1);
        cx.b.ins().umin(r, hi)
    };
    if at == to {
        r
    } else {
        cx.b.ins().ireduce(to, r)
    }
}

/// Masks an `i1` result back to 0/1, and sign-extends a result of another
/// width (`i4`, `i48`) from that width within its container.
fn int_result(cx: &mut FnCx, ty: &Type, r: Value) -> Value {
    match ty {
        Type::I1 => {
            let one = cx.iconst(I8, 1);
            cx.b.ins().band(r, one)
        }
        Type::Int(w) => {
            let bits = i64::from(cx.b.func.dfg.value_type(r).bits());
            let k = bits - i64::from(*w);
            let up = cx.b.ins().ishl_imm_u(r, k);
            cx.b.ins().sshr_imm_u(up, k)
        }
        _ => r,
    }
}

fn constant(cx: &mut FnCx, op: OpId, ty: &Type) -> Result<Value, Diagnostic> {
    let a = cx.ctx.attr(op, "value").cloned();
    Ok(match (ty, a) {
        (Type::I0, Some(Attribute::Int(..))) => cx.iconst(I8, 0),
        (Type::I1, Some(Attribute::Bool(b))) => cx.iconst(I8, b as i64),
        (Type::I1, Some(Attribute::Int(v, _))) => cx.iconst(I8, v & 1),
        (Type::I8, Some(Attribute::Int(v, _))) => cx.iconst(I8, v),
        (Type::I16, Some(Attribute::Int(v, _))) => cx.iconst(I16, v),
        (Type::I32, Some(Attribute::Int(v, _))) => cx.iconst(I32, v),
        (Type::I64 | Type::Index, Some(Attribute::Int(v, _))) => cx.iconst(I64, v),
        (Type::Int(w), Some(Attribute::Int(v, _))) => cx.iconst(abi::container(*w as u32), v),
        (Type::F16 | Type::BF16 | Type::F32, Some(Attribute::Float(v, _))) => {
            cx.b.ins().f32const(Ieee32::with_bits((v as f32).to_bits()))
        }
        (Type::F64, Some(Attribute::Float(v, _))) => {
            cx.b.ins().f64const(Ieee64::with_bits(v.to_bits()))
        }
        _ => {
            return Err(Diagnostic::at_op(
                cx.ctx,
                op,
                "this constant is not supported by the Cranelift backend",
            ))
        }
    })
}

/// IEEE `minimum`/`maximum` exactly as `eval::min_f64`/`max_f64`: the first
/// NaN operand (payload kept), else the smaller/larger, else (equal values)
/// `a` when its sign bit is set (min) or clear (max), else `b`.
fn min_max(cx: &mut FnCx, a: Value, b: Value, min: bool) -> Value {
    let ct = cx.b.func.dfg.value_type(a);
    let ity: CType = if ct == F64 { I64 } else { I32 };
    let bits = cx.b.ins().bitcast(ity, MemFlagsData::new(), a);
    let neg = cx.b.ins().icmp_imm_s(IntCC::SignedLessThan, bits, 0);
    let a_on_tie = if min {
        neg
    } else {
        cx.b.ins().icmp_imm_s(IntCC::Equal, neg, 0)
    };
    let (first, second) = if min {
        (FloatCC::LessThan, FloatCC::GreaterThan)
    } else {
        (FloatCC::GreaterThan, FloatCC::LessThan)
    };
    let mut r = cx.b.ins().select(a_on_tie, a, b);
    let b_wins = cx.b.ins().fcmp(second, a, b);
    r = cx.b.ins().select(b_wins, b, r);
    let a_wins = cx.b.ins().fcmp(first, a, b);
    r = cx.b.ins().select(a_wins, a, r);
    let b_nan = cx.b.ins().fcmp(FloatCC::Unordered, b, b);
    r = cx.b.ins().select(b_nan, b, r);
    let a_nan = cx.b.ins().fcmp(FloatCC::Unordered, a, a);
    cx.b.ins().select(a_nan, a, r)
}
