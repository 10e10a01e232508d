//! `f16` and `bf16` in both native backends against the interpreter, bit
//! for bit: every conversion on inputs chosen to hit each rounding case
//! (ties, just past ties, the subnormal range, overflow to infinity, NaN),
//! and the arithmetic on random 16-bit operands. The interpreter rounds
//! with an integer algorithm of its own (`ir::types::round_float`); the
//! backends with `codegen`'s float sequences, so this compares two
//! independent implementations.

mod common;
use common::*;

use codegen::llvm::LlvmJit;
use ir::interp::RtValue;
use ir::types::half_from_bits;
use ir::Type;

fn half_type(name: &str) -> Type {
    if name == "bf16" {
        Type::BF16
    } else {
        Type::F16
    }
}

/// Values of `ty` (as the `f32`s that hold them): every class of bit
/// pattern, drawn at random, plus zeros, infinities and a NaN.
fn halves(ty: &str, n: usize, rng: &mut Lcg) -> Vec<f32> {
    let t = half_type(ty);
    let mut v: Vec<f32> = [
        0x0000u16, 0x8000, 0x0001, 0x7C00, 0xFC00, 0x7E00, 0x3C00, 0x7BFF,
    ]
    .iter()
    .map(|&h| half_from_bits(h, &t))
    .collect();
    v.extend((0..n).map(|_| half_from_bits(rng.next() as u16, &t)));
    v
}

/// Doubles around the rounding boundaries of `ty`: each random value of
/// the type, plus or minus half its step, and that nudged by one unit of
/// the double either way (exact ties and just past them), plus random bit
/// patterns and the overflow threshold.
fn doubles_near(ty: &str, n: usize, rng: &mut Lcg) -> Vec<f64> {
    let p = if ty == "bf16" { 7 } else { 10 };
    let mut out = vec![65504.0, 65519.999, 65520.0, 1e-300, -1e-300, f64::NAN];
    for x in halves(ty, n, rng) {
        let x = x as f64;
        if !x.is_finite() || x == 0.0 {
            continue;
        }
        let step = 2f64
            .powi(x.abs().log2().floor() as i32 - p)
            .max(if p == 10 {
                2f64.powi(-24)
            } else {
                2f64.powi(-133)
            });
        for t in [x + step / 2.0, x - step / 2.0] {
            out.extend([
                t,
                f64::from_bits(t.to_bits() + 1),
                f64::from_bits(t.to_bits() - 1),
            ]);
        }
    }
    out.extend((0..n).map(|_| f64::from_bits(rng.next())));
    out
}

/// Whether two results agree: bit for bit, except that with `any_nan` any
/// NaN matches any NaN (which NaN an operation on two NaNs returns depends
/// on the operand order the code generator picks for a commutative
/// instruction).
fn agree(
    a: &Result<Vec<RtValue>, ir::RunError>,
    b: &Result<Vec<RtValue>, ir::RunError>,
    any_nan: bool,
) -> bool {
    match (a, b) {
        (Ok(x), Ok(y)) if any_nan && x.len() == y.len() => x.iter().zip(y).all(|(p, q)| {
            p == q
                || matches!((p, q), (RtValue::F32(u), RtValue::F32(v)) if u.is_nan() && v.is_nan())
        }),
        _ => a == b,
    }
}

fn check_with(src: &str, f: &str, cases: &[Vec<RtValue>], any_nan: bool) {
    let ctx = build(src, "");
    let cl = compile(&ctx);
    let ll = LlvmJit::compile(&ctx).unwrap_or_else(|d| panic!("{}", d.message));
    for args in cases {
        let want = interp(&ctx, f, args);
        let got = jit(&cl, f, args);
        assert!(
            agree(&got, &want, any_nan),
            "cranelift @{f}({args:?}): {got:?}, interpreter {want:?} in\n{src}"
        );
        let p = ll.prepare(f, args).unwrap();
        let got = ll.call(&p);
        assert!(
            agree(&got, &want, any_nan),
            "llvm @{f}({args:?}): {got:?}, interpreter {want:?} in\n{src}"
        );
    }
}

fn check(src: &str, f: &str, cases: &[Vec<RtValue>]) {
    check_with(src, f, cases, false)
}

fn cast_fn(op: &str, from: &str, to: &str) -> String {
    format!("func.func @f(%a: {from}) -> {to} {{\n  %r = arith.{op} %a : {from} to {to}\n  return %r : {to}\n}}\n")
}

#[test]
fn truncf_rounds_once_to_nearest_even() {
    let mut rng = Lcg(1);
    for ty in ["f16", "bf16"] {
        let wide: Vec<_> = doubles_near(ty, 3000, &mut rng)
            .into_iter()
            .map(|v| vec![RtValue::F64(v)])
            .collect();
        check(&cast_fn("truncf", "f64", ty), "f", &wide);
        let mut narrow: Vec<_> = wide
            .iter()
            .map(|a| vec![RtValue::F32(a[0].as_f64().unwrap() as f32)])
            .collect();
        narrow.extend((0..3000).map(|_| vec![RtValue::F32(f32::from_bits(rng.next() as u32))]));
        check(&cast_fn("truncf", "f32", ty), "f", &narrow);
    }
}

#[test]
fn bitcasts_keep_every_bit_pattern() {
    for ty in ["f16", "bf16"] {
        let src = format!(
            "func.func @f(%a: i16) -> (i16, {ty}) {{\n  %h = arith.bitcast %a : i16 to {ty}\n  %r = arith.bitcast %h : {ty} to i16\n  return %r, %h : i16, {ty}\n}}\n"
        );
        // Built without canonicalization, so both casts run.
        let cases: Vec<_> = (0..=u16::MAX)
            .step_by(7)
            .chain([0x7C01, 0xFC01, 0x7F81, 0x7FC1, 0x0001, 0x03FF])
            .map(|h| vec![RtValue::Int(h as i16 as i64)])
            .collect();
        check(&src, "f", &cases);
    }
    let src = "func.func @f(%a: f16) -> bf16 {\n  %r = arith.bitcast %a : f16 to bf16\n  return %r : bf16\n}\n";
    let cases: Vec<_> = halves("f16", 2000, &mut Lcg(5))
        .into_iter()
        .map(|x| vec![RtValue::F32(x)])
        .collect();
    check(src, "f", &cases);
}

#[test]
fn integer_and_wider_conversions() {
    let mut rng = Lcg(2);
    let mut ints: Vec<i64> = vec![
        0,
        1,
        -1,
        2049,
        2051,
        65504,
        65520,
        -65520,
        i64::MAX,
        i64::MIN,
    ];
    ints.extend((0..2000).map(|_| rng.next() as i64 >> (rng.next() % 63)));
    let ints: Vec<_> = ints.into_iter().map(|v| vec![RtValue::Int(v)]).collect();
    for ty in ["f16", "bf16"] {
        check(&cast_fn("sitofp", "i64", ty), "f", &ints);
        check(&cast_fn("uitofp", "i64", ty), "f", &ints);
        let hs: Vec<_> = halves(ty, 2000, &mut rng)
            .into_iter()
            .map(|x| vec![RtValue::F32(x)])
            .collect();
        check(&cast_fn("extf", ty, "f64"), "f", &hs);
        check(&cast_fn("extf", ty, "f32"), "f", &hs);
        check(&cast_fn("fptosi", ty, "i32"), "f", &hs);
        check(&cast_fn("fptoui", ty, "i16"), "f", &hs);
    }
}

#[test]
fn arithmetic_rounds_each_result() {
    let mut rng = Lcg(3);
    for ty in ["f16", "bf16"] {
        let xs = halves(ty, 1500, &mut rng);
        let ys = halves(ty, 1500, &mut rng);
        let pairs: Vec<_> = xs
            .iter()
            .zip(ys.iter().rev())
            .map(|(&a, &b)| vec![RtValue::F32(a), RtValue::F32(b)])
            .collect();
        for op in [
            "addf", "subf", "mulf", "divf", "remf", "minimumf", "maxnumf",
        ] {
            let src = format!(
                "func.func @f(%a: {ty}, %b: {ty}) -> {ty} {{\n  %r = arith.{op} %a, %b : {ty}\n  return %r : {ty}\n}}\n"
            );
            check_with(&src, "f", &pairs, true);
        }
        let src = format!(
            "func.func @f(%a: {ty}, %b: {ty}) -> (i1, i1, {ty}, {ty}, {ty}) {{\n  %lt = arith.cmpf olt, %a, %b : {ty}\n  %ne = arith.cmpf une, %a, %b : {ty}\n  %s = math.sqrt %a : {ty}\n  %n = arith.negf %b : {ty}\n  %e = math.exp %a : {ty}\n  return %lt, %ne, %s, %n, %e : i1, i1, {ty}, {ty}, {ty}\n}}\n"
        );
        check_with(&src, "f", &pairs, true);
    }
}
