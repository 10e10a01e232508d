//! `scf.forall` on Cranelift: the body is outlined into a chunk function
//! (`crate::outline`), the captured values are stored in an environment on
//! the stack, and `l0rt_parallel_for(f, env, n, depth)` runs the chunks;
//! its status propagates like a call's.

use cranelift_codegen::ir::types::{I64, I8};
use cranelift_codegen::ir::{AbiParam, InstBuilder, StackSlotData, StackSlotKind, UserFuncName};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{FuncId, Linkage};

use ir::{Diagnostic, OpId};

use super::{define_error, trusted, FnCx, Vals};
use crate::abi::PTR;
use crate::outline::{captures, chunk_name, Captures};

pub(super) fn forall_op(cx: &mut FnCx, op: OpId) -> Result<(), Diagnostic> {
    let ctx = cx.ctx;
    let n = cx.get1(ctx.operand(op, 0));
    let caps = captures(ctx, op);
    let parts: Vals = caps.values.iter().flat_map(|&v| cx.get(v)).collect();
    let slot = cx.b.create_sized_stack_slot(StackSlotData::new(
        StackSlotKind::ExplicitSlot,
        8 * parts.len().max(1) as u32,
        3,
    ));
    let env = cx.b.ins().stack_addr(PTR, slot, 0);
    for (k, &p) in parts.iter().enumerate() {
        cx.b.ins().store(trusted(), p, env, 8 * k as i32);
    }
    let id = define_chunk(cx, op, &caps)?;
    let f = cx.callee(id);
    let fptr = cx.b.ins().func_addr(PTR, f);
    let depth = cx.depth();
    let status = cx.call_rt(
        "l0rt_parallel_for",
        &[PTR, PTR, I64, I64],
        &[I8],
        &[fptr, env, n, depth],
    )?[0];
    cx.propagate(status);
    Ok(())
}

/// Defines `l0p_forall_<op>(env, c, depth) -> i8`: re-creates the
/// captured constants, loads the captured values (borrowed), runs the body for iteration `c`, returns 0, or
/// 1 after a fault.
fn define_chunk(cx: &mut FnCx, op: OpId, caps: &Captures) -> Result<FuncId, Diagnostic> {
    let ctx = cx.ctx;
    let mut sig = cx.m.make_signature();
    sig.params.extend([PTR, I64, I64].map(AbiParam::new));
    sig.returns.push(AbiParam::new(I8));
    let id = cx
        .m
        .declare_function(&chunk_name(op), Linkage::Local, &sig)
        .map_err(|e| Diagnostic::at_op(ctx, op, format!("cannot declare a chunk function: {e}")))?;
    let mut cl = cx.m.make_context();
    cl.func.signature = sig;
    cl.func.name = UserFuncName::user(0, id.as_u32());
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut cl.func, &mut fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let params = b.block_params(entry).to_vec();
        let (env, c, depth) = (params[0], params[1], params[2]);
        let fault_exit = b.create_block();
        b.set_cold_block(fault_exit);
        let mut sub = FnCx::new(
            ctx,
            &mut *cx.m,
            b,
            cx.funcs,
            &mut *cx.faults,
            fault_exit,
            depth,
        );
        for &c in &caps.constants {
            sub.emit_op(c)?;
        }
        let mut k = 0;
        for &v in &caps.values {
            let tys = sub.flat(ctx.ty(v));
            let vals: Vals = tys
                .iter()
                .enumerate()
                .map(|(j, &t)| sub.b.ins().load(t, trusted(), env, 8 * (k + j) as i32))
                .collect();
            k += tys.len();
            sub.set(v, &vals);
        }
        let body = ctx.op_block(op, 0);
        sub.set(ctx.block_args(body)[0], &[c]);
        sub.emit_block(body)?;
        sub.finish_status();
    }
    crate::listing::define(cx.m, id, &mut cl, &chunk_name(op))
        .map_err(|e| define_error(ctx, op, "an scf.forall body", &cl, *e))?;
    Ok(id)
}
