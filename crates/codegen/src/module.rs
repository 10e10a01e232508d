//! Compiling a whole L0 module into any `cranelift_module::Module` (the JIT
//! and object files share this), plus the two entry wrappers: the JIT
//! trampoline `l0t_<name>(args: *const u64, out) -> i8` and the exported C
//! function `l0_<name>(params..., out) -> i8`.

use cranelift_codegen::ir::types::{I64, I8};
use cranelift_codegen::ir::{AbiParam, InstBuilder, UserFuncName};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{FuncId, Linkage, Module};

use ir::{Context, Diagnostic};

use crate::abi::{self, PTR};
use crate::faults::FaultTable;
use crate::translate::{self, internal_sig, trusted, FuncInfo, Funcs};

/// A compiled module's functions and fault table.
pub(crate) struct Compiled {
    pub funcs: Funcs,
    pub faults: FaultTable,
}

fn module_error(e: impl std::fmt::Display) -> Diagnostic {
    ir::pass::pass_error(format!("Cranelift: {e}"))
}

/// Declares every `func.func` with a body as `l0i_<name>` and defines it.
pub(crate) fn compile(m: &mut dyn Module, ctx: &Context) -> Result<Compiled, Diagnostic> {
    let mut funcs = Funcs::default();
    for f in ctx.iter_block(ctx.top) {
        if !ctx.is(f, "func.func") || ctx.regions(f).is_empty() {
            continue;
        }
        let name = dialects::func::func_name(ctx, f).unwrap_or("").to_string();
        let Some((ins, outs)) = dialects::func::function_type(ctx, f) else {
            return Err(Diagnostic::at_op(ctx, f, "function has no function type"));
        };
        let flat_all = |ts: &[ir::Type]| -> Result<Vec<_>, Diagnostic> {
            let mut out = Vec::new();
            for t in ts {
                let fl = abi::flatten(t).ok_or_else(|| {
                    Diagnostic::at_op(
                        ctx,
                        f,
                        format!("values of type '{t}' are not supported by the Cranelift backend"),
                    )
                })?;
                out.extend(fl);
            }
            Ok(out)
        };
        let params = flat_all(ins)?;
        let results = flat_all(outs)?;
        crate::check::check_function(ctx, f)?;
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
    Ok(Compiled { funcs, faults })
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
