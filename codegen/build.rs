//! Links LLVM 14 into every binary that uses `codegen`.
//!
//! inkwell is built with `llvm14-0-no-llvm-linking`, so this script chooses how LLVM is linked:
//! statically from the component archives (`libLLVMX86CodeGen.a`, ...) when all of them are
//! installed, as `llvm-14-dev` installs them, and otherwise dynamically against `libLLVM-14.so`.
//!
//! Static linking is for start-up time: loading `libLLVM-14.so` costs about 9 ms of CPU per
//! process (its 376,000 relative relocations and page faults), which is most of the time of a
//! small `l0-opt` run and a fifth of the random-program driver's time. Only the components L0
//! uses are linked (MCJIT, the x86 and NVPTX targets, the new pass manager), so Debian's
//! `llvm-config --libnames` entries for Polly, which `llvm-14-dev` does not ship as archives,
//! are never needed.
//!
//! `llvm-config` is found as `$LLVM_SYS_140_PREFIX/bin/llvm-config` (the variable llvm-sys
//! reads), else `/usr/lib/llvm-14/bin/llvm-config`, else `llvm-config-14` or `llvm-config` on
//! `PATH`. `L0_LLVM_LINK=dynamic` forces dynamic linking.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The LLVM components that codegen's inkwell calls reach.
const COMPONENTS: &[&str] = &["mcjit", "x86", "nvptx", "passes"];

fn main() {
    println!("cargo:rerun-if-env-changed=LLVM_SYS_140_PREFIX");
    println!("cargo:rerun-if-env-changed=L0_LLVM_LINK");
    let config = llvm_config();
    let libdir = PathBuf::from(run(&config, &["--libdir"]).trim());
    println!("cargo:rustc-link-search=native={}", libdir.display());
    // `llvm-config --link-static <what> COMPONENTS...`
    let static_query = |what| {
        let mut args = vec!["--link-static", what];
        args.extend(COMPONENTS);
        run(&config, &args)
    };

    let want_dynamic = std::env::var("L0_LLVM_LINK").is_ok_and(|v| v == "dynamic");
    let have_archives = static_query("--libnames")
        .split_whitespace()
        .all(|name| libdir.join(name).is_file());

    if have_archives && !want_dynamic {
        // `-bundle`: the final link reads the archives where llvm-14-dev installed them;
        // bundling would copy all 130 MB of them into codegen's rlib at every rebuild.
        for flag in static_query("--libs").split_whitespace() {
            let name = flag.trim_start_matches("-l");
            println!("cargo:rustc-link-lib=static:-bundle={name}");
        }
        // LLVM's own dependencies (zlib, terminfo, ...), then its C++ runtime. With
        // `--as-needed`, the default, a library whose symbols nothing uses (z3) is dropped.
        for flag in run(&config, &["--link-static", "--system-libs"]).split_whitespace() {
            shared_library(flag);
        }
        println!("cargo:rustc-link-lib=dylib=stdc++");
    } else {
        for flag in run(&config, &["--link-shared", "--libs"]).split_whitespace() {
            shared_library(flag);
        }
    }
}

/// Emits the link directive for one shared library that `llvm-config` names (`--libs` of
/// `--link-shared`, or `--system-libs`): `-lNAME` or a library's path.
fn shared_library(flag: &str) {
    if let Some(name) = flag.strip_prefix("-l") {
        println!("cargo:rustc-link-lib=dylib={name}");
        return;
    }
    let path = Path::new(flag);
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    match (path.parent(), stem.strip_prefix("lib")) {
        (Some(dir), Some(name)) => {
            println!("cargo:rustc-link-search=native={}", dir.display());
            println!("cargo:rustc-link-lib=dylib={name}");
        }
        _ => panic!("cannot read llvm-config's library {flag:?}"),
    }
}

/// The `llvm-config` of LLVM 14; panics with the places it looked when there is none.
fn llvm_config() -> PathBuf {
    let mut candidates = Vec::new();
    if let Some(prefix) = std::env::var_os("LLVM_SYS_140_PREFIX") {
        candidates.push(PathBuf::from(prefix).join("bin/llvm-config"));
    }
    candidates.push(PathBuf::from("/usr/lib/llvm-14/bin/llvm-config"));
    candidates.push(PathBuf::from("llvm-config-14"));
    candidates.push(PathBuf::from("llvm-config"));
    for candidate in &candidates {
        let version = Command::new(candidate).arg("--version").output();
        if version.is_ok_and(|o| o.status.success() && o.stdout.starts_with(b"14.")) {
            return candidate.clone();
        }
    }
    panic!("no llvm-config of LLVM 14 (install llvm-14-dev); looked for {candidates:?}");
}

/// Runs `llvm-config` with `args` and returns its standard output.
fn run(config: &Path, args: &[&str]) -> String {
    let out = Command::new(config)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", config.display()));
    assert!(
        out.status.success(),
        "{} {args:?} failed: {}",
        config.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("llvm-config prints UTF-8")
}
