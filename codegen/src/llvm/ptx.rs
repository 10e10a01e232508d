//! PTX for the kernels of a program at the `gpu` level: every `func.func`
//! marked `gpu.kernel` is translated ([`super::translate::define_kernel`],
//! [`super::gpu`]) into one LLVM module for `nvptx64-nvidia-cuda` (kernels
//! listed in `!nvvm.annotations`, global buffers in address space 1 and
//! workgroup buffers in address space 3), optimised with `default<O3>` for
//! [`PTX_CPU`] and printed by LLVM's NVPTX backend.
//!
//! LLVM 14's NVPTX backend tops out at `sm_86` / PTX 7.5; PTX for `sm_80`
//! runs on A100 and, through the driver's JIT, on H100 (`sm_90`).
//! Kernels that call `exp`, `log`, `pow`, `sin` or `cos` use CUDA's
//! libdevice (`__nv_exp`, ...), linked from the bitcode file that
//! [`find_libdevice`] locates.

use std::fmt::Write as _;
use std::path::PathBuf;

use inkwell::context::Context as LContext;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::{Linkage, Module};
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{
    CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine, TargetTriple,
};
use inkwell::OptimizationLevel;
use rustc_hash::FxHashMap;

use ir::{Context, Diagnostic, OpId, Type};

use super::translate::{define_kernel, scalar, Funcs};
use super::{llvm_error, writer};
use crate::faults::FaultTable;

/// The GPU architecture the PTX is generated for.
pub const PTX_CPU: &str = "sm_80";
/// The PTX ISA version (LLVM 14's newest).
pub const PTX_FEATURES: &str = "+ptx75";
/// The NVPTX triple.
pub const PTX_TRIPLE: &str = "nvptx64-nvidia-cuda";

/// The kernels of `ctx`, with their names, in module order.
pub fn kernels(ctx: &Context) -> Vec<(OpId, String)> {
    ctx.iter_block(ctx.top)
        .filter(|&f| dialects::gpu::is_kernel(ctx, f))
        .filter_map(|f| Some((f, dialects::func::func_name(ctx, f)?.to_string())))
        .collect()
}

/// The LLVM parameter types of kernel `f` (an `arr` is a global pointer and
/// a length): the launcher passes arguments in this order.
pub fn kernel_params(ctx: &Context, f: OpId) -> Vec<String> {
    let mut out = Vec::new();
    for &a in ctx.block_args(ctx.op_block(f, 0)) {
        match ctx.ty(a) {
            Type::Arr(_) => {
                out.push("i8 addrspace(1)*".to_string());
                out.push("i64".to_string());
            }
            t => out.push(scalar(t).map_or("i64", |s| s.name()).to_string()),
        }
    }
    out
}

/// The LLVM IR text of every kernel of `ctx` (unoptimised) and whether it
/// calls libdevice.
pub fn translate_kernels(ctx: &Context) -> Result<(String, bool), Diagnostic> {
    let ks = kernels(ctx);
    if ks.is_empty() {
        return Err(ir::pass::pass_error(
            "no 'gpu.kernel' functions to compile: lower with --pass=...,lower{target=gpu} first",
        ));
    }
    let funcs = Funcs::default();
    let mut faults = FaultTable::default();
    let mut decls: FxHashMap<String, String> = FxHashMap::default();
    let mut text = String::new();
    let _ = writeln!(text, "target triple = \"{PTX_TRIPLE}\"");
    text.push_str("target datalayout = \"e-i64:64-i128:128-v16:16-v32:32-n16:32:64\"\n\n");
    for (f, name) in &ks {
        let def = define_kernel(ctx, &funcs, &mut faults, &mut decls, *f, name)?;
        text.push_str(&def);
        text.push('\n');
    }
    let mut ds: Vec<&String> = decls.values().collect();
    ds.sort();
    let mut libdevice = false;
    for d in ds {
        text.push_str(d);
        if d.starts_with("declare") {
            libdevice |= d.contains("@__nv_");
            text.push_str(" #1");
        }
        text.push('\n');
    }
    let _ = writeln!(
        text,
        "attributes #0 = {{ nounwind \"target-cpu\"=\"{PTX_CPU}\" \"target-features\"=\"{PTX_FEATURES}\" }}"
    );
    text.push_str("attributes #1 = { nounwind }\n");
    text.push_str(&writer::metadata());
    // The TBAA tree and branch weights come first.
    let first = writer::METADATA_NODES;
    let refs: Vec<String> = (0..ks.len()).map(|k| format!("!{}", first + k)).collect();
    let _ = writeln!(text, "!nvvm.annotations = !{{{}}}", refs.join(", "));
    for (k, (f, name)) in ks.iter().enumerate() {
        let _ = writeln!(
            text,
            "!{} = !{{void ({})* @{name}, !\"kernel\", i32 1}}",
            first + k,
            kernel_params(ctx, *f).join(", ")
        );
    }
    let flag = first + ks.len();
    let _ = writeln!(text, "!llvm.module.flags = !{{!{flag}}}");
    let _ = writeln!(text, "!{flag} = !{{i32 4, !\"nvvm-reflect-ftz\", i32 0}}");
    Ok((text, libdevice))
}

/// CUDA's `libdevice.10.bc`: `$L0_LIBDEVICE`, else next to `$L0_PTXAS`
/// (the PyPI `nvidia-cuda-nvcc-cu12` layout `cuda_nvcc/{bin/ptxas,
/// nvvm/libdevice/}`), else `$CUDA_HOME` or `/usr/local/cuda`.
pub fn find_libdevice() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("L0_LIBDEVICE") {
        return Some(PathBuf::from(p));
    }
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Some(p) = std::env::var_os("L0_PTXAS") {
        if let Some(root) = PathBuf::from(p).parent().and_then(|b| b.parent()) {
            roots.push(root.to_path_buf());
        }
    }
    if let Some(p) = std::env::var_os("CUDA_HOME") {
        roots.push(PathBuf::from(p));
    }
    roots.push(PathBuf::from("/usr/local/cuda"));
    roots
        .into_iter()
        .map(|r| r.join("nvvm/libdevice/libdevice.10.bc"))
        .find(|p| p.is_file())
}

fn nvptx_machine() -> Result<TargetMachine, Diagnostic> {
    Target::initialize_nvptx(&InitializationConfig::default());
    let triple = TargetTriple::create(PTX_TRIPLE);
    let target = Target::from_triple(&triple).map_err(llvm_error)?;
    target
        .create_target_machine(
            &triple,
            PTX_CPU,
            PTX_FEATURES,
            OptimizationLevel::Aggressive,
            RelocMode::Default,
            CodeModel::Default,
        )
        .ok_or_else(|| llvm_error("no NVPTX target machine"))
}

/// Links libdevice into `m` and internalizes everything but the kernels,
/// so that the optimiser drops the functions no kernel calls.
fn link_libdevice<'c>(
    lctx: &'c LContext,
    m: &Module<'c>,
    kernels: &[(OpId, String)],
) -> Result<(), Diagnostic> {
    let path = find_libdevice().ok_or_else(|| {
        ir::pass::pass_error(
            "the kernels call CUDA's libdevice (exp, log, pow, sin, cos, tanh, erf or fmod) but libdevice.10.bc was not found: set L0_LIBDEVICE to its path (it ships in the PyPI package nvidia-cuda-nvcc-cu12 under nvidia/cuda_nvcc/nvvm/libdevice/)",
        )
    })?;
    let lib = Module::parse_bitcode_from_path(&path, lctx)
        .map_err(|e| llvm_error(format!("cannot read {}: {e}", path.display())))?;
    lib.set_triple(&m.get_triple());
    lib.set_data_layout(&m.get_data_layout());
    m.link_in_module(lib).map_err(llvm_error)?;
    for f in m.get_functions() {
        let name = f.get_name().to_string_lossy().into_owned();
        if f.count_basic_blocks() > 0 && !kernels.iter().any(|(_, k)| *k == name) {
            f.set_linkage(Linkage::Internal);
        }
    }
    Ok(())
}

/// Translates, links and optimises the kernels of `ctx` and hands the
/// module to `f` with the NVPTX target machine.
fn with_kernels<R>(
    ctx: &Context,
    f: impl FnOnce(&Module, &TargetMachine) -> Result<R, Diagnostic>,
) -> Result<R, Diagnostic> {
    let (text, libdevice) = translate_kernels(ctx)?;
    let tm = nvptx_machine()?;
    let lctx = LContext::create();
    let buf = MemoryBuffer::create_from_memory_range_copy(text.as_bytes(), "l0-kernels");
    let m = lctx
        .create_module_from_ir(buf)
        .map_err(|e| llvm_error(format!("the generated kernel IR does not parse: {e}")))?;
    m.verify()
        .map_err(|e| llvm_error(format!("the generated kernel IR does not verify: {e}")))?;
    if libdevice {
        link_libdevice(&lctx, &m, &kernels(ctx))?;
    }
    m.run_passes("default<O3>", &tm, PassBuilderOptions::create())
        .map_err(llvm_error)?;
    f(&m, &tm)
}

/// The PTX of every kernel of `ctx` (a program lowered with
/// `lower{target=gpu}`), for [`PTX_CPU`].
pub fn emit_ptx(ctx: &Context) -> Result<String, Diagnostic> {
    with_kernels(ctx, |m, tm| {
        let out = tm
            .write_to_memory_buffer(m, FileType::Assembly)
            .map_err(llvm_error)?;
        Ok(String::from_utf8_lossy(out.as_slice()).into_owned())
    })
}

/// The optimised LLVM IR of every kernel of `ctx` (what [`emit_ptx`]
/// gives to the NVPTX backend).
pub fn emit_kernel_llvm(ctx: &Context) -> Result<String, Diagnostic> {
    with_kernels(ctx, |m, _| Ok(m.print_to_string().to_string()))
}
