//! Structured control flow (`scf.if/for/while/assert`) and `func.call` in
//! LLVM IR, with the Cranelift translation's semantics: `scf.for` skips
//! when `lb >= ub`, faults on a non-positive step, and continues while
//! `step <u ub - i` (exact where `i + step` would overflow).

use ir::{Diagnostic, OpId};

use super::translate::{FnCx, Vals};
use super::writer::{Blk, Mem, Ty};

pub(super) fn emit(cx: &mut FnCx, op: OpId, name: &str) -> Result<(), Diagnostic> {
    match name {
        "scf.if" => if_op(cx, op),
        "scf.for" => for_op(cx, op),
        "scf.while" => while_op(cx, op),
        "scf.forall" => super::forall::forall_op(cx, op),
        "scf.forall_threads" => {
            let n = cx.call_rt("l0rt_forall_threads", &[], Some(Ty::I64), &[]);
            cx.set(cx.ctx.result(op, 0), &[n]);
            Ok(())
        }
        "scf.assert" => {
            let c = cx.get1(cx.ctx.operand(op, 0));
            let c = cx.cond(&c);
            let msg = cx
                .ctx
                .attr(op, "msg")
                .and_then(|a| a.as_str())
                .unwrap_or("assertion failed")
                .to_string();
            cx.check(&c, op, msg, &[]);
            Ok(())
        }
        _ => Err(cx.unsupported(op)),
    }
}

/// A block whose parameters are `op`'s flattened results.
fn exit_block(cx: &mut FnCx, op: OpId) -> Blk {
    let tys = cx.flat_all(cx.ctx.results(op));
    cx.w.block(&tys)
}

/// Starts `blk` and binds `op`'s results to its parameters (owned buffers).
fn bind_results(cx: &mut FnCx, op: OpId, blk: &Blk) {
    let ps = cx.w.start(blk);
    cx.bind(cx.ctx.results(op), &ps, true);
}

fn if_op(cx: &mut FnCx, op: OpId) -> Result<(), Diagnostic> {
    let ctx = cx.ctx;
    let c = cx.get1(ctx.operand(op, 0));
    let c = cx.cond(&c);
    let then_b = cx.w.block(&[]);
    let else_b = cx.w.block(&[]);
    let merge = exit_block(cx, op);
    cx.w.brif(&c, &then_b, &[], &else_b, &[]);
    for (k, blk) in [then_b, else_b].iter().enumerate() {
        cx.w.start(blk);
        let vals = match ctx.regions(op).get(k) {
            Some(&r) => cx.emit_block(ctx.region_block(r))?.1,
            None => Vals::new(),
        };
        cx.w.jump(&merge, &vals);
    }
    bind_results(cx, op, &merge);
    Ok(())
}

fn for_op(cx: &mut FnCx, op: OpId) -> Result<(), Diagnostic> {
    let ctx = cx.ctx;
    let ops = ctx.operands(op);
    let (lb, ub, step) = (cx.get1(ops[0]), cx.get1(ops[1]), cx.get1(ops[2]));
    let inits = cx.copy_in(&ops[3..], op);
    let body_l0 = ctx.op_block(op, 0);
    let mut tys = vec![Ty::I64];
    tys.extend(cx.flat_all(&ctx.block_args(body_l0)[1..]));
    let body = cx.w.block(&tys);
    let exit = exit_block(cx, op);
    let check = cx.w.block(&[]);
    let empty = cx.w.val(format!("icmp sge i64 {lb}, {ub}"));
    cx.w.brif(&empty, &exit, &inits, &check, &[]);

    cx.w.start(&check);
    let pos = cx.w.val(format!("icmp sgt i64 {step}, 0"));
    cx.check(
        &pos,
        op,
        "'scf.for' op step must be positive, but is {0}".into(),
        std::slice::from_ref(&step),
    );
    let mut first = vec![lb];
    first.extend(inits.iter().cloned());
    cx.w.jump(&body, &first);

    let ps = cx.w.start(&body);
    let iv = ps[0].clone();
    let args = ctx.block_args(body_l0);
    cx.set(args[0], std::slice::from_ref(&iv));
    cx.bind(&args[1..], &ps[1..], true);
    let (_, vals) = cx.emit_block(body_l0)?;
    let (next, more) = if crate::proofs::unit_step(ctx, op) {
        // `iv < ub`: `iv + 1` cannot overflow.
        let next = cx.w.val(format!("add nsw i64 {iv}, 1"));
        let more = cx.w.val(format!("icmp slt i64 {next}, {ub}"));
        (next, more)
    } else {
        let rem = cx.w.val(format!("sub i64 {ub}, {iv}"));
        let more = cx.w.val(format!("icmp ult i64 {step}, {rem}"));
        (cx.w.val(format!("add i64 {iv}, {step}")), more)
    };
    let mut again = vec![next];
    again.extend(vals.iter().cloned());
    cx.w.brif(&more, &body, &again, &exit, &vals);

    bind_results(cx, op, &exit);
    Ok(())
}

fn while_op(cx: &mut FnCx, op: OpId) -> Result<(), Diagnostic> {
    let ctx = cx.ctx;
    let inits = cx.copy_in(ctx.operands(op), op);
    let (before_l0, after_l0) = (ctx.op_block(op, 0), ctx.op_block(op, 1));
    let tys = cx.flat_all(ctx.block_args(before_l0));
    let before = cx.w.block(&tys);
    let tys = cx.flat_all(ctx.block_args(after_l0));
    let after = cx.w.block(&tys);
    let exit = exit_block(cx, op);
    cx.w.jump(&before, &inits);

    let ps = cx.w.start(&before);
    cx.bind(ctx.block_args(before_l0), &ps, true);
    let (_, vals) = cx.emit_block(before_l0)?;
    let Some((c, rest)) = vals.split_first() else {
        return Err(Diagnostic::at_op(
            ctx,
            op,
            "'before' region did not produce a condition",
        ));
    };
    let c = cx.cond(c);
    cx.w.brif(&c, &after, rest, &exit, rest);

    let ps = cx.w.start(&after);
    cx.bind(ctx.block_args(after_l0), &ps, true);
    let (_, vals) = cx.emit_block(after_l0)?;
    cx.w.jump(&before, &vals);

    bind_results(cx, op, &exit);
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
    let max = crate::translate::MAX_DEPTH;
    let ok = cx.w.val(format!("icmp slt i64 %depth, {max}"));
    cx.check(&ok, op, format!("call depth limit ({max}) exceeded"), &[]);
    let mut args: Vec<String> = Vec::new();
    let mut k = 0;
    for &a in ctx.operands(op) {
        for v in cx.get(a) {
            args.push(format!("{} {v}", fi.params[k].name()));
            k += 1;
        }
    }
    let out = cx.w.stack(fi.out.size);
    let d1 = cx.w.val("add i64 %depth, 1");
    args.push(format!("i8* {out}"));
    args.push(format!("i64 {d1}"));
    let status = cx.w.val(format!(
        "call i8 {}({})",
        super::global("l0i_", &fi.name),
        args.join(", ")
    ));
    cx.propagate(&status);
    let mut ps = Vals::new();
    for (&t, &off) in fi.results.iter().zip(&fi.out.offsets) {
        ps.push(cx.w.load(t, &out, off as i64, Mem::Other));
    }
    cx.bind(ctx.results(op), &ps, true);
    Ok(())
}
