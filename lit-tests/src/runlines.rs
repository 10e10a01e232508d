//! `RUN:` line extraction and lit-style substitution.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Appends every `.ir` file under `dir` (recursively; a missing directory
/// adds nothing) to `out`, in directory order: the test files of a suite,
/// and the inputs the fuzzer and the round-trip test read.
pub fn collect_ir_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect_ir_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "ir") {
            out.push(p);
        }
    }
}

/// Extract the commands of a test: the text after each `RUN:`, with lines ending in `\` joined
/// to the following `RUN:` line.
pub fn parse_run_lines(text: &str) -> Vec<String> {
    let mut cmds = Vec::new();
    let mut pending: Option<String> = None;
    for line in text.lines() {
        let Some(at) = line.find("RUN:") else {
            continue;
        };
        let part = line[at + 4..].trim();
        let (part, cont) = match part.strip_suffix('\\') {
            Some(p) => (p.trim_end(), true),
            None => (part, false),
        };
        let cmd = match pending.take() {
            Some(prev) if prev.is_empty() => part.to_string(),
            Some(prev) => format!("{prev} {part}"),
            None => part.to_string(),
        };
        if cont {
            pending = Some(cmd);
        } else if !cmd.is_empty() {
            cmds.push(cmd);
        }
    }
    if let Some(cmd) = pending.filter(|c| !c.is_empty()) {
        cmds.push(cmd);
    }
    cmds
}

/// Quote `s` for `sh` if it contains anything but safe characters.
pub fn shell_quote(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-./+=:,@%".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// What the substitutions expand to.
pub struct Substitutions<'a> {
    /// `%s`: the test file.
    pub file: &'a Path,
    /// `%t`: a temporary path unique to the test.
    pub tmp: &'a Path,
    /// Replacement for the word `l0-opt` (`None`: the binary is unavailable).
    pub l0_opt: Option<&'a Path>,
    /// Replacement for the word `FileCheck`.
    pub filecheck: &'a Path,
    /// Replacement for the word `not`.
    pub not: &'a Path,
    /// More tools, `(word, path)`: e.g. an out-of-tree `-opt` tool built on
    /// `opt_tool::opt_main` (`examples/standalone`'s `poly-opt`).
    pub extra: &'a [(&'a str, &'a Path)],
}

fn is_sep(c: char) -> bool {
    c.is_whitespace() || "|;&()<>".contains(c)
}

/// Apply substitutions to a RUN command: the standalone words `l0-opt`, `FileCheck` and `not`
/// (delimited by whitespace or shell operators) become the tool paths, then `%s`, `%S`, `%t`
/// and `%%` are expanded; other `%x` sequences are left alone. Fails if the command needs
/// `l0-opt` and it is unavailable.
pub fn substitute(cmd: &str, s: &Substitutions) -> Result<String, String> {
    let mut words = String::with_capacity(cmd.len());
    let mut rest = cmd;
    while !rest.is_empty() {
        let n = rest.find(|c| !is_sep(c)).unwrap_or(rest.len());
        words.push_str(&rest[..n]);
        rest = &rest[n..];
        let w = rest.find(is_sep).unwrap_or(rest.len());
        let tool = match &rest[..w] {
            "l0-opt" => Some(
                s.l0_opt
                    .ok_or("the command uses l0-opt, which is not available")?,
            ),
            "FileCheck" => Some(s.filecheck),
            "not" => Some(s.not),
            w => s.extra.iter().find(|(name, _)| *name == w).map(|(_, p)| *p),
        };
        match tool {
            Some(p) => words.push_str(&shell_quote(&p.to_string_lossy())),
            None => words.push_str(&rest[..w]),
        }
        rest = &rest[w..];
    }
    let q = |p: &Path| shell_quote(&p.to_string_lossy());
    let dir = s.file.parent().unwrap_or(Path::new("."));
    let mut out = String::with_capacity(words.len());
    let mut chars = words.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('%') => out.push('%'),
            Some('s') => out.push_str(&q(s.file)),
            Some('S') => out.push_str(&q(dir)),
            Some('t') => out.push_str(&q(s.tmp)),
            _ => {
                out.push('%');
                continue;
            }
        }
        chars.next();
    }
    Ok(out)
}

/// The bound on one RUN line: `LIT_TIMEOUT` seconds (default 60).
pub fn lit_timeout() -> Duration {
    Duration::from_secs(
        std::env::var("LIT_TIMEOUT")
            .ok()
            .and_then(|t| t.parse().ok())
            .unwrap_or(60),
    )
}

/// Runs `cmd` under `bash -o pipefail -c` in `cwd`, in a process group of
/// its own that is killed whole after `timeout`; returns (ok, status text,
/// stdout, stderr). Both harnesses (L0's and the standalone example's) run
/// RUN lines with it.
pub fn run_cmd(cmd: &str, cwd: &Path, timeout: Duration) -> (bool, String, String, String) {
    use std::os::unix::process::CommandExt;
    let child = Command::new("bash")
        .args(["-o", "pipefail", "-c", cmd])
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            return (
                false,
                format!("cannot start bash: {e}"),
                String::new(),
                String::new(),
            )
        }
    };
    let reader = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            String::from_utf8_lossy(&v).into_owned()
        })
    };
    let out = reader(Box::new(child.stdout.take().expect("piped")));
    let err = reader(Box::new(child.stderr.take().expect("piped")));
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Ok(s),
            Ok(None) if start.elapsed() > timeout => {
                let pgid = format!("-{}", child.id());
                let _ = Command::new("kill").args(["-KILL", "--", &pgid]).status();
                let _ = child.wait();
                break Err(format!("timed out after {}s (killed)", timeout.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => break Err(e.to_string()),
        }
    };
    let (o, e) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    match status {
        Ok(s) => (s.success(), s.to_string(), o, e),
        Err(m) => (false, m, o, e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_lines_join_continuations() {
        let t = "// RUN: a \\\n// RUN:   b | c\nx\n// RUN: d\n";
        assert_eq!(parse_run_lines(t), vec!["a b | c", "d"]);
        assert!(parse_run_lines("no run here").is_empty());
    }

    #[test]
    fn substitutes_words_and_percent() {
        let s = Substitutions {
            file: Path::new("/d/x.ir"),
            tmp: Path::new("/tmp/x.tmp"),
            l0_opt: Some(Path::new("/b/l0-opt")),
            filecheck: Path::new("/b/fc"),
            not: Path::new("/b/not"),
            extra: &[("poly-opt", Path::new("/b/poly-opt"))],
        };
        let got = substitute(
            "l0-opt %s -o %t|not FileCheck %s --check-prefix=not 100%% %S %x",
            &s,
        );
        assert_eq!(
            got.unwrap(),
            "/b/l0-opt /d/x.ir -o /tmp/x.tmp|/b/not /b/fc /d/x.ir --check-prefix=not 100% /d %x"
        );
        let none = Substitutions { l0_opt: None, ..s };
        assert!(substitute("l0-opt %s", &none).is_err());
        assert_eq!(substitute("cat %s", &none).unwrap(), "cat /d/x.ir");
        assert_eq!(
            substitute("poly-opt %s | x/poly-opt", &none).unwrap(),
            "/b/poly-opt /d/x.ir | x/poly-opt"
        );
    }

    #[test]
    fn quotes_odd_paths() {
        assert_eq!(shell_quote("/a b/c"), "'/a b/c'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}
