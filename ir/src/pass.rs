//! The pass manager: a [`Pass`] trait, a registry of passes with
//! descriptions and options, pipeline strings (`cse,fuse{max-dup=0},lower`),
//! and instrumentation around passes (verify-each, print-IR-after-all,
//! timing, statistics) rather than inside them.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::context::{Context, Loc};
use crate::diag::Diagnostic;
use crate::printer::{print_module, PrintOptions};

/// Named counters a pass reports (`cse.eliminated = 12`).
#[derive(Clone, Debug, Default)]
pub struct PassStats {
    pub counters: BTreeMap<&'static str, u64>,
}

impl PassStats {
    /// Adds `n` to counter `name`.
    pub fn add(&mut self, name: &'static str, n: u64) {
        *self.counters.entry(name).or_insert(0) += n;
    }
    /// The value of counter `name` (0 if never set).
    pub fn get(&self, name: &str) -> u64 {
        self.counters.get(name).copied().unwrap_or(0)
    }
}

/// A whole-module transformation.
pub trait Pass {
    /// The registered name (`cse`).
    fn name(&self) -> &'static str;
    /// Transforms the module; a diagnostic aborts the pipeline.
    fn run(&mut self, ctx: &mut Context, stats: &mut PassStats) -> Result<(), Diagnostic>;
    /// Whether the pass is correct on regions of several blocks (branches
    /// between blocks, the `cf` dialect). A pass that says no is refused,
    /// with a located error, on a module that has one, rather than run on
    /// control flow it does not understand.
    fn handles_cfg(&self) -> bool {
        false
    }
}

/// Options given to a pass in a pipeline: `name{key=value,flag}`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PassOptions {
    pub values: BTreeMap<String, String>,
    /// The lowering phases of the tool's dialect registry (from
    /// [`PassRegistry::phases`]), for options that name a phase.
    pub phases: Vec<&'static str>,
    /// The code generator the pipeline's output goes to, where the tool
    /// knows it (`"llvm"` or `"cranelift"`; from [`PassRegistry::codegen`]),
    /// for defaults tuned to it (`lower`'s `split`).
    pub codegen: Option<&'static str>,
}

impl PassOptions {
    /// Option `key` as a string.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(|s| s.as_str())
    }
    /// Option `key` as a boolean (`true`/`false`/`1`/`0`; a bare key is true).
    pub fn get_bool(&self, key: &str, default: bool) -> Result<bool, String> {
        match self.get(key) {
            None => Ok(default),
            Some("true" | "1" | "") => Ok(true),
            Some("false" | "0") => Ok(false),
            Some(v) => Err(format!("option '{key}' expects a boolean, got '{v}'")),
        }
    }
    /// Option `key` as an unsigned integer.
    pub fn get_usize(&self, key: &str, default: usize) -> Result<usize, String> {
        match self.get(key) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| format!("option '{key}' expects an integer, got '{v}'")),
        }
    }
    /// Option `key` as an unsigned integer in `lo..=hi`.
    pub fn get_usize_in(
        &self,
        key: &str,
        default: usize,
        lo: usize,
        hi: usize,
    ) -> Result<usize, String> {
        let v = self.get_usize(key, default)?;
        if (lo..=hi).contains(&v) {
            Ok(v)
        } else {
            Err(format!(
                "option '{key}' expects an integer from {lo} to {hi}, got {v}"
            ))
        }
    }
    /// Errors if an option not in `known` was given.
    pub fn check_known(&self, pass: &str, known: &[&str]) -> Result<(), String> {
        for k in self.values.keys() {
            if !known.contains(&k.as_str()) {
                return Err(format!("pass '{pass}' has no option '{k}'"));
            }
        }
        Ok(())
    }
}

/// Creates a configured pass from options.
pub type PassFactory = fn(&PassOptions) -> Result<Box<dyn Pass>, String>;

/// A registered pass.
#[derive(Clone)]
pub struct PassInfo {
    pub name: &'static str,
    pub description: &'static str,
    /// `(option, description)` pairs, for `--list-passes`.
    pub options: &'static [(&'static str, &'static str)],
    pub create: PassFactory,
}

/// All passes by name.
#[derive(Clone, Default)]
pub struct PassRegistry {
    pub passes: Vec<PassInfo>,
    /// The lowering phases of the dialects the passes will run on, handed
    /// to each pass's options ([`PassOptions::phases`]); empty when unknown.
    pub phases: Vec<&'static str>,
    /// The code generator the pipeline feeds, handed to each pass's options
    /// ([`PassOptions::codegen`]); `None` when unknown (the interpreter, or
    /// IR printed).
    pub codegen: Option<&'static str>,
}

impl PassRegistry {
    /// Registers a pass.
    pub fn register(&mut self, info: PassInfo) {
        self.passes.retain(|p| p.name != info.name);
        self.passes.push(info);
    }
    /// Looks a pass up by name.
    pub fn get(&self, name: &str) -> Option<&PassInfo> {
        self.passes.iter().find(|p| p.name == name)
    }
    /// The `--list-passes` text.
    pub fn describe(&self) -> String {
        let mut out = String::from("Available passes:\n");
        let mut ps = self.passes.clone();
        ps.sort_by_key(|p| p.name);
        for p in ps {
            out.push_str(&format!("  {:<16} {}\n", p.name, p.description));
            for (o, d) in p.options {
                out.push_str(&format!("      {{{o}=...}}  {d}\n"));
            }
        }
        out
    }
    /// Parses `a,b{k=v,k2=v2},c` and creates the passes.
    pub fn parse_pipeline(&self, text: &str) -> Result<Vec<Box<dyn Pass>>, String> {
        let mut out = Vec::new();
        for (name, mut opts) in parse_pipeline(text)? {
            opts.phases = self.phases.clone();
            opts.codegen = self.codegen;
            let info = self
                .get(&name)
                .ok_or_else(|| format!("unknown pass '{name}' (see --list-passes)"))?;
            out.push((info.create)(&opts)?);
        }
        Ok(out)
    }
}

/// `body` with the whitespace around each `=` removed.
fn tight_equals(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_whitespace() {
            let mut run = String::from(c);
            while let Some(&d) = chars.peek().filter(|d| d.is_whitespace()) {
                run.push(d);
                chars.next();
            }
            if !out.ends_with('=') && chars.peek() != Some(&'=') {
                out.push_str(&run);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Splits a pipeline string into `(pass name, options)`.
pub fn parse_pipeline(text: &str) -> Result<Vec<(String, PassOptions)>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        let mut name = String::new();
        while let Some(&c) = chars.peek() {
            if c == ',' || c == '{' {
                break;
            }
            name.push(c);
            chars.next();
        }
        let name = name.trim().to_string();
        let mut opts = PassOptions::default();
        if chars.peek() == Some(&'{') {
            chars.next();
            let mut body = String::new();
            let mut closed = false;
            for c in chars.by_ref() {
                if c == '}' {
                    closed = true;
                    break;
                }
                body.push(c);
            }
            if !closed {
                return Err(format!("unterminated options for pass '{name}'"));
            }
            // Options are separated by commas or spaces, as in MLIR; an
            // item without `=` that starts with a digit continues the list
            // value of the option before it (`jam=64,8`), as MLIR's list
            // options do.
            // Spaces around `=` belong to neither side (`{ target = gpu }`).
            let body = tight_equals(&body);
            let mut last: Option<String> = None;
            for item in body.split([',', ' ']).filter(|s| !s.trim().is_empty()) {
                let item = item.trim();
                if let (None, Some(k)) = (item.split_once('='), &last) {
                    if item.starts_with(|c: char| c.is_ascii_digit()) {
                        let v = opts.values.entry(k.clone()).or_default();
                        v.push(',');
                        v.push_str(item);
                        continue;
                    }
                }
                let (k, v) = match item.split_once('=') {
                    Some((k, v)) => (k.trim(), v.trim()),
                    None => (item, ""),
                };
                last = Some(k.to_string());
                opts.values.insert(k.to_string(), v.to_string());
            }
        }
        if name.is_empty() {
            if text.trim().is_empty() {
                return Ok(out);
            }
            return Err(format!("empty pass name in pipeline '{text}'"));
        }
        out.push((name, opts));
        match chars.next() {
            None => return Ok(out),
            Some(',') => continue,
            Some(c) => return Err(format!("unexpected '{c}' in pipeline '{text}'")),
        }
    }
}

/// Hooks run around every pass.
pub trait Instrumentation {
    /// Called before `pass` runs.
    fn before_pass(&mut self, _pass: &str, _ctx: &Context) {}
    /// Called when `pass` failed (it returned an error, or an
    /// instrumentation's `after_pass` did), before the pipeline stops.
    fn on_failure(&mut self, _pass: &str, _ctx: &Context) {}
    /// Called after `pass` ran; an error aborts the pipeline.
    fn after_pass(
        &mut self,
        _pass: &str,
        _ctx: &Context,
        _stats: &PassStats,
        _elapsed: Duration,
    ) -> Result<(), Diagnostic> {
        Ok(())
    }
}

/// Verifies the module after each pass.
pub struct VerifyEach;

impl Instrumentation for VerifyEach {
    fn after_pass(
        &mut self,
        pass: &str,
        ctx: &Context,
        _: &PassStats,
        _: Duration,
    ) -> Result<(), Diagnostic> {
        match crate::verifier::verify(ctx) {
            Ok(()) => Ok(()),
            Err(mut ds) => {
                let first = ds.remove(0);
                let loc = first.loc;
                Err(first.with_note(loc, format!("IR failed to verify after pass '{pass}'")))
            }
        }
    }
}

/// Which passes [`PrintIr`] prints the module around (MLIR's
/// `--mlir-print-ir-*` options).
#[derive(Clone, Debug, Default)]
pub struct PrintIrOptions {
    /// Before each pass named here.
    pub before: Vec<String>,
    /// After each pass named here.
    pub after: Vec<String>,
    /// After every pass.
    pub after_all: bool,
    /// After a pass (among those selected above, or any when none is
    /// selected) only when it changed the printed IR.
    pub after_change: bool,
    /// After a pass that failed (returned an error, or whose result an
    /// instrumentation rejected, e.g. did not verify).
    pub after_failure: bool,
}

/// Prints the module to stderr around passes, as [`PrintIrOptions`] selects,
/// under headers `// -----// IR Dump Before|After <pass> //----- //`.
pub struct PrintIr {
    pub select: PrintIrOptions,
    pub opts: PrintOptions,
    /// The IR before the running pass (kept for `after_change`).
    before_text: Option<String>,
}

impl PrintIr {
    /// An instrumentation printing what `select` asks for.
    pub fn new(select: PrintIrOptions, opts: PrintOptions) -> PrintIr {
        PrintIr {
            select,
            opts,
            before_text: None,
        }
    }
    fn named(list: &[String], pass: &str) -> bool {
        list.iter().any(|p| p == pass)
    }
    /// Whether the IR is printed after `pass` (changes aside).
    fn after_selected(&self, pass: &str) -> bool {
        let s = &self.select;
        s.after_all || Self::named(&s.after, pass) || (s.after_change && s.after.is_empty())
    }
}

impl Instrumentation for PrintIr {
    fn before_pass(&mut self, pass: &str, ctx: &Context) {
        let text = (Self::named(&self.select.before, pass)
            || (self.select.after_change && self.after_selected(pass)))
        .then(|| print_module(ctx, self.opts));
        if Self::named(&self.select.before, pass) {
            eprintln!("// -----// IR Dump Before {pass} //----- //");
            eprint!("{}", text.as_deref().unwrap_or_default());
        }
        self.before_text = text;
    }
    fn after_pass(
        &mut self,
        pass: &str,
        ctx: &Context,
        _: &PassStats,
        _: Duration,
    ) -> Result<(), Diagnostic> {
        if !self.after_selected(pass) {
            return Ok(());
        }
        let text = print_module(ctx, self.opts);
        if self.select.after_change && self.before_text.as_deref() == Some(text.as_str()) {
            return Ok(());
        }
        eprintln!("// -----// IR Dump After {pass} //----- //");
        eprint!("{text}");
        Ok(())
    }
    fn on_failure(&mut self, pass: &str, ctx: &Context) {
        if self.select.after_failure {
            eprintln!("// -----// IR Dump After {pass} Failed //----- //");
            eprint!("{}", print_module(ctx, self.opts));
        }
    }
}

/// Records each pass's wall time and statistics.
#[derive(Default)]
pub struct Timing {
    /// `(pass, elapsed, stats)` in run order.
    pub records: Vec<(String, Duration, PassStats)>,
}

impl Instrumentation for Timing {
    fn after_pass(
        &mut self,
        pass: &str,
        _: &Context,
        stats: &PassStats,
        elapsed: Duration,
    ) -> Result<(), Diagnostic> {
        self.records
            .push((pass.to_string(), elapsed, stats.clone()));
        Ok(())
    }
}

/// Runs passes in order with instrumentation.
#[derive(Default)]
pub struct PassManager {
    pub passes: Vec<Box<dyn Pass>>,
    pub instrumentations: Vec<Box<dyn Instrumentation>>,
    /// Statistics of each pass, after a run.
    pub stats: Vec<(String, PassStats)>,
}

impl PassManager {
    /// A manager running `passes`.
    pub fn new(passes: Vec<Box<dyn Pass>>) -> Self {
        PassManager {
            passes,
            ..Default::default()
        }
    }
    /// Adds an instrumentation.
    pub fn instrument(&mut self, i: Box<dyn Instrumentation>) {
        self.instrumentations.push(i);
    }
    /// Runs every pass; stops at the first diagnostic.
    pub fn run(&mut self, ctx: &mut Context) -> Result<(), Diagnostic> {
        for pass in self.passes.iter_mut() {
            let name = pass.name();
            for i in self.instrumentations.iter_mut() {
                i.before_pass(name, ctx);
            }
            let mut stats = PassStats::default();
            let t0 = Instant::now();
            let cfg = (ctx.cfg_built && !pass.handles_cfg())
                .then(|| ctx.first_cfg_op())
                .flatten();
            let mut result = match cfg {
                Some(op) => Err(Diagnostic::at_op(
                    ctx,
                    op,
                    format!(
                        "pass '{name}' does not support regions of several blocks (branches between blocks); canonicalize, cse, dce, inline and convert-scf-to-cf do"
                    ),
                )),
                None => pass.run(ctx, &mut stats),
            };
            let dt = t0.elapsed();
            if result.is_ok() {
                for i in self.instrumentations.iter_mut() {
                    result = i.after_pass(name, ctx, &stats, dt);
                    if result.is_err() {
                        break;
                    }
                }
            }
            if let Err(d) = result {
                for i in self.instrumentations.iter_mut() {
                    i.on_failure(name, ctx);
                }
                return Err(d);
            }
            self.stats.push((name.to_string(), stats));
        }
        Ok(())
    }
}

/// A diagnostic for a pass failure without a better location.
pub fn pass_error(msg: impl Into<String>) -> Diagnostic {
    Diagnostic::error(Loc::UNKNOWN, msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    /// A pass that fails, or does nothing.
    struct Stub(bool);
    impl Pass for Stub {
        fn name(&self) -> &'static str {
            if self.0 {
                "fails"
            } else {
                "succeeds"
            }
        }
        fn run(&mut self, _: &mut Context, _: &mut PassStats) -> Result<(), Diagnostic> {
            if self.0 {
                Err(pass_error("stub failure"))
            } else {
                Ok(())
            }
        }
    }

    /// Records the hooks it sees.
    struct Record(Rc<RefCell<Vec<String>>>);
    impl Instrumentation for Record {
        fn before_pass(&mut self, pass: &str, _: &Context) {
            self.0.borrow_mut().push(format!("before {pass}"));
        }
        fn after_pass(
            &mut self,
            pass: &str,
            _: &Context,
            _: &PassStats,
            _: Duration,
        ) -> Result<(), Diagnostic> {
            self.0.borrow_mut().push(format!("after {pass}"));
            Ok(())
        }
        fn on_failure(&mut self, pass: &str, _: &Context) {
            self.0.borrow_mut().push(format!("failed {pass}"));
        }
    }

    #[test]
    fn list_options_continue_with_bare_numbers() {
        let p = parse_pipeline("fuse,lower{jam=64,8 split=1,parallel},cse").unwrap();
        let names: Vec<&str> = p.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["fuse", "lower", "cse"]);
        let o = &p[1].1;
        assert_eq!(o.get("jam"), Some("64,8"));
        assert_eq!(o.get("split"), Some("1"));
        assert_eq!(o.get("parallel"), Some(""));
        // A bare word is still a key.
        let p = parse_pipeline("lower{jam=16,true}").unwrap();
        assert_eq!(p[0].1.get("jam"), Some("16"));
        assert_eq!(p[0].1.get("true"), Some(""));
    }

    #[test]
    fn spaces_around_equals_belong_to_neither_side() {
        let p = parse_pipeline("lower{ target = gpu  block= 64 jam =64,8 parallel }").unwrap();
        let o = &p[0].1;
        assert_eq!(o.get("target"), Some("gpu"));
        assert_eq!(o.get("block"), Some("64"));
        assert_eq!(o.get("jam"), Some("64,8"));
        assert_eq!(o.get("parallel"), Some(""));
        assert_eq!(o.values.len(), 4);
    }

    #[test]
    fn failure_hook_runs_once_and_stops_the_pipeline() {
        let log = Rc::new(RefCell::new(Vec::new()));
        let mut pm = PassManager::new(vec![
            Box::new(Stub(false)),
            Box::new(Stub(true)),
            Box::new(Stub(false)),
        ]);
        pm.instrument(Box::new(Record(log.clone())));
        let mut ctx = Context::new(Rc::new(crate::spec::Registry::default()));
        let err = pm.run(&mut ctx).unwrap_err();
        assert!(err.message.contains("stub failure"));
        assert_eq!(
            *log.borrow(),
            [
                "before succeeds",
                "after succeeds",
                "before fails",
                "failed fails"
            ]
        );
    }
}
