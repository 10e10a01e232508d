//! Nested containers: `vec<vec<T>>` arguments and results, `arr<arr<V>>`
//! and `arr<vec<V>>` buffers (bucket-collect), flatMap, compared with the
//! interpreter exactly.

mod common;
use common::*;

use std::rc::Rc;

use codegen::JitModule;
use ir::interp::RtValue;

fn vv(rows: &[&[f64]]) -> RtValue {
    RtValue::Vec(Rc::new(rows.iter().map(|r| vf(r)).collect()))
}

fn ragged(n: usize) -> RtValue {
    let rows: Vec<Vec<f64>> = (0..n)
        .map(|r| {
            (0..(r * 7) % 5)
                .map(|k| (r * 3 + k) as f64 * 0.5 - 2.0)
                .collect()
        })
        .collect();
    let refs: Vec<&[f64]> = rows.iter().map(|r| r.as_slice()).collect();
    vv(&refs)
}

fn cases() -> Vec<Vec<RtValue>> {
    vec![
        vec![vv(&[])],
        vec![vv(&[&[]])],
        vec![vv(&[&[1.0, 2.0], &[], &[3.5]])],
        vec![ragged(200)],
    ]
}

const ROW_SUMS: &str = r#"
func.func @main(%m: vec<vec<f64>>) -> (vec<f64>, index) {
  %s = "vec.map"(%m) ({
  ^bb0(%row: vec<f64>):
    %t = "vec.sum"(%row) : (vec<f64>) -> f64
    "vec.yield"(%t) : (f64) -> ()
  }) : (vec<vec<f64>>) -> vec<f64>
  %n = "vec.len"(%m) : (vec<vec<f64>>) -> index
  "func.return"(%s, %n) : (vec<f64>, index) -> ()
}
"#;

#[test]
fn row_sums_of_a_nested_argument() {
    let ctx = build(ROW_SUMS, "lower");
    same(&ctx, "main", &cases());
}

const FLATMAP: &str = r#"
func.func @main(%m: vec<vec<f64>>) -> (vec<f64>, f64) {
  %n = "vec.len"(%m) : (vec<vec<f64>>) -> index
  %out, %s = "gen.loop"(%n) ({
  ^bb0(%i: index, %g: !gen.collect<f64>, %r: !gen.reduce<f64>):
    %row = "vec.get"(%m, %i) : (vec<vec<f64>>, index) -> vec<f64>
    %k = "vec.len"(%row) : (vec<f64>) -> index
    "gen.loop"(%k) ({
    ^bb0(%j: index):
      %x = "vec.get"(%row, %j) : (vec<f64>, index) -> f64
      "gen.emit"(%g, %x) : (!gen.collect<f64>, f64) -> ()
      "gen.emit"(%r, %x) : (!gen.reduce<f64>, f64) -> ()
      "gen.end"() : () -> ()
    }) {gens = []} : (index) -> ()
    "gen.end"() : () -> ()
  }) {gens = [#gen.collect, #gen.reduce<add>]} : (index) -> (vec<f64>, f64)
  "func.return"(%out, %s) : (vec<f64>, f64) -> ()
}
"#;

#[test]
fn flatmap_over_rows() {
    let ctx = build(FLATMAP, "lower");
    same(&ctx, "main", &cases());
}

const BUCKETS: &str = r#"
func.func @main(%k: vec<i64>, %a: vec<f64>) -> (vec<i64>, vec<vec<f64>>, vec<i64>, vec<f64>) {
  %n = "vec.len"(%k) : (vec<i64>) -> index
  %r:4 = "gen.loop"(%n) ({
  ^bb0(%i: index, %bc: !gen.bucket<i64, f64>, %bs: !gen.bucket<i64, f64>):
    %key = "vec.get"(%k, %i) : (vec<i64>, index) -> i64
    %v = "vec.get"(%a, %i) : (vec<f64>, index) -> f64
    "gen.emit"(%bc, %key, %v) : (!gen.bucket<i64, f64>, i64, f64) -> ()
    "gen.emit"(%bs, %key, %v) : (!gen.bucket<i64, f64>, i64, f64) -> ()
    "gen.end"() : () -> ()
  }) {gens = [#gen.bucket<#gen.collect>, #gen.bucket<#gen.reduce<add>>]} : (index) -> (vec<i64>, vec<vec<f64>>, vec<i64>, vec<f64>)
  "func.return"(%r#0, %r#1, %r#2, %r#3) : (vec<i64>, vec<vec<f64>>, vec<i64>, vec<f64>) -> ()
}
"#;

#[test]
fn bucket_collect_and_reduce() {
    let ctx = build(BUCKETS, "lower");
    let keys: Vec<i64> = (0..500).map(|k| (k * 7 % 13) - 3).collect();
    let vals: Vec<f64> = (0..500).map(|k| k as f64 * 0.25 - 10.0).collect();
    same(
        &ctx,
        "main",
        &[
            vec![vi(&[]), vf(&[])],
            vec![vi(&[2, 1, 2, 2, 3]), vf(&[1.0, 2.0, 3.0, 4.0, 5.0])],
            vec![vi(&keys), vf(&vals)],
            // Mismatched lengths fault at the same op in both.
            vec![vi(&[1, 2, 3]), vf(&[1.0])],
        ],
    );
}

const RETURN_NESTED: &str = r#"
func.func @main(%n: index, %m: vec<vec<f64>>, %c: i1) -> (vec<vec<index>>, vec<index>, vec<vec<f64>>, vec<f64>, vec<vec<f64>>) {
  %io = "vec.iota"(%n) : (index) -> vec<index>
  %vv = "vec.map"(%io) ({
  ^bb0(%k: index):
    %r = "vec.iota"(%k) : (index) -> vec<index>
    "vec.yield"(%r) : (vec<index>) -> ()
  }) : (vec<index>) -> vec<vec<index>>
  %s = "vec.map"(%vv) ({
  ^bb0(%row: vec<index>):
    %t = "vec.sum"(%row) : (vec<index>) -> index
    "vec.yield"(%t) : (index) -> ()
  }) : (vec<vec<index>>) -> vec<index>
  %z = "arith.constant"() {value = 0 : index} : () -> index
  %first = "vec.get"(%m, %z) : (vec<vec<f64>>, index) -> vec<f64>
  %pick = "scf.if"(%c) ({
    "scf.yield"(%m) : (vec<vec<f64>>) -> ()
  }, {
    %e = "vec.map"(%m) ({
    ^bb0(%row: vec<f64>):
      %d = "vec.map"(%row) ({
      ^bb0(%x: f64):
        %y = "arith.addf"(%x, %x) : (f64, f64) -> f64
        "vec.yield"(%y) : (f64) -> ()
      }) : (vec<f64>) -> vec<f64>
      "vec.yield"(%d) : (vec<f64>) -> ()
    }) : (vec<vec<f64>>) -> vec<vec<f64>>
    "scf.yield"(%e) : (vec<vec<f64>>) -> ()
  }) : (i1) -> vec<vec<f64>>
  "func.return"(%vv, %s, %m, %first, %pick) : (vec<vec<index>>, vec<index>, vec<vec<f64>>, vec<f64>, vec<vec<f64>>) -> ()
}
"#;

#[test]
fn nested_results_and_views() {
    let ctx = build(RETURN_NESTED, "lower");
    let mut cs = Vec::new();
    for (n, m) in [(0, vv(&[])), (4, vv(&[&[1.0, 2.0], &[]])), (30, ragged(40))] {
        for c in [true, false] {
            cs.push(vec![i(n), m.clone(), b(c)]);
        }
    }
    same(&ctx, "main", &cs);
}

const LOOP_CARRIED: &str = r#"
func.func @main(%m: vec<vec<f64>>, %n: index) -> vec<vec<f64>> {
  %z = "arith.constant"() {value = 0 : index} : () -> index
  %one = "arith.constant"() {value = 1 : index} : () -> index
  %r = "scf.for"(%z, %n, %one, %m) ({
  ^bb0(%i: index, %acc: vec<vec<f64>>):
    %a = "arr.from_vec"(%acc) : (vec<vec<f64>>) -> arr<vec<f64>>
    %l = "arr.len"(%a) : (arr<vec<f64>>) -> index
    %p = "arith.cmpi"(%i, %l) {predicate = "slt"} : (index, index) -> i1
    "scf.if"(%p) ({
      %row = "arr.load"(%a, %i) : (arr<vec<f64>>, index) -> vec<f64>
      %last = "arith.subi"(%l, %one) : (index, index) -> index
      "arr.store"(%a, %last, %row) : (arr<vec<f64>>, index, vec<f64>) -> ()
      "scf.yield"() : () -> ()
    }, {
      "scf.yield"() : () -> ()
    }) : (i1) -> ()
    %e = "vec.get"(%acc, %z) : (vec<vec<f64>>, index) -> vec<f64>
    "arr.push"(%a, %e) : (arr<vec<f64>>, vec<f64>) -> ()
    %copy = "arr.to_vec"(%a) : (arr<vec<f64>>) -> vec<vec<f64>>
    %out = "arr.to_vec"(%a) : (arr<vec<f64>>) -> vec<vec<f64>>
    "scf.yield"(%out) : (vec<vec<f64>>) -> ()
  }) : (index, index, index, vec<vec<f64>>) -> vec<vec<f64>>
  "func.return"(%r) : (vec<vec<f64>>) -> ()
}
"#;

#[test]
fn arrays_of_vectors_copy_move_and_replace() {
    let ctx = build(LOOP_CARRIED, "");
    same(
        &ctx,
        "main",
        &[
            vec![vv(&[&[1.0], &[2.0, 3.0], &[]]), i(5)],
            vec![ragged(12), i(20)],
            // vec.get of an empty vector faults at the same op.
            vec![vv(&[]), i(1)],
        ],
    );
}

const ARR_OF_ARRS: &str = r#"
func.func @main(%n: index) -> (vec<vec<i64>>, index) {
  %z = "arith.constant"() {value = 0 : index} : () -> index
  %one = "arith.constant"() {value = 1 : index} : () -> index
  %aa = "arr.alloc"(%n) : (index) -> arr<arr<i64>>
  %out = "arr.alloc"(%n) : (index) -> arr<vec<i64>>
  "scf.for"(%z, %n, %one) ({
  ^bb0(%i: index):
    %inner = "arr.load"(%aa, %i) : (arr<arr<i64>>, index) -> arr<i64>
    "scf.for"(%z, %i, %one) ({
    ^bb0(%j: index):
      %x = "arith.index_cast"(%j) : (index) -> i64
      "arr.push"(%inner, %x) : (arr<i64>, i64) -> ()
      "scf.yield"() : () -> ()
    }) : (index, index, index) -> ()
    "scf.yield"() : () -> ()
  }) : (index, index, index) -> ()
  %l = "arr.len"(%aa) : (arr<arr<i64>>) -> index
  "scf.for"(%z, %n, %one) ({
  ^bb0(%i: index):
    %inner = "arr.load"(%aa, %i) : (arr<arr<i64>>, index) -> arr<i64>
    %v = "arr.to_vec"(%inner) : (arr<i64>) -> vec<i64>
    "arr.store"(%out, %i, %v) : (arr<vec<i64>>, index, vec<i64>) -> ()
    "scf.yield"() : () -> ()
  }) : (index, index, index) -> ()
  "arr.free"(%aa) : (arr<arr<i64>>) -> ()
  %r = "arr.to_vec"(%out) : (arr<vec<i64>>) -> vec<vec<i64>>
  "func.return"(%r, %l) : (vec<vec<i64>>, index) -> ()
}
"#;

#[test]
fn arrays_of_arrays() {
    let ctx = build(ARR_OF_ARRS, "");
    same(
        &ctx,
        "main",
        &[vec![i(0)], vec![i(1)], vec![i(9)], vec![i(-1)]],
    );
}

const DEEP: &str = r#"
func.func @main(%t: vec<vec<vec<f64>>>) -> (vec<vec<f64>>, vec<vec<vec<f64>>>) {
  %s = "vec.map"(%t) ({
  ^bb0(%m: vec<vec<f64>>):
    %r = "vec.map"(%m) ({
    ^bb0(%row: vec<f64>):
      %x = "vec.sum"(%row) : (vec<f64>) -> f64
      "vec.yield"(%x) : (f64) -> ()
    }) : (vec<vec<f64>>) -> vec<f64>
    "vec.yield"(%r) : (vec<f64>) -> ()
  }) : (vec<vec<vec<f64>>>) -> vec<vec<f64>>
  "func.return"(%s, %t) : (vec<vec<f64>>, vec<vec<vec<f64>>>) -> ()
}
"#;

#[test]
fn three_levels() {
    let ctx = build(DEEP, "lower");
    let t = |ms: Vec<RtValue>| RtValue::Vec(Rc::new(ms));
    same(
        &ctx,
        "main",
        &[
            vec![t(vec![])],
            vec![t(vec![vv(&[]), vv(&[&[1.0, 2.0], &[4.0]]), ragged(9)])],
        ],
    );
}

#[test]
fn what_remains_unsupported_is_a_diagnostic() {
    let src = r#"
func.func @vec_of_arr(%n: index) -> index {
  %a = "arr.alloc"(%n) : (index) -> arr<arr<f64>>
  %v = "arr.to_vec"(%a) : (arr<arr<f64>>) -> vec<arr<f64>>
  %l = "vec.len"(%v) : (vec<arr<f64>>) -> index
  "func.return"(%l) : (index) -> ()
}
func.func @vec_keys(%v: vec<f64>) -> index {
  %z = "arith.constant"() {value = 0 : index} : () -> index
  %a = "arr.alloc"(%z) : (index) -> arr<vec<f64>>
  %j = "arr.find_or_insert"(%a, %v) : (arr<vec<f64>>, vec<f64>) -> index
  "func.return"(%j) : (index) -> ()
}
func.func @fine(%v: vec<vec<f64>>) -> index {
  %n = "vec.len"(%v) : (vec<vec<f64>>) -> index
  "func.return"(%n) : (index) -> ()
}
"#;
    let ctx = build(src, "");
    let m = JitModule::compile(&ctx).unwrap();
    let d = m.check("vec_of_arr").expect_err("vec<arr<T>>");
    assert!(
        d.message.contains("'vec<arr<f64>>' is not supported"),
        "{}",
        d.message
    );
    let d = m.check("vec_keys").expect_err("non-scalar keys");
    assert!(d.message.contains("keys must be scalars"), "{}", d.message);
    assert_eq!(jit(&m, "fine", &[vv(&[&[1.0], &[]])]).unwrap(), vec![i(2)]);
    assert!(codegen::emit_object(&ctx).is_err());
}
