//! The `gpu` dialect's host ops in compiled code (issue 41), translated
//! once for both backends through [`HostEmit`] (as `crate::half` does for
//! its sequences): each op becomes a call into the GPU runtime
//! ([`crate::runtime::gpu`]) and a fault check on its result.
//!
//! | op | call |
//! |---|---|
//! | `gpu.alloc(n) : arr<T>` | `h = l0rt_gpu_alloc(n, sizeof T, uninit)`, faulting when null |
//! | `gpu.memcpy(dst, src)` | `l0rt_gpu_memcpy(dst, src_hdr, src_data, src_len, sizeof T, read_only)`: an `arr` source as its header, a `vec` as `(data, len)`, a `mat` as `(data, rows * cols)`; `read_only` 1 when no kernel writes `dst` ([`read_only_copy`], for `--resident`) |
//! | `gpu.dealloc(a)` | `l0rt_gpu_dealloc(a)` |
//! | `gpu.unpack_rows(data, ends) : vec<vec<T>>` | `(l0rt_gpu_unpack_rows(data, ends, sizeof T), l0rt_gpu_rows(ends))`, faulting when the first is null; an owned nested vector |
//! | `gpu.pack_rows(vs) : vec<vec<T>>` | `d = l0rt_gpu_pack_rows(rows, n, sizeof T)` and `e = l0rt_gpu_row_ends(rows, n)` (`vs` as `(rows, n)`, its rows vector descriptors), each faulting when null |
//! | `gpu.launch_func(grid, block, args...) {kernel = @k}` | `l0rt_gpu_launch(k, grid, block, slots, n)`: `k` the kernel's number in module order ([`crate::runtime::gpu::kernels`]), `slots` a stack array of one 8-byte slot per argument (an `arr` as its header, a scalar in the low bytes) |
//!
//! Every call but `l0rt_gpu_alloc` returns an `i8` status, 0 on success.
//! A fault site's message is `'<op>' op `; the host completes it with the
//! runtime's recorded message.

use ir::{Context, Diagnostic, OpId, Type, ValueId};

/// The C types of the runtime calls' parameters and results.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum RtTy {
    I8,
    I64,
    Ptr,
}

/// What the translation needs from a backend, on its own values.
pub(crate) trait HostEmit {
    type V: Clone;
    fn ctx(&self) -> &Context;
    /// The first (for the operands here, the only or the data) part of `v`.
    fn part(&mut self, v: ValueId, k: usize) -> Self::V;
    /// Binds the one-part result `r`.
    fn bind(&mut self, r: ValueId, x: Self::V);
    /// Binds buffer result `r` to its parts, owned by the current block.
    fn bind_owned(&mut self, r: ValueId, xs: &[Self::V]);
    fn int(&mut self, x: i64) -> Self::V;
    fn null(&mut self) -> Self::V;
    fn mul(&mut self, a: Self::V, b: Self::V) -> Self::V;
    /// A stack array of 8-byte slots, slot `k` holding the one part of
    /// `vs[k]` in its low bytes; its address.
    fn slots(&mut self, vs: &[ValueId]) -> Self::V;
    /// Calls runtime function `name`.
    fn call(
        &mut self,
        name: &'static str,
        params: &[RtTy],
        ret: RtTy,
        args: &[Self::V],
    ) -> Result<Self::V, Diagnostic>;
    /// Faults at `op` with `template` unless the `i8` `status` is 0.
    fn fault_unless_zero(
        &mut self,
        status: Self::V,
        op: OpId,
        template: String,
    ) -> Result<(), Diagnostic>;
    /// Faults at `op` with `template` when pointer `p` is null.
    fn fault_if_null(&mut self, p: Self::V, op: OpId, template: String) -> Result<(), Diagnostic>;
}

/// The host ops of the `gpu` dialect.
pub(crate) fn is_host_op(name: &str) -> bool {
    matches!(
        name,
        "gpu.alloc"
            | "gpu.memcpy"
            | "gpu.dealloc"
            | "gpu.launch_func"
            | "gpu.pack_rows"
            | "gpu.unpack_rows"
    )
}

/// The element size in bytes of buffer type `t`.
fn elem_bytes(t: &Type) -> i64 {
    crate::abi::elem_layout(t).map_or(8, |e| e.size as i64)
}

/// Whether `gpu.memcpy` op `copy` fills a fresh device buffer from an
/// immutable host value (a `vec` or `mat`) and nothing writes that buffer
/// afterwards: its other uses are copies out of it, its `gpu.dealloc`, and
/// launches of kernels that only read the parameter (`arr.load`,
/// `arr.len`). Such a copy may share one device buffer across calls
/// ([`crate::runtime::gpu::resident`]).
pub(crate) fn read_only_copy(ctx: &Context, copy: OpId) -> bool {
    let (dst, src) = (ctx.operand(copy, 0), ctx.operand(copy, 1));
    if !matches!(ctx.ty(src), Type::Vec(_) | Type::Mat(_))
        || ctx.def_op_named(dst, "gpu.alloc").is_none()
    {
        return false;
    }
    ctx.uses(dst).iter().all(|u| {
        let name = ctx.op_name(u.op);
        (u.op == copy && u.index == 0)
            || (name == "gpu.memcpy" && u.index == 1)
            || name == "gpu.dealloc"
            || (name == "gpu.launch_func" && u.index >= 2 && {
                let kernel = ctx.attr(u.op, "kernel").and_then(|a| a.as_symbol());
                kernel
                    .and_then(|k| ctx.lookup_symbol(k))
                    .filter(|&k| !ctx.regions(k).is_empty())
                    .and_then(|k| {
                        ctx.block_args(ctx.op_block(k, 0))
                            .get(u.index as usize - 2)
                            .copied()
                    })
                    .is_some_and(|p| {
                        ctx.uses(p).iter().all(|v| {
                            (ctx.is(v.op, "arr.load") && v.index == 0) || ctx.is(v.op, "arr.len")
                        })
                    })
            })
    })
}

/// Translates host op `op` (one of [`is_host_op`]).
pub(crate) fn emit<E: HostEmit>(e: &mut E, op: OpId) -> Result<(), Diagnostic> {
    let ctx = e.ctx();
    let name = ctx.op_name(op).to_string();
    let ops = ctx.operands(op).to_vec();
    let site = format!("'{name}' op ");
    match name.as_str() {
        "gpu.alloc" => {
            let r = ctx.result(op, 0);
            let es = elem_bytes(ctx.ty(r));
            let uninit = dialects::gpu::alloc_is_uninit(ctx, op) as i64;
            let n = e.part(ops[0], 0);
            let es = e.int(es);
            let uninit = e.int(uninit);
            let h = e.call(
                "l0rt_gpu_alloc",
                &[RtTy::I64, RtTy::I64, RtTy::I64],
                RtTy::Ptr,
                &[n, es, uninit],
            )?;
            e.fault_if_null(h.clone(), op, site)?;
            e.bind(r, h);
        }
        "gpu.memcpy" => {
            let es = elem_bytes(ctx.ty(ops[0]));
            let src_ty = ctx.ty(ops[1]).clone();
            let read_only = read_only_copy(ctx, op) as i64;
            let dst = e.part(ops[0], 0);
            let (hdr, data, len) = match src_ty {
                Type::Arr(_) => {
                    let h = e.part(ops[1], 0);
                    (h, e.null(), e.int(0))
                }
                Type::Mat(_) => {
                    let (d, r, c) = (e.part(ops[1], 0), e.part(ops[1], 1), e.part(ops[1], 2));
                    let n = e.mul(r, c);
                    (e.null(), d, n)
                }
                _ => {
                    let (d, n) = (e.part(ops[1], 0), e.part(ops[1], 1));
                    (e.null(), d, n)
                }
            };
            let es = e.int(es);
            let ro = e.int(read_only);
            let st = e.call(
                "l0rt_gpu_memcpy",
                &[
                    RtTy::Ptr,
                    RtTy::Ptr,
                    RtTy::Ptr,
                    RtTy::I64,
                    RtTy::I64,
                    RtTy::I64,
                ],
                RtTy::I8,
                &[dst, hdr, data, len, es, ro],
            )?;
            e.fault_unless_zero(st, op, site)?;
        }
        "gpu.pack_rows" => {
            let es = elem_bytes(ctx.ty(ctx.result(op, 0)));
            let (r0, r1) = (ctx.result(op, 0), ctx.result(op, 1));
            let (rows, n) = (e.part(ops[0], 0), e.part(ops[0], 1));
            let es = e.int(es);
            let d = e.call(
                "l0rt_gpu_pack_rows",
                &[RtTy::Ptr, RtTy::I64, RtTy::I64],
                RtTy::Ptr,
                &[rows.clone(), n.clone(), es],
            )?;
            e.fault_if_null(d.clone(), op, site.clone())?;
            let ends = e.call(
                "l0rt_gpu_row_ends",
                &[RtTy::Ptr, RtTy::I64],
                RtTy::Ptr,
                &[rows, n],
            )?;
            e.fault_if_null(ends.clone(), op, site)?;
            e.bind(r0, d);
            e.bind(r1, ends);
        }
        "gpu.unpack_rows" => {
            let r = ctx.result(op, 0);
            let es = elem_bytes(ctx.ty(ops[0]));
            let (data, ends) = (e.part(ops[0], 0), e.part(ops[1], 0));
            let es = e.int(es);
            let rows = e.call(
                "l0rt_gpu_unpack_rows",
                &[RtTy::Ptr, RtTy::Ptr, RtTy::I64],
                RtTy::Ptr,
                &[data, ends.clone(), es],
            )?;
            e.fault_if_null(rows.clone(), op, site)?;
            let n = e.call("l0rt_gpu_rows", &[RtTy::Ptr], RtTy::I64, &[ends])?;
            e.bind_owned(r, &[rows, n]);
        }
        "gpu.dealloc" => {
            let h = e.part(ops[0], 0);
            let st = e.call("l0rt_gpu_dealloc", &[RtTy::Ptr], RtTy::I8, &[h])?;
            e.fault_unless_zero(st, op, site)?;
        }
        "gpu.launch_func" => {
            let kernel = ctx
                .attr(op, "kernel")
                .and_then(|a| a.as_symbol())
                .unwrap_or("");
            let Some(k) = crate::runtime::gpu::kernels(ctx)
                .iter()
                .position(|(_, n)| n == kernel)
            else {
                return Err(Diagnostic::at_op(
                    ctx,
                    op,
                    format!("no kernel named '@{kernel}'"),
                ));
            };
            let args = &ops[2..];
            let (grid, block) = (e.part(ops[0], 0), e.part(ops[1], 0));
            let slots = e.slots(args);
            let (k, n) = (e.int(k as i64), e.int(args.len() as i64));
            let st = e.call(
                "l0rt_gpu_launch",
                &[RtTy::I64, RtTy::I64, RtTy::I64, RtTy::Ptr, RtTy::I64],
                RtTy::I8,
                &[k, grid, block, slots, n],
            )?;
            e.fault_unless_zero(st, op, site)?;
        }
        _ => {
            return Err(Diagnostic::at_op(
                ctx,
                op,
                format!("'{name}' is not a host op of the gpu dialect"),
            ))
        }
    }
    Ok(())
}

/// Checks that host code uses a device buffer (a `gpu.alloc` result) only
/// where compiled code may: in the `gpu` host ops, in `arr.len`, and
/// passed on whole (through `scf.for`/`scf.while`/`scf.if`/
/// `scf.index_switch` results and carried values, `arith.select`, calls
/// and returns). Its data lives on the device, so an `arr.load`, a store
/// or a copy on the host would read or write device addresses: the
/// interpreter runs such a program (its device is the host), compiled code
/// refuses it with an error at the op, before running anything.
/// The buffers followed are those `f` allocates (a callee's own are
/// checked with the callee).
pub(crate) fn check_device_uses(ctx: &Context, f: OpId) -> Result<(), Diagnostic> {
    let mut device: rustc_hash::FxHashSet<ValueId> = Default::default();
    let mut work: Vec<ValueId> = ctx
        .walk_nested(f)
        .into_iter()
        .filter(|&op| ctx.is(op, "gpu.alloc") || ctx.is(op, "gpu.pack_rows"))
        .filter(|&op| !in_kernel(ctx, op))
        .flat_map(|op| ctx.results(op).to_vec())
        .collect();
    device.extend(work.iter().copied());
    let mut mark = |v: ValueId, work: &mut Vec<ValueId>| {
        if device.insert(v) {
            work.push(v);
        }
    };
    while let Some(v) = work.pop() {
        for u in ctx.uses(v).to_vec() {
            let (op, k) = (u.op, u.index as usize);
            let name = ctx.op_name(op);
            match name {
                "gpu.memcpy" | "gpu.dealloc" | "gpu.launch_func" | "gpu.unpack_rows"
                | "arr.len" => {}
                "arith.select" if k > 0 => mark(ctx.result(op, 0), &mut work),
                "scf.for" if k >= 3 => {
                    mark(ctx.block_args(ctx.op_block(op, 0))[k - 2], &mut work);
                    mark(ctx.result(op, k - 3), &mut work);
                }
                "scf.while" => mark(ctx.block_args(ctx.op_block(op, 0))[k], &mut work),
                "scf.condition" if k > 0 => {
                    let w = ctx.parent_op(op).expect("a condition stands in a while");
                    mark(ctx.block_args(ctx.op_block(w, 1))[k - 1], &mut work);
                    mark(ctx.result(w, k - 1), &mut work);
                }
                "scf.yield" => {
                    let p = ctx.parent_op(op).expect("a yield stands in an op");
                    if ctx.is(p, "scf.for") {
                        mark(ctx.block_args(ctx.op_block(p, 0))[k + 1], &mut work);
                    }
                    if ctx.is(p, "scf.while") {
                        // The after region's yield feeds the condition region.
                        mark(ctx.block_args(ctx.op_block(p, 0))[k], &mut work);
                    } else if k < ctx.results(p).len() {
                        mark(ctx.result(p, k), &mut work);
                    }
                }
                "func.call" => {
                    let callee = dialects::func::callee(ctx, op)
                        .and_then(|c| ctx.lookup_symbol(c))
                        .filter(|&f| !ctx.regions(f).is_empty());
                    match callee {
                        Some(f) => mark(ctx.block_args(ctx.op_block(f, 0))[k], &mut work),
                        None => return Err(device_use(ctx, op)),
                    }
                }
                "func.return" => {
                    let f = ctx.parent_op(op).expect("a return stands in a function");
                    let fname = dialects::func::func_name(ctx, f).unwrap_or("");
                    let calls = ctx.iter_block(ctx.top).flat_map(|g| ctx.walk_nested(g));
                    for c in calls {
                        if ctx.is(c, "func.call") && dialects::func::callee(ctx, c) == Some(fname) {
                            mark(ctx.result(c, k), &mut work);
                        }
                    }
                }
                _ => return Err(device_use(ctx, op)),
            }
        }
    }
    Ok(())
}

/// Whether `op` stands in a kernel.
fn in_kernel(ctx: &Context, mut op: OpId) -> bool {
    while let Some(p) = ctx.parent_op(op) {
        if dialects::gpu::is_kernel(ctx, p) {
            return true;
        }
        op = p;
    }
    false
}

fn device_use(ctx: &Context, op: OpId) -> Diagnostic {
    Diagnostic::at_op(
        ctx,
        op,
        format!(
            "'{}' uses a device buffer in host code, which compiled host code cannot do (copy it to the host with gpu.memcpy first, or run the host code with --backend=interp)",
            ctx.op_name(op)
        ),
    )
}
