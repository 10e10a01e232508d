//! Tests of the arith dialect: folds (and non-folds), interpreter semantics,
//! verifier errors, custom-form round trips.

use dialects::arith;
use ir::printer::{print_module, PrintOptions};
use ir::{Attribute, BlockId, Builder, Context, Loc, RtValue, Type, ValueId};

fn new_ctx() -> Context {
    Context::new(dialects::registry())
}

/// A detached block with arguments of `tys` (non-constant values to build on).
fn block_with_args(ctx: &mut Context, tys: &[Type]) -> (BlockId, Vec<ValueId>) {
    let b = ctx.new_block();
    let args = tys
        .iter()
        .map(|t| ctx.add_block_arg(b, t.clone(), None))
        .collect();
    (b, args)
}

fn f64c(b: &mut Builder, v: f64) -> ValueId {
    arith::const_float(b, v, &Type::F64)
}
fn f32c(b: &mut Builder, v: f64) -> ValueId {
    arith::const_float(b, v, &Type::F32)
}
fn intc(b: &mut Builder, v: i64, ty: &Type) -> ValueId {
    arith::const_int(b, v, ty)
}
fn op2(b: &mut Builder, name: &str, x: ValueId, y: ValueId) -> ValueId {
    let t = b.ctx.ty(x).clone();
    b.op1(name, &[x, y], t, vec![])
}
fn cmp(b: &mut Builder, name: &str, pred: &str, x: ValueId, y: ValueId) -> ValueId {
    b.op1(
        name,
        &[x, y],
        Type::I1,
        vec![("predicate".into(), Attribute::Str(pred.into()))],
    )
}
fn is_op(ctx: &Context, v: ValueId, name: &str) -> bool {
    ctx.def_op(v).is_some_and(|o| ctx.is(o, name))
}
fn cfloat(ctx: &Context, v: ValueId) -> f64 {
    arith::constant_float(ctx, v).unwrap_or_else(|| panic!("not a float constant"))
}
fn cint(ctx: &Context, v: ValueId) -> i64 {
    arith::constant_int(ctx, v).unwrap_or_else(|| panic!("not an int constant"))
}

// ----- constant folding ------------------------------------------------------

#[test]
fn float_constant_folding_is_ieee() {
    let mut ctx = new_ctx();
    let (blk, _) = block_with_args(&mut ctx, &[]);
    let mut b = Builder::at_end(&mut ctx, blk);
    let (one, three) = (f64c(&mut b, 1.0), f64c(&mut b, 3.0));
    let q = op2(&mut b, "arith.divf", one, three);
    assert_eq!(cfloat(b.ctx, q), 1.0 / 3.0);
    let nan = f64c(&mut b, f64::NAN);
    let s = op2(&mut b, "arith.addf", nan, one);
    assert!(cfloat(b.ctx, s).is_nan());
    let zero = f64c(&mut b, 0.0);
    let z = op2(&mut b, "arith.divf", zero, zero);
    assert!(cfloat(b.ctx, z).is_nan());
    let inf = op2(&mut b, "arith.divf", one, zero);
    assert_eq!(cfloat(b.ctx, inf), f64::INFINITY);
    let nz = f64c(&mut b, -0.0);
    let s = op2(&mut b, "arith.addf", nz, zero);
    assert_eq!(cfloat(b.ctx, s).to_bits(), 0.0f64.to_bits());
    let n = b.op1("arith.negf", &[zero], Type::F64, vec![]);
    assert_eq!(cfloat(b.ctx, n).to_bits(), (-0.0f64).to_bits());
    let m = op2(&mut b, "arith.minf", nz, zero);
    assert_eq!(cfloat(b.ctx, m).to_bits(), (-0.0f64).to_bits());
    let m = op2(&mut b, "arith.maxf", nan, one);
    assert!(cfloat(b.ctx, m).is_nan());
    let two = f64c(&mut b, 2.0);
    let r = b.op1("arith.sqrt", &[two], Type::F64, vec![]);
    assert_eq!(cfloat(b.ctx, r), 2f64.sqrt());
    for (name, f) in [
        ("arith.exp", f64::exp as fn(f64) -> f64),
        ("arith.log", f64::ln),
        ("arith.sin", f64::sin),
        ("arith.cos", f64::cos),
        ("arith.abs", f64::abs),
    ] {
        let r = b.op1(name, &[three], Type::F64, vec![]);
        assert_eq!(cfloat(b.ctx, r), f(3.0), "{name}");
    }
    let p = op2(&mut b, "arith.pow", two, three);
    assert_eq!(cfloat(b.ctx, p), 8.0);
    let d = op2(&mut b, "arith.subf", one, three);
    assert_eq!(cfloat(b.ctx, d), -2.0);
}

#[test]
fn f32_folding_rounds_in_f32() {
    let mut ctx = new_ctx();
    let (blk, _) = block_with_args(&mut ctx, &[]);
    let mut b = Builder::at_end(&mut ctx, blk);
    let (x, y) = (f32c(&mut b, 0.1), f32c(&mut b, 0.2));
    let s = op2(&mut b, "arith.addf", x, y);
    let expect = 0.1f32 + 0.2f32;
    assert_eq!(cfloat(b.ctx, s), expect as f64);
    assert_ne!(cfloat(b.ctx, s), 0.1f32 as f64 + 0.2f32 as f64);
    assert_eq!(*b.ctx.ty(s), Type::F32);
    // 1/3 in f32 is not 1/3 in f64 rounded... it is, but (1/3)*3 differs.
    let (one, three) = (f32c(&mut b, 1.0), f32c(&mut b, 3.0));
    let q = op2(&mut b, "arith.divf", one, three);
    assert_eq!(cfloat(b.ctx, q), (1.0f32 / 3.0f32) as f64);
    let big = f32c(&mut b, 3.0e38);
    let o = op2(&mut b, "arith.mulf", big, three);
    assert_eq!(cfloat(b.ctx, o), f64::INFINITY, "f32 overflow");
    let e = b.op1("arith.exp", &[three], Type::F32, vec![]);
    assert_eq!(cfloat(b.ctx, e), 3.0f32.exp() as f64);
    // truncf rounds, extf is exact
    let d = f64c(&mut b, 0.1);
    let t = b.op1("arith.truncf", &[d], Type::F32, vec![]);
    assert_eq!(cfloat(b.ctx, t), 0.1f32 as f64);
    let w = b.op1("arith.extf", &[t], Type::F64, vec![]);
    assert_eq!(cfloat(b.ctx, w), 0.1f32 as f64);
}

#[test]
fn integer_folding_wraps() {
    let mut ctx = new_ctx();
    let (blk, _) = block_with_args(&mut ctx, &[]);
    let mut b = Builder::at_end(&mut ctx, blk);
    let max = intc(&mut b, i32::MAX as i64, &Type::I32);
    let one = intc(&mut b, 1, &Type::I32);
    let s = op2(&mut b, "arith.addi", max, one);
    assert_eq!(cint(b.ctx, s), i32::MIN as i64);
    let min = intc(&mut b, i32::MIN as i64, &Type::I32);
    let m1 = intc(&mut b, -1, &Type::I32);
    let d = op2(&mut b, "arith.divsi", min, m1);
    assert_eq!(cint(b.ctx, d), i32::MIN as i64, "INT_MIN / -1 wraps");
    let r = op2(&mut b, "arith.remsi", min, m1);
    assert_eq!(cint(b.ctx, r), 0);
    let p = op2(&mut b, "arith.muli", max, max);
    assert_eq!(cint(b.ctx, p), (i32::MAX).wrapping_mul(i32::MAX) as i64);
    let a = b.op1("arith.abs", &[min], Type::I32, vec![]);
    assert_eq!(cint(b.ctx, a), i32::MIN as i64);
    let imax = intc(&mut b, i64::MAX, &Type::I64);
    let i1 = intc(&mut b, 1, &Type::I64);
    let s = op2(&mut b, "arith.addi", imax, i1);
    assert_eq!(cint(b.ctx, s), i64::MIN);
    let (seven, m2) = (intc(&mut b, -7, &Type::I64), intc(&mut b, 2, &Type::I64));
    let q = op2(&mut b, "arith.divsi", seven, m2);
    assert_eq!(cint(b.ctx, q), -3, "rounds toward zero");
    let r = op2(&mut b, "arith.remsi", seven, m2);
    assert_eq!(cint(b.ctx, r), -1);
    let mn = op2(&mut b, "arith.mini", seven, m2);
    assert_eq!(cint(b.ctx, mn), -7);
    let mx = op2(&mut b, "arith.maxi", seven, m2);
    assert_eq!(cint(b.ctx, mx), 2);
    let x = op2(&mut b, "arith.xori", seven, m2);
    assert_eq!(cint(b.ctx, x), -7 ^ 2);
    // i1: true + true = false; and/or
    let t = intc(&mut b, 1, &Type::I1);
    let f = intc(&mut b, 0, &Type::I1);
    let s = op2(&mut b, "arith.addi", t, t);
    assert_eq!(cint(b.ctx, s), 0);
    let o = op2(&mut b, "arith.ori", t, f);
    assert_eq!(cint(b.ctx, o), 1);
    assert_eq!(*b.ctx.ty(o), Type::I1);
}

#[test]
fn division_by_zero_is_never_folded() {
    let mut ctx = new_ctx();
    let (blk, _) = block_with_args(&mut ctx, &[]);
    let mut b = Builder::at_end(&mut ctx, blk);
    let (x, z) = (intc(&mut b, 7, &Type::I64), intc(&mut b, 0, &Type::I64));
    let d = op2(&mut b, "arith.divsi", x, z);
    assert!(is_op(b.ctx, d, "arith.divsi"));
    let r = op2(&mut b, "arith.remsi", x, z);
    assert!(is_op(b.ctx, r, "arith.remsi"));
}

#[test]
fn comparisons_and_select_of_constants() {
    let mut ctx = new_ctx();
    let (blk, args) = block_with_args(&mut ctx, &[Type::F64, Type::F64]);
    let mut b = Builder::at_end(&mut ctx, blk);
    let (one, two, nan) = (f64c(&mut b, 1.0), f64c(&mut b, 2.0), f64c(&mut b, f64::NAN));
    for (pred, expect) in [
        ("olt", 1),
        ("ole", 1),
        ("ogt", 0),
        ("oge", 0),
        ("oeq", 0),
        ("one", 1),
    ] {
        let c = cmp(&mut b, "arith.cmpf", pred, one, two);
        assert_eq!(cint(b.ctx, c), expect, "{pred}");
    }
    for pred in ["olt", "ole", "ogt", "oge", "oeq", "one"] {
        let c = cmp(&mut b, "arith.cmpf", pred, nan, one);
        assert_eq!(cint(b.ctx, c), 0, "{pred} with NaN");
    }
    let c = cmp(&mut b, "arith.cmpf", "une", nan, nan);
    assert_eq!(cint(b.ctx, c), 1);
    let (m1, three) = (intc(&mut b, -1, &Type::I32), intc(&mut b, 3, &Type::I32));
    for (pred, expect) in [
        ("slt", 1),
        ("sle", 1),
        ("sgt", 0),
        ("sge", 0),
        ("eq", 0),
        ("ne", 1),
        ("ult", 0),
        ("ugt", 1),
    ] {
        let c = cmp(&mut b, "arith.cmpi", pred, m1, three);
        assert_eq!(cint(b.ctx, c), expect, "{pred}");
    }
    let t = intc(&mut b, 1, &Type::I1);
    let f = intc(&mut b, 0, &Type::I1);
    let s = b.op1("arith.select", &[t, args[0], args[1]], Type::F64, vec![]);
    assert_eq!(s, args[0]);
    let s = b.op1("arith.select", &[f, args[0], args[1]], Type::F64, vec![]);
    assert_eq!(s, args[1]);
    // casts of constants
    let c = b.op1("arith.sitofp", &[m1], Type::F64, vec![]);
    assert_eq!(cfloat(b.ctx, c), -1.0);
    let big = f64c(&mut b, 1e300);
    let c = b.op1("arith.fptosi", &[big], Type::I32, vec![]);
    assert_eq!(cint(b.ctx, c), i32::MAX as i64, "saturates");
    let c = b.op1("arith.fptosi", &[nan], Type::I64, vec![]);
    assert_eq!(cint(b.ctx, c), 0, "NaN -> 0");
    let c = b.op1("arith.index_cast", &[m1], Type::Index, vec![]);
    assert_eq!(cint(b.ctx, c), -1);
    let big = intc(&mut b, 1 << 40, &Type::Index);
    let c = b.op1("arith.index_cast", &[big], Type::I32, vec![]);
    assert_eq!(cint(b.ctx, c), 0, "truncates");
}

#[test]
fn sitofp_to_f32_rounds_once() {
    // 2^60 + 2^36 + 1: directly to f32 rounds up; via f64 it would tie to even.
    let v: i64 = (1 << 60) + (1 << 36) + 1;
    assert_ne!(v as f32, v as f64 as f32);
    let mut ctx = new_ctx();
    let (blk, _) = block_with_args(&mut ctx, &[]);
    let mut b = Builder::at_end(&mut ctx, blk);
    let c = intc(&mut b, v, &Type::I64);
    let r = b.op1("arith.sitofp", &[c], Type::F32, vec![]);
    assert_eq!(cfloat(b.ctx, r), v as f32 as f64);
    let out = run(&[Type::I64], Type::F32, &[RtValue::Int(v)], |b, a| {
        b.op1("arith.sitofp", &[a[0]], Type::F32, vec![])
    });
    assert_eq!(out, Ok(RtValue::F32(v as f32)));
}

// ----- identities ------------------------------------------------------------

#[test]
fn exact_identities_fold() {
    let mut ctx = new_ctx();
    let (blk, a) = block_with_args(
        &mut ctx,
        &[Type::I64, Type::F64, Type::I1, Type::I32, Type::F32],
    );
    let (i, f, c, j, g) = (a[0], a[1], a[2], a[3], a[4]);
    let mut b = Builder::at_end(&mut ctx, blk);
    let (i0, i1) = (intc(&mut b, 0, &Type::I64), intc(&mut b, 1, &Type::I64));
    assert_eq!(op2(&mut b, "arith.addi", i, i0), i);
    assert_eq!(op2(&mut b, "arith.addi", i0, i), i);
    assert_eq!(op2(&mut b, "arith.subi", i, i0), i);
    assert_eq!(op2(&mut b, "arith.muli", i, i1), i);
    assert_eq!(op2(&mut b, "arith.muli", i1, i), i);
    assert_eq!(op2(&mut b, "arith.divsi", i, i1), i);
    let z = op2(&mut b, "arith.muli", i, i0);
    assert_eq!(cint(b.ctx, z), 0);
    let z = op2(&mut b, "arith.subi", i, i);
    assert_eq!(cint(b.ctx, z), 0);
    let z = op2(&mut b, "arith.xori", i, i);
    assert_eq!(cint(b.ctx, z), 0);
    assert_eq!(op2(&mut b, "arith.andi", i, i), i);
    assert_eq!(op2(&mut b, "arith.ori", i, i), i);
    assert_eq!(op2(&mut b, "arith.andi", c, c), c);
    let j0 = intc(&mut b, 0, &Type::I32);
    assert_eq!(op2(&mut b, "arith.addi", j, j0), j);
    // floats
    let (nz, pz, f1) = (f64c(&mut b, -0.0), f64c(&mut b, 0.0), f64c(&mut b, 1.0));
    assert_eq!(op2(&mut b, "arith.addf", f, nz), f);
    assert_eq!(op2(&mut b, "arith.addf", nz, f), f);
    assert_eq!(op2(&mut b, "arith.subf", f, pz), f);
    assert_eq!(op2(&mut b, "arith.mulf", f, f1), f);
    assert_eq!(op2(&mut b, "arith.mulf", f1, f), f);
    assert_eq!(op2(&mut b, "arith.divf", f, f1), f);
    let g1 = f32c(&mut b, 1.0);
    assert_eq!(op2(&mut b, "arith.mulf", g, g1), g);
    let n = b.op1("arith.negf", &[f], Type::F64, vec![]);
    assert!(is_op(b.ctx, n, "arith.negf"));
    assert_eq!(b.op1("arith.negf", &[n], Type::F64, vec![]), f);
    // select
    assert_eq!(b.op1("arith.select", &[c, f, f], Type::F64, vec![]), f);
    // index_cast round trip through a wider type
    let w = b.op1("arith.index_cast", &[j], Type::Index, vec![]);
    assert!(is_op(b.ctx, w, "arith.index_cast"));
    assert_eq!(b.op1("arith.index_cast", &[w], Type::I32, vec![]), j);
    // cmpi x, x
    for (pred, expect) in [
        ("eq", 1),
        ("sle", 1),
        ("sge", 1),
        ("ne", 0),
        ("slt", 0),
        ("sgt", 0),
    ] {
        let r = cmp(&mut b, "arith.cmpi", pred, i, i);
        assert_eq!(cint(b.ctx, r), expect, "{pred}");
    }
}

#[test]
fn inexact_identities_do_not_fold() {
    let mut ctx = new_ctx();
    let (blk, a) = block_with_args(&mut ctx, &[Type::F64, Type::Index]);
    let (f, ix) = (a[0], a[1]);
    let mut b = Builder::at_end(&mut ctx, blk);
    let (pz, nz) = (f64c(&mut b, 0.0), f64c(&mut b, -0.0));
    // x * 0.0 is not 0 (NaN, inf, -x)
    let r = op2(&mut b, "arith.mulf", f, pz);
    assert!(is_op(b.ctx, r, "arith.mulf"));
    // x + 0.0 is not x (-0.0 + 0.0 = +0.0)
    let r = op2(&mut b, "arith.addf", f, pz);
    assert!(is_op(b.ctx, r, "arith.addf"));
    // x - (-0.0) is not x
    let r = op2(&mut b, "arith.subf", f, nz);
    assert!(is_op(b.ctx, r, "arith.subf"));
    // x - x is not 0 for floats (NaN, inf)
    let r = op2(&mut b, "arith.subf", f, f);
    assert!(is_op(b.ctx, r, "arith.subf"));
    // x / x is not 1
    let r = op2(&mut b, "arith.divf", f, f);
    assert!(is_op(b.ctx, r, "arith.divf"));
    // cmpf x, x is not foldable (NaN)
    let r = cmp(&mut b, "arith.cmpf", "oeq", f, f);
    assert!(is_op(b.ctx, r, "arith.cmpf"));
    // index -> i32 -> index truncates: not the identity
    let n = b.op1("arith.index_cast", &[ix], Type::I32, vec![]);
    let back = b.op1("arith.index_cast", &[n], Type::Index, vec![]);
    assert!(is_op(b.ctx, back, "arith.index_cast"));
    assert_ne!(back, ix);
    // x / x for integers is not 1 (x = 0)
    let r = op2(&mut b, "arith.divsi", ix, ix);
    assert!(is_op(b.ctx, r, "arith.divsi"));
}

#[test]
fn constants_are_hash_consed_and_moved_right() {
    let mut ctx = new_ctx();
    let (blk, a) = block_with_args(&mut ctx, &[Type::I64]);
    let mut b = Builder::at_end(&mut ctx, blk);
    let c1 = intc(&mut b, 5, &Type::I64);
    let c2 = intc(&mut b, 5, &Type::I64);
    assert_eq!(c1, c2);
    let n1 = f64c(&mut b, f64::NAN);
    let n2 = f64c(&mut b, f64::NAN);
    assert_eq!(n1, n2);
    let z1 = f64c(&mut b, 0.0);
    let z2 = f64c(&mut b, -0.0);
    assert_ne!(z1, z2);
    let t = b.constant(Attribute::Bool(true), &Type::I1);
    let t2 = intc(&mut b, 1, &Type::I1);
    assert_eq!(t, t2);
    let s = op2(&mut b, "arith.addi", c1, a[0]);
    let op = b.ctx.def_op(s).unwrap();
    assert_eq!(
        b.ctx.operands(op),
        &[a[0], c1],
        "constant moved to the right"
    );
    let s2 = op2(&mut b, "arith.addi", a[0], c1);
    assert_eq!(s, s2, "both shapes hash-cons to one op");
}

#[test]
fn canonicalize_moves_constants_right_in_existing_ir() {
    let text = "func.func @f(%x: i64) -> i64 {\n  %c = arith.constant 5 : i64\n  %r = arith.muli %c, %x : i64\n  func.return %r : i64\n}\n";
    let mut ctx = ir::build::parse_source("t.ir", text, dialects::registry()).unwrap();
    ir::rewrite::apply_greedily(
        &mut ctx,
        ir::rewrite::Patterns::Canonical,
        Default::default(),
    );
    ir::verifier::verify(&ctx).unwrap();
    let out = print_module(&ctx, PrintOptions::default());
    assert!(out.contains("arith.muli %x, %c : i64"), "{out}");
    let r = ir::Interp::new(&ctx)
        .call("f", &[RtValue::Int(3)], Loc::UNKNOWN)
        .unwrap();
    assert_eq!(r, vec![RtValue::Int(15)]);
}

#[test]
fn canonicalize_folds_existing_ir() {
    let text = "func.func @f(%x: f64) -> f64 {\n  %a = arith.constant 2.0 : f64\n  %b = arith.constant 3.0 : f64\n  %m = arith.mulf %a, %b : f64\n  %z = arith.constant 0.0 : f64\n  %r = arith.mulf %x, %z : f64\n  %s = arith.addf %r, %m : f64\n  func.return %s : f64\n}\n";
    let mut ctx = ir::build::parse_source("t.ir", text, dialects::registry()).unwrap();
    ir::rewrite::apply_greedily(
        &mut ctx,
        ir::rewrite::Patterns::Canonical,
        Default::default(),
    );
    ir::verifier::verify(&ctx).unwrap();
    let out = print_module(&ctx, PrintOptions::default());
    assert!(out.contains("arith.constant 6.0 : f64"), "{out}");
    assert!(out.contains("arith.mulf %x, %z"), "x*0.0 must stay: {out}");
    let r = ir::Interp::new(&ctx)
        .call("f", &[RtValue::F64(f64::INFINITY)], Loc::UNKNOWN)
        .unwrap();
    assert!(r[0].as_f64().unwrap().is_nan());
}

// ----- interpreter -------------------------------------------------------------

/// Builds `func.func @f(args) -> ret { %r = body(args); return %r }` without
/// smart construction and runs it on `vals`.
fn run(
    args: &[Type],
    ret: Type,
    vals: &[RtValue],
    body: impl FnOnce(&mut Builder, &[ValueId]) -> ValueId,
) -> Result<RtValue, String> {
    let mut ctx = new_ctx();
    let top = ctx.top;
    let mut b = Builder::at_end(&mut ctx, top);
    b.smart = false;
    let region = b.build_region(args, |b, a| {
        let r = body(b, a);
        b.op("func.return", &[r], &[], vec![]);
    });
    b.op_with_regions(
        "func.func",
        &[],
        &[],
        vec![
            ("sym_name".into(), Attribute::Str("f".into())),
            (
                "function_type".into(),
                Attribute::Type(Type::function(args.to_vec(), vec![ret])),
            ),
        ],
        &[region],
    );
    if let Err(d) = ir::verifier::verify(&ctx) {
        return Err(format!("verify: {}", d[0].message));
    }
    ir::Interp::new(&ctx)
        .call("f", vals, Loc::UNKNOWN)
        .map(|mut r| r.remove(0))
        .map_err(|e| e.message)
}

fn run2(name: &str, ty: Type, x: RtValue, y: RtValue) -> Result<RtValue, String> {
    run(&[ty.clone(), ty.clone()], ty.clone(), &[x, y], |b, a| {
        b.op1(name, &[a[0], a[1]], ty, vec![])
    })
}

fn run1(name: &str, ty: Type, to: Type, x: RtValue) -> Result<RtValue, String> {
    run(&[ty], to.clone(), &[x], |b, a| {
        b.op1(name, &[a[0]], to, vec![])
    })
}

fn runcmp(name: &str, pred: &str, ty: Type, x: RtValue, y: RtValue) -> Result<RtValue, String> {
    run(&[ty.clone(), ty], Type::I1, &[x, y], |b, a| {
        b.op1(
            name,
            &[a[0], a[1]],
            Type::I1,
            vec![("predicate".into(), Attribute::Str(pred.into()))],
        )
    })
}

#[test]
fn interp_integer_ops() {
    use RtValue::Int;
    let i32m = i32::MIN as i64;
    let cases: &[(&str, Type, i64, i64, i64)] = &[
        ("arith.addi", Type::I32, i32::MAX as i64, 1, i32m),
        ("arith.subi", Type::I32, i32m, 1, i32::MAX as i64),
        ("arith.muli", Type::I32, 1 << 20, 1 << 12, 0),
        ("arith.muli", Type::I64, -3, 4, -12),
        ("arith.divsi", Type::I32, i32m, -1, i32m),
        ("arith.divsi", Type::I64, i64::MIN, -1, i64::MIN),
        ("arith.divsi", Type::Index, -7, 2, -3),
        ("arith.remsi", Type::I64, -7, 2, -1),
        ("arith.remsi", Type::I32, i32m, -1, 0),
        ("arith.andi", Type::I64, 12, 10, 8),
        ("arith.ori", Type::I64, 12, 10, 14),
        ("arith.xori", Type::I64, 12, 10, 6),
        ("arith.mini", Type::I64, -5, 3, -5),
        ("arith.maxi", Type::I64, -5, 3, 3),
        ("arith.addi", Type::Index, i64::MAX, 1, i64::MIN),
    ];
    for (name, ty, x, y, expect) in cases {
        assert_eq!(
            run2(name, ty.clone(), Int(*x), Int(*y)),
            Ok(Int(*expect)),
            "{name} {ty} {x} {y}"
        );
    }
    assert_eq!(run1("arith.abs", Type::I64, Type::I64, Int(-4)), Ok(Int(4)));
    assert_eq!(
        run1("arith.abs", Type::I32, Type::I32, Int(i32m)),
        Ok(Int(i32m))
    );
    // i1
    use RtValue::Bool;
    assert_eq!(
        run2("arith.andi", Type::I1, Bool(true), Bool(false)),
        Ok(Bool(false))
    );
    assert_eq!(
        run2("arith.ori", Type::I1, Bool(true), Bool(false)),
        Ok(Bool(true))
    );
    assert_eq!(
        run2("arith.xori", Type::I1, Bool(true), Bool(true)),
        Ok(Bool(false))
    );
    assert_eq!(
        run2("arith.addi", Type::I1, Bool(true), Bool(true)),
        Ok(Bool(false))
    );
}

#[test]
fn interp_division_by_zero_faults() {
    for name in ["arith.divsi", "arith.remsi"] {
        let e = run2(name, Type::I64, RtValue::Int(1), RtValue::Int(0)).unwrap_err();
        assert!(e.contains("integer division by zero"), "{e}");
    }
}

#[test]
fn interp_float_ops() {
    use RtValue::{F32, F64};
    let cases: &[(&str, f64, f64, f64)] = &[
        ("arith.addf", 0.1, 0.2, 0.1 + 0.2),
        ("arith.subf", 1.0, 0.25, 0.75),
        ("arith.mulf", 1.5, 4.0, 6.0),
        ("arith.divf", 1.0, 3.0, 1.0 / 3.0),
        ("arith.minf", -1.0, 2.0, -1.0),
        ("arith.maxf", -1.0, 2.0, 2.0),
        ("arith.pow", 2.0, 10.0, 1024.0),
    ];
    for (name, x, y, expect) in cases {
        assert_eq!(
            run2(name, Type::F64, F64(*x), F64(*y)),
            Ok(F64(*expect)),
            "{name}"
        );
        let e32 = match *name {
            "arith.addf" => *x as f32 + *y as f32,
            "arith.divf" => *x as f32 / *y as f32,
            _ => *expect as f32,
        };
        assert_eq!(
            run2(name, Type::F32, F32(*x as f32), F32(*y as f32)),
            Ok(F32(e32)),
            "{name} f32"
        );
    }
    let r = run2("arith.minf", Type::F64, F64(f64::NAN), F64(1.0)).unwrap();
    assert!(r.as_f64().unwrap().is_nan());
    let r = run2("arith.maxf", Type::F64, F64(1.0), F64(f64::NAN)).unwrap();
    assert!(r.as_f64().unwrap().is_nan());
    assert_eq!(
        run2("arith.maxf", Type::F64, F64(-0.0), F64(0.0)),
        Ok(F64(0.0))
    );
    assert_eq!(
        run2("arith.minf", Type::F64, F64(0.0), F64(-0.0)),
        Ok(F64(-0.0))
    );
    type Unary = (&'static str, fn(f64) -> f64);
    let unary: &[Unary] = &[
        ("arith.negf", |x| -x),
        ("arith.sqrt", f64::sqrt),
        ("arith.exp", f64::exp),
        ("arith.log", f64::ln),
        ("arith.sin", f64::sin),
        ("arith.cos", f64::cos),
        ("arith.abs", f64::abs),
    ];
    for (name, f) in unary {
        assert_eq!(
            run1(name, Type::F64, Type::F64, F64(0.7)),
            Ok(F64(f(0.7))),
            "{name}"
        );
        assert_eq!(
            run1(name, Type::F64, Type::F64, F64(-2.5)).map(|v| v.to_string()),
            Ok(F64(f(-2.5)).to_string()),
            "{name}"
        );
    }
    assert_eq!(
        run1("arith.exp", Type::F32, Type::F32, F32(0.7)),
        Ok(F32(0.7f32.exp()))
    );
    assert_eq!(
        run1("arith.negf", Type::F64, Type::F64, F64(0.0)),
        Ok(F64(-0.0))
    );
}

#[test]
fn interp_comparisons_and_select() {
    use RtValue::{Bool, Int, F64};
    for (pred, expect) in [
        ("olt", true),
        ("ole", true),
        ("ogt", false),
        ("oge", false),
        ("oeq", false),
        ("one", true),
    ] {
        assert_eq!(
            runcmp("arith.cmpf", pred, Type::F64, F64(1.0), F64(2.0)),
            Ok(Bool(expect)),
            "{pred}"
        );
        assert_eq!(
            runcmp("arith.cmpf", pred, Type::F64, F64(f64::NAN), F64(2.0)),
            Ok(Bool(false)),
            "{pred} NaN"
        );
    }
    assert_eq!(
        runcmp("arith.cmpf", "ult", Type::F64, F64(f64::NAN), F64(2.0)),
        Ok(Bool(true))
    );
    for (pred, expect) in [
        ("slt", true),
        ("sle", true),
        ("sgt", false),
        ("sge", false),
        ("eq", false),
        ("ne", true),
        ("ult", false),
        ("uge", true),
    ] {
        assert_eq!(
            runcmp("arith.cmpi", pred, Type::I32, Int(-1), Int(5)),
            Ok(Bool(expect)),
            "{pred}"
        );
    }
    // i1 is signed: true (-1) < false (0)
    assert_eq!(
        runcmp("arith.cmpi", "slt", Type::I1, Bool(true), Bool(false)),
        Ok(Bool(true))
    );
    assert_eq!(
        runcmp("arith.cmpi", "ult", Type::I1, Bool(true), Bool(false)),
        Ok(Bool(false))
    );
    let sel = |c: bool| {
        run(
            &[Type::I1, Type::F64, Type::F64],
            Type::F64,
            &[Bool(c), F64(1.0), F64(2.0)],
            |b, a| b.op1("arith.select", &[a[0], a[1], a[2]], Type::F64, vec![]),
        )
    };
    assert_eq!(sel(true), Ok(F64(1.0)));
    assert_eq!(sel(false), Ok(F64(2.0)));
}

#[test]
fn interp_casts() {
    use RtValue::{Int, F32, F64};
    assert_eq!(
        run1("arith.sitofp", Type::I64, Type::F64, Int(-3)),
        Ok(F64(-3.0))
    );
    assert_eq!(
        run1("arith.sitofp", Type::Index, Type::F32, Int(7)),
        Ok(F32(7.0))
    );
    assert_eq!(
        run1("arith.fptosi", Type::F64, Type::I64, F64(-3.9)),
        Ok(Int(-3))
    );
    assert_eq!(
        run1("arith.fptosi", Type::F64, Type::I32, F64(1e10)),
        Ok(Int(i32::MAX as i64))
    );
    assert_eq!(
        run1("arith.fptosi", Type::F64, Type::I32, F64(-1e10)),
        Ok(Int(i32::MIN as i64))
    );
    assert_eq!(
        run1("arith.fptosi", Type::F64, Type::I64, F64(f64::NAN)),
        Ok(Int(0))
    );
    assert_eq!(
        run1("arith.fptosi", Type::F32, Type::Index, F32(2.5)),
        Ok(Int(2))
    );
    assert_eq!(
        run1("arith.index_cast", Type::I32, Type::Index, Int(-5)),
        Ok(Int(-5))
    );
    assert_eq!(
        run1(
            "arith.index_cast",
            Type::Index,
            Type::I32,
            Int((1 << 32) + 7)
        ),
        Ok(Int(7))
    );
    assert_eq!(
        run1("arith.index_cast", Type::Index, Type::I32, Int(0xFFFF_FFFF)),
        Ok(Int(-1))
    );
    assert_eq!(
        run1("arith.extf", Type::F32, Type::F64, F32(0.1)),
        Ok(F64(0.1f32 as f64))
    );
    assert_eq!(
        run1("arith.truncf", Type::F64, Type::F32, F64(0.1)),
        Ok(F32(0.1))
    );
    assert_eq!(
        run1("arith.truncf", Type::F64, Type::F32, F64(1e300)),
        Ok(F32(f32::INFINITY))
    );
}

#[test]
fn interp_constants() {
    let r = run(&[], Type::F32, &[], |b, _| {
        arith::const_float(b, 0.1, &Type::F32)
    });
    assert_eq!(r, Ok(RtValue::F32(0.1)));
    let r = run(&[], Type::I1, &[], |b, _| {
        b.constant(Attribute::Bool(true), &Type::I1)
    });
    assert_eq!(r, Ok(RtValue::Bool(true)));
    let r = run(&[], Type::I32, &[], |b, _| {
        arith::const_int(b, 0xFFFF_FFFF, &Type::I32)
    });
    assert_eq!(r, Ok(RtValue::Int(-1)));
}

// ----- verifier ----------------------------------------------------------------

fn verify_error(
    args: &[Type],
    ret: Type,
    body: impl FnOnce(&mut Builder, &[ValueId]) -> ValueId,
) -> String {
    match run(args, ret, &[], body) {
        Err(e) if e.starts_with("verify: ") => e,
        other => panic!("expected a verifier error, got {other:?}"),
    }
}

#[test]
fn verifier_rejects_bad_types() {
    let e = verify_error(&[Type::F64, Type::F64], Type::F64, |b, a| {
        b.op1("arith.addi", &[a[0], a[1]], Type::F64, vec![])
    });
    assert!(e.contains("integer"), "{e}");
    let e = verify_error(&[Type::I64, Type::I64], Type::I64, |b, a| {
        b.op1("arith.mulf", &[a[0], a[1]], Type::I64, vec![])
    });
    assert!(e.contains("float"), "{e}");
    let e = verify_error(&[Type::I64, Type::I32], Type::I64, |b, a| {
        b.op1("arith.addi", &[a[0], a[1]], Type::I64, vec![])
    });
    assert!(e.contains("same type"), "{e}");
    let e = verify_error(&[Type::I64], Type::I64, |b, a| {
        b.op1("arith.sqrt", &[a[0]], Type::I64, vec![])
    });
    assert!(e.contains("float"), "{e}");
    let e = verify_error(&[Type::vec(Type::F64)], Type::vec(Type::F64), |b, a| {
        b.op1("arith.abs", &[a[0]], Type::vec(Type::F64), vec![])
    });
    assert!(e.contains("integer"), "{e}");
    let e = verify_error(&[Type::F64, Type::F64], Type::I1, |b, a| {
        b.op1(
            "arith.cmpf",
            &[a[0], a[1]],
            Type::I1,
            vec![("predicate".into(), Attribute::Str("slt".into()))],
        )
    });
    assert!(e.contains("predicate"), "{e}");
    let e = verify_error(&[Type::I64, Type::I64], Type::I1, |b, a| {
        b.op1(
            "arith.cmpi",
            &[a[0], a[1]],
            Type::I1,
            vec![("predicate".into(), Attribute::Str("olt".into()))],
        )
    });
    assert!(e.contains("predicate"), "{e}");
    let e = verify_error(&[Type::I64, Type::I64], Type::I1, |b, a| {
        b.op1("arith.cmpi", &[a[0], a[1]], Type::I1, vec![])
    });
    assert!(e.contains("predicate"), "{e}");
    let e = verify_error(&[Type::F64, Type::F64], Type::I1, |b, a| {
        b.op1(
            "arith.cmpi",
            &[a[0], a[1]],
            Type::I1,
            vec![("predicate".into(), Attribute::Str("eq".into()))],
        )
    });
    assert!(e.contains("integer"), "{e}");
    let e = verify_error(&[Type::I64, Type::I64], Type::I64, |b, a| {
        b.op1(
            "arith.cmpi",
            &[a[0], a[1]],
            Type::I64,
            vec![("predicate".into(), Attribute::Str("eq".into()))],
        )
    });
    assert!(e.contains("i1"), "{e}");
    let e = verify_error(&[Type::I64, Type::F64, Type::F64], Type::F64, |b, a| {
        b.op1("arith.select", &[a[0], a[1], a[2]], Type::F64, vec![])
    });
    assert!(e.contains("condition"), "{e}");
    let e = verify_error(&[Type::I1, Type::F64, Type::F32], Type::F64, |b, a| {
        b.op1("arith.select", &[a[0], a[1], a[2]], Type::F64, vec![])
    });
    assert!(e.contains("same type"), "{e}");
    for (name, from, to) in [
        ("arith.sitofp", Type::F64, Type::F64),
        ("arith.sitofp", Type::I1, Type::F64),
        ("arith.fptosi", Type::I64, Type::I64),
        ("arith.index_cast", Type::I64, Type::I32),
        ("arith.index_cast", Type::F64, Type::Index),
        ("arith.extf", Type::F64, Type::F32),
        ("arith.truncf", Type::F32, Type::F64),
    ] {
        let e = verify_error(std::slice::from_ref(&from), to.clone(), |b, a| {
            b.op1(name, &[a[0]], to.clone(), vec![])
        });
        assert!(e.contains("cannot cast"), "{name}: {e}");
    }
    let e = verify_error(&[], Type::F64, |b, _| {
        b.op1(
            "arith.constant",
            &[],
            Type::F64,
            vec![("value".into(), Attribute::Int(1, Type::I64))],
        )
    });
    assert!(e.contains("does not match"), "{e}");
    let e = verify_error(&[], Type::I32, |b, _| {
        b.op1(
            "arith.constant",
            &[],
            Type::I32,
            vec![("value".into(), Attribute::Int(1, Type::I64))],
        )
    });
    assert!(e.contains("does not match"), "{e}");
    let e = verify_error(&[], Type::I32, |b, _| {
        b.op1("arith.constant", &[], Type::I32, vec![])
    });
    assert!(e.contains("value"), "{e}");
}

#[test]
fn ill_typed_ops_are_not_folded_at_construction() {
    // addi of f64 constants must not fold (the verifier has to see it).
    let mut ctx = new_ctx();
    let (blk, _) = block_with_args(&mut ctx, &[]);
    let mut b = Builder::at_end(&mut ctx, blk);
    let (x, y) = (f64c(&mut b, 1.0), f64c(&mut b, 2.0));
    let r = op2(&mut b, "arith.addi", x, y);
    assert!(is_op(b.ctx, r, "arith.addi"));
    let c = intc(&mut b, 1, &Type::I1);
    let r = b.op1("arith.sitofp", &[c], Type::F64, vec![]);
    assert!(is_op(b.ctx, r, "arith.sitofp"));
}

// ----- text round trips ------------------------------------------------------------

fn roundtrip(text: &str) -> String {
    let ctx = ir::build::parse_source("t.ir", text, dialects::registry())
        .unwrap_or_else(|d| panic!("{d:?}"));
    if let Err(d) = ir::verifier::verify(&ctx) {
        panic!("{d:?}");
    }
    print_module(&ctx, PrintOptions::default())
}

#[test]
fn custom_forms_round_trip() {
    let text = "module {
  func.func @f(%a: f64, %b: f64, %i: i64, %j: i64, %c: i1, %g: f32) -> f64 {
    %k0 = arith.constant 1.5 : f64
    %k1 = arith.constant true
    %k2 = arith.constant false
    %k3 = arith.constant 3 : i64
    %k4 = arith.constant -7 : i32
    %k5 = arith.constant 0x7FF8000000000000 : f64
    %k6 = arith.constant -0.0 : f64
    %k7 = arith.constant 0x7FF0000000000000 : f64
    %k8 = arith.constant 0xFFF0000000000000 : f64
    %k9 = arith.constant 0x7FF8000000000001 : f64
    %k10 = arith.constant 0.1 : f32
    %k11 = arith.constant 0x7FC00001 : f32
    %k12 = arith.constant 1.0e-300 : f64
    %k13 = arith.constant 42 : index
    %r0 = arith.addf %a, %b : f64
    %r1 = arith.subf %a, %b : f64
    %r2 = arith.mulf %a, %b : f64
    %r3 = arith.divf %a, %b : f64
    %r4 = arith.negf %a : f64
    %r5 = arith.addi %i, %j : i64
    %r6 = arith.subi %i, %j : i64
    %r7 = arith.muli %i, %j : i64
    %r8 = arith.divsi %i, %j : i64
    %r9 = arith.remsi %i, %j : i64
    %r10 = arith.cmpf olt, %a, %b : f64
    %r11 = arith.cmpi sle, %i, %j : i64
    %r12 = arith.select %c, %a, %b : f64
    %r13 = arith.andi %c, %r10 : i1
    %r14 = arith.ori %i, %j : i64
    %r15 = arith.xori %i, %j : i64
    %r16 = arith.minf %a, %b : f64
    %r17 = arith.maxf %a, %b : f64
    %r18 = arith.minsi %i, %j : i64
    %r19 = arith.maxsi %i, %j : i64
    %r20 = arith.sitofp %i : i64 to f64
    %r21 = arith.fptosi %a : f64 to i64
    %r22 = arith.index_cast %i : i64 to index
    %r23 = arith.extf %g : f32 to f64
    %r24 = arith.truncf %a : f64 to f32
    %r25 = math.sqrt %a : f64
    %r26 = math.exp %a : f64
    %r27 = math.log %a : f64
    %r28 = math.absi %i : i64
    %r29 = math.powf %a, %b : f64
    %r30 = math.sin %a : f64
    %r31 = math.cos %a : f64
    %r32 = math.absf %a : f64
    %r33 = arith.cmpf one, %a, %b : f64
    %r34 = arith.cmpi ult, %i, %j : i64
    func.return %r0 : f64
  }
}
";
    let out = roundtrip(text);
    assert_eq!(out, text);
    // and the printed text round-trips again
    assert_eq!(roundtrip(&out), text);
}

#[test]
fn constant_values_are_exact_after_parsing() {
    let text = "func.func @f() -> f64 {
  %n = arith.constant 0x7FF8000000000001 : f64
  %z = arith.constant -0.0 : f64
  %d = arith.constant 2 : f64
  %h = arith.constant 0x4000000000000000 : f64
  %s = arith.constant 0x7FC00001 : f32
  func.return %n : f64
}
";
    let ctx = ir::build::parse_source("t.ir", text, dialects::registry()).unwrap();
    let vals: Vec<Attribute> = ctx
        .walk_all()
        .into_iter()
        .filter(|&o| ctx.is(o, "arith.constant"))
        .map(|o| ctx.attr(o, "value").unwrap().clone())
        .collect();
    assert_eq!(vals[0].as_float().unwrap().to_bits(), 0x7FF8000000000001);
    assert_eq!(vals[1].as_float().unwrap().to_bits(), (-0.0f64).to_bits());
    assert_eq!(
        vals[2].as_float(),
        Some(2.0),
        "decimal integer with a float type is the value"
    );
    assert_eq!(
        vals[3].as_float(),
        Some(2.0),
        "hex integer with a float type is the bit pattern"
    );
    assert_eq!((vals[4].as_float().unwrap() as f32).to_bits(), 0x7FC00001);
}

#[test]
fn generic_forms_parse_and_print_custom() {
    let text = "func.func @f(%a: f64, %b: f64) -> i1 {
  %k = \"arith.constant\"() {value = 1.0 : f64} : () -> f64
  %t = \"arith.constant\"() {value = true} : () -> i1
  %s = \"arith.addf\"(%a, %k) : (f64, f64) -> f64
  %c = \"arith.cmpf\"(%s, %b) {predicate = \"olt\"} : (f64, f64) -> i1
  %d = \"arith.andi\"(%c, %t) : (i1, i1) -> i1
  \"func.return\"(%d) : (i1) -> ()
}
";
    let out = roundtrip(text);
    assert!(out.contains("%k = arith.constant 1.0 : f64"), "{out}");
    assert!(out.contains("%t = arith.constant true"), "{out}");
    assert!(out.contains("%s = arith.addf %a, %k : f64"), "{out}");
    assert!(out.contains("%c = arith.cmpf olt, %s, %b : f64"), "{out}");
    let ctx = ir::build::parse_source("t.ir", text, dialects::registry()).unwrap();
    let generic = print_module(
        &ctx,
        PrintOptions {
            generic: true,
            ..Default::default()
        },
    );
    assert!(
        // MLIR's generic form: the predicate as its enum integer (olt is 4).
        generic.contains("\"arith.cmpf\"(%s, %b) {predicate = 4 : i64} : (f64, f64) -> i1"),
        "{generic}"
    );
    assert_eq!(roundtrip(&generic), out);
    let r = ir::Interp::new(&ctx)
        .call("f", &[RtValue::F64(1.0), RtValue::F64(3.0)], Loc::UNKNOWN)
        .unwrap();
    assert_eq!(r, vec![RtValue::Bool(true)]);
}

#[test]
fn custom_form_errors() {
    for bad in [
        "func.func @f() -> i32 {\n  %k = arith.constant 1.5 : i32\n  func.return %k : i32\n}\n",
        "func.func @f() -> i32 {\n  %k = arith.constant 5000000000 : i32\n  func.return %k : i32\n}\n",
        "func.func @f(%a: f64) -> f64 {\n  %r = arith.sitofp %a : f64\n  func.return %r : f64\n}\n",
        "func.func @f(%a: f64) -> f64 {\n  %r = arith.select %a, %a : f64\n  func.return %r : f64\n}\n",
    ] {
        assert!(ir::build::parse_source("t.ir", bad, dialects::registry()).is_err(), "{bad}");
    }
    // parses, but the verifier rejects the predicate
    let text = "func.func @f(%a: f64) -> i1 {\n  %r = arith.cmpf slt, %a, %a : f64\n  func.return %r : i1\n}\n";
    let ctx = ir::build::parse_source("t.ir", text, dialects::registry()).unwrap();
    assert!(ir::verifier::verify(&ctx).is_err());
}
