//! Strength reduction of the quotient and remainder of a loop index (issue
//! 44, item 3): a stencil written over a flat index `k` computes its row
//! `k / cols` and column `k rem cols` with two divisions per element, which
//! cost more than the stencil's arithmetic.
//!
//! In `scf.for %j = lb to ub step 1`, the ops `arith.divsi(x, d)` and
//! `arith.remsi(x, d)` with `x` = `%j` or `%j + off` (`d` and `off` defined
//! outside the loop; the parallel decomposition's chunks read `off + %j`)
//! become a quotient and a remainder that the loop carries: computed once
//! before it, and stepped per iteration by
//! `r' = r + 1 == d ? 0 : r + 1`, `q' = r + 1 == d ? q + 1 : q`, the
//! induction-variable elimination of a division by a loop invariant
//! (Muchnick, *Advanced Compiler Design and Implementation*, §14.1).
//!
//! A loop with one such pair becomes a loop nest instead (strip-mining at
//! the divisor's multiples): an outer loop over the quotient `q` and an
//! inner one over the remainder `r`, from `max(x0 - q d, 0)` to
//! `min(x1 - q d, d)` (`x0 = lb + off`, `x1 = ub + off`), the index being
//! `q d - off + r`. The iterations run in the original order. In the inner
//! loop the row is invariant and the column is its induction variable, so
//! the row's work moves out of it and what depends on the column is a
//! unit-stride loop (see [`crate::index_split`] for its edges).
//!
//! This is exact when `d > 0` and every `x` is at least 0 (truncating
//! division then is floor division) and `x` does not wrap: that is, when
//! `d > 0`, `off >= 0`, `lb >= 0` and `ub <= i64::MAX - off`. The loop is
//! versioned on that condition (`scf.if cond { the carried loop } else {
//! the loop as it was }`), so a zero divisor, a negative index or a wrap
//! still runs the original divisions, with their faults. Only index-typed
//! operations are rewritten.

use std::collections::HashMap;

use ir::clone::{clone_op_into, ValueMap};
use ir::{Builder, Context, OpId, Type, ValueId};

use dialects::arith::{build_binop as binop, build_cmpi};
use dialects::scf;

/// One quotient/remainder pair of a loop: `x = %j + off`, divisor `d`.
struct Pair {
    off: Option<ValueId>,
    d: ValueId,
    /// The `divsi` and `remsi` ops computing it.
    divs: Vec<OpId>,
    rems: Vec<OpId>,
}

/// The pairs of `lp`'s index (none when it is not a unit-step `scf.for`).
fn pairs(ctx: &Context, lp: OpId) -> Vec<Pair> {
    if !ctx.is(lp, "scf.for") || scf::constant_int(ctx, ctx.operand(lp, 2)) != Some(1) {
        return Vec::new();
    }
    let Some(j) = scf::induction_var(ctx, lp) else {
        return Vec::new();
    };
    let outside = |v: ValueId| !ctx.value_block(v).is_some_and(|b| ctx.block_in_op(b, lp));
    let mut by_key: HashMap<(Option<ValueId>, ValueId), usize> = HashMap::new();
    let mut out: Vec<Pair> = Vec::new();
    for op in ctx.walk_nested(lp) {
        let name = ctx.op_name(op);
        if !matches!(name, "arith.divsi" | "arith.remsi")
            || *ctx.ty(ctx.result(op, 0)) != Type::Index
        {
            continue;
        }
        let (x, d) = (ctx.operand(op, 0), ctx.operand(op, 1));
        if !outside(d) {
            continue;
        }
        let off = if x == j {
            None
        } else {
            match ctx.def_op(x) {
                Some(a) if ctx.is(a, "arith.addi") => {
                    let (p, q) = (ctx.operand(a, 0), ctx.operand(a, 1));
                    if p == j && outside(q) {
                        Some(q)
                    } else if q == j && outside(p) {
                        Some(p)
                    } else {
                        continue;
                    }
                }
                _ => continue,
            }
        };
        let k = *by_key.entry((off, d)).or_insert_with(|| {
            out.push(Pair {
                off,
                d,
                divs: Vec::new(),
                rems: Vec::new(),
            });
            out.len() - 1
        });
        if name == "arith.divsi" {
            out[k].divs.push(op);
        } else {
            out[k].rems.push(op);
        }
    }
    out
}

/// `x && y`.
fn and(b: &mut Builder, x: ValueId, y: ValueId) -> ValueId {
    binop(b, "arith.andi", x, y)
}

/// The condition, built in front of `lp`, under which every pair of `ps`
/// is exact: `lb >= 0` and, per pair, `d > 0`, `off >= 0` and
/// `ub <= i64::MAX - off`.
fn exact_condition(ctx: &mut Context, lp: OpId, ps: &[Pair]) -> ValueId {
    let (lb, ub) = (ctx.operand(lp, 0), ctx.operand(lp, 1));
    let mut b = Builder::before(ctx, lp);
    let zero = dialects::arith::const_int(&mut b, 0, &Type::Index);
    let max = dialects::arith::const_int(&mut b, i64::MAX, &Type::Index);
    let mut cond = build_cmpi(&mut b, "sge", lb, zero);
    for p in ps {
        let pos = build_cmpi(&mut b, "sgt", p.d, zero);
        cond = and(&mut b, cond, pos);
        if let Some(off) = p.off {
            let nonneg = build_cmpi(&mut b, "sge", off, zero);
            let room = binop(&mut b, "arith.subi", max, off);
            let fits = build_cmpi(&mut b, "sle", ub, room);
            cond = and(&mut b, cond, nonneg);
            cond = and(&mut b, cond, fits);
        }
    }
    cond
}

/// Clones the body of `lp` (all but its terminator) at `b` with the index
/// `j` and accumulators `accs`; returns the next accumulators. Each clone
/// of a division of `p` is replaced by `q`, of a remainder by `r`.
fn clone_body(
    b: &mut Builder,
    lp: OpId,
    j: ValueId,
    accs: &[ValueId],
    p: &Pair,
    q: ValueId,
    r: ValueId,
) -> Vec<ValueId> {
    let body = b.ctx.op_block(lp, 0);
    let body_args = b.ctx.block_args(body).to_vec();
    let body_ops = b.ctx.block_ops(body);
    let (term, rest) = body_ops
        .split_last()
        .expect("scf.for body has a terminator");
    let mut map = ValueMap::new();
    map.insert(body_args[0], j);
    for (&a, &v) in body_args[1..].iter().zip(accs) {
        map.insert(a, v);
    }
    for &op in rest {
        clone_op_into(b, op, &mut map);
    }
    let next: Vec<ValueId> = b
        .ctx
        .operands(*term)
        .iter()
        .map(|v| map.get(v).copied().unwrap_or(*v))
        .collect();
    let replaced: Vec<(ValueId, ValueId)> = p
        .divs
        .iter()
        .map(|&d| (d, q))
        .chain(p.rems.iter().map(|&e| (e, r)))
        .filter_map(|(op, new)| map.get(&b.ctx.result(op, 0)).map(|&c| (c, new)))
        .collect();
    for (c, new) in replaced {
        if let Some(op) = b.ctx.def_op(c) {
            b.ctx.replace_all_uses(c, new);
            b.ctx.erase_op(op);
        }
    }
    next
}

/// Rewrites loop `lp` with its one pair `p` into a nest (see the module
/// doc), versioned on [`exact_condition`].
fn nest(ctx: &mut Context, lp: OpId, p: &Pair) {
    let (lb, ub) = (ctx.operand(lp, 0), ctx.operand(lp, 1));
    let inits: Vec<ValueId> = ctx.operands(lp)[3..].to_vec();
    let cond = exact_condition(ctx, lp, std::slice::from_ref(p));
    let fast = |b: &mut Builder| -> Vec<ValueId> {
        let smart = std::mem::replace(&mut b.smart, false);
        let zero = dialects::arith::const_int(b, 0, &Type::Index);
        let one = dialects::arith::const_int(b, 1, &Type::Index);
        let d = p.d;
        let (x0, x1) = match p.off {
            Some(off) => (
                binop(b, "arith.addi", lb, off),
                binop(b, "arith.addi", ub, off),
            ),
            None => (lb, ub),
        };
        // q runs from x0 / d to ceil(x1 / d) (without computing x1 + d - 1,
        // which may wrap). Every q d of the loop is at most x1, so no
        // product wraps; when ub <= lb each inner loop is empty.
        let q0 = binop(b, "arith.divsi", x0, d);
        let qf = binop(b, "arith.divsi", x1, d);
        let rf = binop(b, "arith.remsi", x1, d);
        let part = build_cmpi(b, "ne", rf, zero);
        let inc = b.op1("arith.select", &[part, one, zero], Type::Index, vec![]);
        let qe = binop(b, "arith.addi", qf, inc);
        let out = scf::build_for(b, q0, qe, one, &inits, |b, q, accs| {
            let base = binop(b, "arith.muli", q, d);
            let from = binop(b, "arith.subi", x0, base);
            let cs = binop(b, "arith.maxi", from, zero);
            let to = binop(b, "arith.subi", x1, base);
            let ce = binop(b, "arith.mini", to, d);
            let jb = match p.off {
                Some(off) => binop(b, "arith.subi", base, off),
                None => base,
            };
            scf::build_for(b, cs, ce, one, accs, |b, r, accs| {
                let j = binop(b, "arith.addi", jb, r);
                clone_body(b, lp, j, accs, p, q, r)
            })
            .to_vec()
        });
        b.smart = smart;
        out.to_vec()
    };
    crate::bounds_version::version_loop(ctx, lp, cond, fast);
}

/// Rewrites loop `lp` with pairs `ps`.
fn reduce(ctx: &mut Context, lp: OpId, ps: &[Pair]) {
    let (lb, ub) = (ctx.operand(lp, 0), ctx.operand(lp, 1));
    let inits: Vec<ValueId> = ctx.operands(lp)[3..].to_vec();
    let body = ctx.op_block(lp, 0);
    let body_args = ctx.block_args(body).to_vec();
    let body_ops = ctx.block_ops(body);
    let term = *body_ops.last().expect("scf.for body has a terminator");

    let cond = exact_condition(ctx, lp, ps);
    let mut b = Builder::before(ctx, lp);
    let zero = dialects::arith::const_int(&mut b, 0, &Type::Index);
    let one = dialects::arith::const_int(&mut b, 1, &Type::Index);
    let fast = |b: &mut Builder| -> Vec<ValueId> {
        let smart = std::mem::replace(&mut b.smart, false);
        // The first index, quotient and remainder of each pair.
        let mut all_inits = inits.clone();
        for p in ps {
            let x0 = match p.off {
                Some(off) => binop(b, "arith.addi", lb, off),
                None => lb,
            };
            all_inits.push(binop(b, "arith.divsi", x0, p.d));
            all_inits.push(binop(b, "arith.remsi", x0, p.d));
        }
        let m = inits.len();
        let mut replaced: Vec<(ValueId, ValueId)> = Vec::new();
        let out = scf::build_for(b, lb, ub, one, &all_inits, |b, j, accs| {
            let mut map = ValueMap::new();
            map.insert(body_args[0], j);
            for (k, &a) in body_args[1..].iter().enumerate() {
                map.insert(a, accs[k]);
            }
            for &op in &body_ops {
                if op != term {
                    clone_op_into(b, op, &mut map);
                }
            }
            let mut next: Vec<ValueId> = b
                .ctx
                .operands(term)
                .iter()
                .map(|v| map.get(v).copied().unwrap_or(*v))
                .collect();
            for (k, p) in ps.iter().enumerate() {
                let (q, r) = (accs[m + 2 * k], accs[m + 2 * k + 1]);
                for &d in &p.divs {
                    replaced.push((b.ctx.result(d, 0), q));
                }
                for &e in &p.rems {
                    replaced.push((b.ctx.result(e, 0), r));
                }
                let r1 = binop(b, "arith.addi", r, one);
                let wrap = build_cmpi(b, "eq", r1, p.d);
                let q1 = binop(b, "arith.addi", q, one);
                next.push(b.op1("arith.select", &[wrap, q1, q], Type::Index, vec![]));
                next.push(b.op1("arith.select", &[wrap, zero, r1], Type::Index, vec![]));
            }
            // The clones of the divisions stand for the carried values.
            replaced = replaced
                .iter()
                .filter_map(|&(old, new)| map.get(&old).map(|&c| (c, new)))
                .collect();
            next
        });
        for (c, new) in replaced {
            if let Some(op) = b.ctx.def_op(c) {
                b.ctx.replace_all_uses(c, new);
                b.ctx.erase_op(op);
            }
        }
        b.smart = smart;
        out[..m].to_vec()
    };
    crate::bounds_version::version_loop(ctx, lp, cond, fast);
}

/// Strength-reduces the index divisions of every unit-step `scf.for` (see
/// the module doc); returns how many loops it rewrote (statistic
/// `strength-reduced-loops`).
pub fn strength_reduce(ctx: &mut Context) -> u64 {
    // Inner loops first: an outer loop's versions then copy them reduced.
    let loops: Vec<OpId> = ctx
        .walk_all()
        .into_iter()
        .rev()
        .filter(|&op| ctx.is(op, "scf.for"))
        .collect();
    let mut n = 0;
    for lp in loops {
        if !ctx.alive(lp) {
            continue;
        }
        let ps = pairs(ctx, lp);
        if ps.len() == 1 {
            nest(ctx, lp, &ps[0]);
            n += 1;
        } else if !ps.is_empty() {
            reduce(ctx, lp, &ps);
            n += 1;
        }
    }
    n
}
