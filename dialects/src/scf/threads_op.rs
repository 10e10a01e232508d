//! `scf.forall_threads`: how many threads an `scf.forall` started at this
//! point may use, so that a lowering can choose between a sequential and a
//! parallel form of the same computation (a user-defined scan is one pass
//! with two interleaved folds on one thread, and two passes over chunks on
//! several: `crate::vec_combine::chunked`).
//!
//! ```text
//! %t = scf.forall_threads : index
//! ```
//!
//! The value is a property of the run, like `--threads` itself: `--threads`
//! (every core by default) in native code, 1 in the interpreter (which runs
//! an `scf.forall` in order), and the most threads of a kernel launch in
//! host code lowered for the GPU (`lower{target=gpu}` replaces it by that
//! constant, so that the parallel form is the one offloaded). Programs that
//! select with it must compute the same results either way; the op itself
//! is pure (it may be hoisted, merged and erased) but never folded.

use smallvec::smallvec;

use ir::interp::{Interp, RtValue, RunError};
use ir::{Builder, Context, OpId, Type, ValueId};

pub(super) fn verify(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = ctx.ty(ctx.result(op, 0));
    if *t != Type::Index {
        return Err(format!("result must be of index type, but got '{t}'"));
    }
    Ok(())
}

/// The interpreter runs every `scf.forall` in order, on one thread.
pub(super) fn interpret(
    _: &mut Interp,
    _: OpId,
    _: &[RtValue],
) -> Result<smallvec::SmallVec<[RtValue; 2]>, RunError> {
    Ok(smallvec![RtValue::Int(1)])
}

/// Builds `scf.forall_threads`.
pub fn build(b: &mut Builder) -> ValueId {
    b.op1("scf.forall_threads", &[], Type::Index, vec![])
}
