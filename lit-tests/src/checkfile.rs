//! Parsing of LLVM FileCheck directives and patterns from a check file.

use std::fmt;

/// The kind of a directive (`CHECK:` is [`Kind::Check`], `CHECK-NEXT:` is [`Kind::Next`], ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `CHECK:`
    Check,
    /// `CHECK-NEXT:`
    Next,
    /// `CHECK-SAME:`
    Same,
    /// `CHECK-NOT:`
    Not,
    /// `CHECK-LABEL:`
    Label,
    /// `CHECK-DAG:`
    Dag,
    /// `CHECK-EMPTY:`
    Empty,
}

impl Kind {
    /// The suffix following the prefix in the check file, e.g. `-NEXT:`.
    pub fn suffix(self) -> &'static str {
        match self {
            Kind::Check => ":",
            Kind::Next => "-NEXT:",
            Kind::Same => "-SAME:",
            Kind::Not => "-NOT:",
            Kind::Label => "-LABEL:",
            Kind::Dag => "-DAG:",
            Kind::Empty => "-EMPTY:",
        }
    }

    const ALL: [Kind; 7] = [
        Kind::Check,
        Kind::Next,
        Kind::Same,
        Kind::Not,
        Kind::Label,
        Kind::Dag,
        Kind::Empty,
    ];
}

/// One element of a pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// Literal text (already whitespace-canonicalized).
    Lit(String),
    /// `{{regex}}`.
    Regex(String),
    /// `[[NAME:regex]]`: match `regex` and bind the matched text to `NAME`.
    Def(String, String),
    /// `[[NAME]]`: match the text bound to `NAME`.
    Use(String),
}

/// One directive of a check file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Directive {
    /// What kind of directive this is.
    pub kind: Kind,
    /// The parsed pattern (empty for `CHECK-EMPTY:`).
    pub pieces: Vec<Piece>,
    /// 1-based line number in the check file.
    pub line: usize,
    /// The prefix that introduced it (e.g. `CHECK`).
    pub prefix: String,
    /// The pattern as written (after whitespace canonicalization).
    pub text: String,
}

impl fmt::Display for Directive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{} {}", self.prefix, self.kind.suffix(), self.text)
    }
}

/// An invalid check file (LLVM FileCheck exits with status 2 for these).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckFileError {
    /// 1-based line number, 0 when the error concerns the whole file.
    pub line: usize,
    /// What is wrong.
    pub msg: String,
}

impl fmt::Display for CheckFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "error: {}", self.msg)
        } else {
            write!(f, "{}: error: {}", self.line, self.msg)
        }
    }
}

fn err<T>(line: usize, msg: impl Into<String>) -> Result<T, CheckFileError> {
    Err(CheckFileError {
        line,
        msg: msg.into(),
    })
}

/// FileCheck's default canonicalization: CRLF becomes LF and every run of spaces and tabs
/// becomes a single space. Applied to both the check file and the input.
pub fn canonicalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                while matches!(chars.peek(), Some(' ' | '\t')) {
                    chars.next();
                }
                out.push(' ');
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            _ => out.push(c),
        }
    }
    out
}

/// Whether `prefix` is a valid check prefix (a letter, then letters, digits, `-` or `_`).
pub fn valid_prefix(prefix: &str) -> bool {
    let mut cs = prefix.chars();
    matches!(cs.next(), Some(c) if c.is_ascii_alphabetic())
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// A directive found in a line: the prefix's index (`None` for `COM:`),
/// its kind, how many times it repeats (`CHECK-COUNT-n:` is `n` checks),
/// and the pattern text after the colon.
type Found<'a> = (Option<usize>, Kind, usize, &'a str);

/// `-COUNT-n:` at the start of `rest`: `n` and the text after the colon.
fn count_suffix(rest: &str) -> Option<(usize, &str)> {
    let r = rest.strip_prefix("-COUNT-")?;
    let digits = r.bytes().take_while(u8::is_ascii_digit).count();
    let n = r[..digits].parse().ok()?;
    Some((n, r[digits..].strip_prefix(':')?))
}

/// A suffix `-WORD:` (capitals, digits, dashes) at the start of `rest`
/// that names no directive: a misspelled one, which LLVM's FileCheck would
/// ignore silently, so that the check it meant could never fail.
fn unknown_suffix(rest: &str) -> Option<&str> {
    let body = rest.strip_prefix('-')?;
    let len = body
        .bytes()
        .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'-')
        .count();
    (len > 0 && body[len..].starts_with(':')).then(|| &rest[..len + 2])
}

/// Find the earliest directive in `line`, or an error for a misspelled one
/// (`CHECK-NXT:`) or a count of zero.
/// `others` are the prefixes that other FileCheck runs of the same file
/// use: `CHECK-GEN:` is no misspelling where some run checks `CHECK-GEN`.
fn find_directive<'a>(
    line: &'a str,
    prefixes: &[String],
    others: &[String],
) -> Result<Option<Found<'a>>, String> {
    let mut best: Option<(usize, Found<'a>)> = None;
    let mut unknown: Option<(usize, String)> = None;
    let com = "COM".to_string();
    let all = prefixes.iter().map(Some).chain(std::iter::once(None));
    for (i, p) in all.enumerate() {
        let p = p.unwrap_or(&com);
        let mut from = 0;
        while let Some(off) = line[from..].find(p.as_str()) {
            let at = from + off;
            from = at + 1;
            if line[..at].chars().next_back().is_some_and(is_ident_char) {
                continue;
            }
            let rest = &line[at + p.len()..];
            let hit = if i == prefixes.len() {
                rest.strip_prefix(':').map(|r| (None, Kind::Check, 1, r))
            } else if let Some((n, r)) = count_suffix(rest) {
                if n == 0 {
                    return Err(format!(
                        "invalid count in '{p}-COUNT-0:' (it must be positive)"
                    ));
                }
                Some((Some(i), Kind::Check, n, r))
            } else {
                let known = Kind::ALL
                    .iter()
                    .find_map(|&k| rest.strip_prefix(k.suffix()).map(|r| (Some(i), k, 1, r)));
                if known.is_none() {
                    if let Some(sfx) = unknown_suffix(rest) {
                        // Not a longer prefix (`CHECK-GEN:` with prefixes
                        // CHECK and CHECK-GEN).
                        let longer = prefixes
                            .iter()
                            .chain(others)
                            .any(|q| q.len() > p.len() && line[at..].starts_with(q.as_str()));
                        if !longer && unknown.as_ref().is_none_or(|u| at < u.0) {
                            unknown = Some((at, format!("{p}{sfx}")));
                        }
                    }
                }
                known
            };
            if let Some(h) = hit {
                if best.as_ref().is_none_or(|b| at < b.0) {
                    best = Some((at, h));
                }
                break;
            }
        }
    }
    if let Some((at, name)) = unknown {
        if best.as_ref().is_none_or(|b| at < b.0) {
            return Err(format!(
                "unsupported check directive '{name}' (a misspelling would never be checked)"
            ));
        }
    }
    Ok(best.map(|(_, h)| h))
}

/// Find the end of a `[[...]]` body starting at `s` (just after `[[`): the offset of the closing
/// `]]`, skipping brackets nested in the regex and escaped characters.
fn var_end(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let (mut i, mut depth) = (0, 0usize);
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'[' => depth += 1,
            b']' if depth == 0 && b.get(i + 1) == Some(&b']') => return Some(i),
            b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

fn parse_var(body: &str, line: usize) -> Result<Piece, CheckFileError> {
    if let Some(rest) = body.strip_prefix("@LINE").or(body.strip_prefix("#@LINE")) {
        let rest: String = rest.chars().filter(|c| *c != ' ').collect();
        let off: i64 = match rest.as_str() {
            "" => 0,
            r if r.starts_with('+') || r.starts_with('-') => match r.parse() {
                Ok(v) => v,
                Err(_) => return err(line, format!("invalid @LINE expression '{body}'")),
            },
            _ => return err(line, format!("invalid @LINE expression '{body}'")),
        };
        return Ok(Piece::Lit((line as i64 + off).to_string()));
    }
    if body.starts_with('#') {
        return err(
            line,
            format!("numeric variables are not supported: [[{body}]]"),
        );
    }
    let name_part = body.strip_prefix('$').unwrap_or(body);
    let name_len = name_part
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(name_part.len());
    let name = &name_part[..name_len];
    if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        return err(line, format!("invalid variable name in [[{body}]]"));
    }
    match &name_part[name_len..] {
        "" => Ok(Piece::Use(name.to_string())),
        r if r.starts_with(':') => Ok(Piece::Def(name.to_string(), r[1..].to_string())),
        _ => err(line, format!("invalid variable reference [[{body}]]")),
    }
}

/// Parse an (already trimmed and canonicalized) FileCheck pattern into pieces.
pub fn parse_pattern(pat: &str, line: usize) -> Result<Vec<Piece>, CheckFileError> {
    let mut pieces = Vec::new();
    let mut rest = pat;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("{{") {
            let Some(end) = r.find("}}") else {
                return err(line, "found start of regex string with no end '}}'");
            };
            pieces.push(Piece::Regex(r[..end].to_string()));
            rest = &r[end + 2..];
        } else if let Some(r) = rest.strip_prefix("[[") {
            let Some(end) = var_end(r) else {
                return err(line, "invalid variable reference: no closing ']]'");
            };
            pieces.push(parse_var(&r[..end], line)?);
            rest = &r[end + 2..];
        } else {
            let end = [rest.find("{{"), rest.find("[[")]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(rest.len());
            match pieces.last_mut() {
                Some(Piece::Lit(l)) => l.push_str(&rest[..end]),
                _ => pieces.push(Piece::Lit(rest[..end].to_string())),
            }
            rest = &rest[end..];
        }
    }
    Ok(pieces)
}

/// The prefixes that the file's own RUN lines give FileCheck
/// (`--check-prefix=X`, `--check-prefixes=X,Y`, with `=` or a space), and
/// the default `CHECK`.
fn prefixes_in_run_lines(text: &str) -> Vec<String> {
    let mut out = vec!["CHECK".to_string()];
    for flag in ["check-prefixes", "check-prefix"] {
        let mut rest = text;
        while let Some(i) = rest.find(flag) {
            rest = &rest[i + flag.len()..];
            let Some(v) = rest.strip_prefix('=').or_else(|| rest.strip_prefix(' ')) else {
                continue;
            };
            let end = v
                .find(|c: char| c.is_whitespace() || c == '\'' || c == '"')
                .unwrap_or(v.len());
            out.extend(
                v[..end]
                    .split(',')
                    .filter(|p| !p.is_empty())
                    .map(String::from),
            );
        }
    }
    out
}

/// Parse all directives with any of `prefixes` from a check file. Errors mirror LLVM
/// FileCheck's check-file errors, including "no check directives found".
pub fn parse_check_file(text: &str, prefixes: &[String]) -> Result<Vec<Directive>, CheckFileError> {
    let text = canonicalize(text);
    let others = prefixes_in_run_lines(&text);
    let mut out: Vec<Directive> = Vec::new();
    for (idx, raw) in text.split('\n').enumerate() {
        let line = idx + 1;
        let found = match find_directive(raw, prefixes, &others) {
            Ok(f) => f,
            Err(msg) => return err(line, msg),
        };
        let Some((Some(pi), kind, count, rest)) = found else {
            continue;
        };
        let prefix = prefixes[pi].clone();
        let pat = rest.trim_matches(' ');
        let name = format!("{prefix}{}", kind.suffix());
        if kind == Kind::Empty && !pat.is_empty() {
            return err(
                line,
                format!("found non-empty check string for empty check with prefix '{name}'"),
            );
        }
        if kind != Kind::Empty && pat.is_empty() {
            return err(
                line,
                format!("found empty check string with prefix '{name}'"),
            );
        }
        if matches!(kind, Kind::Next | Kind::Same | Kind::Empty)
            && !out.iter().any(|d| !matches!(d.kind, Kind::Not | Kind::Dag))
        {
            return err(
                line,
                format!("found '{name}' without previous '{prefix}: line"),
            );
        }
        let pieces = parse_pattern(pat, line)?;
        let has_def = pieces.iter().any(|p| matches!(p, Piece::Def(..)));
        let has_use = pieces.iter().any(|p| matches!(p, Piece::Use(..)));
        if kind == Kind::Label && (has_def || has_use) {
            return err(
                line,
                format!("'{name}' cannot contain variable definitions or uses"),
            );
        }
        if kind == Kind::Not && has_def {
            return err(line, format!("'{name}' cannot define variables"));
        }
        // `CHECK-COUNT-n: P` is `n` checks of `P`, one after the other.
        for _ in 0..count {
            out.push(Directive {
                kind,
                pieces: pieces.clone(),
                line,
                prefix: prefix.clone(),
                text: pat.to_string(),
            });
        }
    }
    if out.is_empty() {
        let names: Vec<String> = prefixes.iter().map(|p| format!("'{p}:'")).collect();
        return err(
            0,
            format!(
                "no check directives found (no check strings found with prefix {})",
                names.join(", ")
            ),
        );
    }
    Ok(out)
}
