//! A deterministic mutation fuzzer for the whole front end and the cheap passes.
//!
//! Every `.ir` file under `tests/ir/` and `examples/` is a seed. Each seed is mutated
//! many times (byte-range deletion, duplication and swapping, insertion of tokens from an
//! IR-flavoured dictionary, deep nesting, non-UTF-8 bytes, truncation; and, so that many
//! mutants still parse, whole-line deletion, copying and swapping and whole-word
//! replacement; one to four stacked per mutant) and every mutant is pushed through:
//!
//! 1. `ir::build::parse_source` (non-UTF-8 mutants go in through `from_utf8_lossy`, as the
//!    bytes would reach any `&str` API); a syntax error is fine, but rendering it must work;
//! 2. `ir::verifier::verify` (errors are fine, rendering them must work);
//! 3. for mutants that verify: `canonicalize,cse,dce`, and separately `fuse,lower`, through a
//!    [`PassManager`] with verify-each, after which the module must verify again (a pass may reject the input with a diagnostic, it may
//!    not produce invalid IR);
//! 4. `print_module` (custom and generic form), and the printed text must parse and verify
//!    again, and print to the same text (print -> parse is stable);
//! 5. every function whose parameters are scalars, vectors or matrices: the interpreter on
//!    small generated arguments, after each pipeline, under a fuel and size guard (see [`guard`]) so that mutated loop bounds cannot hang or exhaust memory.
//!
//! No step may panic. Each mutant runs under `catch_unwind`; the first panic (or broken
//! invariant) fails the test with the mutant's text, minimised by greedy chunk deletion.
//! A watchdog fails the test if one mutant runs longer than [`PER_MUTANT_LIMIT`] (a hang).
//!
//! Knobs (environment): `FUZZ_SEED` (default 0x10), `FUZZ_MUTANTS` mutants per seed file
//! (default 200), `FUZZ_FILTER=substr` to fuzz only the seed files whose path contains it.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ir::diag::render;
use ir::interp::{MatValue, RtValue};
use ir::pass::{PassManager, VerifyEach};
use ir::printer::{print_module, PrintOptions};
use ir::{Attribute, Context, Type};
use lit_tests::runlines::collect_ir_files;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A single mutant taking longer than this is reported as a hang.
const PER_MUTANT_LIMIT: Duration = Duration::from_secs(20);
/// Stack of the fuzzing thread (deep nesting recurses in the parser, builder and printer).
const STACK: usize = 256 << 20;
/// The pipelines run (each on a fresh parse) on mutants that verify.
const PIPELINES: &[&str] = &["canonicalize,cse,dce", "fuse,lower"];

/// Tokens inserted by mutations: IR punctuation, keywords, types, edge-case literals.
#[rustfmt::skip]
const DICT: &[&str] = &[
    "%", "%0", "%x", "%a#1", "%a:2", "\"", "(", ")", "{", "}", "[", "]", "<", ">", ",", "=", ":",
    "->", "^bb0", "^bb1(%z: f64):", "@main", "@f", "#", "#gen.reduce<add>", "#gen.collect",
    "#gen.bucket<", "#gen.scan<max>", "vec<", "mat<", "arr<", "!gen.collect<", "!gen.reduce<",
    "!gen.bucket<", "i1", "i32", "i64", "index", "f32", "f64", "vec<f64>", "vec<vec<i64>>",
    "mat<f64>", "0", "1", "-1", "2.5", "-0.0", "1e308", "1e999", "nan", "inf", "0x",
    "0x7FF8000000000000", "0xFFFFFFFFFFFFFFFFFFFF", "99999999999999999999", "-9223372036854775808",
    "9223372036854775807", "4294967296", ": i64", ": f64", ": index", "true", "false", "\"text\"",
    "\"\\", "\\", "//", "\n", " ", "\t", "module", "module {", "func.func", "func.func @g() {\n}",
    "\"func.return\"() : () -> ()", "func.return",
    "\"arith.constant\"() {value = 0 : index} : () -> index", "\"arith.divsi\"",
    "\"arith.constant\"", "\"vec.get\"", "\"vec.iota\"", "\"vec.map\"", "\"vec.yield\"",
    "\"gen.loop\"", "\"gen.emit\"", "\"gen.end\"", "\"scf.for\"", "\"scf.if\"", "\"scf.yield\"",
    "\"scf.while\"", "\"mat.from\"", "\"arr.alloc\"", "\"arr.store\"", "\"func.call\"",
    "\"unknown.op\"", "{value = 99999999999999999999 : i64}", "{predicate = \"bogus\"}",
    "{kind = #gen.reduce<mul>}", "{gens = []}", "({\n})", "({\n^bb0(%i: index):\n})",
    "() : () -> ()", ": (f64, f64) -> f64", "é", "\u{0}", "\u{FFFD}", "\u{1F600}",
];

/// A seed file and its bytes.
struct Seed {
    path: PathBuf,
    bytes: Vec<u8>,
}

fn seeds() -> Vec<Seed> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    let repo = root
        .parent()
        .expect("lit-tests sits at the repository root");
    collect_ir_files(&root.join("tests/ir"), &mut paths);
    collect_ir_files(&repo.join("examples"), &mut paths);
    paths.sort();
    let filter = std::env::var("FUZZ_FILTER").unwrap_or_default();
    paths
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(&filter))
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            Seed { path, bytes }
        })
        .collect()
}

fn env_num(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(s) => {
            let s = s.trim();
            let parsed = match s.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16),
                None => s.parse(),
            };
            parsed.unwrap_or_else(|_| panic!("{name}={s} is not a number"))
        }
        Err(_) => default,
    }
}

// ---------------------------------------------------------------------------------------
// Mutations

/// A random range `[a, b)` of `len` bytes, short ranges more likely.
fn range(rng: &mut StdRng, len: usize) -> (usize, usize) {
    if len == 0 {
        return (0, 0);
    }
    let a = rng.gen_range(0..len);
    let max = (len - a).min(if rng.gen_bool(0.8) { 16 } else { 400 });
    let b = a + rng.gen_range(1..=max);
    (a, b)
}

/// The byte ranges of the lines of `buf` (without their `\n`).
fn lines(buf: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, &b) in buf.iter().enumerate() {
        if b == b'\n' {
            out.push((start, i));
            start = i + 1;
        }
    }
    if start < buf.len() {
        out.push((start, buf.len()));
    }
    out
}

/// The byte ranges of the words of `buf`: value names, symbols, labels, identifiers and
/// numbers (`%x`, `@f`, `^bb0`, `arith.addf`, `-2.5`, `f64`).
fn words(buf: &[u8]) -> Vec<(usize, usize)> {
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b"_.$-#".contains(&b);
    let mut out = Vec::new();
    let mut i = 0;
    while i < buf.len() {
        if is_word(buf[i]) || b"%@^".contains(&buf[i]) {
            let start = i;
            i += 1;
            while i < buf.len() && is_word(buf[i]) {
                i += 1;
            }
            out.push((start, i));
        } else {
            i += 1;
        }
    }
    out
}

/// A structure-aware mutation: whole lines or whole words, so that many mutants still
/// parse and reach the verifier, the passes and the interpreter.
fn mutate_structured(rng: &mut StdRng, buf: &mut Vec<u8>) {
    let ls = lines(buf);
    let ws = words(buf);
    match rng.gen_range(0..6) {
        // Delete a line.
        0 if !ls.is_empty() => {
            let (a, b) = ls[rng.gen_range(0..ls.len())];
            buf.drain(a..(b + 1).min(buf.len()));
        }
        // Copy a line (with its newline) before another line.
        1 if !ls.is_empty() => {
            let (a, b) = ls[rng.gen_range(0..ls.len())];
            let (at, _) = ls[rng.gen_range(0..ls.len())];
            let mut line = buf[a..b].to_vec();
            line.push(b'\n');
            buf.splice(at..at, line);
        }
        // Swap two lines.
        2 if ls.len() >= 2 => {
            let i = rng.gen_range(0..ls.len());
            let j = rng.gen_range(0..ls.len());
            let (x, y) = (ls[i.min(j)], ls[i.max(j)]);
            if x != y {
                let first = buf[x.0..x.1].to_vec();
                let second = buf[y.0..y.1].to_vec();
                buf.splice(y.0..y.1, first);
                buf.splice(x.0..x.1, second);
            }
        }
        // Replace a word with another word of the file.
        3 | 4 if !ws.is_empty() => {
            let (a, b) = ws[rng.gen_range(0..ws.len())];
            let (c, d) = ws[rng.gen_range(0..ws.len())];
            let other = buf[c..d].to_vec();
            buf.splice(a..b, other);
        }
        // Replace a word with a dictionary token.
        _ if !ws.is_empty() => {
            let (a, b) = ws[rng.gen_range(0..ws.len())];
            buf.splice(a..b, DICT[rng.gen_range(0..DICT.len())].bytes());
        }
        _ => {}
    }
}

/// Applies one random mutation to `buf`.
fn mutate_once(rng: &mut StdRng, buf: &mut Vec<u8>) {
    let len = buf.len();
    if rng.gen_bool(0.5) {
        return mutate_structured(rng, buf);
    }
    match rng.gen_range(0..11) {
        // Delete a range.
        0 | 1 => {
            let (a, b) = range(rng, len);
            buf.drain(a..b);
        }
        // Duplicate a range in place.
        2 => {
            let (a, b) = range(rng, len);
            let chunk = buf[a..b].to_vec();
            buf.splice(b..b, chunk);
        }
        // Swap two ranges.
        3 => {
            let (a, b) = range(rng, len);
            let (c, d) = range(rng, len);
            if b <= c || d <= a {
                let ((a, b), (c, d)) = if b <= c {
                    ((a, b), (c, d))
                } else {
                    ((c, d), (a, b))
                };
                let first = buf[a..b].to_vec();
                let second = buf[c..d].to_vec();
                buf.splice(c..d, first);
                buf.splice(a..b, second);
            }
        }
        // Insert dictionary tokens (one, or a few in a row).
        4..=6 => {
            let at = rng.gen_range(0..=len);
            let n = if rng.gen_bool(0.8) {
                1
            } else {
                rng.gen_range(2..6)
            };
            let mut ins = Vec::new();
            for _ in 0..n {
                ins.extend_from_slice(DICT[rng.gen_range(0..DICT.len())].as_bytes());
            }
            buf.splice(at..at, ins);
        }
        // Deep nesting.
        7 => {
            let at = rng.gen_range(0..=len);
            let opener: &[u8] =
                [&b"("[..], b"{", b"[", b"vec<", b"({", b"#gen.bucket<"][rng.gen_range(0..6)];
            let depth = if rng.gen_bool(0.5) {
                rng.gen_range(10..200)
            } else {
                rng.gen_range(1000..20000)
            };
            buf.splice(at..at, opener.repeat(depth));
        }
        // Non-UTF-8 or arbitrary bytes.
        8 => {
            let at = rng.gen_range(0..=len);
            let b: u8 = [0xFF, 0xC3, 0x80, 0xE2, 0x00, 0xFE, rng.gen()][rng.gen_range(0..7)];
            buf.insert(at, b);
        }
        // Replace one byte with an IR-significant ASCII byte.
        9 => {
            if len > 0 {
                let at = rng.gen_range(0..len);
                buf[at] = b"%\"(){}[]<>:,=@^#-0123456789.xe \n"[rng.gen_range(0..32)];
            }
        }
        // Truncate.
        _ => {
            let at = rng.gen_range(0..=len);
            buf.truncate(at);
        }
    }
}

/// A mutant of `seed`: one to four stacked mutations.
fn mutant(rng: &mut StdRng, seed: &[u8]) -> Vec<u8> {
    let mut buf = seed.to_vec();
    let n = match rng.gen_range(0..10) {
        0..=5 => 1,
        6..=7 => 2,
        8 => 3,
        _ => 4,
    };
    for _ in 0..n {
        mutate_once(rng, &mut buf);
    }
    buf
}

// ---------------------------------------------------------------------------------------
// Checking one mutant

/// What happened to a mutant (for the summary).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Outcome {
    ParseError,
    VerifyError,
    PassError,
    Ok,
    Interpreted,
}

/// Shared state for the guarded interpreter registry (built once per fuzzing thread).
struct Tools {
    registry: Rc<ir::Registry>,
    guarded: Rc<ir::Registry>,
    passes: ir::pass::PassRegistry,
}

fn render_all(ctx_src: &ir::Source, diags: &[ir::Diagnostic]) {
    for d in diags {
        let text = render(Some(ctx_src), d);
        assert!(
            text.contains("error"),
            "rendered diagnostic without 'error': {text}"
        );
    }
}

/// Runs the whole chain on one mutant. `Err` is a broken invariant (a bug); a panic
/// propagates to the caller's `catch_unwind`.
fn check(tools: &Tools, bytes: &[u8]) -> Result<Outcome, String> {
    let text = String::from_utf8_lossy(bytes);
    let src = ir::Source {
        name: "fuzz.ir".into(),
        text: text.to_string().into(),
    };
    let mut ctx = match ir::build::parse_source("fuzz.ir", &text, tools.registry.clone()) {
        Ok(c) => c,
        Err(d) => {
            render_all(&src, &[d]);
            return Ok(Outcome::ParseError);
        }
    };
    let verified = ir::verifier::verify(&ctx);
    // The parser's shortcut (no dominance walk) must give the same answer.
    if ir::verifier::verify_parsed(&ctx) != verified {
        return Err(format!(
            "verify_parsed disagrees with verify: {:?}",
            verified.err()
        ));
    }
    if let Err(ds) = verified {
        render_all(&src, &ds);
        return Ok(Outcome::VerifyError);
    }
    // The verified input must round-trip before any pass touches it.
    roundtrip(tools, &ctx, "the parsed input")?;
    let mut outcome = Outcome::Ok;
    for (i, pipeline) in PIPELINES.iter().enumerate() {
        if i > 0 {
            ctx = ir::build::parse_source("fuzz.ir", &text, tools.registry.clone())
                .map_err(|d| format!("second parse failed: {}", d.message))?;
        }
        outcome = outcome.max(run_pipeline(tools, &mut ctx, &src, pipeline)?);
    }
    Ok(outcome)
}

/// Runs `pipeline` on `ctx` (verifying after each pass), then checks that the result
/// verifies, round-trips and interprets without panicking.
fn run_pipeline(
    tools: &Tools,
    ctx: &mut Context,
    src: &ir::Source,
    pipeline: &str,
) -> Result<Outcome, String> {
    let passes = tools
        .passes
        .parse_pipeline(pipeline)
        .map_err(|e| format!("pipeline: {e}"))?;
    let mut pm = PassManager::new(passes);
    pm.instrument(Box::new(VerifyEach));
    if let Err(d) = pm.run(ctx) {
        // A pass may reject a program; it must say so with a renderable diagnostic. But
        // VerifyEach failing means a pass produced invalid IR: that is a bug.
        let shown = render(Some(src), &d);
        if shown.contains("IR failed to verify after pass") {
            return Err(format!("{pipeline} produced invalid IR:\n{shown}"));
        }
        return Ok(Outcome::PassError);
    }
    if let Err(ds) = ir::verifier::verify(ctx) {
        let shown: String = ds.iter().map(|d| render(Some(src), d)).collect();
        return Err(format!("{pipeline} produced invalid IR:\n{shown}"));
    }
    let printed = roundtrip(tools, ctx, &format!("the IR after {pipeline}"))?;
    interpret(tools, &printed)
}

/// Prints `ctx` in both forms; each must parse, verify and print to the same text again.
/// Returns the custom-form text.
fn roundtrip(tools: &Tools, ctx: &Context, what: &str) -> Result<String, String> {
    let mut custom = String::new();
    for generic in [false, true] {
        let opts = PrintOptions {
            generic,
            ..Default::default()
        };
        let printed = print_module(ctx, opts);
        let form = if generic { "generic" } else { "custom" };
        let again = ir::build::parse_source("printed.ir", &printed, tools.registry.clone())
            .map_err(|d| {
                let src = ir::Source {
                    name: "printed.ir".into(),
                    text: printed.clone().into(),
                };
                format!(
                "{what}, printed in {form} form, does not parse:\n{}\n--- printed ---\n{printed}",
                render(Some(&src), &d)
            )
            })?;
        if let Err(ds) = ir::verifier::verify(&again) {
            let src = ir::Source {
                name: "printed.ir".into(),
                text: printed.clone().into(),
            };
            let shown: String = ds.iter().map(|d| render(Some(&src), d)).collect();
            return Err(format!(
                "{what}, printed in {form} form, does not verify:\n{shown}\n--- printed ---\n{printed}"
            ));
        }
        let reprinted = print_module(&again, opts);
        if reprinted != printed {
            return Err(format!(
                "{what}: print -> parse -> print is not stable ({form} form)\n--- first ---\n{printed}\n--- second ---\n{reprinted}"
            ));
        }
        if !generic {
            custom = printed;
        }
    }
    Ok(custom)
}

/// Interprets every function whose parameters can be generated (scalars, vectors and
/// matrices of scalars), with the guarded registry.
fn interpret(tools: &Tools, printed: &str) -> Result<Outcome, String> {
    let ctx = ir::build::parse_source("printed.ir", printed, tools.guarded.clone())
        .map_err(|d| format!("re-parse with the guarded registry failed: {}", d.message))?;
    let mut ran = false;
    for f in ctx.walk_all() {
        if ctx.op_name(f) != "func.func" {
            continue;
        }
        let Some(Attribute::Str(name)) = ctx.attr(f, "sym_name") else {
            continue;
        };
        let Some(Attribute::Type(Type::Function(ft))) = ctx.attr(f, "function_type") else {
            continue;
        };
        let Some(args) = ft.inputs.iter().map(arg_for).collect::<Option<Vec<_>>>() else {
            continue;
        };
        guard::reset();
        let mut it = ir::Interp::new(&ctx);
        // A run-time fault is a valid answer; only a panic (caught above) is a bug.
        let _ = it.call(name, &args, ir::Loc::UNKNOWN);
        ran = true;
    }
    Ok(if ran {
        Outcome::Interpreted
    } else {
        Outcome::Ok
    })
}

/// A small argument of type `ty`, if it can be made.
fn arg_for(ty: &Type) -> Option<RtValue> {
    Some(match ty {
        Type::I1 => RtValue::Bool(true),
        Type::I32 | Type::I64 | Type::Index => RtValue::Int(2),
        Type::F32 => RtValue::F32(1.5),
        Type::F64 => RtValue::F64(-2.5),
        Type::Vec(e) => {
            let x = arg_for(e)?;
            RtValue::Vec(Rc::new(vec![x; 3]))
        }
        Type::Mat(e) => {
            let x = arg_for(e)?;
            if matches!(x, RtValue::Vec(_) | RtValue::Mat(_)) {
                return None;
            }
            RtValue::Mat(Rc::new(MatValue {
                rows: 2,
                cols: 3,
                data: vec![x; 6],
            }))
        }
        _ => return None,
    })
}

/// Fuel and size limits for the interpreter, installed by wrapping every op's interpreter
/// function (the interpreter itself has no step limit). Every op execution costs one unit
/// plus the sizes of its container operands (and the requested size for allocating ops),
/// so a mutated loop bound makes the run stop with a [`ir::RunError`] instead of hanging.
mod guard {
    use std::cell::Cell;
    use std::sync::OnceLock;
    use std::time::{Duration, Instant};

    use ir::interp::{Interp, RtValue, RunError};
    use ir::spec::InterpFn;
    use ir::{OpId, Registry};
    use smallvec::SmallVec;

    /// Fuel per run.
    const FUEL: u64 = 2_000_000;
    /// Wall-clock limit per run.
    const TIME: Duration = Duration::from_secs(2);
    /// Largest size an allocating op may request.
    const MAX_SIZE: i64 = 1 << 16;

    static ORIGINAL: OnceLock<Vec<Option<InterpFn>>> = OnceLock::new();

    thread_local! {
        static LEFT: Cell<u64> = const { Cell::new(0) };
        static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
    }

    /// Refills the fuel for a new run.
    pub fn reset() {
        LEFT.with(|l| l.set(FUEL));
        DEADLINE.with(|d| d.set(Some(Instant::now() + TIME)));
    }

    fn size(v: &RtValue) -> u64 {
        match v {
            RtValue::Vec(x) => x.len() as u64,
            RtValue::Mat(m) => m.data.len() as u64,
            RtValue::Arr(a) => a.borrow().len() as u64,
            _ => 0,
        }
    }

    fn guarded(
        it: &mut Interp,
        op: OpId,
        args: &[RtValue],
    ) -> Result<SmallVec<[RtValue; 2]>, RunError> {
        let ctx = it.ctx;
        let name = ctx.op_name(op);
        let mut cost = 1 + args.iter().map(size).sum::<u64>();
        if matches!(name, "vec.iota" | "vec.fill" | "arr.alloc" | "mat.from") {
            for a in args {
                if let RtValue::Int(n) = a {
                    if n.unsigned_abs() > MAX_SIZE as u64 {
                        return Err(RunError::at(ctx, op, "fuzz guard: size too large"));
                    }
                    cost += n.unsigned_abs();
                }
            }
        }
        if name == "mat.mul" {
            if let (Some(RtValue::Mat(a)), Some(RtValue::Mat(b))) = (args.first(), args.get(1)) {
                cost += (a.rows as u64)
                    .saturating_mul(a.cols as u64)
                    .saturating_mul(b.cols as u64);
            }
        }
        let left = LEFT.with(|l| l.get());
        if cost > left {
            return Err(RunError::at(ctx, op, "fuzz guard: out of fuel"));
        }
        LEFT.with(|l| l.set(left - cost));
        if left % 1024 < cost.min(1024)
            && DEADLINE
                .with(|d| d.get())
                .is_some_and(|d| Instant::now() > d)
        {
            return Err(RunError::at(ctx, op, "fuzz guard: out of time"));
        }
        let kind = ctx.op(op).kind;
        let f = ORIGINAL
            .get()
            .and_then(|o| o[kind.0 as usize])
            .expect("guarded op without semantics");
        f(it, op, args)
    }

    /// Wraps every interpreter function of `r` (built by `dialects::register_all`, so op
    /// kinds agree across threads).
    pub fn install(r: &mut Registry) {
        let orig: Vec<Option<InterpFn>> = r.specs().iter().map(|s| s.interpret).collect();
        let _ = ORIGINAL.set(orig.clone());
        assert!(
            ORIGINAL.get().is_some_and(|o| o.len() == orig.len()),
            "registries built differently"
        );
        let names: Vec<&'static str> = r.specs().iter().map(|s| s.name).collect();
        for n in names {
            let spec = r.spec_mut(n).expect("registered");
            if spec.interpret.is_some() {
                spec.interpret = Some(guarded);
            }
        }
    }
}

/// The dialect registry with the interpreter guard installed: built by the
/// same registration function as the tool's (`dialects::register_all`), so a
/// new dialect needs no second list here.
fn guarded_registry() -> Rc<ir::Registry> {
    let mut r = ir::Registry::new();
    dialects::register_all(&mut r);
    guard::install(&mut r);
    Rc::new(r)
}

// ---------------------------------------------------------------------------------------
// Driver

/// A failure: the mutant (as bytes) and what went wrong.
struct Found {
    seed: PathBuf,
    index: u64,
    bytes: Vec<u8>,
    what: String,
}

fn panic_message(e: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = e.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = e.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".into()
    }
}

/// Where the last panic happened (`file:line:col`), recorded by the panic hook.
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// `Some(description)` when `bytes` panics or breaks an invariant.
fn fails(tools: &Tools, bytes: &[u8]) -> Option<String> {
    match catch_unwind(AssertUnwindSafe(|| check(tools, bytes))) {
        Ok(Ok(_)) => None,
        Ok(Err(what)) => Some(what),
        Err(p) => Some(describe_panic(&*p)),
    }
}

fn describe_panic(p: &(dyn std::any::Any + Send)) -> String {
    let at = LAST_PANIC.lock().unwrap().clone().unwrap_or_default();
    format!("panic at {at}\n{}", panic_message(p))
}

/// What must stay the same while minimising: the panic's location, or the first line of
/// the broken invariant without its numbers (offsets and value names change as we cut).
fn failure_key(what: &str) -> String {
    let first = what.lines().next().unwrap_or("");
    first.chars().filter(|c| !c.is_ascii_digit()).collect()
}

/// Greedy minimisation: delete chunks (halving their size) while the input still fails
/// the same way ([`failure_key`]). Bounded, so it stays cheap.
fn minimise(tools: &Tools, bytes: &[u8], what: &str) -> Vec<u8> {
    let want = failure_key(what);
    let mut cur = bytes.to_vec();
    let mut chunk = cur.len().div_ceil(2).max(1);
    let mut budget = 5000;
    let start = Instant::now();
    while budget > 0 && start.elapsed() < Duration::from_secs(20) {
        let mut i = 0;
        let mut progressed = false;
        while i < cur.len() && budget > 0 {
            budget -= 1;
            let end = (i + chunk).min(cur.len());
            let mut cand = cur[..i].to_vec();
            cand.extend_from_slice(&cur[end..]);
            if fails(tools, &cand).is_some_and(|w| failure_key(&w) == want) {
                cur = cand;
                progressed = true;
            } else {
                i += chunk;
            }
        }
        if !progressed {
            if chunk == 1 {
                break;
            }
            chunk /= 2;
        }
    }
    cur
}

/// Progress shared with the watchdog: (seed, mutant index, mutant bytes, start time).
type Current = Arc<Mutex<Option<(PathBuf, u64, Vec<u8>, Instant)>>>;

/// Runs every mutant; returns the outcome counts or the first failure.
fn fuzz_all(current: Current) -> Result<Vec<(Outcome, usize)>, Box<Found>> {
    let tools = Tools {
        registry: dialects::registry(),
        guarded: guarded_registry(),
        passes: passes::registry(),
    };
    let seed_value = env_num("FUZZ_SEED", 0x10);
    let per_seed = env_num("FUZZ_MUTANTS", 200);
    let mut counts = std::collections::BTreeMap::<Outcome, usize>::new();
    for (si, seed) in seeds().iter().enumerate() {
        // One stream per file, so adding a seed file does not change the others' mutants.
        let mut rng =
            StdRng::seed_from_u64(seed_value ^ ((si as u64 + 1) << 32) ^ seed.bytes.len() as u64);
        // The unmutated seed itself first.
        for index in 0..=per_seed {
            let bytes = if index == 0 {
                seed.bytes.clone()
            } else {
                mutant(&mut rng, &seed.bytes)
            };
            *current.lock().unwrap() =
                Some((seed.path.clone(), index, bytes.clone(), Instant::now()));
            match catch_unwind(AssertUnwindSafe(|| check(&tools, &bytes))) {
                Ok(Ok(o)) => *counts.entry(o).or_default() += 1,
                Ok(Err(what)) => return Err(Box::new(minimised(&tools, seed, index, bytes, what))),
                Err(p) => {
                    let what = describe_panic(&*p);
                    return Err(Box::new(minimised(&tools, seed, index, bytes, what)));
                }
            }
        }
    }
    *current.lock().unwrap() = None;
    Ok(counts.into_iter().collect())
}

fn minimised(tools: &Tools, seed: &Seed, index: u64, bytes: Vec<u8>, what: String) -> Found {
    let small = minimise(tools, &bytes, &what);
    let what = fails(tools, &small).unwrap_or(what);
    Found {
        seed: seed.path.clone(),
        index,
        bytes: small,
        what,
    }
}

#[test]
fn mutants_never_panic() {
    // Panics are expected to be caught per mutant: keep the default hook from flooding the
    // output, but record where each happened.
    std::panic::set_hook(Box::new(|info| {
        let at = info.location().map(|l| l.to_string()).unwrap_or_default();
        *LAST_PANIC.lock().unwrap() = Some(at);
    }));

    let current: Current = Arc::new(Mutex::new(None));
    let cur2 = current.clone();
    let (tx, rx) = mpsc::channel();
    let started = Instant::now();
    let worker = std::thread::Builder::new()
        .name("fuzz".into())
        .stack_size(STACK)
        .spawn(move || {
            let _ = tx.send(fuzz_all(cur2));
        })
        .expect("spawn fuzz thread");

    let result = loop {
        match rx.recv_timeout(Duration::from_secs(1)) {
            Ok(r) => break r,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // A panic outside a mutant (e.g. while setting up): the hook above
                // kept quiet, so report its message and place here.
                let _ = std::panic::take_hook();
                let payload = worker.join().err();
                let msg = payload
                    .as_ref()
                    .and_then(|p| {
                        p.downcast_ref::<String>()
                            .cloned()
                            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    })
                    .unwrap_or_default();
                let at = LAST_PANIC.lock().unwrap().clone().unwrap_or_default();
                panic!("the fuzzing thread died: {msg} (at {at})")
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Some((seed, index, bytes, t)) = current.lock().unwrap().as_ref() {
                    if t.elapsed() > PER_MUTANT_LIMIT {
                        panic!(
                            "mutant #{index} of {} runs longer than {PER_MUTANT_LIMIT:?} (hang?):\n{}",
                            seed.display(),
                            String::from_utf8_lossy(bytes)
                        );
                    }
                }
            }
        }
    };
    let _ = std::panic::take_hook();
    match result {
        Ok(counts) => {
            let total: usize = counts.iter().map(|(_, n)| n).sum();
            eprintln!(
                "fuzz: {total} inputs in {:.1?}: {counts:?}",
                started.elapsed()
            );
        }
        Err(f) => {
            panic!(
                "fuzz failure on mutant #{} of {}:\n{}\n--- minimised input ({} bytes, {:?}) ---\n{}\n---",
                f.index,
                f.seed.display(),
                f.what,
                f.bytes.len(),
                if std::str::from_utf8(&f.bytes).is_ok() { "UTF-8" } else { "not UTF-8" },
                String::from_utf8_lossy(&f.bytes)
            );
        }
    }
}
