//! `arith` ops in LLVM IR, matching `dialects::arith::eval` bit for bit (the
//! same rules as the Cranelift translation): integers wrap; an `i1` takes
//! part in integer arithmetic as 0/-1 and is masked back to 0/1;
//! `divsi`/`remsi` fault on zero and are guarded against `MIN / -1`;
//! `minf`/`maxf` are IEEE `minimum`/`maximum` from compares and selects;
//! `fptosi` saturates (`llvm.fptosi.sat`); `sqrt` and `abs` are LLVM
//! intrinsics, `exp log pow sin cos` call libm like the interpreter.
//!
//! Of an op's fast-math flags ([`ir::FastMath`]) only `reassoc` becomes
//! LLVM's (IR-SPEC §1): a float combine carrying `reassoc` (set by the `gen`
//! lowering on the accumulators of reduce generators, whose monoid is
//! associative by declaration, IR-SPEC §3) lets the loop vectorizer keep
//! several partial sums. A contracted add ([`crate::contract`]) is an
//! `llvm.fmuladd` call; no other op is contracted.

use ir::{Attribute, Diagnostic, OpId, Type};

use super::translate::{scalar, FnCx, Vals};
use super::writer::Ty;

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
    let fm = llvm_flags(ir::FastMath::of(ctx, op));
    if let Some(p) = crate::sincos::pair_of(ctx, op).filter(|_| !cx.device) {
        sincos(cx, op, p);
        return Ok(());
    }
    let r: String = match short {
        "constant" => constant(cx, op, &rty)?,
        "select" => {
            let c = cx.get1(opnd[0]);
            let c = cx.cond(&c);
            let (a, b) = (cx.get(opnd[1]), cx.get(opnd[2]));
            let tys = super::translate::parts(&rty);
            let ps: Vals = a
                .iter()
                .zip(&b)
                .zip(&tys)
                .map(|((x, y), t)| {
                    cx.w.val(format!("select i1 {c}, {} {x}, {} {y}", t.name(), t.name()))
                })
                .collect();
            cx.set(res, &ps);
            return Ok(());
        }
        "addi" | "subi" | "muli" | "andi" | "ori" | "xori" | "mini" | "maxi" | "minsi"
        | "maxsi" => {
            let (t, a, b) = int_operands(cx, &rty, opnd[0], opnd[1]);
            let n = t.name();
            let r = match short {
                "addi" => cx.w.val(format!("add {n} {a}, {b}")),
                "subi" => cx.w.val(format!("sub {n} {a}, {b}")),
                "muli" => cx.w.val(format!("mul {n} {a}, {b}")),
                "andi" => cx.w.val(format!("and {n} {a}, {b}")),
                "ori" => cx.w.val(format!("or {n} {a}, {b}")),
                "xori" => cx.w.val(format!("xor {n} {a}, {b}")),
                "mini" | "minsi" => intrinsic(cx, "smin", t, &[a, b]),
                _ => intrinsic(cx, "smax", t, &[a, b]),
            };
            int_result(cx, &rty, r)
        }
        "minui" | "maxui" | "divui" | "remui" | "ceildivui" | "shli" | "shrui" => {
            // An i1 is read unsigned: its 0/1 byte as it is; another width
            // is masked to its bits.
            let t = scalar(&rty).unwrap_or(Ty::I64);
            let n = t.name();
            let (a, b) = (cx.get1(opnd[0]), cx.get1(opnd[1]));
            let (a, b) = (zext_int(cx, &rty, a), zext_int(cx, &rty, b));
            let r = match short {
                "minui" => intrinsic(cx, "umin", t, &[a, b]),
                "maxui" => intrinsic(cx, "umax", t, &[a, b]),
                "shli" | "shrui" => {
                    let i = if short == "shli" { "shl" } else { "lshr" };
                    let shifted = cx.w.val(format!("{i} {n} {a}, {b}"));
                    shift_in_range(cx, &rty, t, &b, &shifted, "0")
                }
                _ => {
                    div_by_zero_check(cx, op, name, t, &b);
                    let q = cx.w.val(format!("udiv {n} {a}, {b}"));
                    match short {
                        "divui" => q,
                        "remui" => cx.w.val(format!("urem {n} {a}, {b}")),
                        _ => {
                            let r = cx.w.val(format!("urem {n} {a}, {b}"));
                            let inexact = cx.w.val(format!("icmp ne {n} {r}, 0"));
                            let up = cx.w.val(format!("zext i1 {inexact} to {n}"));
                            cx.w.val(format!("add {n} {q}, {up}"))
                        }
                    }
                }
            };
            int_result(cx, &rty, r)
        }
        "shrsi" => {
            let (t, a, _) = int_operands(cx, &rty, opnd[0], opnd[0]);
            let n = t.name();
            let amount = cx.get1(opnd[1]);
            let shifted = cx.w.val(format!("ashr {n} {a}, {amount}"));
            let bits = t.bytes() * 8 - 1;
            let sign = cx.w.val(format!("ashr {n} {a}, {bits}"));
            let r = shift_in_range(cx, &rty, t, &amount, &shifted, &sign);
            int_result(cx, &rty, r)
        }
        "ceildivsi" | "floordivsi" => {
            let (t, a, b) = int_operands(cx, &rty, opnd[0], opnd[1]);
            let n = t.name();
            div_by_zero_check(cx, op, name, t, &b);
            let m1 = cx.w.val(format!("icmp eq {n} {b}, -1"));
            let safe = cx.w.val(format!("select i1 {m1}, {n} 1, {n} {b}"));
            let q = cx.w.val(format!("sdiv {n} {a}, {safe}"));
            let neg = cx.w.val(format!("sub {n} 0, {a}"));
            let q = cx.w.val(format!("select i1 {m1}, {n} {neg}, {n} {q}"));
            let r = cx.w.val(format!("srem {n} {a}, {safe}"));
            // Inexact, and the remainder's sign equal to (ceil) or unlike
            // (floor) the divisor's: one step toward +inf or -inf.
            let inexact = cx.w.val(format!("icmp ne {n} {r}, 0"));
            let rneg = cx.w.val(format!("icmp slt {n} {r}, 0"));
            let bneg = cx.w.val(format!("icmp slt {n} {b}, 0"));
            let (rel, step) = if short == "ceildivsi" {
                ("eq", "add")
            } else {
                ("ne", "sub")
            };
            let signs = cx.w.val(format!("icmp {rel} i1 {rneg}, {bneg}"));
            let adjust = cx.w.val(format!("and i1 {inexact}, {signs}"));
            let q1 = cx.w.val(format!("{step} {n} {q}, 1"));
            let r = cx.w.val(format!("select i1 {adjust}, {n} {q1}, {n} {q}"));
            int_result(cx, &rty, r)
        }
        "divsi" | "remsi" => {
            let (t, a, b) = int_operands(cx, &rty, opnd[0], opnd[1]);
            let n = t.name();
            div_by_zero_check(cx, op, name, t, &b);
            let m1 = cx.w.val(format!("icmp eq {n} {b}, -1"));
            let safe = cx.w.val(format!("select i1 {m1}, {n} 1, {n} {b}"));
            let r = if short == "divsi" {
                let q = cx.w.val(format!("sdiv {n} {a}, {safe}"));
                let neg = cx.w.val(format!("sub {n} 0, {a}"));
                cx.w.val(format!("select i1 {m1}, {n} {neg}, {n} {q}"))
            } else {
                cx.w.val(format!("srem {n} {a}, {safe}"))
            };
            int_result(cx, &rty, r)
        }
        "addf" | "subf" if fma.is_some() => {
            let f = fma.expect("guarded");
            let t = float_ty(&rty);
            let n = t.name();
            let (mut a, b, mut c) = (cx.get1(f.a), cx.get1(f.b), cx.get1(f.c));
            if f.neg_product {
                a = cx.w.val(format!("fneg {n} {a}"));
            }
            if f.neg_addend {
                c = cx.w.val(format!("fneg {n} {c}"));
            }
            // `fmuladd` rather than `fma`: LLVM's loop vectorizer knows a
            // `reassoc` fmuladd chain as a reduction; on a target with
            // fused multiply-add (the host's features, PTX) it is one.
            let full = format!("llvm.fmuladd.{}", if t == Ty::F32 { "f32" } else { "f64" });
            cx.declare(&full, || format!("declare {n} @{full}({n}, {n}, {n})"));
            cx.w.val(format!("call {fm}{n} @{full}({n} {a}, {n} {b}, {n} {c})"))
        }
        "addf" | "subf" | "mulf" | "divf" => {
            let t = float_ty(&rty);
            let (a, b) = (cx.get1(opnd[0]), cx.get1(opnd[1]));
            let i = match short {
                "addf" => "fadd",
                "subf" => "fsub",
                "mulf" => "fmul",
                _ => "fdiv",
            };
            cx.w.val(format!("{i} {fm}{} {a}, {b}", t.name()))
        }
        "minf" | "maxf" | "minimumf" | "maximumf" => {
            let t = float_ty(&rty);
            let (a, b) = (cx.get1(opnd[0]), cx.get1(opnd[1]));
            min_max(cx, t, &a, &b, matches!(short, "minf" | "minimumf"))
        }
        "minnumf" | "maxnumf" => {
            // minimum/maximum, but a NaN operand yields the other one.
            let t = float_ty(&rty);
            let n = t.name();
            let (a, b) = (cx.get1(opnd[0]), cx.get1(opnd[1]));
            let m = min_max(cx, t, &a, &b, short == "minnumf");
            let b_nan = cx.w.val(format!("fcmp uno {n} {b}, {b}"));
            let m = cx.w.val(format!("select i1 {b_nan}, {n} {a}, {n} {m}"));
            let a_nan = cx.w.val(format!("fcmp uno {n} {a}, {a}"));
            cx.w.val(format!("select i1 {a_nan}, {n} {b}, {n} {m}"))
        }
        "remf" => {
            // libm's fmod (libdevice's on a GPU), exact like the interpreter.
            let t = float_ty(&rty);
            let f = if t == Ty::F32 { "fmodf" } else { "fmod" };
            let args = [cx.get1(opnd[0]), cx.get1(opnd[1])];
            cx.call_rt(f, &[t, t], Some(t), &args)
        }
        "pow" => {
            let t = float_ty(&rty);
            let f = if t == Ty::F32 { "powf" } else { "pow" };
            let args = [cx.get1(opnd[0]), cx.get1(opnd[1])];
            cx.call_rt(f, &[t, t], Some(t), &args)
        }
        "negf" => {
            let t = float_ty(&rty);
            let a = cx.get1(opnd[0]);
            cx.w.val(format!("fneg {} {a}", t.name()))
        }
        "sqrt" => {
            let t = float_ty(&rty);
            let a = cx.get1(opnd[0]);
            intrinsic(cx, "sqrt", t, &[a])
        }
        "abs" => {
            let a = cx.get1(opnd[0]);
            match rty {
                Type::I1 => a,
                ref t if t.is_integer() => {
                    let ty = scalar(t).unwrap_or(Ty::I64);
                    let n = ty.name();
                    cx.declare(&format!("llvm.abs.{n}"), || {
                        format!("declare {n} @llvm.abs.{n}({n}, i1)")
                    });
                    cx.w.val(format!("call {n} @llvm.abs.{n}({n} {a}, i1 false)"))
                }
                ref t => intrinsic(cx, "fabs", float_ty(t), &[a]),
            }
        }
        "floor" | "ceil" | "round" => {
            let a = cx.get1(opnd[0]);
            intrinsic(cx, short, float_ty(&rty), &[a])
        }
        "copysign" => {
            let (a, b) = (cx.get1(opnd[0]), cx.get1(opnd[1]));
            intrinsic(cx, "copysign", float_ty(&rty), &[a, b])
        }
        "fma" => {
            let args: Vec<String> = opnd.iter().map(|&v| cx.get1(v)).collect();
            intrinsic(cx, "fma", float_ty(&rty), &args)
        }
        "exp" | "log" | "sin" | "cos" | "tanh" | "erf" => {
            let t = float_ty(&rty);
            let a = cx.get1(opnd[0]);
            let f = crate::runtime::libm_unary(short, t == Ty::F32).expect("a libm op");
            cx.call_rt(f, &[t], Some(t), &[a])
        }
        "cmpi" => {
            let ity = ctx.ty(opnd[0]).clone();
            let (t, a, b) = int_operands(cx, &ity, opnd[0], opnd[1]);
            let p = pred(cx, op);
            if !matches!(
                p,
                "eq" | "ne" | "slt" | "sle" | "sgt" | "sge" | "ult" | "ule" | "ugt" | "uge"
            ) {
                return Err(cx.unsupported(op));
            }
            let c = cx.w.val(format!("icmp {p} {} {a}, {b}", t.name()));
            cx.bool8(&c)
        }
        "cmpf" => {
            let (a, b) = (cx.get1(opnd[0]), cx.get1(opnd[1]));
            let t = float_ty(ctx.ty(opnd[0]));
            let p = pred(cx, op);
            let c = match p {
                "false" | "true" => {
                    let v = if p == "true" { "1" } else { "0" };
                    cx.set(res, &[v.to_string()]);
                    return Ok(());
                }
                "oeq" | "ogt" | "oge" | "olt" | "ole" | "one" | "ord" | "ueq" | "ugt" | "uge"
                | "ult" | "ule" | "une" | "uno" => {
                    cx.w.val(format!("fcmp {p} {} {a}, {b}", t.name()))
                }
                _ => return Err(cx.unsupported(op)),
            };
            cx.bool8(&c)
        }
        "sitofp" | "fptosi" | "index_cast" | "extf" | "truncf" => {
            let a = cx.get1(opnd[0]);
            let from = scalar(ctx.ty(opnd[0])).unwrap_or(Ty::I64);
            let Some(to) = scalar(&rty) else {
                return Err(cx.unsupported(op));
            };
            let (f, t) = (from.name(), to.name());
            let half = rty.is_half().then_some(rty == Type::BF16);
            match (short, half) {
                ("sitofp", Some(bf16)) => {
                    // Through double (innocuous, see the Cranelift side),
                    // then once to the type.
                    let w = cx.w.val(format!("sitofp {f} {a} to double"));
                    crate::half::round(cx, bf16, w, true)
                }
                ("truncf", Some(bf16)) => crate::half::round(cx, bf16, a, from == Ty::F64),
                _ => match short {
                    "sitofp" => cx.w.val(format!("sitofp {f} {a} to {t}")),
                    "fptosi" => float_to_int_sat(cx, &a, from, &rty, "fptosi"),
                    _ if from == to => a,
                    "extf" => cx.w.val(format!("fpext {f} {a} to {t}")),
                    "truncf" => cx.w.val(format!("fptrunc {f} {a} to {t}")),
                    _ if from.bytes() > to.bytes() => cx.w.val(format!("trunc {f} {a} to {t}")),
                    _ => cx.w.val(format!("sext {f} {a} to {t}")),
                },
            }
        }
        "extsi" | "extui" | "trunci" | "uitofp" | "fptoui" | "index_castui" | "bitcast" => {
            // An i1 is a 0/1 byte: sign-extending it needs 0/-1 first, and
            // truncating to it keeps the low bit.
            let mut a = cx.get1(opnd[0]);
            let from = scalar(ctx.ty(opnd[0])).unwrap_or(Ty::I64);
            let Some(to) = scalar(&rty) else {
                return Err(cx.unsupported(op));
            };
            let (f, t) = (from.name(), to.name());
            let from_ty = ctx.ty(opnd[0]).clone();
            if short == "bitcast" && (from_ty.is_half() || rty.is_half()) {
                let r = crate::half::bitcast(cx, &from_ty, &rty, a);
                cx.set(res, &[r]);
                return Ok(());
            }
            if matches!(short, "extui" | "uitofp" | "index_castui") {
                a = zext_int(cx, &from_ty, a);
            }
            if short == "uitofp" && rty.is_half() {
                let w = cx.w.val(format!("uitofp {f} {a} to double"));
                let r = crate::half::round(cx, rty == Type::BF16, w, true);
                cx.set(res, &[r]);
                return Ok(());
            }
            match short {
                "extsi" => {
                    if *ctx.ty(opnd[0]) == Type::I1 {
                        a = cx.w.val(format!("sub i8 0, {a}"));
                    }
                    if from == to {
                        a
                    } else {
                        cx.w.val(format!("sext {f} {a} to {t}"))
                    }
                }
                "uitofp" => cx.w.val(format!("uitofp {f} {a} to {t}")),
                "fptoui" => float_to_int_sat(cx, &a, from, &rty, "fptoui"),
                _ if from == to => a,
                "bitcast" => cx.w.val(format!("bitcast {f} {a} to {t}")),
                _ if from.bytes() > to.bytes() => {
                    let r = cx.w.val(format!("trunc {f} {a} to {t}"));
                    int_result(cx, &rty, r)
                }
                _ => cx.w.val(format!("zext {f} {a} to {t}")),
            }
        }
        _ => return Err(cx.unsupported(op)),
    };
    let r = if rty.is_half() && crate::translate::ROUNDED.contains(&short) {
        crate::half::round(cx, rty == Type::BF16, r, false)
    } else if matches!(rty, Type::Int(_)) {
        // A cast to another width, or `abs`: back to the width's range.
        int_result(cx, &rty, r)
    } else {
        r
    };
    cx.set(res, &[r]);
    Ok(())
}

/// A paired sine and cosine ([`crate::sincos`]): the leader calls
/// `sincos(x, &s, &c)` with a stack slot in the entry block and binds both
/// results; the other op is bound by then. The declaration carries the
/// attributes LLVM infers for `sin` (it does not know `sincos`), so that
/// the call blocks no more optimization than two calls did.
fn sincos(cx: &mut FnCx, op: OpId, p: crate::sincos::SinCos) {
    if p.leader != op {
        return;
    }
    let f32 = *cx.ctx.ty(p.x) == Type::F32;
    let t = if f32 { Ty::F32 } else { Ty::F64 };
    let (n, align) = (t.name(), t.bytes());
    let x = cx.get1(p.x);
    let at = cx.w.stack(2 * align);
    let s_at = cx.w.val(format!("bitcast i8* {at} to {n}*"));
    let c_at =
        cx.w.val(format!("getelementptr inbounds {n}, {n}* {s_at}, i64 1"));
    let f = crate::sincos::libm_name(f32);
    cx.declare(f, || {
        format!(
            "declare void @{f}({n}, {n}* nocapture writeonly, {n}* nocapture writeonly) \
             nofree nounwind willreturn writeonly"
        )
    });
    cx.w.line(format!("call void @{f}({n} {x}, {n}* {s_at}, {n}* {c_at})"));
    let s = cx.w.val(format!("load {n}, {n}* {s_at}, align {align}"));
    let c = cx.w.val(format!("load {n}, {n}* {c_at}, align {align}"));
    cx.set(p.sin, &[s]);
    cx.set(p.cos, &[c]);
}
fn float_ty(t: &Type) -> Ty {
    if *t == Type::F64 {
        Ty::F64
    } else {
        Ty::F32
    }
}

/// `call @llvm.<name>.<suffix>(args)` (overloaded on one type `t`).
/// LLVM's fast-math flags for `fm` (with a trailing space): `reassoc` only.
/// IR-SPEC §1 lets only `contract` and `reassoc` license a result other
/// than IEEE's; which operations contract is decided once for every backend
/// ([`crate::contract`]), so LLVM must not contract others, and the other
/// flags (`nnan`, `nsz`, ...) are kept in the IR but give LLVM no licence.
fn llvm_flags(fm: ir::FastMath) -> &'static str {
    if fm.contains(ir::FastMath::REASSOC) {
        "reassoc "
    } else {
        ""
    }
}

pub(super) fn intrinsic(cx: &mut FnCx, name: &str, t: Ty, args: &[String]) -> String {
    let n = t.name();
    let sfx = match t {
        Ty::F32 => "f32",
        Ty::F64 => "f64",
        t => t.name(),
    };
    let a: Vec<String> = args.iter().map(|x| format!("{n} {x}")).collect();
    let full = format!("llvm.{name}.{sfx}");
    let ps = vec![n; args.len()].join(", ");
    cx.declare(&full, || format!("declare {n} @{full}({ps})"));
    cx.w.val(format!("call {n} @{full}({})", a.join(", ")))
}

fn pred(cx: &FnCx, op: OpId) -> &'static str {
    dialects::arith::predicate_of(cx.ctx, op).unwrap_or("")
}

/// The type and two operands of an integer op at type `ty`, with `i1` as 0/-1.
/// The fault of a division or remainder by zero unless `divisor` (of
/// type `t`) is nonzero.
fn div_by_zero_check(cx: &mut FnCx, op: OpId, name: &str, t: Ty, divisor: &str) {
    let nz = cx.w.val(format!("icmp ne {} {divisor}, 0", t.name()));
    cx.check(
        &nz,
        op,
        format!("'{name}' op {}", dialects::arith::eval::DIV_BY_ZERO),
        &[],
    );
}

/// `shifted` when `amount` (unsigned) is below the width of `ty`, else
/// `out`. LLVM's shift by the register's width or more is poison: the
/// shifted value is frozen, and L0 shifts every bit out (see
/// `dialects::arith::eval`).
fn shift_in_range(
    cx: &mut FnCx,
    ty: &Type,
    t: Ty,
    amount: &str,
    shifted: &str,
    out: &str,
) -> String {
    let n = t.name();
    let w = dialects::arith::eval::width(ty);
    let ok = cx.w.val(format!("icmp ult {n} {amount}, {w}"));
    let frozen = cx.w.val(format!("freeze {n} {shifted}"));
    cx.w.val(format!("select i1 {ok}, {n} {frozen}, {n} {out}"))
}

fn int_operands(cx: &mut FnCx, ty: &Type, a: ir::ValueId, b: ir::ValueId) -> (Ty, String, String) {
    let t = scalar(ty).unwrap_or(Ty::I64);
    let (mut x, mut y) = (cx.get1(a), cx.get1(b));
    if *ty == Type::I1 {
        x = cx.w.val(format!("sub i8 0, {x}"));
        y = cx.w.val(format!("sub i8 0, {y}"));
    }
    (t, x, y)
}

/// `addui_extended` (sum, unsigned carry) and `mulsi/mului_extended` (low
/// and high halves of the product, the high half through a double-width
/// multiply). An `i1` is 0/1 in an `i8`; its high half is always 0.
fn extended(cx: &mut FnCx, op: OpId, k: dialects::arith::extended::Extended) {
    use dialects::arith::extended::Extended;
    let ctx = cx.ctx;
    let (a0, b0) = (ctx.operand(op, 0), ctx.operand(op, 1));
    let (r0, r1) = (ctx.result(op, 0), ctx.result(op, 1));
    let ty = ctx.ty(a0).clone();
    let t = scalar(&ty).unwrap_or(Ty::I64);
    let n = t.name();
    let (lo, hi) = match k {
        Extended::AddUI => {
            let (a, b) = (cx.get1(a0), cx.get1(b0));
            let s = cx.w.val(format!("add {n} {a}, {b}"));
            let s = int_result(cx, &ty, s);
            let c = cx.w.val(format!("icmp ult {n} {s}, {a}"));
            let carry = cx.w.val(format!("zext i1 {c} to i8"));
            (s, carry)
        }
        Extended::MulUI | Extended::MulSI => {
            let (_, a, b) = if k == Extended::MulSI {
                int_operands(cx, &ty, a0, b0)
            } else {
                let (a, b) = (cx.get1(a0), cx.get1(b0));
                (t, zext_int(cx, &ty, a), zext_int(cx, &ty, b))
            };
            let lo = cx.w.val(format!("mul {n} {a}, {b}"));
            let lo = int_result(cx, &ty, lo);
            let hi = if ty == Type::I1 {
                "0".to_string()
            } else {
                // The exact product at twice the container's width; the
                // high half starts at the type's width.
                let wide = format!("i{}", 2 * t.bytes() * 8);
                let w = dialects::arith::eval::width(&ty);
                let ext = if k == Extended::MulSI { "sext" } else { "zext" };
                let wa = cx.w.val(format!("{ext} {n} {a} to {wide}"));
                let wb = cx.w.val(format!("{ext} {n} {b} to {wide}"));
                let p = cx.w.val(format!("mul {wide} {wa}, {wb}"));
                let h = cx.w.val(format!("lshr {wide} {p}, {w}"));
                let h = cx.w.val(format!("trunc {wide} {h} to {n}"));
                int_result(cx, &ty, h)
            };
            (lo, hi)
        }
    };
    cx.set(r0, &[lo]);
    cx.set(r1, &[hi]);
}

/// Masks an `i1` result back to 0/1.
/// Masks an `i1` result back to 0/1, and sign-extends a result of another
/// width (`i4`, `i48`) from that width within its container.
fn int_result(cx: &mut FnCx, ty: &Type, r: String) -> String {
    match ty {
        Type::I1 => cx.w.val(format!("and i8 {r}, 1")),
        Type::Int(w) => {
            let n = scalar(ty).unwrap_or(Ty::I64).name();
            let narrow = cx.w.val(format!("trunc {n} {r} to i{w}"));
            cx.w.val(format!("sext i{w} {narrow} to {n}"))
        }
        _ => r,
    }
}

/// An integer of another width (`i4`, `i48`) as its bits, zero-extended
/// in its container; every other type's value as it is.
fn zext_int(cx: &mut FnCx, ty: &Type, v: String) -> String {
    match ty {
        Type::Int(w) => {
            let n = scalar(ty).unwrap_or(Ty::I64).name();
            let mask = ((1u64 << w) - 1) as i64;
            cx.w.val(format!("and {n} {v}, {mask}"))
        }
        _ => v,
    }
}

/// `llvm.fptosi.sat` / `llvm.fptoui.sat` (`conv`) of the float `a` of
/// type `from` to the integer type `to`, at `to`'s own width (LLVM takes
/// any width), then sign-extended into its container as the interpreter
/// keeps it.
fn float_to_int_sat(cx: &mut FnCx, a: &str, from: Ty, to: &Type, conv: &str) -> String {
    let f = from.name();
    let fs = if from == Ty::F32 { "f32" } else { "f64" };
    let c = scalar(to).unwrap_or(Ty::I64).name();
    let t = match to {
        Type::Int(w) => format!("i{w}"),
        _ => c.to_string(),
    };
    let name = format!("llvm.{conv}.sat.{t}.{fs}");
    cx.declare(&name, || format!("declare {t} @{name}({f})"));
    let r = cx.w.val(format!("call {t} @{name}({f} {a})"));
    if t == c {
        r
    } else {
        cx.w.val(format!("sext {t} {r} to {c}"))
    }
}

fn constant(cx: &mut FnCx, op: OpId, ty: &Type) -> Result<String, Diagnostic> {
    let a = cx.ctx.attr(op, "value").cloned();
    Ok(match (ty, a) {
        (Type::I0, Some(Attribute::Int(..))) => "0".to_string(),
        (Type::I1, Some(Attribute::Bool(b))) => (b as i64).to_string(),
        (Type::I1, Some(Attribute::Int(v, _))) => (v & 1).to_string(),
        (Type::I8, Some(Attribute::Int(v, _))) => (v as i8).to_string(),
        (Type::I16, Some(Attribute::Int(v, _))) => (v as i16).to_string(),
        (Type::I32, Some(Attribute::Int(v, _))) => (v as i32).to_string(),
        (Type::I64 | Type::Index, Some(Attribute::Int(v, _))) => v.to_string(),
        // Sign-extended from the width, as the container holds it.
        (Type::Int(_), Some(Attribute::Int(v, _))) => v.to_string(),
        // LLVM spells a float constant as the hex bits of the same value as a double.
        (Type::F16 | Type::BF16 | Type::F32, Some(Attribute::Float(v, _))) => {
            format!("0x{:016X}", ((v as f32) as f64).to_bits())
        }
        (Type::F64, Some(Attribute::Float(v, _))) => format!("0x{:016X}", v.to_bits()),
        _ => {
            return Err(Diagnostic::at_op(
                cx.ctx,
                op,
                "this constant is not supported by the LLVM backend",
            ))
        }
    })
}

/// IEEE `minimum`/`maximum` exactly as `eval::min_f64`/`max_f64`: the first
/// NaN operand (payload kept), else the smaller/larger, else (equal values)
/// `a` when its sign bit is set (min) or clear (max), else `b`.
fn min_max(cx: &mut FnCx, t: Ty, a: &str, b: &str, min: bool) -> String {
    let n = t.name();
    let it = if t == Ty::F64 { "i64" } else { "i32" };
    let bits = cx.w.val(format!("bitcast {n} {a} to {it}"));
    let neg = cx.w.val(format!("icmp slt {it} {bits}, 0"));
    let a_on_tie = if min {
        neg
    } else {
        cx.w.val(format!("xor i1 {neg}, true"))
    };
    let (first, second) = if min { ("olt", "ogt") } else { ("ogt", "olt") };
    let mut r = cx.w.val(format!("select i1 {a_on_tie}, {n} {a}, {n} {b}"));
    let b_wins = cx.w.val(format!("fcmp {second} {n} {a}, {b}"));
    r = cx.w.val(format!("select i1 {b_wins}, {n} {b}, {n} {r}"));
    let a_wins = cx.w.val(format!("fcmp {first} {n} {a}, {b}"));
    r = cx.w.val(format!("select i1 {a_wins}, {n} {a}, {n} {r}"));
    let b_nan = cx.w.val(format!("fcmp uno {n} {b}, {b}"));
    r = cx.w.val(format!("select i1 {b_nan}, {n} {b}, {n} {r}"));
    let a_nan = cx.w.val(format!("fcmp uno {n} {a}, {a}"));
    cx.w.val(format!("select i1 {a_nan}, {n} {a}, {n} {r}"))
}
