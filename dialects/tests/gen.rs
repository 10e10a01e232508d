//! `gen` and `arr` dialects: interpretation of generator loops, their
//! lowering to `arr` + `scf` (phase "arr"), and verifier errors.

use std::rc::Rc;

use ir::interp::{Interp, RtValue};
use ir::printer::{print_module, PrintOptions};
use ir::rewrite::{apply_greedily, Patterns};
use ir::{Context, Loc};

fn parse(src: &str) -> Context {
    match ir::build::parse_source("test.ir", src, dialects::registry()) {
        Ok(c) => c,
        Err(d) => panic!(
            "parse error: {}",
            ir::diag::render(
                Some(&ir::Source {
                    name: "test.ir".into(),
                    text: src.into()
                }),
                &d
            )
        ),
    }
}

fn verify_ok(ctx: &Context) {
    if let Err(ds) = ir::verifier::verify(ctx) {
        let msgs: Vec<String> = ds.iter().map(|d| d.message.clone()).collect();
        panic!(
            "verification failed: {msgs:#?}\n{}",
            print_module(
                ctx,
                PrintOptions {
                    generic: true,
                    ..Default::default()
                }
            )
        );
    }
}

fn verify_err(src: &str) -> String {
    let ctx = parse(src);
    match ir::verifier::verify(&ctx) {
        Ok(()) => panic!("expected a verifier error"),
        Err(ds) => ds
            .iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

fn run(ctx: &Context, f: &str, args: &[RtValue]) -> Vec<RtValue> {
    let mut it = Interp::new(ctx);
    match it.call(f, args, Loc::UNKNOWN) {
        Ok(v) => v,
        Err(e) => panic!(
            "run-time error: {}\n{}",
            e.message,
            print_module(
                ctx,
                PrintOptions {
                    generic: true,
                    ..Default::default()
                }
            )
        ),
    }
}

fn count(ctx: &Context, prefix: &str) -> usize {
    ctx.walk_all()
        .into_iter()
        .filter(|&o| ctx.op_name(o).starts_with(prefix))
        .count()
}

fn count_op(ctx: &Context, name: &str) -> usize {
    ctx.walk_all()
        .into_iter()
        .filter(|&o| ctx.is(o, name))
        .count()
}

fn lower(ctx: &mut Context) {
    apply_greedily(ctx, Patterns::Phase("arr"), Default::default());
    verify_ok(ctx);
    assert_eq!(
        count(ctx, "gen."),
        0,
        "gen ops remain after lowering:\n{}",
        print_module(
            ctx,
            PrintOptions {
                generic: true,
                ..Default::default()
            }
        )
    );
}

fn show(vals: &[RtValue]) -> Vec<String> {
    vals.iter().map(|v| v.to_string()).collect()
}

/// Interprets `f`, checks the results, lowers, checks that no gen op
/// remains and that the lowered program (also after a print/parse round
/// trip of its generic form) gives the same results. Returns the lowered IR.
fn check(src: &str, f: &str, args: &[RtValue], expected: &[&str]) -> Context {
    let mut ctx = parse(src);
    verify_ok(&ctx);
    let before = run(&ctx, f, args);
    assert_eq!(show(&before), expected, "before lowering");
    lower(&mut ctx);
    let after = run(&ctx, f, args);
    assert_eq!(show(&after), expected, "after lowering");
    assert_eq!(before, after);
    let text = print_module(
        &ctx,
        PrintOptions {
            generic: true,
            ..Default::default()
        },
    );
    let again = parse(&text);
    verify_ok(&again);
    assert_eq!(
        run(&again, f, args),
        before,
        "after a round trip of\n{text}"
    );
    ctx
}

fn f64s(xs: &[f64]) -> RtValue {
    RtValue::Vec(Rc::new(xs.iter().map(|&x| RtValue::F64(x)).collect()))
}

fn ints(xs: &[i64]) -> RtValue {
    RtValue::Vec(Rc::new(xs.iter().map(|&x| RtValue::Int(x)).collect()))
}

// ----- the IR-SPEC §3 example ------------------------------------------------

const SPEC_EXAMPLE: &str = r#"
func.func @sq(%a: vec<f64>) -> (vec<f64>, f64) {
  %n = "vec.len"(%a) : (vec<f64>) -> index
  %xs, %s = "gen.loop"(%n) ({
  ^bb0(%i: index, %g0: !gen.collect<f64>, %g1: !gen.reduce<f64>):
    %v = "vec.get"(%a, %i) : (vec<f64>, index) -> f64
    %y = "arith.mulf"(%v, %v) : (f64, f64) -> f64
    "gen.emit"(%g0, %y) : (!gen.collect<f64>, f64) -> ()
    "gen.emit"(%g1, %y) : (!gen.reduce<f64>, f64) -> ()
    "gen.end"() : () -> ()
  }) {gens = [#gen.collect, #gen.reduce<add>]} : (index) -> (vec<f64>, f64)
  "func.return"(%xs, %s) : (vec<f64>, f64) -> ()
}
"#;

#[test]
fn spec_example_collect_and_sum() {
    let ctx = check(
        SPEC_EXAMPLE,
        "sq",
        &[f64s(&[1.0, 2.0, 3.0, 4.5])],
        &["[1, 4, 9, 20.25]", "34.25"],
    );
    // Top-level emits: a dense buffer and an accumulator, no push, no cell.
    assert_eq!(count_op(&ctx, "arr.push"), 0);
    assert_eq!(count_op(&ctx, "arr.store"), 1);
    assert_eq!(count_op(&ctx, "arr.load"), 0);
    assert_eq!(count_op(&ctx, "scf.for"), 1);
    assert_eq!(count_op(&ctx, "arr.to_vec"), 1);
}

#[test]
fn spec_example_empty_input() {
    check(SPEC_EXAMPLE, "sq", &[f64s(&[])], &["[]", "0"]);
}

#[test]
fn reduce_with_init() {
    let src = r#"
func.func @f(%a: vec<f64>, %z: f64) -> (vec<f64>, f64) {
  %n = "vec.len"(%a) : (vec<f64>) -> index
  %xs, %s = "gen.loop"(%n, %z) ({
  ^bb0(%i: index, %g0: !gen.collect<f64>, %g1: !gen.reduce<f64>):
    %v = "vec.get"(%a, %i) : (vec<f64>, index) -> f64
    %y = "arith.mulf"(%v, %v) : (f64, f64) -> f64
    "gen.emit"(%g0, %y) : (!gen.collect<f64>, f64) -> ()
    "gen.emit"(%g1, %y) : (!gen.reduce<f64>, f64) -> ()
    "gen.emit"(%g1, %v) : (!gen.reduce<f64>, f64) -> ()
    "gen.end"() : () -> ()
  }) {gens = [#gen.collect, #gen.reduce<add>]} : (index, f64) -> (vec<f64>, f64)
  "func.return"(%xs, %s) : (vec<f64>, f64) -> ()
}
"#;
    check(
        src,
        "f",
        &[f64s(&[1.0, 2.0, 3.0]), RtValue::F64(100.0)],
        &["[1, 4, 9]", "120"],
    );
}

// ----- filter ----------------------------------------------------------------------

#[test]
fn filter_under_scf_if() {
    let src = r#"
func.func @filt(%a: vec<f64>) -> (vec<f64>, f64, vec<f64>) {
  %n = "vec.len"(%a) : (vec<f64>) -> index
  %t = "arith.constant"() {value = 2.0 : f64} : () -> f64
  %r, %s, %all = "gen.loop"(%n) ({
  ^bb0(%i: index, %g: !gen.collect<f64>, %h: !gen.reduce<f64>, %k: !gen.collect<f64>):
    %v = "vec.get"(%a, %i) : (vec<f64>, index) -> f64
    %c = "arith.cmpf"(%v, %t) {predicate = "ogt"} : (f64, f64) -> i1
    "scf.if"(%c) ({
      "gen.emit"(%g, %v) : (!gen.collect<f64>, f64) -> ()
      "gen.emit"(%h, %v) : (!gen.reduce<f64>, f64) -> ()
      "scf.yield"() : () -> ()
    }, {
      "scf.yield"() : () -> ()
    }) : (i1) -> ()
    "gen.emit"(%k, %v) : (!gen.collect<f64>, f64) -> ()
    "gen.end"() : () -> ()
  }) {gens = [#gen.collect, #gen.reduce<add>, #gen.collect]} : (index) -> (vec<f64>, f64, vec<f64>)
  "func.return"(%r, %s, %all) : (vec<f64>, f64, vec<f64>) -> ()
}
"#;
    let ctx = check(
        src,
        "filt",
        &[f64s(&[1.0, 5.0, 2.0, 7.0, 3.0])],
        &["[5, 7, 3]", "15", "[1, 5, 2, 7, 3]"],
    );
    // Conditional collect pushes; conditional reduce uses a cell (load,
    // store, then load + free after the loop); the unconditional collect stores.
    assert_eq!(count_op(&ctx, "arr.push"), 1);
    assert_eq!(count_op(&ctx, "arr.free"), 1);
    assert_eq!(count_op(&ctx, "arr.load"), 2);
}

// ----- flatMap ---------------------------------------------------------------------

const FLAT_MAP: &str = r#"
func.func @fm(%n: index) -> (vec<index>, index, vec<index>) {
  %c10 = "arith.constant"() {value = 10 : index} : () -> index
  %xs, %tot, %sums = "gen.loop"(%n) ({
  ^bb0(%i: index, %g: !gen.collect<index>, %t: !gen.reduce<index>, %s: !gen.collect<index>):
    "gen.loop"(%i) ({
    ^bb0(%j: index):
      %a = "arith.muli"(%i, %c10) : (index, index) -> index
      %b = "arith.addi"(%a, %j) : (index, index) -> index
      "gen.emit"(%g, %b) : (!gen.collect<index>, index) -> ()
      "gen.emit"(%t, %b) : (!gen.reduce<index>, index) -> ()
      "gen.end"() : () -> ()
    }) {gens = []} : (index) -> ()
    %inner = "gen.loop"(%i) ({
    ^bb0(%j: index, %r: !gen.reduce<index>):
      "gen.emit"(%r, %j) : (!gen.reduce<index>, index) -> ()
      "gen.end"() : () -> ()
    }) {gens = [#gen.reduce<add>]} : (index) -> index
    "gen.emit"(%s, %inner) : (!gen.collect<index>, index) -> ()
    "gen.end"() : () -> ()
  }) {gens = [#gen.collect, #gen.reduce<add>, #gen.collect]} : (index) -> (vec<index>, index, vec<index>)
  "func.return"(%xs, %tot, %sums) : (vec<index>, index, vec<index>) -> ()
}
"#;

#[test]
fn flat_map_nested_loops() {
    let ctx = check(
        FLAT_MAP,
        "fm",
        &[RtValue::Int(4)],
        &["[10, 20, 21, 30, 31, 32]", "144", "[0, 0, 1, 3]"],
    );
    // One outer and two inner loops.
    assert_eq!(count_op(&ctx, "scf.for"), 3);
    check(FLAT_MAP, "fm", &[RtValue::Int(0)], &["[]", "0", "[]"]);
}

#[test]
fn flat_map_inner_loop_lowered_first() {
    // Lower the inner loops alone first (as a driver visiting them first
    // would), then the outer one.
    let mut ctx = parse(FLAT_MAP);
    verify_ok(&ctx);
    let before = run(&ctx, "fm", &[RtValue::Int(5)]);
    let reg = ctx.registry().clone();
    let f = reg.spec(reg.expect_kind("gen.loop")).lowerings[0].1;
    let outer = ctx
        .walk_all()
        .into_iter()
        .find(|&o| ctx.is(o, "gen.loop"))
        .unwrap();
    let inner: Vec<_> = ctx
        .walk_nested(outer)
        .into_iter()
        .filter(|&o| ctx.is(o, "gen.loop"))
        .collect();
    assert_eq!(inner.len(), 2);
    for l in inner {
        let st = ir::OpState::of(&ctx, l);
        let mut b = ir::Builder::before(&mut ctx, l);
        let vals = f(&mut b, &st).expect("inner loop lowers");
        ctx.replace_op(l, &vals);
    }
    verify_ok(&ctx);
    assert_eq!(count_op(&ctx, "gen.loop"), 1);
    assert_eq!(run(&ctx, "fm", &[RtValue::Int(5)]), before);
    lower(&mut ctx);
    assert_eq!(run(&ctx, "fm", &[RtValue::Int(5)]), before);
}

// ----- scan ------------------------------------------------------------------------

#[test]
fn scan_with_init_and_conditional_scan() {
    let src = r#"
func.func @sc(%a: vec<i64>, %z: i64, %one: i64) -> (vec<i64>, vec<i64>) {
  %n = "vec.len"(%a) : (vec<i64>) -> index
  %r, %p = "gen.loop"(%n, %z, %one) ({
  ^bb0(%i: index, %g: !gen.scan<i64>, %h: !gen.scan<i64>):
    %v = "vec.get"(%a, %i) : (vec<i64>, index) -> i64
    "gen.emit"(%g, %v) : (!gen.scan<i64>, i64) -> ()
    %c = "arith.cmpi"(%v, %one) {predicate = "sgt"} : (i64, i64) -> i1
    "scf.if"(%c) ({
      "gen.emit"(%h, %v) : (!gen.scan<i64>, i64) -> ()
      "scf.yield"() : () -> ()
    }, {
      "scf.yield"() : () -> ()
    }) : (i1) -> ()
    "gen.end"() : () -> ()
  }) {gens = [#gen.scan<add>, #gen.scan<mul>]} : (index, i64, i64) -> (vec<i64>, vec<i64>)
  "func.return"(%r, %p) : (vec<i64>, vec<i64>) -> ()
}
"#;
    check(
        src,
        "sc",
        &[ints(&[3, -1, 2, 5]), RtValue::Int(10), RtValue::Int(1)],
        &["[13, 12, 14, 19]", "[3, 6, 30]"],
    );
}

#[test]
fn scan_float_without_init() {
    let src = r#"
func.func @sc(%a: vec<f64>) -> vec<f64> {
  %n = "vec.len"(%a) : (vec<f64>) -> index
  %r = "gen.loop"(%n) ({
  ^bb0(%i: index, %g: !gen.scan<f64>):
    %v = "vec.get"(%a, %i) : (vec<f64>, index) -> f64
    "gen.emit"(%g, %v) : (!gen.scan<f64>, f64) -> ()
    "gen.end"() : () -> ()
  }) {gens = [#gen.scan<max>]} : (index) -> vec<f64>
  "func.return"(%r) : (vec<f64>) -> ()
}
"#;
    check(
        src,
        "sc",
        &[f64s(&[1.5, -2.0, 4.0, 3.0])],
        &["[1.5, 1.5, 4, 4]"],
    );
}

// ----- bucket ----------------------------------------------------------------------

const BUCKET: &str = r#"
func.func @bk(%a: vec<i64>) -> (vec<i64>, vec<i64>, vec<i64>, vec<vec<i64>>) {
  %n = "vec.len"(%a) : (vec<i64>) -> index
  %three = "arith.constant"() {value = 3 : i64} : () -> i64
  %k1, %sums, %k2, %groups = "gen.loop"(%n) ({
  ^bb0(%i: index, %g: !gen.bucket<i64, i64>, %h: !gen.bucket<i64, i64>):
    %v = "vec.get"(%a, %i) : (vec<i64>, index) -> i64
    %k = "arith.remsi"(%v, %three) : (i64, i64) -> i64
    "gen.emit"(%g, %k, %v) : (!gen.bucket<i64, i64>, i64, i64) -> ()
    "gen.emit"(%h, %k, %v) : (!gen.bucket<i64, i64>, i64, i64) -> ()
    "gen.end"() : () -> ()
  }) {gens = [#gen.bucket<#gen.reduce<add>>, #gen.bucket<#gen.collect>]}
     : (index) -> (vec<i64>, vec<i64>, vec<i64>, vec<vec<i64>>)
  "func.return"(%k1, %sums, %k2, %groups) : (vec<i64>, vec<i64>, vec<i64>, vec<vec<i64>>) -> ()
}
"#;

#[test]
fn bucket_reduce_and_collect() {
    let ctx = check(
        BUCKET,
        "bk",
        &[ints(&[5, 3, 4, 9, 7, 1])],
        &[
            "[2, 0, 1]",
            "[5, 12, 12]",
            "[2, 0, 1]",
            "[[5], [3, 9], [4, 7, 1]]",
        ],
    );
    assert_eq!(count_op(&ctx, "arr.find_or_insert"), 2);
    check(BUCKET, "bk", &[ints(&[])], &["[]", "[]", "[]", "[]"]);
}

#[test]
fn bucket_max_under_filter() {
    let src = r#"
func.func @bk(%a: vec<f64>) -> (vec<i1>, vec<f64>) {
  %n = "vec.len"(%a) : (vec<f64>) -> index
  %z = "arith.constant"() {value = 0.0 : f64} : () -> f64
  %h = "arith.constant"() {value = 100.0 : f64} : () -> f64
  %k, %m = "gen.loop"(%n) ({
  ^bb0(%i: index, %g: !gen.bucket<i1, f64>):
    %v = "vec.get"(%a, %i) : (vec<f64>, index) -> f64
    %c = "arith.cmpf"(%v, %h) {predicate = "olt"} : (f64, f64) -> i1
    "scf.if"(%c) ({
      %pos = "arith.cmpf"(%v, %z) {predicate = "ogt"} : (f64, f64) -> i1
      "gen.emit"(%g, %pos, %v) : (!gen.bucket<i1, f64>, i1, f64) -> ()
      "scf.yield"() : () -> ()
    }, {
      "scf.yield"() : () -> ()
    }) : (i1) -> ()
    "gen.end"() : () -> ()
  }) {gens = [#gen.bucket<#gen.reduce<max>>]} : (index) -> (vec<i1>, vec<f64>)
  "func.return"(%k, %m) : (vec<i1>, vec<f64>) -> ()
}
"#;
    check(
        src,
        "bk",
        &[f64s(&[-3.0, 2.0, 500.0, -1.0, 7.5, 1.0])],
        &["[false, true]", "[-1, 7.5]"],
    );
}

// ----- min / max / wrapping ----------------------------------------------------------

#[test]
fn min_max_reduce_floats_and_ints() {
    let src = r#"
func.func @mm(%a: vec<f64>, %b: vec<i32>) -> (f64, f64, i32, i32, i32, i32) {
  %n = "vec.len"(%a) : (vec<f64>) -> index
  %lo, %hi = "gen.loop"(%n) ({
  ^bb0(%i: index, %g: !gen.reduce<f64>, %h: !gen.reduce<f64>):
    %v = "vec.get"(%a, %i) : (vec<f64>, index) -> f64
    "gen.emit"(%g, %v) : (!gen.reduce<f64>, f64) -> ()
    "gen.emit"(%h, %v) : (!gen.reduce<f64>, f64) -> ()
    "gen.end"() : () -> ()
  }) {gens = [#gen.reduce<min>, #gen.reduce<max>]} : (index) -> (f64, f64)
  %m = "vec.len"(%b) : (vec<i32>) -> index
  %ilo, %ihi, %sum, %prod = "gen.loop"(%m) ({
  ^bb0(%i: index, %g: !gen.reduce<i32>, %h: !gen.reduce<i32>, %s: !gen.reduce<i32>, %p: !gen.reduce<i32>):
    %v = "vec.get"(%b, %i) : (vec<i32>, index) -> i32
    "gen.emit"(%g, %v) : (!gen.reduce<i32>, i32) -> ()
    "gen.emit"(%h, %v) : (!gen.reduce<i32>, i32) -> ()
    "gen.emit"(%s, %v) : (!gen.reduce<i32>, i32) -> ()
    "gen.emit"(%p, %v) : (!gen.reduce<i32>, i32) -> ()
    "gen.end"() : () -> ()
  }) {gens = [#gen.reduce<min>, #gen.reduce<max>, #gen.reduce<add>, #gen.reduce<mul>]}
     : (index) -> (i32, i32, i32, i32)
  "func.return"(%lo, %hi, %ilo, %ihi, %sum, %prod) : (f64, f64, i32, i32, i32, i32) -> ()
}
"#;
    check(
        src,
        "mm",
        &[
            f64s(&[3.5, -1.0, 7.25]),
            ints(&[65536, -7, 2147483647, 65536]),
        ],
        // sum wraps: 65536 - 7 + (2^31 - 1) + 65536 = 2^31 + 131064 -> -2147352584;
        // product wraps to 0 (2^16 * 2^16).
        &["-1", "7.25", "-7", "2147483647", "-2147352584", "0"],
    );
    // Empty inputs give the identities.
    check(
        src,
        "mm",
        &[f64s(&[]), ints(&[])],
        &["inf", "-inf", "2147483647", "-2147483648", "0", "1"],
    );
}

// ----- arr -------------------------------------------------------------------------

#[test]
fn arr_ops_and_faults() {
    let src = r#"
func.func @a(%n: index, %i: index, %x: f64) -> (f64, index, vec<f64>, index) {
  %a = "arr.alloc"(%n) : (index) -> arr<f64>
  "arr.store"(%a, %i, %x) : (arr<f64>, index, f64) -> ()
  %y = "arr.load"(%a, %i) : (arr<f64>, index) -> f64
  "arr.push"(%a, %x) : (arr<f64>, f64) -> ()
  %l = "arr.len"(%a) : (arr<f64>) -> index
  %v = "arr.to_vec"(%a) : (arr<f64>) -> vec<f64>
  %b = "arr.from_vec"(%v) : (vec<f64>) -> arr<f64>
  %j = "arr.find_or_insert"(%b, %x) : (arr<f64>, f64) -> index
  "arr.free"(%a) : (arr<f64>) -> ()
  "func.return"(%y, %l, %v, %j) : (f64, index, vec<f64>, index) -> ()
}
func.func @uaf(%n: index) -> f64 {
  %c0 = "arith.constant"() {value = 0 : index} : () -> index
  %a = "arr.alloc"(%n) : (index) -> arr<f64>
  "arr.free"(%a) : (arr<f64>) -> ()
  %y = "arr.load"(%a, %c0) : (arr<f64>, index) -> f64
  "func.return"(%y) : (f64) -> ()
}
"#;
    let ctx = parse(src);
    verify_ok(&ctx);
    let r = run(
        &ctx,
        "a",
        &[RtValue::Int(3), RtValue::Int(1), RtValue::F64(2.5)],
    );
    assert_eq!(show(&r), ["2.5", "4", "[0, 2.5, 0, 2.5]", "1"]);
    let fault = |f: &str, args: &[RtValue]| {
        Interp::new(&ctx)
            .call(f, args, Loc::UNKNOWN)
            .expect_err("expected a run-time fault")
            .message
    };
    let m = fault("a", &[RtValue::Int(3), RtValue::Int(3), RtValue::F64(1.0)]);
    assert!(
        m.contains("arr.store") && m.contains("out of bounds"),
        "{m}"
    );
    let m = fault("a", &[RtValue::Int(3), RtValue::Int(-1), RtValue::F64(1.0)]);
    assert!(m.contains("out of bounds"), "{m}");
    let m = fault("a", &[RtValue::Int(-2), RtValue::Int(0), RtValue::F64(1.0)]);
    assert!(m.contains("arr.alloc") && m.contains("negative"), "{m}");
    let m = fault("uaf", &[RtValue::Int(4)]);
    assert!(m.contains("arr.load") && m.contains("out of bounds"), "{m}");
}

#[test]
fn arr_ops_are_effects() {
    let reg = dialects::registry();
    for name in [
        "arr.alloc",
        "arr.load",
        "arr.store",
        "arr.len",
        "arr.push",
        "arr.from_vec",
        "arr.to_vec",
        "arr.find_or_insert",
        "arr.free",
    ] {
        let spec = reg.spec(reg.expect_kind(name));
        assert!(!spec.is_pure(), "{name} must not be pure");
        assert!(
            spec.traits
                .intersects(ir::Traits::READS | ir::Traits::WRITES | ir::Traits::ALLOCATES),
            "{name} must declare an effect"
        );
    }
}

#[test]
fn lowered_buffers_survive_canonicalize() {
    // Dead-code removal must keep every effect of the lowered loop.
    let mut ctx = parse(SPEC_EXAMPLE);
    let args = [f64s(&[1.0, 2.0, 3.0])];
    let before = run(&ctx, "sq", &args);
    lower(&mut ctx);
    apply_greedily(&mut ctx, Patterns::Canonical, Default::default());
    verify_ok(&ctx);
    assert_eq!(run(&ctx, "sq", &args), before);
}

// ----- helper API ------------------------------------------------------------------

#[test]
fn generator_api() {
    use dialects::gen::{self, BucketOf, GenKind, Generator, Monoid};
    let ctx = parse(BUCKET);
    let l = ctx
        .walk_all()
        .into_iter()
        .find(|&o| ctx.is(o, gen::LOOP))
        .unwrap();
    let gens = gen::generators(&ctx, l);
    assert_eq!(
        gens,
        vec![
            Generator::bucket(BucketOf::Reduce(Monoid::Add), ir::Type::I64, ir::Type::I64),
            Generator::bucket(BucketOf::Collect, ir::Type::I64, ir::Type::I64),
        ]
    );
    assert_eq!(gen::result_offsets(&gens), vec![0, 2]);
    assert_eq!(
        gens[0].handle_type(),
        gen::bucket_type(ir::Type::I64, ir::Type::I64)
    );
    for k in [
        GenKind::Collect,
        GenKind::Reduce(Monoid::Min),
        GenKind::Scan(Monoid::Mul),
        GenKind::Bucket(BucketOf::Collect),
        GenKind::Bucket(BucketOf::Reduce(Monoid::Max)),
    ] {
        assert_eq!(GenKind::from_attr(&k.attr()), Ok(k));
        let text = k.attr().to_string();
        let parsed = ir::parser::parse_attribute(&text).unwrap();
        assert_eq!(GenKind::from_attr(&parsed), Ok(k), "{text}");
    }
    assert_eq!(
        gen::gens_attr(&gens).to_string(),
        "[#gen.bucket<#gen.reduce<add>>, #gen.bucket<#gen.collect>]"
    );
}

#[test]
fn build_loop_helper() {
    use dialects::gen::{self, Generator, Monoid};
    use ir::Type;
    let src = r#"
func.func @b(%a: vec<f64>) -> (vec<f64>, f64) {
  %n = "vec.len"(%a) : (vec<f64>) -> index
  "func.return"(%a, %a) : (vec<f64>, vec<f64>) -> ()
}
"#;
    let mut ctx = parse(src);
    let f = ctx.walk_all()[0];
    let ret = ctx.terminator(ctx.op_block(f, 0)).unwrap();
    let a = ctx.block_args(ctx.op_block(f, 0))[0];
    let n = ctx.result(ctx.block(ctx.op_block(f, 0)).first.unwrap(), 0);
    let mut b = ir::Builder::before(&mut ctx, ret);
    let gens = [
        Generator::collect(Type::F64),
        Generator::reduce(Monoid::Max, Type::F64),
    ];
    let res = gen::build_loop(&mut b, n, &[], &gens, |b, i, h| {
        let v = b.op1("vec.get", &[a, i], Type::F64, vec![]);
        let y = b.op1("arith.addf", &[v, v], Type::F64, vec![]);
        gen::emit(b, h[0], y);
        gen::emit(b, h[1], v);
    });
    ctx.set_operands(ret, &res);
    verify_ok(&ctx);
    let args = [f64s(&[1.0, 3.0, 2.0])];
    assert_eq!(show(&run(&ctx, "b", &args)), ["[2, 6, 4]", "3"]);
    lower(&mut ctx);
    assert_eq!(show(&run(&ctx, "b", &args)), ["[2, 6, 4]", "3"]);
}

#[test]
fn dead_loop_is_removed_by_canonicalize() {
    let src = r#"
func.func @d(%a: vec<f64>) -> index {
  %n = "vec.len"(%a) : (vec<f64>) -> index
  %xs = "gen.loop"(%n) ({
  ^bb0(%i: index, %g: !gen.collect<f64>):
    %v = "vec.get"(%a, %i) : (vec<f64>, index) -> f64
    "gen.emit"(%g, %v) : (!gen.collect<f64>, f64) -> ()
    "gen.end"() : () -> ()
  }) {gens = [#gen.collect]} : (index) -> vec<f64>
  "func.return"(%n) : (index) -> ()
}
"#;
    let mut ctx = parse(src);
    apply_greedily(&mut ctx, Patterns::Canonical, Default::default());
    verify_ok(&ctx);
    assert_eq!(count(&ctx, "gen."), 0);
    // A result-less inner loop emitting to an outer handle is not dead.
    let mut ctx = parse(FLAT_MAP);
    apply_greedily(&mut ctx, Patterns::Canonical, Default::default());
    verify_ok(&ctx);
    assert_eq!(count_op(&ctx, "gen.loop"), 3);
    assert_eq!(
        show(&run(&ctx, "fm", &[RtValue::Int(4)])),
        ["[10, 20, 21, 30, 31, 32]", "144", "[0, 0, 1, 3]"]
    );
}

// ----- verifier errors -------------------------------------------------------------

#[test]
fn verifier_wrong_handle_type() {
    let m = verify_err(
        r#"
func.func @f(%n: index) -> vec<f64> {
  %xs = "gen.loop"(%n) ({
  ^bb0(%i: index, %g: !gen.reduce<f64>):
    "gen.end"() : () -> ()
  }) {gens = [#gen.collect]} : (index) -> vec<f64>
  "func.return"(%xs) : (vec<f64>) -> ()
}
"#,
    );
    assert!(m.contains("!gen.collect<T>"), "{m}");
}

#[test]
fn verifier_emit_outside_loop() {
    let m = verify_err(
        r#"
func.func @f(%h: !gen.collect<f64>, %x: f64) {
  "gen.emit"(%h, %x) : (!gen.collect<f64>, f64) -> ()
  "func.return"() : () -> ()
}
"#,
    );
    assert!(m.contains("enclosing 'gen.loop'"), "{m}");
}

#[test]
fn verifier_other_errors() {
    // Emitted value type.
    let m = verify_err(
        r#"
func.func @f(%n: index, %x: i64) -> vec<f64> {
  %xs = "gen.loop"(%n) ({
  ^bb0(%i: index, %g: !gen.collect<f64>):
    "gen.emit"(%g, %x) : (!gen.collect<f64>, i64) -> ()
    "gen.end"() : () -> ()
  }) {gens = [#gen.collect]} : (index) -> vec<f64>
  "func.return"(%xs) : (vec<f64>) -> ()
}
"#,
    );
    assert!(m.contains("emitted value has type 'i64'"), "{m}");
    // Result type.
    let m = verify_err(
        r#"
func.func @f(%n: index) -> f64 {
  %xs = "gen.loop"(%n) ({
  ^bb0(%i: index, %g: !gen.collect<f64>):
    "gen.end"() : () -> ()
  }) {gens = [#gen.collect]} : (index) -> f64
  "func.return"(%xs) : (f64) -> ()
}
"#,
    );
    assert!(m.contains("result #0"), "{m}");
    // Init count and type.
    let m = verify_err(
        r#"
func.func @f(%n: index, %z: i64) -> f64 {
  %s = "gen.loop"(%n, %z) ({
  ^bb0(%i: index, %g: !gen.reduce<f64>):
    "gen.end"() : () -> ()
  }) {gens = [#gen.reduce<add>]} : (index, i64) -> f64
  "func.return"(%s) : (f64) -> ()
}
"#,
    );
    assert!(m.contains("init #0"), "{m}");
    // Bucket emit needs a key.
    let m = verify_err(
        r#"
func.func @f(%n: index, %x: f64) -> (vec<i64>, vec<f64>) {
  %k, %v = "gen.loop"(%n) ({
  ^bb0(%i: index, %g: !gen.bucket<i64, f64>):
    "gen.emit"(%g, %x) : (!gen.bucket<i64, f64>, f64) -> ()
    "gen.end"() : () -> ()
  }) {gens = [#gen.bucket<#gen.reduce<add>>]} : (index) -> (vec<i64>, vec<f64>)
  "func.return"(%k, %v) : (vec<i64>, vec<f64>) -> ()
}
"#,
    );
    assert!(m.contains("a key and a value"), "{m}");
    // Unknown monoid.
    let m = verify_err(
        r#"
func.func @f(%n: index) -> f64 {
  %s = "gen.loop"(%n) ({
  ^bb0(%i: index, %g: !gen.reduce<f64>):
    "gen.end"() : () -> ()
  }) {gens = [#gen.reduce<sub>]} : (index) -> f64
  "func.return"(%s) : (f64) -> ()
}
"#,
    );
    assert!(m.contains("unknown reduction operator 'sub'"), "{m}");
    // arr type errors.
    let m = verify_err(
        r#"
func.func @f(%a: arr<f64>, %i: index, %x: i64) {
  "arr.store"(%a, %i, %x) : (arr<f64>, index, i64) -> ()
  "func.return"() : () -> ()
}
"#,
    );
    assert!(m.contains("stored value has type 'i64'"), "{m}");
}

// ----- end to end: vec -> gen -> arr ------------------------------------------------

#[test]
fn vec_program_through_both_phases() {
    let src = r#"
func.func @sumsq(%x: vec<f64>) -> (f64, vec<f64>, vec<f64>) {
  %sq = "vec.map"(%x) ({
  ^bb0(%e: f64):
    %m = "arith.mulf"(%e, %e) : (f64, f64) -> f64
    "vec.yield"(%m) : (f64) -> ()
  }) : (vec<f64>) -> vec<f64>
  %s = "vec.sum"(%sq) : (vec<f64>) -> f64
  %t = "arith.constant"() {value = 2.0 : f64} : () -> f64
  %big = "vec.filter"(%sq) ({
  ^bb0(%e: f64):
    %c = "arith.cmpf"(%e, %t) {predicate = "ogt"} : (f64, f64) -> i1
    "vec.yield"(%c) : (i1) -> ()
  }) : (vec<f64>) -> vec<f64>
  %z = "arith.constant"() {value = 0.0 : f64} : () -> f64
  %sc = "vec.scan"(%x, %z) {kind = #gen.scan<add>} : (vec<f64>, f64) -> vec<f64>
  "func.return"(%s, %big, %sc) : (f64, vec<f64>, vec<f64>) -> ()
}
"#;
    let mut ctx = parse(src);
    verify_ok(&ctx);
    let args = [f64s(&[1.0, 2.0, 3.0])];
    let expected = ["14", "[4, 9]", "[1, 3, 6]"];
    assert_eq!(show(&run(&ctx, "sumsq", &args)), expected);
    apply_greedily(&mut ctx, Patterns::Phase("gen"), Default::default());
    verify_ok(&ctx);
    assert_eq!(show(&run(&ctx, "sumsq", &args)), expected);
    lower(&mut ctx);
    assert_eq!(count(&ctx, "vec.map"), 0);
    assert_eq!(show(&run(&ctx, "sumsq", &args)), expected);
}
