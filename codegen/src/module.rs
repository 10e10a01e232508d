//! Compiling a whole L0 module into any `cranelift_module::Module` (the JIT
//! and object files share this), plus the two entry wrappers: the JIT
//! trampoline `l0t_<name>(args: *const u64, out) -> i8` and the exported C
//! function `l0_<name>(params..., out) -> i8`.

use cranelift_codegen::ir::types::{I64, I8};
use cranelift_codegen::ir::{AbiParam, InstBuilder, Type as CType, UserFuncName};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{FuncId, Linkage, Module};

use ir::{Context, Diagnostic, OpId};
use rustc_hash::FxHashMap;

use crate::abi::{self, PTR};
use crate::faults::FaultTable;
use crate::translate::{self, internal_sig, trusted, FuncInfo, Funcs};

/// A compiled module's functions and fault table, and why the functions
/// that were left out could not be compiled.
pub(crate) struct Compiled {
    pub funcs: Funcs,
    pub faults: FaultTable,
    /// Function name -> the diagnostic at the unsupported op (a function
    /// calling an unsupported function is unsupported too).
    pub unsupported: FxHashMap<String, Diagnostic>,
}

fn module_error(e: impl std::fmt::Display) -> Diagnostic {
    ir::pass::pass_error(format!("Cranelift: {e}"))
}

/// The flattened parameter and result types of function `f`.
fn flat_signature(
    ctx: &Context,
    f: OpId,
    backend: &str,
) -> Result<(Vec<CType>, Vec<CType>), Diagnostic> {
    let Some((ins, outs)) = dialects::func::function_type(ctx, f) else {
        return Err(Diagnostic::at_op(ctx, f, "function has no function type"));
    };
    let flat_all = |ts: &[ir::Type]| -> Result<Vec<CType>, Diagnostic> {
        let mut out = Vec::new();
        for t in ts {
            let fl = abi::flatten(t).ok_or_else(|| {
                Diagnostic::at_op(
                    ctx,
                    f,
                    format!("values of type '{t}' are not supported by the {backend} backend"),
                )
            })?;
            out.extend(fl);
        }
        Ok(out)
    };
    Ok((flat_all(ins)?, flat_all(outs)?))
}

/// The `func.func` ops with a body, with their names (both backends compile these).
pub(crate) fn candidates(ctx: &Context) -> Vec<(OpId, String)> {
    ctx.iter_block(ctx.top)
        .filter(|&f| ctx.is(f, "func.func") && !ctx.regions(f).is_empty())
        // Kernels are device code (PTX, or the simulation).
        .filter(|&f| !dialects::gpu::is_kernel(ctx, f))
        .map(|f| {
            (
                f,
                dialects::func::func_name(ctx, f).unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// Finds the functions the backend cannot compile: unsupported types or ops,
/// or calls (transitively) to such functions or to functions without a body.
/// Shared by both backends; `backend` names it in messages.
pub(crate) fn unsupported_functions(
    ctx: &Context,
    cands: &[(OpId, String)],
    backend: &str,
) -> FxHashMap<String, Diagnostic> {
    let mut bad = FxHashMap::default();
    for (f, name) in cands {
        if let Err(d) = flat_signature(ctx, *f, backend)
            .and_then(|_| crate::check::check_function(ctx, *f, backend))
        {
            bad.insert(name.clone(), d);
        }
    }
    loop {
        let mut changed = false;
        for (f, name) in cands {
            if bad.contains_key(name) {
                continue;
            }
            for op in ctx
                .walk_nested(*f)
                .into_iter()
                .filter(|&o| ctx.is(o, "func.call"))
            {
                let callee = dialects::func::callee(ctx, op).unwrap_or("");
                let d = match bad.get(callee) {
                    Some(d) => Some(Diagnostic::clone(d)),
                    None if !cands.iter().any(|(_, n)| n == callee) => Some(Diagnostic::at_op(
                        ctx,
                        op,
                        format!("'@{callee}' is not a function with a body"),
                    )),
                    None => None,
                };
                if let Some(d) = d {
                    bad.insert(name.clone(), d);
                    changed = true;
                    break;
                }
            }
        }
        if !changed {
            return bad;
        }
    }
}

/// The first function of `ctx` (in module order) that is in `unsupported`:
/// an object file or a printed module holds every function, so it is the
/// error.
pub(crate) fn first_unsupported(
    ctx: &Context,
    unsupported: &FxHashMap<String, Diagnostic>,
) -> Result<(), Diagnostic> {
    match ctx
        .iter_block(ctx.top)
        .filter_map(|f| dialects::func::func_name(ctx, f))
        .find_map(|n| unsupported.get(n))
    {
        Some(d) => Err(d.clone()),
        None => Ok(()),
    }
}

/// Declares every supported `func.func` with a body as `l0i_<name>` and
/// defines it; the others are listed in [`Compiled::unsupported`].
pub(crate) fn compile(m: &mut dyn Module, ctx: &Context) -> Result<Compiled, Diagnostic> {
    let cands = candidates(ctx);
    let unsupported = unsupported_functions(ctx, &cands, "Cranelift");
    let mut funcs = Funcs::default();
    for (f, name) in cands {
        if unsupported.contains_key(&name) {
            continue;
        }
        let (params, results) = flat_signature(ctx, f, "Cranelift")?;
        let (ins, outs) = dialects::func::function_type(ctx, f).unwrap_or_default();
        let mut fi = FuncInfo {
            op: f,
            name: name.clone(),
            body: ctx.op_block(f, 0),
            id: FuncId::from_u32(0),
            param_tys: ins.to_vec(),
            result_tys: outs.to_vec(),
            params,
            out: abi::layout(&results),
        };
        let sig = internal_sig(m, &fi);
        fi.id = m
            .declare_function(&format!("l0i_{name}"), Linkage::Local, &sig)
            .map_err(module_error)?;
        funcs.by_name.insert(name, funcs.list.len());
        funcs.list.push(fi);
    }
    let mut cl = m.make_context();
    let mut fctx = FunctionBuilderContext::new();
    let mut faults = FaultTable::default();
    for fi in &funcs.list {
        translate::define(m, &mut cl, &mut fctx, ctx, &funcs, &mut faults, fi)?;
    }
    Ok(Compiled {
        funcs,
        faults,
        unsupported,
    })
}

/// Which entry wrapper to build.
#[derive(Copy, Clone, PartialEq, Eq)]
pub(crate) enum Wrapper {
    /// `l0t_<name>(args: *const u64, out: ptr) -> i8`: parameter k is read
    /// from the 8-byte word `args[k]` (low bytes, little-endian).
    Trampoline,
    /// `l0_<name>(params..., out: ptr) -> i8`, exported.
    Export,
}

/// Defines the entry wrapper of `fi`, which calls it with depth 1.
pub(crate) fn define_wrapper(
    m: &mut dyn Module,
    fi: &FuncInfo,
    kind: Wrapper,
) -> Result<FuncId, Diagnostic> {
    let mut sig = m.make_signature();
    let (name, linkage) = match kind {
        Wrapper::Trampoline => {
            sig.params.push(AbiParam::new(PTR));
            (format!("l0t_{}", fi.name), Linkage::Local)
        }
        Wrapper::Export => {
            sig.params.extend(fi.params.iter().map(|&t| {
                if t == I8 {
                    AbiParam::new(t).uext()
                } else {
                    AbiParam::new(t)
                }
            }));
            (format!("l0_{}", fi.name), Linkage::Export)
        }
    };
    sig.params.push(AbiParam::new(PTR));
    sig.returns.push(AbiParam::new(I8).uext());
    let id = m
        .declare_function(&name, linkage, &sig)
        .map_err(module_error)?;
    let mut cl = m.make_context();
    cl.func.signature = sig;
    cl.func.name = UserFuncName::user(0, id.as_u32());
    let mut fctx = FunctionBuilderContext::new();
    {
        let mut b = FunctionBuilder::new(&mut cl.func, &mut fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let p = b.block_params(entry).to_vec();
        let out = *p.last().expect("out parameter");
        let mut args: Vec<_> = match kind {
            Wrapper::Trampoline => fi
                .params
                .iter()
                .enumerate()
                .map(|(k, &t)| b.ins().load(t, trusted(), p[0], (8 * k) as i32))
                .collect(),
            Wrapper::Export => p[..p.len() - 1].to_vec(),
        };
        args.push(out);
        args.push(b.ins().iconst(I64, 1));
        let f = m.declare_func_in_func(fi.id, b.func);
        let inst = b.ins().call(f, &args);
        let st = b.inst_results(inst)[0];
        b.ins().return_(&[st]);
        b.seal_all_blocks();
        b.finalize(m.target_config());
    }
    m.define_function(id, &mut cl).map_err(module_error)?;
    Ok(id)
}
