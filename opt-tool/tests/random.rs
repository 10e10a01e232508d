//! Random well-typed programs, run in every configuration (issue 15, item 3; the
//! role Cranelift's `fuzzgen` plays for Cranelift).
//!
//! Each seed gives one `func.func @main(%x: vec<f64>, %y: vec<f64>, %k: vec<i64>,
//! %s: f64, %n: index, %c: i1)` of 4 to 24 statements over `arith`, `scf.if`,
//! `scf.while` (a search), and
//! the `vec` ops (maps and zipWiths, filters, scans, reductions, dots, gets,
//! iota/fill, elementwise ops; each of which `fuse` views as a `gen.loop`),
//! `gen.loop`s written out (collect and reduce, flatMap, buckets, nested
//! loops, and a scan, a bucket reduce and a collect in one filtered loop),
//! variables (also updated in an `scf.while` whose condition reads them),
//! records (also through an `scf.if`, with a vector field), buffers read and
//! written through aliases (selects, branch results, buffers swapped by a
//! loop, a call), two maps with a write to what they read between them,
//! an `scf.for` around loop-invariant maps, matrices
//! (`mat.from`, transposes, products, rows), `scf.index_switch`, `f16` and
//! `bf16` arithmetic, integers of other widths (`i3` to `i48`), calls of
//! helper functions (also inside a map's body),
//! sizes computed at run time (negative ones fault on purpose), the shapes
//! a second, independent generator built and this one did not (issue 43):
//! collects with several emit sites at different depths (two emits in a
//! row, one at the top and one under an `scf.if`, one in each branch, nested
//! `scf.if`s), so that they yield more elements than their loop has
//! iterations ([`Gen::multi_collect`]); conditions that fold to constants
//! (`arith.constant true`/`false`, comparisons of constants) on `scf.if`,
//! `arith.select`, `scf.while` and emits; a vector and a scalar carried
//! through an `scf.for` with constant bounds that runs zero times (`lb ==
//! ub`, or `lb > ub` with any step, 0 too); unused results (a call of a
//! helper with two results, a `gen.loop`'s collect or reduce, an `scf.for`'s
//! scalar); matrices of loop results (`mat.from(c, len(c), 1)`, a row, or the
//! loop's size by its emits per iteration) and their transposes, rows,
//! products, entries, matrix-vector products, or the matrix itself as a
//! result; these shapes' ops in the generic form, the custom form or both
//! ([`Forms`]); 2-D stencils over a flat index with clamped neighbours,
//! which `lower` turns into row/column nests, splits at the clamps' edges
//! and versions on the reads' bounds ([`Gen::stencil`]); and
//! inputs of random lengths, equal or not, so that some programs fault on purpose
//! (size mismatches, out-of-bounds reads; a zip takes vectors known to have
//! equal lengths most of the time, [`Gen::like`]). Floats stay dyadic with few bits (inputs
//! are multiples of 1/4, products only by 1/2, 2, 3 or -1, or of two such
//! values in matrix products), so every
//! reassociation is exact and results must agree to the last bit up to the
//! tolerance of [`common::compare`].
//!
//! The reference is the interpreter before any pass; every configuration of
//! [`CONFIGS`] must print the same results, or fail with exit status 1 as the
//! reference does, with a fault located in the program ([`located`]). Which
//! fault comes first may change with the passes (IR-SPEC §3: pure ops may be
//! hoisted, sunk or deleted), but not with the backend: Cranelift and LLVM (with
//! threads too) must fault where the interpreter faults after the same passes, and
//! report its first fault, place and message ([`native_twin`]); so a check
//! that a backend drops is found even where the reference faults earlier.
//! A pass may elide a fault (delete a dead op or an unread write with it). Whether
//! it was allowed to, the reference decides again with `--defer-faults` (faults of
//! pure ops become poison, `ir::poison`): where that run ends, no faulting op's
//! value mattered, and every configuration that ran to its end must print its
//! results; where poison reached a result or an effect, those configurations must
//! agree with one another, and the program is counted for an audit by hand.
//! A disagreement is reduced (statements and results are dropped
//! while it persists) and the reproducer is printed and written to
//! `target/random-failures/`.
//!
//! `cargo test` runs `RANDOM_PROGRAMS` programs (default 80) from seed
//! `RANDOM_SEED` (default 1); `benches/random-programs.sh N` runs N of them and
//! reports programs per minute. Where a GPU is present the kernels also run on it
//! ([`NVPTX_CONFIG`]); `RANDOM_ONLY=NAME` keeps only the configurations whose name
//! contains `NAME`.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

mod common;
use common::root;

/// `(name, l0-opt arguments)`; each is compared with the reference (no passes, interpreter).
const CONFIGS: &[(&str, &[&str])] = &[
    (
        "mem2reg,speculate,canonicalize,cse,dce",
        &[
            "--pass=mem2reg,speculate,canonicalize,cse,dce",
            "--backend=interp",
        ],
    ),
    (
        "split-structs,canonicalize,cse,dce",
        &[
            "--pass=split-structs,canonicalize,cse,dce",
            "--backend=interp",
        ],
    ),
    (
        "inline,code-motion",
        &["--pass=inline,code-motion", "--backend=interp"],
    ),
    (
        "cse,code-motion,dce",
        &["--pass=cse,code-motion,dce", "--backend=interp"],
    ),
    ("fuse", &["--pass=fuse", "--backend=interp"]),
    ("lower", &["--pass=lower", "--backend=interp"]),
    // Branches between blocks: the structured loops of the source and of
    // `lower`'s output as MLIR's cf, then its region simplification.
    (
        "convert-scf-to-cf,canonicalize",
        &["--pass=convert-scf-to-cf,canonicalize", "--backend=interp"],
    ),
    (
        "lower,convert-scf-to-cf,canonicalize,cse,dce",
        &[
            "--pass=lower,convert-scf-to-cf,canonicalize,cse,dce",
            "--backend=interp",
        ],
    ),
    ("fuse,lower", &["--pass=fuse,lower", "--backend=interp"]),
    (
        "fuse,lower/cranelift",
        &["--pass=fuse,lower", "--backend=cranelift"],
    ),
    // The interpreter after the pipelines of the native configurations below,
    // whose exits and faults must be the same (`native_twin`).
    (
        "fuse,lower{grain=2,chunks=4}",
        &["--pass=fuse,lower{grain=2,chunks=4}", "--backend=interp"],
    ),
    (
        "lower{grain=3,chunks=3}",
        &["--pass=lower{grain=3,chunks=3}", "--backend=interp"],
    ),
    (
        "inline,fuse,lower",
        &["--pass=inline,fuse,lower", "--backend=interp"],
    ),
    (
        "fuse{horizontal=false},lower{split=1,version=false}",
        &[
            "--pass=fuse{horizontal=false},lower{split=1,version=false}",
            "--backend=interp",
        ],
    ),
    ("lower/llvm", &["--pass=lower", "--backend=llvm"]),
    ("fuse,lower/llvm", &["--pass=fuse,lower", "--backend=llvm"]),
    (
        "fuse,lower{grain=2,chunks=4}/cranelift --threads=2",
        &[
            "--pass=fuse,lower{grain=2,chunks=4}",
            "--backend=cranelift",
            "--threads=2",
        ],
    ),
    (
        "lower{grain=3,chunks=3}/llvm --threads=3",
        &[
            "--pass=lower{grain=3,chunks=3}",
            "--backend=llvm",
            "--threads=3",
        ],
    ),
    // One thread: lowerings that choose by `scf.forall_threads` take their
    // sequential form (a user-defined scan's one-pass chunk loop).
    (
        "inline,fuse,lower/cranelift --threads=1",
        &[
            "--pass=inline,fuse,lower",
            "--backend=cranelift",
            "--threads=1",
        ],
    ),
    (
        "fuse{fuel=2},lower{until=gen}",
        &["--pass=fuse{fuel=2},lower{until=gen}", "--backend=interp"],
    ),
    (
        "fuse{horizontal=false},lower{split=1,version=false}/cranelift",
        &[
            "--pass=fuse{horizontal=false},lower{split=1,version=false}",
            "--backend=cranelift",
        ],
    ),
    (
        "fuse,lower{target=gpu}/interp",
        &[
            "--pass=fuse,lower{target=gpu,block=32,max-grid=2}",
            "--backend=interp",
        ],
    ),
    // The host code compiled, the kernels simulated (issue 41).
    (
        "fuse,lower{target=gpu}/sim/llvm",
        &[
            "--pass=fuse,lower{target=gpu,block=32,max-grid=2}",
            "--target=nvptx",
            "--device=sim",
        ],
    ),
    (
        "fuse,lower{target=gpu}/sim/cranelift",
        &[
            "--pass=fuse,lower{target=gpu,block=32,max-grid=2}",
            "--target=nvptx",
            "--device=sim",
            "--backend=cranelift",
        ],
    ),
];

/// The configuration added where a GPU and its driver are present
/// ([`common::nvptx_available`]): the kernels run on the GPU.
const NVPTX_CONFIG: (&str, &[&str]) = (
    "fuse,lower{target=gpu}/nvptx",
    &[
        "--pass=fuse,lower{target=gpu,block=32,max-grid=2}",
        "--target=nvptx",
    ],
);

/// The configurations this run compares: [`CONFIGS`], plus [`NVPTX_CONFIG`] where a GPU
/// is present, restricted to those whose name contains `$RANDOM_ONLY` when it is set
/// (e.g. `RANDOM_ONLY=nvptx` on a GPU machine).
fn configs() -> &'static [(&'static str, &'static [&'static str])] {
    static ALL: std::sync::OnceLock<Vec<(&str, &[&str])>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        let mut all = CONFIGS.to_vec();
        if common::nvptx_available(env!("CARGO_BIN_EXE_l0-opt").as_ref()) {
            all.push(NVPTX_CONFIG);
        }
        if let Ok(only) = std::env::var("RANDOM_ONLY") {
            all.retain(|(name, _)| name.contains(only.as_str()));
            assert!(
                !all.is_empty(),
                "RANDOM_ONLY={only} matches no configuration"
            );
        }
        all
    })
}

/// SplitMix64: a small deterministic generator (no dependency, stable across versions).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Ty {
    F64,
    I64,
    Idx,
    I1,
    VF64,
    VI64,
    MF64,
    MI64,
}

impl Ty {
    fn name(self) -> &'static str {
        match self {
            Ty::F64 => "f64",
            Ty::I64 => "i64",
            Ty::Idx => "index",
            Ty::I1 => "i1",
            Ty::VF64 => "vec<f64>",
            Ty::VI64 => "vec<i64>",
            Ty::MF64 => "mat<f64>",
            Ty::MI64 => "mat<i64>",
        }
    }
}

/// One statement: its text, the value it defines and the values it uses.
#[derive(Clone)]
struct Stmt {
    text: String,
    def: String,
    ty: Ty,
    uses: Vec<String>,
}

/// A program: statements and the values it returns.
#[derive(Clone)]
struct Program {
    stmts: Vec<Stmt>,
    results: Vec<(String, Ty)>,
    /// Random bits for MLIR's spellings of the same program (issue 45,
    /// item 6, tried by issue 43's driver): bit 0 type and attribute
    /// aliases for `@main`'s vector parameters, bit 1 parameter
    /// attributes, bit 2 `@swap` quoted as `@"swap two"`, bit 3 an explicit
    /// module wrapper holding a named submodule.
    spell: u64,
}

const PARAMS: &[(&str, Ty)] = &[
    ("%x", Ty::VF64),
    ("%y", Ty::VF64),
    ("%k", Ty::VI64),
    ("%s", Ty::F64),
    ("%n", Ty::Idx),
    ("%c", Ty::I1),
];

/// Functions every program may call: a scaled sum, a write of `x`
/// at index 0 of a buffer (out of bounds when it is empty), and four with
/// two results, of which a caller may use one ([`Gen::calls_two_results`];
/// `@swap` returns its arguments, in the generic form).
const HELPERS: &str = "func.func @scaled_sum(%a: f64, %v: vec<f64>) -> f64 {
  %s = vec.sum %v : vec<f64>
  %r = arith.mulf %s, %a : f64
  func.return %r : f64
}
func.func @poke(%p: arr<f64>, %x: f64) {
  %z = arith.constant 0 : index
  arr.store %p, %z, %x : arr<f64>
  func.return
}
func.func @halves(%v: vec<f64>, %a: f64) -> (vec<f64>, vec<f64>) {
  %h = arith.constant 0.5 : f64
  %p = vec.scale %v, %h : vec<f64>
  %q = vec.map (%v) : vec<f64> -> vec<f64> {
  ^bb0(%e: f64):
    %s = arith.addf %e, %a : f64
    vec.yield %s : f64
  }
  func.return %p, %q : vec<f64>, vec<f64>
}
func.func @sum_and_double(%v: vec<f64>) -> (f64, vec<f64>) {
  %s = vec.sum %v : vec<f64>
  %d = vec.add %v, %v : vec<f64>
  func.return %s, %d : f64, vec<f64>
}
func.func @positives(%k: vec<i64>) -> (vec<i64>, i64) {
  %f = vec.filter %k : vec<i64> {
  ^bb0(%e: i64):
    %z = arith.constant 0 : i64
    %l = arith.cmpi sgt, %e, %z : i64
    vec.yield %l : i1
  }
  %s = vec.sum %k : vec<i64>
  func.return %f, %s : vec<i64>, i64
}
func.func @swap(%v: vec<f64>, %w: vec<f64>) -> (vec<f64>, vec<f64>) {
  \"func.return\"(%w, %v) : (vec<f64>, vec<f64>) -> ()
}
";

impl Program {
    fn text(&self) -> String {
        let aliases = self.spell & 1 != 0;
        let arg_attrs = self.spell & 2 != 0;
        let params: Vec<String> = PARAMS
            .iter()
            .map(|(n, t)| {
                let ty = if aliases && *t == Ty::VF64 {
                    "!vf"
                } else {
                    t.name()
                };
                let attrs = match (*n, arg_attrs) {
                    ("%x", true) => " {test.p}",
                    ("%s", true) => " {test.q = #two, llvm.noundef}",
                    _ => "",
                };
                format!("{n}: {ty}{attrs}")
            })
            .collect();
        let rtys: Vec<&str> = self.results.iter().map(|(_, t)| t.name()).collect();
        let mut s = String::new();
        if aliases || arg_attrs {
            s.push_str("!vf = vec<f64>\n#two = 2 : i64\n");
        }
        s.push_str(&format!(
            "{HELPERS}func.func @main({}) -> ({}) {{\n",
            params.join(", "),
            rtys.join(", ")
        ));
        for st in &self.stmts {
            s.push_str(&st.text);
        }
        let rs: Vec<&str> = self.results.iter().map(|(v, _)| v.as_str()).collect();
        s.push_str(&format!(
            "  \"func.return\"({}) : ({}) -> ()\n}}\n",
            rs.join(", "),
            rtys.join(", ")
        ));
        if self.spell & 4 != 0 {
            s = s.replace("@swap", "@\"swap two\"");
        }
        if self.spell & 8 != 0 {
            // Aliases stay before the wrapper.
            let at = s.find("func.func").unwrap_or(0);
            s.insert_str(
                at,
                "module {\nmodule @aux {\n  func.func @aux_f() {\n    func.return\n  }\n}\n",
            );
            s.push_str("}\n");
        }
        s
    }
    fn result_types(&self) -> Vec<String> {
        self.results
            .iter()
            .map(|(_, t)| t.name().to_string())
            .collect()
    }
}

/// Builds statements over a pool of typed values.
struct Gen {
    rng: Rng,
    pool: Vec<(String, Ty)>,
    stmts: Vec<Stmt>,
    next: usize,
    /// Length classes: vectors known to have equal lengths (the inputs, with
    /// equal lengths most of the time, and maps, scans, zips of them) share a
    /// class; see [`Gen::like`].
    len_class: std::collections::HashMap<String, usize>,
    /// How the ops of the statement being built are written ([`Forms`]).
    forms: Forms,
}

const DYADIC: &[&str] = &["0.5", "-1.25", "2.0", "0.0", "3.75", "-0.5"];
const FACTORS: &[&str] = &["0.5", "2.0", "3.0", "-1.0"];

impl Gen {
    fn fresh(&mut self) -> String {
        self.next += 1;
        format!("%v{}", self.next)
    }
    fn any(&mut self, t: Ty) -> Option<String> {
        self.any_of(t, None)
    }
    /// A value of type `t` from the pool, of length class `class` where given.
    fn any_of(&mut self, t: Ty, class: Option<usize>) -> Option<String> {
        let xs: Vec<&String> = self
            .pool
            .iter()
            .filter(|(v, u)| *u == t && class.is_none_or(|c| self.len_class.get(v) == Some(&c)))
            .map(|(v, _)| v)
            .collect();
        if xs.is_empty() {
            None
        } else {
            Some(xs[self.rng.below(xs.len())].clone())
        }
    }
    /// A vector of type `t` for a zip with `v`: most of the time (85%) one
    /// of `v`'s length class (`v` itself maybe), else any (sizes that may
    /// differ fault on purpose).
    fn like(&mut self, t: Ty, v: &str) -> Option<String> {
        let class = self.len_class.get(v).copied();
        if class.is_some() && self.rng.chance(85) {
            if let Some(u) = self.any_of(t, class) {
                return Some(u);
            }
        }
        self.any(t)
    }

    /// A vector of type `t` and one of type `u` for a zip with it ([`Gen::like`]).
    fn pair(&mut self, t: Ty, u: Ty) -> (Option<String>, Option<String>) {
        let Some(a) = self.any(t) else {
            return (None, None);
        };
        let b = self.like(u, &a);
        (Some(a), b)
    }

    /// Records that vector `d` has the length of vector `v`.
    fn same_len(&mut self, d: &str, v: &str) {
        if let Some(&c) = self.len_class.get(v) {
            self.len_class.insert(d.to_string(), c);
        }
    }

    fn push(&mut self, def: String, ty: Ty, text: String, uses: &[&String]) {
        self.stmts.push(Stmt {
            text,
            def: def.clone(),
            ty,
            uses: uses.iter().map(|s| s.to_string()).collect(),
        });
        self.pool.push((def, ty));
    }

    /// A float element expression of `%e` (and maybe the captured scalar `cap`),
    /// as body lines ending in `vec.yield`.
    fn float_body(&mut self, cap: &str) -> String {
        let f = *self.rng.pick(FACTORS);
        match self.rng.below(8) {
            0 => format!(
                "    %m = \"arith.addf\"(%e, {cap}) : (f64, f64) -> f64\n    \"vec.yield\"(%m) : (f64) -> ()\n"
            ),
            // MLIR's math ops (issue 45): exact on dyadic values, so every
            // backend must give the interpreter's bits.
            6 => format!(
                "    %mk = \"arith.constant\"() {{value = {f} : f64}} : () -> f64\n    %mfl = \"math.floor\"(%e) : (f64) -> f64\n    %mro = \"math.round\"(%mfl) : (f64) -> f64\n    %m = \"math.fma\"(%mro, %mk, {cap}) : (f64, f64, f64) -> f64\n    \"vec.yield\"(%m) : (f64) -> ()\n"
            ),
            7 => format!(
                "    %mce = \"math.ceil\"(%e) : (f64) -> f64\n    %m = \"math.copysign\"(%mce, {cap}) : (f64, f64) -> f64\n    \"vec.yield\"(%m) : (f64) -> ()\n"
            ),
            // sqrt(e * e) = |e| exactly (the square of a dyadic input is exact).
            4 => "    %q = \"arith.mulf\"(%e, %e) : (f64, f64) -> f64\n    %m = \"arith.sqrt\"(%q) : (f64) -> f64\n    \"vec.yield\"(%m) : (f64) -> ()\n".to_string(),
            5 => format!(
                "    %a = \"arith.abs\"(%e) : (f64) -> f64\n    %ng = \"arith.negf\"(%a) : (f64) -> f64\n    %m = \"arith.minf\"(%ng, {cap}) : (f64, f64) -> f64\n    \"vec.yield\"(%m) : (f64) -> ()\n"
            ),
            1 => format!(
                "    %f = \"arith.constant\"() {{value = {f} : f64}} : () -> f64\n    %m = \"arith.mulf\"(%e, %f) : (f64, f64) -> f64\n    \"vec.yield\"(%m) : (f64) -> ()\n"
            ),
            2 => format!(
                "    %m = \"arith.maxf\"(%e, {cap}) : (f64, f64) -> f64\n    \"vec.yield\"(%m) : (f64) -> ()\n"
            ),
            _ => format!(
                "    %a = \"arith.subf\"(%e, {cap}) : (f64, f64) -> f64\n    %z = \"arith.constant\"() {{value = 0.0 : f64}} : () -> f64\n    %l = \"arith.cmpf\"(%a, %z) {{predicate = \"olt\"}} : (f64, f64) -> i1\n    %m = \"arith.select\"(%l, %e, %a) : (i1, f64, f64) -> f64\n    \"vec.yield\"(%m) : (f64) -> ()\n"
            ),
        }
    }

    /// Adds one random statement (if its operands exist).
    fn stmt(&mut self) {
        let r = self.rng.below(64);
        let d = self.fresh();
        let kinds = ["add", "min", "max"];
        match r {
            0 | 1 => {
                let (Some(a), Some(b)) = (self.any(Ty::F64), self.any(Ty::F64)) else {
                    return;
                };
                let op = self.rng.pick(&["addf", "subf", "maxf", "minf"]);
                let t = format!("  {d} = \"arith.{op}\"({a}, {b}) : (f64, f64) -> f64\n");
                self.push(d, Ty::F64, t, &[&a, &b]);
            }
            2 => {
                let Some(a) = self.any(Ty::F64) else { return };
                let f = *self.rng.pick(FACTORS);
                let t = format!(
                    "  {d}c = \"arith.constant\"() {{value = {f} : f64}} : () -> f64\n  {d} = \"arith.mulf\"({a}, {d}c) : (f64, f64) -> f64\n"
                );
                self.push(d, Ty::F64, t, &[&a]);
            }
            3 => {
                let (Some(a), Some(b)) = (self.any(Ty::F64), self.any(Ty::F64)) else {
                    return;
                };
                let p = self.rng.pick(&["olt", "oge", "oeq"]);
                let t = format!(
                    "  {d} = \"arith.cmpf\"({a}, {b}) {{predicate = \"{p}\"}} : (f64, f64) -> i1\n"
                );
                self.push(d, Ty::I1, t, &[&a, &b]);
            }
            4 => {
                let (Some(c), Some(a), Some(b)) =
                    (self.any(Ty::I1), self.any(Ty::F64), self.any(Ty::F64))
                else {
                    return;
                };
                if self.rng.chance(50) {
                    let t = format!(
                        "  {d} = \"arith.select\"({c}, {a}, {b}) : (i1, f64, f64) -> f64\n"
                    );
                    self.push(d, Ty::F64, t, &[&c, &a, &b]);
                } else {
                    let t = format!(
                        "  {d} = \"scf.if\"({c}) ({{\n    {d}t = \"arith.addf\"({a}, {b}) : (f64, f64) -> f64\n    \"scf.yield\"({d}t) : (f64) -> ()\n  }}, {{\n    \"scf.yield\"({b}) : (f64) -> ()\n  }}) : (i1) -> f64\n"
                    );
                    self.push(d, Ty::F64, t, &[&c, &a, &b]);
                }
            }
            5..=7 => {
                let (Some(v), Some(cap)) = (self.any(Ty::VF64), self.any(Ty::F64)) else {
                    return;
                };
                let body = self.float_body(&cap);
                let t = format!(
                    "  {d} = \"vec.map\"({v}) ({{\n  ^bb0(%e: f64):\n{body}  }}) : (vec<f64>) -> vec<f64>\n"
                );
                self.same_len(&d, &v);
                self.push(d, Ty::VF64, t, &[&v, &cap]);
            }
            8 => {
                let (Some(a), Some(b)) = self.pair(Ty::VF64, Ty::VF64) else {
                    return;
                };
                let t = format!(
                    "  {d} = \"vec.map\"({a}, {b}) ({{\n  ^bb0(%e: f64, %g: f64):\n    %m = \"arith.subf\"(%e, %g) : (f64, f64) -> f64\n    \"vec.yield\"(%m) : (f64) -> ()\n  }}) : (vec<f64>, vec<f64>) -> vec<f64>\n"
                );
                self.same_len(&d, &a);
                self.push(d, Ty::VF64, t, &[&a, &b]);
            }
            9 => {
                let (Some(v), Some(cap)) = (self.any(Ty::VF64), self.any(Ty::F64)) else {
                    return;
                };
                let t = format!(
                    "  {d} = \"vec.filter\"({v}) ({{\n  ^bb0(%e: f64):\n    %l = \"arith.cmpf\"(%e, {cap}) {{predicate = \"ogt\"}} : (f64, f64) -> i1\n    \"vec.yield\"(%l) : (i1) -> ()\n  }}) : (vec<f64>) -> vec<f64>\n"
                );
                self.push(d, Ty::VF64, t, &[&v, &cap]);
            }
            10 => {
                let (Some(v), Some(i)) = (self.any(Ty::VF64), self.any(Ty::F64)) else {
                    return;
                };
                let k = self.rng.pick(&kinds);
                let t = format!(
                    "  {d} = \"vec.scan\"({v}, {i}) {{kind = #gen.reduce<{k}>}} : (vec<f64>, f64) -> vec<f64>\n"
                );
                self.same_len(&d, &v);
                self.push(d, Ty::VF64, t, &[&v, &i]);
            }
            11 | 12 => {
                let Some(v) = self.any(Ty::VF64) else { return };
                if self.rng.chance(50) {
                    let t = format!("  {d} = \"vec.sum\"({v}) : (vec<f64>) -> f64\n");
                    self.push(d, Ty::F64, t, &[&v]);
                } else {
                    let Some(i) = self.any(Ty::F64) else { return };
                    let k = self.rng.pick(&kinds);
                    let t = format!(
                        "  {d} = \"vec.reduce\"({v}, {i}) {{kind = #gen.reduce<{k}>}} : (vec<f64>, f64) -> f64\n"
                    );
                    self.push(d, Ty::F64, t, &[&v, &i]);
                }
            }
            13 => {
                let (Some(a), Some(b)) = self.pair(Ty::VF64, Ty::VF64) else {
                    return;
                };
                let op = self.rng.pick(&["add", "sub", "dot"]);
                if *op == "dot" {
                    // Products of two elements: keep one side a power of two.
                    let t = format!(
                        "  {d}h = \"vec.scale\"({b}, %half) : (vec<f64>, f64) -> vec<f64>\n  {d}f = \"vec.fill\"({d}l, %half) : (index, f64) -> vec<f64>\n  {d} = \"vec.dot\"({a}, {d}f) : (vec<f64>, vec<f64>) -> f64\n"
                    );
                    let t = format!("  {d}l = \"vec.len\"({a}) : (vec<f64>) -> index\n{t}");
                    self.push(d, Ty::F64, t, &[&a, &b]);
                } else {
                    let t = format!(
                        "  {d} = \"vec.{op}\"({a}, {b}) : (vec<f64>, vec<f64>) -> vec<f64>\n"
                    );
                    self.same_len(&d, &a);
                    self.push(d, Ty::VF64, t, &[&a, &b]);
                }
            }
            14 => {
                let Some(v) = self.any(Ty::VF64) else { return };
                let t = format!("  {d} = \"vec.len\"({v}) : (vec<f64>) -> index\n");
                self.push(d, Ty::Idx, t, &[&v]);
            }
            15 => {
                let (Some(v), Some(i)) = (self.any(Ty::VF64), self.any(Ty::Idx)) else {
                    return;
                };
                let t = if self.rng.chance(85) {
                    // Clamped to the last element: faults only on an empty vector.
                    format!(
                        "  {d}n = \"vec.len\"({v}) : (vec<f64>) -> index\n  {d}o = \"arith.constant\"() {{value = 1 : index}} : () -> index\n  {d}l = \"arith.subi\"({d}n, {d}o) : (index, index) -> index\n  {d}i = \"arith.mini\"({i}, {d}l) : (index, index) -> index\n  {d} = \"vec.get\"({v}, {d}i) : (vec<f64>, index) -> f64\n"
                    )
                } else {
                    format!("  {d} = \"vec.get\"({v}, {i}) : (vec<f64>, index) -> f64\n")
                };
                self.push(d, Ty::F64, t, &[&v, &i]);
            }
            16 => {
                let Some(n) = self.any(Ty::Idx) else { return };
                if self.rng.chance(50) {
                    let t = format!(
                        "  {d}i = \"vec.iota\"({n}) : (index) -> vec<index>\n  {d} = \"vec.map\"({d}i) ({{\n  ^bb0(%e: index):\n    %j = \"arith.index_cast\"(%e) : (index) -> i64\n    %f = \"arith.sitofp\"(%j) : (i64) -> f64\n    \"vec.yield\"(%f) : (f64) -> ()\n  }}) : (vec<index>) -> vec<f64>\n"
                    );
                    self.push(d, Ty::VF64, t, &[&n]);
                } else {
                    let Some(x) = self.any(Ty::F64) else { return };
                    let t = format!("  {d} = \"vec.fill\"({n}, {x}) : (index, f64) -> vec<f64>\n");
                    self.push(d, Ty::VF64, t, &[&n, &x]);
                }
            }
            17 => {
                let (Some(a), Some(b)) = (self.any(Ty::Idx), self.any(Ty::Idx)) else {
                    return;
                };
                let op = self.rng.pick(&["addi", "maxi", "mini"]);
                let t = format!("  {d} = \"arith.{op}\"({a}, {b}) : (index, index) -> index\n");
                self.push(d, Ty::Idx, t, &[&a, &b]);
            }
            18 => {
                let Some(v) = self.any(Ty::VI64) else { return };
                let m = self.rng.pick(&["3", "-2", "1", "0", "64"]);
                // MLIR's integer ops too (a zero divisor faults on purpose;
                // a shift by 64 shifts every bit out).
                let op = self.rng.pick(&[
                    "muli",
                    "muli",
                    "shli",
                    "shrsi",
                    "shrui",
                    "divui",
                    "remui",
                    "ceildivsi",
                    "floordivsi",
                    "ceildivui",
                    "minui",
                    "maxsi",
                    "andi",
                    "ori",
                    "xori",
                    "subi",
                ]);
                let t = format!(
                    "  {d} = \"vec.map\"({v}) ({{\n  ^bb0(%e: i64):\n    %f = \"arith.constant\"() {{value = {m} : i64}} : () -> i64\n    %m = \"arith.{op}\"(%e, %f) : (i64, i64) -> i64\n    \"vec.yield\"(%m) : (i64) -> ()\n  }}) : (vec<i64>) -> vec<i64>\n"
                );
                self.same_len(&d, &v);
                self.push(d, Ty::VI64, t, &[&v]);
            }
            19 => {
                let Some(v) = self.any(Ty::VI64) else { return };
                let k = self.rng.pick(&kinds);
                let t = if self.rng.chance(50) {
                    format!(
                        "  {d}z = \"arith.constant\"() {{value = 0 : i64}} : () -> i64\n  {d} = \"vec.reduce\"({v}, {d}z) {{kind = #gen.reduce<{k}>}} : (vec<i64>, i64) -> i64\n"
                    )
                } else {
                    format!(
                        "  {d}z = \"arith.constant\"() {{value = 1 : i64}} : () -> i64\n  {d}q = \"vec.scan\"({v}, {d}z) {{kind = #gen.reduce<{k}>}} : (vec<i64>, i64) -> vec<i64>\n  {d} = \"vec.sum\"({d}q) : (vec<i64>) -> i64\n"
                    )
                };
                self.push(d, Ty::I64, t, &[&v]);
            }
            20 => {
                let Some(v) = self.any(Ty::VI64) else { return };
                let t = format!(
                    "  {d} = \"vec.filter\"({v}) ({{\n  ^bb0(%e: i64):\n    %z = \"arith.constant\"() {{value = 0 : i64}} : () -> i64\n    %l = \"arith.cmpi\"(%e, %z) {{predicate = \"sgt\"}} : (i64, i64) -> i1\n    \"vec.yield\"(%l) : (i1) -> ()\n  }}) : (vec<i64>) -> vec<i64>\n"
                );
                self.push(d, Ty::VI64, t, &[&v]);
            }
            21 => self.half_floats(d),
            22 | 23 => self.loop_collect_reduce(d),
            24 => self.loop_flatmap(d),
            25 => self.loop_bucket(d),
            26 => self.loop_nested_reduce(d),
            27 => self.var_conditional(d),
            28 => self.var_loop(d),
            29 => self.records(d),
            30 => self.arr_alias(d),
            31 => self.arr_ping_pong(d),
            32 => self.matrices(d),
            33 => self.calls(d),
            34 => self.call_writes(d),
            35 => self.shifted_reads(d),
            36 => self.computed_size(d),
            37 => self.group_reduce(d),
            38 => self.switch(d),
            39 => self.other_width(d),
            40 => self.invariant_checks(d),
            41 => self.while_find(d),
            42 => self.scaled_product(d),
            43 => self.loop_three_generators(d),
            44 => self.for_invariant_map(d),
            45 => self.var_while(d),
            46 => self.call_in_map(d),
            47 => self.records_branch(d),
            48 => self.write_between_maps(d),
            49 | 50 => self.multi_emit(d),
            51 | 52 => self.const_cond(d),
            53 => self.zero_trip(d),
            54 => self.calls_two_results(d),
            55 => self.mat_of_loop(d),
            56 => self.slices_and_updates(d),
            57 => self.combiner(d),
            58 => self.nested(d),
            59 => self.parallel(d),
            61 | 62 => self.stencil(d),
            63 => self.temporaries(d),
            _ => {
                let (Some(v), Some(s)) = (self.any(Ty::VF64), self.any(Ty::F64)) else {
                    return;
                };
                let t = format!("  {d}h = \"arith.mulf\"({s}, %half) : (f64, f64) -> f64\n  {d} = \"vec.scale\"({v}, %half) : (vec<f64>, f64) -> vec<f64>\n");
                self.same_len(&d, &v);
                self.push(d, Ty::VF64, t, &[&v, &s]);
            }
        }
    }
}

impl Gen {
    /// Arithmetic in `f16` or `bf16`: two doubles rounded to the type, an
    /// op rounded again (products of the dyadic inputs may overflow `f16`),
    /// maybe a round trip through the `i16` bits, widened back.
    fn half_floats(&mut self, d: String) {
        let (Some(a), Some(b)) = (self.any(Ty::F64), self.any(Ty::F64)) else {
            return;
        };
        let ty = *self.rng.pick(&["f16", "bf16"]);
        let op = *self.rng.pick(&["addf", "subf", "mulf", "maxnumf"]);
        let mut t = format!(
            "  {d}a = arith.truncf {a} : f64 to {ty}\n  {d}b = arith.truncf {b} : f64 to {ty}\n  {d}r = arith.{op} {d}a, {d}b : {ty}\n"
        );
        let r = if self.rng.chance(30) {
            t.push_str(&format!(
                "  {d}i = arith.bitcast {d}r : {ty} to i16\n  {d}j = arith.bitcast {d}i : i16 to {ty}\n"
            ));
            format!("{d}j")
        } else {
            format!("{d}r")
        };
        t.push_str(&format!("  {d} = arith.extf {r} : {ty} to f64\n"));
        self.push(d, Ty::F64, t, &[&a, &b]);
    }

    /// Integer arithmetic at another width (`i3` to `i48`): two `i64`s
    /// truncated to it, one op (an unsigned division may divide by zero on
    /// purpose), extended back.
    fn other_width(&mut self, d: String) {
        // Without an i64 at hand, the size parameter converted.
        let pre = format!("  {d}n = arith.index_cast %n : index to i64\n");
        let n = format!("{d}n");
        let a = self.any(Ty::I64).unwrap_or_else(|| n.clone());
        let b = self.any(Ty::I64).unwrap_or_else(|| n.clone());
        let w = *self.rng.pick(&[3u32, 5, 12, 33, 48]);
        let op = *self
            .rng
            .pick(&["addi", "muli", "divui", "shrsi", "maxui", "xori"]);
        let ext = *self.rng.pick(&["extsi", "extui"]);
        let t = format!(
            "{pre}  {d}a = arith.trunci {a} : i64 to i{w}\n  {d}b = arith.trunci {b} : i64 to i{w}\n  {d}r = arith.{op} {d}a, {d}b : i{w}\n  {d} = arith.{ext} {d}r : i{w} to i64\n"
        );
        // The converted parameter is the statement's own value.
        let uses: Vec<&String> = [&a, &b].into_iter().filter(|v| **v != n).collect();
        self.push(d, Ty::I64, t, &uses);
    }

    /// An `scf.index_switch` on an index (a parameter or a computed one)
    /// whose cases compute, read a vector at the switch value (out of
    /// bounds on purpose at times) or yield an outer value.
    fn switch(&mut self, d: String) {
        let (Some(a), Some(b), Some(v)) =
            (self.any(Ty::F64), self.any(Ty::F64), self.any(Ty::VF64))
        else {
            return;
        };
        let i = self.any(Ty::Idx).unwrap_or_else(|| "%n".to_string());
        let c1 = *self.rng.pick(&[0i64, 1, 2]);
        let c2 = c1 + 1 + *self.rng.pick(&[0i64, 1, 3]);
        let t = format!(
            "  {d} = scf.index_switch {i} -> f64\n  case {c1} {{\n    {d}t = arith.addf {a}, {b} : f64\n    scf.yield {d}t : f64\n  }}\n  case {c2} {{\n    {d}g = vec.get {v}, {i} : vec<f64>\n    scf.yield {d}g : f64\n  }}\n  default {{\n    scf.yield {b} : f64\n  }}\n"
        );
        self.push(d, Ty::F64, t, &[&a, &b, &v, &i]);
    }

    /// A variable set under a condition, read back (mem2reg: an `scf.if`
    /// result), maybe read by a map before the set.
    fn var_conditional(&mut self, d: String) {
        let (Some(c), Some(a), Some(b)) = (self.any(Ty::I1), self.any(Ty::F64), self.any(Ty::F64))
        else {
            return;
        };
        let mut t = format!("  {d}v = var.new {a} : f64\n");
        let mut uses = vec![c.clone(), a.clone(), b.clone()];
        let map = self.any(Ty::VF64).filter(|_| self.rng.chance(50));
        if let Some(x) = &map {
            t.push_str(&format!(
                "  {d}m = vec.map ({x}) : vec<f64> -> vec<f64> {{\n  ^bb0({d}e: f64):\n    {d}k = var.get {d}v : var<f64>\n    {d}p = arith.mulf {d}e, {d}k : f64\n    vec.yield {d}p : f64\n  }}\n"
            ));
            uses.push(x.clone());
        }
        t.push_str(&format!(
            "  scf.if {c} {{\n    var.set {d}v, {b} : var<f64>\n    scf.yield\n  }} else {{\n    scf.yield\n  }}\n  {d}g = var.get {d}v : var<f64>\n"
        ));
        if map.is_some() {
            t.push_str(&format!(
                "  {d}s = vec.sum {d}m : vec<f64>\n  {d} = arith.addf {d}s, {d}g : f64\n"
            ));
        } else {
            t.push_str(&format!("  {d} = arith.addf {d}g, {a} : f64\n"));
        }
        let refs: Vec<&String> = uses.iter().collect();
        self.push(d, Ty::F64, t, &refs);
    }

    /// A variable updated in an `scf.for` over a vector (mem2reg: an
    /// iter_arg), with a conditional update inside.
    fn var_loop(&mut self, d: String) {
        let (Some(x), Some(s)) = (self.any(Ty::VF64), self.any(Ty::F64)) else {
            return;
        };
        let op = *self.rng.pick(&["addf", "maxf", "minf"]);
        let t = format!(
            "  {d}v = var.new {s} : f64\n  {d}n = vec.len {x} : vec<f64>\n  {d}z = arith.constant 0 : index\n  {d}o = arith.constant 1 : index\n  scf.for {d}i = {d}z to {d}n step {d}o {{\n    {d}e = vec.get {x}, {d}i : vec<f64>\n    {d}a = var.get {d}v : var<f64>\n    {d}b = arith.{op} {d}a, {d}e : f64\n    {d}l = arith.cmpf olt, {d}e, {s} : f64\n    scf.if {d}l {{\n      var.set {d}v, {d}b : var<f64>\n      scf.yield\n    }} else {{\n      scf.yield\n    }}\n    scf.yield\n  }}\n  {d} = var.get {d}v : var<f64>\n"
        );
        self.push(d, Ty::F64, t, &[&x, &s]);
    }

    /// Records (split-structs): a map yielding a struct, then either a
    /// struct-valued reduce read at one field, or a filter over the
    /// records mapped back to one field; a field may go unread.
    fn records(&mut self, d: String) {
        let (Some(x), Some(s)) = (self.any(Ty::VF64), self.any(Ty::F64)) else {
            return;
        };
        let st = "struct<a: f64, b: f64>";
        let field = *self.rng.pick(&["a", "b"]);
        let mut t = format!(
            "  {d}r = vec.map ({x}) : vec<f64> -> vec<{st}> {{\n  ^bb0({d}e: f64):\n    {d}na = arith.mulf {d}e, {s} : f64\n    {d}nb = arith.addf {d}e, {s} : f64\n    {d}p = struct.new {d}na, {d}nb : {st}\n    vec.yield {d}p : {st}\n  }}\n"
        );
        if self.rng.chance(50) {
            let kind = *self.rng.pick(&["add", "min", "max"]);
            t.push_str(&format!(
                "  {d}i = struct.new {s}, {s} : {st}\n  {d}t = vec.reduce #gen.reduce<{kind}> {d}r, {d}i : vec<{st}>\n  {d} = struct.get {d}t [\"{field}\"] : {st}\n"
            ));
            self.push(d, Ty::F64, t, &[&x, &s]);
        } else {
            t.push_str(&format!(
                "  {d}f = vec.filter {d}r : vec<{st}> {{\n  ^bb0({d}q: {st}):\n    {d}qa = struct.get {d}q [\"a\"] : {st}\n    {d}k = arith.cmpf ogt, {d}qa, {s} : f64\n    vec.yield {d}k : i1\n  }}\n  {d} = vec.map ({d}f) : vec<{st}> -> vec<f64> {{\n  ^bb0({d}g: {st}):\n    {d}gf = struct.get {d}g [\"{field}\"] : {st}\n    vec.yield {d}gf : f64\n  }}\n"
            ));
            self.push(d, Ty::VF64, t, &[&x, &s]);
        }
    }

    /// Two maps over one vector that read a variable (or element 0 of a
    /// buffer) with a write to it between them: horizontal fusion and
    /// code motion must keep each map on its side of the write. The
    /// buffer's store faults on purpose when the vector is empty.
    fn write_between_maps(&mut self, d: String) {
        let (Some(x), Some(s), Some(t)) =
            (self.any(Ty::VF64), self.any(Ty::F64), self.any(Ty::F64))
        else {
            return;
        };
        let var = self.rng.chance(50);
        let (setup, write) = if var {
            (
                format!("  {d}v = var.new {s} : f64\n"),
                format!("  var.set {d}v, {t} : var<f64>\n"),
            )
        } else {
            (
                format!(
                    "  {d}v = arr.from_vec {x} : vec<f64>\n  {d}z = arith.constant 0 : index\n"
                ),
                format!("  arr.store {d}v, {d}z, {t} : arr<f64>\n"),
            )
        };
        let map = |n: &str| {
            let read = if var {
                format!("{d}g{n} = var.get {d}v : var<f64>")
            } else {
                format!("{d}g{n} = arr.load {d}v, {d}z : arr<f64>")
            };
            format!(
                "  {d}{n} = vec.map ({x}) : vec<f64> -> vec<f64> {{\n  ^bb0({d}e{n}: f64):\n    {read}\n    {d}a{n} = arith.addf {d}e{n}, {d}g{n} : f64\n    vec.yield {d}a{n} : f64\n  }}\n"
            )
        };
        let text = format!(
            "{setup}{}{write}{}  {d} = vec.map ({d}m1, {d}m2) : (vec<f64>, vec<f64>) -> vec<f64> {{
  ^bb0({d}p: f64, {d}q: f64):
    {d}w = arith.subf {d}p, {d}q : f64
    vec.yield {d}w : f64
  }}
",
            map("m1"),
            map("m2")
        );
        self.push(d, Ty::VF64, text, &[&x, &s, &t]);
    }

    /// Records through control flow and containers (split-structs of
    /// conditionals): an `scf.if` yielding one of two records, one field a
    /// vector; then a zipWith of a vector of records (a map's) with that
    /// field (unequal lengths fault), read back at one field.
    fn records_branch(&mut self, d: String) {
        let (Some(c), Some(x), Some(s)) = (self.any(Ty::I1), self.any(Ty::VF64), self.any(Ty::F64))
        else {
            return;
        };
        let Some(y) = self.like(Ty::VF64, &x) else {
            return;
        };
        let st = "struct<v: vec<f64>, w: f64>";
        let pt = "struct<a: f64, b: f64>";
        let field = *self.rng.pick(&["a", "b"]);
        let t = format!(
            r#"  {d}k = scf.if {c} -> ({st}) {{
    {d}p = struct.new {x}, {s} : {st}
    scf.yield {d}p : {st}
  }} else {{
    {d}y2 = vec.scale {y}, %half : vec<f64>
    {d}q = struct.new {d}y2, %half : {st}
    scf.yield {d}q : {st}
  }}
  {d}kv = struct.get {d}k ["v"] : {st}
  {d}kw = struct.get {d}k ["w"] : {st}
  {d}r = vec.map ({x}) : vec<f64> -> vec<{pt}> {{
  ^bb0({d}e: f64):
    {d}na = arith.addf {d}e, {d}kw : f64
    {d}p2 = struct.new {d}na, {d}e : {pt}
    vec.yield {d}p2 : {pt}
  }}
  {d} = vec.map ({d}r, {d}kv) : (vec<{pt}>, vec<f64>) -> vec<f64> {{
  ^bb0({d}g: {pt}, {d}h: f64):
    {d}gf = struct.get {d}g ["{field}"] : {pt}
    {d}m = arith.subf {d}gf, {d}h : f64
    vec.yield {d}m : f64
  }}
"#
        );
        self.push(d, Ty::VF64, t, &[&c, &x, &y, &s]);
    }

    /// Buffers through aliases (issue 13): a copy of a vector and a fresh
    /// buffer, a select (or `scf.if` result) that may be either, and a loop
    /// that reads one name, writes through the other and reads again (no
    /// stale forwarding, no store dead while a later read may see it), with
    /// a conditional store; the result is one buffer's contents or a sum.
    fn arr_alias(&mut self, d: String) {
        let (Some(x), Some(c), Some(c2)) = (self.any(Ty::VF64), self.any(Ty::I1), self.any(Ty::I1))
        else {
            return;
        };
        let pick = if self.rng.chance(50) {
            format!("  {d}w = arith.select {c}, {d}p, {d}q : arr<f64>\n")
        } else {
            format!(
                "  {d}w = scf.if {c} -> (arr<f64>) {{\n    scf.yield {d}q : arr<f64>\n  }} else {{\n    scf.yield {d}p : arr<f64>\n  }}\n"
            )
        };
        let read_at = if self.rng.chance(50) {
            format!("{d}i")
        } else {
            format!("{d}r")
        };
        let mut t = format!(
            "  {d}n = vec.len {x} : vec<f64>\n  {d}p = arr.from_vec {x} : vec<f64>\n  {d}q = arr.alloc {d}n : arr<f64>\n{pick}  {d}z = arith.constant 0 : index\n  {d}o = arith.constant 1 : index\n  scf.for {d}i = {d}z to {d}n step {d}o {{\n    {d}e = arr.load {d}p, {d}i : arr<f64>\n    {d}m = arith.subi {d}n, {d}i : index\n    {d}r = arith.subi {d}m, {d}o : index\n    {d}f = arr.load {d}w, {read_at} : arr<f64>\n    {d}g = arith.addf {d}e, {d}f : f64\n    arr.store {d}w, {d}i, {d}g : arr<f64>\n    {d}h = arr.load {d}p, {d}i : arr<f64>\n    scf.if {c2} {{\n      arr.store {d}q, {d}r, {d}h : arr<f64>\n      scf.yield\n    }} else {{\n      scf.yield\n    }}\n    scf.yield\n  }}\n"
        );
        let uses = [&x, &c, &c2];
        if self.rng.chance(50) {
            let which = if self.rng.chance(50) { "p" } else { "q" };
            t.push_str(&format!("  {d} = arr.to_vec {d}{which} : arr<f64>\n"));
            self.push(d, Ty::VF64, t, &uses);
        } else {
            t.push_str(&format!(
                "  {d}vp = arr.to_vec {d}p : arr<f64>\n  {d}vq = arr.to_vec {d}q : arr<f64>\n  {d}sp = vec.sum {d}vp : vec<f64>\n  {d}sq = vec.sum {d}vq : vec<f64>\n  {d} = arith.subf {d}sp, {d}sq : f64\n"
            ));
            self.push(d, Ty::F64, t, &uses);
        }
    }

    /// Two buffers swapped by an `scf.for` (carried values: each pass reads
    /// one and writes the other), `%n` passes; then a read through the
    /// original name, which is either carried buffer.
    fn arr_ping_pong(&mut self, d: String) {
        let (Some(x), Some(s)) = (self.any(Ty::VF64), self.any(Ty::F64)) else {
            return;
        };
        let t = format!(
            "  {d}n = vec.len {x} : vec<f64>\n  {d}a = arr.from_vec {x} : vec<f64>\n  {d}b = arr.alloc {d}n : arr<f64>\n  {d}z = arith.constant 0 : index\n  {d}o = arith.constant 1 : index\n  {d}src, {d}dst = scf.for {d}k = {d}z to %n step {d}o iter_args({d}u = {d}a, {d}v = {d}b) -> (arr<f64>, arr<f64>) {{\n    scf.for {d}i = {d}z to {d}n step {d}o {{\n      {d}e = arr.load {d}u, {d}i : arr<f64>\n      {d}f = arith.mulf {d}e, %half : f64\n      {d}g = arith.addf {d}f, {s} : f64\n      arr.store {d}v, {d}i, {d}g : arr<f64>\n      scf.yield\n    }}\n    {d}l = arr.len {d}a : arr<f64>\n    scf.yield {d}v, {d}u : arr<f64>, arr<f64>\n  }}\n  {d}ra = arr.to_vec {d}a : arr<f64>\n  {d}rs = arr.to_vec {d}src : arr<f64>\n  {d} = vec.map ({d}ra, {d}rs) : (vec<f64>, vec<f64>) -> vec<f64> {{\n  ^bb0({d}p: f64, {d}q: f64):\n    {d}w = arith.subf {d}p, {d}q : f64\n    vec.yield {d}w : f64\n  }}\n"
        );
        self.push(d, Ty::VF64, t, &[&x, &s]);
    }

    /// Matrices: a vector viewed as a column or a row (`mat.from`), its
    /// transpose, a product, then one entry, row 0 or 1 (out of bounds for
    /// short vectors), a matrix-vector product (lengths that may differ), or
    /// rows of the transpose (columns read in place): the sum of each, and
    /// column 0 or 1 (out of bounds for short vectors), or the sums kept as
    /// a vector.
    fn matrices(&mut self, d: String) {
        let (Some(v), Some(w)) = self.pair(Ty::VF64, Ty::VF64) else {
            return;
        };
        let head = format!(
            "  {d}n = \"vec.len\"({v}) : (vec<f64>) -> index\n  {d}one = \"arith.constant\"() {{value = 1 : index}} : () -> index\n"
        );
        let from = |r: &str, c: &str| {
            format!("  {d}m = \"mat.from\"({v}, {r}, {c}) : (vec<f64>, index, index) -> mat<f64>\n  {d}t = \"mat.transpose\"({d}m) : (mat<f64>) -> mat<f64>\n")
        };
        match self.rng.below(7) {
            6 => {
                // Column sums kept as a vector, scaled after the sum: a
                // collect of column reductions that `lower` unrolls and
                // jams (blocks of 64 and 8 columns at lengths 150 and 37).
                let t = format!(
                    "  // jam\n{head}{}  {d}rn = mat.rows {d}t : mat<f64>\n  {d}io = vec.iota {d}rn\n  {d} = vec.map ({d}io) : vec<index> -> vec<f64> {{\n  ^bb0(%i: index):\n    {d}row = mat.row {d}t, %i : mat<f64>\n    {d}rs = vec.sum {d}row : vec<f64>\n    {d}h = arith.mulf {d}rs, %half : f64\n    vec.yield {d}h : f64\n  }}\n",
                    from(&format!("{d}one"), &format!("{d}n"))
                );
                self.push(d, Ty::VF64, t, &[&v]);
            }
            5 => {
                // A map producer read through a reshape, entry by entry
                // (fused at the reads); 0 rows fault unless v is empty.
                let t = format!(
                    "  // reshape\n{head}  {d}y = vec.map ({v}) : vec<f64> -> vec<f64> {{\n  ^bb0({d}e: f64):\n    {d}h = arith.mulf {d}e, %half : f64\n    vec.yield {d}h : f64\n  }}\n  {d}r = arith.mini %n, {d}one : index\n  {d}m = mat.from {d}y, {d}r, {d}n : vec<f64>\n  {d}nr = mat.rows {d}m : mat<f64>\n  {d}nc = mat.cols {d}m : mat<f64>\n  {d}ri = vec.iota {d}nr\n  {d}o = vec.map ({d}ri) : vec<index> -> vec<f64> {{\n  ^bb0(%i: index):\n    {d}ci = vec.iota {d}nc\n    {d}row = vec.map ({d}ci) : vec<index> -> vec<f64> {{\n    ^bb0(%j: index):\n      {d}g = mat.get {d}m, %i, %j : mat<f64>\n      {d}g2 = arith.addf {d}g, {d}g : f64\n      vec.yield {d}g2 : f64\n    }}\n    {d}rs = vec.sum {d}row : vec<f64>\n    vec.yield {d}rs : f64\n  }}\n  {d} = vec.sum {d}o : vec<f64>\n"
                );
                self.push(d, Ty::F64, t, &[&v]);
            }
            4 => {
                let t = format!(
                    "  // columns\n{head}{}  {d}rn = mat.rows {d}t : mat<f64>\n  {d}io = vec.iota {d}rn\n  {d}c = vec.map ({d}io) : vec<index> -> vec<f64> {{\n  ^bb0(%i: index):\n    {d}row = mat.row {d}t, %i : mat<f64>\n    {d}rs = vec.sum {d}row : vec<f64>\n    vec.yield {d}rs : f64\n  }}\n  {d}j = arith.mini %n, {d}one : index\n  {d}r = mat.row {d}t, {d}j : mat<f64>\n  {d}cs = vec.sum {d}c : vec<f64>\n  {d}s = vec.sum {d}r : vec<f64>\n  {d} = arith.addf {d}cs, {d}s : f64\n",
                    from(&format!("{d}one"), &format!("{d}n"))
                );
                self.push(d, Ty::F64, t, &[&v]);
            }
            3 => {
                // An entry of the transpose (read in place after canonicalize),
                // out of bounds when %n >= len(v).
                let t = format!(
                    "{head}{}  {d}z = \"arith.constant\"() {{value = 0 : index}} : () -> index\n  {d} = \"mat.get\"({d}t, {d}z, %n) : (mat<f64>, index, index) -> f64\n",
                    from(&format!("{d}n"), &format!("{d}one"))
                );
                self.push(d, Ty::F64, t, &[&v]);
            }
            0 => {
                let t = format!(
                    "{head}{}  {d}p = \"mat.mul\"({d}t, {d}m) : (mat<f64>, mat<f64>) -> mat<f64>\n  {d}z = \"arith.constant\"() {{value = 0 : index}} : () -> index\n  {d} = \"mat.get\"({d}p, {d}z, {d}z) : (mat<f64>, index, index) -> f64\n",
                    from(&format!("{d}n"), &format!("{d}one"))
                );
                self.push(d, Ty::F64, t, &[&v]);
            }
            1 => {
                let t = format!(
                    "{head}{}  {d}p = \"mat.mul\"({d}m, {d}t) : (mat<f64>, mat<f64>) -> mat<f64>\n  {d}j = \"arith.mini\"(%n, {d}one) : (index, index) -> index\n  {d} = \"mat.row\"({d}p, {d}j) : (mat<f64>, index) -> vec<f64>\n",
                    from(&format!("{d}n"), &format!("{d}one"))
                );
                self.push(d, Ty::VF64, t, &[&v]);
            }
            _ => {
                let t = format!(
                    "{head}{}  {d} = \"mat.matvec\"({d}t, {w}) : (mat<f64>, vec<f64>) -> vec<f64>\n",
                    from(&format!("{d}n"), &format!("{d}one"))
                );
                self.push(d, Ty::VF64, t, &[&v, &w]);
            }
        }
    }

    /// A call of a helper function (`inline` inlines it) on a scalar and
    /// a vector.
    fn calls(&mut self, d: String) {
        let (Some(a), Some(v)) = (self.any(Ty::F64), self.any(Ty::VF64)) else {
            return;
        };
        let t = format!("  {d} = func.call @scaled_sum({a}, {v}) : (f64, vec<f64>) -> f64\n");
        self.push(d, Ty::F64, t, &[&a, &v]);
    }

    /// A call that writes through a buffer it is passed (the buffer
    /// escapes): a read after the call must see the write, a read before
    /// it must not.
    fn call_writes(&mut self, d: String) {
        let (Some(x), Some(s)) = (self.any(Ty::VF64), self.any(Ty::F64)) else {
            return;
        };
        let t = format!(
            "  {d}p = arr.from_vec {x} : vec<f64>\n  {d}z = arith.constant 0 : index\n  {d}a = arr.load {d}p, {d}z : arr<f64>\n  func.call @poke({d}p, {s}) : (arr<f64>, f64) -> ()\n  {d}b = arr.load {d}p, {d}z : arr<f64>\n  {d} = arith.subf {d}b, {d}a : f64\n"
        );
        self.push(d, Ty::F64, t, &[&x, &s]);
    }

    /// A map read at an affine index of another loop's index (`n-1-i`
    /// two ways, `i+1`, `2i`, `2i+1`; out of bounds when the lengths differ), which
    /// `fuse` computes at the read and `lower` versions. Two times in three the
    /// loop over `y` stops where the `i+1`, `2i` and `2i+1` reads would leave
    /// the map (`min(len y, bound)`, as a stencil's loop does); otherwise it
    /// runs over all of `y` and the last reads fault on purpose.
    fn shifted_reads(&mut self, d: String) {
        let (Some(x), Some(y)) = self.pair(Ty::VF64, Ty::VF64) else {
            return;
        };
        let f = *self.rng.pick(FACTORS);
        let (index, bound) = match self.rng.below(5) {
            // `2 i + 1`: a strided read (what loop versioning reads too).
            4 => (
                format!(
                    "{d}two = arith.constant 2 : index\n    {d}i2 = arith.muli %i, {d}two : index\n    {d}j = arith.addi {d}i2, {d}one : index"
                ),
                // i < len m / 2
                Some(format!(
                    "{d}bt = arith.constant 2 : index\n  {d}b = arith.divui {d}mn, {d}bt : index"
                )),
            ),
            0 => (
                format!(
                    "{d}a = arith.subi {d}n, %i : index\n    {d}j = arith.subi {d}a, {d}one : index"
                ),
                None,
            ),
            // `c - i` with `c` outside the loop (what loop versioning reads).
            3 => (format!("{d}j = arith.subi {d}last, %i : index"), None),
            // i < len m - 1 (at least 0)
            1 => (
                format!("{d}j = arith.addi %i, {d}one : index"),
                Some(format!(
                    "{d}bz = arith.constant 0 : index\n  {d}bs = arith.subi {d}mn, {d}one : index\n  {d}b = arith.maxsi {d}bs, {d}bz : index"
                )),
            ),
            // i < ceil(len m / 2)
            _ => (
                format!("{d}two = arith.constant 2 : index\n    {d}j = arith.muli %i, {d}two : index"),
                Some(format!(
                    "{d}bt = arith.constant 2 : index\n  {d}b = arith.ceildivui {d}mn, {d}bt : index"
                )),
            ),
        };
        let (trips, count) = match bound.filter(|_| self.rng.below(3) != 0) {
            Some(b) => (
                format!(
                    "  {d}mn = vec.len {d}m : vec<f64>\n  {b}\n  {d}t = arith.minsi {d}n, {d}b : index\n"
                ),
                format!("{d}t"),
            ),
            None => (String::new(), format!("{d}n")),
        };
        let t = format!(
            "  {d}m = vec.map ({x}) : vec<f64> -> vec<f64> {{\n  ^bb0(%e: f64):\n    {d}f = arith.constant {f} : f64\n    {d}p = arith.mulf %e, {d}f : f64\n    vec.yield {d}p : f64\n  }}\n  {d}n = vec.len {y} : vec<f64>\n  {d}one = arith.constant 1 : index\n  {d}last = arith.subi {d}n, {d}one : index\n{trips}  {d} = gen.loop ({count}) [#gen.collect] : index -> vec<f64> {{\n  ^bb0(%i: index, %h: !gen.collect<f64>):\n    {index}\n    {d}v = vec.get {d}m, {d}j : vec<f64>\n    {d}w = vec.get {y}, %i : vec<f64>\n    {d}s = arith.addf {d}v, {d}w : f64\n    gen.emit %h, {d}s : !gen.collect<f64>\n    gen.end\n  }}\n"
        );
        self.push(d, Ty::VF64, t, &[&x, &y]);
    }

    /// A 2-D stencil over a flat index (issue 44, item 3; what `lower`
    /// turns into a row/column nest, splits at the clamps' edges and
    /// versions on the reads' bounds): `x`'s first `rows * cols` elements
    /// as a matrix of `cols` columns (1 to 4, or a divisor computed from an
    /// index input that may be zero or negative), each cell the sum of
    /// two or three neighbours at `row + a`, `col + b` (`a`, `b` in -2..2),
    /// each index clamped by `maxsi` and/or `minsi` in either operand order,
    /// or not at all (then the read may fault, and must fault first at the
    /// same cell).
    fn stencil(&mut self, d: String) {
        let Some(x) = self.any(Ty::VF64) else { return };
        let cols = match self.any(Ty::Idx).filter(|_| self.rng.chance(25)) {
            Some(i) => format!("{d}cols = arith.remsi {i}, {d}five : index"),
            None => format!("{d}cols = arith.constant {} : index", 1 + self.rng.below(4)),
        };
        let mut t = format!(
            "  // stencil\n  {d}n = vec.len {x} : vec<f64>\n  {d}zero = arith.constant 0 : index\n  {d}one = arith.constant 1 : index\n  {d}five = arith.constant 5 : index\n  {cols}\n  {d}rows = arith.divsi {d}n, {d}cols : index\n  {d}cnt = arith.muli {d}rows, {d}cols : index\n  {d}ks = vec.iota {d}cnt\n  {d}flat = vec.map ({d}ks) : vec<index> -> vec<f64> {{\n  ^bb0({d}k: index):\n    {d}fv = vec.get {x}, {d}k : vec<f64>\n    vec.yield {d}fv : f64\n  }}\n  {d}m = mat.from {d}flat, {d}rows, {d}cols : vec<f64>\n  {d}rmax = arith.subi {d}rows, {d}one : index\n  {d}cmax = arith.subi {d}cols, {d}one : index\n  {d} = vec.map ({d}ks) : vec<index> -> vec<f64> {{\n  ^bb0({d}k: index):\n    {d}r = arith.divsi {d}k, {d}cols : index\n    {d}c = arith.remsi {d}k, {d}cols : index\n    {d}acc0 = arith.constant 0.0 : f64\n"
        );
        let reads = 2 + self.rng.below(2);
        for j in 0..reads {
            let mut idx = Vec::new();
            for (v, max) in [("r", "rmax"), ("c", "cmax")] {
                let a = self.rng.below(5) as i64 - 2;
                let name = format!("{d}i{j}{v}");
                let mut cur = if a == 0 {
                    format!("{d}{v}")
                } else {
                    let op = if a > 0 { "addi" } else { "subi" };
                    t += &format!(
                        "    {name}a = arith.constant {} : index\n    {name}s = arith.{op} {d}{v}, {name}a : index\n",
                        a.abs()
                    );
                    format!("{name}s")
                };
                // Clamped below and/or above (all but rarely), either order.
                let (lo, hi) = match self.rng.below(16) {
                    0 => (false, false),
                    1 => (true, false),
                    2 => (false, true),
                    _ => (true, true),
                };
                let mut steps = vec![];
                if lo {
                    steps.push(("maxsi", format!("{d}zero")));
                }
                if hi {
                    steps.push(("minsi", format!("{d}{max}")));
                }
                if self.rng.chance(50) {
                    steps.reverse();
                }
                for (k, (op, bound)) in steps.into_iter().enumerate() {
                    let (p, q) = if self.rng.chance(50) {
                        (cur.clone(), bound)
                    } else {
                        (bound, cur.clone())
                    };
                    t += &format!("    {name}k{k} = arith.{op} {p}, {q} : index\n");
                    cur = format!("{name}k{k}");
                }
                idx.push(cur);
            }
            t += &format!(
                "    {d}g{j} = mat.get {d}m, {}, {} : mat<f64>\n    {d}acc{} = arith.addf {d}acc{j}, {d}g{j} : f64\n",
                idx[0],
                idx[1],
                j + 1
            );
        }
        t += &format!("    vec.yield {d}acc{reads} : f64\n  }}\n");
        self.push(d, Ty::VF64, t, &[&x]);
    }

    /// A check or read that is the same in every iteration of a map (which
    /// code motion hoists under the guard "the loop runs"): a read at the
    /// fixed index `%n` (out of bounds on purpose, maybe after a read that
    /// faults in some iteration and must fault first), the zipWith of each
    /// row of a matrix with a vector (its size check), or a division by
    /// `%n` (zero on purpose).
    fn invariant_checks(&mut self, d: String) {
        let (Some(x), Some(w)) = self.pair(Ty::VF64, Ty::VF64) else {
            return;
        };
        let (t, ty, uses) = match self.rng.below(3) {
            0 => {
                let (pre, add) = if self.rng.chance(50) {
                    (
                        format!(
                            "    {d}i0 = arith.fptosi %e : f64 to index
    {d}v0 = vec.get {w}, {d}i0 : vec<f64>
"
                        ),
                        format!(
                            "    {d}q = arith.addf {d}p, {d}v0 : f64
"
                        ),
                    )
                } else {
                    (
                        String::new(),
                        format!(
                            "    {d}q = arith.addf {d}p, %e : f64
"
                        ),
                    )
                };
                (
                    format!(
                        "  // guarded
  {d} = vec.map ({x}) : vec<f64> -> vec<f64> {{
  ^bb0(%e: f64):
{pre}    {d}r = vec.get {w}, %n : vec<f64>
    {d}p = arith.mulf %e, {d}r : f64
{add}    vec.yield {d}q : f64
  }}
"
                    ),
                    Ty::VF64,
                    vec![x, w],
                )
            }
            1 => (
                format!(
                    "  // guarded
  {d}nv = vec.len {x} : vec<f64>
  {d}one = arith.constant 1 : index
  {d}m = mat.from {x}, {d}one, {d}nv : vec<f64>
  {d}rn = mat.rows {d}m : mat<f64>
  {d}io = vec.iota {d}rn
  {d} = vec.map ({d}io) : vec<index> -> vec<f64> {{
  ^bb0(%i: index):
    {d}row = mat.row {d}m, %i : mat<f64>
    {d}s = vec.add {d}row, {w} : vec<f64>
    {d}t = vec.sum {d}s : vec<f64>
    vec.yield {d}t : f64
  }}
"
                ),
                Ty::VF64,
                vec![x, w],
            ),
            _ => {
                let Some(k) = self.any(Ty::VI64) else { return };
                (
                    format!(
                        "  // guarded
  {d} = vec.map ({k}) : vec<i64> -> vec<i64> {{
  ^bb0(%e: i64):
    {d}c = arith.constant 12 : i64
    {d}nn = arith.index_cast %n : index to i64
    {d}q = arith.divsi {d}c, {d}nn : i64
    {d}r = arith.addi %e, {d}q : i64
    vec.yield {d}r : i64
  }}
"
                    ),
                    Ty::VI64,
                    vec![k],
                )
            }
        };
        let uses: Vec<&String> = uses.iter().collect();
        self.push(d, ty, t, &uses);
    }

    /// A vector whose size is computed (`%n - c`, negative for small `%n`:
    /// a fault on purpose), filled and scaled.
    fn computed_size(&mut self, d: String) {
        let Some(s) = self.any(Ty::F64) else { return };
        let c = *self.rng.pick(&["1", "3"]);
        let t = format!(
            "  {d}c = arith.constant {c} : index\n  {d}k = arith.subi %n, {d}c : index\n  {d}f = vec.fill {d}k, {s} : vec<f64>\n  {d} = vec.scale {d}f, %half : vec<f64>\n"
        );
        self.push(d, Ty::VF64, t, &[&s]);
    }

    /// GroupBy then a reduce of each group (what bucket fusion turns into
    /// one bucket-reduce): per distinct `k[i]`, the sum or max of a map of
    /// its `x[i]`, from the identity or not (a zip: unequal lengths fault).
    fn group_reduce(&mut self, d: String) {
        let (Some(kv), Some(x)) = self.pair(Ty::VI64, Ty::VF64) else {
            return;
        };
        let (kind, init) = *self.rng.pick(&[
            ("add", "0.0"),
            ("add", "1.0"),
            ("max", "0xFFF0000000000000"),
            ("max", "0.0"),
        ]);
        let t = format!(
            r#"  {d}n = vec.len {kv} : vec<i64>
  {d}k, {d}g = gen.loop ({d}n) [#gen.bucket<#gen.collect>] : index -> (vec<i64>, vec<vec<f64>>) {{
  ^bb0({d}x: index, {d}b: !gen.bucket<i64, f64>):
    {d}key = vec.get {kv}, {d}x : vec<i64>
    {d}val = vec.get {x}, {d}x : vec<f64>
    gen.emit {d}b, {d}key, {d}val : !gen.bucket<i64, f64>
    gen.end
  }}
  {d}m = vec.len {d}g : vec<vec<f64>>
  {d}i = arith.constant {init} : f64
  {d} = gen.loop ({d}m) [#gen.collect] : index -> vec<f64> {{
  ^bb0({d}j: index, {d}c: !gen.collect<f64>):
    {d}grp = vec.get {d}g, {d}j : vec<vec<f64>>
    {d}h = vec.scale {d}grp, %half : vec<f64>
    {d}s = vec.reduce #gen.reduce<{kind}> {d}h, {d}i : vec<f64>
    gen.emit {d}c, {d}s : !gen.collect<f64>
    gen.end
  }}
"#
        );
        self.push(d, Ty::VF64, t, &[&kv, &x]);
    }

    /// A second result `second` of the statement that defines `first`
    /// (dropping `first` drops it).
    fn push_second(&mut self, first: &str, second: String, ty: Ty) {
        self.stmts.push(Stmt {
            text: String::new(),
            def: second.clone(),
            ty,
            uses: vec![first.to_string()],
        });
        self.pool.push((second, ty));
    }

    /// `gen.loop` over a vector: a dense collect of a scaled element and a
    /// reduce of the elements that pass a filter (its emit under `scf.if`).
    fn loop_collect_reduce(&mut self, d: String) {
        let (Some(v), Some(cap), Some(init)) =
            (self.any(Ty::VF64), self.any(Ty::F64), self.any(Ty::F64))
        else {
            return;
        };
        let k = *self.rng.pick(&["add", "max", "min"]);
        let f = *self.rng.pick(FACTORS);
        let t = format!(
            r#"  {d}n = "vec.len"({v}) : (vec<f64>) -> index
  {d}, {d}r = "gen.loop"({d}n, {init}) ({{
  ^bb0(%i: index, %g0: !gen.collect<f64>, %g1: !gen.reduce<f64>):
    %e = "vec.get"({v}, %i) : (vec<f64>, index) -> f64
    %f = "arith.constant"() {{value = {f} : f64}} : () -> f64
    %m = "arith.mulf"(%e, %f) : (f64, f64) -> f64
    "gen.emit"(%g0, %m) : (!gen.collect<f64>, f64) -> ()
    %l = "arith.cmpf"(%e, {cap}) {{predicate = "olt"}} : (f64, f64) -> i1
    "scf.if"(%l) ({{
      "gen.emit"(%g1, %e) : (!gen.reduce<f64>, f64) -> ()
      "scf.yield"() : () -> ()
    }}, {{
      "scf.yield"() : () -> ()
    }}) : (i1) -> ()
    "gen.end"() : () -> ()
  }}) {{gens = [#gen.collect, #gen.reduce<{k}>]}} : (index, f64) -> (vec<f64>, f64)
"#
        );
        self.push(d.clone(), Ty::VF64, t, &[&v, &cap, &init]);
        self.push_second(&d, format!("{d}r"), Ty::F64);
    }

    /// `scf.while` as a search: the index of the first element of a vector
    /// not above a captured scalar (its length if none), and the sum of the
    /// elements before it. The condition reads `x[i]` only under `i < n`
    /// (an `scf.if` in the before region); the after region reads it again,
    /// guarded only by the condition's result.
    fn while_find(&mut self, d: String) {
        let (Some(x), Some(cap)) = (self.any(Ty::VF64), self.any(Ty::F64)) else {
            return;
        };
        let t = format!(
            r#"  {d}n = "vec.len"({x}) : (vec<f64>) -> index
  {d}z = "arith.constant"() {{value = 0 : index}} : () -> index
  {d}s0 = "arith.constant"() {{value = 0.0 : f64}} : () -> f64
  {d}w, {d} = "scf.while"({d}z, {d}s0) ({{
  ^bb0({d}a: index, {d}b: f64):
    {d}in = "arith.cmpi"({d}a, {d}n) {{predicate = "slt"}} : (index, index) -> i1
    {d}go = "scf.if"({d}in) ({{
      {d}e = "vec.get"({x}, {d}a) : (vec<f64>, index) -> f64
      {d}gt = "arith.cmpf"({d}e, {cap}) {{predicate = "ogt"}} : (f64, f64) -> i1
      "scf.yield"({d}gt) : (i1) -> ()
    }}, {{
      "scf.yield"({d}in) : (i1) -> ()
    }}) : (i1) -> i1
    "scf.condition"({d}go, {d}a, {d}b) : (i1, index, f64) -> ()
  }}, {{
  ^bb0({d}c: index, {d}t: f64):
    {d}f = "vec.get"({x}, {d}c) : (vec<f64>, index) -> f64
    {d}u = "arith.addf"({d}t, {d}f) : (f64, f64) -> f64
    {d}one = "arith.constant"() {{value = 1 : index}} : () -> index
    {d}k = "arith.addi"({d}c, {d}one) : (index, index) -> index
    "scf.yield"({d}k, {d}u) : (index, f64) -> ()
  }}) : (index, f64) -> (index, f64)
"#
        );
        self.push(d.clone(), Ty::F64, t, &[&x, &cap]);
        self.push_second(&d, format!("{d}w"), Ty::Idx);
    }

    /// `vec.mul` of a vector and signs and powers of two made from another
    /// (`-0.5` where its element is negative, else `2`), so products stay
    /// exact; vectors of different lengths fault on purpose.
    fn scaled_product(&mut self, d: String) {
        let (Some(a), Some(b)) = self.pair(Ty::VF64, Ty::VF64) else {
            return;
        };
        let t = format!(
            r#"  {d}p = "vec.map"({b}) ({{
  ^bb0(%e: f64):
    %z = "arith.constant"() {{value = 0.0 : f64}} : () -> f64
    %l = "arith.cmpf"(%e, %z) {{predicate = "olt"}} : (f64, f64) -> i1
    %h = "arith.constant"() {{value = -0.5 : f64}} : () -> f64
    %t = "arith.constant"() {{value = 2.0 : f64}} : () -> f64
    %m = "arith.select"(%l, %h, %t) : (i1, f64, f64) -> f64
    "vec.yield"(%m) : (f64) -> ()
  }}) : (vec<f64>) -> vec<f64>
  {d} = "vec.mul"({a}, {d}p) : (vec<f64>, vec<f64>) -> vec<f64>
"#
        );
        self.push(d, Ty::VF64, t, &[&a, &b]);
    }

    /// A variable updated in an `scf.while` whose condition reads it: add
    /// the elements of a vector while the running sum stays at most a
    /// captured scalar (mem2reg turns the variable into a loop-carried
    /// value of both regions).
    fn var_while(&mut self, d: String) {
        let (Some(x), Some(cap), Some(s)) =
            (self.any(Ty::VF64), self.any(Ty::F64), self.any(Ty::F64))
        else {
            return;
        };
        let t = format!(
            r#"  {d}v = var.new {s} : f64
  {d}n = vec.len {x} : vec<f64>
  {d}z = arith.constant 0 : index
  {d}w = scf.while ({d}a = {d}z) : (index) -> index {{
    {d}in = arith.cmpi slt, {d}a, {d}n : index
    {d}cur = var.get {d}v : var<f64>
    {d}le = arith.cmpf ole, {d}cur, {cap} : f64
    {d}go = arith.andi {d}in, {d}le : i1
    scf.condition({d}go) {d}a : index
  }} do {{
  ^bb0({d}c: index):
    {d}e = vec.get {x}, {d}c : vec<f64>
    {d}o = var.get {d}v : var<f64>
    {d}u = arith.addf {d}o, {d}e : f64
    var.set {d}v, {d}u : var<f64>
    {d}one = arith.constant 1 : index
    {d}k = arith.addi {d}c, {d}one : index
    scf.yield {d}k : index
  }}
  {d} = var.get {d}v : var<f64>
"#
        );
        self.push(d.clone(), Ty::F64, t, &[&x, &cap, &s]);
        self.push_second(&d, format!("{d}w"), Ty::Idx);
    }

    /// A map whose body calls a helper that sums a whole vector (after
    /// `inline`, a loop nested in the map's).
    fn call_in_map(&mut self, d: String) {
        let (Some(x), Some(v)) = (self.any(Ty::VF64), self.any(Ty::VF64)) else {
            return;
        };
        let t = format!(
            r#"  {d} = vec.map ({x}) : vec<f64> -> vec<f64> {{
  ^bb0({d}e: f64):
    {d}c = func.call @scaled_sum({d}e, {v}) : (f64, vec<f64>) -> f64
    {d}h = arith.mulf {d}c, %half : f64
    vec.yield {d}h : f64
  }}
"#
        );
        self.push(d, Ty::VF64, t, &[&x, &v]);
    }

    /// An `scf.for` of `%n` iterations (none when `%n <= 0`) whose body
    /// holds a map and a sum that are the same in every iteration (what
    /// code motion hoists out of the loop, under the guard "the loop
    /// runs"), the map reading one element of another vector at a fixed
    /// index (out of bounds on purpose), then a read at the loop's index.
    fn for_invariant_map(&mut self, d: String) {
        let (Some(x), Some(w), Some(i)) =
            (self.any(Ty::VF64), self.any(Ty::VF64), self.any(Ty::Idx))
        else {
            return;
        };
        let t = format!(
            r#"  // for-invariant
  {d}z = arith.constant 0 : index
  {d}one = arith.constant 1 : index
  {d}a0 = arith.constant 0.0 : f64
  {d} = scf.for {d}k = {d}z to %n step {d}one iter_args({d}acc = {d}a0) -> (f64) {{
    {d}m = vec.map ({x}) : vec<f64> -> vec<f64> {{
    ^bb0({d}e: f64):
      {d}r = vec.get {w}, {i} : vec<f64>
      {d}p = arith.addf {d}e, {d}r : f64
      vec.yield {d}p : f64
    }}
    {d}s = vec.sum {d}m : vec<f64>
    {d}g = vec.get {x}, {d}k : vec<f64>
    {d}t = arith.addf {d}s, {d}g : f64
    {d}u = arith.addf {d}acc, {d}t : f64
    scf.yield {d}u : f64
  }}
"#
        );
        self.push(d, Ty::F64, t, &[&x, &w, &i]);
    }

    /// One `gen.loop` with three generators and its emits split by a filter:
    /// a scan of the elements above a captured scalar (from an initial
    /// value), a bucket reduce of the same elements by key, and a collect
    /// of the others (a zip of keys and values: unequal lengths fault).
    fn loop_three_generators(&mut self, d: String) {
        let (Some(kv), Some(x)) = self.pair(Ty::VI64, Ty::VF64) else {
            return;
        };
        let (Some(cap), Some(init)) = (self.any(Ty::F64), self.any(Ty::F64)) else {
            return;
        };
        let sk = *self.rng.pick(&["add", "max", "min"]);
        let bk = *self.rng.pick(&["add", "max", "min"]);
        let t = format!(
            r#"  {d}n = vec.len {kv} : vec<i64>
  {d}r:4 = gen.loop ({d}n, {init}) [#gen.scan<{sk}>, #gen.bucket<#gen.reduce<{bk}>>, #gen.collect] : (index, f64) -> (vec<f64>, vec<i64>, vec<f64>, vec<f64>) {{
  ^bb0({d}i: index, {d}s: !gen.scan<f64>, {d}b: !gen.bucket<i64, f64>, {d}c: !gen.collect<f64>):
    {d}key = vec.get {kv}, {d}i : vec<i64>
    {d}val = vec.get {x}, {d}i : vec<f64>
    {d}p = arith.cmpf ogt, {d}val, {cap} : f64
    scf.if {d}p {{
      gen.emit {d}s, {d}val : !gen.scan<f64>
      gen.emit {d}b, {d}key, {d}val : !gen.bucket<i64, f64>
      scf.yield
    }} else {{
      gen.emit {d}c, {d}val : !gen.collect<f64>
      scf.yield
    }}
    gen.end
  }}
  {d}ss = vec.sum {d}r#0 : vec<f64>
  {d}bs = vec.sum {d}r#2 : vec<f64>
  {d}t = arith.addf {d}ss, {d}bs : f64
  {d}k = vec.len {d}r#1 : vec<i64>
  {d} = vec.scale {d}r#3, %half : vec<f64>
"#
        );
        self.push(d.clone(), Ty::VF64, t, &[&kv, &x, &cap, &init]);
        self.push_second(&d, format!("{d}t"), Ty::F64);
        self.push_second(&d, format!("{d}k"), Ty::Idx);
    }

    /// flatMap: for each `k[i]`, a nested loop emits `10 * i + j` for `j <
    /// clamp(k[i], 0, 16)` to the outer collect (the cap keeps the huge
    /// values of unsigned divisions from asking for billions of elements).
    fn loop_flatmap(&mut self, d: String) {
        let Some(v) = self.any(Ty::VI64) else { return };
        let t = format!(
            r#"  {d}n = "vec.len"({v}) : (vec<i64>) -> index
  {d} = "gen.loop"({d}n) ({{
  ^bb0(%i: index, %g: !gen.collect<i64>):
    %e = "vec.get"({v}, %i) : (vec<i64>, index) -> i64
    %z = "arith.constant"() {{value = 0 : i64}} : () -> i64
    %p0 = "arith.maxi"(%e, %z) : (i64, i64) -> i64
    %cap = "arith.constant"() {{value = 16 : i64}} : () -> i64
    %p = "arith.mini"(%p0, %cap) : (i64, i64) -> i64
    %m = "arith.index_cast"(%p) : (i64) -> index
    %ten = "arith.constant"() {{value = 10 : index}} : () -> index
    %b = "arith.muli"(%i, %ten) : (index, index) -> index
    "gen.loop"(%m) ({{
    ^bb0(%j: index):
      %sm = "arith.addi"(%b, %j) : (index, index) -> index
      %w = "arith.index_cast"(%sm) : (index) -> i64
      "gen.emit"(%g, %w) : (!gen.collect<i64>, i64) -> ()
      "gen.end"() : () -> ()
    }}) {{gens = []}} : (index) -> ()
    "gen.end"() : () -> ()
  }}) {{gens = [#gen.collect]}} : (index) -> vec<i64>
"#
        );
        self.push(d, Ty::VI64, t, &[&v]);
    }

    /// Bucket: per distinct `k[i]` (first-seen order), the sum of `x[i]`
    /// (a zip: unequal lengths fault).
    fn loop_bucket(&mut self, d: String) {
        let (Some(kv), Some(x)) = self.pair(Ty::VI64, Ty::VF64) else {
            return;
        };
        let t = format!(
            r#"  {d}n = "vec.len"({kv}) : (vec<i64>) -> index
  {d}, {d}s = "gen.loop"({d}n) ({{
  ^bb0(%i: index, %b: !gen.bucket<i64, f64>):
    %key = "vec.get"({kv}, %i) : (vec<i64>, index) -> i64
    %val = "vec.get"({x}, %i) : (vec<f64>, index) -> f64
    "gen.emit"(%b, %key, %val) : (!gen.bucket<i64, f64>, i64, f64) -> ()
    "gen.end"() : () -> ()
  }}) {{gens = [#gen.bucket<#gen.reduce<add>>]}} : (index) -> (vec<i64>, vec<f64>)
"#
        );
        self.push(d.clone(), Ty::VI64, t, &[&kv, &x]);
        self.push_second(&d, format!("{d}s"), Ty::VF64);
    }

    /// A loop whose body reduces a whole vector per index (a nested loop
    /// that runs sequentially in a GPU thread).
    fn loop_nested_reduce(&mut self, d: String) {
        let (Some(a), Some(b)) = self.pair(Ty::VF64, Ty::VF64) else {
            return;
        };
        let t = format!(
            r#"  {d}n = "vec.len"({a}) : (vec<f64>) -> index
  {d}m = "vec.len"({b}) : (vec<f64>) -> index
  {d} = "gen.loop"({d}n) ({{
  ^bb0(%i: index, %g: !gen.collect<f64>):
    %e = "vec.get"({a}, %i) : (vec<f64>, index) -> f64
    %r = "gen.loop"({d}m) ({{
    ^bb0(%j: index, %h: !gen.reduce<f64>):
      %w = "vec.get"({b}, %j) : (vec<f64>, index) -> f64
      %q = "arith.maxf"(%w, %e) : (f64, f64) -> f64
      "gen.emit"(%h, %q) : (!gen.reduce<f64>, f64) -> ()
      "gen.end"() : () -> ()
    }}) {{gens = [#gen.reduce<add>]}} : (index) -> f64
    "gen.emit"(%g, %r) : (!gen.collect<f64>, f64) -> ()
    "gen.end"() : () -> ()
  }}) {{gens = [#gen.collect]}} : (index) -> vec<f64>
"#
        );
        self.push(d, Ty::VF64, t, &[&a, &b]);
    }
}

/// How the ops of one statement are written (issue 43, item 6): all in the
/// custom form, all in the generic form, or each op either way at random.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Forms {
    Custom,
    Generic,
    Mixed,
}

/// `T` for one type, `(A, B)` for several, `()` for none.
fn tys(ts: &[&str]) -> String {
    if ts.len() == 1 {
        ts[0].to_string()
    } else {
        format!("({})", ts.join(", "))
    }
}

/// `a, b = ` for results `a` and `b`; nothing without results.
fn lhs(res: &[&str]) -> String {
    if res.is_empty() {
        String::new()
    } else {
        format!("{} = ", res.join(", "))
    }
}

/// The values, and the types, of `(value, type)` pairs, comma-separated.
fn names_types(xs: &[(&str, &str)]) -> (String, String) {
    let vs: Vec<&str> = xs.iter().map(|x| x.0).collect();
    let ts: Vec<&str> = xs.iter().map(|x| x.1).collect();
    (vs.join(", "), ts.join(", "))
}

/// A collect with several emit sites ([`Gen::multi_collect`]) and what a
/// statement that uses it needs.
struct Collect {
    /// The lines that compute it (its size, maybe constants, the loop).
    text: String,
    /// The collect's vector, `Ty::VF64` or `Ty::VI64`.
    res: String,
    ty: Ty,
    /// The result of a reduce generator of the same loop, where it has one.
    red: Option<String>,
    /// The values of the pool it reads.
    uses: Vec<String>,
    /// The loop's size (a value defined before the loop), and the vector
    /// of the collect's type whose length it is, where the body reads one.
    size: String,
    src: Option<String>,
    /// How many elements every iteration emits, where that is fixed (the
    /// vector then has `size * per` elements).
    per: Option<usize>,
}

/// Printing ops in either form (issue 43): the generic form
/// `"dialect.op"(...) {...} : (...) -> ...` or the custom one, per
/// [`Gen::forms`]. Every method returns whole lines indented by `ind`.
impl Gen {
    /// Chooses how the ops of the next statement are written.
    fn pick_forms(&mut self) {
        self.forms = *self
            .rng
            .pick(&[Forms::Custom, Forms::Generic, Forms::Mixed]);
    }

    /// Whether the next op is written in the generic form.
    fn generic(&mut self) -> bool {
        match self.forms {
            Forms::Custom => false,
            Forms::Generic => true,
            Forms::Mixed => self.rng.chance(50),
        }
    }

    /// `res = name a, b : cty`, or `res = "name"(a, b) : (A, B) -> out`
    /// (`args`: values with their types; `res` empty and `out` `()` for an
    /// op without results).
    fn op(
        &mut self,
        ind: &str,
        res: &str,
        name: &str,
        args: &[(&str, &str)],
        out: &str,
        cty: &str,
    ) -> String {
        let l = if res.is_empty() {
            String::new()
        } else {
            format!("{res} = ")
        };
        let (vs, ts) = names_types(args);
        if self.generic() {
            format!("{ind}{l}\"{name}\"({vs}) : ({ts}) -> {out}\n")
        } else {
            format!("{ind}{l}{name} {vs} : {cty}\n")
        }
    }

    /// `res = arith.constant value : ty` (`true`/`false` for `i1`).
    fn constant(&mut self, ind: &str, res: &str, value: &str, ty: &str) -> String {
        let typed = if ty == "i1" {
            value.to_string()
        } else {
            format!("{value} : {ty}")
        };
        if self.generic() {
            format!("{ind}{res} = \"arith.constant\"() {{value = {typed}}} : () -> {ty}\n")
        } else {
            format!("{ind}{res} = arith.constant {typed}\n")
        }
    }

    /// `res = arith.cmpi pred, a, b : ty` (`op` is `cmpi` or `cmpf`).
    fn cmp(
        &mut self,
        ind: &str,
        res: &str,
        op: &str,
        pred: &str,
        ab: [&str; 2],
        ty: &str,
    ) -> String {
        let [a, b] = ab;
        if self.generic() {
            format!(
                "{ind}{res} = \"arith.{op}\"({a}, {b}) {{predicate = \"{pred}\"}} : ({ty}, {ty}) -> i1\n"
            )
        } else {
            format!("{ind}{res} = arith.{op} {pred}, {a}, {b} : {ty}\n")
        }
    }

    /// An arithmetic op of two operands of type `ty`.
    fn bin(&mut self, ind: &str, res: &str, op: &str, ab: [&str; 2], ty: &str) -> String {
        self.op(
            ind,
            res,
            &format!("arith.{op}"),
            &[(ab[0], ty), (ab[1], ty)],
            ty,
            ty,
        )
    }

    /// `scf.yield` of `vals` (values with their types).
    fn scf_yield(&mut self, ind: &str, vals: &[(&str, &str)]) -> String {
        let (vs, ts) = names_types(vals);
        if self.generic() {
            format!("{ind}\"scf.yield\"({vs}) : ({ts}) -> ()\n")
        } else if vals.is_empty() {
            format!("{ind}scf.yield\n")
        } else {
            format!("{ind}scf.yield {vs} : {ts}\n")
        }
    }

    /// `gen.emit h, x : hty`.
    fn emit(&mut self, ind: &str, h: &str, hty: &str, x: &str, xty: &str) -> String {
        self.op(ind, "", "gen.emit", &[(h, hty), (x, xty)], "()", hty)
    }

    /// `func.call @f(args)` with results `res` of types `outs`.
    fn call(
        &mut self,
        ind: &str,
        res: &str,
        f: &str,
        args: &[(&str, &str)],
        outs: &[&str],
    ) -> String {
        let (vs, ts) = names_types(args);
        let o = tys(outs);
        if self.generic() {
            format!("{ind}{res} = \"func.call\"({vs}) {{callee = @{f}}} : ({ts}) -> {o}\n")
        } else {
            format!("{ind}{res} = func.call @{f}({vs}) : ({ts}) -> {o}\n")
        }
    }

    /// `scf.if c` with results `res` of types `outs`, whose regions are the
    /// lines `then` and `els` (each ending in its `scf.yield`).
    fn scf_if(
        &mut self,
        ind: &str,
        res: &[&str],
        c: &str,
        outs: &[&str],
        then: &str,
        els: &str,
    ) -> String {
        let l = lhs(res);
        if self.generic() {
            format!(
                "{ind}{l}\"scf.if\"({c}) ({{\n{then}{ind}}}, {{\n{els}{ind}}}) : (i1) -> {}\n",
                tys(outs)
            )
        } else if outs.is_empty() {
            format!("{ind}scf.if {c} {{\n{then}{ind}}} else {{\n{els}{ind}}}\n")
        } else {
            format!(
                "{ind}{l}scf.if {c} -> ({}) {{\n{then}{ind}}} else {{\n{els}{ind}}}\n",
                outs.join(", ")
            )
        }
    }

    /// A `gen.loop` over `operands` (the size, then any inits) with
    /// generators `gens`, block arguments `args` (the index, then the
    /// handles), body lines `body` (without its `gen.end`) and results `res`
    /// of types `outs`.
    #[allow(clippy::too_many_arguments)]
    fn gen_loop(
        &mut self,
        ind: &str,
        res: &[&str],
        operands: &[(&str, &str)],
        gens: &[&str],
        args: &[(&str, &str)],
        body: &str,
        outs: &[&str],
    ) -> String {
        let l = lhs(res);
        let (vs, ts) = names_types(operands);
        let a: Vec<String> = args.iter().map(|(n, t)| format!("{n}: {t}")).collect();
        let a = a.join(", ");
        let g = gens.join(", ");
        let inner = format!("{ind}  ");
        if self.generic() {
            let end = if self.generic() {
                format!("{inner}\"gen.end\"() : () -> ()\n")
            } else {
                format!("{inner}gen.end\n")
            };
            format!(
                "{ind}{l}\"gen.loop\"({vs}) ({{\n{ind}^bb0({a}):\n{body}{end}{ind}}}) {{gens = [{g}]}} : ({ts}) -> {}\n",
                tys(outs)
            )
        } else {
            let ts: Vec<&str> = operands.iter().map(|x| x.1).collect();
            format!(
                "{ind}{l}gen.loop ({vs}) [{g}] : {} -> {} {{\n{ind}^bb0({a}):\n{body}{inner}gen.end\n{ind}}}\n",
                tys(&ts),
                tys(outs)
            )
        }
    }

    /// An `scf.for` from `bounds` (lower, upper, step) with iter_args
    /// `iters` (block argument, init, type), body lines `body` (ending in
    /// its `scf.yield`) and results `res`.
    fn scf_for(
        &mut self,
        ind: &str,
        res: &[&str],
        iv: &str,
        bounds: [&str; 3],
        iters: &[(&str, &str, &str)],
        body: &str,
    ) -> String {
        let l = lhs(res);
        let [lb, ub, st] = bounds;
        let inits: Vec<&str> = iters.iter().map(|x| x.1).collect();
        let ts: Vec<&str> = iters.iter().map(|x| x.2).collect();
        if self.generic() {
            let mut ops = vec![lb, ub, st];
            ops.extend(&inits);
            let mut ins = vec!["index"; 3];
            ins.extend(&ts);
            let mut a = vec![format!("{iv}: index")];
            a.extend(iters.iter().map(|(n, _, t)| format!("{n}: {t}")));
            format!(
                "{ind}{l}\"scf.for\"({}) ({{\n{ind}^bb0({}):\n{body}{ind}}}) : ({}) -> {}\n",
                ops.join(", "),
                a.join(", "),
                ins.join(", "),
                tys(&ts)
            )
        } else {
            let it: Vec<String> = iters.iter().map(|(n, i, _)| format!("{n} = {i}")).collect();
            format!(
                "{ind}{l}scf.for {iv} = {lb} to {ub} step {st} iter_args({}) -> ({}) {{\n{body}{ind}}}\n",
                it.join(", "),
                ts.join(", ")
            )
        }
    }

    /// An `scf.while` over values `carried` (block argument of the before
    /// region, init, type; the after region's arguments `after_args` have
    /// the same types, and so do the results `res`): the before region's
    /// lines `before`, then `scf.condition(cond)` forwarding its arguments;
    /// the after region's lines `after` (ending in its `scf.yield`).
    #[allow(clippy::too_many_arguments)]
    fn scf_while(
        &mut self,
        ind: &str,
        res: &[&str],
        carried: &[(&str, &str, &str)],
        before: &str,
        cond: &str,
        after_args: &[&str],
        after: &str,
    ) -> String {
        let l = lhs(res);
        let inits: Vec<&str> = carried.iter().map(|x| x.1).collect();
        let ts: Vec<&str> = carried.iter().map(|x| x.2).collect();
        let fwd: Vec<&str> = carried.iter().map(|x| x.0).collect();
        let (fwd, ts_list) = (fwd.join(", "), ts.join(", "));
        let ba: Vec<String> = carried
            .iter()
            .map(|(n, _, t)| format!("{n}: {t}"))
            .collect();
        let aa: Vec<String> = after_args
            .iter()
            .zip(&ts)
            .map(|(n, t)| format!("{n}: {t}"))
            .collect();
        let inner = format!("{ind}  ");
        if self.generic() {
            format!(
                "{ind}{l}\"scf.while\"({}) ({{\n{ind}^bb0({}):\n{before}{inner}\"scf.condition\"({cond}, {fwd}) : (i1, {ts_list}) -> ()\n{ind}}}, {{\n{ind}^bb0({}):\n{after}{ind}}}) : ({ts_list}) -> {}\n",
                inits.join(", "),
                ba.join(", "),
                aa.join(", "),
                tys(&ts)
            )
        } else {
            let hd: Vec<String> = carried
                .iter()
                .map(|(n, i, _)| format!("{n} = {i}"))
                .collect();
            format!(
                "{ind}{l}scf.while ({}) : ({ts_list}) -> {} {{\n{before}{inner}scf.condition({cond}) {fwd} : {ts_list}\n{ind}}} do {{\n{ind}^bb0({}):\n{after}{ind}}}\n",
                hd.join(", "),
                tys(&ts),
                aa.join(", ")
            )
        }
    }
}

/// Shapes that a second, independent generator built and this one did not
/// (issue 43): collects with several emit sites, conditions that fold to
/// constants, vectors carried through zero-trip loops, unused results, and
/// matrices of loop results, their ops in either form.
impl Gen {
    /// A condition `c` that folds to a constant: `arith.constant true` or
    /// `false`, or a comparison of two integer or float constants; its lines
    /// and its value.
    fn folding_cond(&mut self, ind: &str, c: &str) -> (String, bool) {
        match self.rng.below(3) {
            0 => {
                let v = self.rng.chance(50);
                (
                    self.constant(ind, c, if v { "true" } else { "false" }, "i1"),
                    v,
                )
            }
            1 => {
                let ty = *self.rng.pick(&["index", "i64"]);
                let a = self.rng.below(4) as i64 - 1;
                let b = self.rng.below(4) as i64 - 1;
                let (p, v) = *self.rng.pick(&[
                    ("slt", a < b),
                    ("sle", a <= b),
                    ("sgt", a > b),
                    ("eq", a == b),
                    ("ne", a != b),
                    ("ult", (a as u64) < (b as u64)),
                ]);
                let mut t = self.constant(ind, &format!("{c}a"), &a.to_string(), ty);
                t += &self.constant(ind, &format!("{c}b"), &b.to_string(), ty);
                t += &self.cmp(ind, c, "cmpi", p, [&format!("{c}a"), &format!("{c}b")], ty);
                (t, v)
            }
            _ => {
                let a = *self.rng.pick(DYADIC);
                let b = *self.rng.pick(DYADIC);
                let (x, y): (f64, f64) = (a.parse().unwrap(), b.parse().unwrap());
                let (p, v) = *self.rng.pick(&[
                    ("olt", x < y),
                    ("oge", x >= y),
                    ("oeq", x == y),
                    ("une", x != y),
                ]);
                let mut t = self.constant(ind, &format!("{c}a"), a, "f64");
                t += &self.constant(ind, &format!("{c}b"), b, "f64");
                t += &self.cmp(
                    ind,
                    c,
                    "cmpf",
                    p,
                    [&format!("{c}a"), &format!("{c}b")],
                    "f64",
                );
                (t, v)
            }
        }
    }

    /// A `gen.loop` whose collect has several emit sites at different
    /// depths, so that it yields more elements than the loop has
    /// iterations: two emits in a row, an emit at the top and one under an
    /// `scf.if`, an emit in each branch and one at the top, or emits under
    /// nested `scf.if`s. The loop reads a vector at its index (its length
    /// is the size) or emits constants and scalars from outside over a size
    /// of the pool; conditions are on the element, a flag of the pool, or
    /// fold to constants. With `with_reduce`, a reduce generator of the
    /// same loop folds an element too (from an init or the identity).
    fn multi_collect(&mut self, d: &str, with_reduce: bool) -> Collect {
        let mut text = String::new();
        let mut uses: Vec<String> = Vec::new();
        let ints = self.rng.chance(30);
        let (ty, sty, vty, ety) = if ints {
            (Ty::VI64, Ty::I64, "vec<i64>", "i64")
        } else {
            (Ty::VF64, Ty::F64, "vec<f64>", "f64")
        };
        let src = self.any(ty).filter(|_| self.rng.chance(80));
        let size = match &src {
            Some(v) => {
                uses.push(v.clone());
                let n = format!("{d}n");
                text += &self.op("  ", &n, "vec.len", &[(v, vty)], "index", vty);
                n
            }
            None => match self.any(Ty::Idx).filter(|_| self.rng.chance(50)) {
                Some(i) => {
                    uses.push(i.clone());
                    i
                }
                None => {
                    let w = self.any(Ty::VF64).unwrap_or_else(|| "%x".to_string());
                    uses.push(w.clone());
                    let n = format!("{d}n");
                    text += &self.op(
                        "  ",
                        &n,
                        "vec.len",
                        &[(&w, "vec<f64>")],
                        "index",
                        "vec<f64>",
                    );
                    n
                }
            },
        };
        let (ind, in2, in3) = ("    ", "      ", "        ");
        let (i, h, g) = (format!("{d}i"), format!("{d}h"), format!("{d}g"));
        let hty = format!("!gen.collect<{ety}>");
        let mut body = String::new();
        // The element: read at the index, a scalar from outside, or a constant.
        let e = match &src {
            Some(v) => {
                let e = format!("{d}e");
                body += &self.op(ind, &e, "vec.get", &[(v, vty), (&i, "index")], ety, vty);
                e
            }
            None => match self.any(sty).filter(|_| self.rng.chance(50)) {
                Some(s) => {
                    uses.push(s.clone());
                    s
                }
                None => {
                    let e = format!("{d}e");
                    let k = if ints {
                        *self.rng.pick(&["0", "7", "-1"])
                    } else {
                        *self.rng.pick(DYADIC)
                    };
                    body += &self.constant(ind, &e, k, ety);
                    e
                }
            },
        };
        // A second value: the same, a multiple, or a scalar from outside.
        let e2 = match self.rng.below(3) {
            0 => e.clone(),
            1 => {
                let (f, op) = if ints {
                    (*self.rng.pick(&["3", "-2", "1", "0"]), "muli")
                } else {
                    (*self.rng.pick(FACTORS), "mulf")
                };
                let (fv, m) = (format!("{d}f"), format!("{d}m"));
                body += &self.constant(ind, &fv, f, ety);
                body += &self.bin(ind, &m, op, [&e, &fv], ety);
                m
            }
            _ => match self.any(sty) {
                Some(s) => {
                    uses.push(s.clone());
                    s
                }
                None => {
                    let k = format!("{d}k");
                    body += &self.constant(ind, &k, if ints { "-3" } else { "1.5" }, ety);
                    k
                }
            },
        };
        // The structure of the emits, and the branch condition where it has
        // one: on the element, a flag of the pool, or one that folds to a
        // constant (defined before the loop or in its body).
        let structure = self.rng.below(4);
        let c = format!("{d}c");
        let (known, cond) = match self.rng.below(3) {
            _ if structure == 0 => (None, c),
            0 if src.is_some() => {
                if ints {
                    let z = format!("{d}z");
                    body += &self.constant(ind, &z, "0", "i64");
                    body += &self.cmp(ind, &c, "cmpi", "sgt", [&e, &z], "i64");
                } else {
                    let cap = self.any(Ty::F64).unwrap_or_else(|| "%half".to_string());
                    uses.push(cap.clone());
                    body += &self.cmp(ind, &c, "cmpf", "olt", [&e, &cap], "f64");
                }
                (None, c)
            }
            0 | 1 => {
                let f = self.any(Ty::I1).unwrap_or_else(|| "%c".to_string());
                uses.push(f.clone());
                (None, f)
            }
            _ => {
                if self.rng.chance(50) {
                    let (t, v) = self.folding_cond("  ", &c);
                    text += &t;
                    (Some(v), c)
                } else {
                    let (t, v) = self.folding_cond(ind, &c);
                    body += &t;
                    (Some(v), c)
                }
            }
        };
        let per = match structure {
            // Two emits in a row.
            0 => {
                body += &self.emit(ind, &h, &hty, &e, ety);
                body += &self.emit(ind, &h, &hty, &e2, ety);
                Some(2)
            }
            // One at the top, one under an `scf.if` (before or after it).
            1 => {
                let top = self.emit(ind, &h, &hty, &e, ety);
                let mut then = self.emit(in2, &h, &hty, &e2, ety);
                then += &self.scf_yield(in2, &[]);
                let els = self.scf_yield(in2, &[]);
                let branch = self.scf_if(ind, &[], &cond, &[], &then, &els);
                if self.rng.chance(50) {
                    body += &top;
                    body += &branch;
                } else {
                    body += &branch;
                    body += &top;
                }
                known.map(|k| 1 + k as usize)
            }
            // One in each branch, and one at the top.
            2 => {
                let mut then = self.emit(in2, &h, &hty, &e, ety);
                then += &self.scf_yield(in2, &[]);
                let mut els = self.emit(in2, &h, &hty, &e2, ety);
                els += &self.scf_yield(in2, &[]);
                body += &self.scf_if(ind, &[], &cond, &[], &then, &els);
                body += &self.emit(ind, &h, &hty, &e2, ety);
                Some(2)
            }
            // Nested: under the condition an emit and an `scf.if` on a
            // condition that folds, with another; and one at the top.
            _ => {
                let c2 = format!("{d}c2");
                let (mut then, k2) = self.folding_cond(in2, &c2);
                then += &self.emit(in2, &h, &hty, &e2, ety);
                let mut inner = self.emit(in3, &h, &hty, &e, ety);
                inner += &self.scf_yield(in3, &[]);
                let inner_else = self.scf_yield(in3, &[]);
                then += &self.scf_if(in2, &[], &c2, &[], &inner, &inner_else);
                then += &self.scf_yield(in2, &[]);
                let els = self.scf_yield(in2, &[]);
                body += &self.scf_if(ind, &[], &cond, &[], &then, &els);
                body += &self.emit(ind, &h, &hty, &e, ety);
                match known {
                    Some(false) => Some(1),
                    Some(true) => Some(2 + k2 as usize),
                    None => None,
                }
            }
        };
        let res = format!("{d}c0");
        let red = format!("{d}r");
        let mut operands: Vec<(&str, &str)> = vec![(&size, "index")];
        let mut gens = vec!["#gen.collect".to_string()];
        let rty = format!("!gen.reduce<{ety}>");
        let mut args: Vec<(&str, &str)> = vec![(&i, "index"), (&h, &hty)];
        let mut outs = vec![vty];
        let mut names = vec![res.as_str()];
        let init = if with_reduce {
            let k = *self.rng.pick(&["add", "max", "min"]);
            gens.push(format!("#gen.reduce<{k}>"));
            args.push((&g, &rty));
            outs.push(ety);
            names.push(&red);
            body += &self.emit(ind, &g, &rty, &e2, ety);
            self.any(sty).filter(|_| self.rng.chance(50))
        } else {
            None
        };
        if let Some(s) = &init {
            operands.push((s, ety));
            uses.push(s.clone());
        }
        let gens: Vec<&str> = gens.iter().map(String::as_str).collect();
        text += &self.gen_loop("  ", &names, &operands, &gens, &args, &body, &outs);
        Collect {
            text,
            res,
            ty,
            red: with_reduce.then_some(red),
            uses,
            size,
            src,
            per,
        }
    }

    /// A collect with several emit sites ([`Gen::multi_collect`]), maybe
    /// with a reduce in the same loop of which only one result is used.
    fn multi_emit(&mut self, d: String) {
        self.pick_forms();
        let with_reduce = self.rng.chance(35);
        let c = self.multi_collect(&d, with_reduce);
        let uses: Vec<&String> = c.uses.iter().collect();
        let sty = if c.ty == Ty::VI64 { Ty::I64 } else { Ty::F64 };
        let head = "  // multi-emit\n";
        match c.red {
            None => self.push(c.res, c.ty, format!("{head}{}", c.text), &uses),
            Some(r) => match self.rng.below(3) {
                0 => {
                    let first = c.res.clone();
                    self.push(c.res, c.ty, format!("{head}{}", c.text), &uses);
                    self.push_second(&first, r, sty);
                }
                1 => self.push(
                    c.res,
                    c.ty,
                    format!("{head}  // unused result\n{}", c.text),
                    &uses,
                ),
                _ => self.push(
                    r,
                    sty,
                    format!("{head}  // unused result\n{}", c.text),
                    &uses,
                ),
            },
        }
    }

    /// A condition that folds to a constant ([`Gen::folding_cond`]) on an
    /// `arith.select` (of scalars, indices or vectors), an `scf.if` with a
    /// scalar and a vector result, an `scf.while` (a sum of a vector's
    /// elements while the index is in bounds and the condition holds, or on
    /// the constant alone when it is false), or an `scf.if` that sets a
    /// variable; the condition may go to the pool, for later statements.
    fn const_cond(&mut self, d: String) {
        self.pick_forms();
        let k = format!("{d}k");
        let (cond, val) = self.folding_cond("  ", &k);
        let mut t = format!("  // const-cond\n{cond}");
        let ind = "    ";
        let pushed = match self.rng.below(4) {
            0 => {
                let (ty, name) =
                    *self
                        .rng
                        .pick(&[(Ty::F64, "f64"), (Ty::Idx, "index"), (Ty::VF64, "vec<f64>")]);
                let (Some(a), Some(b)) = (self.any(ty), self.any(ty)) else {
                    return;
                };
                t += &self.op(
                    "  ",
                    &d,
                    "arith.select",
                    &[(&k, "i1"), (&a, name), (&b, name)],
                    name,
                    name,
                );
                if ty == Ty::VF64 {
                    self.same_len(&d, if val { &a } else { &b });
                }
                self.push(d.clone(), ty, t, &[&a, &b]);
                true
            }
            1 => {
                let (Some(a), Some(b), Some(v)) =
                    (self.any(Ty::F64), self.any(Ty::F64), self.any(Ty::VF64))
                else {
                    return;
                };
                let Some(w) = self.like(Ty::VF64, &v) else {
                    return;
                };
                let (s, m, r) = (format!("{d}s"), format!("{d}m"), format!("{d}v"));
                let mut then = self.bin(ind, &s, "addf", [&a, &b], "f64");
                then += &self.op(
                    ind,
                    &m,
                    "vec.scale",
                    &[(&v, "vec<f64>"), ("%half", "f64")],
                    "vec<f64>",
                    "vec<f64>",
                );
                then += &self.scf_yield(ind, &[(&s, "f64"), (&m, "vec<f64>")]);
                let els = self.scf_yield(ind, &[(&b, "f64"), (&w, "vec<f64>")]);
                t += &self.scf_if("  ", &[&d, &r], &k, &["f64", "vec<f64>"], &then, &els);
                self.same_len(&r, if val { &v } else { &w });
                self.push(d.clone(), Ty::F64, t, &[&a, &b, &v, &w]);
                self.push_second(&d, r, Ty::VF64);
                true
            }
            2 => {
                let (Some(x), Some(s0)) = (self.any(Ty::VF64), self.any(Ty::F64)) else {
                    return;
                };
                let (n, z) = (format!("{d}n"), format!("{d}z"));
                t += &self.op(
                    "  ",
                    &n,
                    "vec.len",
                    &[(&x, "vec<f64>")],
                    "index",
                    "vec<f64>",
                );
                t += &self.constant("  ", &z, "0", "index");
                let (a, b, ci, ct) = (
                    format!("{d}a"),
                    format!("{d}b"),
                    format!("{d}ci"),
                    format!("{d}ct"),
                );
                // The constant alone only when it is false (else no end).
                let (before, go) = if !val && self.rng.chance(50) {
                    (String::new(), k.clone())
                } else {
                    let (inb, go) = (format!("{d}in"), format!("{d}go"));
                    let mut bt = self.cmp(ind, &inb, "cmpi", "slt", [&a, &n], "index");
                    bt += &self.bin(ind, &go, "andi", [&k, &inb], "i1");
                    (bt, go)
                };
                let (e, u, one, nx) = (
                    format!("{d}e"),
                    format!("{d}u"),
                    format!("{d}one"),
                    format!("{d}nx"),
                );
                let mut after = self.op(
                    ind,
                    &e,
                    "vec.get",
                    &[(&x, "vec<f64>"), (&ci, "index")],
                    "f64",
                    "vec<f64>",
                );
                after += &self.bin(ind, &u, "addf", [&ct, &e], "f64");
                after += &self.constant(ind, &one, "1", "index");
                after += &self.bin(ind, &nx, "addi", [&ci, &one], "index");
                after += &self.scf_yield(ind, &[(&nx, "index"), (&u, "f64")]);
                let w = format!("{d}w");
                t += &self.scf_while(
                    "  ",
                    &[&w, &d],
                    &[(&a, &z, "index"), (&b, &s0, "f64")],
                    &before,
                    &go,
                    &[&ci, &ct],
                    &after,
                );
                self.push(d.clone(), Ty::F64, t, &[&x, &s0]);
                if self.rng.chance(50) {
                    self.push_second(&d, w, Ty::Idx);
                }
                true
            }
            _ => {
                let (Some(a), Some(b)) = (self.any(Ty::F64), self.any(Ty::F64)) else {
                    return;
                };
                let v = format!("{d}var");
                t += &self.op("  ", &v, "var.new", &[(&a, "f64")], "var<f64>", "f64");
                let mut then = self.op(
                    ind,
                    "",
                    "var.set",
                    &[(&v, "var<f64>"), (&b, "f64")],
                    "()",
                    "var<f64>",
                );
                then += &self.scf_yield(ind, &[]);
                let els = self.scf_yield(ind, &[]);
                t += &self.scf_if("  ", &[], &k, &[], &then, &els);
                t += &self.op("  ", &d, "var.get", &[(&v, "var<f64>")], "f64", "var<f64>");
                self.push(d.clone(), Ty::F64, t, &[&a, &b]);
                true
            }
        };
        // The condition for later statements (as `%c` is), at times.
        if pushed && self.rng.chance(40) {
            self.push_second(&d, k, Ty::I1);
        }
    }

    /// A vector and a scalar carried through an `scf.for` with constant
    /// bounds that runs zero times (`lb == ub`, or `lb > ub`, then with any
    /// step, 0 too) most of the time, else once or twice; the vector is a
    /// collect with several emits or one of the pool, the scalar an `f64`
    /// or `i64` of the pool or a constant. The results are used afterwards
    /// (the scalar's maybe not).
    fn zero_trip(&mut self, d: String) {
        self.pick_forms();
        let mut t = "  // zero-trip\n".to_string();
        let mut uses: Vec<String> = Vec::new();
        let (v, vt) = if self.rng.chance(35) {
            let c = self.multi_collect(&format!("{d}q"), false);
            t += &c.text;
            uses.extend(c.uses);
            (c.res, c.ty)
        } else {
            let vt = if self.rng.chance(30) {
                Ty::VI64
            } else {
                Ty::VF64
            };
            let Some(v) = self.any(vt) else { return };
            uses.push(v.clone());
            (v, vt)
        };
        let ints = vt == Ty::VI64;
        let (vty, ety) = if ints {
            ("vec<i64>", "i64")
        } else {
            ("vec<f64>", "f64")
        };
        let sints = self.rng.chance(40);
        let (st, sty) = if sints {
            (Ty::I64, "i64")
        } else {
            (Ty::F64, "f64")
        };
        let s0 = match self.any(st).filter(|_| self.rng.chance(60)) {
            Some(s) => {
                uses.push(s.clone());
                s
            }
            None => {
                let s = format!("{d}s0");
                let k = if sints { "0" } else { *self.rng.pick(DYADIC) };
                t += &self.constant("  ", &s, k, sty);
                s
            }
        };
        let (lb, ub, step) = match self.rng.below(10) {
            0..=3 => {
                let k = *self.rng.pick(&[0, 0, 2, 5]);
                (k, k, *self.rng.pick(&[1, 1, 0, 2]))
            }
            4..=6 => (*self.rng.pick(&[1, 3, 7]), 0, *self.rng.pick(&[1, 0, 3])),
            7 | 8 => (0, 1, 1),
            _ => (1, 3, 1),
        };
        let (l, u, s) = (format!("{d}lb"), format!("{d}ub"), format!("{d}st"));
        t += &self.constant("  ", &l, &lb.to_string(), "index");
        // The same constant twice at times (two ops, one value).
        t += &self.constant("  ", &u, &ub.to_string(), "index");
        t += &self.constant("  ", &s, &step.to_string(), "index");
        let ind = "    ";
        let (iv, a, b, a2, b2) = (
            format!("{d}i"),
            format!("{d}a"),
            format!("{d}b"),
            format!("{d}a2"),
            format!("{d}b2"),
        );
        let mut body = if ints {
            self.op(ind, &a2, "vec.add", &[(&a, vty), (&a, vty)], vty, vty)
        } else {
            self.op(
                ind,
                &a2,
                "vec.scale",
                &[(&a, vty), ("%half", "f64")],
                vty,
                vty,
            )
        };
        let add = if sints { "addi" } else { "addf" };
        if ints == sints {
            let sm = format!("{d}sm");
            body += &self.op(ind, &sm, "vec.sum", &[(&a2, vty)], ety, vty);
            body += &self.bin(ind, &b2, add, [&b, &sm], sty);
        } else {
            let one = format!("{d}one");
            body += &self.constant(ind, &one, if sints { "1" } else { "1.0" }, sty);
            body += &self.bin(ind, &b2, add, [&b, &one], sty);
        }
        body += &self.scf_yield(ind, &[(&a2, vty), (&b2, sty)]);
        let (rv, rs) = (format!("{d}v"), format!("{d}s"));
        t += &self.scf_for(
            "  ",
            &[&rv, &rs],
            &iv,
            [&l, &u, &s],
            &[(&a, &v, vty), (&b, &s0, sty)],
            &body,
        );
        let uses: Vec<&String> = uses.iter().collect();
        self.same_len(&rv, &v);
        match self.rng.below(3) {
            0 => {
                self.push(rv.clone(), vt, t, &uses);
                self.push_second(&rv, rs, st);
            }
            1 => {
                t += "  // unused result\n";
                self.push(rv, vt, t, &uses);
            }
            _ => {
                // Both used at once: the scalar plus the vector's sum, or
                // its length.
                if ints == sints {
                    let sm = format!("{d}t");
                    t += &self.op("  ", &sm, "vec.sum", &[(&rv, vty)], ety, vty);
                    t += &self.bin("  ", &d, add, [&rs, &sm], sty);
                    self.push(d, st, t, &uses);
                } else {
                    let n = format!("{d}n");
                    t += &self.op("  ", &n, "vec.len", &[(&rv, vty)], "index", vty);
                    t += &self.op(
                        "  ",
                        &d,
                        "vec.fill",
                        &[(&n, "index"), (&rs, sty)],
                        &format!("vec<{sty}>"),
                        &format!("vec<{sty}>"),
                    );
                    self.same_len(&d, &rv);
                    self.push(d, if sints { Ty::VI64 } else { Ty::VF64 }, t, &uses);
                }
            }
        }
    }

    /// A call of a helper with two results (`@halves`, `@sum_and_double`,
    /// `@positives`, `@swap`) of which only one is used at times; the
    /// results named one by one or as a group (`%r:2`, `%r#1`).
    fn calls_two_results(&mut self, d: String) {
        self.pick_forms();
        let group = self.rng.chance(30);
        let (a, b) = if group {
            (format!("{d}p#0"), format!("{d}p#1"))
        } else {
            (format!("{d}a"), format!("{d}b"))
        };
        let res = if group {
            format!("{d}p:2")
        } else {
            format!("{a}, {b}")
        };
        let (t, ta, tb, uses) = match self.rng.below(4) {
            0 => {
                let (Some(v), Some(s)) = (self.any(Ty::VF64), self.any(Ty::F64)) else {
                    return;
                };
                let t = self.call(
                    "  ",
                    &res,
                    "halves",
                    &[(&v, "vec<f64>"), (&s, "f64")],
                    &["vec<f64>", "vec<f64>"],
                );
                self.same_len(&a, &v);
                self.same_len(&b, &v);
                (t, Ty::VF64, Ty::VF64, vec![v, s])
            }
            1 => {
                let Some(v) = self.any(Ty::VF64) else { return };
                let t = self.call(
                    "  ",
                    &res,
                    "sum_and_double",
                    &[(&v, "vec<f64>")],
                    &["f64", "vec<f64>"],
                );
                self.same_len(&b, &v);
                (t, Ty::F64, Ty::VF64, vec![v])
            }
            2 => {
                let Some(k) = self.any(Ty::VI64) else { return };
                let t = self.call(
                    "  ",
                    &res,
                    "positives",
                    &[(&k, "vec<i64>")],
                    &["vec<i64>", "i64"],
                );
                (t, Ty::VI64, Ty::I64, vec![k])
            }
            _ => {
                let (Some(v), Some(w)) = self.pair(Ty::VF64, Ty::VF64) else {
                    return;
                };
                let t = self.call(
                    "  ",
                    &res,
                    "swap",
                    &[(&v, "vec<f64>"), (&w, "vec<f64>")],
                    &["vec<f64>", "vec<f64>"],
                );
                self.same_len(&a, &w);
                self.same_len(&b, &v);
                (t, Ty::VF64, Ty::VF64, vec![v, w])
            }
        };
        let uses: Vec<&String> = uses.iter().collect();
        match self.rng.below(3) {
            0 => self.push(a, ta, format!("  // unused result\n{t}"), &uses),
            1 => self.push(b, tb, format!("  // unused result\n{t}"), &uses),
            _ => {
                self.push(a.clone(), ta, t, &uses);
                self.push_second(&a, b, tb);
            }
        }
    }

    /// The slice, literal and indexed-update ops of `vec` (issue 42): a
    /// reverse, an in-range slice, a concatenation, a literal, a scatter or
    /// histogram through a permutation of indices (out of range where the
    /// values are longer than the destination: ignored), or an insert into
    /// a literal.
    fn slices_and_updates(&mut self, d: String) {
        let Some(v) = self.any(Ty::VF64) else { return };
        let (t, uses) = match self.rng.below(6) {
            0 => {
                self.same_len(&d, &v);
                (
                    format!("  {d} = \"vec.reverse\"({v}) : (vec<f64>) -> vec<f64>\n"),
                    vec![v],
                )
            }
            1 => {
                let c = self.rng.below(3);
                (
                    format!(
                        "  {d}l = \"vec.len\"({v}) : (vec<f64>) -> index\n  {d}c = \"arith.constant\"() {{value = {c} : index}} : () -> index\n  {d}s = \"arith.mini\"({d}c, {d}l) : (index, index) -> index\n  {d}r = \"arith.subi\"({d}l, {d}s) : (index, index) -> index\n  {d}two = \"arith.constant\"() {{value = 2 : index}} : () -> index\n  {d}k = \"arith.divsi\"({d}r, {d}two) : (index, index) -> index\n  {d} = \"vec.slice\"({v}, {d}s, {d}k) : (vec<f64>, index, index) -> vec<f64>\n"
                    ),
                    vec![v],
                )
            }
            2 => {
                let w = self.any(Ty::VF64).unwrap_or_else(|| v.clone());
                (
                    format!(
                        "  {d} = \"vec.concat\"({v}, {w}, {v}) : (vec<f64>, vec<f64>, vec<f64>) -> vec<f64>\n"
                    ),
                    vec![v, w],
                )
            }
            3 => {
                let (Some(a), Some(b)) = (self.any(Ty::F64), self.any(Ty::F64)) else {
                    return;
                };
                (
                    format!(
                        "  {d}f = \"vec.from_elements\"({a}, {b}, {a}) : (f64, f64, f64) -> vec<f64>\n  {d} = \"vec.concat\"({d}f, {v}) : (vec<f64>, vec<f64>) -> vec<f64>\n"
                    ),
                    vec![a, b, v],
                )
            }
            4 => {
                let w = self.any(Ty::VF64).unwrap_or_else(|| v.clone());
                let (name, attr) = if self.rng.chance(50) {
                    ("\"vec.scatter\"", String::new())
                } else {
                    let k = self.rng.pick(&["add", "min", "max"]);
                    ("\"vec.hist\"", format!(" {{kind = #gen.reduce<{k}>}}"))
                };
                self.same_len(&d, &v);
                (
                    format!(
                        "  {d}n = \"vec.len\"({w}) : (vec<f64>) -> index\n  {d}io = \"vec.iota\"({d}n) : (index) -> vec<index>\n  {d}is = \"vec.reverse\"({d}io) : (vec<index>) -> vec<index>\n  {d} = {name}({v}, {d}is, {w}){attr} : (vec<f64>, vec<index>, vec<f64>) -> vec<f64>\n"
                    ),
                    vec![v, w],
                )
            }
            _ => {
                let (Some(a), Some(b)) = (self.any(Ty::F64), self.any(Ty::F64)) else {
                    return;
                };
                (
                    format!(
                        "  {d}f = \"vec.from_elements\"({a}, {a}) : (f64, f64) -> vec<f64>\n  {d}i = \"arith.constant\"() {{value = 1 : index}} : () -> index\n  {d} = \"vec.insert\"({d}f, {d}i, {b}) : (vec<f64>, index, f64) -> vec<f64>\n"
                    ),
                    vec![a, b],
                )
            }
        };
        let refs: Vec<&String> = uses.iter().collect();
        self.push(d, Ty::VF64, t, &refs);
    }

    /// `scf.parallel` (issue 45) over `[0, len(v))` by 1 or 2, and maybe a
    /// second dimension (empty, of one iteration, or several), with a float
    /// reduction by a random operator that is not associative in general,
    /// and maybe an integer one (`3a + b`, wrapping): every configuration
    /// must fold in lexicographic order.
    fn parallel(&mut self, d: String) {
        let Some(v) = self.any(Ty::VF64) else { return };
        let Some(s) = self.any(Ty::F64) else { return };
        let op = *self.rng.pick(&["addf", "subf", "maxf", "minf", "mulf"]);
        let step = *self.rng.pick(&["1", "1", "2"]);
        let two = self.rng.chance(60);
        let (lb2, ub2, s2) =
            *self
                .rng
                .pick(&[(0, 3, 1), (1, 6, 2), (2, 2, 1), (0, 1, 1), (4, 5, 3)]);
        let int = self.rng.chance(50);
        let mut t = format!(
            "  // parallel\n  {d}n = vec.len {v} : vec<f64>\n  {d}c0 = arith.constant 0 : index\n  {d}st = arith.constant {step} : index\n"
        );
        let (ivs, lbs, ubs, steps) = if two {
            t.push_str(&format!(
                "  {d}l2 = arith.constant {lb2} : index\n  {d}u2 = arith.constant {ub2} : index\n  {d}s2 = arith.constant {s2} : index\n"
            ));
            (
                format!("{d}i, {d}j"),
                format!("{d}c0, {d}l2"),
                format!("{d}n, {d}u2"),
                format!("{d}st, {d}s2"),
            )
        } else {
            (
                format!("{d}i"),
                format!("{d}c0"),
                format!("{d}n"),
                format!("{d}st"),
            )
        };
        let (res, inits, types) = if int {
            t.push_str(&format!("  {d}k0 = arith.constant 1 : i64\n"));
            (format!("{d}p, {d}q"), format!("{s}, {d}k0"), "(f64, i64)")
        } else {
            (format!("{d}p"), s.clone(), "f64")
        };
        t.push_str(&format!(
            "  {res} = scf.parallel ({ivs}) = ({lbs}) to ({ubs}) step ({steps}) init ({inits}) -> {types} {{\n    {d}e = vec.get {v}, {d}i : vec<f64>\n"
        ));
        let x = if two {
            t.push_str(&format!(
                "    {d}ji = arith.index_cast {d}j : index to i64\n    {d}jf = arith.sitofp {d}ji : i64 to f64\n    {d}x = arith.addf {d}e, {d}jf : f64\n"
            ));
            format!("{d}x")
        } else {
            format!("{d}e")
        };
        t.push_str(&format!(
            "    scf.reduce({x}) : f64 {{\n    ^bb0({d}a: f64, {d}b: f64):\n      {d}r = arith.{op} {d}a, {d}b : f64\n      scf.reduce.return {d}r : f64\n    }}\n"
        ));
        if int {
            t.push_str(&format!(
                "    {d}ii = arith.index_cast {d}i : index to i64\n    scf.reduce({d}ii) : i64 {{\n    ^bb0({d}ia: i64, {d}ib: i64):\n      {d}i3 = arith.constant 3 : i64\n      {d}im = arith.muli {d}ia, {d}i3 : i64\n      {d}ir = arith.addi {d}im, {d}ib : i64\n      scf.reduce.return {d}ir : i64\n    }}\n"
            ));
        }
        t.push_str("  }\n");
        if int {
            t.push_str(&format!(
                "  {d}qf = arith.sitofp {d}q : i64 to f64\n  {d} = arith.addf {d}p, {d}qf : f64\n"
            ));
        } else {
            t.push_str(&format!("  {d} = arith.addf {d}p, %half : f64\n"));
        }
        self.push(d, Ty::F64, t, &[&v, &s]);
    }

    /// `vec.reduce` or `vec.scan` with a user-defined operator (a combiner
    /// region, issue 42): `c = (a op1 b) op2 (b op3 k)` for random float
    /// ops, not associative in general, so every configuration must give
    /// the fold in the order of `dialects::vec_combine::chunked` exactly
    /// (also over a vector of several chunks).
    fn combiner(&mut self, d: String) {
        let Some(v) = self.any(Ty::VF64) else { return };
        let Some(ne) = self.any(Ty::F64) else { return };
        let ops = ["addf", "mulf", "subf", "maxf", "minf"];
        let (o1, o2, o3) = (
            self.rng.pick(&ops),
            self.rng.pick(&ops),
            self.rng.pick(&ops),
        );
        let k = self.rng.pick(&["0.5", "2.0", "-1.0"]);
        let region = format!(
            "({{\n  ^bb0({d}a: f64, {d}b: f64):\n    {d}k = \"arith.constant\"() {{value = {k} : f64}} : () -> f64\n    {d}x = \"arith.{o1}\"({d}a, {d}b) : (f64, f64) -> f64\n    {d}y = \"arith.{o3}\"({d}b, {d}k) : (f64, f64) -> f64\n    {d}c = \"arith.{o2}\"({d}x, {d}y) : (f64, f64) -> f64\n    \"vec.yield\"({d}c) : (f64) -> ()\n  }})"
        );
        if self.rng.chance(25) {
            // Over a vector of several chunks (vec_combine's chunks of 4096):
            // the reduce, or the scan's last element.
            let base = self.rng.pick(&["4100", "8200", "12300"]);
            let long = format!("  {d}ln = \"vec.len\"({v}) : (vec<f64>) -> index\n  {d}lm = \"arith.constant\"() {{value = 37 : index}} : () -> index\n  {d}lt = \"arith.muli\"({d}ln, {d}lm) : (index, index) -> index\n  {d}lb = \"arith.constant\"() {{value = {base} : index}} : () -> index\n  {d}lN = \"arith.addi\"({d}lt, {d}lb) : (index, index) -> index\n  {d}lio = \"vec.iota\"({d}lN) : (index) -> vec<index>\n  {d}L = \"vec.map\"({d}lio) ({{\n  ^bb0({d}le: index):\n    {d}l8 = \"arith.constant\"() {{value = 8 : index}} : () -> index\n    {d}lr = \"arith.remsi\"({d}le, {d}l8) : (index, index) -> index\n    {d}li = \"arith.index_cast\"({d}lr) : (index) -> i64\n    {d}lf = \"arith.sitofp\"({d}li) : (i64) -> f64\n    {d}lq = \"arith.constant\"() {{value = 0.25 : f64}} : () -> f64\n    {d}ly = \"arith.mulf\"({d}lf, {d}lq) : (f64, f64) -> f64\n    \"vec.yield\"({d}ly) : (f64) -> ()\n  }}) : (vec<index>) -> vec<f64>\n");
            let t = if self.rng.chance(50) {
                format!("  // combiner\n  // long combiner\n{long}  {d} = \"vec.reduce\"({d}L, {ne}) {region} : (vec<f64>, f64) -> f64\n")
            } else {
                format!("  // combiner\n  // long combiner\n{long}  {d}s = \"vec.scan\"({d}L, {ne}) {region} : (vec<f64>, f64) -> vec<f64>\n  {d}l1 = \"arith.constant\"() {{value = 1 : index}} : () -> index\n  {d}lk = \"arith.subi\"({d}lN, {d}l1) : (index, index) -> index\n  {d} = \"vec.get\"({d}s, {d}lk) : (vec<f64>, index) -> f64\n")
            };
            self.push(d, Ty::F64, t, &[&v, &ne]);
        } else if self.rng.chance(30) {
            let t = format!("  // combiner\n  {d} = \"vec.reduce\"({v}, {ne}) {region} : (vec<f64>, f64) -> f64\n");
            self.push(d, Ty::F64, t, &[&v, &ne]);
        } else if self.rng.chance(50) {
            // A histogram of v into len(v) bins, bin v-index reversed.
            let t = format!("  // combiner\n  // hist combiner\n  {d}n = \"vec.len\"({v}) : (vec<f64>) -> index\n  {d}io = \"vec.iota\"({d}n) : (index) -> vec<index>\n  {d}is = \"vec.reverse\"({d}io) : (vec<index>) -> vec<index>\n  {d} = \"vec.hist\"({v}, {d}is, {v}) {region} : (vec<f64>, vec<index>, vec<f64>) -> vec<f64>\n");
            self.same_len(&d, &v);
            self.push(d, Ty::VF64, t, &[&v]);
        } else {
            let t = format!("  // combiner\n  {d} = \"vec.scan\"({v}, {ne}) {region} : (vec<f64>, f64) -> vec<f64>\n");
            self.same_len(&d, &v);
            self.push(d, Ty::VF64, t, &[&v, &ne]);
        }
    }

    /// A map whose body allocates (issue 41, item 3: kernel threads keep
    /// such vectors in scratch memory): per element `e`, a temporary
    /// vector of `|e rem m|` elements (or a size a loop computes from it:
    /// a count in an `scf.for`, a sum of an iota) (`j * e` at `j`), maybe only under an
    /// `scf.if` on its size, read at a constant index (which may fault),
    /// at its last index (faulting when empty), or summed.
    fn temporaries(&mut self, d: String) {
        let Some(v) = self.any(Ty::VI64) else { return };
        let m = 3 + self.rng.below(5);
        let read = match self.rng.below(3) {
            0 => {
                let k = self.rng.below(3);
                format!("    {d}k = \"arith.constant\"() {{value = {k} : index}} : () -> index\n    {d}r = \"vec.get\"({d}u, {d}k) : (vec<i64>, index) -> i64\n")
            }
            1 => format!("    {d}l = \"vec.len\"({d}u) : (vec<i64>) -> index\n    {d}o = \"arith.constant\"() {{value = 1 : index}} : () -> index\n    {d}k = \"arith.subi\"({d}l, {d}o) : (index, index) -> index\n    {d}r = \"vec.get\"({d}u, {d}k) : (vec<i64>, index) -> i64\n"),
            _ => format!("    {d}r = \"vec.sum\"({d}u) : (vec<i64>) -> i64\n"),
        };
        let temp = format!("    {d}t = \"vec.iota\"({d}n) : (index) -> vec<index>\n    {d}u = \"vec.map\"({d}t) ({{\n    ^bb0({d}j: index):\n      {d}ji = \"arith.index_cast\"({d}j) : (index) -> i64\n      {d}p = \"arith.muli\"({d}ji, {d}e) : (i64, i64) -> i64\n      \"vec.yield\"({d}p) : (i64) -> ()\n    }}) : (vec<index>) -> vec<i64>\n{read}");
        let body = if self.rng.chance(30) {
            let indented: String = temp.lines().map(|l| format!("  {l}\n")).collect();
            format!("    {d}z = \"arith.constant\"() {{value = 1 : index}} : () -> index\n    {d}big = \"arith.cmpi\"({d}n, {d}z) {{predicate = \"ugt\"}} : (index, index) -> i1\n    {d}y = \"scf.if\"({d}big) ({{\n{indented}      \"scf.yield\"({d}r) : (i64) -> ()\n    }}, {{\n      \"scf.yield\"({d}e) : (i64) -> ()\n    }}) : (i1) -> i64\n")
        } else {
            format!("{temp}    {d}y = \"arith.addi\"({d}r, {d}e) : (i64, i64) -> i64\n")
        };
        // The temporary's size: `|e rem m|`, or computed from it by a loop
        // (the host's bound for the scratch slices copies that loop).
        let size = match self.rng.below(4) {
            0 => format!("    {d}n0 = \"arith.index_cast\"({d}a) : (i64) -> index\n    {d}c0 = arith.constant 0 : index\n    {d}c1 = arith.constant 1 : index\n    {d}c2 = arith.constant 2 : index\n    {d}n = scf.for {d}i = {d}c0 to {d}n0 step {d}c1 iter_args({d}acc = {d}c0) -> (index) {{\n      {d}b = arith.remui {d}i, {d}c2 : index\n      {d}s = arith.addi {d}acc, {d}b : index\n      scf.yield {d}s : index\n    }}\n"),
            1 => format!("    {d}n0 = \"arith.index_cast\"({d}a) : (i64) -> index\n    {d}w = \"vec.iota\"({d}n0) : (index) -> vec<index>\n    {d}n = \"vec.sum\"({d}w) : (vec<index>) -> index\n"),
            _ => format!("    {d}n = \"arith.index_cast\"({d}a) : (i64) -> index\n"),
        };
        let t = format!(
            "  // temporaries\n  {d} = \"vec.map\"({v}) ({{\n  ^bb0({d}e: i64):\n    {d}c = \"arith.constant\"() {{value = {m} : i64}} : () -> i64\n    {d}q = \"arith.remsi\"({d}e, {d}c) : (i64, i64) -> i64\n    {d}z0 = \"arith.constant\"() {{value = 0 : i64}} : () -> i64\n    {d}nq = \"arith.subi\"({d}z0, {d}q) : (i64, i64) -> i64\n    {d}a = \"arith.maxsi\"({d}q, {d}nq) : (i64, i64) -> i64\n{size}{body}    \"vec.yield\"({d}y) : (i64) -> ()\n  }}) : (vec<i64>) -> vec<i64>\n"
        );
        self.same_len(&d, &v);
        self.push(d, Ty::VI64, t, &[&v]);
    }

    /// Nested arrays (issue 42): a vector as a one-row or one-column
    /// matrix, its rows (`mat.to_rows`), transposed (`vec.transpose`) and
    /// flattened (`vec.flatten`), or rebuilt (`mat.from_rows`) and
    /// flattened (`mat.flatten`): the same elements, in a new order for a
    /// row of a column.
    fn nested(&mut self, d: String) {
        let Some(v) = self.any(Ty::VF64) else { return };
        let (r, c) = if self.rng.chance(50) {
            (format!("{d}o"), format!("{d}n"))
        } else {
            (format!("{d}n"), format!("{d}o"))
        };
        let tail = if self.rng.chance(50) {
            format!("  {d}t = \"vec.transpose\"({d}rs) : (vec<vec<f64>>) -> vec<vec<f64>>\n  {d} = \"vec.flatten\"({d}t) : (vec<vec<f64>>) -> vec<f64>\n")
        } else {
            format!("  {d}b = \"mat.from_rows\"({d}rs) : (vec<vec<f64>>) -> mat<f64>\n  {d} = \"mat.flatten\"({d}b) : (mat<f64>) -> vec<f64>\n")
        };
        let t = format!(
            "  // nested\n  {d}n = \"vec.len\"({v}) : (vec<f64>) -> index\n  {d}o = \"arith.constant\"() {{value = 1 : index}} : () -> index\n  {d}m = \"mat.from\"({v}, {r}, {c}) : (vec<f64>, index, index) -> mat<f64>\n  {d}rs = \"mat.to_rows\"({d}m) : (mat<f64>) -> vec<vec<f64>>\n{tail}"
        );
        self.same_len(&d, &v);
        self.push(d, Ty::VF64, t, &[&v]);
    }

    /// A matrix of a loop's result: a collect with several emits
    /// ([`Gen::multi_collect`]) viewed as a column, a row, or (where every
    /// iteration emits the same number of elements) the loop's size by that
    /// number; then the matrix itself, its transpose, a row of the transpose
    /// (at `min(%n, last)`), a product with its transpose, an entry, or a
    /// matrix-vector product (with the vector the loop reads, where the
    /// shape allows).
    fn mat_of_loop(&mut self, d: String) {
        self.pick_forms();
        let c = self.multi_collect(&format!("{d}q"), false);
        let mut t = format!("  // mat of a loop\n{}", c.text);
        let ints = c.ty == Ty::VI64;
        let (vty, ety, mty, mt, st) = if ints {
            ("vec<i64>", "i64", "mat<i64>", Ty::MI64, Ty::I64)
        } else {
            ("vec<f64>", "f64", "mat<f64>", Ty::MF64, Ty::F64)
        };
        let (len, one) = (format!("{d}l"), format!("{d}o"));
        t += &self.op("  ", &len, "vec.len", &[(&c.res, vty)], "index", vty);
        t += &self.constant("  ", &one, "1", "index");
        let per = c.per.filter(|k| *k > 0 && self.rng.chance(60));
        let (rows, cols, shape) = match per {
            Some(k) => {
                let kv = format!("{d}k");
                t += &self.constant("  ", &kv, &k.to_string(), "index");
                (c.size.clone(), kv, "grid")
            }
            None if self.rng.chance(50) => (len.clone(), one.clone(), "column"),
            None => (one.clone(), len.clone(), "row"),
        };
        let m = format!("{d}m");
        t += &self.op(
            "  ",
            &m,
            "mat.from",
            &[(&c.res, vty), (&rows, "index"), (&cols, "index")],
            mty,
            vty,
        );
        let tr = format!("{d}t");
        let transpose = |g: &mut Gen| g.op("  ", &tr, "mat.transpose", &[(&m, mty)], mty, mty);
        let (def, ty) = match self.rng.below(6) {
            0 => (m, mt),
            1 => {
                t += &transpose(self);
                (tr, mt)
            }
            2 => {
                t += &transpose(self);
                let (nr, last, j, r) = (
                    format!("{d}nr"),
                    format!("{d}last"),
                    format!("{d}j"),
                    format!("{d}row"),
                );
                t += &self.op("  ", &nr, "mat.rows", &[(&tr, mty)], "index", mty);
                t += &self.bin("  ", &last, "subi", [&nr, &one], "index");
                t += &self.bin("  ", &j, "mini", ["%n", &last], "index");
                t += &self.op("  ", &r, "mat.row", &[(&tr, mty), (&j, "index")], vty, mty);
                (r, c.ty)
            }
            3 => {
                t += &transpose(self);
                let p = format!("{d}p");
                let ab = if self.rng.chance(50) {
                    [&tr, &m]
                } else {
                    [&m, &tr]
                };
                t += &self.op("  ", &p, "mat.mul", &[(ab[0], mty), (ab[1], mty)], mty, mty);
                (p, mt)
            }
            4 => {
                let (nr, last, j, z, e) = (
                    format!("{d}nr"),
                    format!("{d}last"),
                    format!("{d}j"),
                    format!("{d}z"),
                    format!("{d}e"),
                );
                t += &self.op("  ", &nr, "mat.rows", &[(&m, mty)], "index", mty);
                t += &self.bin("  ", &last, "subi", [&nr, &one], "index");
                t += &self.bin("  ", &j, "mini", ["%n", &last], "index");
                t += &self.constant("  ", &z, "0", "index");
                t += &self.op(
                    "  ",
                    &e,
                    "mat.get",
                    &[(&m, mty), (&j, "index"), (&z, "index")],
                    ety,
                    mty,
                );
                (e, st)
            }
            _ => {
                let y = format!("{d}y");
                // (1 x len) times the vector itself; a grid's transpose
                // (k x size) times the vector the loop reads (of length size).
                let (mat, x) = match (shape, &c.src) {
                    ("grid", Some(src)) => {
                        t += &transpose(self);
                        (tr.clone(), src.clone())
                    }
                    ("column", _) => {
                        t += &transpose(self);
                        (tr.clone(), c.res.clone())
                    }
                    _ if shape == "row" => (m.clone(), c.res.clone()),
                    _ => {
                        // A grid over a size that is not a vector's: its
                        // transpose times a vector of ones of that size.
                        t += &transpose(self);
                        let (o, f) = (format!("{d}ones"), format!("{d}f"));
                        t += &self.constant("  ", &o, if ints { "1" } else { "1.0" }, ety);
                        t += &self.op(
                            "  ",
                            &f,
                            "vec.fill",
                            &[(&c.size, "index"), (&o, ety)],
                            vty,
                            vty,
                        );
                        (tr.clone(), f)
                    }
                };
                t += &self.op("  ", &y, "mat.matvec", &[(&mat, mty), (&x, vty)], vty, mty);
                (y, c.ty)
            }
        };
        let uses: Vec<&String> = c.uses.iter().collect();
        self.push(def, ty, t, &uses);
    }
}

/// The program and inputs of `seed`.
fn generate(seed: u64) -> (Program, Vec<String>) {
    let mut g = Gen {
        rng: Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0x5DEE_CE66),
        pool: PARAMS.iter().map(|(n, t)| (n.to_string(), *t)).collect(),
        stmts: Vec::new(),
        next: 0,
        len_class: ["%x", "%y", "%k"]
            .iter()
            .map(|v| (v.to_string(), 0))
            .collect(),
        forms: Forms::Custom,
    };
    g.stmts.push(Stmt {
        text: "  %half = \"arith.constant\"() {value = 0.5 : f64} : () -> f64\n".into(),
        def: "%half".into(),
        ty: Ty::F64,
        uses: vec![],
    });
    let n = 4 + g.rng.below(21);
    for _ in 0..n {
        g.stmt();
    }
    // Return the values nothing else uses (up to six, the latest), so that the
    // reference program has no dead statement whose fault a pass could drop.
    let used: Vec<&String> = g.stmts.iter().flat_map(|s| s.uses.iter()).collect();
    let mut results: Vec<(String, Ty)> = g
        .stmts
        .iter()
        .skip(1)
        .filter(|s| !used.contains(&&s.def))
        .map(|s| (s.def.clone(), s.ty))
        .collect();
    if results.len() > 6 {
        results.drain(..results.len() - 6);
    }
    if results.is_empty() {
        results.push(("%s".into(), Ty::F64));
    }
    let args = inputs(&mut g.rng, false);
    // Drawn after the inputs, so that a seed's program and inputs stay
    // those of earlier sessions, in another spelling.
    let spell = g.rng.next();
    (
        Program {
            stmts: g.stmts,
            results,
            spell,
        },
        args,
    )
}

/// Inputs for `@main`: three vectors, a scalar, a size and a flag. Lengths are
/// equal with high probability, values dyadic; empty and one-element vectors
/// (which make most reads fault) about a quarter of the time, and 150 elements
/// (more than the gpu configuration's 2 blocks of 32 threads: grid-stride
/// loops) an eighth. With `retry`, the inputs of another try at a program whose
/// first inputs made it fault: all three lengths equal and at least 8, and a
/// size `%n` of at least 3 (below every length).
fn inputs(rng: &mut Rng, retry: bool) -> Vec<String> {
    let lens: &[usize] = if retry {
        &[8, 37, 37, 150]
    } else {
        &[0, 1, 2, 5, 8, 37, 37, 150]
    };
    let lx = *rng.pick(lens);
    let ly = if retry || rng.chance(80) {
        lx
    } else {
        *rng.pick(lens)
    };
    let lk = if retry || rng.chance(85) {
        lx
    } else {
        *rng.pick(lens)
    };
    let mut fv = |len: usize| {
        let xs: Vec<String> = (0..len)
            .map(|_| format!("{}", (rng.below(33) as f64 - 16.0) / 4.0))
            .collect();
        format!("[{}]", xs.join(", "))
    };
    let (x, y) = (fv(lx), fv(ly));
    let k: Vec<String> = (0..lk)
        .map(|_| format!("{}", rng.below(11) as i64 - 5))
        .collect();
    vec![
        x,
        y,
        format!("[{}]", k.join(", ")),
        DYADIC[rng.below(DYADIC.len())].to_string(),
        // At least 3 in a retry: `%n - 3` sizes (`computed_size`) are not negative.
        format!(
            "{}",
            if retry {
                3 + rng.below(4)
            } else {
                rng.below(7)
            }
        ),
        (rng.chance(50)).to_string(),
    ]
}

#[derive(Clone)]
struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(file: &Path, args: &[String], extra: &[&str]) -> Out {
    // Parallel loops go to the thread pool however small (issue 8).
    let o = Command::new(env!("CARGO_BIN_EXE_l0-opt"))
        .env("L0_INLINE_NS", "0")
        .arg(file)
        .arg("--run=main")
        .args(extra)
        .args(args.iter().map(|a| format!("--arg={a}")))
        .output()
        .expect("cannot run l0-opt");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// The first configuration that disagrees with the reference, with why.
/// `known` is the reference's output for `args` where the caller already
/// ran it ([`fewer_faults`]); otherwise it runs here.
fn disagreement(
    p: &Program,
    args: &[String],
    file: &Path,
    only: Option<&str>,
    known: Option<Out>,
) -> Result<Out, (String, String)> {
    let text = p.text();
    std::fs::write(file, &text).unwrap();
    // The generator must produce valid IR: parse and verify first.
    let started = Instant::now();
    let parsed = Command::new(env!("CARGO_BIN_EXE_l0-opt"))
        .arg(file)
        .output()
        .unwrap();
    spent("parse", started, false);
    if !parsed.status.success() {
        return Err((
            "parse".into(),
            format!(
                "invalid IR from the generator:\n{}",
                String::from_utf8_lossy(&parsed.stderr)
            ),
        ));
    }
    let reference = known.unwrap_or_else(|| reference(file, args));
    if reference.code != 0 && reference.code != 1 {
        return Err((
            "reference".into(),
            format!("exit {}: {}", reference.code, reference.stderr),
        ));
    }
    if reference.code == 1 {
        if let Err(w) = located(&reference.stderr, file, &text) {
            return Err(("reference".into(), format!("{w}: {}", reference.stderr)));
        }
    }
    // The interpreter's output after each pipeline, for its native twins.
    let mut interpreted: Vec<(&str, Out)> = Vec::new();
    // The first configuration that ran to its end where the reference faulted.
    let mut first_elided: Option<(&str, Out)> = None;
    // Whether `dce` alone elides the reference's fault too (asked once, at
    // the first elision of a checking run, not of a reduction's).
    let mut dce_asked = only.is_some();
    // The reference with deferred faults, run at the first elision.
    let mut deferred: Option<Out> = None;
    for (name, extra) in configs() {
        let twin = native_twin(extra);
        // A reduction of one configuration's disagreement also runs the
        // interpreter configurations (about 20 ms each), which its native twin
        // and its elided partner are compared with.
        let wanted = only.is_none_or(|o| o == *name || is_interp(extra));
        if !wanted {
            continue;
        }
        let started = Instant::now();
        let got = run(file, args, extra);
        // Pure ops may be deleted when unused (IR-SPEC §3), and a fault of a
        // pure op with it, as may writes that nothing reads (`dce`): a pass may
        // turn a fault into a result, never the reverse, and never change a
        // result. (A backend may not: see `native_twin`.)
        let elided = reference.code == 1 && got.code == 0;
        spent(name, started, elided);
        if got.code == 1 {
            if let Err(w) = located(&got.stderr, file, &text) {
                return Err((
                    name.to_string(),
                    format!("{w}\n--- {name} ---\n{}", got.stderr),
                ));
            }
        }
        if let Some((_, same)) = twin.and_then(|t| interpreted.iter().find(|(q, _)| *q == t)) {
            // The same IR in the same order: a backend neither drops a fault
            // (a missing check is wrong code), nor adds one, nor moves one.
            let (want, have) = (first_error(&same.stderr), first_error(&got.stderr));
            // A native run lowers what is left once more (`fuse,lower`, as
            // `lower_for_native` does), and that round's cleanup may delete a
            // dead faulting op that code motion had sunk into a branch: a
            // pass's elision, not the backend's, when the interpreter after
            // that same pipeline runs to its end too.
            // The same holds for a fault that comes first after that round
            // (a sunk faulting loop no longer runs, a later fault does):
            // then the backend must fault where that interpreter does.
            let moved = got.code == 1 && same.code == 1 && want != have;
            let relowered = same.code == 1
                && (got.code == 0 || moved)
                && twin.is_some_and(|t| {
                    let pipeline = format!("--pass={t},fuse,lower");
                    let again = run(file, args, &[pipeline.as_str(), "--backend=interp"]);
                    again.code == got.code && (got.code == 0 || first_error(&again.stderr) == have)
                });
            let why = if relowered {
                None
            } else if same.code != got.code {
                Some(format!(
                    "exit {} vs {} in the interpreter after the same passes",
                    got.code, same.code
                ))
            } else if got.code == 1 && want != have {
                Some("a different fault than the interpreter's after the same passes".to_string())
            } else {
                None
            };
            if got.code == 1 && same.code == 1 {
                TWIN_FAULTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            if let Some(w) = why {
                return Err((
                    name.to_string(),
                    format!(
                        "{w}\n--- interpreter ---\n{}{}--- {name} ---\n{}{}",
                        same.stdout, same.stderr, got.stdout, got.stderr
                    ),
                ));
            }
        }
        if is_interp(extra) {
            if let Some(pass) = pass_of(extra) {
                interpreted.push((pass, got.clone()));
            }
        }
        let why = if got.code != reference.code && !elided {
            Some(format!(
                "exit {} vs reference {}\n--- reference ---\n{}{}--- {name} ---\n{}{}",
                got.code,
                reference.code,
                reference.stdout,
                reference.stderr,
                got.stdout,
                got.stderr
            ))
        } else if got.code == 0 && !elided {
            common::compare(&reference.stdout, &got.stdout, &p.result_types())
                .err()
                .map(|w| {
                    format!(
                        "{w}\n--- reference ---\n{}--- {name} ---\n{}",
                        reference.stdout, got.stdout
                    )
                })
        } else if elided {
            let allowed = deferred.get_or_insert_with(|| {
                let started = Instant::now();
                let o = run(file, args, &["--backend=interp", "--defer-faults"]);
                spent("reference --defer-faults", started, false);
                o
            });
            if allowed.code != 0 && allowed.code != 1 {
                return Err((
                    "reference --defer-faults".into(),
                    format!("exit {}: {}", allowed.code, allowed.stderr),
                ));
            }
            if !dce_asked {
                dce_asked = true;
                note_elision(file, args, name, &reference, allowed.code == 0);
            }
            // Where the reference with deferred faults ran to its end, no
            // faulting op's value mattered and its results are the ones that
            // deleting them gives; otherwise the configurations that elide the
            // reference's fault compute the same results as one another.
            let base = if allowed.code == 0 {
                Some(("reference --defer-faults", &*allowed))
            } else {
                first_elided.as_ref().map(|(first, o)| (*first, o))
            };
            match base {
                Some((first, o)) => common::compare(&o.stdout, &got.stdout, &p.result_types())
                    .err()
                    .map(|w| {
                        format!(
                            "{w} (both ran to their end where the reference faulted)\n--- {first} ---\n{}--- {name} ---\n{}",
                            o.stdout, got.stdout
                        )
                    }),
                None => {
                    first_elided = Some((name, got.clone()));
                    None
                }
            }
        } else {
            None
        };
        if let Some(w) = why {
            return Err((name.to_string(), w));
        }
    }
    Ok(reference)
}

/// Whether a configuration runs the interpreter (`--backend=interp`).
fn is_interp(extra: &[&str]) -> bool {
    extra.contains(&"--backend=interp")
}

/// The `--pass=` argument of a configuration.
fn pass_of<'a>(extra: &[&'a str]) -> Option<&'a str> {
    extra.iter().find_map(|a| a.strip_prefix("--pass="))
}

/// The pipeline of a native configuration (Cranelift or LLVM), whose code must
/// exit as the interpreter does after the same passes, where [`CONFIGS`] runs
/// it too, and fault exactly where it faults: both run the ops in program
/// order, so the first fault is the same one, with the same location and
/// message. Parallel loops too: the runtime reports the lowest faulting
/// chunk's fault, the one a sequential run reports (`codegen::runtime::parallel`).
fn native_twin<'a>(extra: &[&'a str]) -> Option<&'a str> {
    // `--target=nvptx --device=sim` compiles the host code (LLVM by
    // default) and reports a kernel's fault at its op; a real GPU only
    // says that the kernel trapped.
    let native = extra
        .iter()
        .any(|a| *a == "--backend=cranelift" || *a == "--backend=llvm" || *a == "--device=sim");
    if native {
        pass_of(extra)
    } else {
        None
    }
}

/// Faults of native configurations compared with the interpreter's fault after
/// the same passes ([`native_twin`]), over a run.
static TWIN_FAULTS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Over a run ([`note_elision`]): programs whose reference fault some
/// configuration elided; of those, how many the reference with
/// `--defer-faults` showed allowed; and how many of the others' faults `dce`
/// alone keeps (to audit).
static ELIDED: [std::sync::atomic::AtomicU32; 3] = [
    std::sync::atomic::AtomicU32::new(0),
    std::sync::atomic::AtomicU32::new(0),
    std::sync::atomic::AtomicU32::new(0),
];

std::thread_local! {
    /// The configuration that elided a fault `dce` keeps, in this worker's
    /// last checked program (printed with its seed under `$RANDOM_VERBOSE`).
    static ELIDED_BY_REWRITE: std::cell::RefCell<Option<String>> =
        const { std::cell::RefCell::new(None) };
}

/// Counts a program whose fault configuration `name` elided; `allowed` when
/// the reference with `--defer-faults` ran to its end (no faulting op's value
/// mattered). Otherwise asks whether `dce` alone elides the reference's fault
/// too (the faulting op was dead). Where it does not, a rewrite made the op
/// dead or removed it: legitimately where only part of its value was used (a
/// vector's length, a struct field, a scan output nobody reads) or it sank
/// into a branch not taken; wrongly where its value is used and its check went
/// (the `get(fill(n, x), i)` fold did that before be26d98). Poison is
/// coarser than those rewrites (a fault in a loop body poisons every output of
/// the loop; a branch on poison stops the run even where the branch only sets
/// a var nobody reads), so the driver counts these and `$RANDOM_VERBOSE` lists
/// them for an audit by hand.
fn note_elision(file: &Path, args: &[String], name: &str, reference: &Out, allowed: bool) {
    use std::sync::atomic::Ordering::Relaxed;
    ELIDED[0].fetch_add(1, Relaxed);
    if allowed {
        ELIDED[1].fetch_add(1, Relaxed);
        return;
    }
    let started = Instant::now();
    let dce = run(file, args, &["--pass=dce", "--backend=interp"]);
    // Kept: the same first fault (`dce` may elide it and meet a later one).
    let kept = dce.code == 1 && first_error(&dce.stderr) == first_error(&reference.stderr);
    spent("dce (elision audit)", started, !kept);
    if kept {
        ELIDED[2].fetch_add(1, Relaxed);
        ELIDED_BY_REWRITE.with(|e| *e.borrow_mut() = Some(name.to_string()));
    }
}

/// The first `error:` line of a diagnostic output (the fault a run reports).
fn first_error(stderr: &str) -> &str {
    stderr.lines().find(|l| l.contains("error:")).unwrap_or("")
}

/// Checks that a fault is located in the program (`file:line:col: error: ...`,
/// IR-SPEC's diagnostic form) at a position that holds text: a fault that
/// names no place, or a place outside the program, is not the same located
/// fault as the reference's.
fn located(stderr: &str, file: &Path, text: &str) -> Result<(), String> {
    let line = first_error(stderr);
    let prefix = format!("{}:", file.display());
    let pos = line
        .strip_prefix(&prefix)
        .and_then(|rest| rest.split_once(": error:"))
        .map(|(pos, _)| pos)
        .ok_or_else(|| format!("a fault without a location in {}", file.display()))?;
    let (l, c) = pos
        .split_once(':')
        .and_then(|(l, c)| Some((l.parse::<usize>().ok()?, c.parse::<usize>().ok()?)))
        .ok_or_else(|| format!("a fault at '{pos}', not line:column"))?;
    let holds_text = l >= 1
        && c >= 1
        && text
            .lines()
            .nth(l - 1)
            .and_then(|s| s.as_bytes().get(c - 1))
            .is_some_and(|b| !b.is_ascii_whitespace());
    if holds_text {
        Ok(())
    } else {
        Err(format!(
            "a fault at {l}:{c}, which is not an op of the program"
        ))
    }
}

/// Seconds spent in each configuration's `l0-opt` processes, over all workers
/// (printed at the end of a run, to show where a program's time goes).
/// With each, how many faults of the reference it elided (ran to its end
/// where the reference faulted: a dead pure op or an unread write).
static SPENT: std::sync::Mutex<Vec<(&'static str, f64, u32)>> = std::sync::Mutex::new(Vec::new());

/// Adds the time since `started`, and `elided` elided faults, to
/// configuration `name` in [`SPENT`].
fn spent(name: &'static str, started: Instant, elided: bool) {
    let secs = started.elapsed().as_secs_f64();
    let mut all = SPENT.lock().unwrap_or_else(|e| e.into_inner());
    match all.iter_mut().find(|(n, _, _)| *n == name) {
        Some((_, t, e)) => {
            *t += secs;
            *e += elided as u32;
        }
        None => all.push((name, secs, elided as u32)),
    }
}

/// Drops statements and results while configuration `config` still disagrees.
fn reduce(mut p: Program, args: &[String], file: &Path, config: &str) -> Program {
    let still = |q: &Program| disagreement(q, args, file, Some(config), None).is_err();
    loop {
        let mut changed = false;
        // Fewer results.
        for k in (0..p.results.len()).rev() {
            if p.results.len() > 1 {
                let mut q = p.clone();
                q.results.remove(k);
                if still(&q) {
                    p = q;
                    changed = true;
                }
            }
        }
        // Fewer statements: drop one and everything that uses it (transitively).
        for k in (1..p.stmts.len()).rev() {
            if k >= p.stmts.len() {
                continue;
            }
            let mut dead = vec![p.stmts[k].def.clone()];
            let mut q = p.clone();
            q.stmts = q
                .stmts
                .into_iter()
                .enumerate()
                .filter(|(j, s)| {
                    if *j == k {
                        return false;
                    }
                    if s.uses.iter().any(|u| dead.contains(u)) {
                        dead.push(s.def.clone());
                        return false;
                    }
                    true
                })
                .map(|(_, s)| s)
                .collect();
            q.results.retain(|(v, _)| !dead.contains(v));
            if q.results.is_empty() {
                continue;
            }
            if still(&q) {
                p = q;
                changed = true;
            }
        }
        if !changed {
            return p;
        }
    }
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The forms the generator must keep producing: `(marker, what a program
/// whose text contains the marker has, the fewest programs in a run that
/// must show it)`. A run counts each and fails when one never appears.
/// The fewest is about `ln(1000) / rate` for the form's rate over 1200
/// programs (seeds 350000 to 351199; scatters are in 1.3% of programs), so
/// that a run of any seeds misses a working form with chance below 0.1%.
const FORMS: &[(&str, &str, u64)] = &[
    ("struct.new", "records", 40),
    ("arr.from_vec", "buffers", 40),
    ("scf.index_switch", "switches", 40),
    ("f16 to f64", "f16/bf16", 40),
    (" : i64 to i", "other integer widths", 40),
    ("// guarded", "invariant checks", 40),
    ("// columns", "columns of a transpose", 320),
    ("// jam", "column sums kept as a vector", 320),
    ("// reshape", "reshaped maps", 320),
    ("scf.while", "while loops", 40),
    ("vec.mul", "vec.mul", 40),
    ("[#gen.scan<", "scan, bucket and collect in one loop", 40),
    ("// for-invariant", "an invariant map in scf.for", 40),
    ("// multi-emit", "collects with several emits", 40),
    ("// const-cond", "conditions that fold to constants", 40),
    (
        "// zero-trip",
        "vectors carried through scf.for with constant bounds",
        40,
    ),
    ("// unused result", "unused results", 40),
    ("// mat of a loop", "matrices of loop results", 40),
    ("\"vec.slice\"", "slices", 180),
    ("\"vec.concat\"", "concatenations", 100),
    ("\"vec.from_elements\"", "vector literals", 100),
    ("\"vec.hist\"", "histograms", 100),
    ("\"vec.scatter\"", "scatters", 600),
    ("\"vec.insert\"", "inserts", 180),
    ("// combiner", "user-defined reduce and scan operators", 80),
    ("// hist combiner", "histograms with a combiner", 120),
    (
        "// long combiner",
        "user-defined reduce and scan over several chunks",
        140,
    ),
    ("// nested", "nested arrays", 80),
    ("// parallel", "scf.parallel with reductions", 80),
    ("// stencil", "2-D stencils over a flat index", 80),
    ("// temporaries", "maps whose body allocates", 100),
];

/// What a run of the generator produced (for the assertions that it covers
/// every feature).
#[derive(Default)]
struct Counts {
    faulted: u32,
    /// Programs whose first inputs made them fault, run with others ([`fewer_faults`]).
    rescued: u32,
    runs: usize,
    /// Programs with each of [`FORMS`].
    forms: [u32; FORMS.len()],
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.faulted += o.faulted;
        self.rescued += o.rescued;
        self.runs += o.runs;
        for (n, m) in self.forms.iter_mut().zip(o.forms) {
            *n += m;
        }
    }
}

/// Other inputs tried for a program whose first inputs make it fault.
const RETRIES: u64 = 3;

/// Inputs for `p` that make it run to its end, where possible: a program
/// that faults early leaves its later statements unchecked. Three programs in
/// four whose first inputs `args` make the reference fault get up to
/// [`RETRIES`] other inputs (equal lengths, none shorter than 8), tried in the
/// interpreter; the first that runs to the end replaces them. The fourth
/// keeps its inputs, as do programs that fault with every try: programs still
/// fault on purpose. Returns the inputs, whether a retry replaced them, and
/// the reference's output for them where it ran them (for [`disagreement`]).
fn fewer_faults(
    seed: u64,
    text: &str,
    args: Vec<String>,
    file: &Path,
) -> (Vec<String>, bool, Option<Out>) {
    if seed.is_multiple_of(4) {
        return (args, false, None);
    }
    std::fs::write(file, text).unwrap();
    let first = reference(file, &args);
    if first.code != 1 {
        return (args, false, Some(first));
    }
    for t in 1..=RETRIES {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9) ^ t.wrapping_mul(0xA24B_AED4_963E_E407));
        let other = inputs(&mut rng, true);
        let started = Instant::now();
        let got = run(file, &other, &["--backend=interp"]);
        spent("retries", started, false);
        if got.code == 0 {
            return (other, true, Some(got));
        }
    }
    (args, false, None)
}

/// The reference run of `file` (the interpreter, no passes).
fn reference(file: &Path, args: &[String]) -> Out {
    let started = Instant::now();
    let out = run(file, args, &["--backend=interp"]);
    spent("reference", started, false);
    out
}

/// Set when a worker found a disagreement.
static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Checks the programs of `seeds` in every configuration; panics with a
/// reduced reproducer (written to `dir`) at the first disagreement. `worker`
/// names this worker's scratch files.
fn check_seeds(seeds: impl Iterator<Item = u64>, dir: &Path, worker: usize) -> Counts {
    let file = dir.join(format!("work-{}-{worker}.ir", std::process::id()));
    let check = dir.join(format!("check-{}-{worker}.ir", std::process::id()));
    let mut n = Counts::default();
    // A worker that panics stops the others at their next program.
    struct StopOthers;
    impl Drop for StopOthers {
        fn drop(&mut self) {
            if std::thread::panicking() {
                STOP.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
    let _stop = StopOthers;
    for seed in seeds {
        if STOP.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        let (p, args) = generate(seed);
        let text = p.text();
        let (args, rescued, reference) = fewer_faults(seed, &text, args, &file);
        n.rescued += rescued as u32;
        n.runs += 1 + configs().len();
        if let Some(keep) = std::env::var_os("RANDOM_KEEP") {
            let args: Vec<String> = args.iter().map(|a| format!("--arg={a}")).collect();
            let head = format!("// args: {}\n", args.join(" "));
            std::fs::write(
                Path::new(&keep).join(format!("seed-{seed}.ir")),
                head + &text,
            )
            .unwrap();
        }
        for (n, (marker, _, _)) in n.forms.iter_mut().zip(FORMS) {
            *n += text.contains(marker) as u32;
        }
        let reference = match disagreement(&p, &args, &file, None, reference) {
            Ok(reference) => reference,
            Err((config, why)) => {
                let small = reduce(p, &args, &file, &config);
                let repro = dir.join(format!("seed-{seed}.ir"));
                let text = format!(
                "// random program seed {seed}: '{config}' disagrees with the interpreter\n// args: {}\n{}",
                args.iter().map(|a| format!("--arg=\"{a}\"")).collect::<Vec<_>>().join(" "),
                small.text()
            );
                std::fs::write(&repro, &text).unwrap();
                let _ = std::fs::remove_file(&file);
                let now = disagreement(&small, &args, &check, Some(&config), None)
                    .err()
                    .map_or(why, |(_, w)| w);
                // A native backend: is it a wrong in-bounds proof or a wrong translation?
                let verdict = configs()
                    .iter()
                    .find(|(n, _)| *n == config && (n.contains("cranelift") || n.contains("llvm")))
                    .map(|(_, extra)| {
                        let mut e = extra.to_vec();
                        e.push("--keep-all-checks");
                        let r = run(&check, &args, &e);
                        if r.code == 1 {
                            "with --keep-all-checks it faults: a wrong in-bounds proof"
                        } else {
                            "with --keep-all-checks it still disagrees: a wrong translation"
                        }
                    })
                    .unwrap_or("");
                panic!(
                    "seed {seed}: {config} disagrees (reproducer in {}):\n{text}\n{now}\n{verdict}",
                    repro.display()
                );
            }
        };
        n.faulted += (reference.code == 1) as u32;
        let by_rewrite = ELIDED_BY_REWRITE.with(|e| e.borrow_mut().take());
        if reference.code == 1 && std::env::var_os("RANDOM_VERBOSE").is_some() {
            eprintln!(
                "seed {seed}: {}{}",
                reference.stderr.lines().next().unwrap_or(""),
                by_rewrite.map_or(String::new(), |c| format!(
                    " (elided by '{c}', kept by dce: audit it)"
                ))
            );
        }
    }
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_file(&check);
    n
}

/// `$RANDOM_PROGRAMS` programs (default 80) from seed `$RANDOM_SEED` (default
/// 1), shared among `$RANDOM_JOBS` worker threads (default: the number of
/// cores, at most 16), each running `l0-opt` processes.
#[test]
fn random_programs_agree_everywhere() {
    let count = env_num("RANDOM_PROGRAMS", 80);
    let first = env_num("RANDOM_SEED", 1);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let jobs = env_num("RANDOM_JOBS", cores.min(16) as u64).clamp(1, 64);
    let dir = root().join("target/random-failures");
    std::fs::create_dir_all(&dir).unwrap();
    let started = Instant::now();
    let mut n = Counts::default();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..jobs)
            .map(|w| {
                let dir = &dir;
                let seeds = (first + w..first + count).step_by(jobs as usize);
                s.spawn(move || check_seeds(seeds, dir, w as usize))
            })
            .collect();
        for h in workers {
            match h.join() {
                Ok(c) => n.add(&c),
                Err(e) => std::panic::resume_unwind(e),
            }
        }
    });
    let Counts {
        faulted,
        rescued,
        runs,
        forms,
    } = n;
    let twinned = TWIN_FAULTS.load(std::sync::atomic::Ordering::Relaxed);
    let secs = started.elapsed().as_secs_f64();
    let seen: Vec<String> = FORMS
        .iter()
        .zip(forms)
        .map(|((_, what, _), k)| format!("{k} with {what}"))
        .collect();
    eprintln!(
        "random: {count} programs ({faulted} faulting on purpose, {rescued} run with other inputs that do not fault, {twinned} native faults the same as the interpreter's after the same passes, {}), {runs} runs in {secs:.1} s on {jobs} threads: {:.0} programs/minute",
        seen.join(", "),
        count as f64 * 60.0 / secs
    );
    let elided = ELIDED
        .each_ref()
        .map(|e| e.load(std::sync::atomic::Ordering::Relaxed));
    eprintln!(
        "random: {} programs whose fault some configuration elided: {} shown allowed by the reference with --defer-faults (and their results checked against it), {} of the others faults that dce alone keeps (a rewrite elided them: RANDOM_VERBOSE=1 lists them for an audit)",
        elided[0], elided[1], elided[2]
    );
    let spent = SPENT.lock().unwrap_or_else(|e| e.into_inner());
    let total: f64 = spent.iter().map(|(_, t, _)| t).sum();
    for (name, t, elided) in spent.iter() {
        eprintln!(
            "random: {:5.1}% {t:8.1} s  {name}{}",
            100.0 * t / total.max(1e-9),
            if *elided > 0 {
                format!(" ({elided} faults elided)")
            } else {
                String::new()
            }
        );
    }
    assert!(
        faulted < count as u32,
        "every program faulted: the generator is broken"
    );
    // A program that faults leaves its later statements unchecked: most must
    // run to their end (34% faulted over seeds 90000 to 90399).
    assert!(
        count < 80 || (faulted as u64) * 10 < count * 6,
        "{faulted} of {count} programs faulted: too many stop early"
    );
    assert!(
        count < 80 || rescued > 0,
        "no program ran with other inputs: fewer_faults is broken"
    );
    assert!(
        count < 80 || std::env::var_os("RANDOM_ONLY").is_some() || twinned > 0,
        "no native fault was compared with the interpreter's: native_twin is broken"
    );
    for ((_, what, fewest), k) in FORMS.iter().zip(forms) {
        assert!(
            count < *fewest || k > 0,
            "no program had {what}: the generator is broken"
        );
    }
}

/// What [`located`] accepts: a fault at a position that holds an op's text.
#[test]
fn located_faults() {
    let file = Path::new("/tmp/p.ir");
    let text = "func.func @main() {\n  %a = vec.get %x, %i : vec<f64>\n}\n";
    let at = |pos: &str| {
        located(
            &format!("/tmp/p.ir:{pos}: error: 'vec.get' op index 3\n"),
            file,
            text,
        )
    };
    assert!(at("2:3").is_ok());
    assert!(at("2:1").is_err(), "indentation is not an op");
    assert!(at("2:99").is_err(), "past the end of the line");
    assert!(at("9:1").is_err(), "past the last line");
    assert!(at("0:1").is_err());
    assert!(at("x:1").is_err());
    assert!(
        located("error: 'vec.get' op index 3\n", file, text).is_err(),
        "no location"
    );
    assert!(
        located("/tmp/q.ir:2:3: error: x\n", file, text).is_err(),
        "another file"
    );
}

/// Every native configuration (Cranelift and LLVM) has an interpreter
/// configuration with the same passes, before it in [`CONFIGS`], to compare
/// its exit and its fault with.
#[test]
fn native_configurations_have_interpreter_twins() {
    let mut natives = 0;
    for (k, (name, e)) in CONFIGS.iter().enumerate() {
        let Some(t) = native_twin(e) else { continue };
        natives += 1;
        assert!(
            CONFIGS[..k]
                .iter()
                .any(|(_, i)| is_interp(i) && pass_of(i) == Some(t)),
            "{name}: no interpreter configuration before it runs --pass={t}"
        );
    }
    assert_eq!(natives, 9);
    assert_eq!(native_twin(&["--pass=lower", "--backend=interp"]), None);
}
