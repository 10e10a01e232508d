//! Passes that fail on purpose, for testing the pass manager's failure
//! paths (IR printing after a failure, crash reproducers, internal errors).
//! Like MLIR's `-test-*` passes they live in the tool, but [`crate::registry`]
//! registers them only when the environment variable `L0_TEST_PASSES` is
//! set, so users never see them.
//!
//! - `test-fail`: returns an error at the first function.
//! - `test-panic`: panics (an internal error).
//! - `test-miscompile`: a broken pattern, valid IR with other results: every
//!   `arith.addf` becomes an `arith.subf` (what `--check-each` must catch).

use ir::pass::{Pass, PassInfo, PassOptions, PassStats};
use ir::{Builder, Context, Diagnostic};

/// The pass: fails by error or by panic.
pub struct TestFailure {
    pub panic: bool,
}

impl Pass for TestFailure {
    fn name(&self) -> &'static str {
        if self.panic {
            "test-panic"
        } else {
            "test-fail"
        }
    }
    fn run(&mut self, ctx: &mut Context, _: &mut PassStats) -> Result<(), Diagnostic> {
        if self.panic {
            panic!("test-panic: a deliberate internal error");
        }
        let first = ctx.iter_block(ctx.top).next();
        Err(match first {
            Some(f) => Diagnostic::at_op(ctx, f, "test-fail: a deliberate pass failure"),
            None => ir::pass::pass_error("test-fail: a deliberate pass failure"),
        })
    }
}

/// `test-miscompile`: every `arith.addf` becomes an `arith.subf`.
pub struct TestMiscompile;

impl Pass for TestMiscompile {
    fn name(&self) -> &'static str {
        "test-miscompile"
    }
    fn run(&mut self, ctx: &mut Context, stats: &mut PassStats) -> Result<(), Diagnostic> {
        for op in ctx.walk_all() {
            if !ctx.alive(op) || !ctx.is(op, "arith.addf") {
                continue;
            }
            let operands = ctx.operands(op).to_vec();
            let ty = ctx.ty(ctx.results(op)[0]).clone();
            let mut b = Builder::before(ctx, op);
            let st = b.state("arith.subf", &operands, &[ty], vec![]);
            let new = b.create_raw(st);
            let r = ctx.results(new)[0];
            ctx.replace_op(op, &[r]);
            stats.add("broken", 1);
        }
        Ok(())
    }
}

/// Registration records of `test-fail`, `test-panic` and `test-miscompile`.
pub fn infos() -> [PassInfo; 3] {
    fn fail(o: &PassOptions) -> Result<Box<dyn Pass>, String> {
        o.check_known("test-fail", &[])?;
        Ok(Box::new(TestFailure { panic: false }))
    }
    fn miscompile(o: &PassOptions) -> Result<Box<dyn Pass>, String> {
        o.check_known("test-miscompile", &[])?;
        Ok(Box::new(TestMiscompile))
    }
    fn panic(o: &PassOptions) -> Result<Box<dyn Pass>, String> {
        o.check_known("test-panic", &[])?;
        Ok(Box::new(TestFailure { panic: true }))
    }
    [
        PassInfo {
            name: "test-fail",
            description: "(test) fail with an error at the first function",
            options: &[],
            create: fail,
        },
        PassInfo {
            name: "test-panic",
            description: "(test) panic",
            options: &[],
            create: panic,
        },
        PassInfo {
            name: "test-miscompile",
            description: "(test) turn every arith.addf into arith.subf",
            options: &[],
            create: miscompile,
        },
    ]
}
