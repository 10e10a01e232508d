//! Every kernel L0 generates is valid PTX: each example, each lit program
//! and each GPU benchmark program (benches/gpu, benches/hotspot) with `@main` is lowered with `lower{target=gpu}` (two block sizes), printed
//! with `--emit=ptx`, and — where NVIDIA's `ptxas` is available — assembled
//! for `sm_80` and `sm_90`. A PTX file that ptxas rejects fails the test.
//!
//! `ptxas` is found through `$L0_PTXAS` (`.ci/ptxas.sh` installs it from the
//! PyPI wheel `nvidia-cuda-nvcc-cu12`, and `.ci/run` exports the variable).
//! Without it the PTX is still generated and checked for its entry points;
//! with `L0_REQUIRE_PTXAS=1` (CI) a missing ptxas is a failure.

use std::path::PathBuf;
use std::process::Command;

mod common;
use common::{collect, expected_to_fail, root};

/// Programs with `@main` that are not expected to fail.
fn programs() -> Vec<PathBuf> {
    let mut files = Vec::new();
    collect(&root().join("examples"), &mut files);
    collect(&root().join("lit-tests/tests/ir"), &mut files);
    collect(&root().join("benches/gpu"), &mut files);
    collect(&root().join("benches/hotspot"), &mut files);
    files.sort();
    files
        .into_iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            text.contains("func.func @main(") && !expected_to_fail(&text)
        })
        .collect()
}

fn ptxas() -> Option<PathBuf> {
    let p = PathBuf::from(std::env::var_os("L0_PTXAS")?);
    p.is_file().then_some(p)
}

#[test]
fn every_kernel_assembles_with_ptxas() {
    let ptxas = ptxas();
    if ptxas.is_none() {
        assert!(
            std::env::var_os("L0_REQUIRE_PTXAS").is_none(),
            "L0_REQUIRE_PTXAS is set but L0_PTXAS does not name ptxas"
        );
        eprintln!("ptx: no ptxas (set L0_PTXAS): generating PTX without assembling it");
    }
    let dir = std::env::temp_dir().join(format!("l0-ptx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut failures = Vec::new();
    let (mut kernels, mut assembled) = (0, 0);
    for (n, file) in programs().iter().enumerate() {
        for block in [64, 256] {
            let ptx = dir.join(format!("p{n}_{block}.ptx"));
            let out = Command::new(env!("CARGO_BIN_EXE_l0-opt"))
                .current_dir(root())
                .arg(format!("--pass=fuse,lower{{target=gpu,block={block}}}"))
                .arg("--emit=ptx")
                .arg("-o")
                .arg(&ptx)
                .arg(file)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            if !out.status.success() {
                // A program with no loop a kernel can run has nothing to compile;
                // libdevice ships with ptxas (the same wheel), so without ptxas a
                // kernel calling exp/log/... cannot be linked either.
                let no_libdevice =
                    ptxas.is_none() && stderr.contains("libdevice.10.bc was not found");
                // A program with branches between blocks does not go to
                // the GPU level (its passes refuse it, by design).
                let branches = stderr.contains("does not support regions of several blocks");
                if !stderr.contains("no 'gpu.kernel' functions") && !no_libdevice && !branches {
                    failures.push(format!("{}: --emit=ptx failed:\n{stderr}", file.display()));
                }
                continue;
            }
            let text = std::fs::read_to_string(&ptx).unwrap();
            let entries = text.matches(".visible .entry").count();
            if entries == 0 || !text.contains(".target sm_80") {
                failures.push(format!(
                    "{}: PTX without entry points:\n{text}",
                    file.display()
                ));
                continue;
            }
            kernels += entries;
            let Some(ptxas) = &ptxas else { continue };
            for arch in ["sm_80", "sm_90"] {
                let o = Command::new(ptxas)
                    .arg(format!("-arch={arch}"))
                    .arg("-o")
                    .arg(dir.join("out.cubin"))
                    .arg(&ptx)
                    .output()
                    .unwrap();
                assembled += 1;
                if !o.status.success() {
                    failures.push(format!(
                        "{} (block {block}): ptxas -arch={arch} rejects the PTX:\n{}",
                        file.display(),
                        String::from_utf8_lossy(&o.stderr)
                    ));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("ptx: {kernels} kernels, {assembled} ptxas runs");
    assert!(kernels >= 20, "too few kernels generated: {kernels}");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// `--run --target=nvptx` either runs on a GPU and prints the interpreter's
/// result, or, without a driver or device, fails with a located diagnostic and
/// exit status 1 (never a panic).
#[test]
fn nvptx_run_is_correct_or_a_diagnostic() {
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_l0-opt"))
            .current_dir(root())
            .args(["examples/sumsq.ir", "--pass=fuse", "--run=main"])
            .arg("--arg=@examples/data/sumsq_x.npy")
            .args(extra)
            .output()
            .unwrap()
    };
    let gpu = run(&["--target=nvptx"]);
    let stderr = String::from_utf8_lossy(&gpu.stderr);
    match gpu.status.code() {
        Some(0) => {
            let want = run(&["--backend=interp"]);
            let (a, b) = (
                String::from_utf8_lossy(&gpu.stdout)
                    .trim()
                    .parse::<f64>()
                    .unwrap(),
                String::from_utf8_lossy(&want.stdout)
                    .trim()
                    .parse::<f64>()
                    .unwrap(),
            );
            assert!(
                (a - b).abs() <= 1e-9 * b.abs(),
                "GPU {a} vs interpreter {b}"
            );
        }
        Some(1) => {
            assert!(
                stderr.starts_with("examples/sumsq.ir:5:3: error: --target=nvptx cannot run here")
                    || stderr.contains("no usable CUDA device"),
                "unexpected diagnostic: {stderr}"
            );
        }
        c => panic!("exit {c:?}: {stderr}"),
    }
}
