//! Which `in_bounds` proofs the backends trust, and the loop facts both
//! backends translate by ([`unit_step`]).
//!
//! Reads and writes proved in bounds (`in_bounds`, from `passes::bounds` or
//! the `gen` lowering) are compiled without a check. In the debug mode set
//! by [`set_keep_all_checks`] (`l0-opt --keep-all-checks`) both native
//! backends (and the PTX kernels) ignore the proofs and check every index,
//! so that a differential run can tell a wrong proof (the checked build
//! faults where the unchecked one read out of bounds) from a wrong
//! translation (both builds disagree with the interpreter).

use std::sync::atomic::{AtomicBool, Ordering};

use ir::{Context, OpId};

static KEEP_ALL_CHECKS: AtomicBool = AtomicBool::new(false);

/// Turns the debug mode that keeps every bounds check on or off (for
/// everything compiled afterwards in this process).
pub fn set_keep_all_checks(on: bool) {
    KEEP_ALL_CHECKS.store(on, Ordering::Relaxed);
}

/// Whether `op` may be compiled without its bounds check.
pub fn proved_in_bounds(ctx: &Context, op: OpId) -> bool {
    ctx.attr(op, "in_bounds").is_some() && !KEEP_ALL_CHECKS.load(Ordering::Relaxed)
}

/// Whether `scf.for` `op` steps by the constant 1. Inside such a loop
/// `iv < ub`, so `iv + 1` cannot overflow, and both backends continue while
/// `iv + 1 < ub` (the form LLVM's trip-count analysis expects, and one
/// compare of a value the loop computes anyway) instead of the
/// overflow-safe `step <u ub - iv` that any other step needs.
pub fn unit_step(ctx: &Context, op: OpId) -> bool {
    dialects::scf::constant_int(ctx, ctx.operand(op, 2)) == Some(1)
}
