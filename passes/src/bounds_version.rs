//! Loop versioning for bounds checks (issue 9, item 5: checks hoisted out
//! of loops; the range reasoning of Henriksen 2014 §6.1, where an
//! assertion on the loop's index becomes one on its bounds).
//!
//! An innermost `gen.loop` of size `s` with index `i` that reads
//! `vec.get(v, i + c)`, `vec.get(v, c - i)` or `vec.get(v, k * i + c)`
//! (`v` and `c` defined outside the loop, `c` may be absent, i.e. `i`;
//! `k >= 2` a constant) checks each read in every iteration. All of them
//! are in bounds in every iteration exactly when, for `s > 0`:
//! - `v[i + c]`: `0 <= c` and `c <= len(v) - s`;
//! - `v[c - i]`: `c < len(v)` and `c >= s - 1`;
//! - `v[k i + c]`: `0 <= c < len(v)` and `s - 1 <= (len(v) - 1 - c) / k`
//!   (the last read, `k (s - 1) + c`, at most `len(v) - 1`, without
//!   computing that product).
//!
//! (For `s > 0`, `len(v) - s` and `s - 1` cannot overflow, nor can `i + c`
//! and `c - i` inside the loop then.) The loop becomes
//! `scf.if (all conditions) { the loop, those reads in_bounds } else { the
//! loop as it was }`: the fast copy never faults on these reads, and when a
//! read would fault the original loop runs and faults at the same read, in
//! the same iteration, with the same message. The check moves out of the
//! loop without moving the fault. Loops that contain another loop are left
//! alone (versioning them would copy the inner loops too).
//!
//! After lowering, [`version_scf_loops`] does the same for an innermost
//! unit-step `scf.for %r = lb to ub` and its reads `vec.get(v, x)` and
//! `mat.get(m, x, y)` (not transposed; `v`, `m` defined outside the loop)
//! whose every index is either defined outside the loop (`0 <= x < len`
//! must hold) or `r + a` for a constant `|a| <= 2^20` (written `r`,
//! `r + a`, `a + r`, `r - a`; `lb + a >= 0` and `ub + a <= len` must hold),
//! and at least one index is of the second kind. A loop that clamps its
//! index (the edges that [`crate::index_split`] leaves) is not versioned.
//! The condition is
//! `ub <= lb` (no iteration) or `|lb|, |ub| <= 2^62` (nothing wraps) and
//! every such read's bounds; the loops that [`crate::divrem`] and
//! [`crate::index_split`] make for a stencil's interior then run without
//! checks.

use dialects::arith::build_cmpi;
use ir::clone::{clone_op_into, ValueMap};
use ir::{Attribute, Builder, Context, OpId, Type, ValueId};

/// How a read's index depends on the loop index `i`.
#[derive(Clone, Copy)]
enum Index {
    /// `i + c` (`c` absent: `i`).
    Up(Option<ValueId>),
    /// `c - i`.
    Down(ValueId),
    /// `k * i + c` with a constant `k >= 2` (`c` absent: `k * i`).
    Strided(i64, Option<ValueId>),
}

/// `k` when `v` is `arith.muli` of `i` and a constant `k >= 2`, either way
/// round.
fn stride_of(ctx: &Context, v: ValueId, i: ValueId) -> Option<i64> {
    let d = ctx.def_op_named(v, "arith.muli")?;
    let (x, y) = (ctx.operand(d, 0), ctx.operand(d, 1));
    let k = if x == i {
        y
    } else if y == i {
        x
    } else {
        return None;
    };
    dialects::arith::fold::constant_int(ctx, k).filter(|&k| k >= 2)
}

/// The reads of `lp` that versioning covers, as `(read, vector, index)`.
fn reads(ctx: &Context, lp: OpId) -> Vec<(OpId, ValueId, Index)> {
    let body = ctx.region(ctx.regions(lp)[0]).blocks[0];
    let i = ctx.block_args(body)[0];
    let outside = |v: ValueId| ctx.value_block(v).is_some_and(|b| !ctx.block_in_op(b, lp));
    let mut out = Vec::new();
    for op in ctx.walk_nested(lp) {
        if !ctx.is(op, "vec.get") || ctx.attr(op, "in_bounds").is_some() {
            continue;
        }
        let (v, idx) = (ctx.operand(op, 0), ctx.operand(op, 1));
        if !outside(v) {
            continue;
        }
        let form = if idx == i {
            Some(Index::Up(None))
        } else if let Some(d) = ctx.def_op(idx) {
            let (x, y) = match ctx.operands(d) {
                [x, y] => (*x, *y),
                _ => continue,
            };
            match ctx.op_name(d) {
                "arith.addi" if x == i && outside(y) => Some(Index::Up(Some(y))),
                "arith.addi" if y == i && outside(x) => Some(Index::Up(Some(x))),
                "arith.subi" if y == i && outside(x) => Some(Index::Down(x)),
                "arith.muli" => stride_of(ctx, idx, i).map(|k| Index::Strided(k, None)),
                "arith.addi" => [(x, y), (y, x)].into_iter().find_map(|(m, c)| {
                    let k = stride_of(ctx, m, i)?;
                    outside(c).then_some(Index::Strided(k, Some(c)))
                }),
                _ => None,
            }
        } else {
            None
        };
        if let Some(f) = form {
            out.push((op, v, f));
        }
    }
    out
}

fn and(b: &mut Builder, x: ValueId, y: ValueId) -> ValueId {
    b.op1("arith.andi", &[x, y], Type::I1, vec![])
}

/// The condition "every read of `rs` is in bounds in every iteration",
/// built in front of `lp`.
fn condition(ctx: &mut Context, lp: OpId, rs: &[(OpId, ValueId, Index)]) -> ValueId {
    let s = ctx.operand(lp, 0);
    let mut b = Builder::before(ctx, lp);
    let zero = b.constant(Attribute::int(0, Type::Index), &Type::Index);
    let one = b.constant(Attribute::int(1, Type::Index), &Type::Index);
    let mut all: Option<ValueId> = None;
    for &(_, v, form) in rs {
        let len = b.op1("vec.len", &[v], Type::Index, vec![]);
        let ok = match form {
            Index::Up(None) => build_cmpi(&mut b, "sle", s, len),
            Index::Up(Some(c)) => {
                let room = b.op1("arith.subi", &[len, s], Type::Index, vec![]);
                let lo = build_cmpi(&mut b, "sge", c, zero);
                let hi = build_cmpi(&mut b, "sle", c, room);
                and(&mut b, lo, hi)
            }
            Index::Down(c) => {
                let last = b.op1("arith.subi", &[s, one], Type::Index, vec![]);
                let lo = build_cmpi(&mut b, "sge", c, last);
                let hi = build_cmpi(&mut b, "slt", c, len);
                and(&mut b, lo, hi)
            }
            Index::Strided(k, c) => {
                // 0 <= c < len and k (s - 1) + c <= len - 1, the last as
                // s - 1 <= (len - 1 - c) / k: no product that overflows,
                // and the quotient of a non-negative number (c < len).
                let c = c.unwrap_or(zero);
                let kc = b.constant(Attribute::int(k, Type::Index), &Type::Index);
                let lo = build_cmpi(&mut b, "sge", c, zero);
                let hi = build_cmpi(&mut b, "slt", c, len);
                let last = b.op1("arith.subi", &[len, one], Type::Index, vec![]);
                let room = b.op1("arith.subi", &[last, c], Type::Index, vec![]);
                let steps = b.op1("arith.divsi", &[room, kc], Type::Index, vec![]);
                let s1 = b.op1("arith.subi", &[s, one], Type::Index, vec![]);
                let fits = build_cmpi(&mut b, "sle", s1, steps);
                let both = and(&mut b, lo, hi);
                and(&mut b, both, fits)
            }
        };
        all = Some(match all {
            Some(a) => and(&mut b, a, ok),
            None => ok,
        });
    }
    all.expect("at least one read")
}

/// A verbatim copy of loop `lp` at `b` (no folding, so that each cloned op
/// stands where the original does); returns its results and the map from
/// the original values to the copies.
fn verbatim_copy(b: &mut Builder, lp: OpId) -> (Vec<ValueId>, ValueMap) {
    let smart = std::mem::replace(&mut b.smart, false);
    let mut map = ValueMap::new();
    let out = clone_op_into(b, lp, &mut map).to_vec();
    b.smart = smart;
    (out, map)
}

/// Replaces loop `lp` by `scf.if cond { fast } else { lp as it was }`: the
/// results of `fast` (built in the then-branch) when `cond` holds, the
/// original loop's otherwise. Shared by the loop versionings (this module
/// and [`crate::divrem`]).
pub(crate) fn version_loop(
    ctx: &mut Context,
    lp: OpId,
    cond: ValueId,
    fast: impl FnOnce(&mut Builder) -> Vec<ValueId>,
) {
    let results: Vec<ValueId> = ctx.results(lp).to_vec();
    let types: Vec<Type> = results.iter().map(|&r| ctx.ty(r).clone()).collect();
    let mut b = Builder::before(ctx, lp);
    let new = dialects::scf::build_if(&mut b, cond, &types, fast, |b| verbatim_copy(b, lp).0);
    for (&old, &new) in results.iter().zip(new.iter()) {
        ctx.replace_all_uses(old, new);
    }
    ctx.erase_op(lp);
}

/// Versions `lp`; returns whether it did.
fn version(ctx: &mut Context, lp: OpId) -> bool {
    let rs = reads(ctx, lp);
    if rs.is_empty() {
        return false;
    }
    let cond = condition(ctx, lp, &rs);
    version_loop(ctx, lp, cond, |b| {
        let (out, map) = verbatim_copy(b, lp);
        // The clone of each covered read: the same op position, found
        // through its cloned result.
        for &(read, _, _) in &rs {
            let r = b.ctx.result(read, 0);
            if let Some(op) = map.get(&r).and_then(|&c| b.ctx.def_op(c)) {
                b.ctx.set_attr(op, "in_bounds", Attribute::Unit);
            }
        }
        out
    });
    true
}

/// Versions every innermost `gen.loop` with reads at `i + c` or `c - i`
/// not yet proved in bounds; returns how many loops it versioned.
pub fn version_loops(ctx: &mut Context) -> u64 {
    let loops: Vec<OpId> = ctx
        .walk_all()
        .into_iter()
        .filter(|&op| {
            ctx.is(op, dialects::gen::LOOP)
                && !ctx.walk_nested(op).into_iter().any(|o| {
                    ctx.is(o, dialects::gen::LOOP) || ctx.is(o, "scf.for") || ctx.is(o, "scf.while")
                })
        })
        .collect();
    let mut n = 0;
    for lp in loops {
        if ctx.alive(lp) && version(ctx, lp) {
            n += 1;
        }
    }
    n
}

/// How an index of a read in an `scf.for` depends on its index `r`.
#[derive(Clone, Copy)]
enum ScfIndex {
    /// A value defined outside the loop.
    Invariant(ValueId),
    /// `r + a`.
    Shift(i64),
}

/// The form of index `x` in loop `lp` with index `r`.
fn scf_index(ctx: &Context, lp: OpId, r: ValueId, x: ValueId) -> Option<ScfIndex> {
    if ctx.value_block(x).is_some_and(|b| !ctx.block_in_op(b, lp)) {
        return Some(ScfIndex::Invariant(x));
    }
    crate::index_split::offset(ctx, x, r).map(ScfIndex::Shift)
}

/// A read that [`version_scf_loops`] covers: the read, and each index with
/// the length it is checked against (`None`: `vec.len`, `Some(false)`:
/// `mat.rows`, `Some(true)`: `mat.cols`).
type ScfRead = (OpId, Vec<(ScfIndex, Option<bool>)>);

/// The reads of `lp` that [`version_scf_loops`] covers.
fn scf_reads(ctx: &Context, lp: OpId) -> Vec<ScfRead> {
    let Some(r) = dialects::scf::induction_var(ctx, lp) else {
        return Vec::new();
    };
    let outside = |v: ValueId| ctx.value_block(v).is_some_and(|b| !ctx.block_in_op(b, lp));
    let mut out = Vec::new();
    for op in ctx.walk_nested(lp) {
        if ctx.attr(op, "in_bounds").is_some() {
            continue;
        }
        let lens: &[Option<bool>] = match ctx.op_name(op) {
            "vec.get" => &[None],
            "mat.get" if !dialects::mat::get_is_transposed(ctx, op) => &[Some(false), Some(true)],
            _ => continue,
        };
        if !outside(ctx.operand(op, 0)) {
            continue;
        }
        let idx: Option<Vec<(ScfIndex, Option<bool>)>> = lens
            .iter()
            .enumerate()
            .map(|(k, &l)| Some((scf_index(ctx, lp, r, ctx.operand(op, k + 1))?, l)))
            .collect();
        match idx {
            Some(idx) if idx.iter().any(|(f, _)| matches!(f, ScfIndex::Shift(_))) => {
                out.push((op, idx))
            }
            _ => {}
        }
    }
    out
}

/// Versions `lp` on the bounds of its reads `rs` (see the module doc).
fn version_scf(ctx: &mut Context, lp: OpId, rs: &[ScfRead]) {
    let (lb, ub) = (ctx.operand(lp, 0), ctx.operand(lp, 1));
    let mut b = Builder::before(ctx, lp);
    let smart = std::mem::replace(&mut b.smart, false);
    let zero = b.constant(Attribute::int(0, Type::Index), &Type::Index);
    let big = b.constant(Attribute::int(1 << 62, Type::Index), &Type::Index);
    let small = b.constant(Attribute::int(-(1 << 62), Type::Index), &Type::Index);
    let mut all = build_cmpi(&mut b, "sge", lb, small);
    let ub_ok = build_cmpi(&mut b, "sle", ub, big);
    all = and(&mut b, all, ub_ok);
    for (op, idx) in rs {
        let src = b.ctx.operand(*op, 0);
        for &(form, which) in idx {
            let len = match which {
                None => b.op1("vec.len", &[src], Type::Index, vec![]),
                Some(false) => b.op1("mat.rows", &[src], Type::Index, vec![]),
                Some(true) => b.op1("mat.cols", &[src], Type::Index, vec![]),
            };
            let ok = match form {
                ScfIndex::Invariant(x) => {
                    let lo = build_cmpi(&mut b, "sge", x, zero);
                    let hi = build_cmpi(&mut b, "slt", x, len);
                    and(&mut b, lo, hi)
                }
                ScfIndex::Shift(a) => {
                    let a = b.constant(Attribute::int(a, Type::Index), &Type::Index);
                    let first = b.op1("arith.addi", &[lb, a], Type::Index, vec![]);
                    let end = b.op1("arith.addi", &[ub, a], Type::Index, vec![]);
                    let lo = build_cmpi(&mut b, "sge", first, zero);
                    let hi = build_cmpi(&mut b, "sle", end, len);
                    and(&mut b, lo, hi)
                }
            };
            all = and(&mut b, all, ok);
        }
    }
    let empty = build_cmpi(&mut b, "sle", ub, lb);
    let cond = b.op1("arith.ori", &[empty, all], Type::I1, vec![]);
    b.smart = smart;
    version_loop(ctx, lp, cond, |b| {
        let (out, map) = verbatim_copy(b, lp);
        for (read, _) in rs {
            let r = b.ctx.result(*read, 0);
            if let Some(op) = map.get(&r).and_then(|&c| b.ctx.def_op(c)) {
                b.ctx.set_attr(op, "in_bounds", Attribute::Unit);
            }
        }
        out
    });
}

/// Versions every innermost unit-step `scf.for` whose reads at `r + a`
/// are not yet proved in bounds (see the module doc); returns how many
/// loops it versioned (statistic `versioned-scf-loops`).
pub fn version_scf_loops(ctx: &mut Context) -> u64 {
    let loops: Vec<OpId> = ctx
        .walk_all()
        .into_iter()
        .filter(|&op| crate::index_split::innermost_unit_for(ctx, op))
        .collect();
    let mut n = 0;
    for lp in loops {
        if !ctx.alive(lp) || crate::index_split::has_clamps(ctx, lp) {
            continue;
        }
        let rs = scf_reads(ctx, lp);
        if !rs.is_empty() {
            version_scf(ctx, lp, &rs);
            n += 1;
        }
    }
    n
}
