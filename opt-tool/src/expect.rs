//! `--verify-diagnostics` (as MLIR): the input declares the diagnostics it
//! must produce with `// expected-error {{message}}` comments, optionally
//! `@+N` / `@-N` to point at another line. Every produced diagnostic must be
//! expected on its line (by substring) and every expectation met.

use ir::context::Source;
use ir::diag::{line_col, Diagnostic, Severity};

struct Expected {
    line: usize,
    severity: Severity,
    text: String,
    matched: bool,
}

fn parse_expectations(text: &str) -> Vec<Expected> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(pos) = rest.find("expected-") {
            rest = &rest[pos + "expected-".len()..];
            let (sev, after) = if let Some(a) = rest.strip_prefix("error") {
                (Severity::Error, a)
            } else if let Some(a) = rest.strip_prefix("warning") {
                (Severity::Warning, a)
            } else if let Some(a) = rest.strip_prefix("note") {
                (Severity::Note, a)
            } else if let Some(a) = rest.strip_prefix("remark") {
                (Severity::Remark, a)
            } else {
                continue;
            };
            let mut target = i + 1;
            let mut a = after;
            if let Some(off) = a.trim_start().strip_prefix('@') {
                let end = off
                    .find(|c: char| c.is_whitespace() || c == '{')
                    .unwrap_or(off.len());
                let spec = &off[..end];
                a = &off[end..];
                let delta: i64 = match spec {
                    "above" => -1,
                    "below" => 1,
                    s => s.parse().unwrap_or(0),
                };
                target = (target as i64 + delta).max(1) as usize;
            }
            let a = a.trim_start();
            if let Some(body) = a.strip_prefix("{{") {
                if let Some(end) = body.find("}}") {
                    out.push(Expected {
                        line: target,
                        severity: sev,
                        text: body[..end].to_string(),
                        matched: false,
                    });
                    rest = &body[end..];
                }
            }
        }
    }
    out
}

/// Checks `diags` against the expectations in `source`. Returns the problems
/// (empty when everything matched), each rendered as a diagnostic line.
pub fn check(source: &Source, diags: &[Diagnostic]) -> Vec<String> {
    let mut exp = parse_expectations(&source.text);
    let mut problems = Vec::new();
    let mut all: Vec<(Severity, ir::Loc, String)> = Vec::new();
    for d in diags {
        all.push((d.severity, d.loc, d.message.clone()));
        for (l, m) in &d.notes {
            all.push((Severity::Note, *l, m.clone()));
        }
    }
    for (sev, loc, msg) in all {
        let line = loc.offset().map(|o| line_col(source, o).0).unwrap_or(0);
        let hit = exp
            .iter_mut()
            .find(|e| !e.matched && e.line == line && e.severity == sev && msg.contains(&e.text));
        match hit {
            Some(e) => e.matched = true,
            None if sev == Severity::Note => {}
            None => problems.push(format!(
                "{}: error: unexpected {sev}: {msg}",
                ir::diag::location_prefix(Some(source), loc)
            )),
        }
    }
    for e in exp.iter().filter(|e| !e.matched) {
        problems.push(format!(
            "{}:{}:1: error: expected {} \"{}\" was not produced",
            if source.name == "-" {
                "<stdin>"
            } else {
                &source.name
            },
            e.line,
            e.severity,
            e.text
        ));
    }
    problems
}
