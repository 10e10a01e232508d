//! The LLVM backend: the `arr` + `scf` level (the same level, ops and ABI
//! as the Cranelift backend, see [`crate`]) translated to LLVM IR, optimised
//! with LLVM's `default<O3>` pipeline for the host CPU (its name and
//! features are set on every function, as `clang -march=native` does), and
//! then JIT-compiled with MCJIT ([`LlvmJit`]), or printed as LLVM IR
//! ([`emit_llvm`]), assembly ([`emit_asm`]) or an object file
//! ([`emit_object`]) that links with `runtime/l0rt.c` exactly like the
//! Cranelift object.
//!
//! The translation writes textual LLVM IR ([`writer`]) that inkwell parses
//! into a module; everything after that (verification, optimisation, code
//! generation, the JIT) goes through inkwell. Fault sites, the runtime and
//! argument marshalling are shared with the Cranelift backend
//! ([`crate::faults`], [`crate::runtime`], [`crate::marshal`]).
//!
//! Memory accesses carry TBAA tags (`arr` headers, and element data per
//! element type), so that LLVM may keep a header's data pointer in a
//! register across element stores; reduce accumulators carry `reassoc`
//! ([`arith`]); loads and stores proved in bounds have no check.

mod arith;
mod forall;
mod gpu;
mod gpu_host;
mod half;
mod mem;
pub mod ptx;
mod scf;
mod translate;
pub mod writer;

use std::fmt::Write as _;
use std::mem::ManuallyDrop;

use inkwell::context::Context as LContext;
use inkwell::execution_engine::ExecutionEngine;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::Module;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{
    CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine,
};
use inkwell::OptimizationLevel;
use rustc_hash::FxHashMap;

use ir::interp::{RtValue, RunError};
use ir::{Context, Diagnostic};

use crate::abi;
use crate::faults::FaultTable;
use crate::host::{Entries, HostFunc, PreparedCall, Trampoline};
use crate::marshal::Arg;
use translate::{parts, FuncInfo, Funcs};
use writer::Ty;

fn llvm_error(e: impl std::fmt::Display) -> Diagnostic {
    ir::pass::pass_error(format!("LLVM: {e}"))
}

/// The translated module: its text and what the host needs to call it.
struct Translated {
    text: String,
    funcs: Funcs,
    faults: FaultTable,
    unsupported: FxHashMap<String, Diagnostic>,
}

/// The host's target machine (CPU name and features as `-march=native`).
fn host_machine(reloc: RelocMode, model: CodeModel) -> Result<TargetMachine, Diagnostic> {
    Target::initialize_native(&InitializationConfig::default()).map_err(llvm_error)?;
    let triple = TargetMachine::get_default_triple();
    let target = Target::from_triple(&triple).map_err(llvm_error)?;
    let cpu = TargetMachine::get_host_cpu_name();
    let features = TargetMachine::get_host_cpu_features();
    target
        .create_target_machine(
            &triple,
            &cpu.to_string(),
            &features.to_string(),
            OptimizationLevel::Aggressive,
            reloc,
            model,
        )
        .ok_or_else(|| llvm_error("no target machine for the host"))
}

/// Which wrappers to add around the internal functions.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Wrappers {
    /// `l0t_<name>(i64* args, i8* out)` for the JIT host.
    Trampoline,
    /// `l0_<name>(params..., i8* out)`, exported, plus `l0_fault_messages`.
    Export,
}

/// Translates every supported function of `ctx` to LLVM IR text.
fn translate_module(ctx: &Context, wrappers: Wrappers) -> Result<Translated, Diagnostic> {
    let cands = crate::module::candidates(ctx);
    let unsupported = crate::module::unsupported_functions(ctx, &cands, "LLVM");
    let mut funcs = Funcs::default();
    for (f, name) in cands {
        if unsupported.contains_key(&name) {
            continue;
        }
        let (ins, outs) = dialects::func::function_type(ctx, f).unwrap_or_default();
        let params: Vec<Ty> = ins.iter().flat_map(parts).collect();
        let results: Vec<Ty> = outs.iter().flat_map(parts).collect();
        let flat: Vec<_> = outs
            .iter()
            .flat_map(|t| abi::flatten(t).unwrap_or_default())
            .collect();
        funcs.by_name.insert(name.clone(), funcs.list.len());
        funcs.list.push(FuncInfo {
            op: f,
            name,
            body: ctx.op_block(f, 0),
            param_tys: ins.to_vec(),
            result_tys: outs.to_vec(),
            params,
            results,
            out: abi::layout(&flat),
        });
    }
    let cpu = TargetMachine::get_host_cpu_name().to_string();
    let features = TargetMachine::get_host_cpu_features().to_string();
    let mut text = String::new();
    let mut faults = FaultTable::default();
    let mut decls: FxHashMap<String, String> = FxHashMap::default();
    for fi in &funcs.list {
        let def = translate::define(ctx, &funcs, &mut faults, &mut decls, fi, "#0")?;
        text.push_str(&def);
        text.push('\n');
        text.push_str(&wrapper(fi, wrappers));
    }
    if wrappers == Wrappers::Export {
        text.push_str(&fault_messages(ctx, &faults));
    }
    let mut decls: Vec<String> = decls.into_values().collect();
    decls.sort();
    for d in decls {
        text.push_str(&d);
        text.push_str(" #1\n");
    }
    let _ = writeln!(
        text,
        "attributes #0 = {{ nounwind \"target-cpu\"=\"{cpu}\" \"target-features\"=\"{features}\" }}"
    );
    text.push_str("attributes #1 = { nounwind }\n");
    text.push_str(&writer::metadata());
    Ok(Translated {
        text,
        funcs,
        faults,
        unsupported,
    })
}

/// `@<prefix><name>` as an LLVM global name: quoted, with `"` and `\`
/// as hex escapes, when `name` (a quoted L0 symbol such as `@"a b"`) has
/// characters that a bare LLVM name lacks.
pub(crate) fn global(prefix: &str, name: &str) -> String {
    let bare = name
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.' | b'-'));
    if bare {
        return format!("@{prefix}{name}");
    }
    let mut s = format!("@\"{prefix}");
    for c in name.bytes() {
        if c == b'"' || c == b'\\' || !(0x20..0x7f).contains(&c) {
            s.push_str(&format!("\\{c:02X}"));
        } else {
            s.push(c as char);
        }
    }
    s.push('"');
    s
}

/// The entry wrapper of `fi`, which calls `l0i_<name>` with depth 1.
fn wrapper(fi: &FuncInfo, kind: Wrappers) -> String {
    let mut s = String::new();
    let mut args: Vec<String> = Vec::new();
    match kind {
        Wrappers::Trampoline => {
            let _ = writeln!(
                s,
                "define i8 {}(i64* %args, i8* %out) #0 {{",
                global("l0t_", &fi.name)
            );
            for (k, t) in fi.params.iter().enumerate() {
                let _ = writeln!(s, "  %a{k} = getelementptr i64, i64* %args, i64 {k}");
                let _ = writeln!(s, "  %w{k} = load i64, i64* %a{k}, align 8");
                let conv = match t {
                    Ty::I64 => format!("add i64 %w{k}, 0"),
                    Ty::I8 | Ty::I16 | Ty::I32 => format!("trunc i64 %w{k} to {}", t.name()),
                    Ty::F64 => format!("bitcast i64 %w{k} to double"),
                    Ty::F32 => {
                        let _ = writeln!(s, "  %h{k} = trunc i64 %w{k} to i32");
                        format!("bitcast i32 %h{k} to float")
                    }
                    Ty::Ptr => format!("inttoptr i64 %w{k} to i8*"),
                };
                let _ = writeln!(s, "  %v{k} = {conv}");
                args.push(format!("{} %v{k}", t.name()));
            }
        }
        Wrappers::Export => {
            let ps: Vec<String> = fi
                .params
                .iter()
                .enumerate()
                .map(|(k, t)| {
                    let ext = if *t == Ty::I8 { " zeroext" } else { "" };
                    format!("{}{ext} %v{k}", t.name())
                })
                .collect();
            let _ = writeln!(
                s,
                "define zeroext i8 {}({}{}i8* %out) #0 {{",
                global("l0_", &fi.name),
                ps.join(", "),
                if ps.is_empty() { "" } else { ", " }
            );
            for (k, t) in fi.params.iter().enumerate() {
                args.push(format!("{} %v{k}", t.name()));
            }
        }
    }
    args.push("i8* %out".into());
    args.push("i64 1".into());
    let _ = writeln!(
        s,
        "  %r = call i8 {}({})",
        global("l0i_", &fi.name),
        args.join(", ")
    );
    let _ = writeln!(s, "  ret i8 %r\n}}\n");
    s
}

/// `@l0_fault_messages`: one NUL-terminated `file:line:col: template` per
/// fault id, then an empty string (the object-file contract of `l0rt.c`).
fn fault_messages(ctx: &Context, faults: &FaultTable) -> String {
    let bytes = crate::faults::message_table(ctx, faults);
    let mut lit = String::new();
    for b in &bytes {
        if b.is_ascii_graphic() && *b != b'"' && *b != b'\\' || *b == b' ' {
            lit.push(*b as char);
        } else {
            let _ = write!(lit, "\\{b:02X}");
        }
    }
    format!(
        "@l0_fault_messages = constant [{} x i8] c\"{lit}\", align 1\n\n",
        bytes.len()
    )
}

/// Parses, verifies and optimises (`default<O3>` for `tm`) module text.
fn build<'c>(lctx: &'c LContext, text: &str, tm: &TargetMachine) -> Result<Module<'c>, Diagnostic> {
    let buf = MemoryBuffer::create_from_memory_range_copy(text.as_bytes(), "l0");
    let module = lctx
        .create_module_from_ir(buf)
        .map_err(|e| llvm_error(format!("the generated IR does not parse: {e}")))?;
    module.set_triple(&tm.get_triple());
    module.set_data_layout(&tm.get_target_data().get_data_layout());
    module
        .verify()
        .map_err(|e| llvm_error(format!("the generated IR does not verify: {e}")))?;
    module
        .run_passes("default<O3>", tm, PassBuilderOptions::create())
        .map_err(llvm_error)?;
    Ok(module)
}

/// Translates every function of `ctx` (all must be supported) with the
/// exported C wrappers, optimises the module for the host and hands it to
/// `f` with its target machine.
fn with_optimized<R>(
    ctx: &Context,
    f: impl FnOnce(&Module, &TargetMachine) -> Result<R, Diagnostic>,
) -> Result<R, Diagnostic> {
    let t = translate_module(ctx, Wrappers::Export)?;
    crate::module::first_unsupported(ctx, &t.unsupported)?;
    let tm = host_machine(RelocMode::PIC, CodeModel::Default)?;
    let lctx = LContext::create();
    let m = build(&lctx, &t.text, &tm)?;
    f(&m, &tm)
}

/// The optimised LLVM IR of `ctx` (at the `arr` + `scf` level), with the
/// exported C wrappers `l0_<name>`.
pub fn emit_llvm(ctx: &Context) -> Result<String, Diagnostic> {
    with_optimized(ctx, |m, _| Ok(m.print_to_string().to_string()))
}

fn emit_file(ctx: &Context, ft: FileType) -> Result<Vec<u8>, Diagnostic> {
    with_optimized(ctx, |m, tm| {
        let buf = tm.write_to_memory_buffer(m, ft).map_err(llvm_error)?;
        Ok(buf.as_slice().to_vec())
    })
}

/// Native assembly for the host (AT&T syntax), from the optimised module.
pub fn emit_asm(ctx: &Context) -> Result<String, Diagnostic> {
    let bytes = emit_file(ctx, FileType::Assembly)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A relocatable, position-independent object file for the host: each
/// function exported as `int8_t l0_<name>(params..., void *out)` plus
/// `l0_fault_messages`, the same contract as [`crate::emit_object`].
pub fn emit_object(ctx: &Context) -> Result<Vec<u8>, Diagnostic> {
    emit_file(ctx, FileType::Object)
}

/// Builds and optimises the module of `t` in `lctx`, JIT-compiles it with
/// the runtime's symbols mapped, and finds each function's trampoline.
/// On an error the engine and the module are dropped (in that order) here.
#[allow(clippy::type_complexity)]
fn load<'c>(
    lctx: &'c LContext,
    t: &Translated,
    tm: &TargetMachine,
) -> Result<(Module<'c>, ExecutionEngine<'c>, Vec<HostFunc>), Diagnostic> {
    let module = build(lctx, &t.text, tm)?;
    let engine = module
        .create_jit_execution_engine(OptimizationLevel::Aggressive)
        .map_err(llvm_error)?;
    for (name, addr) in crate::runtime::symbols() {
        if let Some(f) = module.get_function(name) {
            engine.add_global_mapping(&f, addr as usize);
        }
    }
    let mut funcs = Vec::new();
    for fi in &t.funcs.list {
        let name = format!("l0t_{}", fi.name);
        let addr = engine.get_function_address(&name).map_err(llvm_error)?;
        if addr == 0 {
            return Err(llvm_error(format!("no code for '{name}'")));
        }
        funcs.push(HostFunc {
            name: fi.name.clone(),
            params: fi.param_tys.clone(),
            results: fi.result_tys.clone(),
            out: fi.out.clone(),
            // SAFETY: the trampoline was defined with exactly this signature.
            entry: unsafe { std::mem::transmute::<usize, Trampoline>(addr) },
        });
    }
    Ok((module, engine, funcs))
}

/// A module compiled by LLVM's MCJIT. Its code is released when it is dropped.
pub struct LlvmJit {
    engine: ManuallyDrop<ExecutionEngine<'static>>,
    module: ManuallyDrop<Module<'static>>,
    lctx: *mut LContext,
    entries: Entries,
    /// Wall time of translation, optimisation and code generation.
    pub compile_time: std::time::Duration,
}

impl LlvmJit {
    /// Compiles every function of `ctx` at the `arr` + `scf` level with only
    /// supported types; the others are left out and [`LlvmJit::check`]
    /// says why.
    pub fn compile(ctx: &Context) -> Result<LlvmJit, Diagnostic> {
        let t0 = std::time::Instant::now();
        let t = translate_module(ctx, Wrappers::Trampoline)?;
        let tm = host_machine(RelocMode::Default, CodeModel::JITDefault)?;
        let lctx: *mut LContext = Box::into_raw(Box::new(LContext::create()));
        // SAFETY: the context outlives the module and the engine: `load`
        // drops both before returning an error (the context is freed once,
        // below), and `LlvmJit::drop` drops them before the context.
        let loaded = load(unsafe { &*lctx }, &t, &tm);
        let (module, engine, funcs) = match loaded {
            Ok(x) => x,
            Err(e) => {
                unsafe { drop(Box::from_raw(lctx)) };
                return Err(e);
            }
        };
        Ok(LlvmJit {
            engine: ManuallyDrop::new(engine),
            module: ManuallyDrop::new(module),
            lctx,
            entries: Entries::new(funcs, t.faults, t.unsupported, "LLVM"),
            compile_time: t0.elapsed(),
        })
    }

    /// Whether `func` was compiled (`Err`: the diagnostic at the op or type
    /// the backend does not support, or a missing function).
    pub fn check(&self, func: &str) -> Result<(), Diagnostic> {
        self.entries.check(func)
    }

    /// Marshals `args` for calling `func`.
    pub fn prepare(&self, func: &str, args: &[RtValue]) -> Result<PreparedCall, String> {
        let args: Vec<Arg> = args.iter().cloned().map(Arg::Value).collect();
        self.entries.prepare(func, &args)
    }

    /// [`Self::prepare`] with arguments that may be raw arrays, passed in
    /// place ([`crate::RawArray`]).
    pub fn prepare_args(&self, func: &str, args: &[Arg]) -> Result<PreparedCall, String> {
        self.entries.prepare(func, args)
    }

    /// Calls a prepared function; a run-time fault is a [`RunError`] at the
    /// faulting op.
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

impl Drop for LlvmJit {
    fn drop(&mut self) {
        // SAFETY: dropped once, engine before module before context.
        unsafe {
            ManuallyDrop::drop(&mut self.engine);
            ManuallyDrop::drop(&mut self.module);
            drop(Box::from_raw(self.lctx));
        }
    }
}
