//! `vec.len/get`, `mat.from/rows/cols/get/row` and the `arr` ops. Every
//! element access is bounds-checked with the interpreter's message.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{I32, I64, I8};
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Type as CType, Value};

use ir::{Context, Diagnostic, OpId, ValueId};

use super::{trusted, FnCx};
use crate::abi::{self, HDR_CAP, HDR_DATA, HDR_LEN, PTR};

pub(super) fn emit(cx: &mut FnCx, op: OpId, name: &str) -> Result<(), Diagnostic> {
    let ctx = cx.ctx;
    let ops = ctx.operands(op);
    let res = ctx.results(op).first().copied();
    let elem_of = |v: ValueId| abi::elem(ctx.ty(v)).unwrap_or(I8);
    match (name, res) {
        ("vec.len", Some(r)) => {
            let p = cx.get(ops[0]);
            cx.set(r, &[p[1]]);
        }
        ("vec.get", Some(r)) => {
            let p = cx.get(ops[0]);
            let i = cx.get1(ops[1]);
            bounds(cx, op, i, p[1], "index {0} out of bounds for length {1}")?;
            let x = load_elem(cx, elem_of(ops[0]), p[0], i);
            cx.set(r, &[x]);
        }
        ("mat.from", Some(r)) => {
            let v = cx.get(ops[0]);
            let (rows, cols) = (cx.get1(ops[1]), cx.get1(ops[2]));
            for n in [rows, cols] {
                let ok = cx.b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, n, 0);
                cx.check(ok, op, "'mat.from' op negative size {0}".into(), &[n])?;
            }
            let ok = shape_ok(cx, v[1], rows, cols);
            let msg = "'mat.from' op shape {0}x{1} does not match a vector of length {2}";
            cx.check(ok, op, msg.into(), &[rows, cols, v[1]])?;
            cx.set(r, &[v[0], rows, cols]);
        }
        ("mat.rows", Some(r)) => {
            let m = cx.get(ops[0]);
            cx.set(r, &[m[1]]);
        }
        ("mat.cols", Some(r)) => {
            let m = cx.get(ops[0]);
            cx.set(r, &[m[2]]);
        }
        ("mat.get", Some(r)) => {
            let m = cx.get(ops[0]);
            let (i, j) = (cx.get1(ops[1]), cx.get1(ops[2]));
            bounds(
                cx,
                op,
                i,
                m[1],
                "row index {0} out of bounds for length {1}",
            )?;
            bounds(
                cx,
                op,
                j,
                m[2],
                "column index {0} out of bounds for length {1}",
            )?;
            let row = cx.b.ins().imul(i, m[2]);
            let k = cx.b.ins().iadd(row, j);
            let x = load_elem(cx, elem_of(ops[0]), m[0], k);
            cx.set(r, &[x]);
        }
        ("mat.row", Some(r)) => {
            let m = cx.get(ops[0]);
            let i = cx.get1(ops[1]);
            bounds(
                cx,
                op,
                i,
                m[1],
                "row index {0} out of bounds for length {1}",
            )?;
            let k = cx.b.ins().imul(i, m[2]);
            let p = cx.elem_addr(m[0], k, elem_of(ops[0]).bytes());
            cx.set(r, &[p, m[2]]);
        }
        ("arr.alloc", Some(r)) => {
            let n = cx.get1(ops[0]);
            let ok = cx.b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, n, 0);
            cx.check(ok, op, "'arr.alloc' op negative size {0}".into(), &[n])?;
            let max = dialects::arr::MAX_ALLOC as i64;
            let ok = cx.b.ins().icmp_imm_s(IntCC::SignedLessThanOrEqual, n, max);
            cx.check(
                ok,
                op,
                "'arr.alloc' op allocation of {0} elements is too large".into(),
                &[n],
            )?;
            let es = cx.iconst(I64, elem_of(r).bytes() as i64);
            let h = cx.call_rt("l0rt_arr_new", &[I64, I64], &[PTR], &[n, es])?[0];
            let ok = cx.b.ins().icmp_imm_s(IntCC::NotEqual, h, 0);
            cx.check(
                ok,
                op,
                "'arr.alloc' op cannot allocate {0} elements".into(),
                &[n],
            )?;
            cx.set(r, &[h]);
        }
        ("arr.len", Some(r)) => {
            let h = cx.get1(ops[0]);
            let n = cx.b.ins().load(I64, trusted(), h, HDR_LEN);
            cx.set(r, &[n]);
        }
        ("arr.load", Some(r)) => {
            let (h, i) = (cx.get1(ops[0]), cx.get1(ops[1]));
            let data = arr_checked(cx, op, h, i)?;
            let x = load_elem(cx, elem_of(ops[0]), data, i);
            cx.set(r, &[x]);
        }
        ("arr.store", None) => {
            let (h, i, x) = (cx.get1(ops[0]), cx.get1(ops[1]), cx.get1(ops[2]));
            let data = arr_checked(cx, op, h, i)?;
            let a = cx.elem_addr(data, i, elem_of(ops[0]).bytes());
            cx.b.ins().store(trusted(), x, a, 0);
        }
        ("arr.push", None) => push(cx, op, elem_of(ops[0]))?,
        ("arr.free", None) => {
            let h = cx.get1(ops[0]);
            if is_last_use(ctx, ops[0], op) {
                cx.call_rt("l0rt_arr_free", &[PTR], &[], &[h])?;
            } else {
                // Used again later (a fault in the interpreter too): keep an
                // empty header so that later accesses fail their bounds checks.
                let data = cx.b.ins().load(PTR, trusted(), h, HDR_DATA);
                cx.call_rt("l0rt_free", &[PTR], &[], &[data])?;
                let zero = cx.iconst(I64, 0);
                for off in [HDR_DATA, HDR_LEN, HDR_CAP] {
                    cx.b.ins().store(trusted(), zero, h, off);
                }
            }
        }
        ("arr.from_vec", Some(r)) => {
            let v = cx.get(ops[0]);
            let es = cx.iconst(I64, elem_of(ops[0]).bytes() as i64);
            let h = cx.call_rt("l0rt_arr_from", &[PTR, I64, I64], &[PTR], &[v[0], v[1], es])?[0];
            cx.check_alloc(h, op)?;
            cx.set(r, &[h]);
        }
        ("arr.to_vec", Some(r)) => {
            let h = cx.get1(ops[0]);
            let data = cx.b.ins().load(PTR, trusted(), h, HDR_DATA);
            let len = cx.b.ins().load(I64, trusted(), h, HDR_LEN);
            if is_last_use(ctx, ops[0], op) {
                cx.call_rt("l0rt_free", &[PTR], &[], &[h])?;
                cx.set_owned(r, &[data, len]);
            } else {
                cx.set(r, &[data, len]);
                let copy = cx.copy_buffer(r, op)?;
                cx.set_owned(r, &copy);
            }
        }
        ("arr.find_or_insert", Some(r)) => {
            let (h, k) = (cx.get1(ops[0]), cx.get1(ops[1]));
            let t = elem_of(ops[0]);
            let bits = key_bits(cx, k, t);
            let es = cx.iconst(I64, t.bytes() as i64);
            let j = cx.call_rt(
                "l0rt_find_or_insert",
                &[PTR, I64, I64],
                &[I64],
                &[h, bits, es],
            )?[0];
            let ok = cx.b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, j, 0);
            cx.check(ok, op, "'arr.find_or_insert' op out of memory".into(), &[])?;
            cx.set(r, &[j]);
        }
        _ => return Err(cx.unsupported(op)),
    }
    Ok(())
}

/// Faults at `op` unless `0 <= i < len` (one unsigned compare).
fn bounds(cx: &mut FnCx, op: OpId, i: Value, len: Value, what: &str) -> Result<(), Diagnostic> {
    let ok = cx.b.ins().icmp(IntCC::UnsignedLessThan, i, len);
    let msg = format!("'{}' op {what}", cx.ctx.op_name(op));
    cx.check(ok, op, msg, &[i, len])
}

/// Bounds-checks `i` against the length of `arr` header `h`; returns its data pointer.
fn arr_checked(cx: &mut FnCx, op: OpId, h: Value, i: Value) -> Result<Value, Diagnostic> {
    let len = cx.b.ins().load(I64, trusted(), h, HDR_LEN);
    bounds(
        cx,
        op,
        i,
        len,
        "index {0} is out of bounds for an array of length {1}",
    )?;
    Ok(cx.b.ins().load(PTR, trusted(), h, HDR_DATA))
}

fn load_elem(cx: &mut FnCx, t: CType, data: Value, i: Value) -> Value {
    let a = cx.elem_addr(data, i, t.bytes());
    cx.b.ins().load(t, trusted(), a, 0)
}

/// `rows * cols == len` without overflow: `cols == 0 ? len == 0 : len % cols == 0 && len / cols == rows`.
fn shape_ok(cx: &mut FnCx, len: Value, rows: Value, cols: Value) -> Value {
    let zero_c = cx.b.ins().icmp_imm_s(IntCC::Equal, cols, 0);
    let one = cx.iconst(I64, 1);
    let safe = cx.b.ins().select(zero_c, one, cols);
    let q = cx.b.ins().udiv(len, safe);
    let rem = cx.b.ins().urem(len, safe);
    let exact = cx.b.ins().icmp_imm_s(IntCC::Equal, rem, 0);
    let qr = cx.b.ins().icmp(IntCC::Equal, q, rows);
    let nz_ok = cx.b.ins().band(exact, qr);
    let z_ok = cx.b.ins().icmp_imm_s(IntCC::Equal, len, 0);
    cx.b.ins().select(zero_c, z_ok, nz_ok)
}

/// `arr.push(a, x)`: grows through the runtime when full, then stores inline.
fn push(cx: &mut FnCx, op: OpId, t: CType) -> Result<(), Diagnostic> {
    let ops = cx.ctx.operands(op);
    let (h, x) = (cx.get1(ops[0]), cx.get1(ops[1]));
    let len = cx.b.ins().load(I64, trusted(), h, HDR_LEN);
    let cap = cx.b.ins().load(I64, trusted(), h, HDR_CAP);
    let full = cx.b.ins().icmp(IntCC::SignedGreaterThanOrEqual, len, cap);
    let grow = cx.b.create_block();
    let cont = cx.b.create_block();
    cx.b.set_cold_block(grow);
    cx.brif(full, grow, &[], cont, &[]);
    cx.b.switch_to_block(grow);
    let es = cx.iconst(I64, t.bytes() as i64);
    let st = cx.call_rt("l0rt_arr_grow", &[PTR, I64], &[I8], &[h, es])?[0];
    cx.check(st, op, "'arr.push' op out of memory".into(), &[])?;
    cx.jump(cont, &[]);
    cx.b.switch_to_block(cont);
    let data = cx.b.ins().load(PTR, trusted(), h, HDR_DATA);
    let a = cx.elem_addr(data, len, t.bytes());
    cx.b.ins().store(trusted(), x, a, 0);
    let len1 = cx.b.ins().iadd_imm_s(len, 1);
    cx.b.ins().store(trusted(), len1, h, HDR_LEN);
    Ok(())
}

/// The bit pattern of key `k` (of element type `t`) zero-extended to i64.
fn key_bits(cx: &mut FnCx, k: Value, t: CType) -> Value {
    let int = if t.is_float() {
        let it = if t.bytes() == 8 { I64 } else { I32 };
        cx.b.ins().bitcast(it, MemFlagsData::new(), k)
    } else {
        k
    };
    if cx.b.func.dfg.value_type(int) == I64 {
        int
    } else {
        cx.b.ins().uextend(I64, int)
    }
}

/// Whether `op` (`to_vec` or `free`) is the last use of arr `a`: it is not inside a
/// loop nested below `a`'s block, and every other use of `a` sits in an op
/// of that block strictly before the one containing `op`.
fn is_last_use(ctx: &Context, a: ValueId, op: OpId) -> bool {
    let Some(home) = ctx.value_block(a) else {
        return false;
    };
    let Some(anchor) = ancestor_in(ctx, op, home, true) else {
        return false;
    };
    ctx.uses(a).iter().filter(|u| u.op != op).all(|u| {
        ancestor_in(ctx, u.op, home, false)
            .is_some_and(|ua| ua != anchor && ctx.is_before_in_block(ua, anchor))
    })
}

/// The ancestor of `op` (or `op` itself) in block `home`; `None` when there
/// is none, or, with `no_loops`, when a loop lies between.
fn ancestor_in(ctx: &Context, mut op: OpId, home: ir::BlockId, no_loops: bool) -> Option<OpId> {
    loop {
        let blk = ctx.op(op).parent?;
        if blk == home {
            return Some(op);
        }
        let parent = ctx.block_parent_op(blk)?;
        if no_loops && matches!(ctx.op_name(parent), "scf.for" | "scf.while") {
            return None;
        }
        op = parent;
    }
}
