//! The syntax tree the pest grammar produces (IR-SPEC §1), before names are
//! resolved and operations are built into a [`crate::Context`].
//!
//! Every node carries the byte offset of its first character in the source,
//! which diagnostics turn into `file:line:col`.

use std::rc::Rc;

use crate::attributes::Attribute;
use crate::types::Type;

/// Byte offset into the source text.
pub type Offset = usize;

/// A whole file: the top-level operations (a `module { }` wrapper is unwrapped).
#[derive(Clone, Debug, PartialEq)]
pub struct AstModule {
    pub ops: Vec<AstOp>,
    /// Offset of the `module` keyword, or 0 when the wrapper was omitted.
    pub loc: Offset,
    /// The wrapper's symbol name (`module @name { ... }`), if any.
    pub name: Option<String>,
    /// The wrapper's attributes (`module attributes {...} { ... }`).
    pub attrs: Vec<AstAttrEntry>,
    /// The file's alias definitions (`#name = attr`, `!name = type`), which
    /// a lazily read region resolves its uses with.
    pub aliases: std::rc::Rc<Aliases>,
}

/// MLIR's attribute and type aliases, defined at the top of a file
/// (`#map = 5 : i64`, `!t = vec<f64>`) and expanded where they are used:
/// the IR holds the attribute or type itself, and prints it in full.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Aliases {
    /// Names without `!`.
    pub types: std::collections::HashMap<String, Type>,
    /// Names without `#`.
    pub attrs: std::collections::HashMap<String, Attribute>,
}

/// One result group on the left of `=`: `%a` (count 1) or `%a:2` (count 2).
#[derive(Clone, Debug, PartialEq)]
pub struct AstResult {
    /// Name without `%`.
    pub name: String,
    pub count: usize,
    pub loc: Offset,
}

/// A value use: `%name` or `%name#3`.
#[derive(Clone, Debug, PartialEq)]
pub struct AstValueRef {
    /// Name without `%`.
    pub name: String,
    /// The `#N` suffix.
    pub index: Option<usize>,
    pub loc: Offset,
}

/// An operation in either form.
#[derive(Clone, Debug, PartialEq)]
pub struct AstOp {
    pub results: Vec<AstResult>,
    /// Full name, e.g. `arith.addf` (for `module` the parser writes `builtin.module`).
    pub name: String,
    /// Offset of the first character of the op (its first result, or its name).
    pub loc: Offset,
    pub body: AstOpBody,
}

/// The part of an operation after its name.
#[derive(Clone, Debug, PartialEq)]
pub enum AstOpBody {
    /// `"d.op"(operands) ({regions}) {attrs} : (types) -> types`.
    Generic(AstGeneric),
    /// The token sequence of a custom form, up to the start of the next op.
    Custom(Vec<AstItem>),
}

/// The generic form of an operation.
#[derive(Clone, Debug, PartialEq)]
pub struct AstGeneric {
    pub operands: Vec<AstValueRef>,
    /// A branch's successors `[^bb1, ^bb2]`: labels without `^`, with their offsets.
    pub successors: Vec<(String, Offset)>,
    pub regions: Vec<AstRegion>,
    pub attrs: Vec<AstAttrEntry>,
    pub operand_types: Vec<Type>,
    pub result_types: Vec<Type>,
    /// Offset of the `:` that starts the function type.
    pub type_loc: Offset,
}

/// `name = value` in an attribute dictionary (`name` alone is a unit attribute).
#[derive(Clone, Debug, PartialEq)]
pub struct AstAttrEntry {
    pub name: String,
    pub value: Attribute,
    pub loc: Offset,
}

/// A region: one or more blocks.
#[derive(Clone, Debug, PartialEq)]
pub struct AstRegion {
    /// Shared, so that handing a region from a custom form's items to the
    /// IR builder never copies a (possibly huge) function body.
    pub blocks: Rc<Vec<AstBlock>>,
    pub loc: Offset,
    /// A region read lazily (the streaming parser): `blocks` is empty and the
    /// region's text runs from `loc` (its `{`) to this offset (its `}`); the
    /// IR builder parses it when it builds the region, op by op, so that no
    /// syntax tree of a large body ever exists.
    pub lazy_end: Option<Offset>,
    /// An op the builder appends to the region's last block unless that block
    /// already ends in one (MLIR's implicit terminator, e.g. `scf.yield`).
    pub implicit_terminator: Option<&'static str>,
    /// An op the builder puts in a region written without any block
    /// (`{}`), which would otherwise be one empty block
    /// ([`crate::spec::OpSpec::empty_region_terminator`]).
    pub empty_terminator: Option<&'static str>,
}

impl AstRegion {
    /// An eagerly parsed region with `blocks`, starting at `loc`.
    pub fn new(blocks: Vec<AstBlock>, loc: Offset) -> AstRegion {
        AstRegion {
            blocks: Rc::new(blocks),
            loc,
            lazy_end: None,
            implicit_terminator: None,
            empty_terminator: None,
        }
    }
}

/// A block: optional label `^name(%a: T, ...)` and its operations.
#[derive(Clone, Debug, PartialEq)]
pub struct AstBlock {
    /// Label without `^`; `None` for an unlabeled entry block.
    pub label: Option<String>,
    pub args: Vec<AstArg>,
    pub ops: Vec<AstOp>,
    pub loc: Offset,
}

/// A declared argument `%name: type`.
#[derive(Clone, Debug, PartialEq)]
pub struct AstArg {
    pub name: String,
    pub ty: Type,
    pub loc: Offset,
}

/// One token (or bracketed group) of a custom op form.
#[derive(Clone, Debug, PartialEq)]
pub struct AstItem {
    pub kind: AstItemKind,
    pub loc: Offset,
}

/// What a custom-form token is.
#[derive(Clone, Debug, PartialEq)]
pub enum AstItemKind {
    /// `%x` or `%x#1`.
    Value(AstValueRef),
    /// A type: `f64`, `vec<f64>`, `!gen.collect<f64>`, ...
    Type(Type),
    /// A bare word without a dot: `to`, `step`, `iter_args`, `else`, `olt`, `true`, `add`.
    Keyword(String),
    /// An integer literal (decimal, optionally negative; or `0x...` hex).
    Int(i128),
    /// A float literal with a `.` or exponent, or `inf`/`nan` forms as the grammar allows.
    Float(f64),
    /// A string literal (unescaped).
    Str(String),
    /// `@name`.
    Symbol(String),
    /// A block reference `^name` (a branch's successor), without `^`.
    Block(String),
    /// A dialect attribute `#d.name<...>`.
    Attr(Attribute),
    /// One of `:` `,` `=` `->` `*` `<` `>`.
    Punct(&'static str),
    /// `( ... )`.
    Paren(Vec<AstItem>),
    /// `[ ... ]`.
    Square(Vec<AstItem>),
    /// An attribute dictionary `{a = 1, b}`.
    AttrDict(Vec<AstAttrEntry>),
    /// A region `{ ops }` (or with labeled blocks).
    Region(AstRegion),
}

/// A syntax error at a byte offset.
#[derive(Clone, Debug, PartialEq)]
pub struct SyntaxError {
    pub offset: Offset,
    pub message: String,
}
