//! Structured control flow (`scf.if/for/while/assert`) and `func.call`.
//!
//! `scf.for` is a rotated loop: `lb >= ub` skips it (no step check, like
//! the interpreter), a non-positive step faults, and the latch continues
//! while `step <u ub - i` (exact even where `i + step` would overflow,
//! where the interpreter stops too).

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::I64;
use cranelift_codegen::ir::{InstBuilder, StackSlotData, StackSlotKind, Type as CType, Value};

use ir::{Diagnostic, OpId};

use super::{trusted, FnCx, Vals, MAX_DEPTH};
use crate::abi::PTR;

pub(super) fn emit(cx: &mut FnCx, op: OpId, name: &str) -> Result<(), Diagnostic> {
    match name {
        "scf.if" => if_op(cx, op),
        "scf.for" => for_op(cx, op),
        "scf.while" => while_op(cx, op),
        "scf.forall" => super::forall::forall_op(cx, op),
        "scf.forall_threads" => {
            let n = cx.call_rt("l0rt_forall_threads", &[], &[I64], &[])?;
            cx.set(cx.ctx.result(op, 0), &n);
            Ok(())
        }
        "scf.assert" => {
            let c = cx.get1(cx.ctx.operand(op, 0));
            let msg = cx
                .ctx
                .attr(op, "msg")
                .and_then(|a| a.as_str())
                .unwrap_or("assertion failed")
                .to_string();
            cx.check(c, op, msg, &[])
        }
        _ => Err(cx.unsupported(op)),
    }
}

/// A block whose parameters are `op`'s flattened results.
fn exit_block(cx: &mut FnCx, op: OpId) -> cranelift_codegen::ir::Block {
    let tys = cx.flat_all(cx.ctx.results(op));
    cx.block_with(&tys)
}

/// Binds `op`'s results to the parameters of `blk` (owned buffers).
fn bind_results(cx: &mut FnCx, op: OpId, blk: cranelift_codegen::ir::Block) {
    cx.b.switch_to_block(blk);
    let params = cx.b.block_params(blk).to_vec();
    cx.bind(cx.ctx.results(op), &params, true);
}

fn if_op(cx: &mut FnCx, op: OpId) -> Result<(), Diagnostic> {
    let ctx = cx.ctx;
    let c = cx.get1(ctx.operand(op, 0));
    let then_b = cx.b.create_block();
    let else_b = cx.b.create_block();
    let merge = exit_block(cx, op);
    cx.brif(c, then_b, &[], else_b, &[]);
    for (k, blk) in [then_b, else_b].into_iter().enumerate() {
        cx.b.switch_to_block(blk);
        let vals = match ctx.regions(op).get(k) {
            Some(&r) => cx.emit_block(ctx.region_block(r))?.1,
            None => Vals::new(),
        };
        cx.jump(merge, &vals);
    }
    bind_results(cx, op, merge);
    Ok(())
}

fn for_op(cx: &mut FnCx, op: OpId) -> Result<(), Diagnostic> {
    if let Some(plan) = super::slp::plan(cx.ctx, op) {
        return super::slp::emit_for(cx, op, plan);
    }
    if let Some(plan) = super::pair_map::plan(cx.ctx, op) {
        return super::pair_map::emit_for(cx, op, plan);
    }
    let ctx = cx.ctx;
    let inits = cx.copy_in(&ctx.operands(op)[3..], op)?;
    let body_l0 = ctx.op_block(op, 0);
    let carried = cx.flat_all(&ctx.block_args(body_l0)[1..]);
    let outs = rotated_for(cx, op, &inits, &carried, |cx, iv, params| {
        let args = ctx.block_args(body_l0);
        cx.set(args[0], &[iv]);
        cx.bind(&args[1..], params, true);
        Ok(cx.emit_block(body_l0)?.1)
    })?;
    cx.bind(ctx.results(op), &outs, true);
    Ok(())
}

/// Emits the loop skeleton of `scf.for` `op` (operands `lb, ub, step`,
/// then the initial values) as a rotated loop carrying values of the
/// Cranelift types `carried`, which `inits` start: `lb >= ub` skips the
/// loop with `inits`, a non-positive step faults, and the latch continues
/// while `step <u ub - iv`. `body` emits one iteration into the current
/// block, given the induction variable and the carried block parameters,
/// and returns the next iteration's carried values. Leaves the builder in
/// the exit block and returns its parameters (the loop's final carried
/// values). A step of constant 1 continues while `iv + 1 < ub`, the
/// same condition ([`crate::proofs::unit_step`]). Shared by the scalar
/// translation and the paired one of [`super::slp`], so both keep
/// `scf.for`'s semantics.
pub(super) fn rotated_for<'a, 'f>(
    cx: &mut FnCx<'a, 'f>,
    op: OpId,
    inits: &[Value],
    carried: &[CType],
    body: impl FnOnce(&mut FnCx<'a, 'f>, Value, &[Value]) -> Result<Vals, Diagnostic>,
) -> Result<Vec<Value>, Diagnostic> {
    let ops = cx.ctx.operands(op);
    let (lb, ub, step) = (cx.get1(ops[0]), cx.get1(ops[1]), cx.get1(ops[2]));
    let mut tys = vec![I64];
    tys.extend_from_slice(carried);
    let body_blk = cx.block_with(&tys);
    let exit = cx.block_with(carried);
    let check = cx.b.create_block();
    let empty = cx.b.ins().icmp(IntCC::SignedGreaterThanOrEqual, lb, ub);
    cx.brif(empty, exit, inits, check, &[]);

    cx.b.switch_to_block(check);
    let pos = cx.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, step, 0);
    cx.check(
        pos,
        op,
        "'scf.for' op step must be positive, but is {0}".into(),
        &[step],
    )?;
    let mut first = vec![lb];
    first.extend_from_slice(inits);
    cx.jump(body_blk, &first);

    cx.b.switch_to_block(body_blk);
    let params = cx.b.block_params(body_blk).to_vec();
    let iv = params[0];
    let vals = body(cx, iv, &params[1..])?;
    let next = cx.b.ins().iadd(iv, step);
    let more = if crate::proofs::unit_step(cx.ctx, op) {
        cx.b.ins().icmp(IntCC::SignedLessThan, next, ub)
    } else {
        let rem = cx.b.ins().isub(ub, iv);
        cx.b.ins().icmp(IntCC::UnsignedLessThan, step, rem)
    };
    let mut again = vec![next];
    again.extend(vals.iter().copied());
    cx.brif(more, body_blk, &again, exit, &vals);

    cx.b.switch_to_block(exit);
    Ok(cx.b.block_params(exit).to_vec())
}

fn while_op(cx: &mut FnCx, op: OpId) -> Result<(), Diagnostic> {
    let ctx = cx.ctx;
    let inits = cx.copy_in(ctx.operands(op), op)?;
    let (before_l0, after_l0) = (ctx.op_block(op, 0), ctx.op_block(op, 1));
    let tys = cx.flat_all(ctx.block_args(before_l0));
    let before = cx.block_with(&tys);
    let tys = cx.flat_all(ctx.block_args(after_l0));
    let after = cx.block_with(&tys);
    let exit = exit_block(cx, op);
    cx.jump(before, &inits);

    cx.b.switch_to_block(before);
    let params = cx.b.block_params(before).to_vec();
    cx.bind(ctx.block_args(before_l0), &params, true);
    let (_, vals) = cx.emit_block(before_l0)?;
    let Some((&c, rest)) = vals.split_first() else {
        return Err(Diagnostic::at_op(
            ctx,
            op,
            "'before' region did not produce a condition",
        ));
    };
    cx.brif(c, after, rest, exit, rest);

    cx.b.switch_to_block(after);
    let params = cx.b.block_params(after).to_vec();
    cx.bind(ctx.block_args(after_l0), &params, true);
    let (_, vals) = cx.emit_block(after_l0)?;
    cx.jump(before, &vals);

    bind_results(cx, op, exit);
    Ok(())
}

/// `func.call @f(args)`: checks the depth limit, calls `l0i_f(args..., out,
/// depth + 1)` with `out` a stack slot, propagates a fault, loads the results.
pub(super) fn call(cx: &mut FnCx, op: OpId) -> Result<(), Diagnostic> {
    let ctx = cx.ctx;
    let callee = dialects::func::callee(ctx, op).unwrap_or("");
    let funcs = cx.funcs;
    let Some(fi) = funcs.by_name.get(callee).map(|&i| &funcs.list[i]) else {
        return Err(Diagnostic::at_op(
            ctx,
            op,
            format!("'@{callee}' is not a function with a body"),
        ));
    };
    let depth = cx.depth();
    let ok =
        cx.b.ins()
            .icmp_imm_s(IntCC::SignedLessThan, depth, MAX_DEPTH);
    cx.check(
        ok,
        op,
        format!("call depth limit ({MAX_DEPTH}) exceeded"),
        &[],
    )?;
    let mut args = Vals::new();
    for &a in ctx.operands(op) {
        args.extend(cx.get(a));
    }
    let slot = cx.b.create_sized_stack_slot(StackSlotData::new(
        StackSlotKind::ExplicitSlot,
        fi.out.size.max(8),
        3,
    ));
    let out = cx.b.ins().stack_addr(PTR, slot, 0);
    let d1 = cx.b.ins().iadd_imm_s(depth, 1);
    args.push(out);
    args.push(d1);
    let f = cx.callee(fi.id);
    let inst = cx.b.ins().call(f, &args);
    let status = cx.b.inst_results(inst)[0];
    cx.propagate(status);
    let mut parts = Vals::new();
    for (&t, &off) in fi.out.fields.iter().zip(&fi.out.offsets) {
        parts.push(cx.b.ins().load(t, trusted(), out, off as i32));
    }
    cx.bind(ctx.results(op), &parts, true);
    Ok(())
}
