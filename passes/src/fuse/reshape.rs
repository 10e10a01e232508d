//! Reads through a flattened reshape (issue 44, item 2: reshape and
//! transpose chains). `mat.flatten(m)` lowers to a loop over `r * c` that
//! reads `mat.get(m, k / c, k % c)`, and the flatten of a transpose to one
//! that reads `mat.get(m, k % r, k / r)`. When `m` is `mat.from(v, r, c)`,
//! the first read is element `k` of `v`, and the second element
//! `(k % r) * c + k / r`; both are in range, since `0 <= k < r * c` and
//! `mat.from` checked `r * c == len(v)` without overflow.
//!
//! [`read_through`] turns the first form into `vec.get(v, k)`, so that the
//! loop that built `v` fuses with its reader as any producer and consumer
//! of one index do (Futhark's fusion across reshapes does the same through
//! index functions). The second form is left to substitution
//! (`substitute::entry_reads`), which computes a map producer at the
//! permuted index. A `mat.from` left without uses becomes the check it
//! makes ([`assert_shape`]), so a bad shape still faults in its place.

use ir::pass::PassStats;
use ir::{Builder, Context, OpId, ValueId};

/// Where a flat read `mat.get` of `mat.from(v, r, c)` reads `v`.
pub(super) enum FlatRead {
    /// Element `k` (the read is at `(k / c, k % c)`).
    Flat(ValueId),
    /// Entry `(i, j)`, element `i * c + j` (the read is at
    /// `(k % r, k / r)`: the flatten of the transpose).
    Entry { i: ValueId, j: ValueId },
}

/// The element of `v` that `mat.get` op `g` reads from an `r x c` matrix
/// `mat.from(v, r, c)` (in either orientation, `dialects::mat::get_entry`),
/// when its entry is `(k / c, k % c)` or `(k % r, k / r)` for the index `k`
/// of a `gen.loop` over `r * c` (either operand order); and that loop.
/// Then `0 <= k < r * c`, so both entries are in range: `(k / c) * c +
/// k % c = k`, and `k % r < r`, `k / r < c`.
pub(super) fn flat_entry(
    ctx: &Context,
    g: OpId,
    r: ValueId,
    c: ValueId,
) -> Option<(FlatRead, OpId)> {
    let (i, j) = dialects::mat::get_entry(ctx, g);
    let operands = |v: ValueId, name: &str| {
        ctx.def_op_named(v, name)
            .map(|d| (ctx.operand(d, 0), ctx.operand(d, 1)))
    };
    let (read, k) = match (operands(i, "arith.divsi"), operands(j, "arith.remsi")) {
        (Some((k, d)), Some((k2, d2))) if k == k2 && d == c && d2 == c => (FlatRead::Flat(k), k),
        _ => {
            let (k, d) = operands(i, "arith.remsi")?;
            let (k2, d2) = operands(j, "arith.divsi")?;
            if k != k2 || d != r || d2 != r {
                return None;
            }
            (FlatRead::Entry { i, j }, k)
        }
    };
    let l = super::substitute::loop_of_index(ctx, k).filter(|&l| ctx.is(l, "gen.loop"))?;
    let (a, b) = operands(ctx.operand(l, 0), "arith.muli")?;
    ((a == r && b == c) || (a == c && b == r)).then_some((read, l))
}

/// Rewrites every read `mat.get(mat.from(v, r, c), k / c, k % c)` of a loop
/// over `r * c` ([`flat_entry`]), where `v` is a `gen.loop`'s result, to
/// `vec.get(v, k)`, and replaces each
/// `mat.from` so left without uses by its check. Returns the number of
/// reads rewritten.
pub(super) fn read_through(ctx: &mut Context, stats: &mut PassStats) -> u64 {
    let mut n = 0;
    for from in ctx.walk_all() {
        if !ctx.alive(from) || !ctx.is(from, "mat.from") || ctx.results(from).len() != 1 {
            continue;
        }
        let (v, r, c) = (
            ctx.operand(from, 0),
            ctx.operand(from, 1),
            ctx.operand(from, 2),
        );
        // Only a loop's vector: its producer may then fuse with the
        // reader (a read of any other vector gains nothing).
        if !ctx.def_op(v).is_some_and(|d| ctx.is(d, "gen.loop")) {
            continue;
        }
        let m = ctx.result(from, 0);
        let uses: Vec<(OpId, u32)> = ctx.uses(m).iter().map(|u| (u.op, u.index)).collect();
        let mut rewrote = false;
        for (g, index) in uses {
            if index != 0 || !ctx.is(g, "mat.get") {
                continue;
            }
            let Some((FlatRead::Flat(k), _)) = flat_entry(ctx, g, r, c) else {
                continue;
            };
            let ty = ctx.value(ctx.result(g, 0)).ty.clone();
            let mut b = Builder::before(ctx, g);
            b.smart = false;
            let x = b.op1("vec.get", &[v, k], ty, vec![]);
            let old = ctx.result(g, 0);
            ctx.replace_all_uses(old, x);
            ctx.erase_op(g);
            n += 1;
            rewrote = true;
        }
        if rewrote && ctx.uses(m).is_empty() {
            let mut b = Builder::before(ctx, from);
            let len = b.op1("vec.len", &[v], ir::Type::Index, vec![]);
            assert_shape(ctx, from, len);
            ctx.erase_op(from);
        }
    }
    stats.add("flat-reads", n);
    n
}

/// Puts, in place of `mat.from(v, r, c)` (op `from`, `len` the length of
/// `v`), the check that `mat.from` makes: `r` and `c` not negative and
/// `r * c == len` (computed without overflow: `len` is 0 when `c` is, else
/// `len / c == r` with no remainder). It stays when the matrix goes, so a
/// bad shape still faults there (message `shape mismatch in mat.from`).
pub(super) fn assert_shape(ctx: &mut Context, from: OpId, len: ValueId) {
    use dialects::arith::{build_cmpi, const_int};
    let (r, c) = (ctx.operand(from, 1), ctx.operand(from, 2));
    let mut b = Builder::before(ctx, from);
    let index = ir::Type::Index;
    let zero = const_int(&mut b, 0, &index);
    let one = const_int(&mut b, 1, &index);
    let r_ok = build_cmpi(&mut b, "sge", r, zero);
    let c_ok = build_cmpi(&mut b, "sge", c, zero);
    let c_zero = build_cmpi(&mut b, "eq", c, zero);
    let d = b.op1("arith.select", &[c_zero, one, c], index.clone(), vec![]);
    let q = b.op1("arith.divui", &[len, d], index.clone(), vec![]);
    let rem = b.op1("arith.remui", &[len, d], index.clone(), vec![]);
    let no_rem = build_cmpi(&mut b, "eq", rem, zero);
    let q_ok = build_cmpi(&mut b, "eq", q, r);
    let exact = b.op1("arith.andi", &[no_rem, q_ok], ir::Type::I1, vec![]);
    let empty = build_cmpi(&mut b, "eq", len, zero);
    let shape = b.op1(
        "arith.select",
        &[c_zero, empty, exact],
        ir::Type::I1,
        vec![],
    );
    let sizes = b.op1("arith.andi", &[r_ok, c_ok], ir::Type::I1, vec![]);
    let ok = b.op1("arith.andi", &[sizes, shape], ir::Type::I1, vec![]);
    dialects::scf::build_assert(&mut b, ok, "shape mismatch in mat.from");
}
