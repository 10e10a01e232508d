//! Shared helpers: parse, lower, and compare the JIT with the interpreter.
#![allow(dead_code)]

use std::rc::Rc;

use codegen::JitModule;
use ir::interp::{Interp, MatValue, RtValue, RunError};
use ir::{Context, Loc};

pub fn parse(src: &str) -> Context {
    ir::build::parse_source("t.ir", src, dialects::registry())
        .unwrap_or_else(|d| panic!("{}", ir::diag::render(None, &d)))
}

/// Parses `src` and runs `pipeline` (empty: none).
pub fn build(src: &str, pipeline: &str) -> Context {
    let mut ctx = parse(src);
    if !pipeline.is_empty() {
        let p = passes::registry().parse_pipeline(pipeline).unwrap();
        ir::pass::PassManager::new(p)
            .run(&mut ctx)
            .unwrap_or_else(|d| panic!("{}", ir::diag::render(ctx.source.as_deref(), &d)));
    }
    ctx
}

pub fn interp(ctx: &Context, f: &str, args: &[RtValue]) -> Result<Vec<RtValue>, RunError> {
    Interp::new(ctx).call(f, args, Loc::UNKNOWN)
}

pub fn jit(m: &JitModule, f: &str, args: &[RtValue]) -> Result<Vec<RtValue>, RunError> {
    let p = m.prepare(f, args).unwrap();
    m.call(&p)
}

pub fn compile(ctx: &Context) -> JitModule {
    JitModule::compile(ctx)
        .unwrap_or_else(|d| panic!("{}", ir::diag::render(ctx.source.as_deref(), &d)))
}

/// Asserts that the JIT and the interpreter agree on `f(args)` for every
/// argument list (results bit for bit, faults by location and message).
pub fn same(ctx: &Context, f: &str, cases: &[Vec<RtValue>]) {
    let m = compile(ctx);
    for args in cases {
        let want = interp(ctx, f, args);
        let got = jit(&m, f, args);
        assert_eq!(got, want, "@{f}({args:?})");
    }
}

pub fn i(v: i64) -> RtValue {
    RtValue::Int(v)
}
pub fn f(v: f64) -> RtValue {
    RtValue::F64(v)
}
pub fn b(v: bool) -> RtValue {
    RtValue::Bool(v)
}
pub fn vf(v: &[f64]) -> RtValue {
    RtValue::Vec(Rc::new(v.iter().map(|&x| RtValue::F64(x)).collect()))
}
pub fn vi(v: &[i64]) -> RtValue {
    RtValue::Vec(Rc::new(v.iter().map(|&x| RtValue::Int(x)).collect()))
}
pub fn mf(rows: usize, cols: usize, v: &[f64]) -> RtValue {
    RtValue::Mat(Rc::new(MatValue {
        rows,
        cols,
        data: v.iter().map(|&x| RtValue::F64(x)).collect(),
    }))
}

/// A small deterministic generator of test inputs (a 64-bit LCG, Knuth's
/// MMIX constants; its high bits mixed into the low ones).
pub struct Lcg(pub u64);

impl Lcg {
    /// The next 64 pseudo-random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 16 ^ self.0 << 48
    }
}
