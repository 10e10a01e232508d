//! Index-set splitting of clamped indices (issue 44, item 3): a stencil
//! reads its neighbours at `max(c - 1, 0)` and `min(c + 1, cols - 1)`, and
//! both clamps change their value only near the edges of the column range.
//!
//! In an innermost unit-step `scf.for %r = lb to ub`, each op
//! `arith.maxsi(r + a, k)` or `arith.minsi(r + a, k)` (either operand
//! order; `a` a constant with `|a| <= 2^20`, `r + a` written as `r`,
//! `r + a`, `a + r` or `r - a`; `k` defined outside the loop) equals `r + a`
//! exactly when `r >= k - a` (max) or `r <= k - a` (min). The loop is split
//! at those points into three loops over `[lb, m0)`, `[m0, m1)` and
//! `[m1, ub)`, with `m0 = min(max(lb, k - a ...), ub)` and
//! `m1 = max(min(ub, k - a + 1 ...), m0)`; the middle one computes no clamp
//! (each is replaced by its unclamped operand). The iterations run in the
//! original order and each computes the same values, so nothing else
//! changes (Allen and Kennedy, *Optimizing Compilers for Modern
//! Architectures*, §8.7, index-set splitting). The edges keep the loop as
//! it was. None of `r + a`, `k - a` and `k - a + 1` may wrap: the split is
//! versioned on `|lb|, |ub|, |k| <= 2^62`, and runs the original loop
//! otherwise.

use std::collections::HashMap;

use dialects::arith::{build_binop as binop, build_cmpi};
use dialects::scf;
use ir::clone::{clone_op_into, ValueMap};
use ir::{Builder, Context, OpId, Type, ValueId};

/// The largest `|a|` of a clamped `r + a`.
const MAX_OFFSET: i64 = 1 << 20;
/// The largest `|lb|`, `|ub|` and `|k|` under which no bound computation wraps.
const MAX_BOUND: i64 = 1 << 62;

/// One clamp `max(r + a, k)` (`is_max`) or `min(r + a, k)` of a loop.
struct Clamp {
    op: OpId,
    /// The operand `r + a` (its value replaces the clamp in the middle).
    x: ValueId,
    a: i64,
    k: ValueId,
    is_max: bool,
}

/// `a` when `x` is `r + a` (see the module doc).
pub(crate) fn offset(ctx: &Context, x: ValueId, r: ValueId) -> Option<i64> {
    if x == r {
        return Some(0);
    }
    let d = ctx.def_op(x)?;
    let (p, q) = match ctx.operands(d) {
        [p, q] => (*p, *q),
        _ => return None,
    };
    let c = |v| dialects::arith::fold::constant_int(ctx, v);
    let a = match ctx.op_name(d) {
        "arith.addi" if p == r => c(q)?,
        "arith.addi" if q == r => c(p)?,
        "arith.subi" if p == r => c(q)?.checked_neg()?,
        _ => return None,
    };
    (a.abs() <= MAX_OFFSET).then_some(a)
}

/// Whether `lp` is an innermost unit-step `scf.for`.
pub(crate) fn innermost_unit_for(ctx: &Context, lp: OpId) -> bool {
    ctx.is(lp, "scf.for")
        && scf::constant_int(ctx, ctx.operand(lp, 2)) == Some(1)
        && !ctx.walk_nested(lp).into_iter().any(|o| {
            o != lp
                && (ctx.is(o, "scf.for")
                    || ctx.is(o, "scf.while")
                    || ctx.is(o, "scf.forall")
                    || ctx.is(o, dialects::gen::LOOP))
        })
}

/// The clamps of `lp`'s index.
fn clamps(ctx: &Context, lp: OpId) -> Vec<Clamp> {
    let Some(r) = scf::induction_var(ctx, lp) else {
        return Vec::new();
    };
    let outside = |v: ValueId| ctx.value_block(v).is_some_and(|b| !ctx.block_in_op(b, lp));
    let mut out = Vec::new();
    for op in ctx.walk_nested(lp) {
        let is_max = match ctx.op_name(op) {
            "arith.maxi" | "arith.maxsi" => true,
            "arith.mini" | "arith.minsi" => false,
            _ => continue,
        };
        if *ctx.ty(ctx.result(op, 0)) != Type::Index {
            continue;
        }
        let (p, q) = (ctx.operand(op, 0), ctx.operand(op, 1));
        let found = [(p, q), (q, p)]
            .into_iter()
            .find_map(|(x, k)| Some((x, offset(ctx, x, r)?, k)).filter(|_| outside(k)));
        if let Some((x, a, k)) = found {
            out.push(Clamp {
                op,
                x,
                a,
                k,
                is_max,
            });
        }
    }
    out
}

/// Whether `lp` clamps its index (see the module doc): the edges that
/// [`split_index_sets`] leaves, which run a few iterations each and are not
/// worth versioning.
pub(crate) fn has_clamps(ctx: &Context, lp: OpId) -> bool {
    !clamps(ctx, lp).is_empty()
}

/// A copy of loop `lp` over `[lb, ub)` from `inits` at `b`, each clamp of
/// `unclamp` replaced by its operand; returns its results.
fn copy_loop(
    b: &mut Builder,
    lp: OpId,
    lb: ValueId,
    ub: ValueId,
    inits: &[ValueId],
    unclamp: &HashMap<OpId, ValueId>,
) -> Vec<ValueId> {
    let body = b.ctx.op_block(lp, 0);
    let args = b.ctx.block_args(body).to_vec();
    let ops = b.ctx.block_ops(body);
    let step = b.ctx.operand(lp, 2);
    scf::build_for(b, lb, ub, step, inits, |b, r, accs| {
        let mut map = ValueMap::new();
        map.insert(args[0], r);
        for (&a, &v) in args[1..].iter().zip(accs) {
            map.insert(a, v);
        }
        let (term, rest) = ops.split_last().expect("scf.for body has a terminator");
        for &op in rest {
            clone_op_into(b, op, &mut map);
        }
        let next = b
            .ctx
            .operands(*term)
            .iter()
            .map(|v| map.get(v).copied().unwrap_or(*v))
            .collect();
        for (&op, &x) in unclamp {
            let Some(&c) = map.get(&b.ctx.result(op, 0)) else {
                continue;
            };
            let x = map.get(&x).copied().unwrap_or(x);
            if let Some(cop) = b.ctx.def_op(c) {
                b.ctx.replace_all_uses(c, x);
                b.ctx.erase_op(cop);
            }
        }
        next
    })
    .to_vec()
}

/// Splits `lp` at its clamps `cs` (see the module doc).
fn split(ctx: &mut Context, lp: OpId, cs: &[Clamp]) {
    let (lb, ub) = (ctx.operand(lp, 0), ctx.operand(lp, 1));
    let inits: Vec<ValueId> = ctx.operands(lp)[3..].to_vec();
    let mut b = Builder::before(ctx, lp);
    let smart = std::mem::replace(&mut b.smart, false);
    let big = dialects::arith::const_int(&mut b, MAX_BOUND, &Type::Index);
    let small = dialects::arith::const_int(&mut b, -MAX_BOUND, &Type::Index);
    let mut cond: Option<ValueId> = None;
    let mut within = |b: &mut Builder, v: ValueId| {
        let lo = build_cmpi(b, "sge", v, small);
        let hi = build_cmpi(b, "sle", v, big);
        let both = binop(b, "arith.andi", lo, hi);
        cond = Some(match cond {
            Some(c) => binop(b, "arith.andi", c, both),
            None => both,
        });
    };
    within(&mut b, lb);
    within(&mut b, ub);
    for c in cs {
        within(&mut b, c.k);
    }
    let cond = cond.expect("two bounds");
    b.smart = smart;
    let unclamp: HashMap<OpId, ValueId> = cs.iter().map(|c| (c.op, c.x)).collect();
    let fast = |b: &mut Builder| -> Vec<ValueId> {
        let smart = std::mem::replace(&mut b.smart, false);
        let (mut lo, mut hi) = (lb, ub);
        for c in cs {
            let ka = if c.a == 0 {
                c.k
            } else {
                let a = dialects::arith::const_int(b, c.a, &Type::Index);
                binop(b, "arith.subi", c.k, a)
            };
            if c.is_max {
                lo = binop(b, "arith.maxi", lo, ka);
            } else {
                let one = dialects::arith::const_int(b, 1, &Type::Index);
                let ka1 = binop(b, "arith.addi", ka, one);
                hi = binop(b, "arith.mini", hi, ka1);
            }
        }
        let m0 = binop(b, "arith.mini", lo, ub);
        let m1 = binop(b, "arith.maxi", hi, m0);
        let none = HashMap::new();
        let first = copy_loop(b, lp, lb, m0, &inits, &none);
        let middle = copy_loop(b, lp, m0, m1, &first, &unclamp);
        let out = copy_loop(b, lp, m1, ub, &middle, &none);
        b.smart = smart;
        out
    };
    crate::bounds_version::version_loop(ctx, lp, cond, fast);
}

/// Splits every innermost unit-step `scf.for` with clamped indices (see
/// the module doc); returns how many loops it split (statistic
/// `index-split-loops`).
pub fn split_index_sets(ctx: &mut Context) -> u64 {
    let loops: Vec<OpId> = ctx
        .walk_all()
        .into_iter()
        .filter(|&op| innermost_unit_for(ctx, op))
        .collect();
    let mut n = 0;
    for lp in loops {
        if !ctx.alive(lp) {
            continue;
        }
        let cs = clamps(ctx, lp);
        if !cs.is_empty() {
            split(ctx, lp, &cs);
            n += 1;
        }
    }
    n
}
