//! One device copy of a host vector or matrix, and one packing of a nested
//! vector, per block (issue 41, item 3: data stays on the device). Offloading builds each loop's launch on its own, so two
//! kernels that read the same vector (a scan's partials and its second
//! pass, a map and a reduce of one input) each copy it to the device.

use ir::{Context, OpId, Type, ValueId};

use super::resident::{def_at_top, is_len_of, only_launched, top};

/// Where a block copies host vector `%v` into a fresh device buffer `%d1`
/// and later again into `%d2` (`%d = gpu.alloc (vec.len %v)`, `gpu.memcpy
/// %d, %v`; for a matrix, a buffer of `rows * cols` entries), and launches
/// only read either buffer (their kernels load from the parameter and
/// nothing else; checked), the second copy goes: `%d2`'s launches read
/// `%d1`, which is freed at the later of the two frees. A `vec` or `mat`
/// never changes, so both buffers hold the same elements. Returns the
/// copies removed (statistic `gpu-reused-copies`).
pub fn reuse_device_copies(ctx: &mut Context) -> u64 {
    let copies: Vec<OpId> = ctx
        .walk_all()
        .into_iter()
        .filter(|&op| ctx.is(op, "gpu.memcpy"))
        .collect();
    let mut n = 0;
    for c in copies {
        if ctx.alive(c) && reuse(ctx, c) {
            n += 1;
        }
    }
    let packs: Vec<OpId> = ctx
        .walk_all()
        .into_iter()
        .filter(|&op| ctx.is(op, "gpu.pack_rows"))
        .collect();
    for p in packs {
        if ctx.alive(p) && reuse_pack(ctx, p) {
            n += 1;
        }
    }
    n
}

/// The frees of the two buffers of `gpu.pack_rows` op `pack` at the top of
/// `block`, when launches only read them.
fn read_only_pack(ctx: &Context, pack: OpId, block: ir::BlockId) -> Option<[OpId; 2]> {
    if !top(ctx, pack, block) {
        return None;
    }
    let mut frees = [pack; 2];
    for (k, f) in frees.iter_mut().enumerate() {
        let d = ctx.result(pack, k);
        if ctx.uses(d).iter().any(|u| !top(ctx, u.op, block)) {
            return None;
        }
        *f = only_launched(ctx, d, block, &[], true)?;
    }
    Some(frees)
}

/// [`reuse_device_copies`] for a later `gpu.pack_rows` `pack2` of a nested
/// vector that the block packed before (as for copies: both read-only, the
/// earlier buffers freed at the later of the two frees).
fn reuse_pack(ctx: &mut Context, pack2: OpId) -> bool {
    let Some(block) = ctx.op(pack2).parent else {
        return false;
    };
    let Some(frees2) = read_only_pack(ctx, pack2, block) else {
        return false;
    };
    let v = ctx.operand(pack2, 0);
    let first = ctx.uses(v).iter().map(|u| u.op).find(|&p| {
        p != pack2
            && ctx.is(p, "gpu.pack_rows")
            && top(ctx, p, block)
            && ctx.is_before_in_block(p, pack2)
            && read_only_pack(ctx, p, block).is_some()
    });
    let Some(pack1) = first else {
        return false;
    };
    let frees1 = read_only_pack(ctx, pack1, block).expect("checked");
    for k in 0..2 {
        let (d1, d2) = (ctx.result(pack1, k), ctx.result(pack2, k));
        if ctx.is_before_in_block(frees1[k], frees2[k]) {
            ctx.erase_op(frees1[k]);
        } else {
            ctx.erase_op(frees2[k]);
        }
        ctx.replace_all_uses(d2, d1);
    }
    ctx.erase_op(pack2);
    true
}

/// A copy `gpu.memcpy %d, %v` of vector `%v` into a fresh read-only device
/// buffer of `%v`'s length at the top of `block`: `(alloc, free)` of `%d`.
fn read_only_copy(ctx: &Context, copy: OpId, block: ir::BlockId) -> Option<(OpId, OpId)> {
    let (d, v) = (ctx.operand(copy, 0), ctx.operand(copy, 1));
    if !matches!(ctx.ty(v), Type::Vec(_) | Type::Mat(_)) || !top(ctx, copy, block) {
        return None;
    }
    let alloc = def_at_top(ctx, d, "gpu.alloc", block)?;
    if !sized_as(ctx, ctx.operand(alloc, 0), v)
        || ctx.uses(d).iter().any(|u| !top(ctx, u.op, block))
    {
        return None;
    }
    let free = only_launched(ctx, d, block, &[(copy, 0)], true)?;
    Some((alloc, free))
}

/// Whether `size` is the element count of `v`: `vec.len %v`, or for a
/// matrix `mat.rows %v * mat.cols %v` (either order).
fn sized_as(ctx: &Context, size: ValueId, v: ValueId) -> bool {
    if is_len_of(ctx, size, v) {
        return true;
    }
    let of = |x: ValueId, name: &str| {
        ctx.def_op_named(x, name)
            .is_some_and(|d| ctx.operand(d, 0) == v)
    };
    ctx.def_op_named(size, "arith.muli").is_some_and(|p| {
        let (a, b) = (ctx.operand(p, 0), ctx.operand(p, 1));
        (of(a, "mat.rows") && of(b, "mat.cols")) || (of(a, "mat.cols") && of(b, "mat.rows"))
    })
}

/// [`reuse_device_copies`] for one later copy `copy2`.
fn reuse(ctx: &mut Context, copy2: OpId) -> bool {
    let Some(block) = ctx.op(copy2).parent else {
        return false;
    };
    let Some((alloc2, free2)) = read_only_copy(ctx, copy2, block) else {
        return false;
    };
    let v = ctx.operand(copy2, 1);
    let first = ctx.uses(v).iter().map(|u| u.op).find(|&c| {
        c != copy2
            && ctx.is(c, "gpu.memcpy")
            && ctx.operand(c, 1) == v
            && top(ctx, c, block)
            && ctx.is_before_in_block(c, copy2)
            && read_only_copy(ctx, c, block).is_some()
    });
    let Some(copy1) = first else {
        return false;
    };
    let (_, free1) = read_only_copy(ctx, copy1, block).expect("checked");
    let (d1, d2): (ValueId, ValueId) = (ctx.operand(copy1, 0), ctx.operand(copy2, 0));
    ctx.erase_op(copy2);
    ctx.replace_all_uses(d2, d1);
    ctx.erase_op(alloc2);
    if ctx.is_before_in_block(free1, free2) {
        ctx.erase_op(free1);
    } else {
        ctx.erase_op(free2);
    }
    true
}
