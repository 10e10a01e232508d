//! Register-blocked `mat.mul` for the native targets (issue 44: the matrix
//! product with at most one load per multiply-add).
//!
//! [`crate::mat`]'s lowering computes each entry `(p, q)` of `x * y` as the
//! dot product of row `p` of `x` and row `q` of `transpose(y)`: two loads
//! per multiply-add, and all of `transpose(y)` read again for every row of
//! `x`. Here the entries come in 2x2 blocks: rows `p, p + 1` of `x` and
//! rows `q, q + 1` of `transpose(y)` are read once per inner index for four
//! dot products (one `gen.loop` with four reduce generators), which halves
//! both the loads and the traffic through the caches. It is the register
//! blocking of the classic matrix-product kernels (the "unroll and jam" of
//! Carr and Kennedy, and the micro-kernels of Goto and van de Geijn, TOMS
//! 2008, section 4), written at the `gen` level so that `split-reductions`,
//! Cranelift's lane pairing and LLVM's vectorizer see ordinary reductions.
//!
//! Shape: for an `m x k` times `k x n` product,
//! 1. a collect over the `(m / 2) * (n / 2)` blocks emits each block's four
//!    sums in the order `(p, q), (p, q + 1), (p + 1, q), (p + 1, q + 1)`;
//! 2. a collect over the `m * n` entries reads entry `(p, q)` from its block,
//!    or computes it as one dot product where an odd `m` or `n` leaves it
//!    outside every block (the last row or column);
//! 3. `mat.from` of that vector, `m` by `n`.
//!
//! Each entry is a sum over the inner index of the products in that index's
//! order, split into accumulators only as `split-reductions` splits any
//! declared-associative reduction (IR-SPEC §3), so the results are those of
//! the plain lowering wherever the reductions are not split, on every
//! backend and thread count. The size check comes first, with the plain
//! lowering's message; a result whose entry count overflows faults before
//! any block is computed.
//!
//! `lower` applies it for `target=native` only: a GPU kernel runs the plain
//! lowering's one thread per entry.

use ir::{Builder, Context, OpId, Type, ValueId};

use crate::arith::{build_cmpi, const_int};
use crate::mat::{dims, idx, row_dot, row_major, transposed};
use crate::vec::{assert_eq_sizes, build_gen_loop, elem_of, emit, get_in_bounds, BinOp, Gen};

/// Rewrites every `mat.mul` of `ctx` into the blocked form; returns how
/// many it rewrote.
pub fn block_products(ctx: &mut Context) -> u64 {
    let muls: Vec<OpId> = ctx
        .walk_all()
        .into_iter()
        .filter(|&o| ctx.is(o, "mat.mul"))
        .collect();
    let mut n = 0;
    for op in muls {
        if !ctx.alive(op) {
            continue;
        }
        let (x, y) = (ctx.operand(op, 0), ctx.operand(op, 1));
        let Some(t) = elem_of(ctx, x) else {
            continue;
        };
        let v = {
            let mut b = Builder::before(ctx, op);
            blocked(&mut b, x, y, t)
        };
        ctx.replace_op(op, &[v]);
        n += 1;
    }
    n
}

/// The blocked product `x * y` with element type `t` (module doc).
fn blocked(b: &mut Builder, x: ValueId, y: ValueId, t: Type) -> ValueId {
    let (m, k) = dims(b, x);
    let (ry, n) = dims(b, y);
    assert_eq_sizes(b, k, ry, "size mismatch in mat.mul");
    let total = idx(b, "arith.muli", m, n);
    // `n == 0 || total / n == m`: the entry count did not wrap.
    let zero = const_int(b, 0, &Type::Index);
    let empty = build_cmpi(b, "eq", n, zero);
    let one = const_int(b, 1, &Type::Index);
    let divisor = b.op1("arith.select", &[empty, one, n], Type::Index, vec![]);
    let back = idx(b, "arith.divui", total, divisor);
    let same = build_cmpi(b, "eq", back, m);
    let ok = b.op1("arith.ori", &[empty, same], Type::I1, vec![]);
    crate::scf::build_assert(b, ok, "result too large in mat.mul");
    let yt = transposed(b, y, &t);
    let x = row_major(b, x, &t);
    let two = const_int(b, 2, &Type::Index);
    let m2 = idx(b, "arith.divsi", m, two);
    let n2 = idx(b, "arith.divsi", n, two);
    let blocks = idx(b, "arith.muli", m2, n2);
    let sums = build_gen_loop(b, blocks, &[], vec![Gen::collect(&t)], |b, s, h| {
        let pb = idx(b, "arith.divsi", s, n2);
        let qb = idx(b, "arith.remsi", s, n2);
        let p = idx(b, "arith.muli", pb, two);
        let q = idx(b, "arith.muli", qb, two);
        let p1 = idx(b, "arith.addi", p, one);
        let q1 = idx(b, "arith.addi", q, one);
        let rows = |b: &mut Builder, mat: ValueId, i: ValueId| {
            b.op1("mat.row", &[mat, i], Type::vec(t.clone()), vec![])
        };
        let xr = [rows(b, x, p), rows(b, x, p1)];
        let yr = [rows(b, yt, q), rows(b, yt, q1)];
        let z = b.constant(crate::vec::zero_attr(&t), &t);
        let gens = vec![Gen::reduce(BinOp::Add, &t); 4];
        let mul = BinOp::Mul.arith_op(&t);
        // Every row has `k` entries (`cols(x)`, and `cols(yt) = rows(y)`,
        // checked equal above), the loop's size.
        let four = build_gen_loop(b, k, &[z, z, z, z], gens, |b, j, hs| {
            let a = xr.map(|r| get_in_bounds(b, r, j));
            let c = yr.map(|r| get_in_bounds(b, r, j));
            for (g, (u, v)) in [(0, 0), (0, 1), (1, 0), (1, 1)].into_iter().enumerate() {
                let prod = b.op1(mul, &[a[u], c[v]], t.clone(), vec![]);
                emit(b, hs[g], prod);
            }
        });
        for &v in &four {
            emit(b, h[0], v);
        }
    })[0];
    let flat = build_gen_loop(b, total, &[], vec![Gen::collect(&t)], |b, e, h| {
        let p = idx(b, "arith.divsi", e, n);
        let q = idx(b, "arith.remsi", e, n);
        let pb = idx(b, "arith.divsi", p, two);
        let qb = idx(b, "arith.divsi", q, two);
        let in_rows = build_cmpi(b, "slt", pb, m2);
        let in_cols = build_cmpi(b, "slt", qb, n2);
        let inside = b.op1("arith.andi", &[in_rows, in_cols], Type::I1, vec![]);
        let v = crate::scf::build_if(
            b,
            inside,
            std::slice::from_ref(&t),
            |b| {
                // ((pb * n2 + qb) * 4 + (p % 2) * 2 + q % 2: the block, then
                // the entry within it.
                let blk = idx(b, "arith.muli", pb, n2);
                let blk = idx(b, "arith.addi", blk, qb);
                let four = const_int(b, 4, &Type::Index);
                let at = idx(b, "arith.muli", blk, four);
                let pr = idx(b, "arith.remsi", p, two);
                let qr = idx(b, "arith.remsi", q, two);
                let pr2 = idx(b, "arith.muli", pr, two);
                let at = idx(b, "arith.addi", at, pr2);
                let at = idx(b, "arith.addi", at, qr);
                vec![b.op1("vec.get", &[sums, at], t.clone(), vec![])]
            },
            |b| vec![row_dot(b, x, p, yt, q, &t)],
        );
        emit(b, h[0], v[0]);
    })[0];
    b.op1("mat.from", &[flat, m, n], Type::mat(t), vec![])
}
