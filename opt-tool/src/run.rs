//! `--run`: argument parsing against the function signature, execution on the
//! chosen backend, result printing and `--bench`.

use std::time::Instant;

use ir::interp::{Interp, RtValue};
use ir::{Attribute, Context, Loc, Type};

use crate::args::Leaf;
use crate::memref_args::MemRefEntry;
use crate::{Backend, Cli, Failure};
use codegen::Out;

/// The parameter and result types of function `name`.
pub fn signature(ctx: &Context, name: &str) -> Option<(Vec<Type>, Vec<Type>)> {
    let f = ctx.lookup_symbol(name)?;
    match ctx.attr(f, "function_type") {
        Some(Attribute::Type(Type::Function(ft))) => Some((ft.inputs.clone(), ft.results.clone())),
        _ => None,
    }
}

fn median(mut xs: Vec<u128>) -> u128 {
    xs.sort_unstable();
    xs.get(xs.len() / 2).copied().unwrap_or(0)
}

/// The implicit lowering before code generation: `fuse` first (unless
/// `-O0`), and with `--fp-contract=fast` the float ops it makes marked
/// `contract`.
#[derive(Copy, Clone, Debug)]
pub struct Lowering {
    pub fuse: bool,
    pub contract: bool,
}

/// The native backends compile the arr + scf level: lower whatever is above
/// it (the IR is not printed after --run, so this is not observable), with
/// the default optimizing pipeline `fuse,lower` (`-O0`: `lower` alone).
/// `lower`'s `split` option depends on the backend: Cranelift gains from
/// several accumulators per reduction (4); LLVM reassociates reductions
/// itself (their accumulators carry `fastmath<reassoc>`), so it gets one (1).
pub fn lower_for_native(ctx: &mut Context, backend: Backend, how: Lowering) -> Result<(), Failure> {
    let codegen = (backend == Backend::Llvm).then_some("llvm");
    let split = passes::lower::default_split(codegen);
    lower_remaining(ctx, split, None, how)
}

/// `--target=nvptx` and `--emit=ptx` compile the `gpu` level: lower
/// whatever is above it with `fuse` (unless `-O0`) and `lower{target=gpu}`
/// (default block size).
pub fn lower_for_gpu(ctx: &mut Context, how: Lowering) -> Result<(), Failure> {
    lower_remaining(ctx, 1, Some(passes::gpu::GpuOptions::default()), how)
}

/// Runs `fuse` (when `how.fuse`) and `lower` (with `split`, and, for the
/// gpu level, `gpu`; `mat.mul` in register blocks on native targets, with
/// contraction too) when any op still has a lowering; then marks float ops
/// `contract` when `how.contract`.
fn lower_remaining(
    ctx: &mut Context,
    split: usize,
    gpu: Option<passes::gpu::GpuOptions>,
    how: Lowering,
) -> Result<(), Failure> {
    if passes::lower::needs_lowering(ctx) {
        use ir::pass::Pass;
        let stats = &mut ir::pass::PassStats::default();
        if how.fuse {
            let mut f = if gpu.is_some() {
                passes::fuse::Fuse::for_gpu()
            } else {
                passes::fuse::Fuse::default()
            };
            f.run(ctx, stats)?;
        }
        passes::lower::Lower::new(split, gpu).run(ctx, stats)?;
        ir::verifier::verify(ctx).map_err(Failure::Diags)?;
    }
    if how.contract {
        passes::fp_contract::mark(ctx);
    }
    Ok(())
}

/// `--timeout`: a thread that, unless dropped first, reports a located
/// error at the function after the given time and ends the process with
/// status 1. Compiled code cannot be interrupted safely in the middle (it
/// may hold locks of the parallel runtime), so the process ends; nothing
/// has been written to `-o` yet (results are written after the run).
struct Watchdog {
    /// Dropping it (the run ended) wakes the thread, which then returns.
    _stop: std::sync::mpsc::Sender<()>,
}

/// Where function `func` is defined (unknown if it is not), for run-time
/// diagnostics about the whole call.
fn func_loc(ctx: &Context, func: &str) -> Loc {
    ctx.lookup_symbol(func).map_or(Loc::UNKNOWN, |f| ctx.loc(f))
}

impl Watchdog {
    fn start(ctx: &Context, func: &str, after: std::time::Duration) -> Watchdog {
        let d = ir::Diagnostic::error(
            func_loc(ctx, func),
            format!(
                "'@{func}' did not finish within {} s (--timeout)",
                after.as_secs_f64()
            ),
        );
        let text = ir::diag::render(ctx.source.as_deref(), &d);
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(after) {
                eprint!("{text}");
                std::process::exit(1);
            }
        });
        Watchdog { _stop: tx }
    }
}

/// Runs `call` (compiled code or the interpreter) once, then `--bench`
/// times more (median on stderr).
fn native_calls<T>(
    cli: &Cli,
    call: impl Fn() -> Result<T, ir::interp::RunError>,
) -> Result<T, Failure> {
    let mut r = call().map_err(|e| Failure::Diags(vec![e.into_diagnostic()]))?;
    if let Some(n) = cli.bench {
        let mut times = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            let last = call().map_err(|e| Failure::Diags(vec![e.into_diagnostic()]))?;
            times.push(t.elapsed().as_nanos());
            // `--resident`: the result of a call that reused device copies.
            if cli.resident {
                r = last;
            }
        }
        eprintln!("median_ns={}", median(times));
    }
    Ok(r)
}

/// `--run` with `--target=nvptx`: the program is lowered to the `gpu`
/// level, its host part runs on the chosen backend (`--backend`, LLVM by
/// default) and its kernels on the chosen device (`--device`): the GPU
/// through the CUDA driver ([`crate::cuda`]), or the simulation
/// ([`crate::device::SimDevice`]; with `--backend=interp` the
/// interpreter simulates the kernels itself). A program in which no loop
/// became a kernel needs no GPU. `--bench` on the GPU also prints
/// `h2d_ns=` and `d2h_ns=` (median time in copies to and from the device)
/// and `kernel_ns=` (median time in kernels).
fn run_on_gpu(
    cli: &Cli,
    ctx: &mut Context,
    func: &str,
    leaves: &[Leaf],
    entry: Option<&MemRefEntry>,
) -> Result<Vec<Out>, Failure> {
    // Errors about the device are reported at the function being run.
    let at = ctx
        .lookup_symbol(func)
        .map(|f| ctx.loc(f))
        .unwrap_or(Loc::UNKNOWN);
    let diag = move |m: String| Failure::Diags(vec![ir::Diagnostic::error(at, m)]);
    lower_for_gpu(ctx, cli.lowering())?;
    let ctx: &Context = ctx;
    let leaves = &adapt_args(ctx, func, entry, leaves)?;
    let backend = cli.backend();
    let interp_args = || -> Result<Vec<RtValue>, Failure> { assemble(ctx, func, &values(leaves)?) };
    if cli.device == crate::Device::Sim || codegen::runtime::gpu::kernels(ctx).is_empty() {
        if backend == Backend::Interp {
            // The interpreter simulates the kernels itself.
            let args = &interp_args()?;
            return native_calls(cli, || Interp::new(ctx).call(func, args, Loc::UNKNOWN))
                .map(values_out);
        }
        let sim = crate::device::SimDevice::new(ctx);
        let args = native_args(ctx, func, leaves)?;
        return host_calls(cli, ctx, backend, func, &args, &sim, None);
    }
    if !crate::cuda::driver_present() {
        return Err(diag(crate::cuda::NO_DRIVER.into()));
    }
    let ptx = codegen::llvm::ptx::emit_ptx(ctx)?;
    let cuda = std::rc::Rc::new(crate::cuda::Cuda::open(ctx, &ptx).map_err(diag)?);
    if backend == Backend::Interp {
        // The interpreter's host ops on the GPU: a bridge per call, which
        // frees what the call left on the device.
        let args = &interp_args()?;
        let call = || {
            let mut it = Interp::new(ctx);
            let bridge = crate::device::Bridge::new(cuda.clone());
            it.ambient = Some(std::rc::Rc::new(dialects::gpu::sim::DeviceCx(
                std::rc::Rc::new(bridge),
            )));
            it.call(func, args, Loc::UNKNOWN)
        };
        return timed_calls(cli, &call, Some(&*cuda)).map(values_out);
    }
    let args = native_args(ctx, func, leaves)?;
    host_calls(cli, ctx, backend, func, &args, &*cuda, Some(&*cuda))
}

/// Compiles `ctx` with `backend` (Cranelift or LLVM) and calls `func`
/// (then `--bench` times more) with `device` behind its `gpu` ops, if any.
fn host_calls(
    cli: &Cli,
    ctx: &Context,
    backend: Backend,
    func: &str,
    args: &[codegen::Arg],
    device: &dyn codegen::runtime::gpu::GpuDevice,
    cuda: Option<&crate::cuda::Cuda>,
) -> Result<Vec<Out>, Failure> {
    use codegen::runtime::gpu::with_device;
    if backend == Backend::Llvm {
        let module = codegen::llvm::LlvmJit::compile(ctx)?;
        if cli.bench.is_some() {
            eprintln!("compile_ns={}", module.compile_time.as_nanos());
        }
        module.check(func)?;
        let prepared = module.prepare_args(func, args).map_err(Failure::Usage)?;
        resident_calls(cli, device, prepared.input_buffers(), || {
            timed_calls(
                cli,
                &|| with_device(device, || module.call_raw(&prepared)),
                cuda,
            )
        })
    } else {
        let module = codegen::JitModule::compile(ctx)?;
        module.check(func)?;
        let prepared = module.prepare_args(func, args).map_err(Failure::Usage)?;
        resident_calls(cli, device, prepared.input_buffers(), || {
            timed_calls(
                cli,
                &|| with_device(device, || module.call_raw(&prepared)),
                cuda,
            )
        })
    }
}

/// Runs `calls` in resident mode when `--resident` (the argument buffers
/// `inputs` stay on `device` between the calls: see
/// [`codegen::runtime::gpu::resident`]), then prints what it saved.
fn resident_calls<T>(
    cli: &Cli,
    device: &dyn codegen::runtime::gpu::GpuDevice,
    inputs: &[(usize, usize)],
    calls: impl FnOnce() -> Result<T, Failure>,
) -> Result<T, Failure> {
    use codegen::runtime::gpu::resident;
    if !cli.resident {
        return calls();
    }
    resident::begin(inputs.to_vec());
    let r = calls();
    let stats = resident::end(device);
    eprintln!("resident_copies={}", stats.copies);
    eprintln!("resident_hits={}", stats.hits);
    r
}

/// [`native_calls`], with the GPU's copy and kernel times when `cuda`.
fn timed_calls<T>(
    cli: &Cli,
    call: &dyn Fn() -> Result<T, ir::interp::RunError>,
    cuda: Option<&crate::cuda::Cuda>,
) -> Result<T, Failure> {
    let (Some(cuda), Some(n)) = (cuda, cli.bench) else {
        return native_calls(cli, call);
    };
    let fail = |e: ir::interp::RunError| Failure::Diags(vec![e.into_diagnostic()]);
    let mut r = call().map_err(fail)?;
    let (mut times, mut kernels) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut h2d, mut d2h) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        cuda.reset_times();
        let t = Instant::now();
        let last = call().map_err(fail)?;
        if cli.resident {
            r = last;
        }
        times.push(t.elapsed().as_nanos());
        kernels.push(cuda.kernel_time.get().as_nanos());
        h2d.push(cuda.h2d_time.get().as_nanos());
        d2h.push(cuda.d2h_time.get().as_nanos());
    }
    eprintln!("median_ns={}", median(times));
    eprintln!("h2d_ns={}", median(h2d));
    eprintln!("kernel_ns={}", median(kernels));
    eprintln!("d2h_ns={}", median(d2h));
    Ok(r)
}

/// The `--arg` values of `func`, parsed against its parameter types. A
/// struct parameter takes one `--arg` per field (flattened), a
/// `vec<struct<...>>` one vector per field (struct-of-arrays): the values
/// of [`Type::leaves`], in order, which [`assemble`] turns back into the
/// parameters of the function as it is when called.
pub fn parse_args(cli: &Cli, ctx: &Context, func: &str) -> Result<Vec<RtValue>, Failure> {
    values(&parse_leaves(cli, ctx, func, None)?)
}

/// The values of `leaves` (mapped files decoded).
fn values(leaves: &[Leaf]) -> Result<Vec<RtValue>, Failure> {
    leaves
        .iter()
        .enumerate()
        .map(|(i, l)| {
            l.value()
                .map_err(|e| Failure::Usage(format!("--arg #{}: {e}", i + 1)))
        })
        .collect()
}

/// [`parse_args`] with `.npy` files mapped, not yet decoded; against the
/// memref parameters of `entry` where the function had them before the
/// pipeline.
fn parse_leaves(
    cli: &Cli,
    ctx: &Context,
    func: &str,
    entry: Option<&MemRefEntry>,
) -> Result<Vec<Leaf>, Failure> {
    let Some((now, _)) = signature(ctx, func) else {
        return Err(Failure::Usage(format!(
            "no function named '@{func}' to run"
        )));
    };
    let params = entry.map_or(now, |e| e.params.clone());
    if ctx
        .lookup_symbol(func)
        .is_some_and(|f| dialects::func::is_declaration(ctx, f))
    {
        return Err(Failure::Usage(format!(
            "'@{func}' is a declaration without a body: nothing to run"
        )));
    }
    let leaves: Vec<Type> = params.iter().flat_map(Type::leaves).collect();
    if cli.args.len() != leaves.len() {
        let per_field = if leaves.len() != params.len() {
            " (one per field of a struct parameter)"
        } else {
            ""
        };
        return Err(Failure::Usage(format!(
            "function '@{func}' takes {} argument(s){per_field}, but {} --arg given",
            leaves.len(),
            cli.args.len()
        )));
    }
    let mut args = Vec::with_capacity(leaves.len());
    for (i, (a, t)) in cli.args.iter().zip(&leaves).enumerate() {
        args.push(
            crate::args::parse_leaf(a, t)
                .map_err(|e| Failure::Usage(format!("--arg #{}: {e}", i + 1)))?,
        );
    }
    Ok(args)
}

/// The arguments of `func` as it is now (struct parameters whole, or
/// already split by `split-structs`) from the flattened `--arg` values.
pub fn assemble(ctx: &Context, func: &str, leaves: &[RtValue]) -> Result<Vec<RtValue>, Failure> {
    let params = signature(ctx, func).map(|s| s.0).unwrap_or_default();
    let mut it = leaves.iter().cloned();
    params
        .iter()
        .map(|t| {
            RtValue::from_leaves(t, &mut it).ok_or_else(|| {
                Failure::Usage(format!(
                    "the field vectors of a '{t}' argument must have one length"
                ))
            })
        })
        .collect()
}

/// Whether each parameter of `func` (as it is now) is one `--arg`: no
/// struct parameters.
fn one_arg_per_param(ctx: &Context, func: &str, leaves: &[Leaf]) -> bool {
    let params = signature(ctx, func).map(|s| s.0).unwrap_or_default();
    params.len() == leaves.len() && params.iter().all(|t| t.leaves() == [t.clone()])
}

/// The arguments of compiled `func` from the `--arg` values: a mapped
/// `.npy` file whose bytes have the ABI's layout is passed in place (no
/// decoding, no copy) where each parameter is one `--arg`; otherwise the
/// values are decoded and assembled ([`assemble`]).
fn native_args(ctx: &Context, func: &str, leaves: &[Leaf]) -> Result<Vec<codegen::Arg>, Failure> {
    if one_arg_per_param(ctx, func, leaves) {
        return leaves
            .iter()
            .enumerate()
            .map(|(i, l)| {
                l.arg()
                    .map_err(|e| Failure::Usage(format!("--arg #{}: {e}", i + 1)))
            })
            .collect();
    }
    Ok(assemble(ctx, func, &values(leaves)?)?
        .into_iter()
        .map(codegen::Arg::Value)
        .collect())
}

/// Results of the interpreter as [`Out`]s.
fn values_out(vs: Vec<RtValue>) -> Vec<Out> {
    vs.into_iter().map(Out::Value).collect()
}

/// The results of `func` as it is now, split into fields (the values of
/// [`Type::leaves`] of each result type): what `--run` prints.
pub fn flatten_results(
    ctx: &Context,
    func: &str,
    out: &[RtValue],
) -> Result<Vec<RtValue>, Failure> {
    let now = signature(ctx, func).map(|s| s.1).unwrap_or_default();
    let mut flat = Vec::with_capacity(out.len());
    for (v, t) in out.iter().zip(&now) {
        flat.extend(
            v.leaves(t)
                .ok_or_else(|| Failure::Usage(format!("a result does not have its type '{t}'")))?,
        );
    }
    Ok(flat)
}

/// The `--arg` values for `func` as it is now: a function whose memref
/// signature `entry` was lowered takes descriptors
/// ([`MemRefEntry::arguments`]).
fn adapt_args(
    ctx: &Context,
    func: &str,
    entry: Option<&MemRefEntry>,
    leaves: &[Leaf],
) -> Result<Vec<Leaf>, Failure> {
    match (entry, signature(ctx, func)) {
        (Some(e), Some(now)) if e.lowered(&now) => {
            e.arguments(leaves.to_vec()).map_err(Failure::Usage)
        }
        _ => Ok(leaves.to_vec()),
    }
}

/// The most parts (scalars and brackets, [`RtValue::printed_parts`]) a
/// printed result may have: 2^32, tens of gigabytes of text.
const MAX_PRINTED_PARTS: u128 = 1 << 32;

/// Runs `func` with the command-line arguments and prints its results.
/// `entry` is its signature before the pipeline where that had memrefs
/// (their arguments and results are then given and printed as memrefs,
/// also after `lower` made them descriptors).
pub fn run(
    cli: &Cli,
    ctx: &mut Context,
    func: &str,
    entry: Option<&MemRefEntry>,
) -> Result<(), Failure> {
    if cli.defer_faults && (cli.backend() != Backend::Interp || cli.target == crate::Target::Nvptx)
    {
        return Err(Failure::Usage(
            "--defer-faults needs --backend=interp (native code and kernels do not defer faults)"
                .into(),
        ));
    }
    let leaves = parse_leaves(cli, ctx, func, entry)?;
    if entry.is_none() && !one_arg_per_param(ctx, func, &leaves) {
        // Struct parameters: their field vectors must have one length,
        // checked here, before any pass splits the parameters.
        assemble(ctx, func, &values(&leaves)?)?;
    }
    let results = match entry {
        Some(e) => e.results.clone(),
        None => signature(ctx, func).map(|s| s.1).unwrap_or_default(),
    };
    let result_leaves: Vec<Type> = results.iter().flat_map(Type::leaves).collect();
    let _watchdog = cli.timeout.map(|t| Watchdog::start(ctx, func, t));
    let out: Vec<Out> = match cli.backend() {
        _ if cli.target == crate::Target::Nvptx => run_on_gpu(cli, ctx, func, &leaves, entry)?,
        Backend::Interp => {
            let leaves = adapt_args(ctx, func, entry, &leaves)?;
            let args = assemble(ctx, func, &values(&leaves)?)?;
            values_out(native_calls(cli, || {
                Interp::new(ctx).call(func, &args, Loc::UNKNOWN)
            })?)
        }
        backend @ (Backend::Cranelift | Backend::Llvm) => {
            lower_for_native(ctx, backend, cli.lowering())?;
            let leaves = adapt_args(ctx, func, entry, &leaves)?;
            let args = native_args(ctx, func, &leaves)?;
            // IR already at the gpu level runs its kernels simulated.
            let sim = crate::device::SimDevice::new(ctx);
            host_calls(cli, ctx, backend, func, &args, &sim, None)?
        }
    };
    // Descriptors of memref results become memrefs again.
    let out = match (entry, signature(ctx, func)) {
        (Some(e), Some(now)) if e.lowered(&now) => {
            let vs = out.into_iter().map(Out::into_value).collect();
            values_out(e.results(vs).map_err(Failure::Usage)?)
        }
        _ => out,
    };
    let split = results.len() != result_leaves.len();
    // Struct results are split into fields (as values); others stay as
    // they came, so that an array result is written to `-o` from its bytes.
    let out: Vec<Out> = if split {
        let vs: Vec<RtValue> = out.into_iter().map(Out::into_value).collect();
        values_out(flatten_results(ctx, func, &vs)?)
    } else {
        out
    };
    let results = result_leaves;
    if let Some(path) = &cli.output {
        if out.len() != 1 {
            let why = if split {
                " (a struct result is one result per field)"
            } else {
                ""
            };
            return Err(Failure::Usage(format!(
                "-o FILE.npy needs a function with exactly one result{why}"
            )));
        }
        let Some(r) = out.into_iter().next() else {
            return Ok(());
        };
        crate::npy::write(path, r, &results[0]).map_err(Failure::Usage)?;
        return Ok(());
    }
    let mut text = String::new();
    for (k, v) in out.into_iter().enumerate() {
        let v = v.into_value();
        // A matrix of many empty rows holds nothing, but its text would
        // not fit anywhere (issue 43: a (2^63 - 1) x 0 matrix).
        let parts = v.printed_parts();
        if parts > MAX_PRINTED_PARTS {
            return Err(ir::Diagnostic::error(
                func_loc(ctx, func),
                format!(
                    "result {} of @{func} is too large to print ({parts} parts, at most {MAX_PRINTED_PARTS}); write it with -o FILE.npy",
                    k + 1
                ),
            )
            .into());
        }
        text.push_str(&v.to_string());
        text.push('\n');
    }
    // A closed pipe (e.g. `| head`) is not an error of the program; any
    // other failed write (a full disk) is.
    let mut stdout = std::io::stdout().lock();
    match std::io::Write::write_all(&mut stdout, text.as_bytes())
        .and_then(|_| std::io::Write::flush(&mut stdout))
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Failure::Usage(format!("cannot write output: {e}")))
        }
        _ => Ok(()),
    }
}
