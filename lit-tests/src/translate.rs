//! Translation of LLVM FileCheck directives into the `filecheck` crate's syntax, and the
//! matching driver (`CHECK-LABEL:` splitting, variables carried across blocks).
//!
//! | LLVM            | `filecheck` crate                                        |
//! |-----------------|----------------------------------------------------------|
//! | `CHECK:`        | `check:`                                                 |
//! | `CHECK-NEXT:`   | `not:` + `nextln:` of the same pattern (see below)       |
//! | `CHECK-SAME:`   | `sameln:`                                                |
//! | `CHECK-NOT:`    | `not:`                                                   |
//! | `CHECK-DAG:`    | `unordered:`                                             |
//! | `CHECK-EMPTY:`  | `check:` of the regex `\A[^\n]*\n$` (next line empty)   |
//! | `CHECK-LABEL:`  | matched first by this module; the input is cut in blocks |
//! | `{{re}}`        | `$(rxN)` with `regex: rxN=re`                            |
//! | `[[X:re]]`      | `$(X=$rxN)` with `regex: rxN=re`                         |
//! | `[[X]]`         | `$(X)`                                                   |
//!
//! Every pattern is wrapped in `$()...$()` so the crate adds no implicit word boundaries, and
//! literal `$` becomes `$$`. Whitespace is canonicalized in both files beforehand.
//! `CHECK-NEXT: P` also emits `not: P` so that, as in LLVM, P matching again later on the
//! previous match's line is an error (skipped right after `CHECK-DAG:`).

use crate::checkfile::{canonicalize, Directive, Kind, Piece};
use filecheck::{CheckerBuilder, Value, VariableMap};
use regex::{Regex, RegexBuilder};
use std::borrow::Cow;
use std::collections::HashMap;

/// Result of checking an input against directives.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// All directives matched.
    Pass,
    /// The input does not match; the message explains why (exit status 1).
    Fail(String),
    /// The directives are invalid, e.g. a bad regex (exit status 2).
    Error(String),
}

/// Make a FileCheck (POSIX, newline-sensitive) regex behave the same under the `regex` crate:
/// negated bracket expressions `[^...]` must not match a newline.
pub fn patch_regex(re: &str) -> String {
    let cs: Vec<char> = re.chars().collect();
    let mut out = String::with_capacity(re.len() + 4);
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c == '\\' {
            out.push(c);
            if let Some(&n) = cs.get(i + 1) {
                out.push(n);
            }
            i += 2;
            continue;
        }
        if c != '[' {
            out.push(c);
            i += 1;
            continue;
        }
        // A bracket expression: copy it through, adding `\n` to negated ones.
        out.push('[');
        i += 1;
        if cs.get(i) == Some(&'^') {
            out.push_str("^\\n");
            i += 1;
        }
        if cs.get(i) == Some(&']') {
            out.push_str("\\]");
            i += 1;
        }
        while i < cs.len() && cs[i] != ']' {
            if cs[i] == '[' && cs.get(i + 1) == Some(&':') {
                // POSIX class `[:name:]`.
                while i < cs.len() && !(cs[i] == ':' && cs.get(i + 1) == Some(&']')) {
                    out.push(cs[i]);
                    i += 1;
                }
            } else if cs[i] == '\\' && i + 1 < cs.len() {
                out.push(cs[i]);
                i += 1;
            }
            if i < cs.len() {
                out.push(cs[i]);
                i += 1;
            }
        }
        if i < cs.len() {
            out.push(']');
            i += 1;
        }
    }
    out
}

/// Build a standalone regex for a pattern without variables (used for `CHECK-LABEL:`).
pub fn label_regex(pieces: &[Piece]) -> Result<Regex, String> {
    let mut s = String::new();
    for p in pieces {
        match p {
            Piece::Lit(l) => s.push_str(&regex::escape(l)),
            Piece::Regex(r) => s.push_str(&format!("(?:{})", patch_regex(r))),
            Piece::Def(..) | Piece::Use(..) => return Err("variables in CHECK-LABEL".into()),
        }
    }
    RegexBuilder::new(&s)
        .multi_line(true)
        .build()
        .map_err(|e| e.to_string())
}

const RX_VAR: &str = "L0FC_rx";

fn push2(a: &mut String, b: &mut String, s: &str) {
    a.push_str(s);
    b.push_str(s);
}

/// Translate a block's directives into crate directive lines. Returns the lines and, for each
/// line, the index into `dirs` it came from (`None` for helper `regex:` lines).
pub fn translate_block(dirs: &[&Directive]) -> (Vec<String>, Vec<Option<usize>>) {
    let (mut lines, mut origin) = (Vec::new(), Vec::new());
    let mut n = 0;
    let mut regex_var = |re: &str, lines: &mut Vec<String>, origin: &mut Vec<Option<usize>>| {
        n += 1;
        // `(?:)` keeps leading/trailing spaces that the crate would trim.
        lines.push(format!("regex: {RX_VAR}{n}=(?:){}(?:)", patch_regex(re)));
        origin.push(None);
        format!("{RX_VAR}{n}")
    };
    for (i, d) in dirs.iter().enumerate() {
        // `pat` is the translation; `probe` the same without definitions (for `not:`).
        let mut pat = String::from("$()");
        let mut probe = String::from("$()");
        if d.kind == Kind::Empty {
            // The rest of the previous match's line, its newline, then an empty line or EOF.
            let v = regex_var(r"\A[^\n]*\n$", &mut lines, &mut origin);
            push2(&mut pat, &mut probe, &format!("$({v})"));
        }
        for p in &d.pieces {
            match p {
                Piece::Lit(l) => push2(&mut pat, &mut probe, &l.replace('$', "$$")),
                Piece::Regex(r) => {
                    let v = regex_var(r, &mut lines, &mut origin);
                    push2(&mut pat, &mut probe, &format!("$({v})"));
                }
                Piece::Def(name, r) => {
                    let v = regex_var(r, &mut lines, &mut origin);
                    pat.push_str(&format!("$({name}=${v})"));
                    probe.push_str(&format!("$({v})"));
                }
                Piece::Use(name) => push2(&mut pat, &mut probe, &format!("$({name})")),
            }
        }
        pat.push_str("$()");
        probe.push_str("$()");
        let after_dag = dirs[..i]
            .iter()
            .rev()
            .find(|p| p.kind != Kind::Not)
            .is_some_and(|p| p.kind == Kind::Dag);
        if d.kind == Kind::Next && !after_dag {
            // LLVM takes the first match after the previous one and then requires it to be on
            // the next line: the pattern must not match earlier, e.g. later on the same line.
            lines.push(format!("not: {probe}"));
            origin.push(Some(i));
        }
        let kw = match d.kind {
            Kind::Check | Kind::Label | Kind::Empty => "check",
            Kind::Next => "nextln",
            Kind::Same => "sameln",
            Kind::Not => "not",
            Kind::Dag => "unordered",
        };
        lines.push(format!("{kw}: {pat}"));
        origin.push(Some(i));
    }
    (lines, origin)
}

/// Variables defined in earlier blocks, offered to the crate as plain-text variables.
struct Vars(HashMap<String, String>);

impl VariableMap for Vars {
    fn lookup(&self, name: &str) -> Option<Value<'_>> {
        self.0.get(name).map(|v| Value::Text(Cow::Borrowed(v)))
    }
}

/// Collect `Define X=v` lines from a crate explanation (the later directive wins).
fn harvest_defs(expl: &str, vars: &mut HashMap<String, String>) {
    let mut defs: Vec<(usize, String, String)> = Vec::new();
    let mut cur = 0;
    for l in expl.lines() {
        if let Some(r) = l.strip_prefix("Matched #").or(l.strip_prefix("Missed #")) {
            let num: String = r.chars().take_while(|c| c.is_ascii_digit()).collect();
            cur = num.parse().unwrap_or(0);
        } else if let Some((k, v)) = l.strip_prefix("Define ").and_then(|r| r.split_once('=')) {
            defs.push((cur, k.to_string(), v.to_string()));
        }
    }
    defs.sort_by_key(|d| d.0);
    for (_, k, v) in defs {
        vars.insert(k, v);
    }
}

/// Find which crate directive failed from an explanation.
fn failed_directive(expl: &str) -> Option<usize> {
    expl.lines().find_map(|l| {
        let r = l
            .strip_prefix("Missed #")
            .filter(|r| !r.contains(" not: "))
            .or_else(|| l.strip_prefix("Matched #").filter(|r| r.contains(" not: ")))?;
        r.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
    })
}

/// Line number (1-based) of byte offset `pos` in `text`.
fn line_of(text: &str, pos: usize) -> usize {
    text[..pos].matches('\n').count() + 1
}

/// Check `input` against `dirs` with LLVM FileCheck semantics. `file` names the check file in
/// messages.
pub fn check(dirs: &[Directive], input: &str, file: &str) -> Outcome {
    let input = canonicalize(input);
    // 1. Match all labels in order; they cut the input into blocks.
    let mut cuts: Vec<(usize, usize)> = Vec::new(); // (match start, match end)
    let mut pos = 0;
    for d in dirs.iter().filter(|d| d.kind == Kind::Label) {
        let re = match label_regex(&d.pieces) {
            Ok(re) => re,
            Err(e) => return Outcome::Error(format!("{file}:{}: error: {e}", d.line)),
        };
        match re.find(&input[pos..]) {
            Some(m) => {
                cuts.push((pos + m.start(), pos + m.end()));
                pos += m.end();
            }
            None => {
                return Outcome::Fail(format!(
                    "{file}:{}: error: {d}\n  expected label not found in input (searched from input line {})",
                    d.line,
                    line_of(&input, pos)
                ))
            }
        }
    }
    // 2. Run the crate per block, carrying variable definitions forward.
    let mut vars = Vars(HashMap::new());
    let mut block: Vec<&Directive> = Vec::new();
    let mut start = 0;
    let mut labels = cuts.iter();
    for d in dirs {
        if d.kind != Kind::Label {
            block.push(d);
            continue;
        }
        let &(label_start, label_end) = labels.next().expect("one cut per label");
        if let Some(o) = run_block(&block, &input, start..label_start, file, &mut vars) {
            return o;
        }
        block.clear();
        start = label_end;
    }
    if let Some(o) = run_block(&block, &input, start..input.len(), file, &mut vars) {
        return o;
    }
    Outcome::Pass
}

/// Run one block; `None` when it passes.
fn run_block(
    block: &[&Directive],
    input: &str,
    range: std::ops::Range<usize>,
    file: &str,
    vars: &mut Vars,
) -> Option<Outcome> {
    if block.is_empty() {
        return None;
    }
    let (lines, origin) = translate_block(block);
    let mut b = CheckerBuilder::new();
    for (l, o) in lines.iter().zip(&origin) {
        match b.directive(l) {
            Ok(true) => {}
            Ok(false) => unreachable!("translated directive not recognized: {l}"),
            Err(e) => {
                let line = o.map(|o| block[o].line).unwrap_or(block[0].line);
                return Some(Outcome::Error(format!("{file}:{line}: error: {e}")));
            }
        }
    }
    let checker = b.finish();
    let first_line = line_of(input, range.start);
    let text = &input[range];
    match checker.explain(text, &*vars) {
        Ok((true, expl)) => {
            harvest_defs(&expl, &mut vars.0);
            None
        }
        Ok((false, expl)) => {
            let failed = failed_directive(&expl);
            let not_hit =
                failed.is_some_and(|k| lines.get(k).is_some_and(|l| l.starts_with("not:")));
            let what = match failed.and_then(|k| origin.get(k).copied().flatten()) {
                Some(o) if block[o].kind == Kind::Next && not_hit => format!(
                    "{file}:{}: error: {}\n  found on the same line as the previous match, not on the next line",
                    block[o].line, block[o]
                ),
                Some(o) if block[o].kind == Kind::Not => {
                    format!(
                        "{file}:{}: error: {}\n  excluded string found in input",
                        block[o].line, block[o]
                    )
                }
                Some(o) => format!(
                    "{file}:{}: error: {}\n  expected string not found in input",
                    block[o].line, block[o]
                ),
                None => {
                    let nots: Vec<String> = block
                        .iter()
                        .rev()
                        .take_while(|d| d.kind == Kind::Not)
                        .map(|d| format!("{file}:{}: {d}", d.line))
                        .collect();
                    format!(
                        "error: excluded string found in input, one of:\n  {}",
                        nots.join("\n  ")
                    )
                }
            };
            Some(Outcome::Fail(format!(
                "{what}\nblock of input starting at input line {first_line} \
                 (whitespace canonicalized), as matched by the translated directives:\n{checker}\n{expl}"
            )))
        }
        Err(filecheck::Error::UndefVariable(m)) => {
            let name = m.rsplit('$').next().unwrap_or("");
            let user = block
                .iter()
                .find(|d| d.pieces.contains(&Piece::Use(name.to_string())));
            let line = user.map_or(block[0].line, |d| d.line);
            Some(Outcome::Fail(format!("{file}:{line}: error: {m}")))
        }
        Err(e) => Some(Outcome::Error(format!(
            "{file}:{}: error: {e}",
            block[0].line
        ))),
    }
}
