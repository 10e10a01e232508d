//! Smart construction (LMS's smart constructors and hash-consing): folds run
//! before an op is built, and an identical pure op is reused only when it is
//! visible (dominates) from the insertion point.

use dialects::registry;
use ir::{Attribute, Builder, Context, Loc, Type};

fn func_with_body(ctx: &mut Context) -> ir::BlockId {
    let (region, block) = ctx.new_region_with_block(&[Type::F64, Type::I1]);
    let kind = ctx.registry().expect_kind("func.func");
    let attrs = vec![
        ("sym_name".to_string(), Attribute::Str("f".into())),
        (
            "function_type".to_string(),
            Attribute::Type(Type::function(vec![Type::F64, Type::I1], vec![])),
        ),
    ];
    let f = ctx.create_op(kind, &[], &[], attrs, &[region], Loc::UNKNOWN);
    let top = ctx.top;
    ctx.insert_op(f, top, None);
    block
}

fn count(ctx: &Context, name: &str) -> usize {
    ctx.walk_all()
        .into_iter()
        .filter(|&o| ctx.is(o, name))
        .count()
}

#[test]
fn identical_pure_ops_are_hash_consed() {
    let mut ctx = Context::new(registry());
    let body = func_with_body(&mut ctx);
    let a = ctx.block_args(body)[0];
    let mut b = Builder::at_end(&mut ctx, body);
    let x = b.op1("arith.mulf", &[a, a], Type::F64, vec![]);
    let y = b.op1("arith.mulf", &[a, a], Type::F64, vec![]);
    assert_eq!(x, y, "the second mulf must be the first one");
    // Commutative operands are normalized.
    let s1 = b.op1("arith.addf", &[x, a], Type::F64, vec![]);
    let s2 = b.op1("arith.addf", &[a, x], Type::F64, vec![]);
    assert_eq!(s1, s2);
    // Non-commutative ops are not.
    let d1 = b.op1("arith.subf", &[x, a], Type::F64, vec![]);
    let d2 = b.op1("arith.subf", &[a, x], Type::F64, vec![]);
    assert_ne!(d1, d2);
    assert_eq!(count(&ctx, "arith.mulf"), 1);
}

#[test]
fn folds_run_before_construction() {
    let mut ctx = Context::new(registry());
    let body = func_with_body(&mut ctx);
    let a = ctx.block_args(body)[0];
    let mut b = Builder::at_end(&mut ctx, body);
    let one = b.constant(Attribute::float(1.0, Type::F64), &Type::F64);
    let m = b.op1("arith.mulf", &[a, one], Type::F64, vec![]);
    assert_eq!(m, a, "x * 1.0 is x: no mulf is built");
    let two = b.constant(Attribute::float(2.0, Type::F64), &Type::F64);
    let three = b.constant(Attribute::float(3.0, Type::F64), &Type::F64);
    let six = b.op1("arith.mulf", &[two, three], Type::F64, vec![]);
    let def = ctx.def_op(six).unwrap();
    assert!(ctx.is(def, "arith.constant"));
    assert_eq!(
        ctx.attr(def, "value"),
        Some(&Attribute::float(6.0, Type::F64))
    );
    assert_eq!(count(&ctx, "arith.mulf"), 0);
}

#[test]
fn hash_consing_respects_dominance() {
    let mut ctx = Context::new(registry());
    let body = func_with_body(&mut ctx);
    let (a, c) = (ctx.block_args(body)[0], ctx.block_args(body)[1]);
    let mut b = Builder::at_end(&mut ctx, body);
    let outer = b.op1("arith.mulf", &[a, a], Type::F64, vec![]);
    // Inside a nested region, the dominating outer op is reused...
    let mut inner_then = None;
    let then_r = b.build_region(&[], |b, _| {
        inner_then = Some(b.op1("arith.mulf", &[a, a], Type::F64, vec![]));
        let e = b.op1("arith.exp", &[a], Type::F64, vec![]);
        b.op("scf.yield", &[e], &[], vec![]);
    });
    // ...but an op built in the then-branch is not visible in the else-branch.
    let mut else_exp = None;
    let else_r = b.build_region(&[], |b, _| {
        let e = b.op1("arith.exp", &[a], Type::F64, vec![]);
        else_exp = Some(e);
        b.op("scf.yield", &[e], &[], vec![]);
    });
    let r = b.op_with_regions("scf.if", &[c], &[Type::F64], vec![], &[then_r, else_r])[0];
    // And after the if, neither branch's op is visible.
    let after = b.op1("arith.exp", &[a], Type::F64, vec![]);
    assert_eq!(inner_then, Some(outer));
    let then_exp = ctx.operand(ctx.terminator(ctx.region_block(then_r)).unwrap(), 0);
    assert_ne!(Some(then_exp), else_exp);
    assert_ne!(after, then_exp);
    assert_ne!(Some(after), else_exp);
    assert_eq!(count(&ctx, "arith.exp"), 3);
    assert!(ctx.def_op_named(r, "scf.if").is_some());
}

#[test]
fn try_op_reports_unknown_names_and_bad_counts() {
    let mut ctx = Context::new(registry());
    let body = func_with_body(&mut ctx);
    let a = ctx.block_args(body)[0];
    let mut b = Builder::at_end(&mut ctx, body);
    let e = b
        .try_op1("nodialect.frob", &[a], Type::F64, vec![])
        .expect_err("an unregistered name is an error");
    assert!(e.message.contains("no dialect registers"), "{}", e.message);
    let e = b
        .try_op1("arith.mulf", &[a], Type::F64, vec![])
        .expect_err("one operand for a binary op is an error");
    assert!(e.message.contains("1 operands"), "{}", e.message);
    let ok = b.try_op1("arith.mulf", &[a, a], Type::F64, vec![]);
    assert!(ok.is_ok());
}
