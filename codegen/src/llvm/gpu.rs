//! The `gpu` dialect's kernel ops in LLVM IR for NVPTX (the `llvm.nvvm.*`
//! intrinsics, as MLIR's `nvvm` dialect names them):
//!
//! | op | LLVM |
//! |---|---|
//! | `gpu.thread_id/block_id/block_dim/grid_dim` | `llvm.nvvm.read.ptx.sreg.{tid,ctaid,ntid,nctaid}.{x,y,z}`, zero-extended to `i64` |
//! | `gpu.barrier` | `llvm.nvvm.barrier0` (`bar.sync 0`) |
//! | `gpu.shuffle` | `llvm.nvvm.shfl.sync.idx.i32` from a source lane computed as the interpreter does, over the lanes of the warp that exist; 64-bit values as two halves, `i1`/`f32` through `i32` |
//! | `gpu.workgroup_alloc` | an `addrspace(3)` (shared) global per op, seen through a stack header like any `arr`; the block's threads zero it, then `bar.sync 0` |
//! | `gpu.atomic_rmw` | `atomicrmw add/fadd/min/max` (bounds-checked like `arr.store`) |
//!
//! The host-side ops (`gpu.launch_func`, `gpu.alloc`, ...) are not
//! translated: the host part of a program runs on the host
//! (`opt-tool`'s launcher).

use ir::{Diagnostic, OpId, Type};

use super::mem::{arr_checked, elem_of};
use super::translate::{scalar, FnCx};
use super::writer::{Mem, Ty};
use crate::abi;

/// Whether op `name` may stand in a kernel.
pub(super) fn device_op(name: &str) -> bool {
    name.starts_with("arith.")
        || matches!(
            name,
            "scf.if"
                | "scf.for"
                | "scf.while"
                | "scf.yield"
                | "scf.condition"
                | "scf.assert"
                | "cf.assert"
                | "arr.load"
                | "arr.store"
                | "arr.len"
                | "gpu.thread_id"
                | "gpu.block_id"
                | "gpu.block_dim"
                | "gpu.grid_dim"
                | "gpu.barrier"
                | "gpu.shuffle"
                | "gpu.workgroup_alloc"
                | "gpu.atomic_rmw"
                | "gpu.atomic_cas"
        )
}

/// An `arr` header on the stack for `len` elements at generic `data`.
pub(super) fn header(cx: &mut FnCx, data: &str, len: &str) -> String {
    let h = cx.w.stack(24);
    cx.w.store(Ty::Ptr, data, &h, abi::HDR_DATA as i64, Mem::Header);
    cx.w.store(Ty::I64, len, &h, abi::HDR_LEN as i64, Mem::Header);
    cx.w.store(Ty::I64, len, &h, abi::HDR_CAP as i64, Mem::Header);
    h
}

pub(super) fn emit(cx: &mut FnCx, op: OpId, name: &str) -> Result<(), Diagnostic> {
    let ctx = cx.ctx;
    if !cx.device {
        return Err(cx.unsupported(op));
    }
    let ops = ctx.operands(op);
    match name {
        "gpu.thread_id" | "gpu.block_id" | "gpu.block_dim" | "gpu.grid_dim" => {
            let dim = ctx
                .attr(op, "dimension")
                .and_then(|a| a.as_str())
                .unwrap_or("x");
            let reg = match name {
                "gpu.thread_id" => "tid",
                "gpu.block_id" => "ctaid",
                "gpu.block_dim" => "ntid",
                _ => "nctaid",
            };
            let f = format!("llvm.nvvm.read.ptx.sreg.{reg}.{dim}");
            cx.declare(&f, || format!("declare i32 @{f}()"));
            let v = cx.w.val(format!("call i32 @{f}()"));
            let v = cx.w.val(format!("zext i32 {v} to i64"));
            cx.set(ctx.result(op, 0), &[v]);
        }
        "gpu.barrier" => {
            cx.declare("llvm.nvvm.barrier0", || {
                "declare void @llvm.nvvm.barrier0()".into()
            });
            cx.w.line("call void @llvm.nvvm.barrier0()");
        }
        "gpu.shuffle" => shuffle(cx, op),
        "gpu.workgroup_alloc" => {
            let Some(Type::Arr(e)) = Some(ctx.ty(ctx.result(op, 0))) else {
                return Err(cx.unsupported(op));
            };
            let t = scalar(e).ok_or_else(|| cx.unsupported(op))?;
            let n = ctx
                .attr(op, "size")
                .and_then(|a| a.as_int())
                .unwrap_or(0)
                .max(1);
            let g = format!("@l0_shared_{}", op.index());
            let tn = t.name();
            cx.declare(&g, || {
                format!("{g} = internal addrspace(3) global [{n} x {tn}] undef, align 8")
            });
            let data = cx.w.val(format!(
                "addrspacecast i8 addrspace(3)* bitcast ([{n} x {tn}] addrspace(3)* {g} to i8 addrspace(3)*) to i8*"
            ));
            zero_shared(cx, &data, t, n);
            let len = ctx
                .attr(op, "size")
                .and_then(|a| a.as_int())
                .unwrap_or(0)
                .to_string();
            let h = header(cx, &data, &len);
            cx.set(ctx.result(op, 0), &[h]);
        }
        "gpu.atomic_rmw" => {
            let (h, i, x) = (cx.get1(ops[0]), cx.get1(ops[1]), cx.get1(ops[2]));
            let e = elem_of(ctx.ty(ops[0]));
            let t = e.scalar.ok_or_else(|| cx.unsupported(op))?;
            let float = matches!(t, Ty::F32 | Ty::F64);
            let kind =
                match (ctx.attr(op, "kind").and_then(|a| a.as_str()), float) {
                    (Some("add"), true) => "fadd",
                    (Some("add"), false) => "add",
                    (Some("min"), false) => "min",
                    (Some("max"), false) => "max",
                    _ => return Err(Diagnostic::at_op(
                        ctx,
                        op,
                        "float 'min'/'max' atomics are not supported by LLVM 14's NVPTX backend",
                    )),
                };
            let data = arr_checked(cx, op, &h, &i);
            let a = cx.w.elem_addr(&data, &i, e.size, e.scalar);
            let tn = t.name();
            let p = cx.w.val(format!("bitcast i8* {a} to {tn}*"));
            let old =
                cx.w.val(format!("atomicrmw {kind} {tn}* {p}, {tn} {x} monotonic"));
            cx.set(ctx.result(op, 0), &[old]);
        }
        "gpu.atomic_cas" => {
            let h = cx.get1(ops[0]);
            let (i, cmp, x) = (cx.get1(ops[1]), cx.get1(ops[2]), cx.get1(ops[3]));
            let e = elem_of(ctx.ty(ops[0]));
            let t = e.scalar.ok_or_else(|| cx.unsupported(op))?;
            let data = arr_checked(cx, op, &h, &i);
            let a = cx.w.elem_addr(&data, &i, e.size, e.scalar);
            let tn = t.name();
            let p = cx.w.val(format!("bitcast i8* {a} to {tn}*"));
            let pair = cx.w.val(format!(
                "cmpxchg {tn}* {p}, {tn} {cmp}, {tn} {x} monotonic monotonic"
            ));
            let old = cx.w.val(format!("extractvalue {{ {tn}, i1 }} {pair}, 0"));
            cx.set(ctx.result(op, 0), &[old]);
        }
        _ => return Err(cx.unsupported(op)),
    }
    Ok(())
}

/// The calling thread's linear index in its block and the block's size in
/// threads, as `i32` values.
fn block_thread(cx: &mut FnCx) -> (String, String) {
    let sreg = |cx: &mut FnCx, reg: &str| {
        let f = format!("llvm.nvvm.read.ptx.sreg.{reg}");
        cx.declare(&f, || format!("declare i32 @{f}()"));
        cx.w.val(format!("call i32 @{f}()"))
    };
    let (tx, ty, tz) = (sreg(cx, "tid.x"), sreg(cx, "tid.y"), sreg(cx, "tid.z"));
    let (nx, ny, nz) = (sreg(cx, "ntid.x"), sreg(cx, "ntid.y"), sreg(cx, "ntid.z"));
    let l = cx.w.val(format!("mul i32 {ny}, {tz}"));
    let l = cx.w.val(format!("add i32 {l}, {ty}"));
    let l = cx.w.val(format!("mul i32 {nx}, {l}"));
    let lin = cx.w.val(format!("add i32 {l}, {tx}"));
    let n = cx.w.val(format!("mul i32 {nx}, {ny}"));
    let n = cx.w.val(format!("mul i32 {n}, {nz}"));
    (lin, n)
}

/// Zeroes the `len` elements of type `t` of a `gpu.workgroup_alloc` buffer
/// at `data`, the block's threads taking every `n`-th element, then waits
/// at a barrier: shared memory starts undefined on the hardware, and the
/// op's buffer starts zeroed (as in the interpreter). The op stands
/// directly in the kernel's body, so every thread of the block reaches
/// this barrier.
fn zero_shared(cx: &mut FnCx, data: &str, t: Ty, len: i64) {
    let (lin, n) = block_thread(cx);
    let head = cx.w.block(&[Ty::I32]);
    let body = cx.w.block(&[]);
    let done = cx.w.block(&[]);
    cx.w.jump(&head, &[lin]);
    let k = cx.w.start(&head).remove(0);
    let more = cx.w.val(format!("icmp ult i32 {k}, {len}"));
    cx.w.brif(&more, &body, &[], &done, &[]);
    cx.w.start(&body);
    let k64 = cx.w.val(format!("zext i32 {k} to i64"));
    let a = cx.w.elem_addr(data, &k64, t.bytes(), Some(t));
    let tn = t.name();
    let p = cx.w.val(format!("bitcast i8* {a} to {tn}*"));
    cx.w.line(format!(
        "store {tn} zeroinitializer, {tn}* {p}, align {}",
        t.bytes()
    ));
    let next = cx.w.val(format!("add i32 {k}, {n}"));
    cx.w.jump(&head, &[next]);
    cx.w.start(&done);
    cx.declare("llvm.nvvm.barrier0", || {
        "declare void @llvm.nvvm.barrier0()".into()
    });
    cx.w.line("call void @llvm.nvvm.barrier0()");
}

/// The calling thread's lane and the lanes of its warp that exist, as
/// `i32` values `(member mask, lane, existing lanes)`.
///
/// A block whose size is not a multiple of 32 ends in a partial warp, whose
/// missing lanes must be neither named in the member mask nor read: on the
/// hardware such a read gives an undefined value with the valid flag set.
fn warp_lanes(cx: &mut FnCx) -> (String, String, String) {
    let (lin, n) = block_thread(cx);
    // Lanes of this warp that exist: min(32, n - warp base), at least 1.
    let base = cx.w.val(format!("and i32 {lin}, -32"));
    let left = cx.w.val(format!("sub i32 {n}, {base}"));
    let full = cx.w.val(format!("icmp uge i32 {left}, 32"));
    let exist = cx.w.val(format!("select i1 {full}, i32 32, i32 {left}"));
    let bits = cx.w.val(format!("shl i32 1, {exist}"));
    let bits = cx.w.val(format!("sub i32 {bits}, 1"));
    let mask = cx.w.val(format!("select i1 {full}, i32 -1, i32 {bits}"));
    let lane = cx.w.val(format!("and i32 {lin}, 31"));
    (mask, lane, exist)
}

/// `gpu.shuffle` through `shfl.sync.idx`: the source lane and the valid
/// flag are computed as the interpreter computes them
/// ([`dialects::gpu::shuffle_source`]: segments of any width clamped to
/// `1..=32`, a negative offset, a lane outside the segment or past the last
/// thread of the block give the thread's own value and `false`), so the
/// hardware only moves the value. PTX's own `down`/`bfly` modes would
/// disagree for widths that are not powers of two, offsets of 32 or more
/// (only their low 5 bits count) and the missing lanes of a partial warp.
fn shuffle(cx: &mut FnCx, op: OpId) {
    let ctx = cx.ctx;
    let ops = ctx.operands(op);
    let mode = ctx
        .attr(op, "mode")
        .and_then(|a| a.as_str())
        .unwrap_or("idx");
    let (x, off, width) = (cx.get1(ops[0]), cx.get1(ops[1]), cx.get1(ops[2]));
    let (mask, lane, exist) = warp_lanes(cx);
    let lo = cx.w.val(format!("icmp slt i32 {width}, 1"));
    let w = cx.w.val(format!("select i1 {lo}, i32 1, i32 {width}"));
    let hi = cx.w.val(format!("icmp sgt i32 {w}, 32"));
    let w = cx.w.val(format!("select i1 {hi}, i32 32, i32 {w}"));
    let r = cx.w.val(format!("urem i32 {lane}, {w}"));
    let base = cx.w.val(format!("sub i32 {lane}, {r}"));
    // Offsets far out of range wrap in i32, to a lane below the segment.
    let src = match mode {
        "down" => cx.w.val(format!("add i32 {lane}, {off}")),
        "xor" => cx.w.val(format!("xor i32 {lane}, {off}")),
        _ => cx.w.val(format!("add i32 {base}, {off}")),
    };
    let end = cx.w.val(format!("add i32 {base}, {w}"));
    let c1 = cx.w.val(format!("icmp sge i32 {off}, 0"));
    let c2 = cx.w.val(format!("icmp sge i32 {src}, {base}"));
    let c3 = cx.w.val(format!("icmp slt i32 {src}, {end}"));
    let c4 = cx.w.val(format!("icmp slt i32 {src}, {exist}"));
    let ok = cx.w.val(format!("and i1 {c1}, {c2}"));
    let ok = cx.w.val(format!("and i1 {ok}, {c3}"));
    let ok = cx.w.val(format!("and i1 {ok}, {c4}"));
    let from = cx.w.val(format!("select i1 {ok}, i32 {src}, i32 {lane}"));
    let f = "llvm.nvvm.shfl.sync.idx.i32";
    cx.declare(f, || format!("declare i32 @{f}(i32, i32, i32, i32)"));
    let one = |cx: &mut FnCx, v: &str| -> String {
        cx.w.val(format!(
            "call i32 @{f}(i32 {mask}, i32 {v}, i32 {from}, i32 31)"
        ))
    };
    let t = scalar(ctx.ty(ops[0])).unwrap_or(Ty::I32);
    let v = match t {
        Ty::I32 => one(cx, &x),
        Ty::I8 => {
            let z = cx.w.val(format!("zext i8 {x} to i32"));
            let r = one(cx, &z);
            cx.w.val(format!("trunc i32 {r} to i8"))
        }
        Ty::F32 => {
            let z = cx.w.val(format!("bitcast float {x} to i32"));
            let r = one(cx, &z);
            cx.w.val(format!("bitcast i32 {r} to float"))
        }
        _ => {
            let bits = if t == Ty::F64 {
                cx.w.val(format!("bitcast double {x} to i64"))
            } else {
                x.clone()
            };
            let lo = cx.w.val(format!("trunc i64 {bits} to i32"));
            let hi = cx.w.val(format!("lshr i64 {bits}, 32"));
            let hi = cx.w.val(format!("trunc i64 {hi} to i32"));
            let rl = one(cx, &lo);
            let rh = one(cx, &hi);
            let rl = cx.w.val(format!("zext i32 {rl} to i64"));
            let rh = cx.w.val(format!("zext i32 {rh} to i64"));
            let rh = cx.w.val(format!("shl i64 {rh}, 32"));
            let r = cx.w.val(format!("or i64 {rh}, {rl}"));
            if t == Ty::F64 {
                cx.w.val(format!("bitcast i64 {r} to double"))
            } else {
                r
            }
        }
    };
    let ok8 = cx.bool8(&ok);
    cx.set(ctx.result(op, 0), &[v]);
    cx.set(ctx.result(op, 1), &[ok8]);
}
