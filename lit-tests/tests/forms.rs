//! Custom and generic forms of every op (issue 11, item 4): every op of
//! every dialect has a custom form, and the corpus of `.ir` files in the
//! repository (lit test inputs and examples) round-trips through both
//! forms: printing custom, re-parsing and printing generic gives the generic
//! print of the original, and custom-to-custom is the identity. The corpus
//! must use every registered op, so a new op without a test input fails.

use std::collections::BTreeSet;
use std::path::Path;

use ir::printer::{print_module, PrintOptions};
use lit_tests::runlines::collect_ir_files;

/// Parts of a file as `--split-input-file` splits it.
fn parts(text: &str) -> Vec<String> {
    text.split("\n// -----\n").map(str::to_string).collect()
}

fn print(ctx: &ir::Context, generic: bool) -> String {
    print_module(
        ctx,
        PrintOptions {
            generic,
            ..Default::default()
        },
    )
}

#[test]
fn every_op_has_a_custom_form() {
    let r = dialects::registry();
    let missing: Vec<&str> = r
        .specs()
        .iter()
        .filter(|s| s.print.is_none() && s.format.is_none())
        .map(|s| s.name)
        .collect();
    assert!(missing.is_empty(), "ops without a custom form: {missing:?}");
}

#[test]
fn corpus_round_trips_in_both_forms() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    collect_ir_files(&root.join("lit-tests/tests/ir"), &mut files);
    collect_ir_files(&root.join("examples"), &mut files);
    files.retain(|f| !f.components().any(|c| c.as_os_str() == "standalone"));
    files.sort();
    let registry = dialects::registry();
    let mut seen = BTreeSet::new();
    let mut checked = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).expect("readable");
        for (k, part) in parts(&text).into_iter().enumerate() {
            let name = format!("{}#{k}", f.display());
            // Inputs that are meant to fail (error tests) are skipped.
            let Ok(ctx) = ir::build::parse_source(&name, &part, registry.clone()) else {
                continue;
            };
            if ir::verifier::verify(&ctx).is_err() {
                continue;
            }
            for op in ctx.walk_all() {
                seen.insert(ctx.op_name(op).to_string());
            }
            let custom = print(&ctx, false);
            let generic = print(&ctx, true);
            let again = ir::build::parse_source("custom.ir", &custom, registry.clone())
                .unwrap_or_else(|d| {
                    panic!(
                        "{name}: the custom print does not parse: {}\n{custom}",
                        d.message
                    )
                });
            assert_eq!(
                print(&again, true),
                generic,
                "{name}: custom -> generic differs"
            );
            assert_eq!(
                print(&again, false),
                custom,
                "{name}: custom -> custom differs"
            );
            let from_generic = ir::build::parse_source("generic.ir", &generic, registry.clone())
                .unwrap_or_else(|d| {
                    panic!("{name}: the generic print does not parse: {}", d.message)
                });
            assert_eq!(
                print(&from_generic, false),
                custom,
                "{name}: generic -> custom differs"
            );
            checked += 1;
        }
    }
    let unused: Vec<&str> = registry
        .specs()
        .iter()
        .map(|s| s.name)
        .filter(|n| !seen.contains(*n))
        .collect();
    assert!(checked > 50, "only {checked} inputs parsed");
    assert!(
        unused.is_empty(),
        "ops no corpus input uses (add a round-trip test): {unused:?}"
    );
}
