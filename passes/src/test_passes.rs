//! Passes that fail on purpose, for testing the pass manager's failure
//! paths (IR printing after a failure, crash reproducers, internal errors).
//! Like MLIR's `-test-*` passes they live in the tool, but [`crate::registry`]
//! registers them only when the environment variable `L0_TEST_PASSES` is
//! set, so users never see them.
//!
//! - `test-fail`: returns an error at the first function.
//! - `test-panic`: panics (an internal error).

use ir::pass::{Pass, PassInfo, PassOptions, PassStats};
use ir::{Context, Diagnostic};

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

/// Registration records of `test-fail` and `test-panic`.
pub fn infos() -> [PassInfo; 2] {
    fn fail(o: &PassOptions) -> Result<Box<dyn Pass>, String> {
        o.check_known("test-fail", &[])?;
        Ok(Box::new(TestFailure { panic: false }))
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
    ]
}
