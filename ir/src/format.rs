//! Declarative custom forms, in the spirit of MLIR ODS's `assemblyFormat`:
//! an op declares its custom form once, as a short format string next to
//! its spec ([`crate::spec::OpSpec::assembly_format`]), and this module both
//! prints and parses it, so the two cannot drift apart.
//!
//! A format is a sequence of space-separated directives:
//!
//! | directive | prints | parses |
//! |---|---|---|
//! | `operands` | `%a, %b` (all operands) | a value list |
//! | `$name` | attribute `name`'s value, e.g. `#gen.reduce<add>` or `[#gen.collect]` | a dialect attribute, symbol, string, keyword or `[...]` of those |
//! | `$name?` | the same where the op has the attribute, else nothing | a dialect attribute (`#...`) if one comes next |
//! | `attr-dict` | ` {k = v}` with the attributes no `$name` printed (nothing if none) | an optional dictionary |
//! | `type(operands)` | `T`, or `(A, B)`, or `()` | the same; one type per operand |
//! | `type(first)` | the first operand's type | one type; the other operands' types are their values' own |
//! | `type(results)` | `T`, or `(A, B)`, or `()` | the same |
//! | `regions` | each region, entry block header included | regions |
//! | `(` ... `)`, `[` ... `]` | the group's directives in brackets | the same |
//! | `:` `->` `,` `=` | itself | itself |
//! | any other word | itself (a keyword) | itself |
//!
//! A format without `type(results)` needs the op's result-type inference
//! ([`crate::spec::OpSpec::infer`]): the parser leaves the result types to
//! the IR builder, which infers them from the resolved operand types and
//! the attributes; the printer falls back to the generic form for an op
//! whose result types differ from the inferred ones (e.g. IR that does not
//! verify), so printing never loses information.

use crate::ast::{AstItemKind, SyntaxError};
use crate::attributes::Attribute;
use crate::context::OpId;
use crate::custom::{CustomParser, ParsedOp, ParsedRegion};
use crate::printer::Printer;
use crate::types::Type;

/// One directive of a format.
#[derive(Clone, Debug, PartialEq)]
pub enum Directive {
    Operands,
    Attr(&'static str),
    /// `$name?`: an attribute the op may lack.
    OptAttr(&'static str),
    AttrDict,
    OperandTypes,
    FirstOperandType,
    ResultTypes,
    Regions,
    /// `(`...`)` when `true`, `[`...`]` when `false`.
    Group(bool, Vec<Directive>),
    Punct(&'static str),
    Keyword(&'static str),
}

/// A parsed format declaration.
#[derive(Clone, Debug, PartialEq)]
pub struct Format {
    pub directives: Vec<Directive>,
    /// Attributes printed by `$name` and `$name?` (left out of `attr-dict`).
    pub inline_attrs: Vec<&'static str>,
    /// The optional ones (`$name?`).
    pub optional_attrs: Vec<&'static str>,
    /// Whether the result types are written (else they are inferred).
    pub has_result_types: bool,
}

impl Format {
    /// Parses a format declaration; an error names the bad directive.
    pub fn parse(text: &'static str) -> Result<Format, String> {
        let mut tokens = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find(|c: char| !c.is_whitespace()) {
            rest = &rest[start..];
            let len = if rest.starts_with("->") {
                2
            } else if rest.starts_with(|c: char| "()[]:,=".contains(c)) {
                1
            } else if let Some(inner) = rest.strip_prefix("type(") {
                5 + inner.find(')').ok_or("unclosed type(")? + 1
            } else {
                rest.find(|c: char| c.is_whitespace() || "()[]:,=".contains(c))
                    .unwrap_or(rest.len())
            };
            tokens.push(&rest[..len]);
            rest = &rest[len..];
        }
        let mut pos = 0;
        let directives = group(&tokens, &mut pos, None)?;
        let mut f = Format {
            directives,
            inline_attrs: Vec::new(),
            optional_attrs: Vec::new(),
            has_result_types: false,
        };
        fn scan(ds: &[Directive], f: &mut Format) {
            for d in ds {
                match d {
                    Directive::Attr(a) => f.inline_attrs.push(a),
                    Directive::OptAttr(a) => {
                        f.inline_attrs.push(a);
                        f.optional_attrs.push(a);
                    }
                    Directive::ResultTypes => f.has_result_types = true,
                    Directive::Group(_, inner) => scan(inner, f),
                    _ => {}
                }
            }
        }
        let ds = f.directives.clone();
        scan(&ds, &mut f);
        Ok(f)
    }
}

fn group(
    tokens: &[&'static str],
    pos: &mut usize,
    close: Option<&str>,
) -> Result<Vec<Directive>, String> {
    let mut out = Vec::new();
    while let Some(&t) = tokens.get(*pos) {
        *pos += 1;
        let d = match t {
            ")" | "]" if Some(t) == close => return Ok(out),
            ")" | "]" => return Err(format!("unbalanced '{t}'")),
            "(" => Directive::Group(true, group(tokens, pos, Some(")"))?),
            "[" => Directive::Group(false, group(tokens, pos, Some("]"))?),
            "operands" => Directive::Operands,
            "attr-dict" => Directive::AttrDict,
            "regions" => Directive::Regions,
            "type(operands)" => Directive::OperandTypes,
            "type(first)" => Directive::FirstOperandType,
            "type(results)" => Directive::ResultTypes,
            ":" | "->" | "," | "=" => Directive::Punct(t),
            _ if t.starts_with("type(") => return Err(format!("unknown directive '{t}'")),
            _ if t.starts_with('$') && t.ends_with('?') && t.len() > 2 => {
                Directive::OptAttr(&t[1..t.len() - 1])
            }
            _ if t.starts_with('$') && t.len() > 1 => Directive::Attr(&t[1..]),
            _ if t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => Directive::Keyword(t),
            _ => return Err(format!("unknown directive '{t}'")),
        };
        out.push(d);
    }
    match close {
        Some(c) => Err(format!("missing '{c}'")),
        None => Ok(out),
    }
}

/// Whether `op` can be printed with format `f`: every inline attribute is
/// present, and omitted result types are the inferred ones.
pub fn printable(p: &Printer, op: OpId, f: &Format) -> bool {
    let ctx = p.ctx();
    if f.inline_attrs
        .iter()
        .any(|a| ctx.attr(op, a).is_none() && !f.optional_attrs.contains(a))
    {
        return false;
    }
    if !ctx.regions(op).is_empty() && !has_regions(&f.directives) {
        return false;
    }
    if f.has_result_types || ctx.results(op).is_empty() {
        return true;
    }
    let Some(infer) = ctx.spec(op).infer else {
        return false;
    };
    let operand_types: Vec<Type> = ctx
        .operands(op)
        .iter()
        .map(|&v| ctx.ty(v).clone())
        .collect();
    let results: Vec<Type> = ctx.results(op).iter().map(|&v| ctx.ty(v).clone()).collect();
    infer(&operand_types, &ctx.op(op).attrs).is_some_and(|t| t[..] == results[..])
}

/// Prints `op` (after `%results = name`) in format `f`.
pub fn print(p: &mut Printer, op: OpId, f: &Format) {
    print_group(p, op, f, &f.directives);
}

fn print_group(p: &mut Printer, op: OpId, f: &Format, ds: &[Directive]) {
    let ctx = p.ctx();
    // A space before each directive except after an opening bracket and
    // before `,` or a closing bracket; `attr-dict` writes its own space.
    for (i, d) in ds.iter().enumerate() {
        let space = !(matches!(d, Directive::Punct(",") | Directive::AttrDict)
            || (i == 0 && p_last_is_open(p)));
        match d {
            Directive::AttrDict => p.attr_dict(op, &f.inline_attrs),
            Directive::OptAttr(a) => {
                if let Some(v) = ctx.attr(op, a) {
                    if space {
                        p.w(" ");
                    }
                    p.attr(&v.clone());
                }
            }
            Directive::Operands => {
                if !ctx.operands(op).is_empty() {
                    if space {
                        p.w(" ");
                    }
                    p.values(ctx.operands(op));
                }
            }
            _ => {
                if space {
                    p.w(" ");
                }
                match d {
                    Directive::Attr(a) => {
                        if let Some(v) = ctx.attr(op, a) {
                            p.attr(&v.clone());
                        }
                    }
                    Directive::OperandTypes => {
                        let ts: Vec<Type> = ctx
                            .operands(op)
                            .iter()
                            .map(|&v| ctx.ty(v).clone())
                            .collect();
                        p.type_list(&ts);
                    }
                    Directive::FirstOperandType => {
                        if let Some(&v) = ctx.operands(op).first() {
                            p.ty(&ctx.ty(v).clone());
                        }
                    }
                    Directive::ResultTypes => {
                        let ts: Vec<Type> =
                            ctx.results(op).iter().map(|&v| ctx.ty(v).clone()).collect();
                        p.type_list(&ts);
                    }
                    Directive::Regions => {
                        for (k, &r) in ctx.regions(op).to_vec().iter().enumerate() {
                            if k > 0 {
                                p.w(" ");
                            }
                            p.region(r, true);
                        }
                    }
                    Directive::Group(paren, inner) => {
                        p.w(if *paren { "(" } else { "[" });
                        print_group(p, op, f, inner);
                        p.w(if *paren { ")" } else { "]" });
                    }
                    Directive::Punct(s) | Directive::Keyword(s) => p.w(s),
                    Directive::AttrDict | Directive::Operands | Directive::OptAttr(_) => {
                        unreachable!()
                    }
                }
            }
        }
    }
}

/// Whether the directives print regions.
fn has_regions(ds: &[Directive]) -> bool {
    ds.iter().any(|d| match d {
        Directive::Regions => true,
        Directive::Group(_, inner) => has_regions(inner),
        _ => false,
    })
}

fn p_last_is_open(p: &Printer) -> bool {
    p.last_char().is_some_and(|c| c == '(' || c == '[')
}

/// What the directives read so far.
#[derive(Default)]
struct Parsed {
    operands: Vec<crate::ast::AstValueRef>,
    operand_types: Option<Vec<Type>>,
    first_type: Option<Type>,
    result_types: Option<Vec<Type>>,
    attrs: Vec<(String, Attribute)>,
    regions: Vec<ParsedRegion>,
}

/// Parses the custom form of an op declared with format `f`. Without
/// `type(results)`, the result types are left empty for the builder to
/// infer once the operands are resolved.
pub fn parse(cp: &mut CustomParser, f: &Format) -> Result<ParsedOp, SyntaxError> {
    let mut st = Parsed::default();
    parse_group(cp, &f.directives, &mut st)?;
    let n = st.operands.len();
    let types: Vec<Option<Type>> = match (st.operand_types, st.first_type) {
        (Some(ts), _) if ts.len() != n => {
            return Err(cp.error(format!("expected {n} operand types, but got {}", ts.len())))
        }
        (Some(ts), _) => ts.into_iter().map(Some).collect(),
        (None, Some(t)) => (0..n).map(|i| (i == 0).then(|| t.clone())).collect(),
        (None, None) => vec![None; n],
    };
    Ok(ParsedOp {
        successors: Vec::new(),
        operands: st.operands.into_iter().zip(types).collect(),
        result_types: st.result_types.unwrap_or_default(),
        attrs: st.attrs,
        regions: st.regions,
    })
}

fn parse_group(
    cp: &mut CustomParser,
    ds: &[Directive],
    st: &mut Parsed,
) -> Result<(), SyntaxError> {
    for d in ds {
        match d {
            Directive::Operands => st.operands = cp.value_list()?,
            Directive::Attr(name) => {
                let a = parse_attr(cp)?;
                st.attrs.push((name.to_string(), a));
            }
            Directive::OptAttr(name) => {
                if let Some(AstItemKind::Attr(a)) = cp.peek().map(|i| i.kind.clone()) {
                    cp.next_item();
                    st.attrs.push((name.to_string(), a));
                }
            }
            Directive::AttrDict => cp.optional_attr_dict(&mut st.attrs),
            Directive::OperandTypes => st.operand_types = Some(cp.type_list()?),
            Directive::FirstOperandType => st.first_type = Some(cp.expect_type()?),
            Directive::ResultTypes => st.result_types = Some(cp.type_list()?),
            Directive::Regions => {
                while let Some(region) = cp.try_region() {
                    st.regions.push(ParsedRegion {
                        region,
                        entry_args: None,
                    });
                }
            }
            Directive::Group(paren, inner) => {
                let mut g = if *paren {
                    cp.expect_paren()?
                } else {
                    cp.expect_square()?
                };
                parse_group(&mut g, inner, st)?;
                g.finish()?;
            }
            Directive::Punct(s) => cp.expect_punct(s)?,
            Directive::Keyword(k) => cp.expect_keyword(k)?,
        }
    }
    Ok(())
}

/// An inline attribute: a dialect attribute, symbol, string, keyword, or a
/// `[...]` list of those.
fn parse_attr(cp: &mut CustomParser) -> Result<Attribute, SyntaxError> {
    if let Some(mut list) = cp.try_square() {
        let mut items = Vec::new();
        while !list.at_end() {
            items.push(parse_attr(&mut list)?);
            if !list.try_punct(",") {
                break;
            }
        }
        list.finish()?;
        return Ok(Attribute::Array(items));
    }
    let item = cp.peek().map(|i| i.kind.clone());
    let a = match item {
        Some(AstItemKind::Attr(a)) => a,
        Some(AstItemKind::Symbol(s)) => Attribute::SymbolRef(s),
        Some(AstItemKind::Str(s)) => Attribute::Str(s),
        Some(AstItemKind::Keyword(k)) if k == "true" || k == "false" => {
            Attribute::Bool(k == "true")
        }
        // A bare word is read as the string it spells (`[re]` as `["re"]`):
        // the generic form has no bare-word attribute values, so keeping
        // it a keyword printed a generic form that did not parse again.
        Some(AstItemKind::Keyword(k)) => Attribute::Str(k),
        _ => return Err(cp.error("expected an attribute")),
    };
    cp.next_item();
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_directives_and_groups() {
        let f =
            Format::parse("(operands) $gens attr-dict : type(operands) -> type(results) regions")
                .unwrap();
        assert_eq!(f.inline_attrs, ["gens"]);
        assert!(f.has_result_types);
        assert_eq!(
            f.directives[0],
            Directive::Group(true, vec![Directive::Operands])
        );
        assert_eq!(f.directives.len(), 8);
        let g = Format::parse("operands attr-dict : type(first)").unwrap();
        assert!(!g.has_result_types);
        assert!(Format::parse("operands )").is_err());
        assert!(Format::parse("( operands").is_err());
        assert!(Format::parse("type(bogus)").is_err());
        assert!(Format::parse("operands % x").is_err());
    }
}
