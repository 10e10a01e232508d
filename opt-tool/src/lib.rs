//! The `l0-opt` driver as a library: [`opt_main`] parses L0 IR, runs a pass
//! pipeline, and prints, emits or runs the result (IR-SPEC §4), for any
//! registry of dialects and passes, as MLIR's `MlirOptMain` does. The
//! `l0-opt` binary is `opt_main(Tool::l0())`; an out-of-tree tool
//! (`examples/standalone`) adds its own dialects and passes:
//!
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     opt_tool::opt_main(opt_tool::Tool {
//!         name: "my-opt",
//!         dialects: |r| {
//!             dialects::register_all(r); // L0's dialects
//!             // my_dialect::register(r);
//!         },
//!         passes: |p| {
//!             passes::register_all(p); // L0's passes
//!             // p.register(my_pass::info());
//!         },
//!     })
//! }
//! ```
//!
//! Exit status: 0 success, 1 a diagnostic, 2 a bad command line (including
//! a file it names that cannot be read or written); an internal error (a
//! panic) aborts.

mod args;
mod check_each;
mod cuda;
mod device;
mod expect;
mod memref_args;
mod mlir_compat;
mod npy;
mod output;
mod reproducer;
pub mod resident;
mod run;
mod unregistered;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

use clap::{ArgAction, Parser, ValueEnum};

use ir::context::Source;
use ir::diag::{render, Diagnostic};
use ir::pass::{PassManager, PassRegistry, PrintIr, PrintIrOptions, Timing, VerifyEach};
use ir::printer::{print_module, PrintOptions};
use ir::spec::Registry;
use ir::Context;
use ir::SourceText;

/// What a `-opt` tool is made of: its name (in `--help` and in messages)
/// and the functions that register its dialects and passes. Plain function
/// pointers, since the driver builds a registry per input (split parts
/// included) on its own big-stack thread.
#[derive(Clone, Copy)]
pub struct Tool {
    /// The command's name, e.g. `l0-opt`.
    pub name: &'static str,
    /// Registers op specs (with their verifiers, folds, rewrites,
    /// interpreter semantics, custom forms and lowerings) and phases.
    pub dialects: fn(&mut Registry),
    /// Registers passes by name.
    pub passes: fn(&mut PassRegistry),
}

impl Tool {
    /// `l0-opt`: every dialect and pass of L0.
    pub fn l0() -> Tool {
        Tool {
            name: "l0-opt",
            dialects: dialects::register_all,
            passes: passes::register_all,
        }
    }
    /// A fresh registry of the tool's dialects.
    pub fn registry(&self) -> Rc<Registry> {
        let mut r = Registry::new();
        (self.dialects)(&mut r);
        Rc::new(r)
    }
    /// A fresh registry of the tool's passes, knowing the lowering phases
    /// of `dialects` (for `lower{until=...}`).
    pub fn pass_registry(&self, dialects: &Registry) -> PassRegistry {
        let mut p = PassRegistry::default();
        (self.passes)(&mut p);
        p.phases = dialects.phases.clone();
        p
    }
}

/// The tool [`opt_main`] runs (L0's own until `opt_main` says otherwise).
static TOOL: std::sync::OnceLock<Tool> = std::sync::OnceLock::new();

fn tool() -> &'static Tool {
    TOOL.get_or_init(Tool::l0)
}

/// The tool's name, for messages.
pub(crate) fn me() -> &'static str {
    tool().name
}

/// What to produce.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum Emit {
    Ir,
    Dot,
    Llvm,
    Asm,
    Obj,
    Ptx,
}

/// Code generation target.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Target {
    Native,
    Nvptx,
}

/// The device behind `--run --target=nvptx`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Device {
    /// The GPU, through the CUDA driver.
    Cuda,
    /// A simulated GPU: the kernels run in the gpu-level interpreter, the
    /// host code as it would with a GPU.
    Sim,
}

/// `--fp-contract`: whether float multiplies and adds may be fused.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum FpContract {
    /// Never: every operation is rounded (the interpreter's results).
    Off,
    /// Mark the float ops `fastmath<contract>` (pass `fp-contract`) before
    /// the pipeline and before code generation: a marked multiply feeding
    /// a marked add becomes a fused multiply-add in native code and PTX.
    Fast,
}

/// How `--run` executes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    Interp,
    Cranelift,
    Llvm,
}

impl Cli {
    /// Whether the IR that native code or kernels are generated from is
    /// fused first when it still needs lowering (every level but `-O0`).
    pub fn fuse_before_lowering(&self) -> bool {
        self.opt_level > 0
    }
    /// What the implicit lowering before code generation does.
    pub fn lowering(&self) -> run::Lowering {
        run::Lowering {
            fuse: self.fuse_before_lowering(),
            contract: self.fp_contract == FpContract::Fast,
        }
    }
    /// The code generator that the pipeline's output goes to, where this
    /// run generates code (`--run` on a native backend, `--emit` of native
    /// code or PTX): passes tune defaults to it ([`ir::pass::PassOptions::codegen`]).
    pub fn codegen(&self) -> Option<&'static str> {
        if self.run.is_some() {
            return match self.backend() {
                Backend::Interp => None,
                Backend::Cranelift => Some("cranelift"),
                Backend::Llvm => Some("llvm"),
            };
        }
        match self.emit {
            Emit::Ir | Emit::Dot => None,
            Emit::Obj | Emit::Asm if self.backend == Some(Backend::Cranelift) => Some("cranelift"),
            Emit::Llvm | Emit::Asm | Emit::Obj | Emit::Ptx => Some("llvm"),
        }
    }
    /// The backend of `--run`.
    pub fn backend(&self) -> Backend {
        let default = match self.target {
            Target::Nvptx => Backend::Llvm,
            Target::Native => Backend::Cranelift,
        };
        self.backend.unwrap_or(default)
    }
}

/// The L0 optimizer driver.
#[derive(Parser, Debug)]
#[command(
    name = "l0-opt",
    version,
    about = "L0 optimizer: parse, transform, print, compile and run L0 IR"
)]
struct Cli {
    /// Input file (`-` for standard input).
    input: Option<String>,
    /// Comma-separated pass pipeline, e.g. `fuse,lower` or `canonicalize{max-iterations=4}`.
    #[arg(long = "pass", value_name = "P1,P2,...")]
    pass: Vec<String>,
    /// MLIR's spelling of a pipeline, e.g. `builtin.module(cse,canonicalize)`
    /// (`func.func(...)` nests are flattened: L0's passes run on the module);
    /// runs after the `--pass` passes.
    #[arg(long = "pass-pipeline", value_name = "PIPELINE")]
    pass_pipeline: Option<String>,
    /// Print the IR to stderr after every pass.
    #[arg(long, alias = "mlir-print-ir-after-all")]
    print_ir_after_all: bool,
    /// Print the IR to stderr before each run of pass P (repeatable).
    #[arg(long, value_name = "P", alias = "mlir-print-ir-before")]
    print_ir_before: Vec<String>,
    /// Print the IR to stderr after each run of pass P (repeatable).
    #[arg(long, value_name = "P", alias = "mlir-print-ir-after")]
    print_ir_after: Vec<String>,
    /// Print the IR after a pass only when the pass changed it (with
    /// --print-ir-after=P or --print-ir-after-all; alone: after any pass).
    #[arg(long, alias = "mlir-print-ir-after-change")]
    print_ir_after_change: bool,
    /// Run --run's function in the interpreter (with the --args) before the
    /// pipeline and after every pass; report the first pass that changes a
    /// result.
    #[arg(long)]
    check_each: bool,
    /// When a pass fails, breaks verification or panics, write the IR from
    /// before it and the failing stage to FILE (runnable as is).
    #[arg(
        long,
        value_name = "FILE",
        alias = "mlir-pass-pipeline-crash-reproducer"
    )]
    crash_reproducer: Option<PathBuf>,
    /// Print the IR after a pass that failed (an error, or IR that does not
    /// verify).
    #[arg(long, alias = "mlir-print-ir-after-failure")]
    print_ir_after_failure: bool,
    /// Print every op in the generic form.
    #[arg(long, alias = "mlir-print-op-generic")]
    print_generic: bool,
    /// Print the ops that MLIR keeps in its `math` dialect under MLIR's
    /// names (`math.sqrt`, `math.absf`/`math.absi`, ...): the default, so
    /// that `mlir-opt` reads the output; kept for scripts that pass it.
    #[arg(long)]
    print_mlir_names: bool,
    /// Print those ops under L0's old names instead (`arith.sqrt`,
    /// `arith.abs`, ...). Both names are always parsed.
    #[arg(long, conflicts_with = "print_mlir_names")]
    print_l0_names: bool,
    /// Print each op's location after it, `loc("file":line:col)`: its MLIR
    /// location clause where the input had one, else its place in the input
    /// (MLIR's flag of the same name).
    #[arg(long)]
    mlir_print_debuginfo: bool,
    /// Accept ops (in the generic form) that no dialect registered, as
    /// opaque ops with unknown effects (MLIR's flag of the same name).
    #[arg(long)]
    allow_unregistered_dialect: bool,
    /// Verify the IR after each pass (default true).
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true", action = ArgAction::Set)]
    verify_each: bool,
    /// What to emit.
    #[arg(long, value_enum, default_value = "ir")]
    emit: Emit,
    /// Code generation target.
    #[arg(long, value_enum, default_value = "native")]
    target: Target,
    /// Output file (IR, object file, or a `.npy` result with --run).
    #[arg(short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// Run this function after the passes and print its results.
    #[arg(long, value_name = "FUNC")]
    run: Option<String>,
    /// An argument for --run: a number, boolean, `[1, 2]`, or `@file.npy`.
    #[arg(long = "arg", value_name = "ARG", allow_hyphen_values = true)]
    args: Vec<String>,
    /// Execution backend for --run (default cranelift; with --target=nvptx,
    /// the host code's, default llvm); for --emit=obj/asm/llvm the default
    /// is LLVM.
    #[arg(long, value_enum)]
    backend: Option<Backend>,
    /// The device of `--run --target=nvptx`: `cuda` (the GPU) or `sim`
    /// (kernels in the gpu-level interpreter, on any machine).
    #[arg(long, value_enum, default_value = "cuda")]
    device: Device,
    /// Run the function N times after one warm-up and print `median_ns=` on stderr.
    #[arg(long, value_name = "N")]
    bench: Option<usize>,
    /// With `--bench` and `--target=nvptx` on compiled host code: keep the
    /// inputs on the device between the calls, as GPU benchmarks do (each
    /// argument's bytes go to the device once; stderr then also gets
    /// `resident_copies=` and `resident_hits=`).
    #[arg(long)]
    resident: bool,
    /// Threads for the native backends' parallel loops (`scf.forall`, from
    /// `lower`'s parallel decomposition); default: every core. Results do
    /// not depend on N.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: Option<u32>,
    /// Optimization level of the implicit lowering before native code and
    /// kernels are generated from IR that is still above the `arr` level:
    /// `-O0` runs `lower` alone, any other level `fuse,lower` (default).
    #[arg(short = 'O', value_name = "LEVEL", default_value_t = 2, value_parser = clap::value_parser!(u8).range(0..=3))]
    opt_level: u8,
    /// Interpreter fuel: a run that executes more than N ops stops with a
    /// located error (default 2.5e8, about 15 s).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_steps: Option<u64>,
    /// Wall-clock bound on `--run`, in seconds, on every backend: a run
    /// (compiling and `--bench` repeats included) still going after it ends with a located
    /// error at the function and exit 1. The bound is a watchdog thread, so
    /// compiled code pays nothing for it. Without it, the interpreter still
    /// stops at `--max-steps`; native code runs until it ends.
    #[arg(long, value_name = "SECONDS", value_parser = parse_timeout)]
    timeout: Option<std::time::Duration>,
    /// Print a timing report (parse, each pass, output) to stderr.
    #[arg(long, alias = "mlir-timing")]
    timing: bool,
    /// Print optimization remarks of these passes to stderr (as LLVM's
    /// `-Rpass-missed`): `fuse` (each producer loop not fused into a
    /// consumer, and why), `lower` (each top-level loop that `lower` leaves
    /// on one thread, and why; each field of a computed vector of records
    /// that survives split-structs, and its reader), `gpu` (each loop left on the host by
    /// `lower{target=gpu}`, and why).
    #[arg(long, value_name = "PASSES", value_delimiter = ',', value_parser = ["fuse", "lower", "gpu"])]
    remarks: Vec<String>,
    /// Floating-point contraction (clang's flag): `off` rounds every
    /// operation, as the interpreter does; `fast` lets native code and PTX
    /// compute a float multiply feeding an add as one fused multiply-add
    /// (every float op is marked `fastmath<contract>`).
    #[arg(long, value_enum, default_value = "off", value_name = "off|fast")]
    fp_contract: FpContract,
    /// Debug mode of the native backends and PTX: check every index, ignoring
    /// the passes' `in_bounds` proofs (tells a wrong proof from a wrong translation).
    #[arg(long)]
    keep_all_checks: bool,
    /// Interpreter only: a fault of a pure op yields poison instead, and the
    /// run faults (with the first such fault) only where poison reaches a
    /// result, or an effect that needs its value. A run that ends shows that
    /// a pass may delete every op that faulted (docs/cli.md, "--defer-faults"); see `ir::poison`.
    #[arg(long)]
    defer_faults: bool,
    /// Print each pass's statistics to stderr.
    #[arg(long)]
    pass_statistics: bool,
    /// List the registered passes and exit.
    #[arg(long)]
    list_passes: bool,
    /// Split the input at `// -----` lines and process each part separately.
    #[arg(long)]
    split_input_file: bool,
    /// Check diagnostics against `// expected-error {{...}}` comments.
    #[arg(long)]
    verify_diagnostics: bool,
}

/// `--timeout`'s value: a positive number of seconds (`2`, `0.5`).
fn parse_timeout(s: &str) -> Result<std::time::Duration, String> {
    match s.parse::<f64>() {
        Ok(x) if x > 0.0 && x.is_finite() && x < 1e9 => Ok(std::time::Duration::from_secs_f64(x)),
        _ => Err(format!("'{s}' is not a positive number of seconds")),
    }
}

/// A failure: diagnostics (exit 1) or a command-line problem (exit 2).
enum Failure {
    Diags(Vec<Diagnostic>),
    Usage(String),
}

impl From<Diagnostic> for Failure {
    fn from(d: Diagnostic) -> Self {
        Failure::Diags(vec![d])
    }
}

/// Makes a write to a closed pipe (stdout or stderr: `l0-opt ... | head -1`)
/// end the process at once and quietly, killed by `SIGPIPE` (status 141 in
/// a shell), as `cat` and `grep` do. Rust ignores `SIGPIPE`, so the write
/// would fail with `EPIPE` instead and `println!`/`eprintln!` would panic
/// (issue 43). For a tool's `main`; a host that embeds [`opt_main`] keeps
/// its own disposition.
#[cfg(unix)]
pub fn quiet_on_closed_pipe() {
    // SAFETY: resets one signal's disposition to the default; no handler runs.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Runs the whole `-opt` command line (docs/cli.md) with `tool`'s dialects
/// and passes, and returns the exit status: 0 success, 1 diagnostics, 2 a
/// bad command line. A panic (a bug) is reported and aborts the process.
/// Call it once per process, from `main`.
pub fn opt_main(tool: Tool) -> ExitCode {
    let _ = TOOL.set(tool);
    let command = <Cli as clap::CommandFactory>::command()
        .name(tool.name)
        .bin_name(tool.name);
    let cli = match command
        .try_get_matches()
        .and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m))
    {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    // Deeply nested IR recurses in the builder, printer and interpreter: run on a big stack.
    let h = std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(move || real_main(cli))
        .expect("cannot spawn the main thread");
    match h.join() {
        Ok(code) => ExitCode::from(code),
        Err(_) => {
            // A bug, not a user error: end like a crash (as MLIR tools
            // abort), so that `not l0-opt ...` in a test does not pass.
            eprintln!(
                "{}: internal error (a bug; the panic is above): please report it with the input and the command line",
                me()
            );
            std::process::abort()
        }
    }
}

/// Reads the input (a large file through a memory map, see
/// [`SourceText`]): its text, or the valid UTF-8 prefix's length and the
/// bytes read.
#[allow(clippy::type_complexity)]
fn read_input(path: &str) -> Result<Result<SourceText, (usize, Vec<u8>)>, String> {
    if path == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(|e| format!("cannot read standard input: {e}"))?;
        Ok(SourceText::from_bytes(buf))
    } else {
        std::fs::File::open(path)
            .and_then(SourceText::read_file)
            .map_err(|e| format!("cannot read '{path}': {e}"))
    }
}

fn real_main(cli: Cli) -> u8 {
    let pass_registry = tool().pass_registry(&tool().registry());
    if let Some(n) = cli.threads {
        codegen::runtime::set_threads(n as usize);
    }
    if let Some(n) = cli.max_steps {
        ir::interp::set_max_steps(n);
    }
    if cli.list_passes {
        let _ = std::io::stdout()
            .lock()
            .write_all(pass_registry.describe().as_bytes());
        return 0;
    }
    let Some(input) = cli.input.clone() else {
        eprintln!(
            "{}: error: no input file (use '-' for standard input)",
            me()
        );
        return 2;
    };
    let text = match read_input(&input) {
        Ok(Ok(t)) => t,
        Ok(Err((off, bytes))) => {
            let valid = String::from_utf8_lossy(&bytes[..off]).into_owned();
            let src = Source {
                name: input.clone(),
                text: valid.into(),
            };
            let d = Diagnostic::error(ir::Loc(off as u32), "invalid UTF-8 in input");
            eprint!("{}", render(Some(&src), &d));
            return 1;
        }
        Err(e) => {
            eprintln!("{}: error: {e}", me());
            return 2;
        }
    };
    // For a large input, the pages that loading libLLVM made resident
    // (about 40 MiB) go back until the run uses LLVM. Not for small ones: the
    // kernel may drop those pages from its cache too, and the next short
    // run would read them again from disk.
    if text.len() >= ir::source::MAP_THRESHOLD {
        resident::release_llvm_pages();
    }
    let mut stages = cli.pass.clone();
    if let Some(p) = &cli.pass_pipeline {
        match mlir_compat::pipeline(p) {
            Ok(s) if s.is_empty() => {}
            Ok(s) => stages.push(s),
            Err(e) => {
                eprintln!("{}: error: --pass-pipeline: {e}", me());
                return 2;
            }
        }
    }
    let pipeline = stages.join(",");
    for p in cli.print_ir_before.iter().chain(&cli.print_ir_after) {
        if pass_registry.get(p).is_none() {
            eprintln!(
                "{}: error: --print-ir-before/after: unknown pass '{p}' (see --list-passes)",
                me()
            );
            return 2;
        }
    }
    if let Err(e) = pass_registry.parse_pipeline(&pipeline) {
        eprintln!("{}: error: {e}", me());
        return 2;
    }
    let chunks: Vec<SourceText> = if cli.split_input_file {
        split_chunks(&text)
            .into_iter()
            .map(SourceText::from)
            .collect()
    } else {
        vec![text]
    };
    // The usual case (one part, IR out) is printed straight into the output.
    let stream = !cli.split_input_file
        && !cli.verify_diagnostics
        && cli.run.is_none()
        && cli.emit == Emit::Ir;
    if stream {
        let source = Rc::new(Source {
            name: input.clone(),
            text: chunks
                .into_iter()
                .next()
                .unwrap_or_else(|| String::new().into()),
        });
        let mut out = output::StreamedOutput::new(cli.output.as_deref());
        let res = process(&cli, &pipeline, &source, Some(&mut out));
        if res.is_err() {
            out.abandon();
        } else if let Err(msg) = out.commit() {
            eprintln!("{}: error: {msg}", me());
            return 2;
        }
        return match res {
            Ok(_) => 0,
            Err(Failure::Usage(msg)) => {
                eprintln!("{}: error: {msg}", me());
                2
            }
            Err(Failure::Diags(diags)) => {
                for d in &diags {
                    eprint!("{}", render(Some(&source), d));
                }
                1
            }
        };
    }
    let mut outputs = Vec::new();
    let mut ok = true;
    for chunk in chunks {
        let source = Rc::new(Source {
            name: input.clone(),
            text: chunk,
        });
        match process(&cli, &pipeline, &source, None) {
            Ok(out) => outputs.push(out),
            Err(Failure::Usage(msg)) => {
                eprintln!("{}: error: {msg}", me());
                return 2;
            }
            Err(Failure::Diags(diags)) => {
                if cli.verify_diagnostics {
                    let problems = expect::check(&source, &diags);
                    for p in &problems {
                        eprintln!("{p}");
                    }
                    ok &= problems.is_empty();
                    continue;
                }
                // As mlir-opt: every part is processed and reports its
                // diagnostics; the run fails at the end.
                for d in &diags {
                    eprint!("{}", render(Some(&source), d));
                }
                ok = false;
                continue;
            }
        }
        if cli.verify_diagnostics {
            let problems = expect::check(&source, &[]);
            for p in &problems {
                eprintln!("{p}");
            }
            ok &= problems.is_empty();
        }
    }
    // One part (the usual case) is written as it is: joining would copy it.
    let joined = if outputs.len() == 1 {
        outputs.pop().unwrap_or_default()
    } else {
        outputs.join("// -----\n")
    };
    // A failed part leaves no output file behind (the parts that worked go
    // to standard output, as mlir-opt prints them).
    let to_file = cli.run.is_none() && cli.output.as_deref().is_some_and(|p| p != Path::new("-"));
    if !joined.is_empty() && (ok || !to_file) {
        if let Err(e) = write_output(
            cli.output.as_deref().filter(|_| cli.run.is_none()),
            joined.as_bytes(),
        ) {
            // Like an unreadable input: a file named on the command line.
            eprintln!("{}: error: {e}", me());
            return 2;
        }
    }
    if ok {
        0
    } else {
        1
    }
}

/// Splits at `// -----` lines; each part keeps its original line numbers by
/// blanking the lines of the other parts.
fn split_chunks(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut chunks = Vec::new();
    let mut start = 0;
    for (i, l) in lines.iter().enumerate() {
        if l.trim_end() == "// -----" {
            chunks.push((start, i));
            start = i + 1;
        }
    }
    chunks.push((start, lines.len()));
    chunks
        .into_iter()
        .map(|(s, e)| {
            let mut out = "\n".repeat(s);
            for l in &lines[s..e] {
                out.push_str(l);
            }
            out
        })
        .collect()
}

/// Writes `data` to `path` (atomically, via a temporary file) or stdout.
fn write_output(path: Option<&Path>, data: &[u8]) -> Result<(), String> {
    match path {
        None | Some(_) if path.is_none_or(|p| p == Path::new("-")) => {
            let mut out = std::io::stdout().lock();
            match out.write_all(data).and_then(|_| out.flush()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    Err(format!("cannot write output: {e}"))
                }
                _ => Ok(()),
            }
        }
        Some(p) => {
            output::write_file(p, data).map_err(|e| format!("cannot write '{}': {e}", p.display()))
        }
        None => unreachable!(),
    }
}

/// Parses, verifies, runs the pipeline and emits. The IR is printed into
/// `sink` when one is given and IR is emitted (the result is then empty).
fn process(
    cli: &Cli,
    pipeline: &str,
    source: &Rc<Source>,
    sink: Option<&mut output::StreamedOutput>,
) -> Result<String, Failure> {
    codegen::proofs::set_keep_all_checks(cli.keep_all_checks);
    ir::poison::set_defer_faults(cli.defer_faults);
    ir::remarks::enable(&cli.remarks);
    let res = process_inner(cli, pipeline, source, sink);
    for r in ir::remarks::take() {
        eprint!("{}", render(Some(source), &r.to_diagnostic()));
    }
    res
}

fn process_inner(
    cli: &Cli,
    pipeline: &str,
    source: &Rc<Source>,
    sink: Option<&mut output::StreamedOutput>,
) -> Result<String, Failure> {
    let t0 = Instant::now();
    let mut registry = Registry::new();
    (tool().dialects)(&mut registry);
    if cli.allow_unregistered_dialect {
        unregistered::register_opaque_ops(&source.text, &mut registry);
    }
    let mut ctx: Context = ir::build::parse(source.clone(), Rc::new(registry))?;
    ir::verifier::verify_parsed(&ctx).map_err(Failure::Diags)?;
    let parse_time = t0.elapsed();
    let parse_rss = if cli.timing { peak_rss_kib() } else { None };

    let mut registry = tool().pass_registry(ctx.registry());
    registry.codegen = cli.codegen();
    let passes = registry.parse_pipeline(pipeline).map_err(Failure::Usage)?;
    if cli.fp_contract == FpContract::Fast {
        passes::fp_contract::mark(&mut ctx);
    }
    let mut pm = PassManager::new(passes);
    if cli.verify_each {
        pm.instrument(Box::new(VerifyEach));
    }
    let select = PrintIrOptions {
        before: cli.print_ir_before.clone(),
        after: cli.print_ir_after.clone(),
        after_all: cli.print_ir_after_all,
        after_change: cli.print_ir_after_change,
        after_failure: cli.print_ir_after_failure,
    };
    if !select.before.is_empty()
        || !select.after.is_empty()
        || select.after_all
        || select.after_change
        || select.after_failure
    {
        pm.instrument(Box::new(PrintIr::new(select, cli.print_options())));
    }
    let timing = Rc::new(std::cell::RefCell::new(Timing::default()));
    pm.instrument(Box::new(SharedTiming(timing.clone())));
    if cli.resident
        && (cli.bench.is_none() || cli.target != Target::Nvptx || cli.backend() == Backend::Interp)
    {
        return Err(Failure::Usage(
            "--resident needs --bench, --target=nvptx and compiled host code (--backend=llvm or cranelift)".into(),
        ));
    }
    if cli.check_each {
        let Some(func) = &cli.run else {
            return Err(Failure::Usage("--check-each needs --run=FUNC".into()));
        };
        let args = run::parse_args(cli, &ctx, func)?;
        pm.instrument(Box::new(check_each::CheckEach::new(&ctx, func, args)));
    }
    let repro = cli.crash_reproducer.as_ref().map(|path| {
        let r = reproducer::Reproducer::new(path.clone(), pipeline);
        let parts = r.parts();
        pm.instrument(Box::new(r));
        parts
    });
    // The signature of the function to run as written: memref arguments
    // and results are given and printed as memrefs after `lower` too.
    let entry = cli
        .run
        .as_ref()
        .and_then(|f| memref_args::MemRefEntry::of(run::signature(&ctx, f)));
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pm.run(&mut ctx)));
    match ran {
        Ok(Ok(())) => {}
        Ok(Err(d)) => {
            let written = repro
                .as_ref()
                .and_then(|(_, _, st)| st.borrow().written.clone());
            let d = match written {
                Some((path, stage)) => {
                    d.with_note(ir::Loc::UNKNOWN, reproducer::note(&path, &stage))
                }
                None if cli.crash_reproducer.is_none() => d,
                None => d.with_note(ir::Loc::UNKNOWN, "no reproducer could be written"),
            };
            return Err(d.into());
        }
        Err(panic) => {
            // An internal error: name the reproducer, then crash (main aborts).
            if let Some((path, stages, st)) = &repro {
                if let Some(note) = reproducer::Reproducer::write(path, stages, st) {
                    eprintln!("{}: {note}", me());
                }
            }
            std::panic::resume_unwind(panic);
        }
    }

    if cli.pass_statistics {
        for (name, stats) in &pm.stats {
            eprintln!("{name}:");
            for (k, v) in &stats.counters {
                eprintln!("  {k} = {v}");
            }
        }
    }

    if cli.fp_contract == FpContract::Fast {
        // Ops the passes made are marked too.
        passes::fp_contract::mark(&mut ctx);
    }
    let passes_rss = if cli.timing { peak_rss_kib() } else { None };
    let t1 = Instant::now();
    let out = if let Some(func) = &cli.run {
        run::run(cli, &mut ctx, func, entry.as_ref())?;
        String::new()
    } else {
        // Native code is generated from the arr + scf level, as for --run.
        if cli.target == Target::Nvptx || cli.emit == Emit::Ptx {
            // Kernels are generated from the gpu level.
            run::lower_for_gpu(&mut ctx, cli.lowering())?;
        } else if matches!(cli.emit, Emit::Obj | Emit::Asm | Emit::Llvm) {
            // `--emit=asm --backend=cranelift` lists what `--run` compiles.
            let backend = if matches!(cli.emit, Emit::Obj | Emit::Asm)
                && cli.backend == Some(Backend::Cranelift)
            {
                Backend::Cranelift
            } else {
                Backend::Llvm
            };
            run::lower_for_native(&mut ctx, backend, cli.lowering())?;
        }
        match sink {
            Some(sink) if cli.emit == Emit::Ir => {
                ir::printer::print_module_to(&ctx, cli.print_options(), sink)
                    .map_err(|e| Failure::Usage(sink.describe(&e)))?;
                String::new()
            }
            _ => emit(cli, &ctx)?,
        }
    };
    let out_time = t1.elapsed();
    if cli.timing {
        report_timing(parse_time, &timing.borrow(), out_time, cli.run.is_some());
        report_memory(&[("parse + verify", parse_rss), ("passes", passes_rss)]);
    }
    if !cli.split_input_file {
        // The process ends right after the output is written: freeing a
        // large IR value by value (10^6 ops: about 0.2 s) would only delay
        // the exit, so the operating system takes the memory back at once.
        std::mem::forget(ctx);
    }
    Ok(out)
}

struct SharedTiming(Rc<std::cell::RefCell<Timing>>);

impl ir::pass::Instrumentation for SharedTiming {
    fn after_pass(
        &mut self,
        pass: &str,
        ctx: &Context,
        stats: &ir::pass::PassStats,
        elapsed: Duration,
    ) -> Result<(), Diagnostic> {
        self.0.borrow_mut().after_pass(pass, ctx, stats, elapsed)
    }
}

fn report_timing(parse: Duration, t: &Timing, out: Duration, ran: bool) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut total = parse + out;
    eprintln!("===- L0 execution time report -===");
    eprintln!("  {:>10.3} ms  parse + verify", ms(parse));
    for (name, d, _) in &t.records {
        total += *d;
        eprintln!(
            "  {:>10.3} ms  pass '{name}' (+ instrumentation excluded)",
            ms(*d)
        );
    }
    eprintln!(
        "  {:>10.3} ms  {}",
        ms(out),
        if ran { "run" } else { "output" }
    );
    eprintln!("  {:>10.3} ms  total", ms(total));
}

/// The timing report's memory lines: the peak resident set size after each
/// phase in `phases` (as far as it could be read) and now.
fn report_memory(phases: &[(&str, Option<u64>)]) {
    for (name, kib) in phases {
        if let Some(kib) = kib {
            eprintln!(
                "  {:>10.1} MiB peak resident memory after {name}",
                *kib as f64 / 1024.0
            );
        }
    }
    if let Some(kib) = peak_rss_kib() {
        eprintln!("  {:>10.1} MiB peak resident memory", kib as f64 / 1024.0);
    }
}

/// The process's peak resident set size in KiB (`VmHWM` of
/// `/proc/self/status`; `None` where that file does not exist).
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

impl Cli {
    /// How `--print-generic` and `--print-mlir-names` ask the IR to be printed.
    fn print_options(&self) -> PrintOptions {
        PrintOptions {
            generic: self.print_generic,
            l0_names: self.print_l0_names,
            debuginfo: self.mlir_print_debuginfo,
        }
    }
}

fn emit(cli: &Cli, ctx: &Context) -> Result<String, Failure> {
    match cli.emit {
        Emit::Ir => Ok(print_module(ctx, cli.print_options())),
        Emit::Dot => Ok(ir::dot::to_dot(ctx)),
        Emit::Obj => {
            if cli.target != Target::Native {
                return Err(Failure::Usage(
                    "--emit=obj supports only --target=native".into(),
                ));
            }
            let Some(path) = &cli.output else {
                return Err(Failure::Usage("--emit=obj needs -o FILE.o".into()));
            };
            // Host code of the gpu level calls the GPU runtime, which lives in
            // l0-opt, not in the C runtime that object files link.
            let gpu_op = ctx
                .iter_block(ctx.top)
                .flat_map(|f| ctx.walk_nested(f))
                .find(|&op| ctx.op_name(op).starts_with("gpu."));
            if let Some(op) = gpu_op {
                return Err(Failure::Diags(vec![ir::Diagnostic::at_op(
                    ctx,
                    op,
                    format!(
                        "'{}': the gpu level does not compile to an object file (its host code needs l0-opt's GPU runtime); run it with --run",
                        ctx.op_name(op)
                    ),
                )]));
            }
            let bytes = match cli.backend {
                Some(Backend::Cranelift) => codegen::emit_object(ctx)?,
                _ => codegen::llvm::emit_object(ctx)?,
            };
            write_output(Some(path), &bytes).map_err(Failure::Usage)?;
            Ok(String::new())
        }
        Emit::Llvm | Emit::Asm if cli.target == Target::Native => {
            if cli.backend == Some(Backend::Cranelift) {
                if cli.emit == Emit::Asm {
                    return Ok(codegen::emit_asm(ctx)?);
                }
                return Err(Failure::Usage(
                    "--emit=llvm is produced by the LLVM backend, not --backend=cranelift".into(),
                ));
            }
            Ok(if cli.emit == Emit::Llvm {
                codegen::llvm::emit_llvm(ctx)?
            } else {
                codegen::llvm::emit_asm(ctx)?
            })
        }
        Emit::Llvm => Ok(codegen::llvm::ptx::emit_kernel_llvm(ctx)?),
        Emit::Asm | Emit::Ptx => Ok(codegen::llvm::ptx::emit_ptx(ctx)?),
    }
}
