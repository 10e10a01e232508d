//! `scf.forall` in LLVM IR, as on Cranelift (`crate::translate`): the body
//! becomes the chunk function `define internal i8 @l0p_forall_<op>(i8*
//! %env, i64 %c, i64 %depth)` (`crate::outline`), the captured values go
//! to an environment on the stack, and `l0rt_parallel_for` runs the chunks.

use ir::{Diagnostic, OpId};

use super::translate::{parts, FnCx, Vals};
use super::writer::{Mem, Ty};
use crate::outline::{captures, chunk_name, Captures};

pub(super) fn forall_op(cx: &mut FnCx, op: OpId) -> Result<(), Diagnostic> {
    let ctx = cx.ctx;
    let n = cx.get1(ctx.operand(op, 0));
    let caps = captures(ctx, op);
    let mut slots: Vec<(Ty, String)> = Vec::new();
    for &v in &caps.values {
        slots.extend(parts(ctx.ty(v)).into_iter().zip(cx.get(v)));
    }
    let env = cx.w.stack(8 * slots.len() as u32);
    for (k, (t, p)) in slots.iter().enumerate() {
        cx.w.store(*t, p, &env, 8 * k as i64, Mem::Other);
    }
    let name = chunk_name(op);
    let def = define_chunk(cx, op, &caps, &name)?;
    cx.outlined.push(def);
    let f =
        cx.w.val(format!("bitcast i8 (i8*, i64, i64)* @{name} to i8*"));
    let status = cx.call_rt(
        "l0rt_parallel_for",
        &[Ty::Ptr, Ty::Ptr, Ty::I64, Ty::I64],
        Some(Ty::I8),
        &[f, env, n, "%depth".into()],
    );
    cx.propagate(&status);
    Ok(())
}

/// The text of the chunk function `name` of `op`: re-creates the captured
/// constants, loads the captured values (borrowed), runs the body for iteration `%c`, returns 0,
/// or 1 after a fault.
fn define_chunk(
    cx: &mut FnCx,
    op: OpId,
    caps: &Captures,
    name: &str,
) -> Result<String, Diagnostic> {
    let ctx = cx.ctx;
    let mut sub = cx.nested();
    for &c in &caps.constants {
        sub.emit_op(c)?;
    }
    let mut k = 0;
    for &v in &caps.values {
        let vals: Vals = parts(ctx.ty(v))
            .into_iter()
            .map(|t| {
                k += 1;
                sub.w.load(t, "%env", 8 * (k - 1), Mem::Other)
            })
            .collect();
        sub.set(v, &vals);
    }
    let body = ctx.op_block(op, 0);
    sub.set(ctx.block_args(body)[0], &["%c".to_string()]);
    sub.emit_block(body)?;
    let header = format!("define internal i8 @{name}(i8* %env, i64 %c, i64 %depth) #0");
    Ok(sub.finish_status(&header))
}
