//! The JIT: [`JitModule`] compiles a module in memory; [`PreparedCall`]
//! holds marshalled arguments so that `--bench` times only the call.

use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::default_libcall_names;

use ir::interp::{RtValue, RunError};
use ir::Context;
use ir::Diagnostic;

use crate::host::{Entries, HostFunc, PreparedCall, Trampoline};
use crate::marshal::Arg;
use crate::module::{self, Wrapper};
use crate::{isa, runtime};

/// A JIT-compiled module. Its code is released when it is dropped.
pub struct JitModule {
    module: Option<JITModule>,
    entries: Entries,
}

impl JitModule {
    /// Compiles every function of `ctx` that is at the `arr` + `scf` level
    /// (run `--pass=lower` first) and uses only supported types; the others
    /// are left out, and [`JitModule::check`] says why.
    pub fn compile(ctx: &Context) -> Result<JitModule, Diagnostic> {
        let isa = isa::native_isa(false).map_err(ir::pass::pass_error)?;
        let mut jb = JITBuilder::with_isa(isa, default_libcall_names());
        jb.symbols(runtime::symbols());
        let mut jm = JITModule::new(jb);
        let built = (|| {
            let c = module::compile(&mut jm, ctx)?;
            let mut ids = Vec::new();
            for fi in &c.funcs.list {
                ids.push(module::define_wrapper(&mut jm, fi, Wrapper::Trampoline)?);
            }
            jm.finalize_definitions()
                .map_err(|e| ir::pass::pass_error(format!("Cranelift: {e}")))?;
            Ok::<_, Diagnostic>((c, ids))
        })();
        let (c, ids) = match built {
            Ok(x) => x,
            Err(e) => {
                // SAFETY: no pointer into this module's code was handed out.
                unsafe { jm.free_memory() };
                return Err(e);
            }
        };
        let funcs = c
            .funcs
            .list
            .iter()
            .zip(ids)
            .map(|(fi, id)| {
                let p = jm.get_finalized_function(id);
                HostFunc {
                    name: fi.name.clone(),
                    params: fi.param_tys.clone(),
                    results: fi.result_tys.clone(),
                    out: fi.out.clone(),
                    // SAFETY: the trampoline was defined with exactly this signature.
                    entry: unsafe { std::mem::transmute::<*const u8, Trampoline>(p) },
                }
            })
            .collect();
        Ok(JitModule {
            module: Some(jm),
            entries: Entries::new(funcs, c.faults, c.unsupported, "Cranelift"),
        })
    }

    /// Whether `func` was compiled: `Err` is the diagnostic at the op (or
    /// type) the backend does not support, or a missing function.
    pub fn check(&self, func: &str) -> Result<(), Diagnostic> {
        self.entries.check(func)
    }

    /// Marshals `args` for calling `func`. `Err` explains a missing function
    /// or an argument that does not match the signature.
    pub fn prepare(&self, func: &str, args: &[RtValue]) -> Result<PreparedCall, String> {
        let args: Vec<Arg> = args.iter().cloned().map(Arg::Value).collect();
        self.entries.prepare(func, &args)
    }

    /// [`Self::prepare`] with arguments that may be raw arrays, passed in
    /// place ([`crate::RawArray`]).
    pub fn prepare_args(&self, func: &str, args: &[Arg]) -> Result<PreparedCall, String> {
        self.entries.prepare(func, args)
    }

    /// Calls a prepared function. A run-time fault of the compiled code is a
    /// [`RunError`] at the faulting op.
    pub fn call(&self, p: &PreparedCall) -> Result<Vec<RtValue>, RunError> {
        self.entries.call(p)
    }

    /// [`Self::call`], with vector and matrix results of scalars kept as
    /// their buffers ([`crate::Out::Raw`], e.g. to write a `.npy` file
    /// from them with no conversion).
    pub fn call_raw(&self, p: &PreparedCall) -> Result<Vec<crate::Out>, RunError> {
        self.entries.call_out(p, true)
    }

    /// The names of the compiled functions.
    pub fn functions(&self) -> impl Iterator<Item = &str> {
        self.entries.funcs.iter().map(|f| f.name.as_str())
    }
}

impl Drop for JitModule {
    fn drop(&mut self) {
        if let Some(m) = self.module.take() {
            // SAFETY: the trampolines are only reachable through `self`.
            unsafe { m.free_memory() };
        }
    }
}
