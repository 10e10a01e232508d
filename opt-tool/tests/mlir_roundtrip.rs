//! Output that MLIR reads (issue 10, item 4): for every lit file whose IR
//! uses only the dialects L0 shares with MLIR (builtin, func, arith, scf) and
//! MLIR's types, L0's output, in the custom form and in the generic form, is
//! read by `mlir-opt-16`, and `mlir-opt`'s own output of it is read back by
//! `l0-opt`. L0 prints with `--print-mlir-names` (`math.sqrt` for
//! `arith.sqrt`).
//!
//! `mlir-opt` is `$MLIR_OPT`, `/usr/lib/llvm-16/bin/mlir-opt`, or
//! `mlir-opt-16` on the `PATH` (Debian's `mlir-16-tools`, which `.ci/run`
//! installs). Without it the test says so and passes, unless
//! `L0_REQUIRE_MLIR=1`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;
use common::{collect, root};

/// Ops, types and attributes that only L0 has (or that MLIR 16 lacks).
const L0_ONLY: &[&str] = &[
    "vec<",
    "arr<",
    "mat<",
    "var<",
    "struct<",
    "!gen.",
    "#gen.",
    "vec.",
    "arr.",
    "mat.",
    "gen.",
    "var.",
    "gpu.",
    "struct.",
    "scf.assert",
    "scf.forall",
    "minimumf",
    "maximumf",
    "minnumf",
    "maxnumf",
    "arith.minf",
    "arith.maxf",
    "arith.mini",
    "arith.maxi",
    "{reassoc}",
    "in_bounds",
];

/// Files whose IR L0 accepts and MLIR 16 does not, with the reason.
const SKIP: &[(&str, &str)] = &[(
    "core/roundtrip-scf.ir",
    "L0's arith.sitofp also takes an index operand; MLIR's needs a fixed-width integer",
)];

fn mlir_opt() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("MLIR_OPT") {
        return Some(PathBuf::from(p));
    }
    let debian = Path::new("/usr/lib/llvm-16/bin/mlir-opt");
    if debian.exists() {
        return Some(debian.to_path_buf());
    }
    Command::new("mlir-opt-16")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| PathBuf::from("mlir-opt-16"))
}

/// Runs `cmd args` with `input` on stdin; its stdout, or its stderr as the error.
fn pipe(cmd: &Path, args: &[&str], input: &str) -> Result<String, String> {
    let mut child = Command::new(cmd)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", cmd.display()))?;
    let mut stdin = child.stdin.take().unwrap();
    let text = input.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()));
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let _ = writer.join();
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn mlir_opt_reads_l0_output_and_l0_reads_it_back() {
    let Some(mlir) = mlir_opt() else {
        assert!(
            std::env::var("L0_REQUIRE_MLIR").as_deref() != Ok("1"),
            "mlir-opt-16 not found and L0_REQUIRE_MLIR=1"
        );
        eprintln!("mlir-opt-16 not found (apt-get install mlir-16-tools): skipped");
        return;
    };
    let l0 = PathBuf::from(env!("CARGO_BIN_EXE_l0-opt"));
    let dir = root().join("lit-tests/tests/ir");
    let mut files = Vec::new();
    collect(&dir, &mut files);
    files.sort();
    let mut checked = Vec::new();
    let mut failures = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(&dir)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if SKIP.iter().any(|(s, _)| *s == rel) {
            continue;
        }
        let path = f.to_string_lossy().to_string();
        // Files with chunks that fail on purpose still print the others.
        let Ok(out) = Command::new(&l0)
            .args(["--split-input-file", "--print-mlir-names", &path])
            .stdin(Stdio::null())
            .output()
        else {
            continue;
        };
        let custom = String::from_utf8_lossy(&out.stdout).into_owned();
        if custom.trim().is_empty() || L0_ONLY.iter().any(|w| custom.contains(w)) {
            continue;
        }
        let generic = match pipe(
            &l0,
            &[
                "-",
                "--split-input-file",
                "--print-generic",
                "--print-mlir-names",
            ],
            &custom,
        ) {
            Ok(g) => g,
            Err(e) => {
                failures.push(format!("{rel}: l0-opt does not read its own output:\n{e}"));
                continue;
            }
        };
        for (form, text) in [("custom", &custom), ("generic", &generic)] {
            match pipe(&mlir, &["--split-input-file"], text) {
                Err(e) => failures.push(format!(
                    "{rel} ({form} form): mlir-opt rejects L0's output:\n{e}\n--- L0's output:\n{text}"
                )),
                Ok(back) => {
                    if let Err(e) = pipe(&l0, &["-", "--split-input-file"], &back) {
                        failures.push(format!(
                            "{rel} ({form} form): l0-opt rejects mlir-opt's output:\n{e}\n--- mlir-opt's output:\n{back}"
                        ));
                    }
                }
            }
        }
        checked.push(rel);
    }
    eprintln!("mlir-opt round trip: {} files: {checked:?}", checked.len());
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The corpus has arith, canonicalize, cse, inline and core files in
    // MLIR's dialects: a filter that skipped them all would prove nothing.
    assert!(
        checked.len() >= 15,
        "only {} files checked: {checked:?}",
        checked.len()
    );
}
