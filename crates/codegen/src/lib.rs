//! Code generation from the lowest level (arr + scf + arith + func) to native
//! code with Cranelift: a JIT for `--run` and object files for `--emit=obj`.

use ir::interp::{RtValue, RunError};
use ir::{Context, Diagnostic};

/// A JIT-compiled module.
pub struct JitModule {
    _private: (),
}

/// Arguments marshalled once for repeated calls.
pub struct PreparedCall {
    _private: (),
}

impl JitModule {
    /// Compiles every function of `ctx`.
    pub fn compile(_ctx: &Context) -> Result<JitModule, Diagnostic> {
        Err(ir::pass::pass_error("the Cranelift backend is not built yet; use --backend=interp"))
    }
    /// Marshals `args` for calling `func`.
    pub fn prepare(&self, _func: &str, _args: &[RtValue]) -> Result<PreparedCall, String> {
        Err("not built".into())
    }
    /// Calls a prepared function.
    pub fn call(&self, _p: &PreparedCall) -> Result<Vec<RtValue>, RunError> {
        Err(RunError { loc: ir::Loc::UNKNOWN, message: "not built".into() })
    }
}

/// Compiles `ctx` into a relocatable object file.
pub fn emit_object(_ctx: &Context) -> Result<Vec<u8>, Diagnostic> {
    Err(ir::pass::pass_error("the Cranelift backend is not built yet"))
}
