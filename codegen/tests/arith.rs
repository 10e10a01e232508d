//! Every `arith` op against the interpreter, with edge cases.

mod common;
use common::*;

use ir::interp::RtValue;

const INT_EDGES: [i64; 9] = [0, 1, -1, 2, -7, 7, i64::MAX, i64::MIN, 3_000_000_000];
const I32_EDGES: [i64; 8] = [0, 1, -1, 2, -7, 7, i32::MAX as i64, i32::MIN as i64];
const F_EDGES: [f64; 10] = [
    0.0,
    -0.0,
    1.5,
    -2.25,
    3.0,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    1e300,
    -1e-300,
];

fn binary_fn(op: &str, ty: &str, rty: &str) -> String {
    format!(
        "func.func @f(%a: {ty}, %b: {ty}) -> {rty} {{\n  %r = \"{op}\"(%a, %b) : ({ty}, {ty}) -> {rty}\n  \"func.return\"(%r) : ({rty}) -> ()\n}}\n"
    )
}

fn cmp_fn(op: &str, pred: &str, ty: &str) -> String {
    format!(
        "func.func @f(%a: {ty}, %b: {ty}) -> i1 {{\n  %r = \"{op}\"(%a, %b) {{predicate = \"{pred}\"}} : ({ty}, {ty}) -> i1\n  \"func.return\"(%r) : (i1) -> ()\n}}\n"
    )
}

fn unary_fn(op: &str, ty: &str, rty: &str) -> String {
    format!(
        "func.func @f(%a: {ty}) -> {rty} {{\n  %r = \"{op}\"(%a) : ({ty}) -> {rty}\n  \"func.return\"(%r) : ({rty}) -> ()\n}}\n"
    )
}

fn pairs(xs: &[RtValue]) -> Vec<Vec<RtValue>> {
    xs.iter()
        .flat_map(|a| xs.iter().map(move |b| vec![a.clone(), b.clone()]))
        .collect()
}

fn ints(ty: &str) -> Vec<RtValue> {
    match ty {
        "i1" => vec![b(false), b(true)],
        "i32" => I32_EDGES.iter().map(|&v| i(v)).collect(),
        _ => INT_EDGES.iter().map(|&v| i(v)).collect(),
    }
}

fn floats(ty: &str) -> Vec<RtValue> {
    F_EDGES
        .iter()
        .map(|&v| {
            if ty == "f32" {
                RtValue::F32(v as f32)
            } else {
                f(v)
            }
        })
        .collect()
}

#[test]
fn integer_binary_ops_wrap_and_fault_like_the_interpreter() {
    let ops = [
        "addi", "subi", "muli", "divsi", "remsi", "andi", "ori", "xori", "mini", "maxi",
    ];
    for ty in ["i64", "index", "i32", "i1"] {
        for op in ops {
            let ctx = build(&binary_fn(&format!("arith.{op}"), ty, ty), "");
            same(&ctx, "f", &pairs(&ints(ty)));
        }
    }
}

#[test]
fn division_by_zero_is_a_fault_at_the_op() {
    let ctx = build(&binary_fn("arith.divsi", "i64", "i64"), "");
    let m = compile(&ctx);
    let e = jit(&m, "f", &[i(1), i(0)]).unwrap_err();
    assert!(
        e.message.contains("integer division by zero"),
        "{}",
        e.message
    );
    assert_eq!(
        e.loc,
        ctx.loc(
            ctx.walk_all()
                .into_iter()
                .find(|&o| ctx.is(o, "arith.divsi"))
                .unwrap()
        )
    );
    assert_eq!(
        jit(&m, "f", &[i(i64::MIN), i(-1)]).unwrap(),
        vec![i(i64::MIN)]
    );
}

#[test]
fn float_binary_ops_match_bit_for_bit() {
    for ty in ["f64", "f32"] {
        for op in ["addf", "subf", "mulf", "divf", "minf", "maxf", "pow"] {
            let ctx = build(&binary_fn(&format!("arith.{op}"), ty, ty), "");
            same(&ctx, "f", &pairs(&floats(ty)));
        }
    }
}

#[test]
fn float_unary_ops_match() {
    for ty in ["f64", "f32"] {
        for op in ["negf", "sqrt", "exp", "log", "sin", "cos", "abs"] {
            let ctx = build(&unary_fn(&format!("arith.{op}"), ty, ty), "");
            let cases: Vec<_> = floats(ty).into_iter().map(|x| vec![x]).collect();
            same(&ctx, "f", &cases);
        }
    }
}

#[test]
fn integer_abs_wraps() {
    for ty in ["i64", "i32", "i1"] {
        let ctx = build(&unary_fn("arith.abs", ty, ty), "");
        let cases: Vec<_> = ints(ty).into_iter().map(|x| vec![x]).collect();
        same(&ctx, "f", &cases);
    }
}

#[test]
fn comparisons_match_every_predicate() {
    for ty in ["i64", "i32", "i1"] {
        for p in [
            "eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge",
        ] {
            let ctx = build(&cmp_fn("arith.cmpi", p, ty), "");
            same(&ctx, "f", &pairs(&ints(ty)));
        }
    }
    let preds = [
        "false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult",
        "ule", "une", "uno", "true",
    ];
    for ty in ["f64", "f32"] {
        for p in preds {
            let ctx = build(&cmp_fn("arith.cmpf", p, ty), "");
            same(&ctx, "f", &pairs(&floats(ty)));
        }
    }
}

#[test]
fn casts_match() {
    let cases = [
        ("arith.sitofp", "i64", "f64"),
        ("arith.sitofp", "i64", "f32"),
        ("arith.sitofp", "i32", "f64"),
        ("arith.sitofp", "index", "f32"),
        ("arith.fptosi", "f64", "i64"),
        ("arith.fptosi", "f64", "i32"),
        ("arith.fptosi", "f32", "index"),
        ("arith.fptosi", "f32", "i32"),
        ("arith.index_cast", "index", "i32"),
        ("arith.index_cast", "i32", "index"),
        ("arith.index_cast", "index", "i64"),
        ("arith.extf", "f32", "f64"),
        ("arith.truncf", "f64", "f32"),
    ];
    for (op, from, to) in cases {
        let ctx = build(&unary_fn(op, from, to), "");
        let xs = if from.starts_with('f') {
            floats(from)
        } else {
            ints(from)
        };
        let xs: Vec<_> = xs.into_iter().map(|x| vec![x]).collect();
        same(&ctx, "f", &xs);
    }
}

#[test]
fn select_and_constants() {
    let src = r#"
func.func @f(%c: i1, %a: f64) -> (f64, i32, i1, f64, f32) {
  %k = "arith.constant"() {value = 0x7FF8000000000001 : f64} : () -> f64
  %s = "arith.select"(%c, %a, %k) : (i1, f64, f64) -> f64
  %n = "arith.constant"() {value = -5 : i32} : () -> i32
  %t = "arith.constant"() {value = true} : () -> i1
  %z = "arith.constant"() {value = -0.0 : f64} : () -> f64
  %h = "arith.constant"() {value = 0.1 : f32} : () -> f32
  "func.return"(%s, %n, %t, %z, %h) : (f64, i32, i1, f64, f32) -> ()
}
"#;
    let ctx = build(src, "");
    same(&ctx, "f", &[vec![b(true), f(2.5)], vec![b(false), f(2.5)]]);
}
