//! The JIT: [`JitModule`] compiles a module in memory; [`PreparedCall`]
//! holds marshalled arguments so that `--bench` times only the call.

use std::sync::atomic::{AtomicU64, Ordering};

use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::default_libcall_names;

use ir::interp::{RtValue, RunError};
use ir::{Context, Diagnostic, Loc, Type};
use rustc_hash::FxHashMap;

use crate::abi::Layout;
use crate::faults::FaultTable;
use crate::module::{self, Wrapper};
use crate::{isa, marshal, runtime};

/// `l0t_<name>(args, out) -> status`.
type Trampoline = unsafe extern "C" fn(*const u64, *mut u8) -> i8;

struct JitFunc {
    name: String,
    params: Vec<Type>,
    results: Vec<Type>,
    out: Layout,
    entry: Trampoline,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A JIT-compiled module. Its code is released when it is dropped.
pub struct JitModule {
    module: Option<JITModule>,
    funcs: Vec<JitFunc>,
    faults: FaultTable,
    unsupported: FxHashMap<String, Diagnostic>,
    id: u64,
}

/// Arguments marshalled once for repeated calls of one function.
pub struct PreparedCall {
    module: u64,
    func: usize,
    words: Vec<u64>,
    /// Element buffers the words point into (never freed by compiled code).
    _bufs: Vec<Vec<u64>>,
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
                JitFunc {
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
            funcs,
            faults: c.faults,
            unsupported: c.unsupported,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// Whether `func` was compiled: `Err` is the diagnostic at the op (or
    /// type) the backend does not support, or a missing function.
    pub fn check(&self, func: &str) -> Result<(), Diagnostic> {
        if let Some(d) = self.unsupported.get(func) {
            return Err(d.clone());
        }
        if !self.funcs.iter().any(|f| f.name == func) {
            return Err(ir::pass::pass_error(format!("no function named '@{func}'")));
        }
        Ok(())
    }

    /// Marshals `args` for calling `func`. `Err` explains a missing function
    /// or an argument that does not match the signature.
    pub fn prepare(&self, func: &str, args: &[RtValue]) -> Result<PreparedCall, String> {
        if let Some(d) = self.unsupported.get(func) {
            return Err(d.message.clone());
        }
        let Some(k) = self.funcs.iter().position(|f| f.name == func) else {
            return Err(format!("no function named '@{func}' to run"));
        };
        let f = &self.funcs[k];
        if f.params.len() != args.len() {
            return Err(format!(
                "function '@{func}' takes {} argument(s), got {}",
                f.params.len(),
                args.len()
            ));
        }
        if let Some(t) = f.results.iter().find(|t| matches!(t, Type::Arr(_))) {
            return Err(format!(
                "'{t}' results are not supported by the Cranelift backend"
            ));
        }
        let (mut words, mut bufs) = (Vec::new(), Vec::new());
        for (i, (a, t)) in args.iter().zip(&f.params).enumerate() {
            marshal::marshal(a, t, &mut words, &mut bufs)
                .map_err(|e| format!("argument #{}: {e}", i + 1))?;
        }
        words.push(0);
        Ok(PreparedCall {
            module: self.id,
            func: k,
            words,
            _bufs: bufs,
        })
    }

    /// Calls a prepared function. A run-time fault of the compiled code is a
    /// [`RunError`] at the faulting op.
    pub fn call(&self, p: &PreparedCall) -> Result<Vec<RtValue>, RunError> {
        if p.module != self.id {
            return Err(RunError {
                loc: Loc::UNKNOWN,
                message: "the call was prepared for another module".into(),
            });
        }
        let f = &self.funcs[p.func];
        let mut out = vec![0u64; (f.out.size as usize).div_ceil(8).max(1)];
        runtime::take_fault();
        // SAFETY: the words match the trampoline's parameter list (built by
        // `prepare` from the same signature) and `out` is large enough.
        let status = unsafe { (f.entry)(p.words.as_ptr(), out.as_mut_ptr() as *mut u8) };
        if status != 0 {
            let (id, payload) = runtime::take_fault().unwrap_or((-1, [0; 3]));
            return Err(self.faults.error(id, payload));
        }
        // SAFETY: a successful call wrote every result field.
        Ok(unsafe { marshal::unmarshal(out.as_ptr() as *const u8, &f.out, &f.results) })
    }

    /// The names of the compiled functions.
    pub fn functions(&self) -> impl Iterator<Item = &str> {
        self.funcs.iter().map(|f| f.name.as_str())
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
