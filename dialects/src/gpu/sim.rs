//! Interpreter semantics of the `gpu` dialect: a kernel launch runs every
//! block of the grid, one after another, and the threads of a block in
//! *lockstep between synchronisation points*, as CPU implementations of
//! CUDA do (the kernel body is cut at its barriers and shuffles).
//!
//! Each simulated thread has its own [`Interp`] (its own values) whose
//! [`Interp::ambient`] is a [`ThreadCx`]: its thread and block ids and the
//! block's workgroup buffers. Every thread runs the body up to the next
//! top-level `gpu.barrier` or `gpu.shuffle` (they stand only at the top
//! level: see the verifier in [`super`]); then a shuffle's results are
//! computed from the operands of all the threads of each warp, and every
//! thread goes on past it. Within a segment the threads run one after
//! another, so a race between threads that a barrier does not order gives
//! a deterministic answer here, but code that relies on it is wrong on a GPU.

use std::cell::RefCell;
use std::rc::Rc;

use rustc_hash::FxHashMap;
use smallvec::{smallvec, SmallVec};

use ir::interp::{Interp, RtValue, RunError, Stop};
use ir::{Context, OpId, Type};

use super::{shuffle_source, MAX_BLOCK, WARP};
use crate::arr::{buffer, index, zeroed_buffer};
use crate::gen::Monoid;
use crate::util::as_size;

type Res = Result<SmallVec<[RtValue; 2]>, RunError>;

/// A real device behind the host ops (`gpu.alloc`, `gpu.memcpy`,
/// `gpu.dealloc`, `gpu.launch_func`). When the host interpreter's
/// [`Interp::ambient`] is a [`DeviceCx`], these ops go to it instead of the
/// simulation; device buffers are then whatever values the device hands
/// out (typically [`RtValue::Opaque`]). Errors are messages reported at the op.
pub trait Device {
    /// A zeroed buffer of `n` elements of scalar type `elem`.
    fn alloc(&self, elem: &Type, n: usize) -> Result<RtValue, String>;
    /// Copies all of `src` into `dst` (a device buffer and a host `arr`,
    /// `vec` or `mat` (its row-major entries) as the source, a host `arr` as
    /// the destination, or two device buffers) of element type `elem`.
    fn memcpy(&self, dst: &RtValue, src: &RtValue, elem: &Type) -> Result<(), String>;
    /// The number of elements of a device buffer.
    fn len(&self, buf: &RtValue) -> Result<usize, String>;
    /// Releases a device buffer.
    fn dealloc(&self, buf: &RtValue) -> Result<(), String>;
    /// Runs kernel `name` (parameter types `types`) on `grid` blocks of
    /// `block` threads and waits for it.
    fn launch(
        &self,
        name: &str,
        grid: usize,
        block: usize,
        args: &[RtValue],
        types: &[Type],
    ) -> Result<(), String>;
}

/// The ambient value that routes the host ops to a [`Device`].
pub struct DeviceCx(pub Rc<dyn Device>);

fn device(it: &Interp) -> Option<Rc<dyn Device>> {
    it.ambient
        .as_ref()
        .and_then(|a| a.downcast_ref::<DeviceCx>())
        .map(|d| d.0.clone())
}

fn elem_type(ctx: &Context, v: ir::ValueId) -> Type {
    ctx.ty(v).elem().cloned().unwrap_or(Type::I64)
}

/// The simulated thread an interpreter runs as.
pub struct ThreadCx {
    pub thread: i64,
    pub block: i64,
    pub block_dim: i64,
    pub grid_dim: i64,
    /// The block's workgroup buffers, by the `gpu.workgroup_alloc` op.
    pub shared: Rc<RefCell<FxHashMap<OpId, RtValue>>>,
}

fn thread_cx<'i>(it: &'i Interp, op: OpId) -> Result<&'i ThreadCx, RunError> {
    it.ambient
        .as_ref()
        .and_then(|a| a.downcast_ref::<ThreadCx>())
        .ok_or_else(|| {
            RunError::at(
                it.ctx,
                op,
                "runs only inside a kernel launched by 'gpu.launch_func'",
            )
        })
}

pub(super) fn interp_id(it: &mut Interp, op: OpId, _: &[RtValue]) -> Res {
    let t = thread_cx(it, op)?;
    let x = it.ctx.attr(op, "dimension").and_then(|a| a.as_str()) == Some("x");
    let v = match (it.ctx.op_name(op), x) {
        ("gpu.thread_id", true) => t.thread,
        ("gpu.block_id", true) => t.block,
        ("gpu.block_dim", true) => t.block_dim,
        ("gpu.grid_dim", true) => t.grid_dim,
        ("gpu.thread_id" | "gpu.block_id", false) => 0,
        _ => 1,
    };
    Ok(smallvec![RtValue::Int(v)])
}

/// `gpu.barrier` and `gpu.shuffle` run only under [`interp_launch`], which
/// stops every thread before them.
pub(super) fn interp_sync(it: &mut Interp, op: OpId, _: &[RtValue]) -> Res {
    thread_cx(it, op)?;
    Err(RunError::at(
        it.ctx,
        op,
        "must stand directly in the body of the launched kernel",
    ))
}

/// A zeroed buffer of `n` elements of `op`'s result element type.
fn new_buffer(ctx: &Context, op: OpId, n: usize) -> Result<RtValue, RunError> {
    zeroed_buffer(ctx, op, n, &elem_type(ctx, ctx.result(op, 0)))
}

pub(super) fn interp_workgroup_alloc(it: &mut Interp, op: OpId, _: &[RtValue]) -> Res {
    let ctx = it.ctx;
    let shared = thread_cx(it, op)?.shared.clone();
    let mut map = shared.borrow_mut();
    if let Some(v) = map.get(&op) {
        return Ok(smallvec![v.clone()]);
    }
    let n = ctx
        .attr(op, "size")
        .and_then(|a| a.as_int())
        .unwrap_or(0)
        .max(0) as usize;
    let v = new_buffer(ctx, op, n)?;
    map.insert(op, v.clone());
    Ok(smallvec![v])
}

/// An atomic op on element `args[1]` of array `args[0]`: `new(old)` is the
/// value to write (`None`: none); returns the old value.
fn read_modify_write(
    ctx: &ir::Context,
    op: OpId,
    args: &[RtValue],
    new: impl FnOnce(&RtValue) -> Result<Option<RtValue>, RunError>,
) -> Res {
    let mut a = buffer(ctx, op, &args[0])?
        .try_borrow_mut()
        .map_err(|_| RunError::at(ctx, op, "array is already borrowed"))?;
    let i = index(ctx, op, &args[1], a.len())?;
    let old = a[i].clone();
    if let Some(x) = new(&old)? {
        a[i] = x;
    }
    Ok(smallvec![old])
}

pub(super) fn interp_atomic(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let ctx = it.ctx;
    let m = match ctx.attr(op, "kind").and_then(|k| k.as_str()) {
        Some("add") => Monoid::Add,
        Some("min") => Monoid::Min,
        _ => Monoid::Max,
    };
    let ty = ctx.ty(ctx.result(op, 0)).clone();
    read_modify_write(ctx, op, args, |old| {
        m.apply(&ty, old, &args[2])
            .map(Some)
            .ok_or_else(|| RunError::at(ctx, op, "operands do not match the element type"))
    })
}

pub(super) fn interp_cas(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    read_modify_write(it.ctx, op, args, |old| {
        let equal = old.as_int().is_some() && old.as_int() == args[2].as_int();
        Ok(equal.then(|| args[3].clone()))
    })
}

pub(super) fn interp_alloc(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let n = as_size(it.ctx, op, &args[0])?;
    if let Some(d) = device(it) {
        let elem = elem_type(it.ctx, it.ctx.result(op, 0));
        let b = d.alloc(&elem, n).map_err(|e| RunError::at(it.ctx, op, e))?;
        return Ok(smallvec![b]);
    }
    if super::alloc_is_uninit(it.ctx, op) {
        let elem = elem_type(it.ctx, it.ctx.result(op, 0));
        return Ok(smallvec![crate::arr::uninit_buffer(it.ctx, op, n, &elem)?]);
    }
    Ok(smallvec![new_buffer(it.ctx, op, n)?])
}

/// `gpu.pack_rows(vs)`: the entries of the rows one after another, and the
/// row ends, in two fresh buffers (device buffers under a [`Device`]).
pub(super) fn interp_pack_rows(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let ctx = it.ctx;
    let RtValue::Vec(rows) = &args[0] else {
        return Err(RunError::at(ctx, op, "operand is not a vector"));
    };
    let mut data = Vec::new();
    let mut ends = Vec::with_capacity(rows.len());
    for r in rows.iter() {
        let RtValue::Vec(r) = r else {
            return Err(RunError::at(ctx, op, "a row is not a vector"));
        };
        data.extend(r.iter().cloned());
        ends.push(RtValue::Int(data.len() as i64));
    }
    let elem = elem_type(ctx, ctx.result(op, 0));
    let parts = [(data, elem), (ends, Type::Index)];
    let mut out: SmallVec<[RtValue; 2]> = SmallVec::new();
    if let Some(d) = device(it) {
        for (vals, t) in parts {
            let b = d
                .alloc(&t, vals.len())
                .map_err(|e| RunError::at(ctx, op, e))?;
            d.memcpy(&b, &RtValue::Vec(Rc::new(vals)), &t)
                .map_err(|e| RunError::at(ctx, op, e))?;
            out.push(b);
        }
        return Ok(out);
    }
    for (vals, _) in parts {
        out.push(RtValue::Arr(Rc::new(RefCell::new(vals))));
    }
    Ok(out)
}

/// `gpu.unpack_rows(data, ends)`: the rows `data[ends[i-1]..ends[i]]`,
/// read back from device buffers under a [`Device`]. Faults unless the
/// ends never decrease and the last is the number of entries.
pub(super) fn interp_unpack_rows(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let ctx = it.ctx;
    let host = |k: usize| -> Result<Vec<RtValue>, RunError> {
        let Some(d) = device(it) else {
            return Ok(buffer(ctx, op, &args[k])?.borrow().clone());
        };
        let n = d.len(&args[k]).map_err(|e| RunError::at(ctx, op, e))?;
        let h = RtValue::Arr(Rc::new(RefCell::new(vec![RtValue::Int(0); n])));
        let t = elem_type(ctx, ctx.operand(op, k));
        d.memcpy(&h, &args[k], &t)
            .map_err(|e| RunError::at(ctx, op, e))?;
        let RtValue::Arr(a) = h else { unreachable!() };
        let v = a.borrow().clone();
        Ok(v)
    };
    let data = host(0)?;
    let ends = host(1)?;
    let mut rows = Vec::with_capacity(ends.len());
    let mut start = 0usize;
    for e in &ends {
        let end = e
            .as_int()
            .ok_or_else(|| RunError::at(ctx, op, "expected an integer row end"))?;
        if end < start as i64 || end > data.len() as i64 {
            return Err(RunError::at(
                ctx,
                op,
                format!(
                    "row ends out of order: {end} after {start}, with {} entries",
                    data.len()
                ),
            ));
        }
        let end = end as usize;
        rows.push(RtValue::Vec(Rc::new(data[start..end].to_vec())));
        start = end;
    }
    if start != data.len() {
        return Err(RunError::at(
            ctx,
            op,
            format!("the rows end at {start}, not at the {} entries", data.len()),
        ));
    }
    Ok(smallvec![RtValue::Vec(Rc::new(rows))])
}

pub(super) fn interp_memcpy(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let ctx = it.ctx;
    if let Some(d) = device(it) {
        let elem = elem_type(ctx, ctx.operand(op, 0));
        d.memcpy(&args[0], &args[1], &elem)
            .map_err(|e| RunError::at(ctx, op, e))?;
        return Ok(smallvec![]);
    }
    let src: Vec<RtValue> = match &args[1] {
        RtValue::Vec(v) => v.as_ref().clone(),
        RtValue::Arr(a) => a.borrow().clone(),
        RtValue::Mat(m) => m.data.clone(),
        _ => {
            return Err(RunError::at(
                ctx,
                op,
                "source is not a buffer, vector or matrix",
            ))
        }
    };
    let mut dst = buffer(ctx, op, &args[0])?
        .try_borrow_mut()
        .map_err(|_| RunError::at(ctx, op, "array is already borrowed"))?;
    if dst.len() != src.len() {
        return Err(RunError::at(
            ctx,
            op,
            format!(
                "size mismatch: copying {} elements into a buffer of {}",
                src.len(),
                dst.len()
            ),
        ));
    }
    dst.clone_from_slice(&src);
    Ok(smallvec![])
}

pub(super) fn interp_dealloc(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let ctx = it.ctx;
    if let Some(d) = device(it) {
        d.dealloc(&args[0]).map_err(|e| RunError::at(ctx, op, e))?;
        return Ok(smallvec![]);
    }
    let mut a = buffer(ctx, op, &args[0])?
        .try_borrow_mut()
        .map_err(|_| RunError::at(ctx, op, "array is already borrowed"))?;
    *a = Vec::new();
    Ok(smallvec![])
}

/// Largest grid the simulation accepts (CUDA's x-dimension limit).
const MAX_GRID: usize = (1 << 31) - 1;

/// `gpu.launch_func`: runs the kernel on every block of the grid.
pub(super) fn interp_launch(it: &mut Interp, op: OpId, args: &[RtValue]) -> Res {
    let ctx = it.ctx;
    let grid = as_size(ctx, op, &args[0])?;
    let block = as_size(ctx, op, &args[1])?;
    if !(1..=MAX_BLOCK as usize).contains(&block) {
        return Err(RunError::at(
            ctx,
            op,
            format!("block size {block} is not between 1 and {MAX_BLOCK}"),
        ));
    }
    if !(1..=MAX_GRID).contains(&grid) {
        return Err(RunError::at(
            ctx,
            op,
            format!("grid size {grid} is not between 1 and {MAX_GRID}"),
        ));
    }
    let name = ctx
        .attr(op, "kernel")
        .and_then(|a| a.as_symbol())
        .unwrap_or("");
    let Some(kernel) = ctx.lookup_symbol(name) else {
        return Err(RunError::at(ctx, op, format!("no kernel named '@{name}'")));
    };
    if let Some(d) = device(it) {
        let types = crate::func::function_type(ctx, kernel)
            .map(|(ins, _)| ins.to_vec())
            .unwrap_or_default();
        d.launch(name, grid, block, &args[2..], &types)
            .map_err(|e| RunError::at(ctx, op, e))?;
        return Ok(smallvec![]);
    }
    run_kernel(ctx, op, kernel, grid, block, &args[2..])?;
    Ok(smallvec![])
}

/// Runs kernel `kernel` (a `func.func` marked `gpu.kernel`) on `grid`
/// blocks of `block` threads (both already checked against the limits)
/// with arguments `kargs`, the simulated way (module doc). A fault inside
/// the kernel is reported at its op; a mismatch of the arguments or a
/// divergence at a barrier at `at` (the launch, or the kernel itself when
/// compiled host code launched it).
pub fn run_kernel(
    ctx: &Context,
    at: OpId,
    kernel: OpId,
    grid: usize,
    block: usize,
    kargs: &[RtValue],
) -> Result<(), RunError> {
    let op = at;
    // The simulated threads step through one block (stopping at barriers):
    // a kernel of several blocks would end at its first branch.
    if ctx.has_cfg(kernel) {
        return Err(RunError::at(
            ctx,
            op,
            "a kernel of several blocks (branches between blocks) is not supported by the simulation",
        ));
    }
    let body = ctx.op_block(kernel, 0);
    if ctx.block_args(body).len() != kargs.len() {
        return Err(RunError::at(
            ctx,
            op,
            "argument count does not match the kernel",
        ));
    }
    let is_sync = |o: OpId| ctx.is(o, "gpu.barrier") || ctx.is(o, "gpu.shuffle");
    let mut threads: Vec<Interp> = (0..block).map(|_| Interp::new(ctx)).collect();
    for b in 0..grid {
        let shared = Rc::new(RefCell::new(FxHashMap::default()));
        for (t, th) in threads.iter_mut().enumerate() {
            th.ambient = Some(Rc::new(ThreadCx {
                thread: t as i64,
                block: b as i64,
                block_dim: block as i64,
                grid_dim: grid as i64,
                shared: shared.clone(),
            }));
            th.bind_args(body, kargs);
        }
        let mut from = None;
        loop {
            let mut at: Option<OpId> = None;
            for (t, th) in threads.iter_mut().enumerate() {
                let stop = th.run_until(body, from, Some(&is_sync))?;
                let here = match stop {
                    Stop::At(o) => Some(o),
                    Stop::Returned(_) => None,
                };
                if t > 0 && here != at {
                    return Err(RunError::at(
                        ctx,
                        op,
                        "threads of a block diverged at a barrier or shuffle",
                    ));
                }
                at = here;
            }
            let Some(sync) = at else { break };
            if ctx.is(sync, "gpu.shuffle") {
                shuffle_block(ctx, sync, &mut threads)?;
            }
            from = ctx.op(sync).next;
        }
    }
    Ok(())
}

/// Computes a shuffle's results for every thread of a block.
fn shuffle_block(ctx: &Context, op: OpId, threads: &mut [Interp]) -> Result<(), RunError> {
    let mode = ctx
        .attr(op, "mode")
        .and_then(|a| a.as_str())
        .unwrap_or("idx");
    let operand = |th: &Interp, i: usize| -> Result<RtValue, RunError> {
        th.get(ctx.operand(op, i))
            .cloned()
            .ok_or_else(|| RunError::at(ctx, op, "operand has no value"))
    };
    let mut xs = Vec::with_capacity(threads.len());
    let mut lanes = Vec::with_capacity(threads.len());
    for th in threads.iter() {
        xs.push(operand(th, 0)?);
        let off = operand(th, 1)?.as_int().unwrap_or(0);
        let width = operand(th, 2)?.as_int().unwrap_or(WARP);
        lanes.push((off, width));
    }
    let n = threads.len() as i64;
    for (t, th) in threads.iter_mut().enumerate() {
        let t = t as i64;
        let lane = t % WARP;
        let base = t - lane;
        let (off, width) = lanes[t as usize];
        let (src, ok) = shuffle_source(mode, lane, off, width, (n - base).min(WARP));
        th.set(ctx.result(op, 0), xs[(base + src) as usize].clone());
        th.set(ctx.result(op, 1), RtValue::Bool(ok));
    }
    Ok(())
}
