//! `scf.if/for/while/assert` and `func.call` against the interpreter.

mod common;
use common::*;

#[test]
fn for_loop_with_iter_args_and_edge_bounds() {
    let src = r#"
func.func @f(%lb: index, %ub: index, %st: index, %x: f64) -> (index, f64) {
  %z = "arith.constant"() {value = 0 : index} : () -> index
  %r:2 = "scf.for"(%lb, %ub, %st, %z, %x) ({
  ^bb0(%i: index, %a: index, %s: f64):
    %a2 = "arith.addi"(%a, %i) : (index, index) -> index
    %s2 = "arith.mulf"(%s, %x) : (f64, f64) -> f64
    "scf.yield"(%a2, %s2) : (index, f64) -> ()
  }) : (index, index, index, index, f64) -> (index, f64)
  "func.return"(%r#0, %r#1) : (index, f64) -> ()
}
"#;
    let ctx = build(src, "");
    let cases = [
        (0, 10, 1),
        (0, 10, 3),
        (5, 5, 1),
        (7, 2, 0),
        (0, 3, 0),
        (0, 3, -1),
        (-5, 5, 2),
        (i64::MAX - 10, i64::MAX, 4),
        (i64::MIN, i64::MIN + 3, 1),
    ];
    let cases: Vec<_> = cases
        .iter()
        .map(|&(l, u, s)| vec![i(l), i(u), i(s), f(1.5)])
        .collect();
    same(&ctx, "f", &cases);
}

#[test]
fn if_and_while() {
    let src = r#"
func.func @f(%n: i64, %x: f64, %y: f64) -> (i64, f64) {
  %one = "arith.constant"() {value = 1 : i64} : () -> i64
  %two = "arith.constant"() {value = 2 : i64} : () -> i64
  %p = "scf.while"(%one) ({
  ^bb0(%v: i64):
    %c = "arith.cmpi"(%v, %n) {predicate = "slt"} : (i64, i64) -> i1
    "scf.condition"(%c, %v) : (i1, i64) -> ()
  }, {
  ^bb0(%v: i64):
    %w = "arith.muli"(%v, %two) : (i64, i64) -> i64
    "scf.yield"(%w) : (i64) -> ()
  }) : (i64) -> i64
  %c = "arith.cmpf"(%x, %y) {predicate = "olt"} : (f64, f64) -> i1
  %m = "scf.if"(%c) ({
    %d = "arith.subf"(%y, %x) : (f64, f64) -> f64
    "scf.yield"(%d) : (f64) -> ()
  }, {
    "scf.yield"(%x) : (f64) -> ()
  }) : (i1) -> f64
  "func.return"(%p, %m) : (i64, f64) -> ()
}
"#;
    let ctx = build(src, "");
    same(
        &ctx,
        "f",
        &[
            vec![i(5), f(1.0), f(3.5)],
            vec![i(1), f(3.0), f(1.0)],
            vec![i(1000), f(f64::NAN), f(1.0)],
        ],
    );
}

const FACT: &str = r#"
func.func @fact(%n: i64) -> i64 {
  %one = "arith.constant"() {value = 1 : i64} : () -> i64
  %c = "arith.cmpi"(%n, %one) {predicate = "sle"} : (i64, i64) -> i1
  %r = "scf.if"(%c) ({
    "scf.yield"(%one) : (i64) -> ()
  }, {
    %m = "arith.subi"(%n, %one) : (i64, i64) -> i64
    %x = "func.call"(%m) {callee = @fact} : (i64) -> i64
    %p = "arith.muli"(%n, %x) : (i64, i64) -> i64
    "scf.yield"(%p) : (i64) -> ()
  }) : (i1) -> i64
  "func.return"(%r) : (i64) -> ()
}
func.func @main(%n: i64, %k: i64) -> i64 {
  %c = "arith.cmpi"(%n, %k) {predicate = "ne"} : (i64, i64) -> i1
  "scf.assert"(%c) {msg = "n must differ from k"} : (i1) -> ()
  %r = "func.call"(%n) {callee = @fact} : (i64) -> i64
  "func.return"(%r) : (i64) -> ()
}
"#;

#[test]
fn calls_recursion_depth_limit_and_assert() {
    // The interpreter recurses on the Rust stack: give it room.
    std::thread::Builder::new()
        .stack_size(512 << 20)
        .spawn(|| {
            let ctx = build(FACT, "");
            same(
                &ctx,
                "main",
                &[
                    vec![i(5), i(0)],
                    vec![i(25), i(0)],
                    vec![i(3), i(3)],
                    vec![i(1999), i(0)],
                    vec![i(2000), i(0)],
                    vec![i(5000), i(0)],
                ],
            );
        })
        .unwrap()
        .join()
        .unwrap();
}
