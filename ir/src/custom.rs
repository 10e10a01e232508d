//! Parsing custom op forms. The grammar turns a custom form into a flat list
//! of [`AstItem`]s; an op's [`crate::spec::ParseFn`] reads them with a
//! [`CustomParser`] cursor and returns a [`ParsedOp`], whose value names the
//! IR builder then resolves.

use crate::ast::{
    AstArg, AstAttrEntry, AstItem, AstItemKind, AstRegion, AstValueRef, Offset, SyntaxError,
};
use crate::attributes::Attribute;
use crate::types::Type;

/// A region of a custom form, with the entry-block arguments the header
/// declared (e.g. a loop's induction variable), if any.
#[derive(Clone, Debug)]
pub struct ParsedRegion {
    pub region: AstRegion,
    /// Replaces the entry block's argument list when present.
    pub entry_args: Option<Vec<AstArg>>,
}

/// What a custom parser produces: an op in generic terms, with operands
/// still named.
#[derive(Clone, Debug, Default)]
pub struct ParsedOp {
    /// Operands with their stated type (`None`: take the value's own type).
    pub operands: Vec<(AstValueRef, Option<Type>)>,
    pub result_types: Vec<Type>,
    pub attrs: Vec<(String, Attribute)>,
    pub regions: Vec<ParsedRegion>,
    /// A branch's successors: label (without `^`), its offset, and how many
    /// of the last operands it forwards (see
    /// [`crate::context::OpData::successors`]).
    pub successors: Vec<(String, Offset, u32)>,
}

/// A cursor over the items of a custom form.
pub struct CustomParser<'a> {
    items: &'a [AstItem],
    pos: usize,
    end_loc: Offset,
    /// Offset of the op being parsed.
    pub op_loc: Offset,
    /// Number of results the source declared on the left of `=`.
    pub num_results: usize,
    /// The source text the items come from, when known.
    pub source: Option<std::rc::Rc<crate::context::Source>>,
}

impl<'a> CustomParser<'a> {
    /// A cursor over `items`; `end_loc` is where errors at the end point.
    pub fn new(items: &'a [AstItem], op_loc: Offset, end_loc: Offset, num_results: usize) -> Self {
        CustomParser {
            items,
            pos: 0,
            end_loc,
            op_loc,
            num_results,
            source: None,
        }
    }
    /// The source text from `offset` to its end (e.g. to tell a hex literal
    /// `0x...` from a decimal one), when the source is known.
    pub fn source_from(&self, offset: Offset) -> Option<&str> {
        self.source.as_ref()?.text.get(offset..)
    }
    /// The next item, without consuming it.
    pub fn peek(&self) -> Option<&'a AstItem> {
        self.items.get(self.pos)
    }
    /// Consumes and returns the next item.
    pub fn next_item(&mut self) -> Option<&'a AstItem> {
        let it = self.items.get(self.pos);
        if it.is_some() {
            self.pos += 1;
        }
        it
    }
    /// Whether every item was consumed.
    pub fn at_end(&self) -> bool {
        self.pos >= self.items.len()
    }
    /// Offset of the next item (or the end).
    pub fn loc(&self) -> Offset {
        self.peek().map(|i| i.loc).unwrap_or(self.end_loc)
    }
    /// An error at the next item.
    pub fn error(&self, msg: impl Into<String>) -> SyntaxError {
        SyntaxError {
            offset: self.loc(),
            message: msg.into(),
        }
    }
    /// Errors unless every item was consumed.
    pub fn finish(&self) -> Result<(), SyntaxError> {
        if self.at_end() {
            Ok(())
        } else {
            Err(self.error("unexpected token in custom operation form"))
        }
    }

    /// Consumes `p` if it is next.
    pub fn try_punct(&mut self, p: &str) -> bool {
        if matches!(self.peek(), Some(AstItem { kind: AstItemKind::Punct(q), .. }) if *q == p) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    /// Consumes `p` or errors.
    pub fn expect_punct(&mut self, p: &str) -> Result<(), SyntaxError> {
        if self.try_punct(p) {
            Ok(())
        } else {
            Err(self.error(format!("expected '{p}'")))
        }
    }
    /// Consumes keyword `k` if it is next.
    pub fn try_keyword(&mut self, k: &str) -> bool {
        if matches!(self.peek(), Some(AstItem { kind: AstItemKind::Keyword(q), .. }) if q == k) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    /// Consumes keyword `k` or errors.
    pub fn expect_keyword(&mut self, k: &str) -> Result<(), SyntaxError> {
        if self.try_keyword(k) {
            Ok(())
        } else {
            Err(self.error(format!("expected '{k}'")))
        }
    }
    /// Consumes and returns any keyword.
    pub fn keyword(&mut self) -> Result<String, SyntaxError> {
        match self.peek() {
            Some(AstItem {
                kind: AstItemKind::Keyword(k),
                ..
            }) => {
                self.pos += 1;
                Ok(k.clone())
            }
            _ => Err(self.error("expected a keyword")),
        }
    }
    /// Consumes a value reference if next.
    pub fn try_value(&mut self) -> Option<AstValueRef> {
        match self.peek() {
            Some(AstItem {
                kind: AstItemKind::Value(v),
                ..
            }) => {
                self.pos += 1;
                Some(v.clone())
            }
            _ => None,
        }
    }
    /// Consumes a value reference or errors.
    pub fn expect_value(&mut self) -> Result<AstValueRef, SyntaxError> {
        self.try_value()
            .ok_or_else(|| self.error("expected an SSA value"))
    }
    /// Consumes a successor `^bb` with its forwarded operands, MLIR's
    /// `^bb1` or `^bb1(%a, %b : i64, f64)`, into `out` (the operands are
    /// appended to `out.operands`).
    pub fn successor(&mut self, out: &mut ParsedOp) -> Result<(), SyntaxError> {
        let (label, loc) = match self.peek() {
            Some(AstItem {
                kind: AstItemKind::Block(l),
                loc,
            }) => (l.clone(), *loc),
            _ => return Err(self.error("expected a block reference '^name'")),
        };
        self.pos += 1;
        let mut count = 0u32;
        if let Some(mut inner) = self.try_paren() {
            let values = inner.value_list()?;
            let mut types = Vec::new();
            if !values.is_empty() {
                inner.expect_punct(":")?;
                types.push(inner.expect_type()?);
                while inner.try_punct(",") {
                    types.push(inner.expect_type()?);
                }
            }
            inner.finish()?;
            if values.len() != types.len() {
                return Err(SyntaxError {
                    offset: loc,
                    message: format!(
                        "{} operands given to '^{label}', but {} types",
                        values.len(),
                        types.len()
                    ),
                });
            }
            count = values.len() as u32;
            out.operands
                .extend(values.into_iter().zip(types.into_iter().map(Some)));
        }
        out.successors.push((label, loc, count));
        Ok(())
    }
    /// Consumes a comma-separated list of values (possibly empty).
    pub fn value_list(&mut self) -> Result<Vec<AstValueRef>, SyntaxError> {
        let mut out = Vec::new();
        if let Some(v) = self.try_value() {
            out.push(v);
            while self.try_punct(",") {
                out.push(self.expect_value()?);
            }
        }
        Ok(out)
    }
    /// Consumes a type if next.
    pub fn try_type(&mut self) -> Option<Type> {
        match self.peek() {
            Some(AstItem {
                kind: AstItemKind::Type(t),
                ..
            }) => {
                self.pos += 1;
                Some(t.clone())
            }
            _ => None,
        }
    }
    /// Consumes a type or errors.
    pub fn expect_type(&mut self) -> Result<Type, SyntaxError> {
        if let Some(AstItem {
            kind: AstItemKind::Keyword(k),
            ..
        }) = self.peek()
        {
            let wide = k
                .strip_prefix('i')
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()));
            if wide {
                let m = format!("integer type '{k}' is wider than 64 bits (not supported)");
                return Err(self.error(m));
            }
            if !crate::parser::is_type_word(k) {
                let k = k.clone();
                return self
                    .try_type()
                    .ok_or_else(|| self.error(format!("unknown type '{k}'")));
            }
        }
        self.try_type().ok_or_else(|| self.error("expected a type"))
    }
    /// Consumes `T` or `(T, ...)` (possibly `()`).
    pub fn type_list(&mut self) -> Result<Vec<Type>, SyntaxError> {
        if let Some(t) = self.try_type() {
            return Ok(vec![t]);
        }
        let mut inner = self.expect_paren()?;
        let mut out = Vec::new();
        if !inner.at_end() {
            out.push(inner.expect_type()?);
            while inner.try_punct(",") {
                out.push(inner.expect_type()?);
            }
        }
        inner.finish()?;
        Ok(out)
    }
    /// Consumes `( ... )` and returns a cursor over its contents.
    pub fn expect_paren(&mut self) -> Result<CustomParser<'a>, SyntaxError> {
        self.try_paren().ok_or_else(|| self.error("expected '('"))
    }
    /// Consumes `( ... )` if next.
    pub fn try_paren(&mut self) -> Option<CustomParser<'a>> {
        self.try_group(true)
    }
    /// Consumes `[ ... ]` and returns a cursor over its contents.
    pub fn expect_square(&mut self) -> Result<CustomParser<'a>, SyntaxError> {
        self.try_square().ok_or_else(|| self.error("expected '['"))
    }
    /// Consumes `[ ... ]` if next.
    pub fn try_square(&mut self) -> Option<CustomParser<'a>> {
        self.try_group(false)
    }
    /// Consumes `( ... )` (`paren`) or `[ ... ]` if next, and returns a
    /// cursor over its contents.
    fn try_group(&mut self, paren: bool) -> Option<CustomParser<'a>> {
        let (items, loc) = match self.peek()? {
            AstItem {
                kind: AstItemKind::Paren(items),
                loc,
            } if paren => (items, *loc),
            AstItem {
                kind: AstItemKind::Square(items),
                loc,
            } if !paren => (items, *loc),
            _ => return None,
        };
        self.pos += 1;
        let mut inner = CustomParser::new(items, self.op_loc, loc, 0);
        inner.source = self.source.clone();
        Some(inner)
    }
    /// Consumes a region if next.
    pub fn try_region(&mut self) -> Option<AstRegion> {
        match self.peek() {
            Some(AstItem {
                kind: AstItemKind::Region(r),
                ..
            }) => {
                self.pos += 1;
                Some(r.clone())
            }
            _ => None,
        }
    }
    /// Consumes a region or errors.
    pub fn expect_region(&mut self) -> Result<AstRegion, SyntaxError> {
        self.try_region()
            .ok_or_else(|| self.error("expected a region '{ ... }'"))
    }
    /// Consumes an attribute dictionary if next.
    pub fn try_attr_dict(&mut self) -> Option<Vec<AstAttrEntry>> {
        match self.peek() {
            Some(AstItem {
                kind: AstItemKind::AttrDict(d),
                ..
            }) => {
                self.pos += 1;
                Some(d.clone())
            }
            _ => None,
        }
    }
    /// Consumes `@name` or errors.
    pub fn expect_symbol(&mut self) -> Result<String, SyntaxError> {
        match self.peek() {
            Some(AstItem {
                kind: AstItemKind::Symbol(s),
                ..
            }) => {
                self.pos += 1;
                Ok(s.clone())
            }
            _ => Err(self.error("expected a symbol '@name'")),
        }
    }
    /// Consumes a dialect attribute `#d.name<...>` or errors.
    pub fn expect_attr(&mut self) -> Result<Attribute, SyntaxError> {
        match self.peek() {
            Some(AstItem {
                kind: AstItemKind::Attr(a),
                ..
            }) => {
                self.pos += 1;
                Ok(a.clone())
            }
            _ => Err(self.error("expected an attribute")),
        }
    }
    /// Consumes a literal (integer, float, `true`/`false`, string) and
    /// returns it as an attribute of type `ty` where typed.
    pub fn expect_literal(&mut self) -> Result<(AstItemKind, Offset), SyntaxError> {
        match self.peek() {
            Some(AstItem { kind, loc })
                if matches!(
                    kind,
                    AstItemKind::Int(_) | AstItemKind::Float(_) | AstItemKind::Str(_)
                ) || matches!(kind, AstItemKind::Keyword(k) if k == "true" || k == "false") =>
            {
                self.pos += 1;
                Ok((kind.clone(), *loc))
            }
            _ => Err(self.error("expected a literal")),
        }
    }
    /// Consumes `(%a: T, %b: T)` argument declarations.
    pub fn arg_list(&mut self) -> Result<Vec<AstArg>, SyntaxError> {
        Ok(self.args(false)?.0)
    }
    /// Consumes `(%a: T {attrs}, %b: T)`: the arguments and each one's
    /// attribute dictionary (empty where none is written), as MLIR writes a
    /// function's parameters.
    pub fn arg_list_with_attrs(
        &mut self,
    ) -> Result<(Vec<AstArg>, Vec<Vec<AstAttrEntry>>), SyntaxError> {
        self.args(true)
    }
    /// [`Self::arg_list`], reading a dictionary after each type when
    /// `attrs`.
    fn args(&mut self, attrs: bool) -> Result<(Vec<AstArg>, Vec<Vec<AstAttrEntry>>), SyntaxError> {
        let mut inner = self.expect_paren()?;
        let (mut out, mut dicts) = (Vec::new(), Vec::new());
        if !inner.at_end() {
            loop {
                let v = inner.expect_value()?;
                inner.expect_punct(":")?;
                let ty = inner.expect_type()?;
                out.push(AstArg {
                    name: v.name,
                    ty,
                    loc: v.loc,
                });
                if attrs {
                    dicts.push(inner.try_attr_dict().unwrap_or_default());
                }
                if !inner.try_punct(",") {
                    break;
                }
            }
        }
        inner.finish()?;
        Ok((out, dicts))
    }
    /// Parses an optional trailing `attributes {..}` or `{..}` dictionary into `attrs`.
    pub fn optional_attr_dict(&mut self, attrs: &mut Vec<(String, Attribute)>) {
        self.try_keyword("attributes");
        if let Some(d) = self.try_attr_dict() {
            attrs.extend(d.into_iter().map(|e| (e.name, e.value)));
        }
    }
}

/// Parses `%a, %b {attrs} : T` where every operand has type `T`; the result
/// type is `result`, or `T` when `result` is `None` (no result when the
/// source binds none).
pub fn parse_operands_colon_type(
    cp: &mut CustomParser,
    result: Option<Type>,
) -> Result<ParsedOp, SyntaxError> {
    let vals: Vec<AstValueRef> = cp.value_list()?;
    operands_colon_type_tail(cp, vals, Vec::new(), result)
}

/// The rest of [`parse_operands_colon_type`] after the operands `vals`,
/// with `attrs` read so far.
fn operands_colon_type_tail(
    cp: &mut CustomParser,
    vals: Vec<AstValueRef>,
    mut attrs: Vec<(String, crate::Attribute)>,
    result: Option<Type>,
) -> Result<ParsedOp, SyntaxError> {
    cp.optional_attr_dict(&mut attrs);
    cp.expect_punct(":")?;
    let t = cp.expect_type()?;
    let results = if cp.num_results == 0 {
        vec![]
    } else {
        vec![result.unwrap_or_else(|| t.clone())]
    };
    Ok(ParsedOp {
        successors: Vec::new(),
        operands: vals.into_iter().map(|v| (v, Some(t.clone()))).collect(),
        result_types: results,
        attrs,
        regions: vec![],
    })
}

/// The custom form `%a, %b [fastmath<flags>] {attrs} : T` of an op whose
/// operands and result all have type `T` (see
/// [`crate::spec::OpSpec::same_type_custom_form`]). The flags become the
/// attribute `fastmath` (see [`crate::fastmath`]); whether the op may carry
/// them is its verifier's question.
pub fn parse_same_type(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let vals: Vec<AstValueRef> = cp.value_list()?;
    let mut attrs = Vec::new();
    if cp.try_keyword(crate::fastmath::KEY) {
        // `fastmath<none>` is the default: no attribute.
        let flags = fastmath_flags(cp)?;
        if crate::FastMath::from_attr(&flags).is_ok_and(|f| !f.is_empty()) {
            attrs.push((crate::fastmath::KEY.to_string(), flags));
        }
    }
    if cp.try_keyword("overflow") {
        attrs.push((OVERFLOW_KEY.to_string(), overflow_flags(cp)?));
    }
    operands_colon_type_tail(cp, vals, attrs, None)
}

/// `<word, ...>` (after `fastmath` or `overflow`): each word with its
/// offset, checked by `known`; an unknown one is the error `unknown(word)`.
fn flag_words(
    cp: &mut CustomParser,
    known: impl Fn(&str) -> bool,
    unknown: impl Fn(&str) -> String,
) -> Result<Vec<String>, SyntaxError> {
    cp.expect_punct("<")?;
    let mut words = Vec::new();
    loop {
        let at = cp.loc();
        let w = cp.keyword()?;
        if !known(&w) {
            return Err(SyntaxError {
                message: unknown(&w),
                offset: at,
            });
        }
        words.push(w);
        if !cp.try_punct(",") {
            break;
        }
    }
    cp.expect_punct(">")?;
    Ok(words)
}

/// The attribute holding MLIR's integer overflow flags
/// (`#arith.overflow<nsw, nuw>`), written `overflow<nsw, nuw>` in the
/// custom form of `arith.addi`/`subi`/`muli`/`shli`.
pub const OVERFLOW_KEY: &str = "overflowFlags";

/// The overflow flags MLIR has: `none`, `nsw` (no signed wrap), `nuw` (no
/// unsigned wrap).
pub const OVERFLOW_FLAGS: [&str; 3] = ["none", "nsw", "nuw"];

/// `<nsw, nuw>` after the keyword `overflow`, as `#arith.overflow<...>`.
fn overflow_flags(cp: &mut CustomParser) -> Result<crate::Attribute, SyntaxError> {
    let words = flag_words(
        cp,
        |w| OVERFLOW_FLAGS.contains(&w),
        |w| format!("unknown overflow flag '{w}' (expected none, nsw or nuw)"),
    )?;
    let params = words.into_iter().map(crate::Attribute::Keyword).collect();
    Ok(crate::Attribute::dialect("arith", "overflow", params))
}

/// `<flag, ...>` after the keyword `fastmath`, as `#arith.fastmath<...>`.
fn fastmath_flags(cp: &mut CustomParser) -> Result<crate::Attribute, SyntaxError> {
    let words = flag_words(
        cp,
        |w| crate::FastMath::from_word(w).is_some(),
        crate::fastmath::unknown_flag,
    )?;
    let flags = crate::FastMath::from_words(words.iter().map(String::as_str)).unwrap_or_default();
    Ok(flags.to_attr())
}
