//! The second pass of a chunked scan in a kernel (issue 41, item 3; issue
//! 42, item 10): a thread per chunk.
//!
//! A `vec.scan` with a combiner region lowers (`dialects::vec_combine::
//! chunked`) to the partials of its chunks (a `gen.loop`, a kernel like any
//! other), their offsets (a short host loop over at most 256 partials), and
//! a second pass at the top level of host code: an `scf.forall` over the
//! chunks, marked `l0.left_fold`, whose iteration `c` folds chunk `c` from
//! its offset and stores each running value. Its body loads the offsets'
//! arrays and stores the output arrays (one per leaf field of the element
//! type), both allocated on the host by the lowering. Chunk `c` stores only
//! the elements of its own range `[c*cs, min(n, c*cs+cs))`, so the
//! iterations are independent, as the `scf.forall` says: the CPU runs them
//! on every core, and here a kernel thread runs each.
//!
//! The kernel `@f_kN(nc, captures..., loaded..., stored...)` is a
//! grid-stride loop over the chunks whose body is the `scf.forall`'s. On
//! the host the offsets' arrays are copied to the device before the launch
//! and the outputs back after it. The outputs are not copied to the device
//! first: the chunks cover `[0, n)`, so every element is stored.

use ir::clone::ValueMap;
use ir::{Builder, Context, OpId, Type, ValueId};

use dialects::vec_combine::SEQUENTIAL_ATTR;
use dialects::{arr, gpu};

use super::kernel::{
    copy_per_index, finish, new_kernel, prologue, shaped_reads_to_arr, vec_reads_to_arr,
};
use super::{
    captures_to_device, dalloc, dalloc_written, host_start, kernel_captures, kernel_name,
    GpuOptions, HostStart,
};

/// A chunk loop a kernel runs.
pub(super) struct ChunkPlan {
    /// Host arrays the body loads (a scan's offsets; a histogram's
    /// destination and tables): copied to the device before the launch.
    loaded: Vec<ValueId>,
    /// Host arrays the body stores (a scan's outputs; a histogram's
    /// destination and tables): copied back after it.
    stored: Vec<ValueId>,
    /// Values from outside the loop that its body reads.
    captures: Vec<ValueId>,
}

/// Whether `l` is a chunked scan's second pass (`None`: it is not), and
/// then how a kernel runs it or why none does (the text of a
/// `--remarks=gpu` remark).
pub(super) fn plan(ctx: &Context, l: OpId) -> Option<Result<ChunkPlan, String>> {
    if !ctx.is(l, "scf.forall")
        || ctx.attr(l, SEQUENTIAL_ATTR).is_none()
        || ctx.operands(l).len() != 1
        || !ctx.results(l).is_empty()
    {
        return None;
    }
    Some(check(ctx, l))
}

fn check(ctx: &Context, l: OpId) -> Result<ChunkPlan, String> {
    let mut loaded = Vec::new();
    let mut stored = Vec::new();
    for op in ctx.walk_nested(l) {
        let atomic = ctx.is(op, "gpu.atomic_rmw") || ctx.is(op, "gpu.atomic_cas");
        let store = ctx.is(op, "arr.store");
        if !(store || atomic || ctx.is(op, "arr.load")) {
            continue;
        }
        let a = ctx.operand(op, 0);
        let outside = !ctx.value_block(a).is_some_and(|b| ctx.block_in_op(b, l));
        if !(outside && super::arrays::fresh(ctx, a)) {
            return Err(
                "its body reads or writes an array other than its own offsets, tables and outputs"
                    .into(),
            );
        }
        let elem = ctx.ty(a).elem().cloned().unwrap_or(Type::Index);
        if !super::scalar(&elem) {
            return Err(format!(
                "its arrays hold '{elem}' elements (kernels store scalars of 32 and 64 bits, and i1)"
            ));
        }
        if (store || atomic) && !stored.contains(&a) {
            stored.push(a);
        }
        if !store && !loaded.contains(&a) {
            loaded.push(a);
        }
    }
    let own = own(&loaded, &stored);
    let mut captures = Vec::new();
    super::body_ok(ctx, l, l, &mut captures, &own, None, &[])?;
    Ok(ChunkPlan {
        loaded,
        stored,
        captures,
    })
}

/// The arrays a chunk loop loads or stores, each once: its kernel's
/// parameters after the captures.
fn own(loaded: &[ValueId], stored: &[ValueId]) -> Vec<ValueId> {
    let mut own = loaded.to_vec();
    own.extend(stored.iter().filter(|a| !loaded.contains(a)));
    own
}

/// Whether every element of host array `a` is undefined when chunk loop
/// `l` starts: `a` is an `arr.alloc {uninit}` of `l`'s block and nothing
/// between the two uses it. Then its device buffer, which the kernel
/// stores and which is copied back over `a`, need not be cleared either:
/// an element the kernel leaves is as undefined as it was on the host (a
/// scan's outputs, which the chunks cover in full).
fn undefined_before(ctx: &Context, a: ValueId, l: OpId) -> bool {
    let Some(d) = ctx.def_op(a) else {
        return false;
    };
    if !ctx.is(d, "arr.alloc")
        || ctx.attr(d, dialects::arr::UNINIT).is_none()
        || ctx.op(d).parent != ctx.op(l).parent
    {
        return false;
    }
    let Some(blk) = ctx.op(l).parent else {
        return false;
    };
    let between = ctx
        .iter_block(blk)
        .skip_while(|&o| o != d)
        .skip(1)
        .take_while(|&o| o != l);
    for op in between {
        if std::iter::once(op)
            .chain(ctx.walk_nested(op))
            .any(|o| ctx.operands(o).contains(&a))
        {
            return false;
        }
    }
    true
}

/// Replaces chunk loop `l` (in host function `f`) by a kernel and its
/// launch; returns the kernels built (1).
pub(super) fn offload(
    ctx: &mut Context,
    f: OpId,
    l: OpId,
    p: &ChunkPlan,
    opts: &GpuOptions,
    seq: &mut u32,
) -> u64 {
    let n = ctx.operand(l, 0);
    let own = own(&p.loaded, &p.stored);
    let (caps, cap_types, shapes) = kernel_captures(ctx, l, &p.captures);
    let name = kernel_name(ctx, f, seq);

    let mut params = vec![Type::Index];
    params.extend(cap_types);
    params.extend(own.iter().map(|&a| ctx.ty(a).clone()));
    let (k, kb) = new_kernel(ctx, f, l, &name, &params);
    let args = ctx.block_args(kb).to_vec();
    let mut map = ValueMap::new();
    for (&v, &a) in caps.iter().chain(&own).zip(&args[1..]) {
        map.insert(v, a);
    }
    let body = ctx.op_block(l, 0);
    let ops = ctx.block_ops(body);
    let iv = ctx.block_args(body)[0];
    let mut b = Builder::at_end(ctx, kb);
    b.loc = b.ctx.loc(l);
    let t = prologue(&mut b);
    copy_per_index(&mut b, &t, args[0], &ops, &[iv], &mut map, |_, _| {});
    finish(&mut b);
    vec_reads_to_arr(ctx, k);
    shaped_reads_to_arr(ctx, k, &shapes);

    let mut b = Builder::before(ctx, l);
    let HostStart { blk, grid, .. } = host_start(&mut b, n, opts);
    let mut dev = Vec::new();
    let mut launch = vec![n];
    captures_to_device(&mut b, &caps, &mut dev, &mut launch);
    let mut device_of = Vec::new();
    for &a in &own {
        let elem = b.ctx.ty(a).elem().cloned().expect("an array");
        let len = arr::len(&mut b, a);
        let d = if !p.loaded.contains(&a) && undefined_before(b.ctx, a, l) {
            dalloc_written(&mut b, &mut dev, len, elem)
        } else {
            dalloc(&mut b, &mut dev, len, elem)
        };
        if p.loaded.contains(&a) {
            gpu::memcpy(&mut b, d, a);
        }
        launch.push(d);
        device_of.push((a, d));
    }
    gpu::launch_func(&mut b, &name, grid, blk, &launch);
    for &(a, d) in &device_of {
        if p.stored.contains(&a) {
            gpu::memcpy(&mut b, a, d);
        }
    }
    for d in dev {
        gpu::dealloc(&mut b, d);
    }
    ctx.erase_op(l);
    1
}
