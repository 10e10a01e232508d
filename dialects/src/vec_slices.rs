//! Slices and literals of the `vec` dialect (issue 42, item 5; Futhark's
//! `reverse`, `a[i:j]`, `++` and array literals, MLIR's
//! `tensor.from_elements`):
//!
//! | op | form | meaning |
//! |---|---|---|
//! | `vec.reverse(v)` | `vec.reverse %v : vec<T>` | `v[n-1], ..., v[0]` |
//! | `vec.slice(v, start, len)` | `vec.slice %v, %s, %l : vec<T>` | `v[start], ..., v[start+len-1]`; faults unless `0 <= start`, `0 <= len` and `start + len <= n` |
//! | `vec.concat(v1, ..., vk)` | `vec.concat %a, %b : vec<T>` | the elements of `v1`, then of `v2`, ... (k >= 1) |
//! | `vec.from_elements(x1, ..., xn)` | `vec.from_elements %x, %y : vec<T>` | the vector `[x1, ..., xn]` (n >= 0) |
//!
//! All are pure, for every element type. Each lowers (phase `gen`) to one
//! dense collect loop, one emit per index at the top of the body, so fusion,
//! parallel chunks and GPU kernels treat them as maps over an index space:
//! `reverse` and `slice` read their input at `n-1-i` and `start+i` (marked
//! `in_bounds`: the index is in range by construction, after `slice`'s
//! checks); `concat` picks the part by comparing `i` with the running
//! offsets (an `scf.if` chain); `from_elements` picks `x_i` by a balanced
//! tree of `scf.if` on `i` (depth `log2 n`). Canonicalization:
//! `vec.len(reverse(v))` is `vec.len(v)`, `vec.len(from_elements(..n..))`
//! is `n`, `vec.get(from_elements(xs), c)` for a constant `c` in range is
//! `xs[c]`, and `concat(v)` is `v`.

use smallvec::smallvec;

use ir::interp::{Interp, RtValue, RunError};
use ir::spec::{Arity, OpSpec, OpState, Registry, Traits};
use ir::{Builder, Context, OpId, Type, ValueId};

use crate::vec::{
    as_vec, build_gen_loop, check_size, emit, get_in_bounds, vec_type, vec_value, Gen,
};

type Vals = smallvec::SmallVec<[RtValue; 2]>;
type Repl = Option<smallvec::SmallVec<[ValueId; 2]>>;

/// The message of `vec.slice`'s fault, in the interpreter and the lowering.
pub const SLICE_FAULT: &str = "slice out of bounds in vec.slice";

fn idx(b: &mut Builder, v: i64) -> ValueId {
    crate::arith::const_int(b, v, &Type::Index)
}

use crate::arith::build_binop as binop;

/// `scf.if c -> T { then } else { else }`, one result.
fn if_value(
    b: &mut Builder,
    c: ValueId,
    t: &Type,
    then: impl FnOnce(&mut Builder) -> ValueId,
    els: impl FnOnce(&mut Builder) -> ValueId,
) -> ValueId {
    crate::scf::build_if(
        b,
        c,
        std::slice::from_ref(t),
        |b| vec![then(b)],
        |b| vec![els(b)],
    )[0]
}

// ----- verifiers ---------------------------------------------------------

fn same_result(ctx: &Context, op: OpId, t: &Type) -> Result<(), String> {
    let r = ctx.ty(ctx.result(op, 0));
    if r != t {
        return Err(format!("result must have type '{t}', but got '{r}'"));
    }
    Ok(())
}

fn verify_reverse(ctx: &Context, op: OpId) -> Result<(), String> {
    vec_type(ctx, ctx.operand(op, 0), "operand #0")?;
    same_result(ctx, op, ctx.ty(ctx.operand(op, 0)))
}

fn verify_slice(ctx: &Context, op: OpId) -> Result<(), String> {
    vec_type(ctx, ctx.operand(op, 0), "operand #0")?;
    for (i, what) in [(1, "start"), (2, "length")] {
        let t = ctx.ty(ctx.operand(op, i));
        if *t != Type::Index {
            return Err(format!(
                "operand #{i} ({what}) must be 'index', but got '{t}'"
            ));
        }
    }
    same_result(ctx, op, ctx.ty(ctx.operand(op, 0)))
}

fn verify_concat(ctx: &Context, op: OpId) -> Result<(), String> {
    let t0 = ctx.ty(ctx.operand(op, 0)).clone();
    vec_type(ctx, ctx.operand(op, 0), "operand #0")?;
    for (i, &v) in ctx.operands(op).iter().enumerate().skip(1) {
        if *ctx.ty(v) != t0 {
            return Err(format!(
                "operand #{i} must have type '{t0}' like operand #0, but got '{}'",
                ctx.ty(v)
            ));
        }
    }
    same_result(ctx, op, &t0)
}

fn verify_from_elements(ctx: &Context, op: OpId) -> Result<(), String> {
    let e = vec_type(ctx, ctx.result(op, 0), "the result")?;
    for (i, &v) in ctx.operands(op).iter().enumerate() {
        if *ctx.ty(v) != e {
            return Err(format!(
                "operand #{i} must have the element type '{e}', but got '{}'",
                ctx.ty(v)
            ));
        }
    }
    Ok(())
}

// ----- interpreter -------------------------------------------------------

fn interp_reverse(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let v = as_vec(it.ctx, op, &a[0])?;
    Ok(smallvec![vec_value(v.iter().rev().cloned().collect())])
}

fn interp_slice(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let ctx = it.ctx;
    let v = as_vec(ctx, op, &a[0])?;
    let int = |x: &RtValue| {
        x.as_int()
            .ok_or_else(|| RunError::at(ctx, op, "expected an index"))
    };
    let (s, l) = (int(&a[1])?, int(&a[2])?);
    let n = v.len() as i64;
    // 0 <= s <= n and 0 <= l <= n - s: no overflow in any step.
    if s < 0 || l < 0 || s > n || l > n - s {
        return Err(RunError::at(
            ctx,
            op,
            format!("{SLICE_FAULT}: start {s} and length {l} for a vector of length {n}"),
        ));
    }
    let (s, l) = (s as usize, l as usize);
    Ok(smallvec![vec_value(v[s..s + l].to_vec())])
}

fn interp_concat(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let mut out = Vec::new();
    for x in a {
        let v = as_vec(it.ctx, op, x)?;
        out.extend(v.iter().cloned());
        check_size(it.ctx, op, out.len())?;
    }
    Ok(smallvec![vec_value(out)])
}

fn interp_from_elements(_: &mut Interp, _: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    Ok(smallvec![vec_value(a.to_vec())])
}

// ----- lowerings to gen --------------------------------------------------

fn lower_reverse(b: &mut Builder, st: &OpState) -> Repl {
    let v = *st.operands.first()?;
    let t = b.ctx.ty(v).elem()?.clone();
    let n = crate::vec::len(b, v);
    let last = {
        let one = idx(b, 1);
        binop(b, "arith.subi", n, one)
    };
    Some(build_gen_loop(
        b,
        n,
        &[],
        vec![Gen::collect(&t)],
        |b, i, h| {
            let j = binop(b, "arith.subi", last, i);
            let x = get_in_bounds(b, v, j);
            emit(b, h[0], x);
        },
    ))
}

fn lower_slice(b: &mut Builder, st: &OpState) -> Repl {
    let (&v, &s, &l) = (
        st.operands.first()?,
        st.operands.get(1)?,
        st.operands.get(2)?,
    );
    let t = b.ctx.ty(v).elem()?.clone();
    let n = crate::vec::len(b, v);
    let zero = idx(b, 0);
    // The interpreter's conditions, in the same overflow-free order.
    let c1 = crate::arith::build_cmpi(b, "sge", s, zero);
    crate::scf::build_assert(b, c1, SLICE_FAULT);
    let c2 = crate::arith::build_cmpi(b, "sge", l, zero);
    crate::scf::build_assert(b, c2, SLICE_FAULT);
    let c3 = crate::arith::build_cmpi(b, "sle", s, n);
    crate::scf::build_assert(b, c3, SLICE_FAULT);
    let rest = binop(b, "arith.subi", n, s);
    let c4 = crate::arith::build_cmpi(b, "sle", l, rest);
    crate::scf::build_assert(b, c4, SLICE_FAULT);
    Some(build_gen_loop(
        b,
        l,
        &[],
        vec![Gen::collect(&t)],
        |b, i, h| {
            let j = binop(b, "arith.addi", s, i);
            let x = get_in_bounds(b, v, j);
            emit(b, h[0], x);
        },
    ))
}

/// Element `i` of the concatenation of `parts`, whose first elements are at
/// `offsets` (`offsets[0] == 0`).
fn concat_elem(
    b: &mut Builder,
    t: &Type,
    parts: &[ValueId],
    offsets: &[ValueId],
    i: ValueId,
) -> ValueId {
    if parts.len() == 1 {
        let j = binop(b, "arith.subi", i, offsets[0]);
        return get_in_bounds(b, parts[0], j);
    }
    let c = crate::arith::build_cmpi(b, "slt", i, offsets[1]);
    if_value(
        b,
        c,
        t,
        |b| {
            let j = binop(b, "arith.subi", i, offsets[0]);
            get_in_bounds(b, parts[0], j)
        },
        |b| concat_elem(b, t, &parts[1..], &offsets[1..], i),
    )
}

fn lower_concat(b: &mut Builder, st: &OpState) -> Repl {
    let parts: Vec<ValueId> = st.operands.to_vec();
    let t = b.ctx.ty(*parts.first()?).elem()?.clone();
    let mut offsets = vec![idx(b, 0)];
    let mut total = offsets[0];
    for &p in &parts {
        let n = crate::vec::len(b, p);
        total = binop(b, "arith.addi", total, n);
        offsets.push(total);
    }
    offsets.pop();
    Some(build_gen_loop(
        b,
        total,
        &[],
        vec![Gen::collect(&t)],
        |b, i, h| {
            let x = concat_elem(b, &t, &parts, &offsets, i);
            emit(b, h[0], x);
        },
    ))
}

/// Element `i` (known to be in `[lo, lo + xs.len())`) of the literal `xs`.
fn pick(b: &mut Builder, t: &Type, xs: &[ValueId], lo: i64, i: ValueId) -> ValueId {
    if xs.len() == 1 {
        return xs[0];
    }
    let mid = xs.len() / 2;
    let m = idx(b, lo + mid as i64);
    let c = crate::arith::build_cmpi(b, "slt", i, m);
    if_value(
        b,
        c,
        t,
        |b| pick(b, t, &xs[..mid], lo, i),
        |b| pick(b, t, &xs[mid..], lo + mid as i64, i),
    )
}

fn lower_from_elements(b: &mut Builder, st: &OpState) -> Repl {
    let xs: Vec<ValueId> = st.operands.to_vec();
    let t = st.result_types.first()?.elem()?.clone();
    let n = idx(b, xs.len() as i64);
    Some(build_gen_loop(
        b,
        n,
        &[],
        vec![Gen::collect(&t)],
        |b, i, h| {
            if !xs.is_empty() {
                let x = pick(b, &t, &xs, 0, i);
                emit(b, h[0], x);
            } else if crate::vec::is_numeric(&t) {
                // Never runs (size 0); an emit keeps the loop a dense collect,
                // the shape parallel chunks and kernels take.
                let z = b.constant(crate::vec::zero_attr(&t), &t);
                emit(b, h[0], z);
            }
        },
    ))
}

fn rw_concat(_: &mut Builder, st: &OpState) -> Repl {
    match st.operands.as_slice() {
        [v] => Some(smallvec![*v]),
        _ => None,
    }
}

/// Registers the ops.
pub fn register(r: &mut Registry) {
    r.register(
        crate::util::pure("vec.reverse", "the elements in reverse order", 1)
            .assembly_format("operands attr-dict : type(first)")
            .infer(crate::util::infer_same)
            .verify(verify_reverse)
            .interpret(interp_reverse)
            .lowering("gen", lower_reverse),
    );
    r.register(
        crate::util::pure(
            "vec.slice",
            "the len elements from start (faults unless 0 <= start, 0 <= len, start + len <= n)",
            3,
        )
        .assembly_format("operands attr-dict : type(first)")
        .infer(crate::util::infer_same)
        .verify(verify_slice)
        .interpret(interp_slice)
        .lowering("gen", lower_slice),
    );
    r.register(
        OpSpec::new("vec.concat", "the elements of each operand, in order")
            .operands(Arity::AtLeast(1))
            .results(Arity::Exactly(1))
            .traits(Traits::PURE)
            .assembly_format("operands attr-dict : type(first)")
            .infer(crate::util::infer_same)
            .verify(verify_concat)
            .interpret(interp_concat)
            .rewrite(rw_concat)
            .lowering("gen", lower_concat),
    );
    r.register(
        OpSpec::new("vec.from_elements", "the vector of the operands")
            .operands(Arity::AtLeast(0))
            .results(Arity::Exactly(1))
            .traits(Traits::PURE)
            .assembly_format("operands attr-dict : type(results)")
            .verify(verify_from_elements)
            .interpret(interp_from_elements)
            .lowering("gen", lower_from_elements),
    );
}
