//! `vec`/`mat`/`arr` ops, lowered programs, faults and ownership.

mod common;
use common::*;

use codegen::JitModule;
use ir::interp::RtValue;

const SUMSQ: &str = r#"
func.func @main(%x: vec<f64>) -> f64 {
  %sq = "vec.map"(%x) ({
  ^bb0(%e: f64):
    %m = "arith.mulf"(%e, %e) : (f64, f64) -> f64
    "vec.yield"(%m) : (f64) -> ()
  }) : (vec<f64>) -> vec<f64>
  %s = "vec.sum"(%sq) : (vec<f64>) -> f64
  "func.return"(%s) : (f64) -> ()
}
"#;

const MAP_FILTER: &str = r#"
func.func @main(%x: vec<f64>) -> (vec<f64>, vec<f64>, f64) {
  %sq = "vec.map"(%x) ({
  ^bb0(%e: f64):
    %m = "arith.mulf"(%e, %e) : (f64, f64) -> f64
    "vec.yield"(%m) : (f64) -> ()
  }) : (vec<f64>) -> vec<f64>
  %pos = "vec.filter"(%x) ({
  ^bb0(%e: f64):
    %zero = "arith.constant"() {value = 0.0 : f64} : () -> f64
    %keep = "arith.cmpf"(%e, %zero) {predicate = "ogt"} : (f64, f64) -> i1
    "vec.yield"(%keep) : (i1) -> ()
  }) : (vec<f64>) -> vec<f64>
  %s = "vec.sum"(%pos) : (vec<f64>) -> f64
  "func.return"(%sq, %pos, %s) : (vec<f64>, vec<f64>, f64) -> ()
}
"#;

fn data(n: usize) -> RtValue {
    vf(&(0..n)
        .map(|k| ((k * 37) % 11) as f64 - 4.5)
        .collect::<Vec<_>>())
}

#[test]
fn lowered_sumsq_matches() {
    for pipeline in ["lower", "fuse,lower"] {
        let ctx = build(SUMSQ, pipeline);
        same(
            &ctx,
            "main",
            &[vec![data(0)], vec![data(1)], vec![data(1000)]],
        );
    }
}

#[test]
fn lowered_map_and_filter_return_vectors() {
    for pipeline in ["lower", "fuse,lower"] {
        let ctx = build(MAP_FILTER, pipeline);
        same(
            &ctx,
            "main",
            &[vec![data(0)], vec![data(7)], vec![data(3000)]],
        );
    }
}

#[test]
fn vec_get_out_of_bounds_is_a_run_error_at_the_op() {
    let src = "func.func @f(%v: vec<f64>, %i: index) -> f64 {\n  %x = \"vec.get\"(%v, %i) : (vec<f64>, index) -> f64\n  \"func.return\"(%x) : (f64) -> ()\n}\n";
    let ctx = build(src, "");
    same(
        &ctx,
        "f",
        &[
            vec![data(3), i(2)],
            vec![data(3), i(3)],
            vec![data(3), i(-1)],
            vec![data(0), i(0)],
        ],
    );
    let m = compile(&ctx);
    let e = jit(&m, "f", &[data(3), i(3)]).unwrap_err();
    let d = e.into_diagnostic();
    let text = ir::diag::render(ctx.source.as_deref(), &d);
    assert!(
        text.starts_with("t.ir:2:3: error: 'vec.get' op index 3 out of bounds for length 3"),
        "{text}"
    );
}

#[test]
fn arr_ops_match() {
    let src = r#"
func.func @f(%n: index, %v: vec<i64>, %k: i64) -> (vec<i64>, index, i64, vec<i64>, index) {
  %z = "arith.constant"() {value = 0 : index} : () -> index
  %one = "arith.constant"() {value = 1 : index} : () -> index
  %a = "arr.alloc"(%n) : (index) -> arr<i64>
  "scf.for"(%z, %n, %one) ({
  ^bb0(%i: index):
    %x = "arith.muli"(%i, %i) : (index, index) -> index
    %y = "arith.index_cast"(%x) : (index) -> i64
    "arr.store"(%a, %i, %y) : (arr<i64>, index, i64) -> ()
    "arr.push"(%a, %y) : (arr<i64>, i64) -> ()
    "scf.yield"() : () -> ()
  }) : (index, index, index) -> ()
  %len = "arr.len"(%a) : (arr<i64>) -> index
  %l0 = "arr.load"(%a, %n) : (arr<i64>, index) -> i64
  %out = "arr.to_vec"(%a) : (arr<i64>) -> vec<i64>
  %b = "arr.from_vec"(%v) : (vec<i64>) -> arr<i64>
  %p = "arr.find_or_insert"(%b, %k) : (arr<i64>, i64) -> index
  %bv = "arr.to_vec"(%b) : (arr<i64>) -> vec<i64>
  "func.return"(%out, %len, %l0, %bv, %p) : (vec<i64>, index, i64, vec<i64>, index) -> ()
}
"#;
    let ctx = build(src, "");
    same(
        &ctx,
        "f",
        &[
            vec![i(3), vi(&[4, 5]), i(5)],
            vec![i(100), vi(&[]), i(7)],
            vec![i(0), vi(&[1]), i(2)],
            vec![i(-1), vi(&[1]), i(2)],
        ],
    );
}

#[test]
fn matrices() {
    let src = r#"
func.func @f(%m: mat<f64>, %i: index, %j: index) -> (f64, index, index, vec<f64>, mat<f64>) {
  %x = "mat.get"(%m, %i, %j) : (mat<f64>, index, index) -> f64
  %r = "mat.rows"(%m) : (mat<f64>) -> index
  %c = "mat.cols"(%m) : (mat<f64>) -> index
  %row = "mat.row"(%m, %i) : (mat<f64>, index) -> vec<f64>
  %m2 = "mat.from"(%row, %c, %r) : (vec<f64>, index, index) -> mat<f64>
  "func.return"(%x, %r, %c, %row, %m2) : (f64, index, index, vec<f64>, mat<f64>) -> ()
}
"#;
    let ctx = build(src, "");
    let m = mf(2, 3, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let m1 = mf(1, 3, &[1.0, 2.0, 3.0]);
    same(
        &ctx,
        "f",
        &[
            vec![m.clone(), i(1), i(2)],
            vec![m.clone(), i(2), i(0)],
            vec![m.clone(), i(0), i(3)],
            vec![m1.clone(), i(0), i(0)],
        ],
    );
}

#[test]
fn lowered_transpose_and_matvec() {
    let src = r#"
func.func @f(%m: mat<f64>, %v: vec<f64>) -> (mat<f64>, vec<f64>) {
  %t = "mat.transpose"(%m) : (mat<f64>) -> mat<f64>
  %y = "mat.matvec"(%m, %v) : (mat<f64>, vec<f64>) -> vec<f64>
  "func.return"(%t, %y) : (mat<f64>, vec<f64>) -> ()
}
"#;
    let ctx = build(src, "fuse,lower");
    let m = mf(2, 3, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    same(
        &ctx,
        "f",
        &[vec![m.clone(), vf(&[1.0, 0.5, -2.0])], vec![m, vf(&[1.0])]],
    );
}

#[test]
fn unsupported_input_is_a_diagnostic() {
    let ctx = build(SUMSQ, "");
    let m = compile(&ctx);
    let d = m.check("main").expect_err("vec.map is above the arr level");
    assert!(
        d.message.contains("not supported by the Cranelift backend"),
        "{}",
        d.message
    );
    assert!(m.prepare("main", &[data(2)]).is_err());
    assert!(codegen::emit_object(&ctx).is_err());
    // A function using an unsupported type is left out (and its callers);
    // the others still run.
    let src = r#"
func.func @nested(%v: vec<mat<f64>>) -> index {
  %n = "vec.len"(%v) : (vec<mat<f64>>) -> index
  "func.return"(%n) : (index) -> ()
}
func.func @calls_nested(%v: vec<mat<f64>>) -> index {
  %n = "func.call"(%v) {callee = @nested} : (vec<mat<f64>>) -> index
  "func.return"(%n) : (index) -> ()
}
func.func @fine(%v: vec<f64>) -> index {
  %n = "vec.len"(%v) : (vec<f64>) -> index
  "func.return"(%n) : (index) -> ()
}
"#;
    let ctx = build(src, "");
    let m = JitModule::compile(&ctx).unwrap();
    for f in ["nested", "calls_nested"] {
        let d = m.check(f).expect_err("vectors of matrices");
        assert!(
            d.message.contains("not supported by the Cranelift backend"),
            "{}",
            d.message
        );
    }
    assert!(m.check("fine").is_ok());
    assert_eq!(jit(&m, "fine", &[data(3)]).unwrap(), vec![i(3)]);
}

#[test]
fn prepared_calls_repeat() {
    let ctx = build(MAP_FILTER, "fuse,lower");
    let m = compile(&ctx);
    let p = m.prepare("main", &[data(500)]).unwrap();
    let first = m.call(&p).unwrap();
    for _ in 0..50 {
        assert_eq!(m.call(&p).unwrap(), first);
    }
    assert!(m.prepare("main", &[f(1.0)]).is_err());
    assert!(m.prepare("nope", &[]).is_err());
}

/// A column (`mat.row {transposed}`) is no view of the matrix: both native
/// backends refuse it before `lower` (which makes it a loop), and run it
/// after.
#[test]
fn a_column_needs_lowering() {
    let src = r#"
func.func @col(%m: mat<f64>, %i: index) -> vec<f64> {
  %r = "mat.row"(%m, %i) {transposed} : (mat<f64>, index) -> vec<f64>
  "func.return"(%r) : (vec<f64>) -> ()
}
"#;
    let m = compile(&build(src, ""));
    let d = m.check("col").expect_err("a transposed row");
    assert!(
        d.message
            .contains("'mat.row' {transposed} is not supported by the Cranelift backend"),
        "{}",
        d.message
    );
    let ctx = build(src, "lower");
    let mat = mf(2, 3, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    same(&ctx, "col", &[vec![mat.clone(), i(1)], vec![mat, i(3)]]);
}
