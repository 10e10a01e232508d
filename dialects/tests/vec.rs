//! Tests of the `vec` and `mat` dialects: construction-time rewrites,
//! interpreter semantics, run-time faults, verifier errors and the lowering
//! to `gen`.

use std::collections::HashMap;
use std::rc::Rc;

use ir::attributes::Attribute;
use ir::interp::{Interp, MatValue, RtValue};
use ir::rewrite::{apply_greedily, Patterns};
use ir::spec::{Arity, OpSpec, Registry, Traits};
use ir::{Builder, Context, Loc, OpId, Type, ValueId};

// ----- helpers -------------------------------------------------------------

fn registry() -> Rc<Registry> {
    dialects::registry()
}

/// The full registry plus placeholder specs (no semantics) for the `gen` and
/// `scf` ops the lowering builds, where those dialects do not provide them yet.
fn registry_with_placeholders() -> Rc<Registry> {
    let mut r = Rc::try_unwrap(dialects::registry())
        .ok()
        .expect("fresh registry");
    let add = |r: &mut Registry, spec: OpSpec| {
        if r.kind(spec.name).is_none() {
            r.register(spec);
        }
    };
    add(
        &mut r,
        OpSpec::new("gen.loop", "placeholder")
            .operands(Arity::AtLeast(1))
            .results(Arity::AtLeast(0))
            .regions(Arity::Exactly(1))
            .traits(Traits::RECURSIVELY_PURE),
    );
    add(
        &mut r,
        OpSpec::new("gen.emit", "placeholder").operands(Arity::Between(2, 3)),
    );
    add(
        &mut r,
        OpSpec::new("gen.end", "placeholder").traits(Traits::TERMINATOR),
    );
    add(
        &mut r,
        OpSpec::new("scf.assert", "placeholder").operands(Arity::Exactly(1)),
    );
    add(
        &mut r,
        OpSpec::new("scf.if", "placeholder")
            .operands(Arity::Exactly(1))
            .results(Arity::AtLeast(0))
            .regions(Arity::Exactly(2)),
    );
    add(
        &mut r,
        OpSpec::new("scf.yield", "placeholder")
            .operands(Arity::AtLeast(0))
            .traits(Traits::TERMINATOR),
    );
    Rc::new(r)
}

fn parse_with(src: &str, reg: Rc<Registry>) -> Context {
    match ir::build::parse_source("test.ir", src, reg) {
        Ok(ctx) => ctx,
        Err(d) => panic!("parse error: {d:?}\n{src}"),
    }
}

fn parse(src: &str) -> Context {
    let ctx = parse_with(src, registry());
    if let Err(ds) = ir::verifier::verify(&ctx) {
        panic!("verify error: {ds:?}\n{src}");
    }
    ctx
}

/// Parses `src`, expecting a verifier error containing `msg`.
fn verify_err(src: &str, msg: &str) {
    let ctx = parse_with(src, registry());
    match ir::verifier::verify(&ctx) {
        Ok(()) => panic!("expected a verifier error '{msg}' for\n{src}"),
        Err(ds) => {
            let all = format!("{ds:?}");
            assert!(all.contains(msg), "expected '{msg}' in {all}");
        }
    }
}

fn run(ctx: &Context, f: &str, args: &[RtValue]) -> Result<Vec<RtValue>, String> {
    Interp::new(ctx)
        .call(f, args, Loc::UNKNOWN)
        .map_err(|e| e.message)
}

fn fv(xs: &[f64]) -> RtValue {
    RtValue::Vec(Rc::new(xs.iter().map(|&x| RtValue::F64(x)).collect()))
}

fn iv(xs: &[i64]) -> RtValue {
    RtValue::Vec(Rc::new(xs.iter().map(|&x| RtValue::Int(x)).collect()))
}

fn fm(rows: usize, cols: usize, xs: &[f64]) -> RtValue {
    RtValue::Mat(Rc::new(MatValue {
        rows,
        cols,
        data: xs.iter().map(|&x| RtValue::F64(x)).collect(),
    }))
}

fn f(x: f64) -> RtValue {
    RtValue::F64(x)
}

fn i(x: i64) -> RtValue {
    RtValue::Int(x)
}

fn vf64() -> Type {
    Type::vec(Type::F64)
}

fn vi64() -> Type {
    Type::vec(Type::I64)
}

/// Builds `func.func @name(args) -> results` with the smart builder; `body`
/// returns the returned values. Returns the context and the function.
fn build_fn(
    ctx: &mut Context,
    args: &[Type],
    body: impl FnOnce(&mut Builder, &[ValueId]) -> Vec<ValueId>,
) -> OpId {
    let top = ctx.top;
    let mut b = Builder::at_end(ctx, top);
    let mut results = Vec::new();
    let region = b.build_region(args, |b, a| {
        let rs = body(b, a);
        results = rs.iter().map(|&v| b.ctx.ty(v).clone()).collect();
        b.op("func.return", &rs, &[], vec![]);
    });
    let mut st = b.state(
        "func.func",
        &[],
        &[],
        vec![
            ("sym_name".into(), Attribute::Str("f".into())),
            (
                "function_type".into(),
                Attribute::Type(Type::function(args.to_vec(), results)),
            ),
        ],
    );
    st.regions.push(region);
    b.create_raw(st)
}

fn cst_i(b: &mut Builder, v: i64, t: Type) -> ValueId {
    b.constant(Attribute::int(v, t.clone()), &t)
}

fn cst_f(b: &mut Builder, v: f64) -> ValueId {
    b.constant(Attribute::float(v, Type::F64), &Type::F64)
}

fn len(b: &mut Builder, v: ValueId) -> ValueId {
    b.op1("vec.len", &[v], Type::Index, vec![])
}

fn fill(b: &mut Builder, n: ValueId, x: ValueId) -> ValueId {
    let t = Type::vec(b.ctx.ty(x).clone());
    b.op1("vec.fill", &[n, x], t, vec![])
}

fn square_map(b: &mut Builder, v: ValueId) -> ValueId {
    let r = b.build_region(&[Type::F64], |b, a| {
        let m = b.op1("arith.mulf", &[a[0], a[0]], Type::F64, vec![]);
        b.op("vec.yield", &[m], &[], vec![]);
    });
    b.op_with_regions("vec.map", &[v], &[vf64()], vec![], &[r])[0]
}

fn def_name(ctx: &Context, v: ValueId) -> Option<&'static str> {
    ctx.def_op(v).map(|o| ctx.op_name(o))
}

// ----- construction-time rewrites ------------------------------------------

#[test]
fn rewrites_on_sizes_and_elements() {
    let mut ctx = Context::new(registry());
    build_fn(
        &mut ctx,
        &[vf64(), Type::Index, Type::F64, Type::Index],
        |b, a| {
            let (v, n, x, k) = (a[0], a[1], a[2], a[3]);
            let fl = fill(b, n, x);
            assert_eq!(len(b, fl), n, "len(fill(n, x)) -> n");
            let io = b.op1("vec.iota", &[n], Type::vec(Type::Index), vec![]);
            assert_eq!(len(b, io), n, "len(iota(n)) -> n");
            // `k` may be outside [0, n): the reads keep their bounds check.
            let g = b.op1("vec.get", &[fl, k], Type::F64, vec![]);
            assert_eq!(
                def_name(b.ctx, g),
                Some("vec.get"),
                "get(fill(n, x), k) stays"
            );
            let g = b.op1("vec.get", &[io, k], Type::Index, vec![]);
            assert_eq!(def_name(b.ctx, g), Some("vec.get"), "get(iota(n), k) stays");
            // Proven in bounds (`in_bounds`): the element is known.
            let ib = vec![("in_bounds".to_string(), Attribute::Unit)];
            let g = b.op1("vec.get", &[fl, k], Type::F64, ib.clone());
            assert_eq!(g, x, "get(fill(n, x), k) {{in_bounds}} -> x");
            let g = b.op1("vec.get", &[io, k], Type::Index, ib);
            assert_eq!(g, k, "get(iota(n), k) {{in_bounds}} -> k");
            let m = square_map(b, v);
            let lv = len(b, v);
            assert_eq!(len(b, m), lv, "len(map(v)) -> len(v)");
            // A get of an arbitrary vector stays.
            let g = b.op1("vec.get", &[v, k], Type::F64, vec![]);
            assert_eq!(def_name(b.ctx, g), Some("vec.get"));
            // scale(v, 1.0) -> v, scale(v, 2.0) stays.
            let one = cst_f(b, 1.0);
            assert_eq!(b.op1("vec.scale", &[v, one], vf64(), vec![]), v);
            let two = cst_f(b, 2.0);
            let s = b.op1("vec.scale", &[v, two], vf64(), vec![]);
            assert_eq!(def_name(b.ctx, s), Some("vec.scale"));
            assert_eq!(len(b, s), lv, "len(scale(v, s)) -> len(v)");
            vec![]
        },
    );
}

#[test]
fn zipwith_len_is_not_folded_when_lengths_may_differ() {
    let mut ctx = Context::new(registry());
    build_fn(&mut ctx, &[vf64(), vf64()], |b, a| {
        let r = b.build_region(&[Type::F64, Type::F64], |b, e| {
            let m = b.op1("arith.addf", &[e[0], e[1]], Type::F64, vec![]);
            b.op("vec.yield", &[m], &[], vec![]);
        });
        let m = b.op_with_regions("vec.map", &[a[0], a[1]], &[vf64()], vec![], &[r])[0];
        let l = len(b, m);
        assert_eq!(def_name(b.ctx, l), Some("vec.len"));
        assert_eq!(b.ctx.operand(b.ctx.def_op(l).unwrap(), 0), m);
        // With one input twice, the lengths agree: folded.
        let r = b.build_region(&[Type::F64, Type::F64], |b, e| {
            let m = b.op1("arith.addf", &[e[0], e[1]], Type::F64, vec![]);
            b.op("vec.yield", &[m], &[], vec![]);
        });
        let m2 = b.op_with_regions("vec.map", &[a[0], a[0]], &[vf64()], vec![], &[r])[0];
        let l0 = len(b, a[0]);
        assert_eq!(len(b, m2), l0);
        vec![]
    });
}

#[test]
fn additive_identity_only_on_integers_of_matching_length() {
    let mut ctx = Context::new(registry());
    build_fn(&mut ctx, &[vi64(), vf64(), Type::Index], |b, a| {
        let (v, w, n) = (a[0], a[1], a[2]);
        let zero = cst_i(b, 0, Type::I64);
        let one = cst_i(b, 1, Type::I64);
        let lv = len(b, v);
        let z = fill(b, lv, zero);
        assert_eq!(
            b.op1("vec.add", &[v, z], vi64(), vec![]),
            v,
            "v + fill(len v, 0)"
        );
        assert_eq!(
            b.op1("vec.add", &[z, v], vi64(), vec![]),
            v,
            "fill(len v, 0) + v"
        );
        assert_eq!(
            b.op1("vec.sub", &[v, z], vi64(), vec![]),
            v,
            "v - fill(len v, 0)"
        );
        let s = b.op1("vec.sub", &[z, v], vi64(), vec![]);
        assert_eq!(def_name(b.ctx, s), Some("vec.sub"), "0 - v is not v");
        let o = fill(b, lv, one);
        assert_eq!(
            b.op1("vec.mul", &[v, o], vi64(), vec![]),
            v,
            "v * fill(len v, 1)"
        );
        assert_eq!(
            b.op1("vec.mul", &[o, v], vi64(), vec![]),
            v,
            "fill(len v, 1) * v"
        );
        let m = b.op1("vec.mul", &[v, z], vi64(), vec![]);
        assert_eq!(def_name(b.ctx, m), Some("vec.mul"));
        // A fill of unrelated length keeps the op (it must fault when n != len v).
        let zn = fill(b, n, zero);
        let r = b.op1("vec.add", &[v, zn], vi64(), vec![]);
        assert_eq!(def_name(b.ctx, r), Some("vec.add"));
        // Floats: -0.0 + 0.0 = +0.0, so v + fill(0.0) is not v.
        let fz = cst_f(b, 0.0);
        let lw = len(b, w);
        let wz = fill(b, lw, fz);
        let r = b.op1("vec.add", &[w, wz], vf64(), vec![]);
        assert_eq!(def_name(b.ctx, r), Some("vec.add"));
        let fo = cst_f(b, 1.0);
        let wo = fill(b, lw, fo);
        let r = b.op1("vec.mul", &[w, wo], vf64(), vec![]);
        assert_eq!(def_name(b.ctx, r), Some("vec.mul"));
        vec![]
    });
}

#[test]
fn map_of_map_is_not_folded() {
    let mut ctx = Context::new(registry());
    build_fn(&mut ctx, &[vf64()], |b, a| {
        let inner = square_map(b, a[0]);
        let outer = square_map(b, inner);
        let d = b.ctx.def_op(outer).unwrap();
        assert!(b.ctx.is(d, "vec.map"));
        assert_eq!(b.ctx.operand(d, 0), inner);
        assert_eq!(def_name(b.ctx, inner), Some("vec.map"));
        vec![outer]
    });
    assert!(ir::verifier::verify(&ctx).is_ok());
    let r = run(&ctx, "f", &[fv(&[1.0, 2.0, 3.0])]).unwrap();
    assert_eq!(r, vec![fv(&[1.0, 16.0, 81.0])]);
}

#[test]
fn matrix_rewrites() {
    let mut ctx = Context::new(registry());
    let mf = Type::mat(Type::F64);
    build_fn(
        &mut ctx,
        &[mf.clone(), vf64(), Type::Index, Type::Index],
        |b, a| {
            let (m, v, r, c) = (a[0], a[1], a[2], a[3]);
            let t = b.op1("mat.transpose", &[m], mf.clone(), vec![]);
            assert_eq!(def_name(b.ctx, t), Some("mat.transpose"));
            assert_eq!(b.op1("mat.transpose", &[t], mf.clone(), vec![]), m);
            let cols = b.op1("mat.cols", &[m], Type::Index, vec![]);
            let rows = b.op1("mat.rows", &[m], Type::Index, vec![]);
            assert_eq!(b.op1("mat.rows", &[t], Type::Index, vec![]), cols);
            assert_eq!(b.op1("mat.cols", &[t], Type::Index, vec![]), rows);
            let fm = b.op1("mat.from", &[v, r, c], mf.clone(), vec![]);
            assert_eq!(b.op1("mat.rows", &[fm], Type::Index, vec![]), r);
            assert_eq!(b.op1("mat.cols", &[fm], Type::Index, vec![]), c);
            vec![]
        },
    );
}

#[test]
fn canonicalize_applies_the_rewrites_to_parsed_ir() {
    let src = r#"
func.func @f(%v: vec<i64>, %m: mat<f64>) -> (vec<i64>, mat<f64>, vec<i64>) {
  %n = "vec.len"(%v) : (vec<i64>) -> index
  %c0 = "arith.constant"() {value = 0 : i64} : () -> i64
  %z = "vec.fill"(%n, %c0) : (index, i64) -> vec<i64>
  %s = "vec.add"(%v, %z) : (vec<i64>, vec<i64>) -> vec<i64>
  %t = "mat.transpose"(%m) : (mat<f64>) -> mat<f64>
  %tt = "mat.transpose"(%t) : (mat<f64>) -> mat<f64>
  %c3 = "arith.constant"() {value = 3 : index} : () -> index
  %y = "vec.fill"(%c3, %c0) : (index, i64) -> vec<i64>
  %s2 = "vec.add"(%v, %y) : (vec<i64>, vec<i64>) -> vec<i64>
  "func.return"(%s, %tt, %s2) : (vec<i64>, mat<f64>, vec<i64>) -> ()
}
"#;
    let mut ctx = parse(src);
    apply_greedily(&mut ctx, Patterns::Canonical, Default::default());
    assert!(ir::verifier::verify(&ctx).is_ok());
    let func = ctx.lookup_symbol("f").unwrap();
    let body = ctx.op_block(func, 0);
    let args = ctx.block_args(body).to_vec();
    let ret = ctx.terminator(body).unwrap();
    assert_eq!(ctx.operand(ret, 0), args[0]);
    assert_eq!(ctx.operand(ret, 1), args[1]);
    assert_eq!(def_name(&ctx, ctx.operand(ret, 2)), Some("vec.add"));
    // The kept add still faults on the size mismatch.
    let m = fm(1, 1, &[1.0]);
    let e = run(&ctx, "f", &[iv(&[1, 2]), m]).unwrap_err();
    assert!(e.contains("size mismatch"), "{e}");
}

// ----- interpreter ---------------------------------------------------------

const OPS: &str = r#"
func.func @basic(%a: vec<f64>, %n: index, %x: f64) -> (index, f64, vec<index>, vec<f64>) {
  %l = "vec.len"(%a) : (vec<f64>) -> index
  %c1 = "arith.constant"() {value = 1 : index} : () -> index
  %g = "vec.get"(%a, %c1) : (vec<f64>, index) -> f64
  %io = "vec.iota"(%n) : (index) -> vec<index>
  %fl = "vec.fill"(%n, %x) : (index, f64) -> vec<f64>
  "func.return"(%l, %g, %io, %fl) : (index, f64, vec<index>, vec<f64>) -> ()
}
func.func @zip(%a: vec<f64>, %b: vec<f64>) -> vec<f64> {
  %m = "vec.map"(%a, %b) ({
  ^bb0(%x: f64, %y: f64):
    %p = "arith.mulf"(%x, %y) : (f64, f64) -> f64
    %q = "arith.addf"(%p, %x) : (f64, f64) -> f64
    "vec.yield"(%q) : (f64) -> ()
  }) : (vec<f64>, vec<f64>) -> vec<f64>
  "func.return"(%m) : (vec<f64>) -> ()
}
func.func @tolen(%a: vec<f64>) -> vec<index> {
  %m = "vec.map"(%a) ({
  ^bb0(%x: f64):
    %k = "arith.fptosi"(%x) : (f64) -> index
    "vec.yield"(%k) : (index) -> ()
  }) : (vec<f64>) -> vec<index>
  "func.return"(%m) : (vec<index>) -> ()
}
func.func @folds(%a: vec<f64>, %init: f64) -> (f64, f64, f64, f64, f64, vec<f64>, vec<f64>) {
  %s = "vec.sum"(%a) : (vec<f64>) -> f64
  %ra = "vec.reduce"(%a, %init) {kind = #gen.reduce<add>} : (vec<f64>, f64) -> f64
  %rm = "vec.reduce"(%a, %init) {kind = #gen.reduce<mul>} : (vec<f64>, f64) -> f64
  %rmin = "vec.reduce"(%a, %init) {kind = #gen.reduce<min>} : (vec<f64>, f64) -> f64
  %rmax = "vec.reduce"(%a, %init) {kind = #gen.reduce<max>} : (vec<f64>, f64) -> f64
  %sc = "vec.scan"(%a, %init) {kind = #gen.reduce<add>} : (vec<f64>, f64) -> vec<f64>
  %sm = "vec.scan"(%a, %init) {kind = #gen.reduce<max>} : (vec<f64>, f64) -> vec<f64>
  "func.return"(%s, %ra, %rm, %rmin, %rmax, %sc, %sm) : (f64, f64, f64, f64, f64, vec<f64>, vec<f64>) -> ()
}
func.func @ints(%a: vec<i64>, %b: vec<i64>, %s: i64) -> (i64, i64, vec<i64>, vec<i64>, vec<i64>, vec<i64>, i64) {
  %sum = "vec.sum"(%a) : (vec<i64>) -> i64
  %dot = "vec.dot"(%a, %b) : (vec<i64>, vec<i64>) -> i64
  %add = "vec.add"(%a, %b) : (vec<i64>, vec<i64>) -> vec<i64>
  %sub = "vec.sub"(%a, %b) : (vec<i64>, vec<i64>) -> vec<i64>
  %mul = "vec.mul"(%a, %b) : (vec<i64>, vec<i64>) -> vec<i64>
  %sc = "vec.scale"(%a, %s) : (vec<i64>, i64) -> vec<i64>
  %mn = "vec.reduce"(%a, %s) {kind = #gen.reduce<min>} : (vec<i64>, i64) -> i64
  "func.return"(%sum, %dot, %add, %sub, %mul, %sc, %mn) : (i64, i64, vec<i64>, vec<i64>, vec<i64>, vec<i64>, i64) -> ()
}
func.func @i32wrap(%a: vec<i32>) -> i32 {
  %s = "vec.sum"(%a) : (vec<i32>) -> i32
  "func.return"(%s) : (i32) -> ()
}
func.func @floats(%a: vec<f64>, %b: vec<f64>, %s: f64) -> (f64, vec<f64>, vec<f64>, vec<f64>, vec<f64>) {
  %dot = "vec.dot"(%a, %b) : (vec<f64>, vec<f64>) -> f64
  %add = "vec.add"(%a, %b) : (vec<f64>, vec<f64>) -> vec<f64>
  %sub = "vec.sub"(%a, %b) : (vec<f64>, vec<f64>) -> vec<f64>
  %mul = "vec.mul"(%a, %b) : (vec<f64>, vec<f64>) -> vec<f64>
  %sc = "vec.scale"(%a, %s) : (vec<f64>, f64) -> vec<f64>
  "func.return"(%dot, %add, %sub, %mul, %sc) : (f64, vec<f64>, vec<f64>, vec<f64>, vec<f64>) -> ()
}
func.func @pos(%a: vec<f64>, %t: f64) -> vec<f64> {
  %r = "vec.filter"(%a) ({
  ^bb0(%x: f64):
    %k = "arith.cmpf"(%x, %t) {predicate = "ogt"} : (f64, f64) -> i1
    "vec.yield"(%k) : (i1) -> ()
  }) : (vec<f64>) -> vec<f64>
  "func.return"(%r) : (vec<f64>) -> ()
}
func.func @mats(%v: vec<f64>, %r: index, %c: index, %w: vec<f64>, %i: index) -> (mat<f64>, index, index, f64, vec<f64>, mat<f64>, mat<f64>, vec<f64>) {
  %m = "mat.from"(%v, %r, %c) : (vec<f64>, index, index) -> mat<f64>
  %rows = "mat.rows"(%m) : (mat<f64>) -> index
  %cols = "mat.cols"(%m) : (mat<f64>) -> index
  %e = "mat.get"(%m, %i, %i) : (mat<f64>, index, index) -> f64
  %row = "mat.row"(%m, %i) : (mat<f64>, index) -> vec<f64>
  %t = "mat.transpose"(%m) : (mat<f64>) -> mat<f64>
  %mm = "mat.mul"(%m, %t) : (mat<f64>, mat<f64>) -> mat<f64>
  %mv = "mat.matvec"(%m, %w) : (mat<f64>, vec<f64>) -> vec<f64>
  "func.return"(%m, %rows, %cols, %e, %row, %t, %mm, %mv) : (mat<f64>, index, index, f64, vec<f64>, mat<f64>, mat<f64>, vec<f64>) -> ()
}
func.func @nested(%a: vec<f64>) -> vec<f64> {
  %m = "vec.map"(%a) ({
  ^bb0(%x: f64):
    %n = "arith.fptosi"(%x) : (f64) -> index
    %io = "vec.iota"(%n) : (index) -> vec<index>
    %s = "vec.sum"(%io) : (vec<index>) -> index
    %y = "arith.sitofp"(%s) : (index) -> f64
    "vec.yield"(%y) : (f64) -> ()
  }) : (vec<f64>) -> vec<f64>
  "func.return"(%m) : (vec<f64>) -> ()
}
"#;

fn check_ops(ctx: &Context) {
    let r = run(ctx, "basic", &[fv(&[1.5, 2.5, 3.5]), i(3), f(7.0)]).unwrap();
    assert_eq!(r, vec![i(3), f(2.5), iv(&[0, 1, 2]), fv(&[7.0, 7.0, 7.0])]);
    let r = run(ctx, "basic", &[fv(&[1.5, 2.5]), i(0), f(7.0)]).unwrap();
    assert_eq!(r, vec![i(2), f(2.5), iv(&[]), fv(&[])]);

    let r = run(ctx, "zip", &[fv(&[1.0, 2.0, 3.0]), fv(&[10.0, 20.0, 30.0])]).unwrap();
    assert_eq!(r, vec![fv(&[11.0, 42.0, 93.0])]);
    let r = run(ctx, "zip", &[fv(&[]), fv(&[])]).unwrap();
    assert_eq!(r, vec![fv(&[])]);
    let r = run(ctx, "tolen", &[fv(&[1.9, -2.0])]).unwrap();
    assert_eq!(r, vec![iv(&[1, -2])]);

    let r = run(ctx, "folds", &[fv(&[3.0, -1.0, 4.0]), f(2.0)]).unwrap();
    assert_eq!(
        r,
        vec![
            f(6.0),
            f(8.0),
            f(-24.0),
            f(-1.0),
            f(4.0),
            fv(&[5.0, 4.0, 8.0]),
            fv(&[3.0, 3.0, 4.0]),
        ]
    );
    // Empty input: the init (or zero) comes back; scans are empty.
    let r = run(ctx, "folds", &[fv(&[]), f(2.0)]).unwrap();
    assert_eq!(
        r,
        vec![f(0.0), f(2.0), f(2.0), f(2.0), f(2.0), fv(&[]), fv(&[])]
    );
    // min/max are arith.minf/maxf: NaN-propagating.
    let r = run(ctx, "folds", &[fv(&[1.0, f64::NAN]), f(0.0)]).unwrap();
    assert!(matches!(r[3], RtValue::F64(x) if x.is_nan()));
    assert!(matches!(r[4], RtValue::F64(x) if x.is_nan()));

    let r = run(ctx, "ints", &[iv(&[1, 2, 3]), iv(&[4, 5, 6]), i(-2)]).unwrap();
    assert_eq!(
        r,
        vec![
            i(6),
            i(32),
            iv(&[5, 7, 9]),
            iv(&[-3, -3, -3]),
            iv(&[4, 10, 18]),
            iv(&[-2, -4, -6]),
            i(-2),
        ]
    );
    let r = run(ctx, "ints", &[iv(&[i64::MAX, 1]), iv(&[1, 1]), i(1)]).unwrap();
    assert_eq!(r[0], i(i64::MIN), "integer sums wrap");
    let r = run(ctx, "i32wrap", &[iv(&[i32::MAX as i64, 1])]).unwrap();
    assert_eq!(r, vec![i(i32::MIN as i64)], "i32 sums wrap at 32 bits");

    let r = run(ctx, "floats", &[fv(&[1.0, 2.0]), fv(&[0.5, -4.0]), f(3.0)]).unwrap();
    assert_eq!(
        r,
        vec![
            f(-7.5),
            fv(&[1.5, -2.0]),
            fv(&[0.5, 6.0]),
            fv(&[0.5, -8.0]),
            fv(&[3.0, 6.0]),
        ]
    );

    let r = run(ctx, "pos", &[fv(&[1.0, -2.0, 3.0, 0.0, 5.0]), f(0.5)]).unwrap();
    assert_eq!(r, vec![fv(&[1.0, 3.0, 5.0])]);
    let r = run(ctx, "pos", &[fv(&[-1.0]), f(0.5)]).unwrap();
    assert_eq!(r, vec![fv(&[])]);

    let v = fv(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let r = run(ctx, "mats", &[v, i(2), i(3), fv(&[1.0, 0.0, -1.0]), i(1)]).unwrap();
    assert_eq!(
        r,
        vec![
            fm(2, 3, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
            i(2),
            i(3),
            f(5.0),
            fv(&[4.0, 5.0, 6.0]),
            fm(3, 2, &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]),
            fm(2, 2, &[14.0, 32.0, 32.0, 77.0]),
            fv(&[-2.0, -2.0]),
        ]
    );

    let r = run(ctx, "nested", &[fv(&[0.0, 3.0, 5.0])]).unwrap();
    assert_eq!(r, vec![fv(&[0.0, 3.0, 10.0])]);
}

#[test]
fn interpreter_semantics() {
    check_ops(&parse(OPS));
}

// ----- run-time faults -------------------------------------------------------

const FAULTS: &str = r#"
func.func @get(%a: vec<f64>, %i: index) -> f64 {
  %g = "vec.get"(%a, %i) : (vec<f64>, index) -> f64
  "func.return"(%g) : (f64) -> ()
}
func.func @zip(%a: vec<f64>, %b: vec<f64>) -> vec<f64> {
  %m = "vec.map"(%a, %b) ({
  ^bb0(%x: f64, %y: f64):
    %p = "arith.mulf"(%x, %y) : (f64, f64) -> f64
    "vec.yield"(%p) : (f64) -> ()
  }) : (vec<f64>, vec<f64>) -> vec<f64>
  "func.return"(%m) : (vec<f64>) -> ()
}
func.func @add(%a: vec<f64>, %b: vec<f64>) -> vec<f64> {
  %m = "vec.add"(%a, %b) : (vec<f64>, vec<f64>) -> vec<f64>
  "func.return"(%m) : (vec<f64>) -> ()
}
func.func @sub(%a: vec<f64>, %b: vec<f64>) -> vec<f64> {
  %m = "vec.sub"(%a, %b) : (vec<f64>, vec<f64>) -> vec<f64>
  "func.return"(%m) : (vec<f64>) -> ()
}
func.func @mul(%a: vec<f64>, %b: vec<f64>) -> vec<f64> {
  %m = "vec.mul"(%a, %b) : (vec<f64>, vec<f64>) -> vec<f64>
  "func.return"(%m) : (vec<f64>) -> ()
}
func.func @dot(%a: vec<f64>, %b: vec<f64>) -> f64 {
  %m = "vec.dot"(%a, %b) : (vec<f64>, vec<f64>) -> f64
  "func.return"(%m) : (f64) -> ()
}
func.func @iota(%n: index) -> vec<index> {
  %m = "vec.iota"(%n) : (index) -> vec<index>
  "func.return"(%m) : (vec<index>) -> ()
}
func.func @fill(%n: index, %x: f64) -> vec<f64> {
  %m = "vec.fill"(%n, %x) : (index, f64) -> vec<f64>
  "func.return"(%m) : (vec<f64>) -> ()
}
func.func @from(%v: vec<f64>, %r: index, %c: index) -> mat<f64> {
  %m = "mat.from"(%v, %r, %c) : (vec<f64>, index, index) -> mat<f64>
  "func.return"(%m) : (mat<f64>) -> ()
}
func.func @mget(%m: mat<f64>, %i: index, %j: index) -> f64 {
  %e = "mat.get"(%m, %i, %j) : (mat<f64>, index, index) -> f64
  "func.return"(%e) : (f64) -> ()
}
func.func @row(%m: mat<f64>, %i: index) -> vec<f64> {
  %e = "mat.row"(%m, %i) : (mat<f64>, index) -> vec<f64>
  "func.return"(%e) : (vec<f64>) -> ()
}
func.func @mmul(%a: mat<f64>, %b: mat<f64>) -> mat<f64> {
  %e = "mat.mul"(%a, %b) : (mat<f64>, mat<f64>) -> mat<f64>
  "func.return"(%e) : (mat<f64>) -> ()
}
func.func @matvec(%a: mat<f64>, %v: vec<f64>) -> vec<f64> {
  %e = "mat.matvec"(%a, %v) : (mat<f64>, vec<f64>) -> vec<f64>
  "func.return"(%e) : (vec<f64>) -> ()
}
"#;

fn expect_fault(ctx: &Context, func: &str, args: &[RtValue], msg: &str) {
    match run(ctx, func, args) {
        Ok(r) => panic!("@{func}: expected a fault '{msg}', got {r:?}"),
        Err(e) => assert!(e.contains(msg), "@{func}: expected '{msg}' in '{e}'"),
    }
}

#[test]
fn run_time_faults_are_errors() {
    let ctx = parse(FAULTS);
    let a = fv(&[1.0, 2.0]);
    let b = fv(&[1.0, 2.0, 3.0]);
    expect_fault(&ctx, "get", &[a.clone(), i(2)], "out of bounds");
    expect_fault(&ctx, "get", &[a.clone(), i(-1)], "out of bounds");
    expect_fault(&ctx, "get", &[fv(&[]), i(0)], "out of bounds");
    assert_eq!(run(&ctx, "get", &[a.clone(), i(1)]).unwrap(), vec![f(2.0)]);
    for op in ["zip", "add", "sub", "mul", "dot"] {
        expect_fault(&ctx, op, &[a.clone(), b.clone()], "size mismatch");
        expect_fault(&ctx, op, &[b.clone(), a.clone()], "size mismatch");
    }
    expect_fault(&ctx, "iota", &[i(-1)], "negative size");
    expect_fault(&ctx, "fill", &[i(-5), f(1.0)], "negative size");
    expect_fault(&ctx, "fill", &[i(i64::MAX), f(1.0)], "too large");
    expect_fault(&ctx, "from", &[b.clone(), i(2), i(2)], "does not match");
    expect_fault(&ctx, "from", &[b.clone(), i(-1), i(-3)], "negative size");
    expect_fault(
        &ctx,
        "from",
        &[fv(&[]), i(1 << 40), i(1 << 40)],
        "does not match",
    );
    let m = fm(2, 3, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    expect_fault(
        &ctx,
        "mget",
        &[m.clone(), i(2), i(0)],
        "row index 2 out of bounds",
    );
    expect_fault(
        &ctx,
        "mget",
        &[m.clone(), i(0), i(3)],
        "column index 3 out of bounds",
    );
    expect_fault(&ctx, "row", &[m.clone(), i(5)], "out of bounds");
    expect_fault(&ctx, "mmul", &[m.clone(), m.clone()], "size mismatch");
    expect_fault(&ctx, "matvec", &[m.clone(), a.clone()], "size mismatch");
    assert_eq!(
        run(&ctx, "matvec", &[m, b]).unwrap(),
        vec![fv(&[14.0, 32.0])]
    );
}

// ----- verifier --------------------------------------------------------------

fn func(ret: &str, args: &str, body: &str) -> String {
    format!("func.func @f({args}) -> {ret} {{\n{body}\n}}\n")
}

#[test]
fn verifier_errors() {
    // Region argument types must match the inputs' element types.
    verify_err(
        &func(
            "vec<f64>",
            "%a: vec<f64>",
            r#"%m = "vec.map"(%a) ({
  ^bb0(%x: i64):
    %y = "arith.sitofp"(%x) : (i64) -> f64
    "vec.yield"(%y) : (f64) -> ()
  }) : (vec<f64>) -> vec<f64>
  "func.return"(%m) : (vec<f64>) -> ()"#,
        ),
        "region argument #0 must have type 'f64'",
    );
    // One region argument per input.
    verify_err(
        &func(
            "vec<f64>",
            "%a: vec<f64>, %b: vec<f64>",
            r#"%m = "vec.map"(%a, %b) ({
  ^bb0(%x: f64):
    "vec.yield"(%x) : (f64) -> ()
  }) : (vec<f64>, vec<f64>) -> vec<f64>
  "func.return"(%m) : (vec<f64>) -> ()"#,
        ),
        "region must take 2 arguments",
    );
    // The yield type is the result's element type.
    verify_err(
        &func(
            "vec<i64>",
            "%a: vec<f64>",
            r#"%m = "vec.map"(%a) ({
  ^bb0(%x: f64):
    "vec.yield"(%x) : (f64) -> ()
  }) : (vec<f64>) -> vec<i64>
  "func.return"(%m) : (vec<i64>) -> ()"#,
        ),
        "body must yield 'i64'",
    );
    // Filters yield i1.
    verify_err(
        &func(
            "vec<f64>",
            "%a: vec<f64>",
            r#"%m = "vec.filter"(%a) ({
  ^bb0(%x: f64):
    "vec.yield"(%x) : (f64) -> ()
  }) : (vec<f64>) -> vec<f64>
  "func.return"(%m) : (vec<f64>) -> ()"#,
        ),
        "body must yield 'i1'",
    );
    // The body must end in vec.yield.
    verify_err(
        &func(
            "vec<f64>",
            "%a: vec<f64>",
            r#"%m = "vec.map"(%a) ({
  ^bb0(%x: f64):
    "func.return"(%x) : (f64) -> ()
  }) : (vec<f64>) -> vec<f64>
  "func.return"(%m) : (vec<f64>) -> ()"#,
        ),
        "vec.yield",
    );
    verify_err(
        &func(
            "f64",
            "%a: vec<f64>, %i: i64",
            r#"%g = "vec.get"(%a, %i) : (vec<f64>, i64) -> f64
  "func.return"(%g) : (f64) -> ()"#,
        ),
        "index operand must have type 'index'",
    );
    verify_err(
        &func(
            "i64",
            "%a: vec<f64>, %i: index",
            r#"%g = "vec.get"(%a, %i) : (vec<f64>, index) -> i64
  "func.return"(%g) : (i64) -> ()"#,
        ),
        "result must have type 'f64'",
    );
    verify_err(
        &func(
            "f64",
            "%a: vec<f64>, %x: f64",
            r#"%g = "vec.reduce"(%a, %x) : (vec<f64>, f64) -> f64
  "func.return"(%g) : (f64) -> ()"#,
        ),
        "requires a 'kind' attribute",
    );
    verify_err(
        &func(
            "f64",
            "%a: vec<f64>, %x: f64",
            r#"%g = "vec.reduce"(%a, %x) {kind = #gen.reduce<sub>} : (vec<f64>, f64) -> f64
  "func.return"(%g) : (f64) -> ()"#,
        ),
        "'kind' must be",
    );
    verify_err(
        &func(
            "f64",
            "%a: vec<f64>, %x: i64",
            r#"%g = "vec.reduce"(%a, %x) {kind = #gen.reduce<add>} : (vec<f64>, i64) -> f64
  "func.return"(%g) : (f64) -> ()"#,
        ),
        "init operand must have type 'f64'",
    );
    verify_err(
        &func(
            "vec<i1>",
            "%a: vec<i1>",
            r#"%g = "vec.add"(%a, %a) : (vec<i1>, vec<i1>) -> vec<i1>
  "func.return"(%g) : (vec<i1>) -> ()"#,
        ),
        "element type must be",
    );
    verify_err(
        &func(
            "vec<f64>",
            "%a: vec<f64>, %b: vec<f32>",
            r#"%g = "vec.add"(%a, %b) : (vec<f64>, vec<f32>) -> vec<f64>
  "func.return"(%g) : (vec<f64>) -> ()"#,
        ),
        "same type",
    );
    verify_err(
        &func(
            "f64",
            "%a: vec<f64>, %b: vec<f32>",
            r#"%g = "vec.dot"(%a, %b) : (vec<f64>, vec<f32>) -> f64
  "func.return"(%g) : (f64) -> ()"#,
        ),
        "operand #1 must have type 'vec<f64>'",
    );
    verify_err(
        &func("f64", "%a: f64", r#""vec.yield"(%a) : (f64) -> ()"#),
        "expects parent op 'vec.map', 'vec.filter', 'vec.reduce', 'vec.scan' or 'vec.hist'",
    );
    verify_err(
        &func(
            "mat<f64>",
            "%v: vec<f64>, %r: index",
            r#"%m = "mat.from"(%v, %r, %r) : (vec<f64>, index, index) -> mat<f32>
  "func.return"(%m) : (mat<f32>) -> ()"#,
        ),
        "result must have type 'mat<f64>'",
    );
    verify_err(
        &func(
            "vec<f64>",
            "%m: mat<f64>, %v: vec<f32>",
            r#"%r = "mat.matvec"(%m, %v) : (mat<f64>, vec<f32>) -> vec<f64>
  "func.return"(%r) : (vec<f64>) -> ()"#,
        ),
        "operand #1 must have type 'vec<f64>'",
    );
    verify_err(
        &func(
            "index",
            "%v: vec<f64>",
            r#"%r = "mat.rows"(%v) : (vec<f64>) -> index
  "func.return"(%r) : (index) -> ()"#,
        ),
        "operand #0 must be a mat",
    );
}

// ----- clone utility ---------------------------------------------------------

#[test]
fn clone_block_into_maps_values_and_nested_regions() {
    let mut ctx = parse(OPS);
    let func = ctx.lookup_symbol("nested").unwrap();
    let body = ctx.op_block(func, 0);
    let map_op = ctx.block_ops(body)[0];
    let src = ctx.op_block(map_op, 0);
    let arg = ctx.block_args(src)[0];
    // Clone the map body before the map, with the element bound to 3.0.
    let mut b = Builder::before(&mut ctx, map_op);
    b.smart = false;
    let three = cst_f(&mut b, 3.0);
    let mut map = HashMap::new();
    map.insert(arg, three);
    let ys = ir::clone::clone_block_into(&mut b, src, &mut map);
    assert_eq!(ys.len(), 1);
    assert_ne!(ys[0], ctx.operand(ctx.terminator(src).unwrap(), 0));
    let names: Vec<&str> = ctx
        .block_ops(body)
        .iter()
        .map(|&o| ctx.op_name(o))
        .collect();
    assert_eq!(
        &names[..6],
        &[
            "arith.constant",
            "arith.fptosi",
            "vec.iota",
            "vec.sum",
            "arith.sitofp",
            "vec.map"
        ]
    );
    assert_eq!(def_name(&ctx, ys[0]), Some("arith.sitofp"));
    // The source body is intact; return the clone's value instead of the map.
    assert_eq!(ctx.block_ops(src).len(), 5);
    let ret = ctx.terminator(body).unwrap();
    ctx.set_operands(ret, &[ys[0]]);
    let ft = Type::function(vec![vf64()], vec![Type::F64]);
    ctx.set_attr(func, "function_type", Attribute::Type(ft));
    assert!(ir::verifier::verify(&ctx).is_ok());
    assert_eq!(run(&ctx, "nested", &[fv(&[1.0])]).unwrap(), vec![f(3.0)]);
}

// ----- lowering to gen -------------------------------------------------------

fn lower(ctx: &mut Context) {
    apply_greedily(ctx, Patterns::Phase("gen"), Default::default());
}

/// The vec/mat ops that the "gen" phase must remove.
const LOWERED: &[&str] = &[
    "vec.map",
    "vec.filter",
    "vec.reduce",
    "vec.sum",
    "vec.dot",
    "vec.scan",
    "vec.iota",
    "vec.fill",
    "vec.add",
    "vec.sub",
    "vec.mul",
    "vec.scale",
    "mat.transpose",
    "mat.mul",
    "mat.matvec",
];

fn count(ctx: &Context, name: &str) -> usize {
    ctx.walk_all()
        .into_iter()
        .filter(|&o| ctx.is(o, name))
        .count()
}

#[test]
fn lowering_structure() {
    let mut ctx = parse_with(OPS, registry_with_placeholders());
    let before: usize = LOWERED.iter().map(|n| count(&ctx, n)).sum();
    assert!(before > 15);
    lower(&mut ctx);
    for n in LOWERED {
        assert_eq!(count(&ctx, n), 0, "{n} left after lowering:\n{ctx:?}");
    }
    // The zipWith map checks the sizes first, then loops with one collect.
    let zip = ctx.lookup_symbol("zip").unwrap();
    let ops: Vec<&str> = ctx
        .block_ops(ctx.op_block(zip, 0))
        .iter()
        .map(|&o| ctx.op_name(o))
        .collect();
    assert_eq!(
        ops,
        [
            "vec.len",
            "vec.len",
            "arith.cmpi",
            "scf.assert",
            "gen.loop",
            "func.return"
        ]
    );
    let lp = ctx
        .block_ops(ctx.op_block(zip, 0))
        .into_iter()
        .find(|&o| ctx.is(o, "gen.loop"))
        .unwrap();
    assert_eq!(
        ctx.attr(lp, "gens"),
        Some(&Attribute::Array(vec![Attribute::dialect(
            "gen",
            "collect",
            vec![]
        )]))
    );
    let body = ctx.op_block(lp, 0);
    let inner: Vec<&str> = ctx
        .block_ops(body)
        .iter()
        .map(|&o| ctx.op_name(o))
        .collect();
    assert_eq!(
        inner,
        [
            "vec.get",
            "vec.get",
            "arith.mulf",
            "arith.addf",
            "gen.emit",
            "gen.end"
        ]
    );
    assert_eq!(ctx.block_args(body).len(), 2);
    assert_eq!(ctx.ty(ctx.block_args(body)[0]), &Type::Index);
    // The map nested in a map body was lowered too.
    let nested = ctx.lookup_symbol("nested").unwrap();
    assert_eq!(
        ctx.walk_nested(nested)
            .into_iter()
            .filter(|&o| ctx.is(o, "gen.loop"))
            .count(),
        3
    );
    // Filters emit under scf.if.
    let pos = ctx.lookup_symbol("pos").unwrap();
    assert!(ctx
        .walk_nested(pos)
        .into_iter()
        .any(|o| ctx.is(o, "scf.if")));
}

/// Needs the `gen` dialect's interpreter (and `scf.assert`/`scf.if`).
#[test]
fn lowering_preserves_results() {
    let reg = registry();
    let ready = [
        "gen.loop",
        "gen.emit",
        "gen.end",
        "scf.assert",
        "scf.if",
        "scf.yield",
    ]
    .iter()
    .all(|n| reg.kind(n).is_some_and(|k| reg.spec(k).interpret.is_some()));
    assert!(
        ready,
        "gen/scf ops or their interpreters are not registered"
    );
    let mut ctx = parse(OPS);
    lower(&mut ctx);
    for n in LOWERED {
        assert_eq!(count(&ctx, n), 0, "{n} left after lowering");
    }
    if let Err(ds) = ir::verifier::verify(&ctx) {
        panic!("lowered IR does not verify: {ds:?}\n{ctx:?}");
    }
    check_ops(&ctx);
    let mut faults = parse(FAULTS);
    lower(&mut faults);
    assert!(ir::verifier::verify(&faults).is_ok());
    let a = fv(&[1.0, 2.0]);
    let b = fv(&[1.0, 2.0, 3.0]);
    for op in ["zip", "add", "sub", "mul", "dot"] {
        expect_fault(&faults, op, &[a.clone(), b.clone()], "size mismatch");
    }
    let m = fm(2, 3, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    expect_fault(&faults, "mmul", &[m.clone(), m.clone()], "size mismatch");
    expect_fault(&faults, "matvec", &[m, a], "size mismatch");
    expect_fault(&faults, "iota", &[i(-1)], "negative");
}
