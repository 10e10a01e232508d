//! Shared by the differential tests: comparing `l0-opt --run` outputs value by value
//! (integers and booleans exactly, floats within a relative tolerance, NaN equal to NaN).

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every `.ir` file below `dir`, appended to `out`.
pub fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|x| x == "ir") {
            out.push(p);
        }
    }
}

/// Whether a lit file's RUN lines expect it to fail (`not`,
/// `--verify-diagnostics`) or hold several modules (`--split-input-file`).
pub fn expected_to_fail(text: &str) -> bool {
    text.lines().filter(|l| l.contains("RUN:")).any(|l| {
        l.split_whitespace().any(|w| w == "not")
            || l.contains("--verify-diagnostics")
            || l.contains("--split-input-file")
    })
}

/// Relative tolerance for float vector (and matrix) elements.
pub const ELEM_TOL: f64 = 1e-12;
/// Relative tolerance for float scalars (reductions).
pub const SCALAR_TOL: f64 = 1e-9;

// ---------------------------------------------------------------------------------------
// Comparing outputs

/// The scalar element type of result type `ty` and whether it is a container.
fn elem_of(ty: &str) -> (&str, bool) {
    let mut t = ty.trim();
    let mut container = false;
    while let Some(inner) = ["vec<", "mat<"]
        .iter()
        .find_map(|p| t.strip_prefix(p).and_then(|r| r.strip_suffix('>')))
    {
        t = inner;
        container = true;
    }
    (t, container)
}

/// The scalar tokens of one printed result (`[[1, 2], [3]]` -> `1`, `2`, `3`) and the
/// bracket structure (to compare shapes).
fn tokens(line: &str) -> (Vec<&str>, String) {
    let shape: String = line
        .chars()
        .filter(|c| matches!(c, '[' | ']' | ','))
        .collect();
    let toks = line
        .split(['[', ']', ','])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    (toks, shape)
}

pub fn close(a: f64, b: f64, tol: f64) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    if a == b {
        return true;
    }
    let scale = a.abs().max(b.abs());
    scale.is_finite() && (a - b).abs() <= tol * scale
}

/// `Err(why)` if the stdout `got` differs from the reference `want` for these result types.
pub fn compare(want: &str, got: &str, results: &[String]) -> Result<(), String> {
    compare_within(want, got, results, 0.0)
}

/// [`compare`], also accepting floats that differ by at most `abs` (for
/// contracted runs: a fused multiply-add keeps the low bits that rounding
/// the product drops, so a result that cancels to near zero may differ from
/// the rounded one by far more than a relative tolerance).
pub fn compare_within(want: &str, got: &str, results: &[String], abs: f64) -> Result<(), String> {
    let wl: Vec<&str> = want.lines().collect();
    let gl: Vec<&str> = got.lines().collect();
    if wl.len() != gl.len() {
        return Err(format!("{} result lines vs {}", wl.len(), gl.len()));
    }
    for (i, (w, g)) in wl.iter().zip(&gl).enumerate() {
        let ty = results.get(i).map(String::as_str).unwrap_or("f64");
        let (elem, container) = elem_of(ty);
        let (wt, ws) = tokens(w);
        let (gt, gs) = tokens(g);
        if ws != gs || wt.len() != gt.len() {
            return Err(format!("result #{i} ({ty}) has a different shape"));
        }
        let is_float = matches!(elem, "f64" | "f32");
        let tol = if container { ELEM_TOL } else { SCALAR_TOL };
        for (j, (a, b)) in wt.iter().zip(&gt).enumerate() {
            let same = if is_float {
                match (a.parse::<f64>(), b.parse::<f64>()) {
                    (Ok(x), Ok(y)) => close(x, y, tol) || (x - y).abs() <= abs,
                    _ => a == b,
                }
            } else {
                a == b
            };
            if !same {
                return Err(format!("result #{i} ({ty}) element {j}: {a} vs {b}"));
            }
        }
    }
    Ok(())
}

/// The inputs of each example and its expected output (examples/README.md).
pub fn example_args(name: &str) -> Option<(Vec<String>, &'static str)> {
    let d = |f: &str| format!("@examples/data/{f}.npy");
    Some(match name {
        "sumsq" => (vec![d("sumsq_x")], "306.765625\n"),
        "mean_var" => (vec![d("mean_var_x")], "4.265625\n15.050537109375\n"),
        "filter_sum" => (vec![d("filter_sum_x")], "37.375\n"),
        "sqrt_sum" => (vec![d("sqrt_sum_x")], "136\n"),
        "blackscholes" => (
            vec![d("bs_s"), d("bs_k"), d("bs_t"), d("bs_v")],
            "143.55451505557474\n",
        ),
        "complex" => (
            vec![d("complex_re"), d("complex_im"), "2.5".to_string()],
            "18.75\n",
        ),
        "records" => (
            vec![
                d("records_price"),
                d("records_qty"),
                d("records_weight"),
                "3".to_string(),
            ],
            "44.625\n",
        ),
        "argmin" => (vec![d("argmin_x")], "-2.5\n3\n"),
        "histogram" => (vec![d("histogram_x"), "4".to_string()], "[4, 4, 4, 4]\n"),
        "tridag" => (
            vec![d("tridag_a"), d("tridag_b"), d("tridag_c"), d("tridag_y")],
            "[0.12213236203139385, 0.5114705518744246, 0.6794851214035166, 0.39610445924277565, 0.264403001736313, 1.6409402660378296, 1.3919251300389515, 0.9853520508235956]\n",
        ),
        _ => return None,
    })
}

/// `mlir-opt` 16: `$MLIR_OPT`, `/usr/lib/llvm-16/bin/mlir-opt`, or `mlir-opt-16`
/// on the `PATH` (Debian's `mlir-16-tools`), if any.
pub fn mlir_opt() -> Option<PathBuf> {
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
pub fn pipe(cmd: &Path, args: &[&str], input: &str) -> Result<String, String> {
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

/// Whether `--target=nvptx --run` works here: a CUDA driver and a device, probed
/// by running `examples/sumsq.ir` on three elements. Without them the GPU tests
/// skip, except that `L0_REQUIRE_GPU=1` (set where a GPU is known to be present)
/// turns a missing GPU into a failure.
pub fn nvptx_available(l0_opt: &Path) -> bool {
    let probe = Command::new(l0_opt)
        .current_dir(root())
        .args(["examples/sumsq.ir", "--target=nvptx", "--run=main"])
        .arg("--arg=[1, 2, 3]")
        .output()
        .expect("cannot run l0-opt");
    let ok = probe.status.success() && String::from_utf8_lossy(&probe.stdout).trim() == "14";
    if !ok {
        let why = String::from_utf8_lossy(&probe.stderr);
        assert!(
            std::env::var_os("L0_REQUIRE_GPU").is_none(),
            "L0_REQUIRE_GPU is set but --target=nvptx cannot run: {why}"
        );
        let first = why.lines().next().unwrap_or("").trim();
        eprintln!("no GPU here (--target=nvptx: {first}): skipped");
    }
    ok
}
