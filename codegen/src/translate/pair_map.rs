//! Two iterations per step of a map loop on Cranelift (issue 44, item 3).
//!
//! Cranelift does not vectorize, and its x86-64 backend has 128-bit
//! vectors only, so this translates a loop that computes one `f64` per
//! iteration and stores it at the iteration's own index, such as a
//! stencil's interior after `lower`'s stencil rewrites, with `f64x2`
//! values: iterations `i` and `i + 1` in the two lanes, one loop step per
//! pair, then at most one scalar iteration for an odd count. It is
//! superword-level parallelism (Larsen and Amarasinghe, PLDI 2000) across
//! iterations, the way [`super::slp`] pairs the lanes of split reductions.
//!
//! A loop is paired when it is a unit-step `scf.for` without results whose
//! body is one block of these ops only, each classified by how its value
//! differs between the two lanes:
//! - **uniform** (the same in both): values from outside the loop,
//!   constants, and the ops below on uniform operands only;
//! - **affine** (lane 1 is lane 0 plus 1): the induction variable, and
//!   `arith.addi`/`arith.subi` of an affine and a uniform index;
//! - **lane** (an `f64x2`): `vec.get` of an outer `vec<f64>` at an affine
//!   index, `mat.get` of an outer `mat<f64>` at a uniform row and an affine
//!   column (two neighbouring elements, one unaligned load), and
//!   `arith.addf/subf/mulf/divf/negf` with a lane operand;
//! - **stores**: `arr.store` of a lane or uniform `f64` at an affine index
//!   into an `arr<f64>` that the loop stores once and that is fresh
//!   (`arr.alloc`, `arr.from_vec`).
//!
//! Every read and store must be proved in bounds (never under
//! `--keep-all-checks`), so no op of the body can fault, and lanes `i`,
//! `i + 1` are both iterations of the loop, so the proofs cover them. Each
//! lane op is one IEEE operation per lane, so each element gets exactly the
//! scalar loop's value; a contracted op (a fused multiply-add) keeps the
//! loop scalar. The stored arrays are written at distinct indices by
//! distinct iterations, and the loop reads no array: a vector or matrix it
//! reads never shares a buffer with a fresh array it stores (`arr.from_vec`
//! copies, or adopts the buffer of a vector that is not used again). So
//! the order of the writes does not matter. Anything else leaves the loop
//! to the scalar translation.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{F64X2, I64};
use cranelift_codegen::ir::{InstBuilder, Value};
use rustc_hash::{FxHashMap, FxHashSet};

use ir::{Context, Diagnostic, OpId, Type, ValueId};

use super::slp::{emit_lane_arith, lane_addr, lane_arith, lane_flags};
use super::FnCx;
use crate::abi::{HDR_DATA, PTR};

/// How a value of the body differs between the two lanes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Uniform,
    Affine,
    Lane,
}

/// A map loop that pairs: its lane ops (loads, arithmetic and stores,
/// emitted as `f64x2`); the other body ops are uniform or affine scalars.
pub(super) struct Plan {
    lane_ops: FxHashSet<OpId>,
}

/// The plan for `scf.for` op `op`, if it is a map loop that pairs.
pub(super) fn plan(ctx: &Context, op: OpId) -> Option<Plan> {
    if !ctx.results(op).is_empty()
        || ctx.operands(op).len() != 3
        || !crate::proofs::unit_step(ctx, op)
    {
        return None;
    }
    let body = ctx.op_block(op, 0);
    let [iv] = ctx.block_args(body) else {
        return None;
    };
    let mut kinds: FxHashMap<ValueId, Kind> = FxHashMap::default();
    kinds.insert(*iv, Kind::Affine);
    let kind = |kinds: &FxHashMap<ValueId, Kind>, v: ValueId| match kinds.get(&v) {
        Some(&k) => Some(k),
        // Defined outside the loop (the body has no nested regions).
        None if ctx.value_block(v) != Some(body) => Some(Kind::Uniform),
        None => None,
    };
    let mut lane_ops = FxHashSet::default();
    let mut stored = FxHashSet::default();
    let (mut loads, mut stores) = (0, 0);
    for o in ctx.iter_block(body) {
        let name = ctx.op_name(o);
        if name == "scf.yield" {
            if !ctx.operands(o).is_empty() {
                return None;
            }
            continue;
        }
        if !ctx.regions(o).is_empty() {
            return None;
        }
        let ks: Vec<Kind> = ctx
            .operands(o)
            .iter()
            .map(|&v| kind(&kinds, v))
            .collect::<Option<_>>()?;
        let proved = crate::proofs::proved_in_bounds(ctx, o);
        let f64_operand = |k: usize| *ctx.ty(ctx.operand(o, k)) == Type::F64;
        let k = match (name, ks.as_slice()) {
            ("arith.constant", []) => Kind::Uniform,
            ("arith.addi" | "arith.subi", [a, b]) if *ctx.ty(ctx.operand(o, 0)) == Type::Index => {
                match (a, b) {
                    (Kind::Uniform, Kind::Uniform) => Kind::Uniform,
                    (Kind::Affine, Kind::Uniform) => Kind::Affine,
                    (Kind::Uniform, Kind::Affine) if name == "arith.addi" => Kind::Affine,
                    _ => return None,
                }
            }
            ("vec.get", [Kind::Uniform, i]) if proved => {
                if *ctx.ty(ctx.operand(o, 0)) != Type::vec(Type::F64) {
                    return None;
                }
                match i {
                    Kind::Uniform => Kind::Uniform,
                    Kind::Affine => {
                        loads += 1;
                        Kind::Lane
                    }
                    Kind::Lane => return None,
                }
            }
            ("mat.get", [Kind::Uniform, r, c]) if proved => {
                if *ctx.ty(ctx.operand(o, 0)) != Type::mat(Type::F64)
                    || dialects::mat::get_is_transposed(ctx, o)
                {
                    return None;
                }
                match (r, c) {
                    (Kind::Uniform, Kind::Uniform) => Kind::Uniform,
                    (Kind::Uniform, Kind::Affine) => {
                        loads += 1;
                        Kind::Lane
                    }
                    _ => return None,
                }
            }
            (n, _) if lane_arith(n) && (0..ks.len()).all(f64_operand) => {
                if ks.iter().all(|&k| k == Kind::Uniform) {
                    Kind::Uniform
                } else if crate::contract::fma_of(ctx, o).is_some() {
                    return None;
                } else {
                    Kind::Lane
                }
            }
            ("arr.store", [Kind::Uniform, Kind::Affine, x]) if proved => {
                let a = ctx.operand(o, 0);
                let ok = *ctx.ty(a) == Type::arr(Type::F64)
                    && f64_operand(2)
                    && *x != Kind::Affine
                    && super::arr::fresh(ctx, a)
                    && stored.insert(a);
                if !ok {
                    return None;
                }
                stores += 1;
                lane_ops.insert(o);
                continue;
            }
            _ => return None,
        };
        if k == Kind::Lane {
            lane_ops.insert(o);
        }
        for &r in ctx.results(o) {
            kinds.insert(r, k);
        }
    }
    (loads > 0 && stores > 0).then_some(Plan { lane_ops })
}

/// Emits the lane op `o` of the paired body (lane 0's scalars are bound).
fn emit_lane_op(
    cx: &mut FnCx,
    o: OpId,
    lanes: &mut FxHashMap<ValueId, Value>,
    splats: &mut FxHashMap<ValueId, Value>,
) {
    let ctx = cx.ctx;
    let mut get = |cx: &mut FnCx, v: ValueId| match lanes.get(&v) {
        Some(&x) => x,
        None => *splats.entry(v).or_insert_with(|| {
            let s = cx.get1(v);
            cx.b.ins().splat(F64X2, s)
        }),
    };
    let flags = lane_flags();
    let x = match ctx.op_name(o) {
        "vec.get" => {
            let p = cx.get(ctx.operand(o, 0));
            let (addr, disp) = lane_addr(cx, p[0], None, ctx.operand(o, 1));
            cx.b.ins().load(F64X2, flags, addr, disp)
        }
        "mat.get" => {
            let m = cx.get(ctx.operand(o, 0));
            let r = cx.get1(ctx.operand(o, 1));
            let row = cx.b.ins().imul(r, m[2]);
            let (addr, disp) = lane_addr(cx, m[0], Some(row), ctx.operand(o, 2));
            cx.b.ins().load(F64X2, flags, addr, disp)
        }
        "arr.store" => {
            let a = ctx.operand(o, 0);
            let h = cx.get1(a);
            let hf = super::arr::header_flags(ctx, a);
            let data = cx.b.ins().load(PTR, hf, h, HDR_DATA);
            let x = get(cx, ctx.operand(o, 2));
            let (addr, disp) = lane_addr(cx, data, None, ctx.operand(o, 1));
            cx.b.ins().store(flags, x, addr, disp);
            return;
        }
        name => {
            let k: Vec<Value> = ctx.operands(o).iter().map(|&v| get(cx, v)).collect();
            emit_lane_arith(cx, name, &k)
        }
    };
    lanes.insert(ctx.results(o)[0], x);
}

/// Translates `scf.for` op `op` by `plan`:
/// ```text
///   if lb >= ub: exit
///   if lb < ub - 1: pair(lb) else rest(lb)
/// pair(i):  iterations i and i + 1 as f64x2; i' = i + 2
///           if i' < ub - 1: pair(i') else rest(i')
/// rest(i):  if i < ub: iteration i (scalar)
/// exit:
/// ```
/// (`ub - 1` cannot wrap once `lb < ub`.)
pub(super) fn emit_for(cx: &mut FnCx, op: OpId, plan: Plan) -> Result<(), Diagnostic> {
    let ctx = cx.ctx;
    let ops = ctx.operands(op);
    let (lb, ub) = (cx.get1(ops[0]), cx.get1(ops[1]));
    let body_l0 = ctx.op_block(op, 0);
    let iv_l0 = ctx.block_args(body_l0)[0];
    let pair = cx.block_with(&[I64]);
    let rest = cx.block_with(&[I64]);
    let last = cx.b.create_block();
    let exit = cx.b.create_block();
    let start = cx.b.create_block();
    let empty = cx.b.ins().icmp(IntCC::SignedGreaterThanOrEqual, lb, ub);
    cx.brif(empty, exit, &[], start, &[]);

    cx.b.switch_to_block(start);
    let ub1 = cx.b.ins().iadd_imm_s(ub, -1);
    let two = cx.b.ins().icmp(IntCC::SignedLessThan, lb, ub1);
    cx.brif(two, pair, &[lb], rest, &[lb]);

    cx.b.switch_to_block(pair);
    let i = cx.b.block_params(pair)[0];
    cx.set(iv_l0, &[i]);
    let (mut lanes, mut splats) = (FxHashMap::default(), FxHashMap::default());
    for o in ctx.iter_block(body_l0) {
        if ctx.op_name(o) == "scf.yield" {
            continue;
        }
        if plan.lane_ops.contains(&o) {
            emit_lane_op(cx, o, &mut lanes, &mut splats);
        } else {
            cx.emit_op(o)?;
        }
    }
    let next = cx.b.ins().iadd_imm_s(i, 2);
    let more = cx.b.ins().icmp(IntCC::SignedLessThan, next, ub1);
    cx.brif(more, pair, &[next], rest, &[next]);

    cx.b.switch_to_block(rest);
    let i = cx.b.block_params(rest)[0];
    let one_left = cx.b.ins().icmp(IntCC::SignedLessThan, i, ub);
    cx.brif(one_left, last, &[], exit, &[]);

    cx.b.switch_to_block(last);
    cx.set(iv_l0, &[i]);
    cx.emit_block(body_l0)?;
    cx.jump(exit, &[]);

    cx.b.switch_to_block(exit);
    Ok(())
}
