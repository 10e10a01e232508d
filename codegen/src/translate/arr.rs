//! The `arr` ops. An `arr<T>` is a header pointer ([`crate::abi`]);
//! elements of any supported element type are loaded and stored part by
//! part ([`super::mem::load_elem`]). An `arr<vec<T>>` owns its element
//! vectors; an `arr<arr<T>>` only refers to its element arrays (see
//! [`super`] for the ownership rules).

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{I32, I64, I8};
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Type as CType, Value};

use ir::{Diagnostic, OpId, Type};

use super::mem::{bounds, elem_of, load_elem, store_elem};
use super::{trusted, FnCx};
use crate::abi::{self, Elem, HDR_CAP, HDR_DATA, HDR_LEN, PTR};
use crate::ownership::is_last_use;

pub(super) fn emit(cx: &mut FnCx, op: OpId, name: &str) -> Result<(), Diagnostic> {
    let ctx = cx.ctx;
    let ops = ctx.operands(op);
    let res = ctx.results(op).first().copied();
    match (name, res) {
        ("arr.alloc", Some(r)) => alloc(cx, op, r)?,
        ("arr.len", Some(r)) => {
            let h = cx.get1(ops[0]);
            let n = cx.b.ins().load(I64, trusted(), h, HDR_LEN);
            cx.set(r, &[n]);
        }
        ("arr.load", Some(r)) => {
            let (h, i) = (cx.get1(ops[0]), cx.get1(ops[1]));
            let data = arr_checked(cx, op, h, i)?;
            // An element vector is a borrowed view (the array owns it).
            let x = load_elem(cx, &elem_of(ctx.ty(ops[0])), data, i);
            cx.set(r, &x);
        }
        ("arr.store", None) => {
            let (h, i) = (cx.get1(ops[0]), cx.get1(ops[1]));
            let e = elem_of(ctx.ty(ops[0]));
            let data = arr_checked(cx, op, h, i)?;
            let x = cx.value_to_store(ops[2], op)?;
            let depth = abi::own_depth(ctx.ty(ops[0]));
            if depth > 0 {
                // The array owns the element vector it replaces.
                let old = load_elem(cx, &e, data, i);
                cx.drop_vecs(old[0], old[1], depth - 1)?;
            }
            store_elem(cx, &e, data, i, &x);
        }
        ("arr.push", None) => push(cx, op)?,
        ("arr.free", None) => free(cx, op)?,
        ("arr.from_vec", Some(r)) => {
            let v = cx.get(ops[0]);
            let t = ctx.ty(ops[0]);
            let (depth, es) = (abi::own_depth(t), abi::leaf_size(t) as i64);
            let es = cx.iconst(I64, es);
            let h = if cx.take_buffer(ops[0], op) {
                // The vector's last use: the array takes its buffer.
                cx.call_rt("l0rt_arr_adopt", &[PTR, I64], &[PTR], &[v[0], v[1]])?[0]
            } else if depth == 0 {
                let args = [v[0], v[1], es];
                cx.call_rt("l0rt_arr_from", &[PTR, I64, I64], &[PTR], &args)?[0]
            } else {
                let d = cx.iconst(I64, depth);
                let args = [v[0], v[1], es, d];
                cx.call_rt("l0rt_arr_from_deep", &[PTR, I64, I64, I64], &[PTR], &args)?[0]
            };
            cx.check_alloc(h, op)?;
            cx.set(r, &[h]);
        }
        ("arr.to_vec", Some(r)) => {
            let h = cx.get1(ops[0]);
            let data = cx.b.ins().load(PTR, trusted(), h, HDR_DATA);
            let len = cx.b.ins().load(I64, trusted(), h, HDR_LEN);
            if is_last_use(ctx, ops[0], op) {
                // The vector takes the data (and the element vectors it owns).
                cx.call_rt("l0rt_arr_release", &[PTR], &[], &[h])?;
                cx.set_owned(r, &[data, len]);
            } else {
                cx.set(r, &[data, len]);
                let copy = cx.copy_buffer(r, op)?;
                cx.set_owned(r, &copy);
            }
        }
        ("arr.find_or_insert", Some(r)) => {
            let (h, k) = (cx.get1(ops[0]), cx.get1(ops[1]));
            let t = abi::elem(ctx.ty(ops[0])).unwrap_or(I8);
            let bits = key_bits(cx, k, t);
            let es = cx.iconst(I64, t.bytes() as i64);
            let f = if crate::ownership::keys_only(ctx, ops[0]) {
                "l0rt_find_or_insert_hashed"
            } else {
                "l0rt_find_or_insert"
            };
            let j = cx.call_rt(f, &[PTR, I64, I64], &[I64], &[h, bits, es])?[0];
            let ok = cx.b.ins().icmp_imm_s(IntCC::SignedGreaterThanOrEqual, j, 0);
            cx.check(ok, op, "'arr.find_or_insert' op out of memory".into(), &[])?;
            cx.set(r, &[j]);
        }
        _ => return Err(cx.unsupported(op)),
    }
    Ok(())
}

/// `arr.alloc(n)`: `n` zeroed elements (empty vectors for `arr<vec<T>>`),
/// or `n` fresh empty arrays for `arr<arr<T>>`, like the interpreter.
fn alloc(cx: &mut FnCx, op: OpId, r: ir::ValueId) -> Result<(), Diagnostic> {
    let n = cx.get1(cx.ctx.operand(op, 0));
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
    let t = cx.ctx.ty(r);
    let h = match t.elem() {
        Some(inner @ Type::Arr(_)) => {
            let es = cx.iconst(I64, elem_of(inner).size as i64);
            cx.call_rt("l0rt_arr_new_arrs", &[I64, I64], &[PTR], &[n, es])?[0]
        }
        _ => {
            let es = cx.iconst(I64, elem_of(t).size as i64);
            let f = crate::runtime::arr_new_fn(cx.ctx, op);
            cx.call_rt(f, &[I64, I64], &[PTR], &[n, es])?[0]
        }
    };
    let ok = cx.b.ins().icmp_imm_s(IntCC::NotEqual, h, 0);
    cx.check(
        ok,
        op,
        "'arr.alloc' op cannot allocate {0} elements".into(),
        &[n],
    )?;
    cx.set(r, &[h]);
    Ok(())
}

/// `arr.free(a)`: frees the data, the element vectors of an `arr<vec<T>>`
/// and the header (not the element arrays of an `arr<arr<T>>`).
fn free(cx: &mut FnCx, op: OpId) -> Result<(), Diagnostic> {
    let a = cx.ctx.operand(op, 0);
    let h = cx.get1(a);
    let depth = abi::own_depth(cx.ctx.ty(a));
    let last = is_last_use(cx.ctx, a, op);
    if last && depth == 0 {
        cx.call_rt("l0rt_arr_free", &[PTR], &[], &[h])?;
        return Ok(());
    }
    let data = cx.b.ins().load(PTR, trusted(), h, HDR_DATA);
    let len = cx.b.ins().load(I64, trusted(), h, HDR_LEN);
    cx.drop_vecs(data, len, depth)?;
    if last {
        cx.call_rt("l0rt_arr_release", &[PTR], &[], &[h])?;
    } else {
        // Used again later (a fault in the interpreter too): keep an empty
        // header so that later accesses fail their bounds checks.
        let zero = cx.iconst(I64, 0);
        for off in [HDR_DATA, HDR_LEN, HDR_CAP] {
            cx.b.ins().store(trusted(), zero, h, off);
        }
    }
    Ok(())
}

/// Bounds-checks `i` against the length of `arr` header `h`; returns its data pointer.
/// An op marked `in_bounds` (proved by the `gen` lowering) is not checked.
fn arr_checked(cx: &mut FnCx, op: OpId, h: Value, i: Value) -> Result<Value, Diagnostic> {
    let flags = header_flags(cx.ctx, cx.ctx.operand(op, 0));
    if !crate::proofs::proved_in_bounds(cx.ctx, op) {
        let len = cx.b.ins().load(I64, flags, h, HDR_LEN);
        bounds(
            cx,
            op,
            i,
            len,
            "index {0} is out of bounds for an array of length {1}",
        )?;
    }
    Ok(cx.b.ins().load(PTR, flags, h, HDR_DATA))
}

/// Whether array `a` is fresh: made by `arr.alloc` or `arr.from_vec`, so
/// its header and buffer are its own (`arr.from_vec` copies, or adopts the
/// buffer of a vector that is not used again).
pub(super) fn fresh(ctx: &ir::Context, a: ir::ValueId) -> bool {
    ctx.def_op(a)
        .is_some_and(|d| ctx.is(d, "arr.alloc") || ctx.is(d, "arr.from_vec"))
}

/// The memory flags of an element access's loads of array `a`'s header
/// (its data pointer and, for the bounds check, its length). Where nothing
/// writes the header while `a` lives, they are `readonly` and `can_move`,
/// so that Cranelift's mid-end treats them as pure: hoisted out of loops (a
/// histogram's update loop then keeps the bins' data pointer in a register
/// instead of reloading it after every store) and merged. That holds where
/// `a` is a fresh array (`arr.alloc`, `arr.from_vec`: the runtime fills the
/// header before it returns) whose every use is as the array operand of
/// `arr.load`, `arr.store`, `arr.len` or `arr.to_vec`. Any other use
/// (`arr.push` or `arr.free`, which write the header,
/// `arr.find_or_insert`, a call, a loop-carried or yielded copy, the header
/// stored as an element) keeps the plain flags.
///
/// Only these loads may be pure: Cranelift places a pure value at its first
/// use, and their only uses are the access's own check and element load or
/// store, which stay in program order, so before `arr.to_vec` releases the
/// header. `arr.len` and `arr.to_vec` keep plain loads, as their results
/// may be used after the release.
pub(super) fn header_flags(ctx: &ir::Context, a: ir::ValueId) -> MemFlagsData {
    let fixed = fresh(ctx, a)
        && ctx.uses(a).iter().all(|u| {
            u.index == 0
                && ["arr.load", "arr.store", "arr.len", "arr.to_vec"]
                    .iter()
                    .any(|n| ctx.is(u.op, n))
        });
    if fixed {
        trusted().with_readonly().with_can_move()
    } else {
        trusted()
    }
}

/// `arr.push(a, x)`: grows through the runtime when full, then stores inline.
fn push(cx: &mut FnCx, op: OpId) -> Result<(), Diagnostic> {
    let ops = cx.ctx.operands(op);
    let e: Elem = elem_of(cx.ctx.ty(ops[0]));
    let h = cx.get1(ops[0]);
    let x = cx.value_to_store(ops[1], op)?;
    let len = cx.b.ins().load(I64, trusted(), h, HDR_LEN);
    let cap = cx.b.ins().load(I64, trusted(), h, HDR_CAP);
    let full = cx.b.ins().icmp(IntCC::SignedGreaterThanOrEqual, len, cap);
    let grow = cx.b.create_block();
    let cont = cx.b.create_block();
    cx.b.set_cold_block(grow);
    cx.brif(full, grow, &[], cont, &[]);
    cx.b.switch_to_block(grow);
    let es = cx.iconst(I64, e.size as i64);
    let st = cx.call_rt("l0rt_arr_grow", &[PTR, I64], &[I8], &[h, es])?[0];
    cx.check(st, op, "'arr.push' op out of memory".into(), &[])?;
    cx.jump(cont, &[]);
    cx.b.switch_to_block(cont);
    let data = cx.b.ins().load(PTR, trusted(), h, HDR_DATA);
    store_elem(cx, &e, data, len, &x);
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
