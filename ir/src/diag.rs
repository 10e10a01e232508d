//! Diagnostics: errors are values carrying a source location, rendered as
//! `file:line:col: error: message` followed by the source line and a caret
//! (MLIR's format). Line and column come from `codespan-reporting`'s file
//! index.

use std::fmt;

use codespan_reporting::files::{Files, SimpleFile};

use crate::context::{Context, Loc, OpId, Source};

/// How serious a diagnostic is.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Severity {
    Error,
    Warning,
    Note,
    Remark,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
            Severity::Remark => "remark",
        })
    }
}

/// A message at a source location.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub loc: Loc,
    pub message: String,
    /// Attached notes (`note:` lines).
    pub notes: Vec<(Loc, String)>,
    /// A syntax error: reported at its place in the text even at an op
    /// written with an MLIR location clause, as mlir-opt reports parse
    /// errors ([`Diagnostic::syntax`]).
    pub textual: bool,
}

impl Diagnostic {
    /// An error at `loc`.
    pub fn error(loc: Loc, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            loc,
            message: message.into(),
            notes: Vec::new(),
            textual: false,
        }
    }
    /// A syntax error at `loc`: always reported at that place in the text.
    pub fn syntax(loc: Loc, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            textual: true,
            ..Diagnostic::error(loc, message)
        }
    }
    /// An error at `op`'s location.
    pub fn at_op(ctx: &Context, op: OpId, message: impl Into<String>) -> Diagnostic {
        Diagnostic::error(ctx.loc(op), message)
    }
    /// Adds a note.
    pub fn with_note(mut self, loc: Loc, message: impl Into<String>) -> Diagnostic {
        self.notes.push((loc, message.into()));
        self
    }
}

impl std::error::Error for Diagnostic {}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.severity, self.message)
    }
}

/// Line and column (1-based) of byte `offset` in `source`.
pub fn line_col(source: &Source, offset: usize) -> (usize, usize) {
    let file = SimpleFile::new(source.name.as_str(), source.text.as_str());
    let offset = floor_char_boundary(&source.text, offset.min(source.text.len()));
    match file.location((), offset) {
        Ok(l) => (l.line_number, l.column_number),
        Err(_) => (1, 1),
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn display_name(source: Option<&Source>) -> &str {
    match source {
        Some(s) if s.name == "-" => "<stdin>",
        Some(s) => &s.name,
        None => "<unknown>",
    }
}

/// The `file:line:col` prefix of `loc` (just `file` for an unknown location).
/// An op written with an MLIR location clause (`loc("f.mlir":3:7)`, also
/// through an alias `loc(#loc1)`) is reported at that location, as MLIR
/// reports it ([`mlir_location`]).
pub fn location_prefix(source: Option<&Source>, loc: Loc) -> String {
    if let Some(l) = source
        .zip(loc.offset())
        .and_then(|(s, o)| mlir_location(&s.text, o))
    {
        return l;
    }
    text_location(source, loc)
}

/// The `file:line:col` of `loc` in the text itself, whatever location
/// clause the op has.
fn text_location(source: Option<&Source>, loc: Loc) -> String {
    let name = display_name(source);
    match (source, loc.offset()) {
        (Some(s), Some(off)) => {
            let (l, c) = line_col(s, off);
            format!("{name}:{l}:{c}")
        }
        // Not about a place in the source: no made-up line and column.
        _ => name.to_string(),
    }
}

/// The location an MLIR `loc(...)` clause gives the op whose text starts
/// at byte `start` of `text`, as `file:line:col`: the clause written after
/// the op (after its regions, for an op with regions), outside any bracket.
/// `None` when `start` is not the start of a statement (only blanks before
/// it on its line: a parse error inside an op keeps its own place), when
/// the op has no clause, or when the clause holds no file location
/// (`loc(unknown)`). A named, call-site or fused location gives its first
/// file location; an alias `#name` is looked up among the `#name = loc(...)`
/// definitions.
pub fn mlir_location(text: &str, start: usize) -> Option<String> {
    if !text.contains("loc(") || start > text.len() || !text.is_char_boundary(start) {
        return None;
    }
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    if !text[line_start..start].trim().is_empty() {
        return None;
    }
    let b = text.as_bytes();
    let (mut depth, mut i, mut clause) = (0i64, start, None);
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' && b[i] != b'\n' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i + 1 < b.len() && b[i + 1] != b'\n' {
                    i += 1;
                }
            }
            b'\n' if depth <= 0 => break,
            b'(' | b'{' | b'[' => {
                if depth == 0
                    && b[..i].ends_with(b"loc")
                    && !b[..i - 3]
                        .last()
                        .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
                {
                    clause = Some(i + 1);
                }
                depth += 1;
            }
            b')' | b'}' | b']' => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    let body = &text[clause?..];
    let body = match body.strip_prefix('#') {
        Some(alias) => {
            let name: String = alias
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.' | '-'))
                .collect();
            let def = format!("#{name} = loc(");
            let at = text
                .match_indices(&def)
                .find(|(k, _)| *k == 0 || text.as_bytes()[k - 1] == b'\n')?
                .0;
            &text[at + def.len()..]
        }
        None => body,
    };
    file_line_col(body)
}

/// The first `"file":line:col` in `s` (before the end of its line), as
/// `file:line:col`.
fn file_line_col(s: &str) -> Option<String> {
    let s = s.lines().next()?;
    let mut rest = s;
    while let Some(q) = rest.find('"') {
        let after = &rest[q + 1..];
        let end = after.find('"')?;
        let (file, tail) = (&after[..end], &after[end + 1..]);
        let mut nums = tail.strip_prefix(':').map(|t| t.splitn(3, ':'));
        if let Some(parts) = nums.as_mut() {
            let line = parts
                .next()
                .filter(|l| !l.is_empty() && l.bytes().all(|c| c.is_ascii_digit()));
            let col: Option<String> = parts
                .next()
                .map(|c| c.chars().take_while(|c| c.is_ascii_digit()).collect())
                .filter(|c: &String| !c.is_empty());
            if let (Some(l), Some(c)) = (line, col) {
                return Some(format!("{file}:{l}:{c}"));
            }
        }
        rest = tail;
    }
    None
}

fn render_one(
    out: &mut String,
    source: Option<&Source>,
    loc: Loc,
    sev: Severity,
    msg: &str,
    textual: bool,
) {
    // An MLIR location clause moves the report to its place, without the
    // source line under a caret (not for a syntax error).
    let mlir = source
        .zip(loc.offset())
        .filter(|_| !textual)
        .and_then(|(s, o)| mlir_location(&s.text, o));
    let prefix = mlir.clone().unwrap_or_else(|| text_location(source, loc));
    out.push_str(&format!("{prefix}: {sev}: {msg}\n"));
    if let (Some(s), Some(off), None) = (source, loc.offset(), mlir) {
        let (line, col) = line_col(s, off);
        if let Some(text) = s.text.lines().nth(line - 1) {
            // Show at most 120 characters of the line, around the column.
            let chars: Vec<char> = text
                .chars()
                .map(|c| if c == '\t' { ' ' } else { c })
                .collect();
            let start = col.saturating_sub(80).min(chars.len());
            let end = (start + 120).min(chars.len());
            let shown: String = chars[start..end].iter().collect();
            out.push_str(&shown);
            out.push('\n');
            out.push_str(&" ".repeat(col.saturating_sub(1) - start));
            out.push_str("^\n");
        }
    }
}

/// Renders `d` as `file:line:col: error: message`, the source line and a caret,
/// then each note the same way.
pub fn render(source: Option<&Source>, d: &Diagnostic) -> String {
    let mut out = String::new();
    render_one(&mut out, source, d.loc, d.severity, &d.message, d.textual);
    for (loc, msg) in &d.notes {
        render_one(&mut out, source, *loc, Severity::Note, msg, d.textual);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::mlir_location;

    #[test]
    fn mlir_location_clauses() {
        let text = "#a = loc(\"g.py\":4:2)\n  %0 = x.op %y : i32 loc(\"m.py\":1:7)\n  %1 = x.op : i32 loc(#a)\n  x.r {\n  } loc(fused[\"f.py\":3:3, \"h.py\":9:9])\n  %2 = x.op : i32 loc(unknown)\n  %3 = x.op : i32\n  %4 = x.op {s = \"loc(\\\"no.py\\\":1:1)\"}\n";
        let at = |s: &str| text.find(s).unwrap();
        assert_eq!(mlir_location(text, at("%0")).as_deref(), Some("m.py:1:7"));
        assert_eq!(mlir_location(text, at("%1")).as_deref(), Some("g.py:4:2"));
        assert_eq!(mlir_location(text, at("x.r")).as_deref(), Some("f.py:3:3"));
        assert_eq!(mlir_location(text, at("%2")), None);
        assert_eq!(mlir_location(text, at("%3")), None);
        assert_eq!(mlir_location(text, at("%4")), None);
        // Inside an op's text: its own place.
        assert_eq!(mlir_location(text, at("%y")), None);
        assert_eq!(mlir_location(text, text.len()), None);
    }
}
