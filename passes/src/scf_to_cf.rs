//! `convert-scf-to-cf`: lowers structured control flow in function bodies to
//! branches between blocks (MLIR's pass of the same name).
//!
//! Each `scf.if`, `scf.for`, `scf.while`, `scf.index_switch` and
//! `scf.execute_region` whose parent region is a function body splits its
//! block at the op: the ops after it move to a continuation block whose
//! arguments are its results, and its regions' blocks join the function's,
//! each `scf.yield`/`scf.condition` becoming a branch. Ops nested in other
//! ops (a `gen.loop`, an `scf.forall`) keep their structured bodies, since
//! only a function body may hold several blocks. GPU kernels (functions
//! marked `gpu.kernel`) stay structured: the kernel simulation and the PTX
//! translation take a body of one block.
//!
//! `scf.for` keeps L0's semantics exactly (IR-SPEC: no iteration when
//! `lb >= ub`, a fault for a step that is not positive, and no iteration
//! past `ub` even where `i + step` would overflow):
//!
//! ```text
//!   cf.cond_br (lb < ub), ^pre, ^cont(inits)
//! ^pre:  cf.assert (step > 0), "step must be positive"; cf.br ^body(lb, inits)
//! ^body(%i, accs):  ...; cf.cond_br (step <u ub - i), ^body(i + step, vals), ^cont(vals)
//! ```
//!
//! (`ub - i` is positive and below 2^64, so its wrapped difference read as
//! unsigned is exact, and `i + step` does not overflow when it is taken.)

use ir::pass::{Pass, PassInfo, PassOptions, PassStats};
use ir::{Attribute, BlockId, Builder, Context, Diagnostic, OpId, RegionId, Type, ValueId};

/// The pass.
pub struct ScfToCf;

impl Pass for ScfToCf {
    fn name(&self) -> &'static str {
        "convert-scf-to-cf"
    }
    fn handles_cfg(&self) -> bool {
        true
    }
    fn run(&mut self, ctx: &mut Context, stats: &mut PassStats) -> Result<(), Diagnostic> {
        stats.add("converted", convert(ctx));
        Ok(())
    }
}

const CONVERTED: &[&str] = &[
    "scf.if",
    "scf.for",
    "scf.while",
    "scf.index_switch",
    "scf.execute_region",
];

/// Converts every structured op in a function body (outermost first, so the
/// ops its regions held are converted next); returns how many.
pub fn convert(ctx: &mut Context) -> u64 {
    let mut n = 0;
    loop {
        let next = ctx.walk_all().into_iter().find(|&op| {
            CONVERTED.contains(&ctx.op_name(op))
                && ctx.parent_op(op).is_some_and(|p| ctx.spec(p).multi_block)
                && !in_kernel(ctx, op)
                && (ctx.is(op, "scf.execute_region")
                    || ctx
                        .regions(op)
                        .iter()
                        .all(|&r| ctx.region(r).blocks.len() == 1))
        });
        let Some(op) = next else { return n };
        match ctx.op_name(op) {
            "scf.if" => convert_if(ctx, op),
            "scf.for" => convert_for(ctx, op),
            "scf.while" => convert_while(ctx, op),
            "scf.index_switch" => convert_switch(ctx, op),
            _ => convert_execute_region(ctx, op),
        }
        n += 1;
    }
}

/// Whether `op` is in a GPU kernel (a function marked `gpu.kernel`), whose
/// body stays structured: the kernel simulation and the PTX translation
/// take one block.
pub(crate) fn in_kernel(ctx: &Context, op: OpId) -> bool {
    let mut cur = ctx.parent_op(op);
    while let Some(p) = cur {
        if ctx.is(p, "func.func") {
            return ctx.attr(p, "gpu.kernel").is_some();
        }
        cur = ctx.parent_op(p);
    }
    false
}

/// Moves the (single) block of region `from` into `op`'s region before
/// block `before`; returns it.
fn take_block(ctx: &mut Context, from: RegionId, before: BlockId) -> BlockId {
    let b = ctx.region_block(from);
    ctx.remove_block(b);
    ctx.insert_block_before(before, b);
    b
}

/// Appends `cf.cond_br c, ^t(targs), ^e(eargs)` to `b`.
#[allow(clippy::too_many_arguments)]
fn cond_br(
    ctx: &mut Context,
    b: BlockId,
    c: ValueId,
    t: BlockId,
    targs: &[ValueId],
    e: BlockId,
    eargs: &[ValueId],
    loc: ir::Loc,
) {
    crate::cfg::append_branch(ctx, b, "cf.cond_br", &[c], &[(t, targs), (e, eargs)], loc);
}

/// Replaces the terminator of `b` (a yield) by a branch to `target`
/// forwarding the yield's operands.
fn yield_to(ctx: &mut Context, b: BlockId, target: BlockId) {
    let t = ctx.terminator(b).expect("terminator");
    let vals = ctx.operands(t).to_vec();
    let loc = ctx.loc(t);
    ctx.erase_op(t);
    crate::cfg::append_br(ctx, b, target, &vals, loc);
}

/// A comparison appended at the end of `b` (raw, so nothing folds away the
/// shape the lowering promises).
fn cmpi(
    ctx: &mut Context,
    b: BlockId,
    pred: &str,
    x: ValueId,
    y: ValueId,
    loc: ir::Loc,
) -> ValueId {
    let mut bld = Builder::at_end(ctx, b);
    bld.loc = loc;
    bld.smart = false;
    bld.op1(
        "arith.cmpi",
        &[x, y],
        Type::I1,
        vec![("predicate".into(), Attribute::Str(pred.into()))],
    )
}

fn convert_if(ctx: &mut Context, op: OpId) {
    let loc = ctx.loc(op);
    let blk = ctx.op(op).parent.expect("op in a block");
    let cont = crate::cfg::split_after(ctx, op);
    let c = ctx.operand(op, 0);
    let regions = ctx.regions(op).to_vec();
    let then_b = take_block(ctx, regions[0], cont);
    yield_to(ctx, then_b, cont);
    let else_b = take_block(ctx, regions[1], cont);
    yield_to(ctx, else_b, cont);
    ctx.erase_op(op);
    cond_br(ctx, blk, c, then_b, &[], else_b, &[], loc);
}

/// Moves the blocks of `op`'s region into its parent region, in place of
/// `op` (whose results become the continuation block's arguments).
pub(crate) fn convert_execute_region(ctx: &mut Context, op: OpId) {
    let loc = ctx.loc(op);
    let blk = ctx.op(op).parent.expect("op in a block");
    let cont = crate::cfg::split_after(ctx, op);
    let r = ctx.regions(op)[0];
    let blocks = ctx.region(r).blocks.clone();
    for &b in &blocks {
        ctx.remove_block(b);
        ctx.insert_block_before(cont, b);
        if ctx.terminator(b).is_some_and(|t| ctx.is(t, "scf.yield")) {
            yield_to(ctx, b, cont);
        }
    }
    ctx.erase_op(op);
    crate::cfg::append_br(ctx, blk, blocks[0], &[], loc);
}

fn convert_for(ctx: &mut Context, op: OpId) {
    let loc = ctx.loc(op);
    let blk = ctx.op(op).parent.expect("op in a block");
    let cont = crate::cfg::split_after(ctx, op);
    let operands = ctx.operands(op).to_vec();
    let (lb, ub, step, inits) = (operands[0], operands[1], operands[2], &operands[3..]);
    let r = ctx.regions(op)[0];
    let body = take_block(ctx, r, cont);
    let pre = ctx.new_block();
    ctx.insert_block_before(body, pre);
    ctx.erase_op(op);
    // Entry: run the body at all?
    let ne = cmpi(ctx, blk, "slt", lb, ub, loc);
    cond_br(ctx, blk, ne, pre, &[], cont, inits, loc);
    // ^pre: the step must be positive.
    let zero = {
        let mut bld = Builder::at_end(ctx, pre);
        bld.loc = loc;
        bld.smart = false;
        bld.constant(Attribute::Int(0, Type::Index), &Type::Index)
    };
    let pos = cmpi(ctx, pre, "sgt", step, zero, loc);
    {
        let mut bld = Builder::at_end(ctx, pre);
        bld.loc = loc;
        let st = bld.state(
            "cf.assert",
            &[pos],
            &[],
            vec![("msg".into(), Attribute::Str("step must be positive".into()))],
        );
        bld.create_raw(st);
    }
    let mut first = vec![lb];
    first.extend_from_slice(inits);
    crate::cfg::append_br(ctx, pre, body, &first, loc);
    // The body's yield: the next iteration, or the exit.
    let t = ctx.terminator(body).expect("terminator");
    let vals = ctx.operands(t).to_vec();
    let yloc = ctx.loc(t);
    ctx.erase_op(t);
    let i = ctx.block_args(body)[0];
    let d = {
        let mut bld = Builder::at_end(ctx, body);
        bld.loc = yloc;
        bld.smart = false;
        bld.op1("arith.subi", &[ub, i], Type::Index, Vec::new())
    };
    let more = cmpi(ctx, body, "ult", step, d, yloc);
    let next = {
        let mut bld = Builder::at_end(ctx, body);
        bld.loc = yloc;
        bld.smart = false;
        bld.op1("arith.addi", &[i, step], Type::Index, Vec::new())
    };
    let mut again = vec![next];
    again.extend_from_slice(&vals);
    cond_br(ctx, body, more, body, &again, cont, &vals, yloc);
}

fn convert_while(ctx: &mut Context, op: OpId) {
    let loc = ctx.loc(op);
    let blk = ctx.op(op).parent.expect("op in a block");
    let cont = crate::cfg::split_after(ctx, op);
    let inits = ctx.operands(op).to_vec();
    let regions = ctx.regions(op).to_vec();
    let before = take_block(ctx, regions[0], cont);
    let after = take_block(ctx, regions[1], cont);
    ctx.erase_op(op);
    crate::cfg::append_br(ctx, blk, before, &inits, loc);
    // `scf.condition(%c) vals`: on to the body, or out with the values.
    let t = ctx.terminator(before).expect("terminator");
    let ops = ctx.operands(t).to_vec();
    let tloc = ctx.loc(t);
    ctx.erase_op(t);
    cond_br(ctx, before, ops[0], after, &ops[1..], cont, &ops[1..], tloc);
    yield_to(ctx, after, before);
}

fn convert_switch(ctx: &mut Context, op: OpId) {
    let loc = ctx.loc(op);
    let blk = ctx.op(op).parent.expect("op in a block");
    let x = ctx.operand(op, 0);
    let cases: Vec<i64> = match ctx.attr(op, "cases") {
        Some(Attribute::Array(items)) => items.iter().filter_map(|a| a.as_int()).collect(),
        _ => Vec::new(),
    };
    let cont = crate::cfg::split_after(ctx, op);
    let regions = ctx.regions(op).to_vec();
    // Regions: the default first, then one per case.
    let mut targets = Vec::new();
    for &r in &regions {
        let b = take_block(ctx, r, cont);
        yield_to(ctx, b, cont);
        targets.push(b);
    }
    ctx.erase_op(op);
    // MLIR's lowering: the index cast to an integer (`i64` here, which holds
    // every index exactly) and one `cf.switch`, the default first.
    let flag = {
        let mut bld = Builder::at_end(ctx, blk);
        bld.loc = loc;
        bld.smart = false;
        bld.op1("arith.index_cast", &[x], Type::I64, vec![])
    };
    let succ: Vec<(BlockId, &[ValueId])> = targets.iter().map(|&t| (t, &[][..])).collect();
    let sw = crate::cfg::append_branch(ctx, blk, "cf.switch", &[flag], &succ, loc);
    if !cases.is_empty() {
        let vals = cases
            .iter()
            .map(|&c| Attribute::int(c, Type::I64))
            .collect();
        ctx.set_attr(sw, dialects::cf_switch::CASE_VALUES, Attribute::Array(vals));
    }
}

fn create(_: &PassOptions) -> Result<Box<dyn Pass>, String> {
    Ok(Box::new(ScfToCf))
}

/// Registration.
pub fn info() -> PassInfo {
    PassInfo {
        name: "convert-scf-to-cf",
        description: "lower scf.if/for/while/index_switch/execute_region in function bodies to cf branches between blocks (MLIR's pass)",
        options: &[],
        create,
    }
}
