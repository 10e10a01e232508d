//! `vec.len/get`, `mat.from/rows/cols/get/row` and the `arr` ops in LLVM
//! IR, with the Cranelift translation's element layout, ownership and
//! fault messages. Reads and writes marked `in_bounds` (a proof from the
//! passes, see `passes::bounds`, or from the `gen` lowering) are plain
//! loads and stores, so LLVM can vectorize the loop around them.

use ir::{Context, Diagnostic, OpId, Type};

use super::translate::{scalar, FnCx, Vals};
use super::writer::{Mem, Ty};
use crate::abi::{self, HDR_CAP, HDR_DATA, HDR_LEN};

/// How one element is stored: its size and its parts with byte offsets.
pub(super) struct Elem {
    pub size: u32,
    pub parts: Vec<(Ty, i64)>,
    /// The element type when it is one scalar.
    pub scalar: Option<Ty>,
}

/// The element layout of container type `t` (checked supported before translation).
pub(super) fn elem_of(t: &Type) -> Elem {
    match t.elem() {
        Some(Type::Vec(_)) => Elem {
            size: 16,
            parts: vec![(Ty::Ptr, 0), (Ty::I64, 8)],
            scalar: None,
        },
        Some(Type::Arr(_)) => Elem {
            size: 8,
            parts: vec![(Ty::Ptr, 0)],
            scalar: None,
        },
        Some(e) => {
            let s = scalar(e).unwrap_or(Ty::I8);
            Elem {
                size: s.bytes(),
                parts: vec![(s, 0)],
                scalar: Some(s),
            }
        }
        None => Elem {
            size: 1,
            parts: vec![],
            scalar: None,
        },
    }
}

fn load_elem(cx: &mut FnCx, e: &Elem, data: &str, i: &str) -> Vals {
    let a = cx.w.elem_addr(data, i, e.size, e.scalar);
    e.parts
        .iter()
        .map(|&(t, off)| cx.w.load(t, &a, off, Mem::Elem))
        .collect()
}

fn store_elem(cx: &mut FnCx, e: &Elem, data: &str, i: &str, ps: &[String]) {
    let a = cx.w.elem_addr(data, i, e.size, e.scalar);
    for (&(t, off), x) in e.parts.iter().zip(ps) {
        cx.w.store(t, x, &a, off, Mem::Elem);
    }
}

/// Faults at `op` unless `0 <= i < len` (one unsigned compare).
fn bounds(cx: &mut FnCx, op: OpId, i: &str, len: &str, what: &str) {
    let ok = cx.w.val(format!("icmp ult i64 {i}, {len}"));
    let msg = format!("'{}' op {what}", cx.ctx.op_name(op));
    cx.check(&ok, op, msg, &[i.to_string(), len.to_string()]);
}

fn in_bounds(ctx: &Context, op: OpId) -> bool {
    crate::proofs::proved_in_bounds(ctx, op)
}

pub(super) fn emit(cx: &mut FnCx, op: OpId, name: &str) -> Result<(), Diagnostic> {
    if name.starts_with("arr.") {
        return arr(cx, op, name);
    }
    let ctx = cx.ctx;
    let ops = ctx.operands(op);
    let res = ctx.results(op).first().copied();
    match (name, res) {
        ("vec.len", Some(r)) => {
            let p = cx.get(ops[0]);
            cx.set(r, &[p[1].clone()]);
        }
        ("vec.get", Some(r)) => {
            let p = cx.get(ops[0]);
            let i = cx.get1(ops[1]);
            if !in_bounds(ctx, op) {
                bounds(cx, op, &i, &p[1], "index {0} out of bounds for length {1}");
            }
            let x = load_elem(cx, &elem_of(ctx.ty(ops[0])), &p[0], &i);
            cx.set(r, &x);
        }
        ("mat.from", Some(r)) => {
            let v = cx.get(ops[0]);
            let (rows, cols) = (cx.get1(ops[1]), cx.get1(ops[2]));
            for n in [&rows, &cols] {
                let ok = cx.w.val(format!("icmp sge i64 {n}, 0"));
                cx.check(
                    &ok,
                    op,
                    "'mat.from' op negative size {0}".into(),
                    std::slice::from_ref(n),
                );
            }
            // rows * cols == len without overflow.
            let zc = cx.w.val(format!("icmp eq i64 {cols}, 0"));
            let safe = cx.w.val(format!("select i1 {zc}, i64 1, i64 {cols}"));
            let q = cx.w.val(format!("udiv i64 {}, {safe}", v[1]));
            let rem = cx.w.val(format!("urem i64 {}, {safe}", v[1]));
            let exact = cx.w.val(format!("icmp eq i64 {rem}, 0"));
            let qr = cx.w.val(format!("icmp eq i64 {q}, {rows}"));
            let nz_ok = cx.w.val(format!("and i1 {exact}, {qr}"));
            let z_ok = cx.w.val(format!("icmp eq i64 {}, 0", v[1]));
            let ok = cx.w.val(format!("select i1 {zc}, i1 {z_ok}, i1 {nz_ok}"));
            let msg = "'mat.from' op shape {0}x{1} does not match a vector of length {2}";
            cx.check(
                &ok,
                op,
                msg.into(),
                &[rows.clone(), cols.clone(), v[1].clone()],
            );
            cx.set(r, &[v[0].clone(), rows, cols]);
        }
        ("mat.rows", Some(r)) => {
            let m = cx.get(ops[0]);
            cx.set(r, &[m[1].clone()]);
        }
        ("mat.cols", Some(r)) => {
            let m = cx.get(ops[0]);
            cx.set(r, &[m[2].clone()]);
        }
        ("mat.get", Some(r)) => {
            let m = cx.get(ops[0]);
            let (i, j) = (cx.get1(ops[1]), cx.get1(ops[2]));
            // Transposed: entry (i, j) of transpose(m), checked as such.
            let t = dialects::mat::get_is_transposed(ctx, op);
            let (rows, cols) = if t { (&m[2], &m[1]) } else { (&m[1], &m[2]) };
            // `in_bounds` is a proof from the passes (see passes::bounds_version).
            if !in_bounds(ctx, op) {
                bounds(
                    cx,
                    op,
                    &i,
                    rows,
                    "row index {0} out of bounds for length {1}",
                );
                bounds(
                    cx,
                    op,
                    &j,
                    cols,
                    "column index {0} out of bounds for length {1}",
                );
            }
            let (i, j) = if t { (j, i) } else { (i, j) };
            let row = cx.w.val(format!("mul i64 {i}, {}", m[2]));
            let k = cx.w.val(format!("add i64 {row}, {j}"));
            let x = load_elem(cx, &elem_of(ctx.ty(ops[0])), &m[0], &k);
            cx.set(r, &x);
        }
        ("mat.row", Some(r)) => {
            let m = cx.get(ops[0]);
            let i = cx.get1(ops[1]);
            bounds(
                cx,
                op,
                &i,
                &m[1],
                "row index {0} out of bounds for length {1}",
            );
            let k = cx.w.val(format!("mul i64 {i}, {}", m[2]));
            let e = elem_of(ctx.ty(ops[0]));
            let p = cx.w.elem_addr(&m[0], &k, e.size, e.scalar);
            cx.set(r, &[p, m[2].clone()]);
        }
        _ => return Err(cx.unsupported(op)),
    }
    Ok(())
}

fn hdr_len(cx: &mut FnCx, h: &str) -> String {
    cx.w.load(Ty::I64, h, HDR_LEN as i64, Mem::Header)
}

fn hdr_data(cx: &mut FnCx, h: &str) -> String {
    cx.w.load(Ty::Ptr, h, HDR_DATA as i64, Mem::Header)
}

/// Bounds-checks `i` against the length of `arr` header `h` (unless the op
/// is `in_bounds`); returns its data pointer.
pub(super) fn arr_checked(cx: &mut FnCx, op: OpId, h: &str, i: &str) -> String {
    if !in_bounds(cx.ctx, op) {
        let len = hdr_len(cx, h);
        bounds(
            cx,
            op,
            i,
            &len,
            "index {0} is out of bounds for an array of length {1}",
        );
    }
    hdr_data(cx, h)
}

fn arr(cx: &mut FnCx, op: OpId, name: &str) -> Result<(), Diagnostic> {
    let ctx = cx.ctx;
    let ops = ctx.operands(op);
    let res = ctx.results(op).first().copied();
    match (name, res) {
        ("arr.alloc", Some(r)) => {
            let n = cx.get1(ops[0]);
            let ok = cx.w.val(format!("icmp sge i64 {n}, 0"));
            cx.check(
                &ok,
                op,
                "'arr.alloc' op negative size {0}".into(),
                std::slice::from_ref(&n),
            );
            let max = dialects::arr::MAX_ALLOC as i64;
            let ok = cx.w.val(format!("icmp sle i64 {n}, {max}"));
            let msg = "'arr.alloc' op allocation of {0} elements is too large";
            cx.check(&ok, op, msg.into(), std::slice::from_ref(&n));
            let t = ctx.ty(r);
            let h = match t.elem() {
                Some(inner @ Type::Arr(_)) => {
                    let es = elem_of(inner).size.to_string();
                    cx.call_rt(
                        "l0rt_arr_new_arrs",
                        &[Ty::I64, Ty::I64],
                        Some(Ty::Ptr),
                        &[n.clone(), es],
                    )
                }
                _ => {
                    let es = elem_of(t).size.to_string();
                    cx.call_rt(
                        crate::runtime::arr_new_fn(ctx, op),
                        &[Ty::I64, Ty::I64],
                        Some(Ty::Ptr),
                        &[n.clone(), es],
                    )
                }
            };
            let ok = cx.w.val(format!("icmp ne i8* {h}, null"));
            let msg = "'arr.alloc' op cannot allocate {0} elements";
            cx.check(&ok, op, msg.into(), &[n]);
            cx.set(r, &[h]);
        }
        ("arr.len", Some(r)) => {
            let h = cx.get1(ops[0]);
            let n = hdr_len(cx, &h);
            cx.set(r, &[n]);
        }
        ("arr.load", Some(r)) => {
            let (h, i) = (cx.get1(ops[0]), cx.get1(ops[1]));
            let data = arr_checked(cx, op, &h, &i);
            let x = load_elem(cx, &elem_of(ctx.ty(ops[0])), &data, &i);
            cx.set(r, &x);
        }
        ("arr.store", None) => {
            let (h, i) = (cx.get1(ops[0]), cx.get1(ops[1]));
            let e = elem_of(ctx.ty(ops[0]));
            let data = arr_checked(cx, op, &h, &i);
            let x = cx.value_to_store(ops[2], op);
            let depth = abi::own_depth(ctx.ty(ops[0]));
            if depth > 0 {
                // The array owns the element vector it replaces.
                let old = load_elem(cx, &e, &data, &i);
                cx.drop_vecs(&old[0], &old[1], depth - 1);
            }
            store_elem(cx, &e, &data, &i, &x);
        }
        ("arr.push", None) => {
            let e = elem_of(ctx.ty(ops[0]));
            let h = cx.get1(ops[0]);
            let x = cx.value_to_store(ops[1], op);
            let len = hdr_len(cx, &h);
            let cap = cx.w.load(Ty::I64, &h, HDR_CAP as i64, Mem::Header);
            let full = cx.w.val(format!("icmp sge i64 {len}, {cap}"));
            let grow = cx.w.block(&[]);
            let cont = cx.w.block(&[]);
            cx.w.set_cold(&grow);
            cx.w.brif(&full, &grow, &[], &cont, &[]);
            cx.w.start(&grow);
            let st = cx.call_rt(
                "l0rt_arr_grow",
                &[Ty::Ptr, Ty::I64],
                Some(Ty::I8),
                &[h.clone(), e.size.to_string()],
            );
            let ok = cx.w.val(format!("icmp ne i8 {st}, 0"));
            cx.check(&ok, op, "'arr.push' op out of memory".into(), &[]);
            cx.w.jump(&cont, &[]);
            cx.w.start(&cont);
            let data = hdr_data(cx, &h);
            store_elem(cx, &e, &data, &len, &x);
            let len1 = cx.w.val(format!("add i64 {len}, 1"));
            cx.w.store(Ty::I64, &len1, &h, HDR_LEN as i64, Mem::Header);
        }
        ("arr.free", None) => {
            let a = ops[0];
            let h = cx.get1(a);
            let depth = abi::own_depth(ctx.ty(a));
            let last = crate::ownership::is_last_use(ctx, a, op);
            if last && depth == 0 {
                cx.call_rt("l0rt_arr_free", &[Ty::Ptr], None, &[h]);
                return Ok(());
            }
            let data = hdr_data(cx, &h);
            let len = hdr_len(cx, &h);
            cx.drop_vecs(&data, &len, depth);
            if last {
                cx.call_rt("l0rt_arr_release", &[Ty::Ptr], None, &[h]);
            } else {
                // Used again later: keep an empty header so that later
                // accesses fail their bounds checks.
                cx.w.store(Ty::Ptr, "null", &h, HDR_DATA as i64, Mem::Header);
                cx.w.store(Ty::I64, "0", &h, HDR_LEN as i64, Mem::Header);
                cx.w.store(Ty::I64, "0", &h, HDR_CAP as i64, Mem::Header);
            }
        }
        ("arr.from_vec", Some(r)) => {
            let v = cx.get(ops[0]);
            let t = ctx.ty(ops[0]);
            let (depth, es) = (abi::own_depth(t), abi::leaf_size(t) as i64);
            let h = if cx.take_buffer(ops[0], op) {
                // The vector's last use: the array takes its buffer.
                cx.call_rt(
                    "l0rt_arr_adopt",
                    &[Ty::Ptr, Ty::I64],
                    Some(Ty::Ptr),
                    &[v[0].clone(), v[1].clone()],
                )
            } else if depth == 0 {
                let args = [v[0].clone(), v[1].clone(), es.to_string()];
                cx.call_rt(
                    "l0rt_arr_from",
                    &[Ty::Ptr, Ty::I64, Ty::I64],
                    Some(Ty::Ptr),
                    &args,
                )
            } else {
                let args = [
                    v[0].clone(),
                    v[1].clone(),
                    es.to_string(),
                    depth.to_string(),
                ];
                cx.call_rt(
                    "l0rt_arr_from_deep",
                    &[Ty::Ptr, Ty::I64, Ty::I64, Ty::I64],
                    Some(Ty::Ptr),
                    &args,
                )
            };
            cx.check_alloc(&h, op);
            cx.set(r, &[h]);
        }
        ("arr.to_vec", Some(r)) => {
            let h = cx.get1(ops[0]);
            let data = hdr_data(cx, &h);
            let len = hdr_len(cx, &h);
            if crate::ownership::is_last_use(ctx, ops[0], op) {
                cx.call_rt("l0rt_arr_release", &[Ty::Ptr], None, &[h]);
                cx.set_owned(r, &[data, len]);
            } else {
                cx.set(r, &[data, len]);
                let copy = cx.copy_buffer(r, op);
                cx.set_owned(r, &copy);
            }
        }
        ("arr.find_or_insert", Some(r)) => {
            let (h, k) = (cx.get1(ops[0]), cx.get1(ops[1]));
            let t = ctx.ty(ops[0]).elem().and_then(scalar).unwrap_or(Ty::I8);
            let bits = match t {
                Ty::F64 => cx.w.val(format!("bitcast double {k} to i64")),
                Ty::F32 => {
                    let b = cx.w.val(format!("bitcast float {k} to i32"));
                    cx.w.val(format!("zext i32 {b} to i64"))
                }
                Ty::I64 => k,
                t => cx.w.val(format!("zext {} {k} to i64", t.name())),
            };
            let f = if crate::ownership::keys_only(ctx, ops[0]) {
                "l0rt_find_or_insert_hashed"
            } else {
                "l0rt_find_or_insert"
            };
            let j = cx.call_rt(
                f,
                &[Ty::Ptr, Ty::I64, Ty::I64],
                Some(Ty::I64),
                &[h, bits, t.bytes().to_string()],
            );
            let ok = cx.w.val(format!("icmp sge i64 {j}, 0"));
            cx.check(&ok, op, "'arr.find_or_insert' op out of memory".into(), &[]);
            cx.set(r, &[j]);
        }
        _ => return Err(cx.unsupported(op)),
    }
    Ok(())
}
