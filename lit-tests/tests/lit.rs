//! The lit runner: runs every `tests/ir/**/*.ir` file's `RUN:` lines under
//! `bash -o pipefail -c`. Env: `LIT_FILTER=substr` selects files by path, `LIT_TIMEOUT=secs`
//! (default 60) bounds each command, `L0_OPT=path` overrides the `l0-opt` binary,
//! `LIT_NO_BUILD=1` skips the `cargo build -p opt-tool` done before tests that use `l0-opt`.

use lit_tests::runlines::{
    collect_ir_files, lit_timeout, parse_run_lines, run_cmd, substitute, Substitutions,
};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// A failed test file.
struct Failure {
    file: PathBuf,
    report: String,
}

/// Locate (and by default rebuild, so it is never stale) `l0-opt` next to this test binary:
/// `<target>/<profile>/deps/lit-<hash>` -> `<target>/<profile>/l0-opt`.
fn l0_opt() -> Result<PathBuf, String> {
    if let Ok(p) = std::env::var("L0_OPT") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let profile_dir = exe.parent().and_then(Path::parent).ok_or("odd test path")?;
    let bin = profile_dir.join("l0-opt");
    if std::env::var_os("LIT_NO_BUILD").is_none() {
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") => "dev",
            Some(p) => p,
            None => "dev",
        };
        let target = profile_dir.parent().ok_or("odd test path")?;
        let st = Command::new(env!("CARGO"))
            .args([
                "build",
                "-q",
                "-p",
                "opt-tool",
                "--profile",
                profile,
                "--target-dir",
            ])
            .arg(target)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status();
        if !st.is_ok_and(|s| s.success()) {
            return Err("`cargo build -p opt-tool` failed".into());
        }
    }
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(format!(
            "l0-opt not found at {}; run `cargo build -p opt-tool` (with --release for a release test run) or set L0_OPT",
            bin.display()
        ))
    }
}

/// Run one test file; `Err` holds the failure report.
fn run_file(
    file: &Path,
    tmp_dir: &Path,
    l0: &Result<PathBuf, String>,
    timeout: Duration,
) -> Result<(), String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("cannot read: {e}"))?;
    let cmds = parse_run_lines(&text);
    if cmds.is_empty() {
        return Err("no RUN: line".into());
    }
    let tmp = tmp_dir.join(file.to_string_lossy().replace('/', "_") + ".tmp");
    let subs = Substitutions {
        file,
        tmp: &tmp,
        l0_opt: l0.as_deref().ok(),
        filecheck: Path::new(env!("CARGO_BIN_EXE_l0-filecheck")),
        not: Path::new(env!("CARGO_BIN_EXE_l0-not")),
        extra: &[],
    };
    for raw in &cmds {
        let cmd = match substitute(raw, &subs) {
            Ok(c) => c,
            Err(e) if raw.contains("l0-opt") => {
                return Err(format!(
                    "RUN: {raw}\n{e}: {}",
                    l0.as_ref().err().map_or("", |s| s)
                ))
            }
            Err(e) => return Err(format!("RUN: {raw}\n{e}")),
        };
        let (ok, status, out, err) = run_cmd(&cmd, tmp_dir, timeout);
        if !ok {
            return Err(format!(
                "RUN: {raw}\ncommand: {cmd}\nstatus: {status}\n--- stdout ---\n{out}\n--- stderr ---\n{err}"
            ));
        }
    }
    Ok(())
}

#[test]
fn lit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ir");
    let mut files = Vec::new();
    collect_ir_files(&root, &mut files);
    files.sort();
    let filter = std::env::var("LIT_FILTER").unwrap_or_default();
    files.retain(|f| f.to_string_lossy().contains(&filter));
    assert!(
        !files.is_empty(),
        "no .ir test under {} matches LIT_FILTER={filter:?}",
        root.display()
    );
    let timeout = lit_timeout();
    let needs_opt = files.iter().any(|f| {
        std::fs::read_to_string(f)
            .is_ok_and(|t| parse_run_lines(&t).iter().any(|c| c.contains("l0-opt")))
    });
    let l0 = if needs_opt {
        l0_opt()
    } else {
        Err("not needed".into())
    };
    let tmp_dir = std::env::temp_dir().join(format!("l0-lit-{}", std::process::id()));
    std::fs::create_dir_all(&tmp_dir).expect("create temp dir");

    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(file) = files.get(i) else { break };
                if let Err(report) = run_file(file, &tmp_dir, &l0, timeout) {
                    failures.lock().unwrap().push(Failure {
                        file: file.clone(),
                        report,
                    });
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap();
    failures.sort_by(|a, b| a.file.cmp(&b.file));
    for f in &failures {
        eprintln!("\n======== FAIL: {}\n{}", f.file.display(), f.report);
    }
    eprintln!(
        "\nlit: {} passed, {} failed",
        files.len() - failures.len(),
        failures.len()
    );
    if failures.is_empty() {
        let _ = std::fs::remove_dir_all(&tmp_dir);
    } else {
        let names: Vec<String> = failures
            .iter()
            .map(|f| f.file.display().to_string())
            .collect();
        panic!(
            "{} lit test(s) failed:\n  {}",
            failures.len(),
            names.join("\n  ")
        );
    }
}
