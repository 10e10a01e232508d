//! Before anything is compiled: every op and every value type of every
//! function must be one the backend translates, so that an unsupported
//! program is a clean diagnostic at the op, never a half-built module.
//!
//! What remains unsupported: ops above the `arr` level, matrices of
//! non-scalars (`mat<vec<T>>`), vectors of arrays or matrices
//! (`vec<arr<T>>`, `vec<mat<T>>`, so `arr.to_vec` of an `arr<arr<T>>`),
//! arrays of matrices, and `arr.find_or_insert` on non-scalar keys.

use ir::{Context, Diagnostic, OpId, ValueId};

use crate::abi;

/// The ops the backend translates (besides `func.func` itself).
pub const SUPPORTED: &[&str] = &[
    "func.return",
    "func.call",
    "scf.if",
    "scf.for",
    "scf.while",
    "scf.forall",
    "scf.forall_threads",
    "scf.yield",
    "scf.condition",
    "scf.assert",
    "cf.assert",
    // Terminators of a function body of several blocks (scalars only, below).
    "cf.br",
    "cf.cond_br",
    "cf.switch",
    "vec.len",
    "vec.get",
    "mat.from",
    "mat.rows",
    "mat.cols",
    "mat.get",
    "mat.row",
    "arr.alloc",
    "arr.load",
    "arr.store",
    "arr.len",
    "arr.push",
    "arr.from_vec",
    "arr.to_vec",
    "arr.find_or_insert",
    "arr.free",
    // The host ops of the gpu level, as calls into the GPU runtime
    // (`crate::gpu_host`); kernels are compiled to PTX, not here.
    "gpu.alloc",
    "gpu.memcpy",
    "gpu.dealloc",
    "gpu.pack_rows",
    "gpu.unpack_rows",
    "gpu.launch_func",
];

/// Checks every op nested in function `f`.
pub fn check_function(ctx: &Context, f: OpId, backend: &str) -> Result<(), Diagnostic> {
    // A body of several blocks: scalars only. The ownership of buffers
    // (vectors freed at the end of their block, arrays taken at their last
    // use) follows the nesting of single-block regions, which branches
    // between blocks do not have.
    if ctx.has_cfg(f) {
        let multi_nested = ctx.walk_nested(f).into_iter().any(|op| {
            ctx.regions(op)
                .iter()
                .any(|&r| ctx.region(r).blocks.len() > 1)
        });
        let body_args: Vec<ValueId> = ctx
            .regions(f)
            .iter()
            .flat_map(|&r| ctx.region(r).blocks.clone())
            .flat_map(|b| ctx.block_args(b).to_vec())
            .collect();
        let non_scalar = body_args
            .iter()
            .find(|&&v| !ctx.ty(v).is_scalar())
            .map(|&v| (f, v))
            .or_else(|| {
                ctx.walk_nested(f).into_iter().find_map(|op| {
                    let args: Vec<ValueId> = ctx
                        .regions(op)
                        .iter()
                        .flat_map(|&r| ctx.region(r).blocks.clone())
                        .flat_map(|b| ctx.block_args(b).to_vec())
                        .collect();
                    ctx.operands(op)
                        .iter()
                        .chain(ctx.results(op))
                        .chain(&args)
                        .find(|&&v| !ctx.ty(v).is_scalar())
                        .map(|&v| (op, v))
                })
            });
        if multi_nested {
            return Err(Diagnostic::at_op(
                ctx,
                f,
                format!("a region of several blocks inside an op is not supported by the {backend} backend (the interpreter runs it: --backend=interp)"),
            ));
        }
        if let Some((op, v)) = non_scalar {
            return Err(Diagnostic::at_op(
                ctx,
                op,
                format!(
                    "a function of several blocks (branches between blocks) with a value of type '{}' is not supported by the {backend} backend: only scalars are (the interpreter runs it: --backend=interp)",
                    ctx.ty(v)
                ),
            ));
        }
    }
    for op in ctx.walk_nested(f) {
        let name = ctx.op_name(op);
        // A column (`mat.row {transposed}`) is no view of the matrix: `lower`
        // makes it a loop.
        let column = name == "mat.row" && dialects::mat::row_is_transposed(ctx, op);
        if column || !(name.starts_with("arith.") || SUPPORTED.contains(&name)) {
            let hint = if name.starts_with("gpu.") {
                "only kernels use it: they run with --target=nvptx, on a GPU or with --device=sim"
            } else {
                "run --pass=lower first"
            };
            return Err(Diagnostic::at_op(
                ctx,
                op,
                format!(
                    "'{name}'{} is not supported by the {backend} backend ({hint})",
                    if column { " {transposed}" } else { "" }
                ),
            ));
        }
        let block_args = ctx.regions(op).iter().flat_map(|&r| {
            ctx.region(r)
                .blocks
                .iter()
                .flat_map(|&b| ctx.block_args(b).iter())
        });
        for &v in ctx
            .operands(op)
            .iter()
            .chain(ctx.results(op))
            .chain(block_args)
        {
            if abi::flatten(ctx.ty(v)).is_none() {
                return Err(Diagnostic::at_op(
                    ctx,
                    op,
                    format!(
                        "'{name}' on a value of type '{}' is not supported by the {backend} backend \
                         (supported: scalars, vec<T> with T a scalar or a supported vec, \
                         mat<T> with T a scalar, arr<T> with T a scalar, a supported vec or arr)",
                        ctx.ty(v)
                    ),
                ));
            }
        }
        if name == "arr.find_or_insert" {
            let t = ctx.ty(ctx.operand(op, 0));
            if abi::elem(t).is_none() {
                return Err(Diagnostic::at_op(
                    ctx,
                    op,
                    format!(
                        "'{name}' on '{t}' is not supported by the {backend} backend (keys must be scalars)"
                    ),
                ));
            }
        }
    }
    crate::gpu_host::check_device_uses(ctx, f)?;
    Ok(())
}
