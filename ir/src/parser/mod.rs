//! The text parser (IR-SPEC §1-2): source text to [`crate::ast`].
//!
//! # Design
//!
//! The lexical and phrase-level syntax lives in `grammar.pest`. This module
//! drives it: it walks op lists, regions, blocks and bracket groups with an
//! explicit stack and calls one pest entry rule per phrase (an op head, a
//! generic op's tail, a block label, a run of custom-form items, an attribute
//! dictionary). Consequences:
//!
//! * memory is bounded by the size of one op, not of the file, and a
//!   1,000,000-op function is a million small parses (linear time);
//! * regions never recurse, neither in pest nor in the AST conversion; types
//!   and attributes do recurse, bounded by [`check_nesting`], which rejects
//!   any input whose `( [ { <` nesting exceeds [`MAX_NESTING`] before pest
//!   runs.
//! * pest costs about 10 µs per op line (it works char by char through
//!   closures), so the common shapes (a generic op without regions or
//!   attributes; a custom op's name and simple item runs) go through the
//!   hand-written `fast` path first. It accepts a strict subset and yields
//!   to the grammar on anything else; tests check both agree.
//!
//! # Streaming (issue 14)
//!
//! [`parse_module`] builds the whole tree; the IR builder instead uses
//! [`parse_module_lazy`], which reads each region as its span only (a brace
//! scan that skips strings and comments as the grammar does), and
//! [`stream_region`], which reads one region when the builder builds it and
//! hands over its ops one at a time. So a function body never exists as a
//! tree, and its ops are built in source order while the text is read. The
//! two plainest op shapes, [`GenericLine`] and [`CustomLine`], come with
//! names borrowed from the text and no allocation; the builder turns them
//! into the general path's own node (`to_ast`) whenever it cannot build them
//! directly, so every diagnostic still comes from one place. A unit test
//! checks that the streamed ops equal the eager tree.
//!
//! # Custom forms
//!
//! An op whose name is a bare dotted identifier (`arith.addf`, `func.func`;
//! nested `module` becomes `builtin.module`) gets an [`AstOpBody::Custom`]
//! body: the items up to the start of the next op. At the top level of the
//! item list (not inside `( )` / `[ ]`) the item list ends at
//! * a result list followed by `=` and an op name (`%a, %b:2 = x.y`,
//!   `%a = "x.y"(`); a `%i = %lb` (as in `scf.for`) is *not* an op start
//!   because no op name follows the `=`;
//! * a dotted identifier, or a string immediately followed by `(`;
//! * `}` (end of the enclosing region), `^` (next block label), `)` / `]`
//!   (an error reported by the enclosing op list), any other character that
//!   starts no item, or the end of input.
//!
//! The start-of-op test is skipped for the item right after a `,` so that
//! long operand lists stay linear.
//!
//! A `{` in the items is an [`AstItemKind::AttrDict`] if it parses as an
//! attribute dictionary (`{}` or `name = attr` / `name` entries whose names
//! have no dot), otherwise a [`AstItemKind::Region`]. **An empty `{}` is an
//! empty `AttrDict`** (a custom-form printer must print an empty region in
//! some other way, e.g. with an explicit block label). In the generic form,
//! `({})` is a region with no blocks.

use pest::error::{ErrorVariant, InputLocation};
use pest::iterators::Pair;
use pest::Parser as _;

use std::rc::Rc;

use crate::ast::{
    Aliases, AstArg, AstAttrEntry, AstBlock, AstGeneric, AstItem, AstItemKind, AstModule, AstOp,
    AstOpBody, AstRegion, AstResult, AstValueRef, Offset, SyntaxError,
};
use crate::attributes::Attribute;
use crate::types::{Type, TypeParam};

mod memref_type;
#[cfg(test)]
mod tests;

/// [`parse_module`] without the hand-written fast path (pest only), so tests
/// can check that both give the same tree.
#[cfg(test)]
fn parse_module_pest_only(src: &str) -> Result<AstModule, SyntaxError> {
    check_nesting(src)?;
    Driver {
        fast_path: false,
        ..Driver::new(src)
    }
    .module()
}

#[derive(pest_derive::Parser)]
#[grammar = "parser/grammar.pest"]
struct L0Parser;

/// The deepest bracket nesting (`( [ { <` together) the parser accepts.
pub const MAX_NESTING: usize = 200;

type PResult<T> = Result<T, SyntaxError>;

fn error(offset: Offset, message: impl Into<String>) -> SyntaxError {
    SyntaxError {
        offset,
        message: message.into(),
    }
}

/// Parses a whole file: a `module { ... }` wrapper or a plain list of ops.
pub fn parse_module(src: &str) -> Result<AstModule, SyntaxError> {
    check_nesting(src)?;
    Driver::new(src).module()
}

/// Parses a whole file like [`parse_module`], but reads every region lazily:
/// each [`AstRegion`] has `lazy_end` set and no blocks, and
/// [`stream_region`] reads it later. The caller must have run
/// [`check_nesting`] on `src`. This is what lets the IR builder build a
/// large function body op by op (issue 14: no syntax tree of the whole file).
pub fn parse_module_lazy(src: &str) -> Result<AstModule, SyntaxError> {
    let long_braces = scan_nesting(src)?;
    Driver {
        lazy: true,
        long_braces,
        ..Driver::new(src)
    }
    .module()
}

/// What [`stream_region`] hands its sink, in source order.
pub enum RegionEvent<'e, 's> {
    /// A block label `^name(%a: T, ...):` (its `ops` are empty).
    Label(AstBlock),
    /// One op of the region, its own regions lazy.
    Op(AstOp),
    /// The most common op shape, read without allocating: see [`GenericLine`]
    /// (lent: the parser reuses it for the next line).
    Line(&'e GenericLine<'s>),
    /// The most common custom form, read without allocating: see [`CustomLine`].
    Custom(&'e CustomLine<'s>),
}

/// A custom-form op `%r = d.op %a, %b : T` (one result, plain operand names,
/// a scalar type, nothing else before the next op), with names borrowed from
/// the source. The IR builder builds it directly when `d.op` declares
/// [`crate::spec::OpSpec::same_type_form`], and otherwise through
/// [`CustomLine::to_ast`], the same node the general path would make.
#[derive(Debug)]
pub struct CustomLine<'s> {
    /// Offset of the op's first character (its result).
    pub loc: Offset,
    /// The result name (without `%`) and its offset.
    pub result: (&'s str, Offset),
    /// The op name.
    pub name: &'s str,
    /// Operand names (without `%`) and their offsets.
    pub operands: smallvec::SmallVec<[(&'s str, Offset); 4]>,
    /// Offsets of the commas between operands.
    pub commas: smallvec::SmallVec<[Offset; 3]>,
    /// Offset of the `:`.
    pub colon: Offset,
    /// The type and its offset.
    pub ty: Type,
    pub ty_loc: Offset,
}

impl CustomLine<'_> {
    /// The same op as a syntax tree node (for the general build path).
    pub fn to_ast(&self) -> AstOp {
        let mut items = Vec::with_capacity(2 * self.operands.len() + 2);
        for (k, &(n, loc)) in self.operands.iter().enumerate() {
            if k > 0 {
                items.push(AstItem {
                    kind: AstItemKind::Punct(","),
                    loc: self.commas[k - 1],
                });
            }
            items.push(AstItem {
                kind: AstItemKind::Value(AstValueRef {
                    name: n.to_string(),
                    index: None,
                    loc,
                }),
                loc,
            });
        }
        items.push(AstItem {
            kind: AstItemKind::Punct(":"),
            loc: self.colon,
        });
        items.push(AstItem {
            kind: AstItemKind::Type(self.ty.clone()),
            loc: self.ty_loc,
        });
        AstOp {
            results: vec![AstResult {
                name: self.result.0.to_string(),
                count: 1,
                loc: self.result.1,
            }],
            name: self.name.to_string(),
            loc: self.loc,
            body: AstOpBody::Custom(items),
        }
    }
}

/// A generic op without regions or attributes, with names borrowed from the
/// source text: `%a, %b = "d.op"(%x, %y#1) : (f64, f64) -> (f64, i1)`.
#[derive(Debug, Default)]
pub struct GenericLine<'s> {
    /// Offset of the op's first character.
    pub loc: Offset,
    /// Result names (without `%`) and their offsets.
    pub results: smallvec::SmallVec<[(&'s str, Offset); 2]>,
    /// The op name (between the quotes).
    pub name: &'s str,
    /// Operand names (without `%`), their `#N` suffixes and their offsets.
    pub operands: smallvec::SmallVec<[(&'s str, Option<usize>, Offset); 4]>,
    pub operand_types: smallvec::SmallVec<[Type; 4]>,
    pub result_types: smallvec::SmallVec<[Type; 2]>,
    /// Offset of the `:` before the function type.
    pub type_loc: Offset,
}

impl GenericLine<'_> {
    /// Empties the line for reuse at `loc` (keeps no heap memory: its lists
    /// are inline up to their usual lengths).
    fn clear(&mut self, loc: Offset) {
        self.loc = loc;
        self.results.clear();
        self.name = "";
        self.operands.clear();
        self.operand_types.clear();
        self.result_types.clear();
        self.type_loc = 0;
    }
    /// The same op as a syntax tree node (for the general build path).
    pub fn to_ast(&self) -> AstOp {
        AstOp {
            results: self
                .results
                .iter()
                .map(|&(n, loc)| AstResult {
                    name: n.to_string(),
                    count: 1,
                    loc,
                })
                .collect(),
            name: self.name.to_string(),
            loc: self.loc,
            body: AstOpBody::Generic(AstGeneric {
                operands: self
                    .operands
                    .iter()
                    .map(|&(n, index, loc)| AstValueRef {
                        name: n.to_string(),
                        index,
                        loc,
                    })
                    .collect(),
                successors: Vec::new(),
                regions: Vec::new(),
                attrs: Vec::new(),
                operand_types: self.operand_types.to_vec(),
                result_types: self.result_types.to_vec(),
                type_loc: self.type_loc,
            }),
        }
    }
}

/// Reads the lazy region whose `{` is at `start` in `src` (see
/// [`parse_module_lazy`]) and hands each block label and op to `sink` as soon
/// as it is read, so memory stays bounded by one op. Nested regions are lazy
/// again. Errors: the first syntax error, or the first error `sink` returns.
pub fn stream_region<'s>(
    src: &'s str,
    start: Offset,
    aliases: &Rc<Aliases>,
    sink: &mut dyn for<'e> FnMut(RegionEvent<'e, 's>) -> PResult<()>,
) -> PResult<()> {
    let mut d = Driver {
        lazy: true,
        pos: start,
        aliases: aliases.clone(),
        ..Driver::new(src)
    };
    if d.peek() != Some(b'{') {
        return Err(internal(start));
    }
    d.sink = Some(sink);
    let stack = vec![Frame::Region {
        region: AstRegion::new(Vec::new(), start),
        block: None,
        stream: true,
    }];
    d.pos += 1;
    d.drive(stack).map(|_| ())
}

/// MLIR's source locations: a copy of `src` with every `loc(...)` clause
/// (after an op, a block argument or a region) and every location alias
/// definition `#name = loc(...)` at the start of a line replaced by spaces
/// (line breaks kept), so that every other offset stays the same; `None`
/// when `src` has none. L0 keeps its own locations (the op's offset in the
/// text); diagnostics read the clauses from the original text when they are
/// rendered ([`crate::diag::mlir_location`]).
pub fn strip_locations(src: &str) -> Option<String> {
    if !src.contains("loc(") {
        return None;
    }
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let word_char = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.' | b'-');
    let mut i = 0;
    let mut line_start = 0;
    while i < b.len() {
        match b[i] {
            b'\n' => line_start = i + 1,
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' && b[i] != b'\n' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'l' if b[i..].starts_with(b"loc(")
                && (i == 0
                    || !(word_char(b[i - 1])
                        || matches!(b[i - 1], b'%' | b'@' | b'^' | b'#' | b'!'))) =>
            {
                let Some(close) = matching_close(b, i + 3) else {
                    return Some(String::from_utf8(out).unwrap_or_default());
                };
                // `#alias = loc(...)` alone on its line: blank the alias too.
                let before = src[line_start..i].trim();
                let from = if before.starts_with('#') && before.ends_with('=') {
                    line_start
                } else {
                    i
                };
                for c in &mut out[from..=close] {
                    if *c != b'\n' {
                        *c = b' ';
                    }
                }
                i = close;
            }
            _ => {}
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// The offset of the bracket that closes the `{` or `(` at `open`, skipping
/// string literals and `//` comments as the grammar does; `None` when the
/// input ends first or a string is not closed on its line (the parser then
/// reports the error).
/// A table of the bytes in `stops`, for the scans over the whole text.
const fn stop_table(stops: &[u8]) -> [bool; 256] {
    let mut t = [false; 256];
    let mut k = 0;
    while k < stops.len() {
        t[stops[k] as usize] = true;
        k += 1;
    }
    t
}
static NESTING_STOPS: [bool; 256] = stop_table(b"/\"([{<)]}>");
static BRACE_STOPS: [bool; 256] = stop_table(b"/\"{}");
static PAREN_STOPS: [bool; 256] = stop_table(b"/\"()");

fn matching_close(b: &[u8], open: Offset) -> Option<Offset> {
    let (opener, closer, stops) = match b.get(open)? {
        b'(' => (b'(', b')', &PAREN_STOPS),
        _ => (b'{', b'}', &BRACE_STOPS),
    };
    let mut depth = 0usize;
    let mut i = open;
    while i < b.len() {
        // Skip the bytes the match below ignores (most of the text).
        while i < b.len() && !stops[b[i] as usize] {
            i += 1;
        }
        let Some(&c) = b.get(i) else {
            break;
        };
        match c {
            c if c == opener => depth += 1,
            c if c == closer => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            b'"' => {
                i += 1;
                loop {
                    match b.get(i)? {
                        b'"' => break,
                        b'\\' => i += 2,
                        b'\n' => return None,
                        _ => i += 1,
                    }
                }
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Parses a whole string as one type (`f64`, `vec<f64>`, `(f64) -> f64`).
pub fn parse_type(src: &str) -> Result<Type, SyntaxError> {
    check_nesting(src)?;
    let d = Driver::new(src);
    let pair = d.run(Rule::type_eoi)?;
    match pair.into_inner().next() {
        Some(p) => d.ty(p),
        None => Err(error(0, "expected type")),
    }
}

/// Parses a whole string as one attribute (`42 : i32`, `#gen.reduce<add>`).
pub fn parse_attribute(src: &str) -> Result<Attribute, SyntaxError> {
    check_nesting(src)?;
    let d = Driver::new(src);
    let pair = d.run(Rule::attribute_eoi)?;
    match pair.into_inner().next() {
        Some(p) => d.attribute(p),
        None => Err(error(0, "expected attribute")),
    }
}

/// Rejects inputs whose bracket nesting (`( [ { <`, outside comments and
/// string literals; `->` is not a bracket) exceeds [`MAX_NESTING`], so that
/// no later stage can run out of stack.
pub fn check_nesting(src: &str) -> Result<(), SyntaxError> {
    scan_nesting(src).map(|_| ())
}

/// Braces further apart than this are remembered by [`scan_nesting`].
const LONG_BRACES: Offset = 1 << 16;

/// [`check_nesting`], which also returns the `{` `}` pairs at least
/// [`LONG_BRACES`] bytes apart, sorted by the `{`, as [`matching_close`]
/// would match them: the lazy parser then skips a large region without a
/// second scan of its text (a function body is most of a large file).
fn scan_nesting(src: &str) -> Result<Vec<(Offset, Offset)>, SyntaxError> {
    let b = src.as_bytes();
    let mut depth = 0usize;
    // The open `{`s, innermost last (as `matching_close` counts them).
    let mut braces: Vec<Offset> = Vec::new();
    let mut long = Vec::new();
    let mut i = 0;
    while i < b.len() {
        // Skip the bytes the match below ignores (most of the text).
        while i < b.len() && !NESTING_STOPS[b[i] as usize] {
            i += 1;
        }
        let Some(&c) = b.get(i) else {
            break;
        };
        match c {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' && b[i] != b'\n' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                if i >= b.len() || b[i] == b'\n' {
                    // `matching_close` finds no `}` past an unclosed string.
                    braces.clear();
                }
            }
            b'(' | b'[' | b'{' | b'<' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(error(i, format!("nesting too deep (limit {MAX_NESTING})")));
                }
                if c == b'{' {
                    braces.push(i);
                }
            }
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if c == b'}' {
                    if let Some(open) = braces.pop() {
                        if i - open >= LONG_BRACES {
                            long.push((open, i));
                        }
                    }
                }
            }
            b'>' if i == 0 || b[i - 1] != b'-' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    long.sort_unstable();
    Ok(long)
}

/// What an op list is currently collecting into.
enum Frame {
    /// The file's top level (`module` tells whether a `module {` wrapper is
    /// open; `generic`, whether it is MLIR's `"builtin.module"() ({`).
    Top {
        ops: Vec<AstOp>,
        module: bool,
        generic: bool,
    },
    /// The blocks of a region being read (`stream`: the region
    /// [`stream_region`] reads, whose ops and labels go to the sink).
    Region {
        region: AstRegion,
        block: Option<AstBlock>,
        stream: bool,
    },
    /// A generic op whose region list `({...}, ...)` is being read.
    Generic { op: AstOp, regions: Vec<AstRegion> },
    /// A custom op whose items are being read.
    Custom { op: AstOp, items: Vec<AstItem> },
    /// A `( )` or `[ ]` group inside custom items.
    Group {
        close: u8,
        loc: Offset,
        items: Vec<AstItem>,
    },
}

/// What an op head turned out to be.
enum Head {
    /// A generic op without regions: complete.
    Complete(AstOp),
    /// A generic op followed by `(` `{`: its regions come next.
    Regions(AstOp),
    /// A custom op: its items come next.
    Custom(AstOp),
}

/// Where [`stream_region`] sends what it reads.
type Sink<'k, 's> = &'k mut dyn for<'e> FnMut(RegionEvent<'e, 's>) -> PResult<()>;

/// What a run of the driver produced.
enum Done {
    /// The whole file.
    Module(AstModule),
    /// The streamed region ended (its ops went to the sink).
    Region,
}

struct Driver<'s, 'k> {
    src: &'s str,
    pos: Offset,
    /// Try [`fast::generic_op`] before pest (off only in tests).
    fast_path: bool,
    /// Read regions lazily (see [`parse_module_lazy`]).
    lazy: bool,
    /// Where a streamed region's ops and labels go.
    sink: Option<Sink<'k, 's>>,
    /// The last generic line's function type, for the fast path.
    signatures: fast::SigCache,
    /// The far-apart `{` `}` pairs of `src` (see [`scan_nesting`]).
    long_braces: Vec<(Offset, Offset)>,
    /// The file's alias definitions.
    aliases: Rc<Aliases>,
}

fn internal(offset: Offset) -> SyntaxError {
    error(offset, "internal parser error")
}

impl<'s> Driver<'s, '_> {
    fn new(src: &'s str) -> Self {
        Driver {
            src,
            pos: 0,
            fast_path: true,
            lazy: false,
            sink: None,
            signatures: fast::SigCache::default(),
            long_braces: Vec::new(),
            aliases: Rc::default(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.src.as_bytes().get(self.pos).copied()
    }

    /// Skips whitespace and `//` comments.
    fn skip_ws(&mut self) {
        let b = self.src.as_bytes();
        while self.pos < b.len() {
            match b[self.pos] {
                b' ' | b'\t' | b'\r' | b'\n' => self.pos += 1,
                b'/' if b.get(self.pos + 1) == Some(&b'/') => {
                    while self.pos < b.len() && b[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
    }

    /// Describes what is at `offset` for error messages.
    fn found(&self, offset: Offset) -> String {
        match self.src.get(offset..).and_then(|s| s.chars().next()) {
            None => "end of input".to_string(),
            Some(c) if c.is_ascii_graphic() => format!("'{c}'"),
            Some(c) => format!("{:?}", c),
        }
    }

    fn expected(&self, what: &str) -> SyntaxError {
        error(
            self.pos,
            format!("expected {what}, found {}", self.found(self.pos)),
        )
    }

    /// Runs entry rule `rule` at `self.pos` (which must be a char boundary)
    /// and returns its pair; pair offsets are relative to `self.pos`.
    fn run(&self, rule: Rule) -> PResult<Pair<'s, Rule>> {
        let input = self.src.get(self.pos..).ok_or_else(|| internal(self.pos))?;
        match L0Parser::parse(rule, input) {
            Ok(mut pairs) => pairs.next().ok_or_else(|| internal(self.pos)),
            Err(e) => Err(self.pest_error(rule, input, e)),
        }
    }

    /// Turns a pest error into a `SyntaxError` at an absolute byte offset,
    /// re-running the parse with pest's token tracking to list the literal
    /// tokens that were expected.
    fn pest_error(&self, rule: Rule, input: &str, e: pest::error::Error<Rule>) -> SyntaxError {
        let mut rel = match e.location {
            InputLocation::Pos(p) => p,
            InputLocation::Span((s, _)) => s,
        };
        let positives = match e.variant {
            ErrorVariant::ParsingError { positives, .. } => positives,
            ErrorVariant::CustomError { message } => return error(self.pos + rel, message),
        };
        // pest records failed rules, not failed literals (`)`, `->`): the
        // detailed re-run finds the furthest position any token was tried.
        pest::set_error_detail(true);
        let detailed = L0Parser::parse(rule, input);
        pest::set_error_detail(false);
        let attempts = detailed.err().and_then(|d| d.parse_attempts());
        let mut expected: Vec<String> = Vec::new();
        let mut push = |s: String| {
            if !expected.contains(&s) {
                expected.push(s);
            }
        };
        let furthest = attempts.as_ref().map_or(0, |a| a.max_position);
        if furthest <= rel {
            for r in positives {
                if let Some(d) = describe(r) {
                    push(d.to_string());
                }
            }
        }
        let mut context = None;
        if let Some(attempts) = attempts.filter(|a| a.max_position >= rel) {
            rel = attempts.max_position;
            for t in attempts.expected_tokens() {
                if let Some(d) = describe_token(&t.to_string()) {
                    push(d);
                }
            }
            context = attempts
                .call_stacks
                .iter()
                .find_map(|c| c.parent.and_then(describe));
        }
        if expected.iter().any(|e| e == "attribute") {
            expected.retain(|e| e != "type");
        }
        let offset = self.pos + rel.min(input.len());
        let found = self.found(offset);
        // A word where a type belongs names a type L0 does not have
        // (`tensor<...>`, `vector<...>`): say so.
        if expected.iter().any(|e| e.contains("type")) {
            let word: String = self.src[offset..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
                .collect();
            if word.starts_with(|c: char| c.is_ascii_alphabetic()) && !is_type_word(&word) {
                return error(offset, format!("unknown type '{word}'"));
            }
        }
        let message = match expected.len() {
            0 => match context {
                Some(c) => format!("{MALFORMED} {c} at {found}"),
                None => format!("{MALFORMED} input at {found}"),
            },
            1 => format!("expected {}, found {found}", expected[0]),
            n => format!(
                "expected {} or {}, found {found}",
                expected[..n - 1].join(", "),
                expected[n - 1]
            ),
        };
        error(offset, message)
    }

    /// Absolute offset of a pair obtained from a run starting at `base`.
    fn at(base: Offset, p: &Pair<'_, Rule>) -> Offset {
        base + p.as_span().start()
    }

    // ------------------------------------------------------------ op lists

    fn module(mut self) -> PResult<AstModule> {
        self.skip_ws();
        self.alias_definitions()?;
        let mut loc = 0;
        let mut module = false;
        let mut generic = false;
        let (mut name, mut attrs) = (None, Vec::new());
        let rest = &self.src.as_bytes()[self.pos..];
        if rest.starts_with(b"\"builtin.module\"") {
            // MLIR's generic form: `"builtin.module"() ({ ... }) {attrs} : () -> ()`.
            loc = self.pos;
            self.pos += "\"builtin.module\"".len();
            self.expect_tokens(&["(", ")", "(", "{"])?;
            // An empty body is printed as a bare entry label `^bb0:`.
            self.skip_ws();
            if self.peek() == Some(b'^') {
                let rest = &self.src.as_bytes()[self.pos + 1..];
                let n = rest.iter().take_while(|&&c| is_ident_cont(c)).count();
                if n == 0 || rest.get(n) != Some(&b':') {
                    return Err(self.expected("a module body without block arguments"));
                }
                self.pos += 1 + n + 1;
            }
            module = true;
            generic = true;
        } else if rest.starts_with(b"module") && !rest.get(6).is_some_and(|&c| is_ident_cont(c)) {
            loc = self.pos;
            self.pos += 6;
            self.skip_ws();
            // MLIR's `module @name attributes {...} {`.
            if self.peek() == Some(b'@') {
                let p = self.run(Rule::symbol)?;
                name = Some(symbol_name(p.as_str(), self.pos)?);
                self.pos += p.as_span().end();
                self.skip_ws();
            }
            let rest = &self.src.as_bytes()[self.pos..];
            if rest.starts_with(b"attributes") && !rest.get(10).is_some_and(|&c| is_ident_cont(c)) {
                self.pos += 10;
                self.skip_ws();
                attrs = self.attr_dict_here()?;
                self.skip_ws();
            }
            if self.peek() != Some(b'{') {
                return Err(self.expected("'{' after 'module'"));
            }
            self.pos += 1;
            module = true;
        }
        let stack = vec![Frame::Top {
            ops: Vec::new(),
            module,
            generic,
        }];
        match self.drive(stack)? {
            Done::Module(mut m) => {
                if generic {
                    // The generic form's attributes: `sym_name` is the name.
                    let sym = m.attrs.iter().position(|e| e.name == "sym_name");
                    if let Some(k) = sym {
                        match m.attrs.remove(k).value {
                            Attribute::Str(s) if crate::types::is_valid_symbol(&s) => {
                                name = Some(s)
                            }
                            _ => {
                                return Err(error(
                                    loc,
                                    "'sym_name' of a module must be a string that is a symbol name",
                                ))
                            }
                        }
                    }
                    attrs = std::mem::take(&mut m.attrs);
                }
                Ok(AstModule {
                    loc,
                    name,
                    attrs,
                    ..m
                })
            }
            Done::Region => Err(internal(self.pos)),
        }
    }

    /// Reads the alias definitions at the top of the file (`#name = attr`,
    /// `!name = type`, in any order; each may use those before it).
    fn alias_definitions(&mut self) -> PResult<()> {
        while let Some(c @ (b'#' | b'!')) = self.peek() {
            let loc = self.pos;
            let rule = if c == b'#' {
                Rule::attr_alias_def
            } else {
                Rule::type_alias_def
            };
            let p = self.run(rule)?;
            let end = p.as_span().end();
            let mut inner = p.into_inner();
            let name = inner.next().ok_or_else(|| internal(loc))?.as_str()[1..].to_string();
            let value = inner.next().ok_or_else(|| internal(loc))?;
            let redefined = if c == b'#' {
                let a = self.attribute(value)?;
                Rc::make_mut(&mut self.aliases)
                    .attrs
                    .insert(name.clone(), a)
                    .is_some()
            } else {
                let t = self.ty(value)?;
                Rc::make_mut(&mut self.aliases)
                    .types
                    .insert(name.clone(), t)
                    .is_some()
            };
            if redefined {
                return Err(error(
                    loc,
                    format!("redefinition of alias '{}{name}'", c as char),
                ));
            }
            self.pos += end;
            self.skip_ws();
        }
        Ok(())
    }

    /// The type alias `!name` (pair text) or the attribute alias `#name`.
    fn alias(&self, loc: Offset, text: &str) -> PResult<Attribute> {
        let name = &text[1..];
        let found = if text.starts_with('!') {
            self.aliases.types.get(name).cloned().map(Attribute::Type)
        } else {
            self.aliases.attrs.get(name).cloned()
        };
        found.ok_or_else(|| {
            error(
                loc,
                format!(
                    "undefined {} alias '{text}' (aliases are defined at the top level, before their uses)",
                    if text.starts_with('!') { "type" } else { "attribute" }
                ),
            )
        })
    }

    /// The rest of MLIR's generic module after its region's `}`:
    /// `) {attrs} : () -> ()`; returns the attributes.
    fn generic_module_tail(&mut self) -> PResult<Vec<AstAttrEntry>> {
        self.skip_ws();
        if self.peek() != Some(b')') {
            return Err(self.expected("')'"));
        }
        self.pos += 1;
        self.skip_ws();
        let attrs = if self.peek() == Some(b'{') {
            self.attr_dict_here()?
        } else {
            Vec::new()
        };
        self.expect_tokens(&[":", "(", ")", "->", "(", ")"])?;
        Ok(attrs)
    }

    /// Reads the attribute dictionary `{...}` at `self.pos` and moves past it.
    fn attr_dict_here(&mut self) -> PResult<Vec<AstAttrEntry>> {
        let base = self.pos;
        let p = self.run(Rule::attr_dict)?;
        self.pos += p.as_span().end();
        self.attr_dict(base, p)
    }

    /// Moves past `toks` in order, each after optional whitespace, or
    /// reports the first one missing.
    fn expect_tokens(&mut self, toks: &[&str]) -> PResult<()> {
        for tok in toks {
            self.skip_ws();
            if !self.src.as_bytes()[self.pos..].starts_with(tok.as_bytes()) {
                return Err(self.expected(&format!("'{tok}'")));
            }
            self.pos += tok.len();
        }
        Ok(())
    }

    /// Runs the op-list state machine on `stack` until its bottom frame ends.
    fn drive(&mut self, mut stack: Vec<Frame>) -> PResult<Done> {
        // The fast path's line, filled anew for each line (no copies of it).
        let mut line = GenericLine::default();
        loop {
            let Some(frame) = stack.last_mut() else {
                return Err(internal(self.pos));
            };
            match frame {
                Frame::Top { .. } | Frame::Region { .. } => {
                    self.skip_ws();
                    let in_region = matches!(frame, Frame::Region { .. });
                    match self.peek() {
                        None => {
                            if let Frame::Top {
                                ops, module: false, ..
                            } = frame
                            {
                                return Ok(Done::Module(AstModule {
                                    ops: std::mem::take(ops),
                                    loc: 0,
                                    name: None,
                                    attrs: Vec::new(),
                                    aliases: self.aliases.clone(),
                                }));
                            }
                            return Err(self.expected("'}'"));
                        }
                        // More alias definitions between top-level ops.
                        Some(b'#' | b'!') if matches!(frame, Frame::Top { .. }) => {
                            self.alias_definitions()?;
                        }
                        Some(b'}') => {
                            if let Frame::Top {
                                ops,
                                module,
                                generic,
                            } = frame
                            {
                                if !*module {
                                    return Err(error(self.pos, "unexpected '}'"));
                                }
                                let (ops, generic) = (std::mem::take(ops), *generic);
                                self.pos += 1;
                                let attrs = if generic {
                                    self.generic_module_tail()?
                                } else {
                                    Vec::new()
                                };
                                self.skip_ws();
                                if self.peek().is_some() {
                                    return Err(self.expected("end of input after module"));
                                }
                                return Ok(Done::Module(AstModule {
                                    ops,
                                    loc: 0,
                                    name: None,
                                    attrs,
                                    aliases: self.aliases.clone(),
                                }));
                            }
                            self.pos += 1;
                            let Some(Frame::Region {
                                mut region,
                                block,
                                stream,
                            }) = stack.pop()
                            else {
                                return Err(internal(self.pos));
                            };
                            if stream {
                                return Ok(Done::Region);
                            }
                            std::rc::Rc::make_mut(&mut region.blocks).extend(block);
                            self.deliver_region(&mut stack, region)?;
                        }
                        Some(b'^') => {
                            let Frame::Region {
                                region,
                                block,
                                stream,
                            } = frame
                            else {
                                return Err(error(self.pos, "block label outside a region"));
                            };
                            if *stream {
                                let label = self.block_label()?;
                                self.emit(RegionEvent::Label(label))?;
                                continue;
                            }
                            let new_block = self.block_label()?;
                            std::rc::Rc::make_mut(&mut region.blocks).extend(block.take());
                            *block = Some(new_block);
                        }
                        Some(_) => {
                            if self.sink.is_some() && self.fast_path && stack.len() == 1 {
                                if let Some(end) = fast::generic_line(
                                    self.src.as_bytes(),
                                    self.src,
                                    self.pos,
                                    &mut self.signatures,
                                    &mut line,
                                ) {
                                    self.pos = end;
                                    self.emit(RegionEvent::Line(&line))?;
                                    continue;
                                }
                                if let Some((custom, end)) =
                                    fast::custom_line(self.src.as_bytes(), self.src, self.pos)
                                {
                                    self.pos = end;
                                    self.emit(RegionEvent::Custom(&custom))?;
                                    continue;
                                }
                            }
                            let head = self.op_head(in_region)?;
                            match head {
                                Head::Complete(op) => self.deliver_op(&mut stack, op)?,
                                Head::Regions(op) => {
                                    // At `(`; the grammar checked that `{` follows.
                                    self.pos += 1;
                                    self.skip_ws();
                                    stack.push(Frame::Generic {
                                        op,
                                        regions: Vec::new(),
                                    });
                                    self.open_region(&mut stack)?;
                                }
                                Head::Custom(op) => stack.push(Frame::Custom {
                                    op,
                                    items: Vec::new(),
                                }),
                            }
                        }
                    }
                }
                Frame::Generic { .. } => {
                    self.skip_ws();
                    match self.peek() {
                        Some(b',') => {
                            self.pos += 1;
                            self.skip_ws();
                            self.open_region(&mut stack)?;
                        }
                        Some(b')') => {
                            self.pos += 1;
                            self.skip_ws();
                            let Some(Frame::Generic { mut op, regions }) = stack.pop() else {
                                return Err(internal(self.pos));
                            };
                            let tail = self.run(Rule::generic_tail)?;
                            let base = self.pos;
                            self.pos = base + tail.as_span().end();
                            if let AstOpBody::Generic(g) = &mut op.body {
                                g.regions = regions;
                                self.generic_tail(base, tail, g)?;
                            }
                            self.deliver_op(&mut stack, op)?;
                        }
                        _ => return Err(self.expected("',' or ')' after region")),
                    }
                }
                Frame::Custom { .. } | Frame::Group { .. } => {
                    let top = matches!(frame, Frame::Custom { .. });
                    self.skip_ws();
                    let starts_item = !matches!(
                        self.peek(),
                        None | Some(b'(' | b'[' | b'{' | b')' | b']' | b'}' | b'^')
                    );
                    let fast = if starts_item && self.fast_path {
                        fast::items(self.src.as_bytes(), self.pos, top)
                    } else {
                        None
                    };
                    if let Some((fast_items, end)) = fast {
                        self.pos = end;
                        match frame {
                            Frame::Custom { items, .. } | Frame::Group { items, .. } => {
                                items.extend(fast_items)
                            }
                            _ => return Err(internal(self.pos)),
                        }
                        self.skip_ws();
                    } else if starts_item {
                        let rule = if top {
                            Rule::items_top
                        } else {
                            Rule::items_inner
                        };
                        let run = self.run(rule)?;
                        let base = self.pos;
                        self.pos = base + run.as_span().end();
                        let items = match frame {
                            Frame::Custom { items, .. } | Frame::Group { items, .. } => items,
                            _ => return Err(internal(self.pos)),
                        };
                        for p in run.into_inner() {
                            items.push(self.item(base, p)?);
                        }
                        self.skip_ws();
                    }
                    match self.peek() {
                        Some(c @ (b'(' | b'[')) => {
                            stack.push(Frame::Group {
                                close: if c == b'(' { b')' } else { b']' },
                                loc: self.pos,
                                items: Vec::new(),
                            });
                            self.pos += 1;
                        }
                        Some(b'{') => {
                            let loc = self.pos;
                            // A failed try is not an error: no pest error conversion.
                            let input = &self.src[loc..];
                            // `{a.b}` could also be a region holding one op
                            // `a.b`: a dotted unit attribute needs MLIR's
                            // `attributes` keyword before the dictionary.
                            // Inside `( )` (a signature's `%x: f64
                            // {llvm.noalias}`) no custom form has a region.
                            let after_attributes = self.src[..loc]
                                .trim_end()
                                .ends_with("attributes")
                                || matches!(stack.last(), Some(Frame::Group { close: b')', .. }));
                            // A dictionary's first entry is a name (or `}`); a
                            // region starting with `%`, `"` or `^` is no
                            // dictionary, and the failed try would cost pest
                            // a scan of the rest of the input.
                            let mut probe = Driver {
                                pos: loc + 1,
                                ..Driver::new(self.src)
                            };
                            probe.skip_ws();
                            let surely_region = matches!(probe.peek(), Some(b'%' | b'"' | b'^'))
                                || fast::starts_default_op(self.src.as_bytes(), probe.pos);
                            let dict = (!surely_region)
                                .then(|| L0Parser::parse(Rule::attr_dict, input).ok())
                                .flatten()
                                .and_then(|mut p| p.next())
                                .filter(|d| {
                                    after_attributes
                                        || d.clone().into_inner().all(|e| {
                                            let mut i = e.into_inner();
                                            let dotted =
                                                i.next().is_some_and(|n| n.as_str().contains('.'));
                                            !dotted || i.next().is_some()
                                        })
                                });
                            match dict {
                                Some(dict) => {
                                    self.pos = loc + dict.as_span().end();
                                    let entries = self.attr_dict(loc, dict)?;
                                    let item = AstItem {
                                        kind: AstItemKind::AttrDict(entries),
                                        loc,
                                    };
                                    Self::deliver_item(&mut stack, item, loc)?;
                                }
                                _ => self.open_region(&mut stack)?,
                            }
                        }
                        Some(b'^') if !(top && self.at_block_label()) => {
                            // A successor `^bb1` (its operands, if any, follow
                            // as a parenthesized group).
                            let loc = self.pos;
                            let pair = self.run(Rule::block_id)?;
                            self.pos = loc + pair.as_span().end();
                            let item = AstItem {
                                kind: AstItemKind::Block(pair.as_str()[1..].to_string()),
                                loc,
                            };
                            Self::deliver_item(&mut stack, item, loc)?;
                        }
                        c => {
                            if top {
                                let Some(Frame::Custom { mut op, items }) = stack.pop() else {
                                    return Err(internal(self.pos));
                                };
                                op.body = AstOpBody::Custom(items);
                                self.deliver_op(&mut stack, op)?;
                            } else {
                                let Some(Frame::Group { close, loc, items }) = stack.pop() else {
                                    return Err(internal(self.pos));
                                };
                                if c != Some(close) {
                                    let what = if close == b')' { "')'" } else { "']'" };
                                    let what = if starts_item && c.is_some() {
                                        format!("{what} or custom-form item")
                                    } else {
                                        what.to_string()
                                    };
                                    return Err(self.expected(&what));
                                }
                                self.pos += 1;
                                let kind = if close == b')' {
                                    AstItemKind::Paren(items)
                                } else {
                                    AstItemKind::Square(items)
                                };
                                Self::deliver_item(&mut stack, AstItem { kind, loc }, self.pos)?;
                            }
                        }
                    }
                }
            }
        }
    }

    /// At `{`: pushes a region frame, or (lazy) skips to its `}` and
    /// delivers a lazy region.
    fn open_region(&mut self, stack: &mut Vec<Frame>) -> PResult<()> {
        if self.peek() != Some(b'{') {
            return Err(self.expected("'{' (a region)"));
        }
        if self.lazy {
            let known = self
                .long_braces
                .binary_search_by_key(&self.pos, |&(open, _)| open)
                .ok()
                .map(|k| self.long_braces[k].1);
            let close = known.or_else(|| matching_close(self.src.as_bytes(), self.pos));
            if let Some(end) = close {
                let mut region = AstRegion::new(Vec::new(), self.pos);
                region.lazy_end = Some(end);
                self.pos = end + 1;
                return self.deliver_region(stack, region);
            }
        }
        stack.push(Frame::Region {
            region: AstRegion::new(Vec::new(), self.pos),
            block: None,
            stream: false,
        });
        self.pos += 1;
        Ok(())
    }

    /// Hands `event` to the sink of a streamed region.
    fn emit(&mut self, event: RegionEvent<'_, 's>) -> PResult<()> {
        match self.sink.as_mut() {
            Some(sink) => sink(event),
            None => Err(internal(self.pos)),
        }
    }

    fn deliver_op(&mut self, stack: &mut [Frame], op: AstOp) -> PResult<()> {
        let pos = self.pos;
        match stack.last_mut() {
            Some(Frame::Top { ops, .. }) => ops.push(op),
            Some(Frame::Region { stream: true, .. }) => self.emit(RegionEvent::Op(op))?,
            Some(Frame::Region { block, .. }) => block
                .get_or_insert_with(|| AstBlock {
                    label: None,
                    args: Vec::new(),
                    ops: Vec::new(),
                    loc: op.loc,
                })
                .ops
                .push(op),
            _ => return Err(internal(pos)),
        }
        Ok(())
    }

    fn deliver_region(&self, stack: &mut [Frame], region: AstRegion) -> PResult<()> {
        match stack.last_mut() {
            Some(Frame::Generic { regions, .. }) => regions.push(region),
            Some(Frame::Custom { items, .. } | Frame::Group { items, .. }) => items.push(AstItem {
                loc: region.loc,
                kind: AstItemKind::Region(region),
            }),
            _ => return Err(internal(self.pos)),
        }
        Ok(())
    }

    fn deliver_item(stack: &mut [Frame], item: AstItem, pos: Offset) -> PResult<()> {
        match stack.last_mut() {
            Some(Frame::Custom { items, .. } | Frame::Group { items, .. }) => items.push(item),
            _ => return Err(internal(pos)),
        }
        Ok(())
    }

    /// Parses an op up to its regions (generic) or items (custom).
    fn op_head(&mut self, in_region: bool) -> PResult<Head> {
        let base = self.pos;
        if self.fast_path {
            if let Some((op, end)) = fast::op_head(self.src, base) {
                self.pos = end;
                return Ok(match op.body {
                    AstOpBody::Custom(_) => Head::Custom(op),
                    AstOpBody::Generic(_) => Head::Complete(op),
                });
            }
        }
        let pair = match self.run(Rule::op_head) {
            Ok(p) => p,
            Err(e) if e.offset == base || e.message.starts_with(MALFORMED) => {
                let what = if in_region {
                    "operation, block label or '}'"
                } else {
                    "operation"
                };
                return Err(error(
                    base,
                    format!("expected {what}, found {}", self.found(base)),
                ));
            }
            Err(e) => return Err(e),
        };
        self.pos = base + pair.as_span().end();
        let loc = Self::at(base, &pair);
        let mut results = Vec::new();
        let mut name = String::new();
        let mut operands = Vec::new();
        let mut kind = 0u8; // 0 custom, 1 complete, 2 regions
        let mut generic = AstGeneric {
            operands: Vec::new(),
            successors: Vec::new(),
            regions: Vec::new(),
            attrs: Vec::new(),
            operand_types: Vec::new(),
            result_types: Vec::new(),
            type_loc: 0,
        };
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::result => results.push(self.result(base, p)?),
                Rule::string => name = unescape(p.as_str(), Self::at(base, &p))?,
                Rule::custom_name => {
                    name = match p.as_str() {
                        "module" => "builtin.module".to_string(),
                        s => fast::default_dialect(s).unwrap_or(s).to_string(),
                    }
                }
                Rule::value_ref => operands.push(value_ref(base, &p)?),
                Rule::successor_list => {
                    for q in p.into_inner() {
                        let at = Self::at(base, &q);
                        generic.successors.push((q.as_str()[1..].to_string(), at));
                    }
                }
                Rule::region_open => kind = 2,
                Rule::generic_tail => {
                    kind = 1;
                    self.generic_tail(base, p, &mut generic)?;
                }
                _ => return Err(internal(Self::at(base, &p))),
            }
        }
        generic.operands = operands;
        let body = if kind == 0 {
            AstOpBody::Custom(Vec::new())
        } else {
            AstOpBody::Generic(generic)
        };
        let op = AstOp {
            results,
            name,
            loc,
            body,
        };
        Ok(match kind {
            0 => Head::Custom(op),
            1 => Head::Complete(op),
            _ => Head::Regions(op),
        })
    }

    fn generic_tail(&self, base: Offset, tail: Pair<'s, Rule>, g: &mut AstGeneric) -> PResult<()> {
        for p in tail.into_inner() {
            match p.as_rule() {
                Rule::attr_dict => g.attrs = self.attr_dict(base, p)?,
                Rule::sig_colon => g.type_loc = Self::at(base, &p),
                Rule::fn_type => {
                    let (inputs, results) = self.fn_type(base, p)?;
                    g.operand_types = inputs;
                    g.result_types = results;
                }
                _ => return Err(internal(Self::at(base, &p))),
            }
        }
        Ok(())
    }

    fn result(&self, base: Offset, p: Pair<'s, Rule>) -> PResult<AstResult> {
        let loc = Self::at(base, &p);
        let mut name = String::new();
        let mut count = 1;
        for q in p.into_inner() {
            match q.as_rule() {
                Rule::value_name => name = q.as_str()[1..].to_string(),
                Rule::result_count => {
                    count = q
                        .as_str()
                        .parse()
                        .map_err(|_| error(Self::at(base, &q), "result count out of range"))?
                }
                _ => return Err(internal(Self::at(base, &q))),
            }
        }
        Ok(AstResult { name, count, loc })
    }

    /// Whether a block label `^name(...):` starts here (not a successor
    /// `^name` or `^name(%v : T)` of a branch's custom form).
    fn at_block_label(&self) -> bool {
        L0Parser::parse(Rule::block_label, &self.src[self.pos..]).is_ok()
    }

    fn block_label(&mut self) -> PResult<AstBlock> {
        let base = self.pos;
        let pair = self.run(Rule::block_label)?;
        self.pos = base + pair.as_span().end();
        let mut block = AstBlock {
            label: None,
            args: Vec::new(),
            ops: Vec::new(),
            loc: Self::at(base, &pair),
        };
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::block_id => block.label = Some(p.as_str()[1..].to_string()),
                Rule::block_arg => {
                    let loc = Self::at(base, &p);
                    let mut inner = p.into_inner();
                    let (Some(n), Some(t)) = (inner.next(), inner.next()) else {
                        return Err(internal(loc));
                    };
                    block.args.push(AstArg {
                        name: n.as_str()[1..].to_string(),
                        ty: self.ty_at(base, t)?,
                        loc,
                    });
                }
                _ => return Err(internal(Self::at(base, &p))),
            }
        }
        Ok(block)
    }

    // ------------------------------------------------------------ custom items

    fn item(&self, base: Offset, p: Pair<'s, Rule>) -> PResult<AstItem> {
        let loc = Self::at(base, &p);
        let kind = match p.as_rule() {
            Rule::value_ref => AstItemKind::Value(value_ref(base, &p)?),
            Rule::scalar_type
            | Rule::vec_type
            | Rule::mat_type
            | Rule::arr_type
            | Rule::var_type
            | Rule::memref_type
            | Rule::struct_type
            | Rule::dialect_type => AstItemKind::Type(self.ty_at(base, p)?),
            Rule::number => number_item(p.as_str(), loc)?,
            Rule::string => AstItemKind::Str(unescape(p.as_str(), loc)?),
            Rule::symbol => AstItemKind::Symbol(symbol_name(p.as_str(), loc)?),
            Rule::dialect_attr => AstItemKind::Attr(self.attribute_at(base, p)?),
            Rule::alias_type => match self.alias(loc, p.as_str())? {
                Attribute::Type(t) => AstItemKind::Type(t),
                _ => return Err(internal(loc)),
            },
            Rule::alias_attr => match self.alias(loc, p.as_str())? {
                Attribute::Type(t) => AstItemKind::Type(t),
                a => AstItemKind::Attr(a),
            },
            Rule::arrow => AstItemKind::Punct("->"),
            Rule::punct | Rule::comma => AstItemKind::Punct(match p.as_str() {
                ":" => ":",
                "," => ",",
                "=" => "=",
                "*" => "*",
                "<" => "<",
                ">" => ">",
                _ => return Err(internal(loc)),
            }),
            Rule::keyword => AstItemKind::Keyword(p.as_str().to_string()),
            _ => return Err(internal(loc)),
        };
        Ok(AstItem { kind, loc })
    }

    // ------------------------------------------------------------ types

    /// A sink-less copy of this driver positioned at `base`.
    fn at_base(&self, base: Offset) -> Driver<'s, 's> {
        Driver {
            src: self.src,
            pos: base,
            fast_path: self.fast_path,
            lazy: self.lazy,
            sink: None,
            signatures: fast::SigCache::default(),
            long_braces: Vec::new(),
            aliases: self.aliases.clone(),
        }
    }

    /// `ty` for a pair from a run that started at `base` (offsets in errors).
    fn ty_at(&self, base: Offset, p: Pair<'s, Rule>) -> PResult<Type> {
        self.at_base(base).ty(p)
    }

    /// Converts a type pair; `self.pos` is the base of the pair's run.
    fn ty(&self, p: Pair<'s, Rule>) -> PResult<Type> {
        let loc = Self::at(self.pos, &p);
        Ok(match p.as_rule() {
            Rule::scalar_type => match p.as_str() {
                "index" => Type::Index,
                t if t.starts_with('i') => int_type(&t[1..], loc)?,
                "f16" => Type::F16,
                "bf16" => Type::BF16,
                "f32" => Type::F32,
                "f64" => Type::F64,
                _ => return Err(internal(loc)),
            },
            Rule::vec_type | Rule::mat_type | Rule::arr_type | Rule::var_type => {
                let rule = p.as_rule();
                let inner = p.into_inner().next().ok_or_else(|| internal(loc))?;
                let elem = self.ty(inner)?;
                match rule {
                    Rule::vec_type => Type::vec(elem),
                    Rule::mat_type => Type::mat(elem),
                    Rule::var_type => Type::var(elem),
                    _ => Type::arr(elem),
                }
            }
            Rule::memref_type => self.memref_type(loc, p)?,
            Rule::struct_type => {
                let mut fields: Vec<(String, Type)> = Vec::new();
                for f in p.into_inner() {
                    let floc = Self::at(self.pos, &f);
                    let mut parts = f.into_inner();
                    let name = parts.next().ok_or_else(|| internal(floc))?.as_str();
                    let t = self.ty(parts.next().ok_or_else(|| internal(floc))?)?;
                    if fields.iter().any(|(n, _)| n == name) {
                        return Err(error(
                            floc,
                            format!("duplicate field '{name}' in a struct type"),
                        ));
                    }
                    fields.push((name.to_string(), t));
                }
                Type::structure(fields)
            }
            Rule::fn_type => {
                let (inputs, results) = self.fn_type(self.pos, p)?;
                Type::function(inputs, results)
            }
            Rule::alias_type => match self.alias(loc, p.as_str())? {
                Attribute::Type(t) => t,
                _ => return Err(internal(loc)),
            },
            Rule::dialect_type if self.aliases.types.contains_key(&p.as_str()[1..]) => {
                match self.alias(loc, p.as_str())? {
                    Attribute::Type(t) => t,
                    _ => return Err(internal(loc)),
                }
            }
            Rule::dialect_type => {
                let mut inner = p.into_inner();
                let name = inner.next().ok_or_else(|| internal(loc))?;
                let (dialect, name) = split_dialect_name(&name.as_str()[1..]);
                let mut params = Vec::new();
                for q in inner {
                    params.push(if is_type_rule(q.as_rule()) {
                        TypeParam::Type(self.ty(q)?)
                    } else {
                        TypeParam::Attr(self.attribute(q)?)
                    });
                }
                Type::dialect(dialect, name, params)
            }
            _ => return Err(internal(loc)),
        })
    }

    fn fn_type(&self, base: Offset, p: Pair<'s, Rule>) -> PResult<(Vec<Type>, Vec<Type>)> {
        let d = self.at_base(base);
        let mut inputs = Vec::new();
        let mut results = Vec::new();
        for q in p.into_inner() {
            match q.as_rule() {
                Rule::type_list => {
                    for t in q.into_inner() {
                        inputs.push(d.ty(t)?);
                    }
                }
                Rule::fn_results => {
                    for t in q.into_inner() {
                        results.push(d.ty(t)?);
                    }
                }
                _ => return Err(internal(Self::at(base, &q))),
            }
        }
        Ok((inputs, results))
    }

    // ------------------------------------------------------------ attributes

    fn attr_dict(&self, base: Offset, p: Pair<'s, Rule>) -> PResult<Vec<AstAttrEntry>> {
        let mut entries = Vec::new();
        for e in p.into_inner() {
            let loc = Self::at(base, &e);
            let mut inner = e.into_inner();
            let name = inner.next().ok_or_else(|| internal(loc))?;
            let value = match inner.next() {
                Some(v) => self.attribute_at(base, v)?,
                None => Attribute::Unit,
            };
            entries.push(AstAttrEntry {
                name: name.as_str().to_string(),
                value,
                loc,
            });
        }
        Ok(entries)
    }

    fn attribute_at(&self, base: Offset, p: Pair<'s, Rule>) -> PResult<Attribute> {
        self.at_base(base).attribute(p)
    }

    /// Converts an attribute pair; `self.pos` is the base of the pair's run.
    fn attribute(&self, p: Pair<'s, Rule>) -> PResult<Attribute> {
        let loc = Self::at(self.pos, &p);
        Ok(match p.as_rule() {
            Rule::typed_number => {
                let mut inner = p.into_inner();
                let num = inner.next().ok_or_else(|| internal(loc))?;
                let ty = match inner.next() {
                    Some(t) => Some(self.ty(t)?),
                    None => None,
                };
                number_attr(num.as_str(), ty, loc)?
            }
            Rule::bool_lit => Attribute::Bool(p.as_str() == "true"),
            Rule::unit_lit => Attribute::Unit,
            Rule::string => Attribute::Str(unescape(p.as_str(), loc)?),
            Rule::symbol => Attribute::SymbolRef(symbol_name(p.as_str(), loc)?),
            Rule::keyword => Attribute::Keyword(p.as_str().to_string()),
            Rule::array_attr => {
                let mut items = Vec::new();
                for q in p.into_inner() {
                    items.push(self.attribute(q)?);
                }
                Attribute::Array(items)
            }
            Rule::dense_array => {
                let mut inner = p.into_inner();
                let ty = self.ty(inner.next().ok_or_else(|| internal(loc))?)?;
                if !ty.is_integer() {
                    return Err(error(
                        loc,
                        format!("a dense array holds integers, not '{ty}'"),
                    ));
                }
                let mut items = Vec::new();
                for q in inner {
                    let at = Self::at(self.pos, &q);
                    items.push(number_attr(q.as_str(), Some(ty.clone()), at)?);
                }
                Attribute::Array(items)
            }
            Rule::dense_elements => {
                let list = p.as_str()["dense".len()..]
                    .trim_start()
                    .trim_start_matches('<')
                    .trim_start()
                    .starts_with('[');
                let parts: Vec<_> = p.into_inner().collect();
                let (ty_pair, rest) = parts.split_last().ok_or_else(|| internal(loc))?;
                let (shape, nums) = rest.split_last().ok_or_else(|| internal(loc))?;
                let ty = self.ty(ty_pair.clone())?;
                if !ty.is_integer() {
                    return Err(error(
                        loc,
                        format!("dense elements here hold integers, not '{ty}'"),
                    ));
                }
                let n: usize =
                    shape.as_str().trim_end_matches('x').parse().map_err(|_| {
                        error(loc, format!("shape '{}' is too large", shape.as_str()))
                    })?;
                let mut items = Vec::new();
                for q in nums {
                    let at = Self::at(self.pos, q);
                    items.push(number_attr(q.as_str(), Some(ty.clone()), at)?);
                }
                // A splat `dense<5>` repeats its one element.
                if n > 1 << 16 {
                    return Err(error(
                        loc,
                        format!("dense elements of {n} values are more than L0 reads (65536)"),
                    ));
                }
                if !list && n != 1 {
                    let x = items[0].clone();
                    items = vec![x; n];
                }
                if items.len() != n {
                    return Err(error(
                        loc,
                        format!(
                            "dense elements hold {} values, but the shape says {n}",
                            items.len()
                        ),
                    ));
                }
                Attribute::Array(items)
            }
            Rule::dialect_attr if self.aliases.attrs.contains_key(&p.as_str()[1..]) => {
                self.alias(loc, p.as_str())?
            }
            Rule::dialect_attr => {
                let mut inner = p.into_inner();
                let name = inner.next().ok_or_else(|| internal(loc))?;
                let (dialect, name) = split_dialect_name(&name.as_str()[1..]);
                let mut params = Vec::new();
                for q in inner {
                    params.push(self.attribute(q)?);
                }
                Attribute::dialect(dialect, name, params)
            }
            Rule::alias_attr => self.alias(loc, p.as_str())?,
            Rule::dict_attr => {
                let entries = self.attr_dict(self.pos, p)?;
                Attribute::Dict(entries.into_iter().map(|e| (e.name, e.value)).collect())
            }
            r if is_type_rule(r) => Attribute::Type(self.ty(p)?),
            _ => return Err(internal(loc)),
        })
    }
}

/// Whether `w` begins one of L0's types (`i32`, `vec`, `struct`, ...): a
/// word that does not names a type L0 lacks (`tensor`).
pub(crate) fn is_type_word(w: &str) -> bool {
    matches!(
        w,
        "index"
            | "f16"
            | "bf16"
            | "f32"
            | "f64"
            | "vec"
            | "mat"
            | "arr"
            | "var"
            | "memref"
            | "struct"
            | "none"
    ) || w
        .strip_prefix('i')
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()))
}

fn is_ident_cont(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.')
}

fn is_type_rule(r: Rule) -> bool {
    matches!(
        r,
        Rule::scalar_type
            | Rule::vec_type
            | Rule::mat_type
            | Rule::arr_type
            | Rule::var_type
            | Rule::memref_type
            | Rule::struct_type
            | Rule::dialect_type
            | Rule::alias_type
            | Rule::fn_type
    )
}

/// `gen.bucket` -> (`gen`, `bucket`); the name keeps any further dots.
fn split_dialect_name(s: &str) -> (&str, &str) {
    s.split_once('.').unwrap_or((s, ""))
}

/// What a rule stands for in "expected ..." messages (`None`: not worth naming).
fn describe(r: Rule) -> Option<&'static str> {
    Some(match r {
        Rule::value_name | Rule::result | Rule::value_ref => "value name (%name)",
        Rule::result_count => "result count",
        Rule::dotted_ident | Rule::custom_name => "operation name",
        Rule::keyword | Rule::field_name => "identifier",
        Rule::block_id => "block label (^name)",
        Rule::block_arg => "block argument (%name: type)",
        Rule::symbol
        | Rule::number
        | Rule::typed_number
        | Rule::bool_lit
        | Rule::unit_lit
        | Rule::array_attr
        | Rule::dialect_attr
        | Rule::alias_attr
        | Rule::dict_attr
        | Rule::dialect_attr_name => "attribute",
        Rule::string => "string literal",
        Rule::scalar_type
        | Rule::vec_type
        | Rule::mat_type
        | Rule::arr_type
        | Rule::var_type
        | Rule::memref_type
        | Rule::struct_type
        | Rule::struct_field
        | Rule::dialect_type
        | Rule::alias_type
        | Rule::dialect_type_name
        | Rule::fn_type
        | Rule::fn_results
        | Rule::type_list => "type",
        Rule::attr_dict => "attribute dictionary",
        Rule::attr_entry => "attribute name",
        Rule::sig_colon => "':'",
        Rule::EOI => "end of input",
        Rule::arrow => "'->'",
        Rule::punct | Rule::comma => "punctuation",
        _ => return None,
    })
}

const MALFORMED: &str = "malformed";

/// The integer type of the width written after `i` (`4` in `i4`).
fn int_type(digits: &str, loc: Offset) -> PResult<Type> {
    digits
        .parse::<u32>()
        .ok()
        .and_then(Type::int)
        .ok_or_else(|| {
            error(
                loc,
                format!("integer type 'i{digits}' is wider than 64 bits (not supported)"),
            )
        })
}

/// What an expected literal token stands for in messages (`None`: a
/// character inside a lexeme, not worth naming).
fn describe_token(t: &str) -> Option<String> {
    Some(match t {
        "i1" | "i8" | "i16" | "i32" | "i64" | "index" | "f16" | "bf16" | "f32" | "f64" | "vec"
        | "mat" | "arr" | "var" | "struct" | "!" => "type".to_string(),
        "true" | "false" | "unit" | "#" | "@" | "0x" | "-" => "attribute".to_string(),
        "\"" => "string literal".to_string(),
        "%" => "value name (%name)".to_string(),
        "module" => "operation name".to_string(),
        "" | "$" | "." | "_" | "e" | "E" | "+" | "//" | "BUILTIN_RULE" => return None,
        t if t.contains("..") || t.chars().all(char::is_whitespace) => return None,
        t => format!("'{t}'"),
    })
}

/// `%name` or `%name#N`.
fn value_ref(base: Offset, p: &Pair<'_, Rule>) -> PResult<AstValueRef> {
    let loc = base + p.as_span().start();
    let text = &p.as_str()[1..];
    Ok(match text.split_once('#') {
        Some((name, idx)) => AstValueRef {
            name: name.to_string(),
            index: Some(
                idx.parse()
                    .map_err(|_| error(loc, "result index out of range"))?,
            ),
            loc,
        },
        None => AstValueRef {
            name: text.to_string(),
            index: None,
            loc,
        },
    })
}

/// Unescapes a string literal including its quotes: `\"` `\\` `\n` `\t` `\XX`.
fn unescape(raw: &str, loc: Offset) -> PResult<String> {
    let inner = raw
        .get(1..raw.len().saturating_sub(1))
        .ok_or_else(|| internal(loc))?;
    if !inner.contains('\\') {
        return Ok(inner.to_string());
    }
    let b = inner.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let at = loc + 1 + i;
        let c = b.get(i + 1).copied();
        match c {
            Some(b'"') => out.push(b'"'),
            Some(b'\\') => out.push(b'\\'),
            Some(b'n') => out.push(b'\n'),
            Some(b't') => out.push(b'\t'),
            Some(h) if h.is_ascii_hexdigit() => {
                let l = b.get(i + 2).copied().filter(u8::is_ascii_hexdigit);
                let Some(l) = l else {
                    return Err(error(
                        at,
                        "invalid escape: expected two hex digits after '\\'",
                    ));
                };
                out.push(hex_val(h) * 16 + hex_val(l));
                i += 3;
                continue;
            }
            _ => {
                return Err(error(
                    at,
                    "invalid escape in string literal (expected \\\" \\\\ \\n \\t or \\XX)",
                ))
            }
        }
        i += 2;
    }
    String::from_utf8(out).map_err(|_| error(loc, "string literal is not valid UTF-8"))
}

/// The name of symbol token `text` (`@name` or `@"quoted"`, unescaped).
fn symbol_name(text: &str, loc: Offset) -> PResult<String> {
    match text[1..].strip_prefix('"') {
        Some(_) => unescape(&text[1..], loc),
        None => Ok(text[1..].to_string()),
    }
}

fn hex_val(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => c - b'A' + 10,
    }
}

const OUT_OF_RANGE: &str = "integer literal out of range";

/// Splits `-0x1F` into (negative, hex digits) when hex.
fn split_hex(text: &str) -> (bool, Option<&str>, &str) {
    let (neg, body) = match text.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, text),
    };
    (neg, body.strip_prefix("0x"), body)
}

fn parse_hex(digits: &str, loc: Offset) -> PResult<u128> {
    u128::from_str_radix(digits, 16).map_err(|_| error(loc, OUT_OF_RANGE))
}

fn is_float_text(body: &str) -> bool {
    body.bytes().any(|c| matches!(c, b'.' | b'e' | b'E'))
}

/// A number token of a custom form.
fn number_item(text: &str, loc: Offset) -> PResult<AstItemKind> {
    let (neg, hex, body) = split_hex(text);
    if let Some(h) = hex {
        let v = parse_hex(h, loc)?;
        let v = i128::try_from(v).map_err(|_| error(loc, OUT_OF_RANGE))?;
        return Ok(AstItemKind::Int(if neg { -v } else { v }));
    }
    if is_float_text(body) {
        return text
            .parse::<f64>()
            .map(AstItemKind::Float)
            .map_err(|_| error(loc, "invalid float literal"));
    }
    text.parse::<i128>()
        .map(AstItemKind::Int)
        .map_err(|_| error(loc, OUT_OF_RANGE))
}

/// A number attribute with its optional `: type` (untyped: `i64` or `f64`).
fn number_attr(text: &str, ty: Option<Type>, loc: Offset) -> PResult<Attribute> {
    let (neg, hex, body) = split_hex(text);
    let float = is_float_text(body) && hex.is_none();
    let ty = ty.unwrap_or(if float { Type::F64 } else { Type::I64 });
    if ty.is_float() {
        if let Some(h) = hex {
            if neg {
                return Err(error(loc, "a hex float bit pattern cannot be negative"));
            }
            let bits = parse_hex(h, loc)?;
            return if ty.is_half() {
                let bits = u16::try_from(bits).map_err(|_| {
                    error(loc, format!("hex literal too wide for {ty} (4 hex digits)"))
                })?;
                Ok(Attribute::Float(
                    crate::types::float_from_bits(bits as u64, &ty),
                    ty,
                ))
            } else if ty == Type::F32 {
                let bits = u32::try_from(bits)
                    .map_err(|_| error(loc, "hex literal too wide for f32 (8 hex digits)"))?;
                Ok(Attribute::Float(f32::from_bits(bits) as f64, ty))
            } else {
                let bits = u64::try_from(bits)
                    .map_err(|_| error(loc, "hex literal too wide for f64 (16 hex digits)"))?;
                Ok(Attribute::Float(f64::from_bits(bits), ty))
            };
        }
        let v: f64 = text
            .parse()
            .map_err(|_| error(loc, "invalid float literal"))?;
        return Ok(Attribute::float(v, ty));
    }
    let Some(width) = ty.int_width() else {
        return Err(error(
            loc,
            format!("number attribute needs an integer or float type, not {ty}"),
        ));
    };
    if float {
        return Err(error(loc, format!("float literal with integer type {ty}")));
    }
    let v: i128 = match hex {
        Some(h) => {
            let m = i128::try_from(parse_hex(h, loc)?).map_err(|_| error(loc, OUT_OF_RANGE))?;
            if neg {
                -m
            } else {
                m
            }
        }
        None => text.parse().map_err(|_| error(loc, OUT_OF_RANGE))?,
    };
    if width == 0 {
        // `i0`: 0 is its only value.
        return if v == 0 {
            Ok(Attribute::Int(0, ty))
        } else {
            Err(error(loc, OUT_OF_RANGE))
        };
    }
    // Decimal: signed range (i32 and i1 also accept their unsigned range);
    // hex: any bit pattern of the width.
    let min = -(1i128 << (width - 1));
    let max = if hex.is_some() || width < 64 {
        (1i128 << width) - 1
    } else {
        i64::MAX as i128
    };
    if v < min || v > max {
        return Err(error(loc, format!("{OUT_OF_RANGE} for {ty}")));
    }
    Ok(Attribute::int(v as i64, ty))
}

/// A hand-written fast path for the most common line shape, a generic op
/// without regions or attributes whose types are scalars or `vec/mat/arr`
/// of them: `%a, %b = "d.op"(%x, %y#1) : (f64, vec<f64>) -> (f64, i1)`.
///
/// pest spends about 10 µs on such a line (it works char by char through
/// closures); this takes well under 1 µs. It accepts a strict subset of
/// `op_head` and returns `None` on anything else (result counts, escapes,
/// regions, attributes, dialect or function types, errors), leaving the op to
/// the grammar, which stays the reference. Tests compare both paths.
mod fast {
    use crate::ast::{AstItem, AstItemKind, AstOp, AstOpBody, AstResult, AstValueRef, Offset};
    use crate::types::Type;

    fn is_value_char(c: u8) -> bool {
        c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'$' | b'-')
    }

    struct Cursor<'a> {
        b: &'a [u8],
        i: usize,
    }

    impl Cursor<'_> {
        fn peek(&self) -> Option<u8> {
            self.b.get(self.i).copied()
        }
        fn ws(&mut self) {
            while let Some(c) = self.peek() {
                match c {
                    b' ' | b'\t' | b'\r' | b'\n' => self.i += 1,
                    b'/' if self.b.get(self.i + 1) == Some(&b'/') => {
                        while self.peek().is_some_and(|c| c != b'\n') {
                            self.i += 1;
                        }
                    }
                    _ => break,
                }
            }
        }
        fn eat(&mut self, c: u8) -> Option<()> {
            (self.peek() == Some(c)).then(|| self.i += 1)
        }
        /// `%name` (returns the name's bytes without `%`: ASCII only).
        fn value_name(&mut self) -> Option<&[u8]> {
            self.eat(b'%')?;
            let start = self.i;
            while self.peek().is_some_and(is_value_char) {
                self.i += 1;
            }
            if self.i == start {
                return None;
            }
            Some(&self.b[start..self.i])
        }
        fn ty(&mut self, depth: usize) -> Option<Type> {
            let rest = &self.b[self.i..];
            // A scalar keyword, told apart by its first bytes (one
            // comparison, not one per keyword: this runs for every type of
            // every generic op).
            let scalar = match rest {
                [b'f', b'6', b'4', ..] => Some((3, Type::F64)),
                [b'f', b'3', b'2', ..] => Some((3, Type::F32)),
                [b'f', b'1', b'6', ..] => Some((3, Type::F16)),
                [b'b', b'f', b'1', b'6', ..] => Some((4, Type::BF16)),
                [b'i', b'6', b'4', ..] => Some((3, Type::I64)),
                [b'i', b'3', b'2', ..] => Some((3, Type::I32)),
                [b'i', d, ..] if d.is_ascii_digit() => {
                    let n = rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
                    let w = std::str::from_utf8(&rest[1..1 + n])
                        .ok()?
                        .parse::<u32>()
                        .ok()?;
                    Some((1 + n, Type::int(w)?))
                }
                [b'i', b'n', b'd', b'e', b'x', ..] => Some((5, Type::Index)),
                _ => None,
            };
            if let Some((len, t)) = scalar {
                if rest.get(len).copied().is_some_and(super::is_ident_cont) {
                    return None;
                }
                self.i += len;
                return Some(t);
            }
            if depth > super::MAX_NESTING {
                return None;
            }
            let make: fn(Type) -> Type = if rest.starts_with(b"vec") {
                Type::vec
            } else if rest.starts_with(b"mat") {
                Type::mat
            } else if rest.starts_with(b"arr") {
                Type::arr
            } else if rest.starts_with(b"var") {
                Type::var
            } else {
                return None;
            };
            self.i += 3;
            self.ws();
            self.eat(b'<')?;
            self.ws();
            let elem = self.ty(depth + 1)?;
            self.ws();
            self.eat(b'>')?;
            Some(make(elem))
        }
        /// `( T, ... )` starting at `(`.
        fn type_list<C: Default + Extend<Type>>(&mut self) -> Option<C> {
            self.eat(b'(')?;
            self.ws();
            let mut out = C::default();
            if self.eat(b')').is_some() {
                return Some(out);
            }
            loop {
                out.extend(Some(self.ty(0)?));
                self.ws();
                if self.eat(b')').is_some() {
                    return Some(out);
                }
                self.eat(b',')?;
                self.ws();
            }
        }
    }

    /// MLIR's default dialect inside `func.func`: the full name of a bare
    /// op name (`return` is `func.return`, `call` is `func.call`).
    /// Whether a default-dialect op name (`return`, `call`) starts at `pos`.
    pub(super) fn starts_default_op(b: &[u8], pos: Offset) -> bool {
        Cursor { b, i: pos }.default_op().is_some()
    }

    pub(super) fn default_dialect(word: &str) -> Option<&'static str> {
        match word {
            "return" => Some("func.return"),
            "call" => Some("func.call"),
            _ => None,
        }
    }

    fn is_word_start(c: u8) -> bool {
        c.is_ascii_alphabetic() || c == b'_'
    }
    fn is_word_char(c: u8) -> bool {
        c.is_ascii_alphanumeric() || c == b'_' || c == b'$'
    }

    impl Cursor<'_> {
        /// Skips a `[A-Za-z_][A-Za-z0-9_$]*` word; true if one was there.
        fn word(&mut self) -> bool {
            if !self.peek().is_some_and(is_word_start) {
                return false;
            }
            while self.peek().is_some_and(is_word_char) {
                self.i += 1;
            }
            true
        }
        /// The full name of a default-dialect op name (`return`, `call`)
        /// here, as the grammar's `default_op` reads it.
        fn default_op(&self) -> Option<&'static str> {
            let mut c = Cursor {
                b: self.b,
                i: self.i,
            };
            let start = c.i;
            if !c.word() || c.peek().is_some_and(super::is_ident_cont) {
                return None;
            }
            default_dialect(std::str::from_utf8(&self.b[start..c.i]).ok()?)
        }
        /// Does the grammar's `dotted_ident` or `default_op` match here?
        fn op_name_start(&self) -> bool {
            self.dotted() || self.default_op().is_some() || self.module_keyword()
        }
        /// `module` here (a nested module starts).
        fn module_keyword(&self) -> bool {
            self.b[self.i..].starts_with(b"module")
                && !self
                    .b
                    .get(self.i + 6)
                    .copied()
                    .is_some_and(super::is_ident_cont)
        }
        /// `%name` here: the name (without `%`, borrowed from `src`, the
        /// text of `self.b`) and its offset.
        fn value_at<'s>(&mut self, src: &'s str) -> Option<(&'s str, Offset)> {
            let loc = self.i;
            self.value_name()?;
            Some((src.get(loc + 1..self.i)?, loc))
        }
        /// A `dotted_ident` here, skipped; its text from `src`.
        fn dotted_name<'s>(&mut self, src: &'s str) -> Option<&'s str> {
            if !self.dotted() {
                return None;
            }
            let start = self.i;
            self.word();
            while self.peek() == Some(b'.') {
                self.i += 1;
                while self.peek().is_some_and(is_word_char) {
                    self.i += 1;
                }
            }
            src.get(start..self.i)
        }
        /// Does the grammar's `dotted_ident` match here?
        fn dotted(&self) -> bool {
            let mut c = Cursor {
                b: self.b,
                i: self.i,
            };
            if !c.word() || c.peek() != Some(b'.') {
                return false;
            }
            c.i += 1;
            c.peek().is_some_and(is_word_char)
        }
        /// Does the grammar's `op_start` match at a `%`? `None`: not sure.
        fn op_start(&self) -> Option<bool> {
            let mut c = Cursor {
                b: self.b,
                i: self.i,
            };
            loop {
                if c.value_name().is_none() {
                    return Some(false);
                }
                c.ws();
                if c.eat(b':').is_some() {
                    c.ws();
                    // `%a:2` (rare): let pest decide; `%a : type` is no result list.
                    return if c.peek().is_some_and(|d| d.is_ascii_digit()) {
                        None
                    } else {
                        Some(false)
                    };
                }
                if c.eat(b'=').is_some() {
                    break;
                }
                if c.eat(b',').is_none() {
                    return Some(false);
                }
                c.ws();
            }
            c.ws();
            match c.peek() {
                Some(b'"') => None,
                _ => Some(c.op_name_start()),
            }
        }
    }

    /// A run of custom-form items made only of value refs, scalar types,
    /// dot-free keywords and the punctuation `: , = -> * < >`, ending where
    /// the grammar's `items_top` (`top`) or `items_inner` run would end.
    /// `None` (use pest) on any other token.
    pub(super) fn items(b: &[u8], pos: Offset, top: bool) -> Option<(Vec<AstItem>, Offset)> {
        let mut c = Cursor { b, i: pos };
        let mut out = Vec::new();
        let mut after_comma = false;
        let mut end = pos;
        loop {
            // `pos` is already past whitespace.
            if !out.is_empty() {
                c.ws();
            }
            let loc = c.i;
            let Some(ch) = c.peek() else { break };
            if top && !after_comma {
                let start = match ch {
                    b'%' => c.op_start()?,
                    b'"' => return None,
                    _ => c.op_name_start(),
                };
                if start {
                    break;
                }
            }
            after_comma = false;
            let kind = match ch {
                b'%' => {
                    let name = std::str::from_utf8(c.value_name()?).ok()?.to_string();
                    let index = if c.eat(b'#').is_some() {
                        let s = c.i;
                        while c.peek().is_some_and(|d| d.is_ascii_digit()) {
                            c.i += 1;
                        }
                        Some(std::str::from_utf8(&b[s..c.i]).ok()?.parse().ok()?)
                    } else {
                        None
                    };
                    AstItemKind::Value(AstValueRef { name, index, loc })
                }
                b':' | b',' | b'=' | b'*' | b'<' | b'>' => {
                    c.i += 1;
                    after_comma = ch == b',';
                    AstItemKind::Punct(match ch {
                        b':' => ":",
                        b',' => ",",
                        b'=' => "=",
                        b'*' => "*",
                        b'<' => "<",
                        _ => ">",
                    })
                }
                b'-' if b.get(c.i + 1) == Some(&b'>') => {
                    c.i += 2;
                    AstItemKind::Punct("->")
                }
                b'(' | b'[' | b'{' | b')' | b']' | b'}' | b'^' => break,
                ch if is_word_start(ch) => {
                    let rest = &b[c.i..];
                    if [&b"vec"[..], b"mat", b"arr", b"var", b"struct", b"memref"]
                        .iter()
                        .any(|k| rest.starts_with(k))
                    {
                        return None;
                    }
                    if let Some(t) = c.ty(0) {
                        AstItemKind::Type(t)
                    } else {
                        c.word();
                        if c.peek() == Some(b'.') {
                            // A dotted name: no item; pest's run stops here too.
                            break;
                        }
                        let w = std::str::from_utf8(&b[loc..c.i]).ok()?;
                        AstItemKind::Keyword(w.to_string())
                    }
                }
                _ => return None,
            };
            out.push(AstItem { kind, loc });
            end = c.i;
        }
        Some((out, end))
    }

    /// A [`super::GenericLine`] at `pos` and the offset just past it, or
    /// `None` (use the general path) for any other shape: results with a
    /// count, operands with `#N`, escapes, regions, attributes, dialect or
    /// function types.
    pub(super) fn generic_line<'s>(
        b: &'s [u8],
        src: &'s str,
        pos: Offset,
        cache: &mut SigCache,
        line: &mut super::GenericLine<'s>,
    ) -> Option<Offset> {
        let mut c = Cursor { b, i: pos };
        line.clear(pos);
        if c.peek() == Some(b'%') {
            loop {
                line.results.push(c.value_at(src)?);
                c.ws();
                if c.eat(b'=').is_some() {
                    break;
                }
                c.eat(b',')?;
                c.ws();
            }
            c.ws();
        }
        c.eat(b'"')?;
        let start = c.i;
        while c
            .peek()
            .is_some_and(|ch| !matches!(ch, b'"' | b'\\' | b'\n'))
        {
            c.i += 1;
        }
        line.name = src.get(start..c.i)?;
        c.eat(b'"')?;
        c.ws();
        c.eat(b'(')?;
        c.ws();
        if c.eat(b')').is_none() {
            loop {
                let (name, loc) = c.value_at(src)?;
                let index = if c.eat(b'#').is_some() {
                    let s = c.i;
                    while c.peek().is_some_and(|ch| ch.is_ascii_digit()) {
                        c.i += 1;
                    }
                    Some(src.get(s..c.i)?.parse().ok()?)
                } else {
                    None
                };
                line.operands.push((name, index, loc));
                c.ws();
                if c.eat(b')').is_some() {
                    break;
                }
                c.eat(b',')?;
                c.ws();
            }
        }
        c.ws();
        line.type_loc = c.i;
        c.eat(b':')?;
        c.ws();
        let sig = c.i;
        if let Some(len) = cache.matches(b, sig) {
            line.operand_types.clone_from(&cache.operand_types);
            line.result_types.clone_from(&cache.result_types);
            return Some(sig + len);
        }
        line.operand_types = c.type_list()?;
        c.ws();
        c.eat(b'-')?;
        c.eat(b'>')?;
        c.ws();
        if c.peek() == Some(b'(') {
            line.result_types = c.type_list()?;
        } else {
            line.result_types.push(c.ty(0)?);
        }
        cache.remember(sig, c.i, line);
        Some(c.i)
    }

    /// The function type of the last generic line read, `(f64, f64) -> f64`:
    /// where its text lies and what it parsed to. Lines in a row mostly repeat
    /// it, and a byte comparison is cheaper than parsing the types again.
    #[derive(Default)]
    pub(super) struct SigCache {
        start: Offset,
        end: Offset,
        operand_types: smallvec::SmallVec<[Type; 4]>,
        result_types: smallvec::SmallVec<[Type; 2]>,
    }

    impl SigCache {
        /// The length of the remembered signature if the text at `at` repeats
        /// it and ends where it did (whitespace or the end of the input
        /// follows), so that parsing it would give the same types.
        fn matches(&self, b: &[u8], at: Offset) -> Option<usize> {
            let len = self.end - self.start;
            let same = len > 0
                && b.get(at..at + len) == Some(&b[self.start..self.end])
                && b.get(at + len)
                    .is_none_or(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'));
            same.then_some(len)
        }
        fn remember(&mut self, start: Offset, end: Offset, line: &super::GenericLine<'_>) {
            self.start = start;
            self.end = end;
            self.operand_types.clone_from(&line.operand_types);
            self.result_types.clone_from(&line.result_types);
        }
    }

    /// A [`super::CustomLine`] at `pos` and the offset just past it, or
    /// `None` (use the general path) for any other shape.
    pub(super) fn custom_line<'s>(
        b: &'s [u8],
        src: &'s str,
        pos: Offset,
    ) -> Option<(super::CustomLine<'s>, Offset)> {
        let mut c = Cursor { b, i: pos };
        let result = c.value_at(src)?;
        c.ws();
        c.eat(b'=')?;
        c.ws();
        let op_name = c.dotted_name(src)?;
        c.ws();
        let mut operands = smallvec::SmallVec::new();
        let mut commas = smallvec::SmallVec::new();
        loop {
            operands.push(c.value_at(src)?);
            c.ws();
            if c.peek() != Some(b',') {
                break;
            }
            commas.push(c.i);
            c.i += 1;
            c.ws();
        }
        let colon = c.i;
        c.eat(b':')?;
        c.ws();
        let ty_loc = c.i;
        let ty = c.ty(0)?;
        if !ty.is_scalar() {
            return None;
        }
        let end = c.i;
        // Nothing but the next op (or the end of the region) may follow.
        let mut d = Cursor { b, i: end };
        d.ws();
        let ends = match d.peek() {
            None | Some(b'}' | b'^') => true,
            Some(b'%') => d.op_start() == Some(true),
            Some(_) => d.op_name_start(),
        };
        if !ends {
            return None;
        }
        let line = super::CustomLine {
            loc: pos,
            result,
            name: op_name,
            operands,
            commas,
            colon,
            ty,
            ty_loc,
        };
        Some((line, end))
    }

    /// The op at `pos` (a complete generic op, or a custom op's head with an
    /// empty item list) and the offset just past it, or `None` to use pest.
    pub(super) fn op_head(src: &str, pos: Offset) -> Option<(AstOp, Offset)> {
        let b = src.as_bytes();
        let mut c = Cursor { b, i: pos };
        let mut results = Vec::new();
        if c.peek() == Some(b'%') {
            loop {
                let (name, loc) = c.value_at(src)?;
                results.push(AstResult {
                    name: name.to_string(),
                    count: 1,
                    loc,
                });
                c.ws();
                if c.eat(b'=').is_some() {
                    break;
                }
                c.eat(b',')?;
                c.ws();
            }
            c.ws();
        }
        let custom = |name: &str, end: Offset| {
            let op = AstOp {
                results,
                name: name.to_string(),
                loc: pos,
                body: AstOpBody::Custom(Vec::new()),
            };
            Some((op, end))
        };
        if let Some(full) = c.default_op() {
            c.word();
            return custom(full, c.i);
        }
        if let Some(name) = c.dotted_name(src) {
            return custom(name, c.i);
        }
        let mut line = super::GenericLine::default();
        let end = generic_line(b, src, pos, &mut SigCache::default(), &mut line)?;
        Some((line.to_ast(), end))
    }
}
