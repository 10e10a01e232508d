//! The `l0-opt` command line (IR-SPEC §4), run as a process: exact exit statuses (0 success,
//! 1 a diagnostic `file:line:col: error: ...`, 2 a bad command line), stdin input, `-o`,
//! `.npy` arguments of every element type and `.npy` results, `--bench`, `--timing`,
//! `--print-ir-after-all` and `--emit=dot`.
//!
//! Being an integration test of `opt-tool`, this file also makes `cargo test --workspace`
//! build the `l0-opt` binary that the lit harness runs.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use npyz::WriterBuilder;
use regex::Regex;

/// Exit status, stdout and stderr of one `l0-opt` run.
struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl std::fmt::Debug for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout ---\n{}--- stderr ---\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Runs `l0-opt args...` with `stdin` (empty when `None`) in `dir`.
fn l0_in(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Out {
    let mut child = Command::new(env!("CARGO_BIN_EXE_l0-opt"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start l0-opt");
    {
        let mut i = child.stdin.take().unwrap();
        if let Some(data) = stdin {
            i.write_all(data).unwrap();
        }
    }
    let o = child.wait_with_output().unwrap();
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// A fresh scratch directory for test `name`.
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes `text` to `dir/name` and returns `name` (runs happen in `dir`, so diagnostics
/// name the file exactly as given).
fn write(dir: &Path, name: &str, text: impl AsRef<[u8]>) -> String {
    std::fs::write(dir.join(name), text).unwrap();
    name.to_string()
}

/// Asserts `out` is exactly status `code`, and (for status 1) that stderr starts with the
/// diagnostic `prefix` (`file:line:col: error: `) and contains `msg`.
fn assert_diag(out: &Out, prefix: &str, msg: &str) {
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.starts_with(prefix),
        "expected stderr to start with '{prefix}': {out:?}"
    );
    assert!(
        out.stderr.contains(msg),
        "expected '{msg}' in stderr: {out:?}"
    );
    assert!(!out.stderr.contains("panicked"), "{out:?}");
    assert_eq!(out.stdout, "", "{out:?}");
}

fn assert_usage(out: &Out, msg: &str) {
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains(msg),
        "expected '{msg}' in stderr: {out:?}"
    );
    assert!(!out.stderr.contains("panicked"), "{out:?}");
    assert_eq!(out.stdout, "", "{out:?}");
}

fn assert_ok(out: &Out) {
    assert_eq!(out.code, 0, "{out:?}");
}

const SUMSQ: &str = r#"func.func @main(%x: vec<f64>) -> f64 {
  %sq = "vec.map"(%x) ({
  ^bb0(%e: f64):
    %m = "arith.mulf"(%e, %e) : (f64, f64) -> f64
    "vec.yield"(%m) : (f64) -> ()
  }) : (vec<f64>) -> vec<f64>
  %s = "vec.sum"(%sq) : (vec<f64>) -> f64
  "func.return"(%s) : (f64) -> ()
}
"#;

/// `@main(%v: vec<f64>, %i: index) -> f64` reads `v[i]`; `@div(%a, %b: i64)` divides.
const FAULTS: &str = r#"func.func @main(%v: vec<f64>, %i: index) -> f64 {
  %x = "vec.get"(%v, %i) : (vec<f64>, index) -> f64
  "func.return"(%x) : (f64) -> ()
}
func.func @div(%a: i64, %b: i64) -> i64 {
  %q = "arith.divsi"(%a, %b) : (i64, i64) -> i64
  "func.return"(%q) : (i64) -> ()
}
"#;

#[test]
fn roundtrip_succeeds() {
    let d = scratch("roundtrip");
    let f = write(&d, "s.ir", SUMSQ);
    let out = l0_in(&d, &[&f], None);
    assert_ok(&out);
    assert_eq!(out.stderr, "");
    assert!(
        out.stdout.contains("func.func @main(%x: vec<f64>) -> f64"),
        "{out:?}"
    );
    assert!(out.stdout.contains("vec.sum"), "{out:?}");
    // The printed text is itself a valid input and prints the same.
    let g = write(&d, "again.ir", &out.stdout);
    let again = l0_in(&d, &[&g], None);
    assert_ok(&again);
    assert_eq!(again.stdout, out.stdout);
}

#[test]
fn help_and_list_passes_exit_0() {
    let d = scratch("help");
    let out = l0_in(&d, &["--help"], None);
    assert_ok(&out);
    assert!(out.stdout.contains("Usage"), "{out:?}");
    let out = l0_in(&d, &["--list-passes"], None);
    assert_ok(&out);
    for p in ["canonicalize", "cse", "dce", "fuse", "lower"] {
        assert!(out.stdout.contains(p), "{out:?}");
    }
}

#[test]
fn parse_error_exits_1_with_location() {
    let d = scratch("parse-error");
    let f = write(
        &d,
        "bad.ir",
        "func.func @f() {\n  %x = \"arith.constant\"() {value = 1 : i64 : () -> i64\n}\n",
    );
    let out = l0_in(&d, &[&f], None);
    assert_eq!(out.code, 1, "{out:?}");
    let re = Regex::new(r"^bad\.ir:2:[0-9]+: error: ").unwrap();
    assert!(re.is_match(&out.stderr), "{out:?}");
    assert_eq!(out.stdout, "");

    // Unknown op: the location is the op.
    let f = write(
        &d,
        "unknown.ir",
        "func.func @f() {\n  \"no.such\"() : () -> ()\n  \"func.return\"() : () -> ()\n}\n",
    );
    assert_diag(
        &l0_in(&d, &[&f], None),
        "unknown.ir:2:3: error: ",
        "unknown operation 'no.such'",
    );
}

#[test]
fn verifier_error_exits_1_with_location() {
    let d = scratch("verify-error");
    // Operand and result types of arith.addf differ.
    let f = write(
        &d,
        "v.ir",
        "func.func @f(%a: f64) -> f64 {\n  %b = \"arith.addf\"(%a, %a) : (f64, f64) -> i64\n  \"func.return\"(%a) : (f64) -> ()\n}\n",
    );
    assert_diag(
        &l0_in(&d, &[&f], None),
        "v.ir:2:3: error: 'arith.addf' op ",
        "requires the same type for all operands and results",
    );
    // The terminator is not last in its block: one diagnostic per broken op.
    let f = write(
        &d,
        "t.ir",
        "func.func @f(%a: f64) -> f64 {\n  \"func.return\"(%a) : (f64) -> ()\n  %b = \"arith.addf\"(%a, %a) : (f64, f64) -> f64\n}\n",
    );
    let out = l0_in(&d, &[&f], None);
    assert_diag(
        &out,
        "t.ir:1:1: error: 'func.func' op ",
        "region must end with a terminator",
    );
    assert!(
        out.stderr
            .contains("t.ir:2:3: error: 'func.return' op must be the last operation"),
        "{out:?}"
    );
}

#[test]
fn runtime_faults_exit_1_with_location() {
    let d = scratch("faults");
    let f = write(&d, "f.ir", FAULTS);
    let ok = l0_in(
        &d,
        &[
            "--run=main",
            "--arg=[1.5, 2.5]",
            "--arg=1",
            "--backend=interp",
            &f,
        ],
        None,
    );
    assert_ok(&ok);
    assert_eq!(ok.stdout, "2.5\n");
    let out = l0_in(
        &d,
        &[
            "--run=main",
            "--arg=[1.5, 2.5]",
            "--arg=2",
            "--backend=interp",
            &f,
        ],
        None,
    );
    assert_diag(&out, "f.ir:2:3: error: ", "out of bounds");
    let out = l0_in(
        &d,
        &["--run=main", "--arg=[]", "--arg=-1", "--backend=interp", &f],
        None,
    );
    assert_diag(&out, "f.ir:2:3: error: ", "out of bounds");
    let out = l0_in(
        &d,
        &["--run=div", "--arg=7", "--arg=0", "--backend=interp", &f],
        None,
    );
    assert_diag(&out, "f.ir:6:3: error: ", "division by zero");
    let ok = l0_in(
        &d,
        &["--run=div", "--arg=-7", "--arg=2", "--backend=interp", &f],
        None,
    );
    assert_ok(&ok);
    assert_eq!(ok.stdout, "-3\n");
}

#[test]
fn invalid_utf8_exits_1() {
    let d = scratch("utf8");
    let f = write(&d, "u.ir", b"func.func @f() {\n  \xff\xfe\n}\n");
    assert_diag(
        &l0_in(&d, &[&f], None),
        "u.ir:2:3: error: ",
        "invalid UTF-8",
    );
    // The same through stdin names <stdin>.
    let out = l0_in(&d, &["-"], Some(b"// \xc3(\n"));
    assert_diag(&out, "<stdin>:1:4: error: ", "invalid UTF-8");
}

#[test]
fn bad_command_lines_exit_2() {
    let d = scratch("usage");
    let f = write(&d, "f.ir", FAULTS);
    assert_usage(&l0_in(&d, &["--bogus-flag", &f], None), "--bogus-flag");
    assert_usage(
        &l0_in(&d, &["--pass=nosuchpass", &f], None),
        "unknown pass 'nosuchpass'",
    );
    assert_usage(&l0_in(&d, &["--pass=cse,", &f], None), "empty pass name");
    assert_usage(&l0_in(&d, &["--emit=bogus", &f], None), "bogus");
    assert_usage(&l0_in(&d, &["--bench=lots", &f], None), "lots");
    // Wrong number of --arg.
    assert_usage(
        &l0_in(
            &d,
            &["--run=main", "--arg=[1.0]", "--backend=interp", &f],
            None,
        ),
        "takes 2 argument(s), but 1 --arg given",
    );
    assert_usage(
        &l0_in(
            &d,
            &[
                "--run=div",
                "--arg=1",
                "--arg=2",
                "--arg=3",
                "--backend=interp",
                &f,
            ],
            None,
        ),
        "takes 2 argument(s), but 3 --arg given",
    );
    // Unparsable --arg values.
    assert_usage(
        &l0_in(
            &d,
            &["--run=div", "--arg=1", "--arg=x", "--backend=interp", &f],
            None,
        ),
        "--arg #2",
    );
    assert_usage(
        &l0_in(
            &d,
            &["--run=div", "--arg=1.5", "--arg=2", "--backend=interp", &f],
            None,
        ),
        "--arg #1",
    );
    assert_usage(
        &l0_in(
            &d,
            &[
                "--run=main",
                "--arg=[1.0, oops]",
                "--arg=0",
                "--backend=interp",
                &f,
            ],
            None,
        ),
        "--arg #1",
    );
    assert_usage(
        &l0_in(
            &d,
            &[
                "--run=main",
                "--arg=@nosuch.npy",
                "--arg=0",
                "--backend=interp",
                &f,
            ],
            None,
        ),
        "--arg #1",
    );
    // No such function to run.
    assert_usage(
        &l0_in(&d, &["--run=nosuch", "--backend=interp", &f], None),
        "no function named '@nosuch'",
    );
    // Missing input file, and no input at all.
    assert_usage(
        &l0_in(&d, &["missing.ir"], None),
        "cannot read 'missing.ir'",
    );
    assert_usage(&l0_in(&d, &[], None), "no input file");
}

/// A closed stderr or stdout (`l0-opt many.ir --split-input-file 2>&1 |
/// head -1`) ends the process quietly, killed by SIGPIPE as `cat` is,
/// never with a panic or an abort (issue 43).
#[cfg(unix)]
#[test]
fn closed_pipe_ends_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let d = scratch("closed-pipe");
    // Failing parts (diagnostics on stderr) and passing ones (IR on stdout).
    let bad = "func.func @f() -> i64 {\n  %x = arith.constant 1 : i32\n  func.return %x : i64\n}\n";
    let good =
        "func.func @g() -> i64 {\n  %x = arith.constant 1 : i64\n  func.return %x : i64\n}\n";
    let many = [bad, good].repeat(1000).join("// -----\n");
    let f = write(&d, "many.ir", many);
    for closed_stderr in [true, false] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_l0-opt"));
        cmd.args([f.as_str(), "--split-input-file", "--print-ir-after-all"])
            .current_dir(&d)
            .stdin(Stdio::null());
        if closed_stderr {
            cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        } else {
            cmd.stdout(Stdio::piped()).stderr(Stdio::null());
        }
        let mut child = cmd.spawn().unwrap();
        // The reader goes away at once.
        drop(child.stderr.take());
        drop(child.stdout.take());
        let status = child.wait().unwrap();
        assert_eq!(
            status.signal(),
            Some(libc::SIGPIPE),
            "closed stderr: {closed_stderr}: {status:?}"
        );
    }
}

#[test]
fn stdin_input() {
    let d = scratch("stdin");
    let out = l0_in(&d, &["-"], Some(SUMSQ.as_bytes()));
    assert_ok(&out);
    assert!(out.stdout.contains("func.func @main"), "{out:?}");
    let out = l0_in(
        &d,
        &["--run=main", "--arg=[1.5, -2.0]", "--backend=interp", "-"],
        Some(SUMSQ.as_bytes()),
    );
    assert_ok(&out);
    assert_eq!(out.stdout, "6.25\n");
    let out = l0_in(&d, &["-"], Some(b"func.func @f() {\n  %x = \n}\n"));
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.starts_with("<stdin>:"), "{out:?}");
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn output_file_is_written_atomically() {
    let d = scratch("output");
    let f = write(&d, "s.ir", SUMSQ);
    let out = l0_in(&d, &["--pass=fuse", "-o", "out.ir", &f], None);
    assert_ok(&out);
    assert_eq!(out.stdout, "", "the IR goes to the file, not stdout");
    let text = std::fs::read_to_string(d.join("out.ir")).unwrap();
    assert!(text.contains("gen.loop"), "{text}");
    assert_eq!(
        listing(&d),
        ["out.ir", "s.ir"],
        "no temporary file may be left behind"
    );

    // A failing run writes no output file (and leaves no temporary).
    let bad = write(
        &d,
        "bad.ir",
        "func.func @f() {\n  \"no.such\"() : () -> ()\n}\n",
    );
    let out = l0_in(&d, &["-o", "bad-out.ir", &bad], None);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(listing(&d), ["bad.ir", "out.ir", "s.ir"]);
    let faults = write(&d, "faults.ir", FAULTS);
    let out = l0_in(
        &d,
        &[
            "--run=main",
            "--arg=[1.0]",
            "--arg=5",
            "--backend=interp",
            "-o",
            "r.npy",
            &faults,
        ],
        None,
    );
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(listing(&d), ["bad.ir", "faults.ir", "out.ir", "s.ir"]);
}

/// A function of `n` chained adds, about 40 bytes an op (`n` = 120000: over
/// the 4 MiB at which l0-opt maps its input).
fn long_chain(n: usize, last: &str) -> String {
    let mut s = String::from("func.func @f(%x: f64) -> f64 {\n  %v0 = arith.addf %x, %x : f64\n");
    for k in 1..n {
        s.push_str(&format!("  %v{k} = arith.addf %v{}, %x : f64\n", k - 1));
    }
    s.push_str(&format!("  func.return {last} : f64\n}}\n"));
    s
}

#[test]
fn large_inputs_are_mapped_and_outputs_streamed() {
    let d = scratch("large");
    let n = 120_000;
    let text = long_chain(n, &format!("%v{}", n - 1));
    assert!(text.len() > 4 << 20, "{} bytes", text.len());
    let f = write(&d, "big.ir", &text);
    // Mapped input, output streamed into a file; the same text from stdin
    // (read onto the heap), output streamed to stdout: identical.
    let to_file = l0_in(&d, &["--pass=canonicalize", "-o", "out.ir", &f], None);
    assert_ok(&to_file);
    let from_stdin = l0_in(&d, &["--pass=canonicalize", "-"], Some(text.as_bytes()));
    assert_ok(&from_stdin);
    let written = std::fs::read_to_string(d.join("out.ir")).unwrap();
    assert_eq!(written, from_stdin.stdout);
    assert!(written.len() > 1 << 20 && written.contains(&format!("%v{}", n - 1)));
    assert_eq!(listing(&d), ["big.ir", "out.ir"], "no temporary file left");

    // An error at the end of a mapped input: its line is read back for the
    // diagnostic after the parser gave the pages back.
    let bad = write(&d, "bad.ir", long_chain(n, "%nope"));
    let out = l0_in(&d, &["-o", "bad-out.ir", &bad], None);
    let line = n + 2;
    assert_diag(
        &out,
        &format!("bad.ir:{line}:15: error: "),
        "use of undeclared SSA value '%nope'",
    );
    assert!(out.stderr.contains("func.return %nope : f64"), "{out:?}");
    assert!(!d.join("bad-out.ir").exists());

    // Invalid UTF-8 far into a mapped input.
    let mut bytes = text.clone().into_bytes();
    let at = bytes.len() - 10;
    bytes[at] = 0xff;
    let enc = write(&d, "enc.ir", &bytes);
    let out = l0_in(&d, &[&enc], None);
    assert_diag(
        &out,
        &format!("enc.ir:{}:", n + 2),
        "invalid UTF-8 in input",
    );

    // An output file that cannot be created: exit 2, nothing left behind.
    let out = l0_in(&d, &["-o", "no-such-dir/out.ir", &f], None);
    assert_usage(&out, "cannot write 'no-such-dir/out.ir'");
}

// ---------------------------------------------------------------------------------------
// .npy inputs and outputs

fn write_npy<T: npyz::AutoSerialize>(path: &Path, shape: &[u64], data: Vec<T>) {
    let w = BufWriter::new(File::create(path).unwrap());
    let mut writer = npyz::WriteOptions::<T>::new()
        .default_dtype()
        .shape(shape)
        .writer(w)
        .begin_nd()
        .unwrap();
    writer.extend(data).unwrap();
    writer.finish().unwrap();
}

fn read_npy<T: npyz::Deserialize>(path: &Path) -> (Vec<u64>, String, Vec<T>) {
    let npy = npyz::NpyFile::new(BufReader::new(File::open(path).unwrap())).unwrap();
    let shape = npy.shape().to_vec();
    let dtype = match npy.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => panic!("unexpected dtype {other:?}"),
    };
    (shape, dtype, npy.into_vec::<T>().unwrap())
}

/// `func.func @main(%x: T) -> T` returning its argument.
fn identity(ty: &str) -> String {
    format!("func.func @main(%x: {ty}) -> {ty} {{\n  \"func.return\"(%x) : ({ty}) -> ()\n}}\n")
}

/// Runs the identity function of `ty` on `input.npy`: checks stdout is `printed` on every
/// backend (compiled code reads a file in the ABI's layout in place, any other decoded),
/// then the same with `-o out.npy`, returning the written file's path.
fn npy_identity(d: &Path, ty: &str, printed: &str) -> PathBuf {
    let f = write(d, "id.ir", identity(ty));
    for backend in ["--backend=interp", "--backend=cranelift", "--backend=llvm"] {
        let out = l0_in(d, &["--run=main", "--arg=@input.npy", backend, &f], None);
        assert_ok(&out);
        assert_eq!(out.stdout, printed, "{ty} {backend}: {out:?}");
    }
    let out = l0_in(
        d,
        &[
            "--run=main",
            "--arg=@input.npy",
            "--backend=interp",
            "-o",
            "out.npy",
            &f,
        ],
        None,
    );
    assert_ok(&out);
    assert_eq!(out.stdout, "", "{out:?}");
    assert_eq!(
        listing(d),
        ["id.ir", "input.npy", "out.npy"],
        "no temporary file may be left behind"
    );
    d.join("out.npy")
}

#[test]
fn npy_f64() {
    let d = scratch("npy-f64");
    let data = vec![1.5, -2.0, 0.1, f64::INFINITY, -0.0];
    write_npy(&d.join("input.npy"), &[5], data.clone());
    let o = npy_identity(&d, "vec<f64>", "[1.5, -2, 0.1, inf, -0]\n");
    let (shape, dtype, back) = read_npy::<f64>(&o);
    assert_eq!((shape, dtype.as_str()), (vec![5], "<f8"));
    assert_eq!(
        back.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        data.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
    );
}

#[test]
fn npy_f32() {
    let d = scratch("npy-f32");
    let data = vec![1.5f32, -2.25, 0.1];
    write_npy(&d.join("input.npy"), &[3], data.clone());
    let o = npy_identity(&d, "vec<f32>", "[1.5, -2.25, 0.1]\n");
    let (shape, dtype, back) = read_npy::<f32>(&o);
    assert_eq!((shape, dtype.as_str(), back), (vec![3], "<f4", data));
}

#[test]
fn npy_i64() {
    let d = scratch("npy-i64");
    let data = vec![i64::MIN, -1, 0, 7, i64::MAX];
    write_npy(&d.join("input.npy"), &[5], data.clone());
    let o = npy_identity(
        &d,
        "vec<i64>",
        "[-9223372036854775808, -1, 0, 7, 9223372036854775807]\n",
    );
    let (shape, dtype, back) = read_npy::<i64>(&o);
    assert_eq!((shape, dtype.as_str(), back), (vec![5], "<i8", data));
}

#[test]
fn npy_i32() {
    let d = scratch("npy-i32");
    let data = vec![i32::MIN, -3, 0, 42, i32::MAX];
    write_npy(&d.join("input.npy"), &[5], data.clone());
    let o = npy_identity(&d, "vec<i32>", "[-2147483648, -3, 0, 42, 2147483647]\n");
    let (shape, dtype, back) = read_npy::<i32>(&o);
    assert_eq!((shape, dtype.as_str(), back), (vec![5], "<i4", data));
}

#[test]
fn npy_bool() {
    let d = scratch("npy-bool");
    let data = vec![true, false, false, true];
    write_npy(&d.join("input.npy"), &[4], data.clone());
    let o = npy_identity(&d, "vec<i1>", "[true, false, false, true]\n");
    let (shape, dtype, back) = read_npy::<bool>(&o);
    assert_eq!((shape, dtype.as_str(), back), (vec![4], "|b1", data));
}

#[test]
fn npy_mat_f64() {
    let d = scratch("npy-mat");
    let data = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.5];
    write_npy(&d.join("input.npy"), &[2, 3], data.clone());
    let o = npy_identity(&d, "mat<f64>", "[[1, 2, 3], [4, 5, 6.5]]\n");
    let (shape, dtype, back) = read_npy::<f64>(&o);
    assert_eq!((shape, dtype.as_str(), back), (vec![2, 3], "<f8", data));
    // The shape is the matrix's: rows and cols.
    let f = write(
        &d,
        "shape.ir",
        "func.func @main(%m: mat<f64>) -> (index, index) {\n  %r = \"mat.rows\"(%m) : (mat<f64>) -> index\n  %c = \"mat.cols\"(%m) : (mat<f64>) -> index\n  \"func.return\"(%r, %c) : (index, index) -> ()\n}\n",
    );
    let out = l0_in(
        &d,
        &["--run=main", "--arg=@input.npy", "--backend=interp", &f],
        None,
    );
    assert_ok(&out);
    assert_eq!(out.stdout, "2\n3\n");
}

/// A matrix saved in Fortran order (`np.asfortranarray`, the header's
/// `'fortran_order': True`) is read by element position, not by storage
/// order (issue 43: it was read as C order, silently wrong), and `-o`
/// writes it back in C order.
#[test]
fn npy_fortran_order_matrix() {
    let d = scratch("npy-fortran");
    let w = BufWriter::new(File::create(d.join("input.npy")).unwrap());
    let mut writer = npyz::WriteOptions::<f64>::new()
        .default_dtype()
        .shape(&[2, 3])
        .order(npyz::Order::Fortran)
        .writer(w)
        .begin_nd()
        .unwrap();
    // np.arange(6.).reshape(2, 3) stored column by column.
    writer.extend([0.0, 3.0, 1.0, 4.0, 2.0, 5.0]).unwrap();
    writer.finish().unwrap();
    let o = npy_identity(&d, "mat<f64>", "[[0, 1, 2], [3, 4, 5]]\n");
    let npy = npyz::NpyFile::new(BufReader::new(File::open(&o).unwrap())).unwrap();
    assert_eq!(npy.order(), npyz::Order::C);
    let (shape, _, back) = read_npy::<f64>(&o);
    assert_eq!(
        (shape, back),
        (vec![2, 3], vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    );
    // A matrix-vector product reads it by rows: [0+2+6, 3+8+15].
    let f = write(
        &d,
        "mv.ir",
        "func.func @main(%m: mat<f64>, %v: vec<f64>) -> vec<f64> {\n  %r = \"mat.matvec\"(%m, %v) : (mat<f64>, vec<f64>) -> vec<f64>\n  \"func.return\"(%r) : (vec<f64>) -> ()\n}\n",
    );
    for backend in ["--backend=interp", "--backend=cranelift"] {
        let out = l0_in(
            &d,
            &[
                "--run=main",
                "--arg=@input.npy",
                "--arg=[1, 2, 3]",
                backend,
                &f,
            ],
            None,
        );
        assert_ok(&out);
        assert_eq!(out.stdout, "[8, 26]\n", "{backend}");
    }
}

#[test]
fn npy_wrong_dtype_or_shape_is_a_usage_error() {
    let d = scratch("npy-wrong");
    write_npy(&d.join("input.npy"), &[3], vec![1i32, 2, 3]);
    let f = write(&d, "id.ir", identity("vec<f64>"));
    assert_usage(
        &l0_in(
            &d,
            &["--run=main", "--arg=@input.npy", "--backend=interp", &f],
            None,
        ),
        "does not match element type",
    );
    write_npy(&d.join("input.npy"), &[1, 2], vec![1.0f64, 2.0]);
    assert_usage(
        &l0_in(
            &d,
            &["--run=main", "--arg=@input.npy", "--backend=interp", &f],
            None,
        ),
        "expected a 1-D array",
    );
}

/// A `.npy` file written by hand: version 1.0, `descr`, C order, `shape`, then `data`
/// (padded so that the data starts at a multiple of 64 bytes, as NumPy writes).
fn raw_npy(path: &Path, descr: &str, shape: &str, data: &[u8]) {
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((dict.len() as u16).to_le_bytes());
    bytes.extend(dict.as_bytes());
    bytes.extend(data);
    std::fs::write(path, bytes).unwrap();
}

/// Files whose bytes compiled code cannot read in place (big-endian, a bool byte other
/// than 0 or 1, data cut short) are decoded or refused alike on every backend.
#[test]
fn npy_layouts_other_than_the_abi() {
    let d = scratch("npy-layouts");
    let f = write(&d, "id.ir", identity("vec<f64>"));
    let b = write(&d, "idb.ir", identity("vec<i1>"));
    let be: Vec<u8> = [1.5f64, -2.0]
        .iter()
        .flat_map(|x| x.to_be_bytes())
        .collect();
    raw_npy(&d.join("be.npy"), ">f8", "(2,)", &be);
    raw_npy(&d.join("bool.npy"), "|b1", "(3,)", &[1, 2, 0]);
    raw_npy(&d.join("short.npy"), "<f8", "(3,)", &[0; 16]);
    for backend in ["--backend=interp", "--backend=cranelift", "--backend=llvm"] {
        let out = l0_in(&d, &["--run=main", "--arg=@be.npy", backend, &f], None);
        assert_ok(&out);
        assert_eq!(out.stdout, "[1.5, -2]\n", "{backend}: {out:?}");
        assert_usage(
            &l0_in(&d, &["--run=main", "--arg=@bool.npy", backend, &b], None),
            "invalid value for bool: 2",
        );
        assert_usage(
            &l0_in(&d, &["--run=main", "--arg=@short.npy", backend, &f], None),
            "is truncated: its header promises 24 bytes of data, it holds 16",
        );
    }
}

/// A shape whose element count does not fit in 64 bits (2^32 x 2^32 wraps
/// to 0 in u64, so the data check passed) or whose size exceeds `index` is
/// refused before anything reads the file, on every backend.
#[test]
fn npy_shapes_beyond_index() {
    let d = scratch("npy-huge");
    let m = write(&d, "m.ir", identity("mat<f64>"));
    raw_npy(&d.join("wrap.npy"), "<f8", "(4294967296, 4294967296)", &[]);
    raw_npy(&d.join("big.npy"), "<f8", "(18446744073709551615, 0)", &[]);
    for backend in ["--backend=interp", "--backend=cranelift", "--backend=llvm"] {
        for f in ["@wrap.npy", "@big.npy"] {
            assert_usage(
                &l0_in(
                    &d,
                    &["--run=main", &format!("--arg={f}"), backend, &m],
                    None,
                ),
                "a size or the number of elements exceeds 2^63 - 1",
            );
        }
    }
}

/// `-o` through a symbolic link writes the file it points to and keeps the
/// link; a destination that is not a regular file (a character device) is
/// written in place, not replaced; a full device is an error, for IR and for
/// `--run` results on standard output.
#[test]
fn output_destinations_that_are_not_plain_files() {
    let d = scratch("out-special");
    let f = write(&d, "f.ir", identity("f64"));
    write(&d, "real.ir", "old");
    std::os::unix::fs::symlink("real.ir", d.join("link.ir")).unwrap();
    assert_ok(&l0_in(&d, &[&f, "-o", "link.ir"], None));
    let meta = std::fs::symlink_metadata(d.join("link.ir")).unwrap();
    assert!(meta.file_type().is_symlink(), "the link was replaced");
    let text = std::fs::read_to_string(d.join("real.ir")).unwrap();
    assert!(text.contains("func.func @main"), "{text}");
    use std::os::unix::fs::FileTypeExt;
    // A FIFO (not the machine's /dev/null: a regression would replace it),
    // read by a thread while l0-opt writes it.
    let fifo = d.join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        let at = fifo.clone();
        let reader = std::thread::spawn(move || std::fs::read_to_string(at).unwrap());
        assert_ok(&l0_in(&d, &[&f, "-o", "fifo"], None));
        // (Checked before joining: a replaced FIFO leaves the reader blocked.)
        let meta = std::fs::symlink_metadata(&fifo).unwrap();
        assert!(meta.file_type().is_fifo(), "the FIFO was replaced");
        assert!(reader.join().unwrap().contains("func.func @main"));
        // A `.npy` result into a FIFO.
        let v = write(&d, "v.ir", identity("vec<f64>"));
        let fifo = d.join("out.npy");
        assert!(Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let at = fifo.clone();
        let reader = std::thread::spawn(move || std::fs::read(at).unwrap());
        let args = [v.as_str(), "--run=main", "--arg=[1.5, 2]", "-o", "out.npy"];
        assert_ok(&l0_in(&d, &args, None));
        let meta = std::fs::symlink_metadata(&fifo).unwrap();
        assert!(meta.file_type().is_fifo(), "the .npy FIFO was replaced");
        assert!(reader.join().unwrap().starts_with(b"\x93NUMPY"));
    }
    if Path::new("/dev/full").exists() {
        assert_usage(&l0_in(&d, &[&f, "-o", "/dev/full"], None), "No space left");
        let full = std::fs::metadata("/dev/full").unwrap();
        assert!(full.file_type().is_char_device(), "/dev/full was replaced");
        // Standard output on a full device: IR and --run results.
        for args in [
            vec![f.as_str()],
            vec![f.as_str(), "--run=main", "--arg=1.5"],
        ] {
            let o = Command::new(env!("CARGO_BIN_EXE_l0-opt"))
                .args(&args)
                .current_dir(&d)
                .stdout(std::fs::File::create("/dev/full").unwrap())
                .stderr(Stdio::piped())
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains("No space left"), "{args:?}: {err}");
        }
    }
}

#[test]
fn run_result_to_npy() {
    let d = scratch("run-npy");
    let f = write(
        &d,
        "sq.ir",
        "func.func @main(%x: vec<f64>) -> vec<f64> {\n  %y = \"vec.mul\"(%x, %x) : (vec<f64>, vec<f64>) -> vec<f64>\n  \"func.return\"(%y) : (vec<f64>) -> ()\n}\n",
    );
    let out = l0_in(
        &d,
        &[
            "--pass=fuse,lower",
            "--run=main",
            "--arg=[1.5, -2, 3]",
            "--backend=interp",
            "-o",
            "r.npy",
            &f,
        ],
        None,
    );
    assert_ok(&out);
    assert_eq!(out.stdout, "");
    let (shape, dtype, back) = read_npy::<f64>(&d.join("r.npy"));
    assert_eq!(
        (shape, dtype.as_str(), back),
        (vec![3], "<f8", vec![2.25, 4.0, 9.0])
    );
    assert_eq!(listing(&d), ["r.npy", "sq.ir"]);
}

// ---------------------------------------------------------------------------------------
// Reporting flags

#[test]
fn bench_prints_median() {
    let d = scratch("bench");
    let f = write(&d, "s.ir", SUMSQ);
    let out = l0_in(
        &d,
        &[
            "--run=main",
            "--arg=[1, 2, 3]",
            "--backend=interp",
            "--bench=3",
            &f,
        ],
        None,
    );
    assert_ok(&out);
    assert_eq!(out.stdout, "14\n");
    let re = Regex::new(r"(?m)^median_ns=[0-9]+$").unwrap();
    assert!(re.is_match(&out.stderr), "{out:?}");
}

#[test]
fn timing_report() {
    let d = scratch("timing");
    let f = write(&d, "s.ir", SUMSQ);
    let out = l0_in(&d, &["--pass=canonicalize,fuse", "--timing", &f], None);
    assert_ok(&out);
    assert!(out.stdout.contains("func.func @main"), "{out:?}");
    for needle in [
        "execution time report",
        "parse",
        "'canonicalize'",
        "'fuse'",
        "total",
        "MiB peak resident memory",
    ] {
        assert!(out.stderr.contains(needle), "'{needle}' missing: {out:?}");
    }
}

#[test]
fn print_ir_after_all_dumps_each_pass() {
    let d = scratch("print-after-all");
    let f = write(&d, "s.ir", SUMSQ);
    let out = l0_in(
        &d,
        &["--pass=canonicalize,cse,fuse", "--print-ir-after-all", &f],
        None,
    );
    assert_ok(&out);
    let dumps: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("IR Dump After"))
        .collect();
    assert_eq!(dumps.len(), 3, "{out:?}");
    for (dump, pass) in dumps.iter().zip(["canonicalize", "cse", "fuse"]) {
        assert!(dump.contains(pass), "{dump}");
    }
    assert_eq!(out.stderr.matches("func.func @main").count(), 3, "{out:?}");
    assert!(out.stdout.contains("gen.loop"), "{out:?}");
}

#[test]
fn emit_dot() {
    let d = scratch("dot");
    let f = write(&d, "s.ir", SUMSQ);
    let out = l0_in(&d, &["--emit=dot", &f], None);
    assert_ok(&out);
    assert!(out.stdout.trim_start().starts_with("digraph"), "{out:?}");
    assert!(out.stdout.trim_end().ends_with('}'), "{out:?}");
    // Every edge joins declared nodes (a function's arguments are nodes in
    // its cluster, not the function itself) and names the value it carries.
    let decl = Regex::new(r"(?m)^\s*((?:op|arg)\d+) \[label=").unwrap();
    let declared: std::collections::HashSet<&str> = decl
        .captures_iter(&out.stdout)
        .map(|c| c.get(1).unwrap().as_str())
        .collect();
    let edge = Regex::new(r"(?m)^\s*(\w+) -> (\w+)(.*)$").unwrap();
    let mut edges = 0;
    for c in edge.captures_iter(&out.stdout) {
        edges += 1;
        for k in [1, 2] {
            let n = c.get(k).unwrap().as_str();
            assert!(declared.contains(n), "edge to undeclared node {n}: {out:?}");
        }
        assert!(
            c.get(3).unwrap().as_str().contains("[label=\"%"),
            "unlabeled edge: {out:?}"
        );
    }
    assert!(edges >= 4, "{out:?}");
}

/// `--run --target=nvptx` of a program in which no loop becomes a kernel (found on
/// a GPU, where it used to fail with "no 'gpu.kernel' functions to compile"): the
/// program is all host code, runs in the interpreter and needs no GPU.
#[test]
fn nvptx_run_without_kernels_is_host_code() {
    let dir = scratch("nvptx-no-kernels");
    let f = write(
        &dir,
        "scalar.ir",
        "func.func @main(%a: i64, %b: i64) -> i64 {\n  %s = arith.muli %a, %b : i64\n  func.return %s : i64\n}\n",
    );
    for extra in [&[][..], &["--bench=2"][..]] {
        let mut args = vec![
            f.as_str(),
            "--target=nvptx",
            "--run=main",
            "--arg=6",
            "--arg=7",
        ];
        args.extend_from_slice(extra);
        let out = l0_in(&dir, &args, None);
        assert_ok(&out);
        assert_eq!(out.stdout.trim(), "42");
    }
    // A program with a kernel still needs the GPU (or says that it cannot run).
    let sumsq = write(&dir, "sumsq.ir", SUMSQ);
    let out = l0_in(
        &dir,
        &[&sumsq, "--target=nvptx", "--run=main", "--arg=[1, 2, 3]"],
        None,
    );
    assert!(
        (out.code == 0 && out.stdout.trim() == "14")
            || (out.code == 1 && out.stderr.contains("cannot run here")),
        "exit {}: {}{}",
        out.code,
        out.stdout,
        out.stderr
    );
}
