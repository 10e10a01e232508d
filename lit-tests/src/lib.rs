//! Regression-test harness for L0.
//!
//! * [`checkfile`] parses LLVM FileCheck directives (`CHECK:`, `CHECK-NEXT:`, ...) from a check
//!   file into [`checkfile::Directive`]s.
//! * [`translate`] turns them into the syntax of the `filecheck` crate and runs them, splitting
//!   the input at `CHECK-LABEL:` matches like LLVM FileCheck does.
//! * [`runlines`] parses `// RUN:` lines of `.ir` tests and performs lit's substitutions.
//!
//! The binaries `l0-filecheck` and `l0-not` and the integration test `tests/lit.rs` are built on
//! these modules; see the crate README for how to write a test.

#![warn(missing_docs)]

pub mod checkfile;
pub mod runlines;
pub mod translate;

#[cfg(test)]
mod tests;
