//! Integers of other widths (`i2` to `i63`: MLIR's `i4`, `i48`, ...) in
//! both native backends against the interpreter, bit for bit and fault for
//! fault: every integer op, comparison and cast, at widths that share a
//! container with a standard type (`i7` in a byte) and that fill most of
//! one (`i63`), on the edges of each width and random values.

mod common;
use common::*;

use codegen::llvm::LlvmJit;
use ir::interp::RtValue;

const WIDTHS: [u32; 8] = [2, 4, 7, 12, 24, 33, 48, 63];

/// `v` truncated to `w` bits and sign-extended (how a value of `iW` is held).
fn sext(v: i64, w: u32) -> i64 {
    (v << (64 - w)) >> (64 - w)
}

/// Values of `iW`: the edges (0, ±1, the signed bounds, shift amounts just
/// below and at the width) and random ones.
fn values(w: u32, n: usize, rng: &mut Lcg) -> Vec<i64> {
    let min = -(1i64 << (w - 1));
    let mut v = vec![0, 1, -1, 2, min, -min - 1, min + 1, (w as i64) - 1];
    v.push(sext(w as i64, w));
    v.extend((0..n).map(|_| sext(rng.next() as i64, w)));
    v.into_iter().map(|x| sext(x, w)).collect()
}

fn check(src: &str, cases: &[Vec<RtValue>]) {
    let ctx = build(src, "");
    let cl = compile(&ctx);
    let ll = LlvmJit::compile(&ctx).unwrap_or_else(|d| panic!("{}", d.message));
    for args in cases {
        let want = interp(&ctx, "f", args);
        let got = jit(&cl, "f", args);
        assert_eq!(got, want, "cranelift @f({args:?}) in\n{src}");
        let p = ll.prepare("f", args).unwrap();
        assert_eq!(ll.call(&p), want, "llvm @f({args:?}) in\n{src}");
    }
}

fn pairs(w: u32, rng: &mut Lcg) -> Vec<Vec<RtValue>> {
    let xs = values(w, 40, rng);
    let ys = values(w, 40, rng);
    let mut out: Vec<Vec<RtValue>> = xs
        .iter()
        .flat_map(|&a| ys.iter().take(12).map(move |&b| vec![i(a), i(b)]))
        .collect();
    out.extend(
        xs.iter()
            .zip(ys.iter().rev())
            .map(|(&a, &b)| vec![i(a), i(b)]),
    );
    out
}

#[test]
fn binary_ops_wrap_at_the_width() {
    let mut rng = Lcg(7);
    let ops = [
        "addi",
        "subi",
        "muli",
        "divsi",
        "remsi",
        "divui",
        "remui",
        "ceildivsi",
        "floordivsi",
        "ceildivui",
        "andi",
        "ori",
        "xori",
        "minsi",
        "maxsi",
        "minui",
        "maxui",
        "shli",
        "shrsi",
        "shrui",
    ];
    for w in WIDTHS {
        let t = format!("i{w}");
        // One function per op: a division by zero faults and would hide
        // the other results.
        for op in ops {
            let src = format!(
                "func.func @f(%a: {t}, %b: {t}) -> {t} {{\n  %r = arith.{op} %a, %b : {t}\n  return %r : {t}\n}}\n"
            );
            check(&src, &pairs(w, &mut rng));
        }
        let preds = [
            "eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge",
        ];
        let cmps: String = preds
            .iter()
            .map(|p| format!("  %{p} = arith.cmpi {p}, %a, %b : {t}\n"))
            .collect();
        let names: Vec<String> = preds.iter().map(|p| format!("%{p}")).collect();
        let src = format!(
            "func.func @f(%a: {t}, %b: {t}) -> ({}) {{\n{cmps}  return {} : {}\n}}\n",
            vec!["i1"; preds.len()].join(", "),
            names.join(", "),
            vec!["i1"; preds.len()].join(", ")
        );
        check(&src, &pairs(w, &mut rng));
        let src = format!(
            "func.func @f(%a: {t}, %b: {t}) -> ({t}, i1, {t}, {t}, {t}, {t}, {t}) {{\n  %s, %c = arith.addui_extended %a, %b : {t}, i1\n  %l, %h = arith.mulsi_extended %a, %b : {t}\n  %ul, %uh = arith.mului_extended %a, %b : {t}\n  %abs = math.absi %a : {t}\n  return %s, %c, %l, %h, %ul, %uh, %abs : {t}, i1, {t}, {t}, {t}, {t}, {t}\n}}\n"
        );
        check(&src, &pairs(w, &mut rng));
    }
}

#[test]
fn casts_extend_truncate_and_saturate_at_the_width() {
    let mut rng = Lcg(11);
    for w in WIDTHS {
        let t = format!("i{w}");
        // To a wider type of the same container where there is one, and to i64.
        let wider = format!("i{}", (w + 1).min(63));
        let src = format!(
            "func.func @f(%a: {t}) -> ({wider}, {wider}, i64, i64, index, index, f64, f32, f64, f32) {{\n  %0 = arith.extsi %a : {t} to {wider}\n  %1 = arith.extui %a : {t} to {wider}\n  %2 = arith.extsi %a : {t} to i64\n  %3 = arith.extui %a : {t} to i64\n  %4 = arith.index_cast %a : {t} to index\n  %5 = arith.index_castui %a : {t} to index\n  %6 = arith.sitofp %a : {t} to f64\n  %7 = arith.sitofp %a : {t} to f32\n  %8 = arith.uitofp %a : {t} to f64\n  %9 = arith.uitofp %a : {t} to f32\n  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : {wider}, {wider}, i64, i64, index, index, f64, f32, f64, f32\n}}\n"
        );
        let cases: Vec<_> = values(w, 60, &mut rng)
            .into_iter()
            .map(|v| vec![i(v)])
            .collect();
        if w < 63 {
            check(&src, &cases);
        }
        let src = format!(
            "func.func @f(%x: i64, %n: index, %d: f64) -> ({t}, {t}, {t}, {t}) {{\n  %0 = arith.trunci %x : i64 to {t}\n  %1 = arith.index_cast %n : index to {t}\n  %2 = arith.fptosi %d : f64 to {t}\n  %3 = arith.fptoui %d : f64 to {t}\n  return %0, %1, %2, %3 : {t}, {t}, {t}, {t}\n}}\n"
        );
        let mut cases = Vec::new();
        let edges = [
            0.0,
            -0.5,
            1.5,
            3.9,
            -3.9,
            1e30,
            -1e30,
            f64::NAN,
            2f64.powi(w as i32 - 1),
        ];
        for k in 0..80 {
            let x = rng.next() as i64;
            let d = if k < edges.len() {
                edges[k]
            } else {
                (x >> (64 - w.min(62) - 2)) as f64 * 0.75
            };
            cases.push(vec![i(x), i(x.rotate_left(k as u32)), f(d)]);
        }
        check(&src, &cases);
    }
}

#[test]
fn constants_and_arguments_keep_the_width() {
    let src = "func.func @f(%a: i4, %b: i48) -> (i4, i48, i4, i2) {\n  %c7 = arith.constant 7 : i4\n  %c15 = arith.constant 15 : i4\n  %big = arith.constant 140737488355327 : i48\n  %s = arith.addi %a, %c7 : i4\n  %t = arith.addi %b, %big : i48\n  %u = arith.ori %a, %c15 : i4\n  %tr = arith.trunci %a : i4 to i2\n  return %s, %t, %u, %tr : i4, i48, i4, i2\n}\n";
    check(
        src,
        &[vec![i(1), i(1)], vec![i(-8), i(-1)], vec![i(7), i(0)]],
    );
    let ctx = build(src, "");
    assert_eq!(
        interp(&ctx, "f", &[i(1), i(1)]).unwrap(),
        vec![i(-8), i(-(1 << 47)), i(-1), i(1)]
    );
}
