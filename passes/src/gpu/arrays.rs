//! Host arrays that a loop body loads and stores (issue 41, item 3: loops
//! with explicit effects, as written at the `arr` level or left by a pass).
//!
//! A `gen.loop`'s iterations are independent (IR-SPEC, `gen`), but a body
//! that stores into an array from outside only keeps the sequential
//! loop's meaning on many threads where no two iterations touch one
//! element that either writes. [`own_arrays`] accepts exactly that shape:
//! - every array is a fresh buffer (`arr.alloc` or `arr.from_vec`, so two
//!   of them never alias) of scalars, defined outside the loop;
//! - an array the body stores into is stored and loaded only at the
//!   loop's index itself: iteration `i` owns element `i`;
//! - an array the body only loads may be loaded anywhere.
//!
//! Kernels take these arrays as device buffers: copied in before the
//! launches (elements no iteration stores keep their values) and, where
//! stored, copied back after them ([`copy_back_stored`]).
//!
//! A loop whose scan is read back (`gen.running`) runs its body twice, in
//! the totals and the main kernel of [`super::running`]. Loads may run
//! twice. Stores run only in the main kernel (the totals kernel drops
//! them, [`erase_stores`]), so an array the body stores into must not
//! also be loaded there ([`loads_and_stores`]): the totals kernel would
//! read it without the stores before it.

use ir::{Builder, Context, OpId, Type, ValueId};

use dialects::{gen, gpu};

/// The arrays from outside loop `l` that its body loads or stores, if they
/// have the shape of the module documentation (`Err`: why not).
pub(super) fn own_arrays(ctx: &Context, l: OpId) -> Result<Vec<ValueId>, String> {
    let iv = gen::induction_var(ctx, l);
    let mut arrays: Vec<ValueId> = Vec::new();
    let mut stored: Vec<ValueId> = Vec::new();
    for op in ctx.walk_nested(l) {
        let store = ctx.is(op, "arr.store");
        if !(store || ctx.is(op, "arr.load")) {
            continue;
        }
        let a = ctx.operand(op, 0);
        if ctx.value_block(a).is_some_and(|b| ctx.block_in_op(b, l)) {
            continue;
        }
        if !fresh(ctx, a) {
            return Err("its body loads or stores an array that may alias another (a kernel takes only fresh buffers)".into());
        }
        let elem = ctx.ty(a).elem().cloned();
        if !elem.as_ref().is_some_and(super::scalar) {
            return Err("its body loads or stores an array of non-scalars".into());
        }
        if !arrays.contains(&a) {
            arrays.push(a);
        }
        if store && !stored.contains(&a) {
            stored.push(a);
        }
    }
    for &a in &stored {
        let own_index = ctx.uses(a).iter().all(|u| {
            let inside = ctx.op(u.op).parent.is_some_and(|b| ctx.block_in_op(b, l));
            !inside
                || (u.index == 0
                    && matches!(ctx.op_name(u.op), "arr.load" | "arr.store")
                    && ctx.operand(u.op, 1) == iv)
        });
        if !own_index {
            return Err("its body stores into an array at an index other than its own iteration's, or reads it there (iterations would race)".into());
        }
    }
    Ok(arrays)
}

/// Whether array `a` is a buffer of its own (`arr.alloc` or
/// `arr.from_vec`), which no other array value aliases.
pub(super) fn fresh(ctx: &Context, a: ValueId) -> bool {
    ctx.def_op(a)
        .is_some_and(|d| ctx.is(d, "arr.alloc") || ctx.is(d, "arr.from_vec"))
}

/// Whether loop `l`'s body stores into array `a`.
pub(super) fn stores_into(ctx: &Context, l: OpId, a: ValueId) -> bool {
    ctx.uses(a).iter().any(|u| {
        ctx.is(u.op, "arr.store")
            && u.index == 0
            && ctx.op(u.op).parent.is_some_and(|b| ctx.block_in_op(b, l))
    })
}

/// Whether loop `l`'s body both loads and stores array `a`.
pub(super) fn loads_and_stores(ctx: &Context, l: OpId, a: ValueId) -> bool {
    let used_by = |name: &str| {
        ctx.uses(a).iter().any(|u| {
            ctx.is(u.op, name)
                && u.index == 0
                && ctx.op(u.op).parent.is_some_and(|b| ctx.block_in_op(b, l))
        })
    };
    used_by("arr.store") && used_by("arr.load")
}

/// Erases the stores of kernel `k` into its parameters `params` (the
/// device buffers of the loop's arrays): the totals kernel of
/// [`super::running`], which runs the body only for its folds.
pub(super) fn erase_stores(ctx: &mut Context, k: OpId, params: &[ValueId]) {
    let stores: Vec<OpId> = ctx
        .walk_nested(k)
        .into_iter()
        .filter(|&o| ctx.is(o, "arr.store") && params.contains(&ctx.operand(o, 0)))
        .collect();
    for o in stores {
        ctx.erase_op(o);
    }
}

/// After the launches of loop `l`: copies each array of `caps` that the
/// body stored into back from its device buffer, the launch argument at
/// the same position of `args` ([`super::captures_to_device`]).
pub(super) fn copy_back_stored(b: &mut Builder, l: OpId, caps: &[ValueId], args: &[ValueId]) {
    for (&v, &d) in caps.iter().zip(args) {
        if matches!(b.ctx.ty(v), Type::Arr(_)) && stores_into(b.ctx, l, v) {
            gpu::memcpy(b, v, d);
        }
    }
}
