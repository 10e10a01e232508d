//! The interpreter: every function without parameters runs, before and after
//! `fuse,lower` (and at the gpu level), to results or a located run-time
//! fault; never a panic. Inputs whose loops could run long are skipped: any
//! integer constant beyond 64 in magnitude, or loops nested deeper than 3.
#![no_main]

use ir::interp::Interp;
use ir::pass::{PassManager, VerifyEach};
use ir::{Attribute, Context, Loc};
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fn bounded(ctx: &Context) -> bool {
    let mut ok = true;
    for op in ctx.walk_all() {
        if let Some(Attribute::Int(v, _)) = ctx.attr(op, "value") {
            ok &= v.unsigned_abs() <= 64;
        }
        let mut depth = 0;
        let mut p = Some(op);
        while let Some(q) = p {
            let name = ctx.op_name(q);
            if matches!(
                name,
                "scf.for" | "scf.while" | "gen.loop" | "vec.map" | "gpu.launch_func"
            ) {
                depth += 1;
            }
            p = ctx.parent_op(q);
        }
        ok &= depth <= 3;
    }
    ok
}

fn run_all(ctx: &Context) {
    let funcs: Vec<String> = ctx
        .iter_block(ctx.top)
        .filter(|&f| ctx.is(f, "func.func") && !dialects::gpu::is_kernel(ctx, f))
        .filter(|&f| dialects::func::function_type(ctx, f).is_some_and(|(ins, _)| ins.is_empty()))
        .filter_map(|f| dialects::func::func_name(ctx, f).map(str::to_string))
        .collect();
    for f in funcs {
        let mut it = Interp::new(ctx);
        let _ = it.call(&f, &[], Loc::UNKNOWN);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(ctx) = common::parse(data) else {
        return;
    };
    if !bounded(&ctx) {
        return;
    }
    run_all(&ctx);
    for pipeline in [
        "fuse,lower",
        "fuse,lower{target=gpu,block=32}",
        "fuse{target=gpu},lower{target=gpu,block=32}",
    ] {
        let Some(mut ctx) = common::parse(data) else {
            return;
        };
        let mut pm = PassManager::new(passes::registry().parse_pipeline(pipeline).expect("known"));
        pm.instrument(Box::new(VerifyEach));
        if pm.run(&mut ctx).is_ok() {
            run_all(&ctx);
        }
    }
});
