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
    let bytes = codegen::emit_object(&ctx).unwrap();
    assert_eq!(&bytes[..4], b"\x7fELF");
    if Command::new("gcc").arg("--version").output().is_err() {
        eprintln!("gcc not found: skipping the link test");
        return;
    }
    let rt = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("runtime");
    let dir = std::env::temp_dir().join(format!("l0-codegen-obj-{}", std::process::id()));
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
