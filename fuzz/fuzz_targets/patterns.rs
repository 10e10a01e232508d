//! The pattern fuzzer (issue 43): a module that verifies is mutated with
//! choices drawn from the input's hash (`passes::mutate`), and on the mutant
//! every fold and canonical rewrite is applied alone (the module must verify
//! after each) and every pass pipeline runs; a panic or IR that does not
//! verify is a crash. `passes/tests/pattern_fuzz.rs` runs the same checks on
//! the lit tests for a fixed seed range.
#![no_main]

use std::hash::{Hash, Hasher};

use libfuzzer_sys::fuzz_target;
use passes::mutate::{check_patterns, check_pipelines, mutant, print_generic, FuzzRng};

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Some(ctx) = common::parse(data) else {
        return;
    };
    // Each pattern application re-parses the module: keep an input (under
    // ASan) well inside libFuzzer's per-input time limit. Larger modules
    // are the cargo test's (passes/tests/pattern_fuzz.rs).
    if ctx.num_ops() > 60 {
        return;
    }
    let registry = dialects::registry();
    let text = print_generic(&ctx);
    let mut h = std::collections::hash_map::DefaultHasher::new();
    data.hash(&mut h);
    let mut rng = FuzzRng::Seed(h.finish());
    let rounds = 1 + rng.below(3);
    let m = mutant(&text, &registry, &mut rng, rounds).unwrap_or(text);
    if let Err(e) = check_patterns(&m, &registry).and_then(|_| check_pipelines(&m, &registry)) {
        panic!("{e}\n--- mutant:\n{m}");
    }
});
