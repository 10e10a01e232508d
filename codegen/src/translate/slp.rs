//! Lane pairing of split reductions on Cranelift (issue 9, item 9).
//!
//! `split-reductions` gives a reduction loop `k` accumulators and a body of
//! `k` lanes, lane `g` reading at `base + g` and adding into accumulator
//! `g` (the dot products of a lowered `mat.mul` are such loops). Cranelift
//! does not vectorize, so this pairs the lanes itself, in the manner of
//! superword-level parallelism (Larsen and Amarasinghe, PLDI 2000): lanes
//! `g` and `g + 1` become one `f64x2` computation when their expression
//! trees match op for op, their loads read neighbouring elements of one
//! vector, and nothing else in the body uses a lane's values. The
//! accumulators travel as `f64x2` block parameters and are split into
//! scalars after the loop.
//!
//! Every lane op is an IEEE operation on one lane, so the paired loop
//! computes exactly the scalar loop's values (no reassociation). The one
//! exception is contraction ([`crate::contract`]), a permission: a
//! contracted multiply-add in the lanes stays a multiply and an add.
//! Cranelift 0.135 lowers an `f64x2` `fma` on x86-64 only to `vfmadd213pd`
//! or `vfmadd132pd`, whose destination is tied to a factor, never to the
//! accumulator: every accumulator's new value lands in another register,
//! the back edge moves each one back, and the moves spill. Measured, one
//! thread, AVX-512: the 2x2-blocked 512x512 `mat.mul` took 20-22 ms fused
//! and 14 ms unfused; the jammed `M^T x` (32 lane accumulators) 5.1 ms
//! fused and 4.0 ms unfused. Loads are paired only where both are proved in bounds
//! (never under `--keep-all-checks`), so no check is dropped. Anything else
//! (other ops in the lanes, odd lane counts, a lane value used elsewhere)
//! leaves the loop to the scalar translation.

use std::cell::Cell;

use cranelift_codegen::ir::types::F64X2;
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Value};
use rustc_hash::{FxHashMap, FxHashSet};

use ir::context::ValueDef;
use ir::spec::Traits;
use ir::{Context, Diagnostic, OpId, Type, ValueId};

use super::FnCx;
use crate::abi;

thread_local! {
    /// Loops paired on this thread (for tests: each test compiles on its own
    /// thread).
    static PAIRED: Cell<usize> = const { Cell::new(0) };
}

/// How many loops this thread has translated with paired lanes.
pub fn paired_loops() -> usize {
    PAIRED.with(|p| p.get())
}

/// One `f64x2` value of the paired body: lanes `(a, b)` of the scalar body.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Node {
    /// The accumulators of pair `p` of [`Plan::pairs`].
    Acc(usize),
    /// One scalar defined outside the lanes, in both lanes.
    Splat(ValueId),
    /// `vec.get v, i` and `vec.get v, i + 1`, or `mat.get m, r, c` and
    /// `mat.get m, r, c + 1` (lane ops `a`, `b`).
    Load(OpId, OpId),
    /// The same arithmetic op in both lanes.
    Arith(OpId, OpId),
}

/// A loop whose lanes pair: the body ops that belong to lanes, and the
/// trees of the yielded pairs.
pub(super) struct Plan {
    lane_ops: FxHashSet<OpId>,
    /// The accumulator indices `(a, b)` packed into each `f64x2`
    /// accumulator, lane 0 and lane 1.
    pairs: Vec<(usize, usize)>,
    /// The root of each pair, in the order of `pairs`.
    roots: Vec<Node>,
    /// The operand nodes of each `Arith` node.
    kids: FxHashMap<Node, Vec<Node>>,
}

/// The arithmetic ops a lane may hold, all exact per lane on `f64x2`.
pub(super) fn lane_arith(name: &str) -> bool {
    matches!(
        name,
        "arith.addf" | "arith.subf" | "arith.mulf" | "arith.divf" | "arith.negf"
    )
}

/// `v` as `(base, offset)`: `addi base, c` (either order) with `c` an
/// index constant, or `(v, 0)`.
pub(super) fn split_offset(ctx: &Context, v: ValueId) -> (ValueId, i64) {
    if let ValueDef::Result(op, 0) = ctx.value(v).def {
        if ctx.op_name(op) == "arith.addi" {
            let ops = ctx.operands(op);
            for (x, c) in [(ops[0], ops[1]), (ops[1], ops[0])] {
                if let Some(k) = dialects::arith::fold::constant_int(ctx, c) {
                    return (x, k);
                }
            }
        }
    }
    (v, 0)
}

/// The address of the `f64` elements `x` and `x + 1` at `ptr` (plus
/// `row` elements, where given), as a base and a byte displacement: `base +
/// c` becomes `base`'s address plus `8c` bytes, so that the loads at
/// `i - 1`, `i` and `i + 1` share one address (the elements are in bounds,
/// so neither sum wraps). Shared by the pairing of reduction lanes and
/// [`super::pair_map`].
pub(super) fn lane_addr(cx: &mut FnCx, ptr: Value, row: Option<Value>, x: ValueId) -> (Value, i32) {
    let (base, c) = split_offset(cx.ctx, x);
    let (i, disp) = match c.checked_mul(8).and_then(|d| i32::try_from(d).ok()) {
        Some(d) => (cx.get1(base), d),
        None => (cx.get1(x), 0),
    };
    let k = match row {
        Some(r) => cx.b.ins().iadd(r, i),
        None => i,
    };
    (cx.elem_addr(ptr, k, 8), disp)
}

/// The `f64x2` form of [`lane_arith`] op `name` on operands `k`.
pub(super) fn emit_lane_arith(cx: &mut FnCx, name: &str, k: &[Value]) -> Value {
    match name {
        "arith.addf" => cx.b.ins().fadd(k[0], k[1]),
        "arith.subf" => cx.b.ins().fsub(k[0], k[1]),
        "arith.mulf" => cx.b.ins().fmul(k[0], k[1]),
        "arith.divf" => cx.b.ins().fdiv(k[0], k[1]),
        _ => cx.b.ins().fneg(k[0]),
    }
}

/// The flags of an `f64x2` load or store of two proved elements: it cannot
/// trap, but is only 8-byte aligned.
pub(super) fn lane_flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

struct Matcher<'a> {
    ctx: &'a Context,
    body: ir::BlockId,
    /// Accumulator block arguments and their index.
    accs: FxHashMap<ValueId, usize>,
    /// Per accumulator index: its pair and whether it is lane 0.
    acc_pair: FxHashMap<usize, (usize, bool)>,
    lane_ops: FxHashSet<OpId>,
    kids: FxHashMap<Node, Vec<Node>>,
    /// The node of each lane pair already matched: a lane value used by
    /// several lane ops (a row of `a` read once for two dot products of a
    /// blocked `mat.mul`) is one `f64x2` value.
    memo: FxHashMap<(ValueId, ValueId), Node>,
}

impl Matcher<'_> {
    /// The op of `v` if it is defined by an op of the loop body.
    fn body_op(&self, v: ValueId) -> Option<OpId> {
        match self.ctx.value(v).def {
            ValueDef::Result(op, _) if self.ctx.op(op).parent == Some(self.body) => Some(op),
            _ => None,
        }
    }

    /// The node computing lanes `a` (lane 0) and `b` (lane 1), or `None`.
    fn pair(&mut self, a: ValueId, b: ValueId) -> Option<Node> {
        if let Some(&n) = self.memo.get(&(a, b)) {
            return Some(n);
        }
        let n = self.pair_new(a, b)?;
        self.memo.insert((a, b), n);
        Some(n)
    }

    fn pair_new(&mut self, a: ValueId, b: ValueId) -> Option<Node> {
        let ctx = self.ctx;
        if *ctx.ty(a) != Type::F64 || *ctx.ty(b) != Type::F64 {
            return None;
        }
        if let (Some(&i), Some(&j)) = (self.accs.get(&a), self.accs.get(&b)) {
            let (p, first) = *self.acc_pair.get(&i)?;
            return (first && self.acc_pair.get(&j) == Some(&(p, false))).then_some(Node::Acc(p));
        }
        let (oa, ob) = (self.body_op(a), self.body_op(b));
        if a == b {
            // A scalar both lanes share: defined outside the lanes.
            return match oa {
                Some(op) if self.lane_ops.contains(&op) => None,
                _ => Some(Node::Splat(a)),
            };
        }
        let (oa, ob) = (oa?, ob?);
        // Each lane op belongs to one pair (checked by `insert`), and every
        // use of a lane value is a lane op (checked in `plan`).
        let name = ctx.op_name(oa);
        if name != ctx.op_name(ob) || ctx.op(oa).attrs != ctx.op(ob).attrs {
            return None;
        }
        if !self.lane_ops.insert(oa) || !self.lane_ops.insert(ob) {
            return None;
        }
        if name == "vec.get" {
            let (va, vb) = (ctx.operand(oa, 0), ctx.operand(ob, 0));
            let ok = va == vb
                && *ctx.ty(va) == Type::vec(Type::F64)
                && crate::proofs::proved_in_bounds(ctx, oa)
                && crate::proofs::proved_in_bounds(ctx, ob)
                && {
                    let (ba, ka) = split_offset(ctx, ctx.operand(oa, 1));
                    let (bb, kb) = split_offset(ctx, ctx.operand(ob, 1));
                    ba == bb && ka.checked_add(1) == Some(kb)
                };
            return ok.then_some(Node::Load(oa, ob));
        }
        if name == "mat.get" {
            // Entries `(r, c)` and `(r, c + 1)` of one row-major matrix.
            let (ma, mb) = (ctx.operand(oa, 0), ctx.operand(ob, 0));
            let ok = ma == mb
                && *ctx.ty(ma) == Type::mat(Type::F64)
                && !dialects::mat::get_is_transposed(ctx, oa)
                && !dialects::mat::get_is_transposed(ctx, ob)
                && ctx.operand(oa, 1) == ctx.operand(ob, 1)
                && crate::proofs::proved_in_bounds(ctx, oa)
                && crate::proofs::proved_in_bounds(ctx, ob)
                && {
                    let (ba, ka) = split_offset(ctx, ctx.operand(oa, 2));
                    let (bb, kb) = split_offset(ctx, ctx.operand(ob, 2));
                    ba == bb && ka.checked_add(1) == Some(kb)
                };
            return ok.then_some(Node::Load(oa, ob));
        }
        if !lane_arith(name) || !ctx.regions(oa).is_empty() {
            return None;
        }
        let (xa, xb) = (ctx.operands(oa).to_vec(), ctx.operands(ob).to_vec());
        if xa.len() != xb.len() {
            return None;
        }
        let mut kids = Vec::with_capacity(xa.len());
        for (&x, &y) in xa.iter().zip(&xb) {
            kids.push(self.pair(x, y)?);
        }
        self.kids.insert(Node::Arith(oa, ob), kids);
        Some(Node::Arith(oa, ob))
    }
}

/// The plan for `scf.for` op `op`, if its lanes pair.
pub(super) fn plan(ctx: &Context, op: OpId) -> Option<Plan> {
    let body = ctx.op_block(op, 0);
    let args = ctx.block_args(body);
    let accs = &args[1..];
    if accs.len() < 2
        || !accs.len().is_multiple_of(2)
        || accs.iter().any(|&a| *ctx.ty(a) != Type::F64)
    {
        return None;
    }
    let term = ctx.terminator(body)?;
    if ctx.operands(term).len() != accs.len() {
        return None;
    }
    // `split-reductions` orders the accumulators copy by copy, so the
    // copies `c` and `c + 1` of one of `r` reductions are `r` apart
    // (`[s0, t0, s1, t1]` for two); lanes are tried at each such stride.
    let n = accs.len();
    (1..=n / 2)
        .filter(|s| n.is_multiple_of(2 * s))
        .find_map(|s| plan_pairs(ctx, body, term, accs, strided_pairs(n, s)))
}

/// The pairs `(2ts + r, (2t + 1)s + r)` of `n` accumulators at stride `s`
/// (`n` a multiple of `2s`).
fn strided_pairs(n: usize, s: usize) -> Vec<(usize, usize)> {
    (0..n / (2 * s))
        .flat_map(|t| (0..s).map(move |r| (2 * t * s + r, (2 * t + 1) * s + r)))
        .collect()
}

/// The plan pairing the accumulators as `pairs` says, if the lanes match.
fn plan_pairs(
    ctx: &Context,
    body: ir::BlockId,
    term: OpId,
    accs: &[ValueId],
    pairs: Vec<(usize, usize)>,
) -> Option<Plan> {
    let yields = ctx.operands(term);
    let mut m = Matcher {
        ctx,
        body,
        accs: accs.iter().enumerate().map(|(k, &a)| (a, k)).collect(),
        acc_pair: pairs
            .iter()
            .enumerate()
            .flat_map(|(p, &(a, b))| [(a, (p, true)), (b, (p, false))])
            .collect(),
        lane_ops: FxHashSet::default(),
        kids: FxHashMap::default(),
        memo: FxHashMap::default(),
    };
    let mut roots = Vec::new();
    for &(a, b) in &pairs {
        // A root is an op of the lanes (a bare accumulator or shared value
        // would need no pairing, and is left to the scalar loop).
        let root = m.pair(yields[a], yields[b])?;
        if !matches!(root, Node::Arith(..)) {
            return None;
        }
        roots.push(root);
    }
    // A value both lanes share is computed by the scalar body, so it must
    // not be a lane op (a lane value `x` used as `(x, x)` by another pair).
    let shared_lane = m.kids.values().flatten().any(
        |k| matches!(k, Node::Splat(s) if m.body_op(*s).is_some_and(|d| m.lane_ops.contains(&d))),
    );
    if shared_lane {
        return None;
    }
    // Every use of a lane value is a lane op or the terminator (which
    // yields the roots).
    for &o in &m.lane_ops {
        for &r in ctx.results(o) {
            if ctx
                .value(r)
                .uses
                .iter()
                .any(|u| u.op != term && !m.lane_ops.contains(&u.op))
            {
                return None;
            }
        }
    }
    // An accumulator feeds its own lane alone (it has no scalar in the
    // paired body).
    for &a in accs {
        let uses = &ctx.value(a).uses;
        if uses.len() != 1 || !m.lane_ops.contains(&uses[0].op) {
            return None;
        }
    }
    // The other body ops: no regions, no buffers (they are emitted as
    // usual, without the block's frees); none uses a lane value (checked
    // above).
    for o in ctx.iter_block(body) {
        if o == term || m.lane_ops.contains(&o) {
            continue;
        }
        let buffers = ctx.results(o).iter().any(|&r| abi::is_buffer(ctx.ty(r)));
        if buffers || !ctx.regions(o).is_empty() || ctx.has_traits(o, Traits::TERMINATOR) {
            return None;
        }
    }
    Some(Plan {
        lane_ops: m.lane_ops,
        pairs,
        roots,
        kids: m.kids,
    })
}

/// Emits node `n` of `plan` (memoized in `done`).
fn emit_node(
    cx: &mut FnCx,
    plan: &Plan,
    n: Node,
    accs: &[Value],
    done: &mut FxHashMap<Node, Value>,
) -> Value {
    if let Some(&v) = done.get(&n) {
        return v;
    }
    let ctx = cx.ctx;
    let v = match n {
        Node::Acc(j) => accs[j],
        Node::Splat(s) => {
            let x = cx.get1(s);
            cx.b.ins().splat(F64X2, x)
        }
        Node::Load(a, _) if ctx.is(a, "mat.get") => {
            // `[data, rows, cols]`; the entry `(r, c)` at `r * cols + c`.
            let m = cx.get(ctx.operand(a, 0));
            let r = cx.get1(ctx.operand(a, 1));
            let row = cx.b.ins().imul(r, m[2]);
            let (addr, disp) = lane_addr(cx, m[0], Some(row), ctx.operand(a, 2));
            cx.b.ins().load(F64X2, lane_flags(), addr, disp)
        }
        Node::Load(a, _) => {
            let p = cx.get(ctx.operand(a, 0));
            let (addr, disp) = lane_addr(cx, p[0], None, ctx.operand(a, 1));
            cx.b.ins().load(F64X2, lane_flags(), addr, disp)
        }
        Node::Arith(a, _) => {
            let k: Vec<Value> = plan.kids[&n]
                .iter()
                .map(|&c| emit_node(cx, plan, c, accs, done))
                .collect();
            emit_lane_arith(cx, ctx.op_name(a), &k)
        }
    };
    done.insert(n, v);
    v
}

/// Translates `scf.for` op `op` by `plan`: the loop of [`super::scf`] with
/// `f64x2` accumulators.
pub(super) fn emit_for(cx: &mut FnCx, op: OpId, plan: Plan) -> Result<(), Diagnostic> {
    let ctx = cx.ctx;
    let ops = ctx.operands(op);
    let inits: Vec<Value> = ops[3..].iter().map(|&v| cx.get1(v)).collect();
    let pairs = plan.pairs.len();
    let mut packed = Vec::with_capacity(pairs);
    for &(a, b) in &plan.pairs {
        let v = cx.b.ins().splat(F64X2, inits[a]);
        packed.push(cx.b.ins().insertlane(v, inits[b], 1));
    }
    let body_l0 = ctx.op_block(op, 0);
    let outs = super::scf::rotated_for(cx, op, &packed, &vec![F64X2; pairs], |cx, iv, accs| {
        cx.set(ctx.block_args(body_l0)[0], &[iv]);
        let term = ctx.terminator(body_l0);
        for o in ctx.iter_block(body_l0) {
            if Some(o) != term && !plan.lane_ops.contains(&o) {
                cx.emit_op(o)?;
            }
        }
        let mut done = FxHashMap::default();
        Ok(plan
            .roots
            .iter()
            .map(|&r| emit_node(cx, &plan, r, accs, &mut done))
            .collect())
    })?;
    let mut scalars = vec![None; 2 * pairs];
    for (&(a, b), v) in plan.pairs.iter().zip(outs) {
        scalars[a] = Some(cx.b.ins().extractlane(v, 0));
        scalars[b] = Some(cx.b.ins().extractlane(v, 1));
    }
    let scalars: Vec<Value> = scalars.into_iter().flatten().collect();
    cx.bind(ctx.results(op), &scalars, true);
    PAIRED.with(|p| p.set(p.get() + 1));
    Ok(())
}
