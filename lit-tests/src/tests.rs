//! Unit tests of the FileCheck translation: directives that must pass and must fail.

use crate::checkfile::{canonicalize, parse_check_file, parse_pattern, Piece};
use crate::translate::{check, patch_regex, Outcome};

fn run_with(checks: &str, input: &str, prefix: &str) -> Outcome {
    match parse_check_file(checks, &[prefix.to_string()]) {
        Ok(d) => check(&d, input, "t.ir"),
        Err(e) => Outcome::Error(e.to_string()),
    }
}

fn run(checks: &str, input: &str) -> Outcome {
    run_with(checks, input, "CHECK")
}

fn passes(checks: &str, input: &str) {
    assert_eq!(
        run(checks, input),
        Outcome::Pass,
        "checks:\n{checks}\ninput:\n{input}"
    );
}

fn fails(checks: &str, input: &str) -> String {
    match run(checks, input) {
        Outcome::Fail(m) => m,
        o => panic!("expected Fail, got {o:?}\nchecks:\n{checks}\ninput:\n{input}"),
    }
}

fn errors(checks: &str, input: &str) -> String {
    match run(checks, input) {
        Outcome::Error(m) => m,
        o => panic!("expected Error, got {o:?}\nchecks:\n{checks}"),
    }
}

#[test]
fn plain_check_in_order() {
    passes("// CHECK: one\n// CHECK: two", "one\ntwo\n");
    passes("// CHECK: ne tw", "one two\n"); // no implicit word boundaries
    fails("// CHECK: two\n// CHECK: one", "one\ntwo\n");
    let m = fails("// CHECK: three", "one\ntwo\n");
    assert!(m.contains("t.ir:1:") && m.contains("CHECK: three"), "{m}");
}

#[test]
fn next_same_empty() {
    passes("CHECK: a\nCHECK-NEXT: b\nCHECK-SAME: c", "a\nb c\n");
    fails("CHECK: a\nCHECK-NEXT: b", "a\n\nb\n");
    fails("CHECK: a\nCHECK-NEXT: b", "a b\n");
    fails("CHECK: a\nCHECK-SAME: b", "a\nb\n");
    passes("CHECK: a\nCHECK-EMPTY:\nCHECK-NEXT: b", "a\n\nb\n");
    fails("CHECK: a\nCHECK-EMPTY:", "a\nb\n");
    errors("CHECK-NEXT: a", "a\n");
    // LLVM takes the first match after the previous one: here on the same line.
    let m = fails("CHECK: a\nCHECK-NEXT: b", "a b\nb\n");
    assert!(m.contains("same line"), "{m}");
    passes("CHECK: a\nCHECK-EMPTY:", "a\n");
    fails("CHECK: a\nCHECK-EMPTY:", "a");
    passes(
        "CHECK: a\nCHECK-EMPTY:\nCHECK-EMPTY:\nCHECK-NEXT: b",
        "a x\n\n\nb\n",
    );
    errors("CHECK-EMPTY: x\n", "a\n");
}

#[test]
fn not_between_checks() {
    passes("CHECK: a\nCHECK-NOT: x\nCHECK: b", "a y b x\n");
    let m = fails("CHECK: a\nCHECK-NOT: x\nCHECK: b", "a x b\n");
    assert!(m.contains("CHECK-NOT: x"), "{m}");
    fails("CHECK: a\nCHECK-NOT: x", "a\nx\n");
    passes("CHECK-NOT: x\nCHECK: a", "a x\n");
    fails("CHECK-NOT: x\nCHECK: a", "x a\n");
}

#[test]
fn labels_split_blocks() {
    let checks = "CHECK-LABEL: func @f\nCHECK: ret\nCHECK-LABEL: func @g\nCHECK: ret";
    passes(checks, "func @f\n ret\nfunc @g\n ret\n");
    // `ret` of @f is missing: without blocks it would match @g's.
    fails(checks, "func @f\nfunc @g\n ret\n");
    fails("CHECK-LABEL: missing", "a\n");
    // CHECK-NOT stops at the next label.
    passes("CHECK-LABEL: f\nCHECK-NOT: x\nCHECK-LABEL: g", "f\ng x\n");
    errors("CHECK-LABEL: [[X:a]]", "a\n");
}

#[test]
fn dag_any_order() {
    passes(
        "CHECK: a\nCHECK-DAG: c\nCHECK-DAG: b\nCHECK: d",
        "a b c d\n",
    );
    fails("CHECK: a\nCHECK-DAG: c\nCHECK: d", "a b d\n");
}

#[test]
fn regex_and_variables() {
    passes("CHECK: %{{[0-9]+}} = add", "%12 = add\n");
    passes(
        "CHECK: [[V:%[0-9]+]] = x\nCHECK: use [[V]]",
        "%3 = x\nuse %3\n",
    );
    fails(
        "CHECK: [[V:%[0-9]+]] = x\nCHECK: use [[V]]",
        "%3 = x\nuse %4\n",
    );
    // Variables survive CHECK-LABEL blocks.
    passes(
        "CHECK-LABEL: f\nCHECK: [[V:%[0-9]+]] = x\nCHECK-LABEL: g\nCHECK: use [[V]]",
        "f\n%3 = x\ng\nuse %3\n",
    );
    let m = fails("CHECK: use [[NOPE]]", "use x\n");
    assert!(m.contains("undefined variable"), "{m}");
    // `[^...]` never crosses a line, as in POSIX newline-sensitive mode.
    fails("CHECK: a{{[^x]*}}b", "a\nb\n");
    passes("CHECK: [[@LINE]]: x", "1: x\n");
    passes("CHECK: cost $5 [x]", "cost $5 [x]\n");
}

#[test]
fn whitespace_is_canonicalized() {
    passes("CHECK: a  b", "a\t \tb\n");
    passes("CHECK: a b", "a    b\n");
    fails("CHECK: ab", "a b\n");
    assert_eq!(canonicalize("a \t b\r\nc"), "a b\nc");
}

#[test]
fn prefixes_and_comments() {
    assert_eq!(
        run_with("BAD: zzz\nCHECK: a", "a\n", "CHECK"),
        Outcome::Pass
    );
    assert!(matches!(
        run_with("BAD: zzz", "a\n", "BAD"),
        Outcome::Fail(_)
    ));
    passes("COM: CHECK: zzz\nCHECK: a", "a\n");
    passes("XCHECK: zzz\nCHECK: a", "a\n");
}

#[test]
fn no_directives_is_an_error() {
    let m = errors("just text\n// check: lowercase is not LLVM\n", "a\n");
    assert!(m.contains("no check directives found"), "{m}");
}

#[test]
fn bad_check_files() {
    errors("CHECK:\n", "a\n");
    errors("CHECK: {{unclosed\n", "a\n");
    errors("CHECK: {{(}}\n", "a\n");
    errors("CHECK: [[#N]]\n", "a\n");
}

#[test]
fn pattern_parsing() {
    let p = parse_pattern("a{{b}}[[X:[a-z]]]c[[X]]", 1).unwrap();
    assert_eq!(
        p,
        vec![
            Piece::Lit("a".into()),
            Piece::Regex("b".into()),
            Piece::Def("X".into(), "[a-z]".into()),
            Piece::Lit("c".into()),
            Piece::Use("X".into()),
        ]
    );
    assert_eq!(patch_regex("[^a]"), "[^\\na]");
    assert_eq!(patch_regex("[^]x]"), "[^\\n\\]x]");
    assert_eq!(patch_regex("[[:alpha:]]"), "[[:alpha:]]");
}

#[test]
fn count_repeats_a_check() {
    passes("// CHECK-COUNT-2: x\n// CHECK: y", "x\nx\ny\n");
    passes("// CHECK-COUNT-1: x", "x\n");
    fails("// CHECK-COUNT-3: x", "x\nx\n");
    fails("// CHECK-COUNT-2: x\n// CHECK: y", "x\ny\nx\n");
    let m = errors("// CHECK-COUNT-0: x", "x\n");
    assert!(m.contains("invalid count"), "{m}");
}

#[test]
fn misspelled_directives_are_errors() {
    let m = errors("// CHECK: a\n// CHECK-NXT: b", "a\nb\n");
    assert!(
        m.contains("unsupported check directive 'CHECK-NXT:'"),
        "{m}"
    );
    let m = errors("// CHECK-COUNT: a", "a\n");
    assert!(m.contains("'CHECK-COUNT:'"), "{m}");
    // A longer prefix is not a misspelling of a shorter one.
    let d = parse_check_file(
        "// CHECK: a\n// CHECK-GEN: b",
        &["CHECK".to_string(), "CHECK-GEN".to_string()],
    );
    assert_eq!(d.map(|d| d.len()).ok(), Some(2));
    // Text that is no directive stays text.
    passes(
        "// CHECK: a CHECK-ish\n// CHECK-NOT: CHECK-",
        "a CHECK-ish\n",
    );
}

#[test]
fn prefixes_of_other_runs_are_no_misspellings() {
    let text =
        "// RUN: x | FileCheck %s --check-prefix=SAME-FOLD\n// SAME: a\n// SAME-FOLD-LABEL: b";
    let d = parse_check_file(text, &["SAME".to_string()]);
    assert_eq!(d.map(|d| d.len()).ok(), Some(1));
    let text = "// RUN: x | FileCheck %s --check-prefixes=A,B-C\n// B: a\n// B-D: b";
    assert!(parse_check_file(text, &["B".to_string()]).is_err());
}
