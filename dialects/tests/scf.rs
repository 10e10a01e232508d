//! The `scf` dialect: smart and raw construction, construction-time folds,
//! verification, interpretation, canonicalization and the custom forms.

use std::sync::mpsc;
use std::time::Duration;

use dialects::arith::const_int;
use dialects::scf::{build_assert, build_for, build_if, build_while, build_yield};
use ir::interp::{Interp, RtValue, RunError};
use ir::printer::{print_module, PrintOptions};
use ir::rewrite::{apply_greedily, GreedyConfig, Patterns};
use ir::{Attribute, BlockId, Builder, Context, Loc, Type, ValueId};

// ----- helpers ------------------------------------------------------------------

fn new_ctx() -> Context {
    Context::new(dialects::registry())
}

/// Adds `func.func @name(inputs) -> results` to the module; returns its body.
fn func(ctx: &mut Context, name: &str, inputs: &[Type], results: &[Type]) -> BlockId {
    let (r, body) = ctx.new_region_with_block(inputs);
    let kind = ctx.registry().expect_kind("func.func");
    let f = ctx.create_op(
        kind,
        &[],
        &[],
        vec![
            ("sym_name".into(), Attribute::Str(name.into())),
            (
                "function_type".into(),
                Attribute::Type(Type::function(inputs.to_vec(), results.to_vec())),
            ),
        ],
        &[r],
        Loc::UNKNOWN,
    );
    let top = ctx.top;
    ctx.insert_op(f, top, None);
    body
}

fn ret(b: &mut Builder, vals: &[ValueId]) {
    let st = b.state("func.return", vals, &[], vec![]);
    b.create_raw(st);
}

fn idx(b: &mut Builder, v: i64) -> ValueId {
    const_int(b, v, &Type::Index)
}

fn boolean(b: &mut Builder, v: bool) -> ValueId {
    const_int(b, v as i64, &Type::I1)
}

fn add(b: &mut Builder, x: ValueId, y: ValueId) -> ValueId {
    let t = b.ctx.ty(x).clone();
    b.op1("arith.addi", &[x, y], t, vec![])
}

fn cmpi(b: &mut Builder, pred: &str, x: ValueId, y: ValueId) -> ValueId {
    b.op1(
        "arith.cmpi",
        &[x, y],
        Type::I1,
        vec![("predicate".into(), Attribute::Str(pred.into()))],
    )
}

fn count(ctx: &Context, name: &str) -> usize {
    ctx.walk_all()
        .into_iter()
        .filter(|&o| ctx.is(o, name))
        .count()
}

fn verify_ok(ctx: &Context) {
    if let Err(ds) = ir::verifier::verify(ctx) {
        panic!("verification failed: {ds:?}\n{ctx:?}");
    }
}

fn verify_err(ctx: &Context) -> String {
    match ir::verifier::verify(ctx) {
        Ok(()) => panic!("expected a verification error:\n{ctx:?}"),
        Err(ds) => ds
            .iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

fn run(ctx: &Context, name: &str, args: &[RtValue]) -> Result<Vec<RtValue>, RunError> {
    Interp::new(ctx).call(name, args, Loc::UNKNOWN)
}

fn int(v: i64) -> RtValue {
    RtValue::Int(v)
}

fn parse(text: &str) -> Context {
    match ir::build::parse_source("test.ir", text, dialects::registry()) {
        Ok(ctx) => ctx,
        Err(d) => panic!("parse error at {:?}: {}", d.loc, d.message),
    }
}

fn print(ctx: &Context) -> String {
    print_module(ctx, PrintOptions::default())
}

/// `@sum(lb, ub, step) -> index`: the sum of the induction variable.
fn sum_loop(ctx: &mut Context) {
    let body = func(
        ctx,
        "sum",
        &[Type::Index, Type::Index, Type::Index],
        &[Type::Index],
    );
    let args = ctx.block_args(body).to_vec();
    let mut b = Builder::at_end(ctx, body);
    let zero = idx(&mut b, 0);
    let r = build_for(&mut b, args[0], args[1], args[2], &[zero], |b, i, acc| {
        vec![add(b, acc[0], i)]
    });
    ret(&mut b, &r);
}

// ----- loops ----------------------------------------------------------------------

#[test]
fn for_sums_zero_to_ten() {
    let mut ctx = new_ctx();
    let body = func(&mut ctx, "f", &[], &[Type::Index]);
    let mut b = Builder::at_end(&mut ctx, body);
    let (lb, ub, step) = (idx(&mut b, 0), idx(&mut b, 10), idx(&mut b, 1));
    let init = idx(&mut b, 0);
    let r = build_for(&mut b, lb, ub, step, &[init], |b, i, acc| {
        vec![add(b, acc[0], i)]
    });
    ret(&mut b, &r);
    verify_ok(&ctx);
    assert_eq!(count(&ctx, "scf.for"), 1);
    assert_eq!(run(&ctx, "f", &[]).unwrap(), vec![int(45)]);
}

#[test]
fn for_with_dynamic_bounds_and_step() {
    let mut ctx = new_ctx();
    sum_loop(&mut ctx);
    verify_ok(&ctx);
    assert_eq!(
        run(&ctx, "sum", &[int(0), int(10), int(1)]).unwrap(),
        vec![int(45)]
    );
    assert_eq!(
        run(&ctx, "sum", &[int(0), int(10), int(3)]).unwrap(),
        vec![int(18)]
    );
    assert_eq!(
        run(&ctx, "sum", &[int(-3), int(2), int(2)]).unwrap(),
        vec![int(-3)]
    );
    assert_eq!(
        run(&ctx, "sum", &[int(5), int(5), int(1)]).unwrap(),
        vec![int(0)]
    );
    assert_eq!(
        run(&ctx, "sum", &[int(9), int(2), int(1)]).unwrap(),
        vec![int(0)]
    );
    // The induction variable never wraps around.
    let max = i64::MAX;
    assert_eq!(
        run(&ctx, "sum", &[int(max - 1), int(max), int(max)]).unwrap(),
        vec![int(max - 1)]
    );
}

#[test]
fn non_positive_step_is_a_runtime_error_not_a_hang() {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut ctx = new_ctx();
        sum_loop(&mut ctx);
        let go = |args: &[RtValue]| {
            run(&ctx, "sum", args)
                .map(|v| format!("{v:?}"))
                .map_err(|e| e.message)
        };
        let zero = go(&[int(0), int(10), int(0)]);
        let neg = go(&[int(0), int(10), int(-1)]);
        // A loop that runs zero times never looks at its step.
        let empty = go(&[int(3), int(3), int(0)]);
        tx.send((zero, neg, empty)).unwrap();
    });
    let (zero, neg, empty) = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("scf.for with step 0 hangs");
    let zero = zero.unwrap_err();
    assert!(zero.contains("step must be positive"), "{zero}");
    assert!(neg.unwrap_err().contains("step must be positive"));
    assert_eq!(empty.unwrap(), "[0]");
}

#[test]
fn nested_loops() {
    // sum over i < n, j < i of j * 1 (inner loop carries the outer accumulator).
    let mut ctx = new_ctx();
    let body = func(&mut ctx, "tri", &[Type::Index], &[Type::Index]);
    let n = ctx.block_args(body)[0];
    let mut b = Builder::at_end(&mut ctx, body);
    let (zero, one) = (idx(&mut b, 0), idx(&mut b, 1));
    let r = build_for(&mut b, zero, n, one, &[zero], |b, i, acc| {
        let z = idx(b, 0);
        let s = idx(b, 1);
        build_for(b, z, i, s, &[acc[0]], |b, j, acc2| vec![add(b, acc2[0], j)]).to_vec()
    });
    ret(&mut b, &r);
    verify_ok(&ctx);
    assert_eq!(count(&ctx, "scf.for"), 2);
    assert_eq!(run(&ctx, "tri", &[int(5)]).unwrap(), vec![int(10)]);
    assert_eq!(run(&ctx, "tri", &[int(0)]).unwrap(), vec![int(0)]);
    assert_eq!(run(&ctx, "tri", &[int(1)]).unwrap(), vec![int(0)]);
}

#[test]
fn if_inside_for_sums_odd_numbers() {
    let mut ctx = new_ctx();
    let body = func(&mut ctx, "odd", &[Type::Index], &[Type::Index]);
    let n = ctx.block_args(body)[0];
    let mut b = Builder::at_end(&mut ctx, body);
    let (zero, one) = (idx(&mut b, 0), idx(&mut b, 1));
    let r = build_for(&mut b, zero, n, one, &[zero], |b, i, acc| {
        let two = idx(b, 2);
        let rem = b.op1("arith.remsi", &[i, two], Type::Index, vec![]);
        let z = idx(b, 0);
        let odd = cmpi(b, "ne", rem, z);
        let acc = acc[0];
        build_if(
            b,
            odd,
            &[Type::Index],
            |b| vec![add(b, acc, i)],
            |_| vec![acc],
        )
        .to_vec()
    });
    ret(&mut b, &r);
    verify_ok(&ctx);
    assert_eq!(count(&ctx, "scf.if"), 1);
    assert_eq!(run(&ctx, "odd", &[int(10)]).unwrap(), vec![int(25)]);
}

#[test]
fn for_with_two_iter_args_of_different_types() {
    // (count, sum as f64) over 0..n
    let mut ctx = new_ctx();
    let body = func(&mut ctx, "f", &[Type::Index], &[Type::Index, Type::F64]);
    let n = ctx.block_args(body)[0];
    let mut b = Builder::at_end(&mut ctx, body);
    let (zero, one) = (idx(&mut b, 0), idx(&mut b, 1));
    let fz = dialects::arith::const_float(&mut b, 0.0, &Type::F64);
    let r = build_for(&mut b, zero, n, one, &[zero, fz], |b, i, acc| {
        let c = idx(b, 1);
        let k = add(b, acc[0], c);
        let x = b.op1("arith.sitofp", &[i], Type::F64, vec![]);
        let s = b.op1("arith.addf", &[acc[1], x], Type::F64, vec![]);
        vec![k, s]
    });
    ret(&mut b, &r);
    verify_ok(&ctx);
    assert_eq!(
        run(&ctx, "f", &[int(4)]).unwrap(),
        vec![int(4), RtValue::F64(6.0)]
    );
}

#[test]
fn while_loop_finds_power_of_two() {
    let mut ctx = new_ctx();
    let body = func(&mut ctx, "pow2", &[Type::Index], &[Type::Index]);
    let n = ctx.block_args(body)[0];
    let mut b = Builder::at_end(&mut ctx, body);
    let one = idx(&mut b, 1);
    let r = build_while(
        &mut b,
        &[one],
        &[Type::Index],
        |b, args| {
            let c = cmpi(b, "slt", args[0], n);
            (c, vec![args[0]])
        },
        |b, args| {
            let two = idx(b, 2);
            vec![b.op1("arith.muli", &[args[0], two], Type::Index, vec![])]
        },
    );
    ret(&mut b, &r);
    verify_ok(&ctx);
    assert_eq!(count(&ctx, "scf.while"), 1);
    assert_eq!(run(&ctx, "pow2", &[int(5)]).unwrap(), vec![int(8)]);
    assert_eq!(run(&ctx, "pow2", &[int(1)]).unwrap(), vec![int(1)]);
    assert_eq!(run(&ctx, "pow2", &[int(64)]).unwrap(), vec![int(64)]);
}

// ----- construction-time folds -----------------------------------------------------

fn if_with_constant(cond: bool) -> Context {
    let mut ctx = new_ctx();
    let body = func(&mut ctx, "f", &[Type::Index, Type::Index], &[Type::Index]);
    let args = ctx.block_args(body).to_vec();
    let mut b = Builder::at_end(&mut ctx, body);
    let c = boolean(&mut b, cond);
    let r = build_if(
        &mut b,
        c,
        &[Type::Index],
        |b| vec![add(b, args[0], args[1])],
        |b| vec![b.op1("arith.subi", &[args[0], args[1]], Type::Index, vec![])],
    );
    ret(&mut b, &r);
    ctx
}

#[test]
fn constant_condition_if_is_not_built() {
    let ctx = if_with_constant(true);
    verify_ok(&ctx);
    assert_eq!(count(&ctx, "scf.if"), 0);
    assert_eq!(count(&ctx, "arith.addi"), 1);
    assert_eq!(count(&ctx, "arith.subi"), 0);
    assert_eq!(run(&ctx, "f", &[int(7), int(2)]).unwrap(), vec![int(9)]);

    let ctx = if_with_constant(false);
    verify_ok(&ctx);
    assert_eq!(count(&ctx, "scf.if"), 0);
    assert_eq!(count(&ctx, "arith.addi"), 0);
    assert_eq!(count(&ctx, "arith.subi"), 1);
    assert_eq!(run(&ctx, "f", &[int(7), int(2)]).unwrap(), vec![int(5)]);
}

#[test]
fn raw_builder_keeps_constant_condition_if() {
    let mut ctx = new_ctx();
    let body = func(&mut ctx, "f", &[Type::Index, Type::Index], &[Type::Index]);
    let args = ctx.block_args(body).to_vec();
    let mut b = Builder::at_end(&mut ctx, body);
    let c = boolean(&mut b, false);
    b.smart = false;
    let r = build_if(
        &mut b,
        c,
        &[Type::Index],
        |_| vec![args[0]],
        |_| vec![args[1]],
    );
    ret(&mut b, &r);
    verify_ok(&ctx);
    assert_eq!(count(&ctx, "scf.if"), 1);
    assert_eq!(run(&ctx, "f", &[int(7), int(2)]).unwrap(), vec![int(2)]);
    // Canonicalization then removes it.
    apply_greedily(&mut ctx, Patterns::Canonical, GreedyConfig::default());
    verify_ok(&ctx);
    assert_eq!(count(&ctx, "scf.if"), 0);
    assert_eq!(run(&ctx, "f", &[int(7), int(2)]).unwrap(), vec![int(2)]);
}

#[test]
fn zero_trip_for_is_not_built() {
    for (lo, hi) in [(5, 5), (7, 3)] {
        let mut ctx = new_ctx();
        let body = func(&mut ctx, "f", &[Type::Index], &[Type::Index]);
        let x = ctx.block_args(body)[0];
        let mut b = Builder::at_end(&mut ctx, body);
        let (lb, ub, step) = (idx(&mut b, lo), idx(&mut b, hi), idx(&mut b, 1));
        let r = build_for(&mut b, lb, ub, step, &[x], |b, i, acc| {
            vec![add(b, acc[0], i)]
        });
        assert_eq!(r[0], x, "a zero-trip loop's result is its init");
        ret(&mut b, &r);
        verify_ok(&ctx);
        assert_eq!(count(&ctx, "scf.for"), 0);
        assert_eq!(count(&ctx, "arith.addi"), 0);
        assert_eq!(run(&ctx, "f", &[int(4)]).unwrap(), vec![int(4)]);
    }
}

#[test]
fn single_iteration_for_is_inlined() {
    let mut ctx = new_ctx();
    let body = func(&mut ctx, "f", &[Type::Index], &[Type::Index]);
    let x = ctx.block_args(body)[0];
    let mut b = Builder::at_end(&mut ctx, body);
    let (lb, ub, step) = (idx(&mut b, 3), idx(&mut b, 5), idx(&mut b, 4));
    let r = build_for(&mut b, lb, ub, step, &[x], |b, i, acc| {
        vec![add(b, acc[0], i)]
    });
    ret(&mut b, &r);
    verify_ok(&ctx);
    assert_eq!(count(&ctx, "scf.for"), 0);
    assert_eq!(run(&ctx, "f", &[int(4)]).unwrap(), vec![int(7)]);
}

#[test]
fn invariant_iter_args_are_removed() {
    let mut ctx = new_ctx();
    let results = [Type::Index, Type::Index, Type::Index, Type::Index];
    let body = func(&mut ctx, "f", &[Type::Index, Type::Index], &results);
    let args = ctx.block_args(body).to_vec();
    let mut b = Builder::at_end(&mut ctx, body);
    let (zero, one) = (idx(&mut b, 0), idx(&mut b, 1));
    // acc0 sums i + acc1; acc1 is passed through; acc2 always yields a
    // constant equal to its init; acc3 yields its init value itself.
    let r = build_for(
        &mut b,
        zero,
        args[0],
        one,
        &[zero, args[1], one, args[0]],
        |b, i, acc| {
            let t = add(b, i, acc[1]);
            let s = add(b, acc[0], t);
            let one = idx(b, 1);
            vec![s, acc[1], one, args[0]]
        },
    );
    assert_eq!(&r[1..], &[args[1], one, args[0]]);
    ret(&mut b, &r);
    verify_ok(&ctx);
    let fors: Vec<_> = ctx
        .walk_all()
        .into_iter()
        .filter(|&o| ctx.is(o, "scf.for"))
        .collect();
    assert_eq!(fors.len(), 1);
    assert_eq!(ctx.results(fors[0]).len(), 1, "{ctx:?}");
    // n = 4, k = 10: (0+10) + (1+10) + (2+10) + (3+10) = 46
    assert_eq!(
        run(&ctx, "f", &[int(4), int(10)]).unwrap(),
        vec![int(46), int(10), int(1), int(4)]
    );
    assert_eq!(
        run(&ctx, "f", &[int(0), int(10)]).unwrap(),
        vec![int(0), int(10), int(1), int(0)]
    );
}

#[test]
fn if_yielding_the_same_value_is_not_built() {
    let mut ctx = new_ctx();
    let body = func(
        &mut ctx,
        "f",
        &[Type::I1, Type::Index, Type::Index],
        &[Type::Index, Type::Index],
    );
    let args = ctx.block_args(body).to_vec();
    let mut b = Builder::at_end(&mut ctx, body);
    let r = build_if(
        &mut b,
        args[0],
        &[Type::Index],
        |_| vec![args[1]],
        |_| vec![args[1]],
    );
    assert_eq!(r[0], args[1]);
    assert_eq!(count(b.ctx, "scf.if"), 0);
    // With one shared and one differing result, both only yielded values
    // from outside: the shared one is that value, the other a select.
    let r2 = build_if(
        &mut b,
        args[0],
        &[Type::Index, Type::Index],
        |_| vec![args[1], args[2]],
        |_| vec![args[2], args[2]],
    );
    assert_eq!(r2[1], args[2]);
    ret(&mut b, &r2);
    verify_ok(&ctx);
    assert_eq!(count(&ctx, "scf.if"), 0);
    let sel = ctx.def_op_named(r2[0], "arith.select").expect("a select");
    assert_eq!(ctx.operands(sel), &[args[0], args[1], args[2]]);
    let t = RtValue::Bool(true);
    let f = RtValue::Bool(false);
    assert_eq!(
        run(&ctx, "f", &[t, int(1), int(2)]).unwrap(),
        vec![int(1), int(2)]
    );
    assert_eq!(
        run(&ctx, "f", &[f, int(1), int(2)]).unwrap(),
        vec![int(2), int(2)]
    );
}

#[test]
fn if_with_effects_keeps_its_effects() {
    let mut ctx = new_ctx();
    let body = func(&mut ctx, "f", &[Type::I1, Type::Index], &[Type::Index]);
    let args = ctx.block_args(body).to_vec();
    let mut b = Builder::at_end(&mut ctx, body);
    let r = build_if(
        &mut b,
        args[0],
        &[Type::Index],
        |b| {
            let f = boolean(b, false);
            build_assert(b, f, "then taken");
            vec![args[1]]
        },
        |_| vec![args[1]],
    );
    assert_eq!(r[0], args[1]);
    ret(&mut b, &r);
    verify_ok(&ctx);
    let ifs: Vec<_> = ctx
        .walk_all()
        .into_iter()
        .filter(|&o| ctx.is(o, "scf.if"))
        .collect();
    assert_eq!(ifs.len(), 1);
    assert!(ctx.results(ifs[0]).is_empty());
    assert_eq!(
        run(&ctx, "f", &[RtValue::Bool(false), int(3)]).unwrap(),
        vec![int(3)]
    );
    let e = run(&ctx, "f", &[RtValue::Bool(true), int(3)]).unwrap_err();
    assert_eq!(e.message, "then taken");
}

#[test]
fn empty_if_and_dead_loop_are_not_built() {
    let mut ctx = new_ctx();
    let body = func(&mut ctx, "f", &[Type::I1, Type::Index], &[]);
    let args = ctx.block_args(body).to_vec();
    let mut b = Builder::at_end(&mut ctx, body);
    let r = build_if(&mut b, args[0], &[], |_| vec![], |_| vec![]);
    assert!(r.is_empty());
    let (zero, one) = (idx(&mut b, 0), idx(&mut b, 1));
    build_for(&mut b, zero, args[1], one, &[], |b, i, _| {
        add(b, i, i);
        vec![]
    });
    // A loop with an effect stays.
    build_for(&mut b, zero, args[1], one, &[], |b, i, _| {
        let c = cmpi(b, "slt", i, args[1]);
        build_assert(b, c, "in range");
        vec![]
    });
    ret(&mut b, &[]);
    verify_ok(&ctx);
    assert_eq!(count(&ctx, "scf.if"), 0);
    assert_eq!(count(&ctx, "scf.for"), 1);
    assert_eq!(count(&ctx, "scf.assert"), 1);
    assert_eq!(
        run(&ctx, "f", &[RtValue::Bool(true), int(3)]).unwrap(),
        vec![]
    );
}

// ----- scf.assert -----------------------------------------------------------------

#[test]
fn assert_faults_with_its_message_at_its_location() {
    let mut ctx = new_ctx();
    let body = func(&mut ctx, "f", &[Type::Index], &[]);
    let x = ctx.block_args(body)[0];
    let mut b = Builder::at_end(&mut ctx, body);
    let ten = idx(&mut b, 10);
    let c = cmpi(&mut b, "slt", x, ten);
    b.loc = Loc(42);
    build_assert(&mut b, c, "x must be below 10");
    b.loc = Loc::UNKNOWN;
    ret(&mut b, &[]);
    verify_ok(&ctx);
    assert!(run(&ctx, "f", &[int(3)]).is_ok());
    let e = run(&ctx, "f", &[int(12)]).unwrap_err();
    assert_eq!(e.message, "x must be below 10");
    assert_eq!(e.loc, Loc(42));
}

#[test]
fn constant_true_assert_is_erased_false_is_kept() {
    let mut ctx = new_ctx();
    let body = func(&mut ctx, "f", &[], &[]);
    let mut b = Builder::at_end(&mut ctx, body);
    let t = boolean(&mut b, true);
    build_assert(&mut b, t, "never");
    assert_eq!(count(b.ctx, "scf.assert"), 0);
    let f = boolean(&mut b, false);
    build_assert(&mut b, f, "always");
    ret(&mut b, &[]);
    verify_ok(&ctx);
    assert_eq!(count(&ctx, "scf.assert"), 1);
    // Canonicalization must not remove an effect.
    apply_greedily(&mut ctx, Patterns::Canonical, GreedyConfig::default());
    assert_eq!(count(&ctx, "scf.assert"), 1);
    assert_eq!(run(&ctx, "f", &[]).unwrap_err().message, "always");
}

// ----- verifier -------------------------------------------------------------------

#[test]
fn verify_rejects_wrong_yield_types() {
    let mut ctx = new_ctx();
    let body = func(&mut ctx, "f", &[Type::I1, Type::Index], &[Type::F64]);
    let args = ctx.block_args(body).to_vec();
    let mut b = Builder::at_end(&mut ctx, body);
    b.smart = false;
    let r = build_if(
        &mut b,
        args[0],
        &[Type::F64],
        |_| vec![args[1]],
        |_| vec![args[1]],
    );
    ret(&mut b, &r);
    let e = verify_err(&ctx);
    assert!(
        e.contains("'scf.yield' op operand types (index) must match"),
        "{e}"
    );
}

#[test]
fn verify_rejects_wrong_yield_count_in_for() {
    let mut ctx = new_ctx();
    let body = func(&mut ctx, "f", &[Type::Index], &[Type::Index]);
    let n = ctx.block_args(body)[0];
    let mut b = Builder::at_end(&mut ctx, body);
    b.smart = false;
    let r = build_for(&mut b, n, n, n, &[n], |_, _, _| vec![]);
    ret(&mut b, &r);
    let e = verify_err(&ctx);
    assert!(
        e.contains("'scf.yield' op operand types () must match"),
        "{e}"
    );
}

#[test]
fn verify_rejects_non_i1_condition() {
    let mut ctx = new_ctx();
    let body = func(&mut ctx, "f", &[Type::Index], &[Type::Index]);
    let n = ctx.block_args(body)[0];
    let mut b = Builder::at_end(&mut ctx, body);
    let r = build_if(
        &mut b,
        n,
        &[Type::Index],
        |_| vec![n],
        |b| vec![add(b, n, n)],
    );
    ret(&mut b, &r);
    let e = verify_err(&ctx);
    assert!(
        e.contains("'scf.if' op operand #0 (the condition) must be i1, but got 'index'"),
        "{e}"
    );
}

#[test]
fn verify_rejects_non_index_bounds() {
    let mut ctx = new_ctx();
    let body = func(&mut ctx, "f", &[Type::I64], &[]);
    let n = ctx.block_args(body)[0];
    let mut b = Builder::at_end(&mut ctx, body);
    build_for(&mut b, n, n, n, &[], |b, i, _| {
        let c = cmpi(b, "slt", i, i);
        build_assert(b, c, "x");
        vec![]
    });
    ret(&mut b, &[]);
    let e = verify_err(&ctx);
    assert!(
        e.contains("lower bound (operand #0) must be of index type, but got 'i64'"),
        "{e}"
    );
}

#[test]
fn verify_rejects_yield_outside_scf() {
    let mut ctx = new_ctx();
    let body = func(&mut ctx, "f", &[], &[]);
    let mut b = Builder::at_end(&mut ctx, body);
    build_yield(&mut b, &[]);
    let e = verify_err(&ctx);
    assert!(e.contains("'scf.yield' op expects parent op"), "{e}");
}

// ----- text ------------------------------------------------------------------------

const LOOPS: &str = r#"
func.func @f(%lb: index, %ub: index, %s: index, %init: f64, %c: i1) -> f64 {
  %r = scf.for %i = %lb to %ub step %s iter_args(%acc = %init) -> (f64) {
    %y = scf.if %c -> (f64) {
      %a = arith.addf %acc, %acc : f64
      scf.yield %a : f64
    } else {
      scf.yield %acc : f64
    }
    scf.yield %y : f64
  }
  scf.if %c {
    scf.assert %c, "c \"holds\""
  }
  scf.for %j = %lb to %ub step %s {
    scf.assert %c, "in loop"
  }
  %w = scf.while (%x = %r) : (f64) -> f64 {
    %k = arith.cmpf olt, %x, %init : f64
    scf.condition(%k) %x : f64
  } do {
  ^bb0(%x2: f64):
    %n = arith.addf %x2, %x2 : f64
    scf.yield %n : f64
  }
  func.return %w : f64
}
"#;

#[test]
fn custom_forms_round_trip() {
    let ctx = parse(LOOPS);
    verify_ok(&ctx);
    let text = print(&ctx);
    for line in [
        "%r = scf.for %i = %lb to %ub step %s iter_args(%acc = %init) -> (f64) {",
        "%y = scf.if %c -> (f64) {",
        "} else {",
        "scf.yield %acc : f64",
        "scf.if %c {",
        "scf.assert %c, \"c \\\"holds\\\"\"",
        "scf.for %j = %lb to %ub step %s {",
        "%w = scf.while (%x = %r) : (f64) -> f64 {",
        "scf.condition(%k) %x : f64",
        "} do {",
        "^bb0(%x2: f64):",
    ] {
        assert!(text.contains(line), "missing `{line}` in\n{text}");
    }
    // The else of a result-less if that only yields is omitted.
    assert_eq!(text.matches("else").count(), 1, "{text}");
    let again = parse(&text);
    verify_ok(&again);
    assert_eq!(print(&again), text);
    // Generic form round trip.
    let generic = print_module(
        &ctx,
        PrintOptions {
            generic: true,
            ..Default::default()
        },
    );
    assert!(generic.contains("\"scf.for\"("), "{generic}");
    let from_generic = parse(&generic);
    verify_ok(&from_generic);
    assert_eq!(print(&from_generic), text);
    // And it runs: 3 iterations doubling 1.5 -> 12, then the while loop
    // doubles while below the init (never).
    let args = [
        int(0),
        int(3),
        int(1),
        RtValue::F64(1.5),
        RtValue::Bool(true),
    ];
    assert_eq!(run(&ctx, "f", &args).unwrap(), vec![RtValue::F64(12.0)]);
    let args = [
        int(0),
        int(3),
        int(1),
        RtValue::F64(1.5),
        RtValue::Bool(false),
    ];
    assert_eq!(run(&again, "f", &args).unwrap_err().message, "in loop");
}

#[test]
fn while_loop_from_text() {
    let src = r#"
func.func @collatz(%n: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c2 = arith.constant 2 : i64
  %c3 = arith.constant 3 : i64
  %x, %steps = scf.while (%v = %n, %k = %c0) : (i64, i64) -> (i64, i64) {
    %more = arith.cmpi ne, %v, %c1 : i64
    scf.condition(%more) %v, %k : i64, i64
  } do {
  ^bb0(%v2: i64, %k2: i64):
    %r = arith.remsi %v2, %c2 : i64
    %even = arith.cmpi eq, %r, %c0 : i64
    %next = scf.if %even -> (i64) {
      %h = arith.divsi %v2, %c2 : i64
      scf.yield %h : i64
    } else {
      %t = arith.muli %v2, %c3 : i64
      %t1 = arith.addi %t, %c1 : i64
      scf.yield %t1 : i64
    }
    %k3 = arith.addi %k2, %c1 : i64
    scf.yield %next, %k3 : i64, i64
  }
  func.return %steps : i64
}
"#;
    let ctx = parse(src);
    verify_ok(&ctx);
    assert_eq!(run(&ctx, "collatz", &[int(6)]).unwrap(), vec![int(8)]);
    assert_eq!(run(&ctx, "collatz", &[int(1)]).unwrap(), vec![int(0)]);
    let text = print(&ctx);
    assert!(
        text.contains("%x, %steps = scf.while (%v = %n, %k = %c0) : (i64, i64) -> (i64, i64) {"),
        "{text}"
    );
    assert_eq!(print(&parse(&text)), text);
}

#[test]
fn implicit_yield_and_empty_regions_parse() {
    let src = r#"
func.func @f(%c: i1, %n: index) {
  %z = arith.constant 0 : index
  %one = arith.constant 1 : index
  scf.if %c {
    scf.assert %c, "a"
  } else {
  }
  scf.for %i = %z to %n step %one {
  }
  func.return
}
"#;
    let ctx = parse(src);
    verify_ok(&ctx);
    let text = print(&ctx);
    assert!(text.contains("scf.yield"), "{text}");
    assert_eq!(print(&parse(&text)), text);
    assert!(run(&ctx, "f", &[RtValue::Bool(true), int(3)]).is_ok());
}

#[test]
fn malformed_custom_forms_are_errors() {
    for (src, want) in [
        (
            "func.func @f(%n: index, %x: f64) {\n  %r = scf.for %i = %n to %n step %n iter_args(%a = %x) {\n    scf.yield %a : f64\n  }\n  func.return\n}",
            "result types",
        ),
        (
            "func.func @f(%n: index) {\n  scf.for %i = %n step %n {\n  }\n  func.return\n}",
            "expected 'to'",
        ),
        (
            "func.func @f(%c: i1) {\n  scf.assert %c, 3\n  func.return\n}",
            "string",
        ),
    ] {
        match ir::build::parse_source("t.ir", src, dialects::registry()) {
            Ok(ctx) => panic!("expected an error for\n{src}\ngot\n{ctx:?}"),
            Err(d) => assert!(d.message.contains(want), "{}: {src}", d.message),
        }
    }
}

#[test]
fn canonicalize_folds_parsed_constant_if_and_removes_dead_loops() {
    let src = r#"
func.func @f(%a: index, %n: index) -> index {
  %t = arith.constant true
  %z = arith.constant 0 : index
  %one = arith.constant 1 : index
  %r = scf.if %t -> (index) {
    %s = arith.addi %a, %a : index
    scf.yield %s : index
  } else {
    scf.yield %a : index
  }
  %dead = scf.for %i = %z to %n step %one iter_args(%acc = %z) -> (index) {
    %q = arith.addi %acc, %i : index
    scf.yield %q : index
  }
  %kept = scf.for %i = %z to %n step %one iter_args(%acc = %z) -> (index) {
    %ok = arith.cmpi slt, %i, %a : index
    scf.assert %ok, "bounds"
    scf.yield %acc : index
  }
  %zt = scf.for %i = %n to %z step %one iter_args(%acc = %a) -> (index) {
    %w = arith.addi %acc, %acc : index
    scf.yield %w : index
  }
  %u = arith.addi %r, %zt : index
  func.return %u : index
}
"#;
    let mut ctx = parse(src);
    verify_ok(&ctx);
    assert_eq!(run(&ctx, "f", &[int(5), int(3)]).unwrap(), vec![int(15)]);
    apply_greedily(&mut ctx, Patterns::Canonical, GreedyConfig::default());
    verify_ok(&ctx);
    assert_eq!(count(&ctx, "scf.if"), 0, "{ctx:?}");
    // The dead pure loop is gone; the one with an assert stays (without its
    // invariant iter_arg); the zero-trip-at-run-time loop stays.
    assert_eq!(count(&ctx, "scf.for"), 2, "{ctx:?}");
    assert_eq!(count(&ctx, "scf.assert"), 1);
    assert_eq!(run(&ctx, "f", &[int(5), int(3)]).unwrap(), vec![int(15)]);
    assert_eq!(run(&ctx, "f", &[int(5), int(0)]).unwrap(), vec![int(15)]);
}
