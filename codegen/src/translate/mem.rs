//! `vec.len/get`, `mat.from/rows/cols/get/row` (the `arr` ops are in
//! [`super::arr`]), and loads and stores of one element of any supported
//! element type ([`abi::Elem`]). Every element access is bounds-checked
//! with the interpreter's message.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::I64;
use cranelift_codegen::ir::{InstBuilder, Value};

use ir::{Diagnostic, OpId, Type};

use super::{trusted, FnCx, Vals};
use crate::abi::{self, Elem};

pub(super) fn emit(cx: &mut FnCx, op: OpId, name: &str) -> Result<(), Diagnostic> {
    if name.starts_with("arr.") {
        return super::arr::emit(cx, op, name);
    }
    let ctx = cx.ctx;
    let ops = ctx.operands(op);
    let res = ctx.results(op).first().copied();
    match (name, res) {
        ("vec.len", Some(r)) => {
            let p = cx.get(ops[0]);
            cx.set(r, &[p[1]]);
        }
        ("vec.get", Some(r)) => {
            let p = cx.get(ops[0]);
            let i = cx.get1(ops[1]);
            // `in_bounds` is a proof from the passes (see passes::bounds): no check.
            if !crate::proofs::proved_in_bounds(ctx, op) {
                bounds(cx, op, i, p[1], "index {0} out of bounds for length {1}")?;
            }
            // An element vector is a borrowed view (not owned).
            let x = load_elem(cx, &elem_of(ctx.ty(ops[0])), p[0], i);
            cx.set(r, &x);
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
            // Transposed: entry (i, j) of transpose(m), checked as such.
            let t = dialects::mat::get_is_transposed(ctx, op);
            let (rows, cols) = if t { (m[2], m[1]) } else { (m[1], m[2]) };
            // `in_bounds` is a proof from the passes (see passes::bounds_version).
            if !crate::proofs::proved_in_bounds(ctx, op) {
                bounds(
                    cx,
                    op,
                    i,
                    rows,
                    "row index {0} out of bounds for length {1}",
                )?;
                bounds(
                    cx,
                    op,
                    j,
                    cols,
                    "column index {0} out of bounds for length {1}",
                )?;
            }
            let (i, j) = if t { (j, i) } else { (i, j) };
            let row = cx.b.ins().imul(i, m[2]);
            let k = cx.b.ins().iadd(row, j);
            let x = load_elem(cx, &elem_of(ctx.ty(ops[0])), m[0], k);
            cx.set(r, &x);
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
            let p = cx.elem_addr(m[0], k, elem_of(ctx.ty(ops[0])).size);
            cx.set(r, &[p, m[2]]);
        }
        _ => return Err(cx.unsupported(op)),
    }
    Ok(())
}

/// The element layout of container type `t` (checked supported before translation).
pub(super) fn elem_of(t: &Type) -> Elem {
    abi::elem_layout(t).unwrap_or(Elem {
        size: 1,
        parts: Default::default(),
    })
}

/// Faults at `op` unless `0 <= i < len` (one unsigned compare).
pub(super) fn bounds(
    cx: &mut FnCx,
    op: OpId,
    i: Value,
    len: Value,
    what: &str,
) -> Result<(), Diagnostic> {
    let ok = cx.b.ins().icmp(IntCC::UnsignedLessThan, i, len);
    let msg = format!("'{}' op {what}", cx.ctx.op_name(op));
    cx.check(ok, op, msg, &[i, len])
}

/// The parts of element `i` at `data`.
pub(super) fn load_elem(cx: &mut FnCx, e: &Elem, data: Value, i: Value) -> Vals {
    let a = cx.elem_addr(data, i, e.size);
    e.parts
        .iter()
        .map(|&(t, off)| cx.b.ins().load(t, trusted(), a, off))
        .collect()
}

/// Stores `parts` as element `i` at `data`.
pub(super) fn store_elem(cx: &mut FnCx, e: &Elem, data: Value, i: Value, parts: &[Value]) {
    let a = cx.elem_addr(data, i, e.size);
    for (&(_, off), &x) in e.parts.iter().zip(parts) {
        cx.b.ins().store(trusted(), x, a, off);
    }
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
