//! The pattern fuzzer (issue 43, items 2 and 3): every module of the lit
//! tests and examples is mutated ([`passes::mutate::mutate`]: operands
//! replaced, made constant or swapped, result-less ops duplicated or wrapped
//! in an `scf.if` on a constant), and on each mutant that verifies every fold
//! and canonical rewrite of every op is applied alone and the module verified
//! after it, and every pass pipeline runs with verification after each pass.
//! A panic or IR that does not verify fails the test with the mutant.
//!
//! `PATTERN_FUZZ_SEEDS` (default 3) mutants per module part and
//! `PATTERN_FUZZ_SEED` (default 1) the first seed; cargo-fuzz's `patterns`
//! target runs the same checks on mutants its bytes choose.

use std::path::{Path, PathBuf};

use lit_tests::runlines::collect_ir_files;
use passes::mutate::{check_patterns, check_pipelines, mutant, FuzzRng};

fn corpus() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    // The seeds of the other fuzzers: every lit test and example (the
    // standalone example's `poly` files do not parse here and are skipped).
    for dir in ["lit-tests/tests/ir", "examples"] {
        collect_ir_files(&root.join(dir), &mut files);
    }
    files.sort();
    let mut parts = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for part in text.split("// -----") {
            parts.push((f.clone(), part.to_string()));
        }
    }
    parts
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

#[test]
fn patterns_and_passes_survive_mutants() {
    let registry = dialects::registry();
    let seeds = env_num("PATTERN_FUZZ_SEEDS", 3);
    let first = env_num("PATTERN_FUZZ_SEED", 1);
    let (mut mutants, mut applied, mut failures) = (0usize, 0usize, Vec::new());
    let parts = corpus();
    assert!(parts.len() > 100, "the corpus was not found");
    for (k, (file, text)) in parts.iter().enumerate() {
        // Unmutated first: the patterns of the corpus itself.
        let mut texts = vec![text.clone()];
        for s in first..first + seeds {
            let mut rng = FuzzRng::Seed(s.wrapping_mul(0x1_0000_0001) ^ k as u64);
            let rounds = 1 + rng.below(3);
            if let Some(m) = mutant(text, &registry, &mut rng, rounds) {
                texts.push(m);
            }
        }
        for t in texts {
            mutants += 1;
            let r = check_patterns(&t, &registry).and_then(|n| {
                applied += n;
                check_pipelines(&t, &registry)
            });
            if let Err(e) = r {
                failures.push(format!(
                    "{} (part {k}): {e}\n--- module:\n{t}",
                    file.display()
                ));
            }
        }
    }
    eprintln!(
        "pattern fuzzer: {mutants} modules ({} corpus parts), {applied} pattern applications, {} failures",
        parts.len(),
        failures.len()
    );
    if !failures.is_empty() {
        for f in failures.iter().take(5) {
            eprintln!("{f}\n");
        }
        panic!("{} mutants broke a pattern or a pass", failures.len());
    }
}

/// The three reproducers of issue 43, which panicked in `gen.loop`'s
/// copy-loop pattern (it read a result of the body's first op before
/// checking that op was a `vec.get`).
#[test]
fn issue_43_reproducers_do_not_panic() {
    let registry = dialects::registry();
    for text in [R1, R2] {
        check_patterns(text, &registry).unwrap();
        check_pipelines(text, &registry).unwrap();
    }
}

const R1: &str = r#"
func.func @main(%x2: vec<index>) -> mat<i64> {
  %v46 = "vec.len"(%x2) : (vec<index>) -> index
  %v73 = "gen.loop"(%v46) ({
  ^bb0(%i49: index, %h51: !gen.collect<i64>):
    %v70 = "arith.constant"() {value = 0 : i64} : () -> i64
    "gen.emit"(%h51, %v70) : (!gen.collect<i64>, i64) -> ()
    "gen.emit"(%h51, %v70) : (!gen.collect<i64>, i64) -> ()
    "gen.end"() : () -> ()
  }) {gens = [#gen.collect]} : (index) -> vec<i64>
  %v74 = "vec.len"(%v73) : (vec<i64>) -> index
  %v75 = "arith.constant"() {value = 1 : index} : () -> index
  %v76 = "mat.from"(%v73, %v74, %v75) : (vec<i64>, index, index) -> mat<i64>
  "func.return"(%v76) : (mat<i64>) -> ()
}
"#;

const R2: &str = r#"
func.func @main(%x2: vec<f64>, %s5: f64) -> vec<f64> {
  %v11 = "arith.constant"() {value = 0 : index} : () -> index
  %v14 = "arith.constant"() {value = true} : () -> i1
  %v15 = "vec.len"(%x2) : (vec<f64>) -> index
  %v18 = "gen.loop"(%v15) ({
  ^bb0(%i16: index, %h17: !gen.collect<f64>):
    "gen.emit"(%h17, %s5) : (!gen.collect<f64>, f64) -> ()
    "scf.if"(%v14) ({
      "gen.emit"(%h17, %s5) : (!gen.collect<f64>, f64) -> ()
      "scf.yield"() : () -> ()
    }, {
      "scf.yield"() : () -> ()
    }) : (i1) -> ()
    "gen.end"() : () -> ()
  }) {gens = [#gen.collect]} : (index) -> vec<f64>
  %v28 = "arith.constant"() {value = 0 : i64} : () -> i64
  %v36, %v37 = "scf.for"(%v11, %v11, %v11, %v18, %v28) ({
  ^bb0(%i33: index, %a34: vec<f64>, %a35: i64):
    "scf.yield"(%a34, %a35) : (vec<f64>, i64) -> ()
  }) : (index, index, index, vec<f64>, i64) -> (vec<f64>, i64)
  "func.return"(%v36) : (vec<f64>) -> ()
}
"#;
