//! `emit_object`: the object links with `runtime/l0rt.c` and
//! `runtime/example_main.c` (skipped when `gcc` is missing).

mod common;
use common::*;

use std::path::PathBuf;
use std::process::Command;

const SUMSQ: &str = r#"
func.func @main(%x: vec<f64>) -> f64 {
  %sq = "vec.map"(%x) ({
  ^bb0(%e: f64):
    %m = "arith.mulf"(%e, %e) : (f64, f64) -> f64
    "vec.yield"(%m) : (f64) -> ()
  }) : (vec<f64>) -> vec<f64>
  %s = "vec.sum"(%sq) : (vec<f64>) -> f64
  "func.return"(%s) : (f64) -> ()
}
"#;

#[test]
fn object_file_links_with_the_c_runtime() {
    let ctx = build(SUMSQ, "fuse,lower");
    link_and_run_sumsq(codegen::emit_object(&ctx).unwrap(), "cranelift");
}

/// The LLVM backend's object file has the same contract.
#[test]
fn llvm_object_file_links_with_the_c_runtime() {
    let ctx = build(SUMSQ, "fuse,lower");
    link_and_run_sumsq(codegen::llvm::emit_object(&ctx).unwrap(), "llvm");
}

fn link_and_run_sumsq(bytes: Vec<u8>, tag: &str) {
    assert_eq!(&bytes[..4], b"\x7fELF");
    if Command::new("gcc").arg("--version").output().is_err() {
        eprintln!("gcc not found: skipping the link test");
        return;
    }
    let rt = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("runtime");
    let dir = std::env::temp_dir().join(format!("l0-codegen-obj-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let obj = dir.join("sumsq.o");
    std::fs::write(&obj, &bytes).unwrap();
    let exe = dir.join("sumsq");
    let st = Command::new("gcc")
        .arg("-Wall")
        .arg("-I")
        .arg(&rt)
        .arg("-o")
        .arg(&exe)
        .arg(rt.join("example_main.c"))
        .arg(rt.join("l0rt.c"))
        .arg(&obj)
        .arg("-lm")
        .status()
        .unwrap();
    assert!(st.success(), "gcc failed");
    let out = Command::new(&exe).arg("100").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("= 328350 (expected 328350)"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Row sums and a bucket-collect of a `vec<vec<f64>>`, called from C.
const NESTED: &str = r#"
func.func @rows(%m: vec<vec<f64>>) -> (vec<f64>, vec<vec<f64>>) {
  %s = "vec.map"(%m) ({
  ^bb0(%row: vec<f64>):
    %t = "vec.sum"(%row) : (vec<f64>) -> f64
    "vec.yield"(%t) : (f64) -> ()
  }) : (vec<vec<f64>>) -> vec<f64>
  "func.return"(%s, %m) : (vec<f64>, vec<vec<f64>>) -> ()
}
"#;

const NESTED_MAIN: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include "l0rt.h"
struct out { double *sums; int64_t n; l0_vec *rows; int64_t nrows; };
int8_t l0_rows(const l0_vec *m, int64_t n, struct out *o);
int main(void) {
    double a[] = {1.0, 2.0}, c[] = {3.5};
    l0_vec m[] = {{a, 2}, {NULL, 0}, {c, 1}};
    struct out o;
    if (l0_rows(m, 3, &o)) return 1;
    printf("%g %g %g |", o.sums[0], o.sums[1], o.sums[2]);
    for (int64_t i = 0; i < o.nrows; i++)
        for (int64_t j = 0; j < o.rows[i].len; j++) printf(" %g", ((double *)o.rows[i].data)[j]);
    printf("\n");
    free(o.sums);
    l0_vec_free(o.rows, o.nrows, 1);
    return 0;
}
"#;

#[test]
fn nested_vectors_cross_the_c_boundary() {
    let ctx = build(NESTED, "lower");
    let bytes = codegen::emit_object(&ctx).unwrap();
    if Command::new("gcc").arg("--version").output().is_err() {
        eprintln!("gcc not found: skipping the link test");
        return;
    }
    let rt = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("runtime");
    let dir = std::env::temp_dir().join(format!("l0-codegen-nested-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let obj = dir.join("rows.o");
    std::fs::write(&obj, &bytes).unwrap();
    let main = dir.join("main.c");
    std::fs::write(&main, NESTED_MAIN).unwrap();
    let exe = dir.join("rows");
    let st = Command::new("gcc")
        .arg("-Wall")
        .arg("-I")
        .arg(&rt)
        .arg("-o")
        .arg(&exe)
        .arg(&main)
        .arg(rt.join("l0rt.c"))
        .arg(&obj)
        .arg("-lm")
        .status()
        .unwrap();
    assert!(st.success(), "gcc failed");
    let out = Command::new(&exe).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert_eq!(text.trim(), "3 0 3.5 | 1 2 3.5");
    let _ = std::fs::remove_dir_all(&dir);
}
