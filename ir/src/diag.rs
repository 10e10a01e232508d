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
}

impl Diagnostic {
    /// An error at `loc`.
    pub fn error(loc: Loc, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            loc,
            message: message.into(),
            notes: Vec::new(),
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
pub fn location_prefix(source: Option<&Source>, loc: Loc) -> String {
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

fn render_one(out: &mut String, source: Option<&Source>, loc: Loc, sev: Severity, msg: &str) {
    out.push_str(&format!("{}: {sev}: {msg}\n", location_prefix(source, loc)));
    if let (Some(s), Some(off)) = (source, loc.offset()) {
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
    render_one(&mut out, source, d.loc, d.severity, &d.message);
    for (loc, msg) in &d.notes {
        render_one(&mut out, source, *loc, Severity::Note, msg);
    }
    out
}
