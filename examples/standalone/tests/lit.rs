//! Runs `test/*.ir` (the lit tests `lit test/` runs with LLVM's FileCheck)
//! under `cargo test`: each RUN line under `bash -o pipefail`, with
//! `poly-opt` this crate's binary and `FileCheck`/`not` L0's harness
//! binaries (`l0-filecheck`, `l0-not`, built on demand); each RUN line is
//! bounded by `LIT_TIMEOUT` seconds (default 60) as in the main harness.

use std::path::{Path, PathBuf};
use std::process::Command;

use lit_tests::runlines::{
    collect_ir_files, lit_timeout, parse_run_lines, run_cmd, substitute, Substitutions,
};

/// `l0-filecheck` or `l0-not` next to `poly-opt`, built first if missing.
fn harness_bin(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_BIN_EXE_poly-opt"))
        .parent()
        .expect("a target directory");
    let bin = dir.join(name);
    if !bin.is_file() {
        let profile = match dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev",
            Some(p) => p,
        };
        let target = dir.parent().expect("a target directory");
        let ok = Command::new(env!("CARGO"))
            .args([
                "build",
                "-q",
                "-p",
                "lit-tests",
                "--bins",
                "--profile",
                profile,
            ])
            .arg("--target-dir")
            .arg(target)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "cannot build the lit harness (cargo build -p lit-tests --bins)"
        );
    }
    bin
}

#[test]
fn lit() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("test");
    let mut files: Vec<PathBuf> = Vec::new();
    collect_ir_files(&dir, &mut files);
    files.sort();
    assert!(!files.is_empty(), "no test/*.ir");
    let (filecheck, not) = (harness_bin("l0-filecheck"), harness_bin("l0-not"));
    let poly_opt = Path::new(env!("CARGO_BIN_EXE_poly-opt"));
    let tmp = std::env::temp_dir().join(format!("poly-lit-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("a temporary directory");
    let mut failures = Vec::new();
    let timeout = lit_timeout();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("readable test");
        let cmds = parse_run_lines(&text);
        assert!(!cmds.is_empty(), "{}: no RUN line", file.display());
        let subs = Substitutions {
            file,
            tmp: &tmp.join("t"),
            l0_opt: None,
            filecheck: &filecheck,
            not: &not,
            extra: &[("poly-opt", poly_opt)],
        };
        for raw in cmds {
            let cmd = substitute(&raw, &subs).expect("substitution");
            // The main harness's runner: a process group killed after
            // LIT_TIMEOUT seconds (default 60), so a hanging RUN line fails.
            let (ok, status, stdout, stderr) = run_cmd(&cmd, &tmp, timeout);
            if !ok {
                failures.push(format!(
                    "{}: RUN: {raw}\n({status})\n{stdout}{stderr}",
                    file.display(),
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
