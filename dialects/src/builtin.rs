//! `builtin.module` nested in a module: MLIR's named submodule,
//! `module @name attributes {...} { ops }`.
//!
//! The file's own module is the context's top block, not an op; a module
//! written inside it is this op: one region of one block without a
//! terminator, isolated from above, holding functions and further modules
//! (a symbol table of its own). L0 keeps such modules, verifies them and
//! prints them back, and the passes that walk every op (`canonicalize`,
//! `cse`, `dce`) simplify the functions inside them; `--run` and the code
//! generators take the top-level functions only. Symbol references have
//! no nested form (`@a::@f`), so a function inside a module is called from
//! its own module only, and (an L0 restriction, so that a top-level lookup
//! never finds the wrong function) no symbol inside a module may repeat a
//! top-level symbol's name.

use ir::ast::SyntaxError;
use ir::custom::{CustomParser, ParsedOp, ParsedRegion};
use ir::printer::Printer;
use ir::spec::{Arity, OpSpec, Registry, Traits};
use ir::{Attribute, Context, OpId};

/// The op's name.
pub const MODULE: &str = "builtin.module";

/// The function or module named `name` in the symbol table nearest to
/// `from`: the body of the closest `builtin.module` around it, or the top
/// level (MLIR's lookup: a symbol table's own symbols only).
pub fn lookup_from(ctx: &Context, from: OpId, name: &str) -> Option<OpId> {
    let mut p = ctx.parent_op(from);
    while let Some(q) = p {
        if ctx.is(q, MODULE) {
            let body = ctx.op_block(q, 0);
            return ctx
                .iter_block(body)
                .find(|&o| sym_name(ctx, o) == Some(name));
        }
        p = ctx.parent_op(q);
    }
    ctx.lookup_symbol(name)
}

fn sym_name(ctx: &Context, op: OpId) -> Option<&str> {
    ctx.attr(op, "sym_name").and_then(|a| a.as_str())
}

fn verify(ctx: &Context, op: OpId) -> Result<(), String> {
    if let Some(a) = ctx.attr(op, "sym_name") {
        match a.as_str() {
            Some(s) if ir::types::is_valid_symbol(s) => {}
            _ => return Err("'sym_name' must be a non-empty string".into()),
        }
    }
    let body = ctx.op_block(op, 0);
    if ctx.region(ctx.regions(op)[0]).blocks.len() != 1 || !ctx.block_args(body).is_empty() {
        return Err("the body must be one block without arguments".into());
    }
    let mut seen: Vec<&str> = Vec::new();
    for o in ctx.iter_block(body) {
        if !ctx.is(o, "func.func") && !ctx.is(o, MODULE) {
            return Err(format!(
                "holds '{}': a nested module holds functions and modules only",
                ctx.op_name(o)
            ));
        }
        let Some(name) = sym_name(ctx, o) else {
            continue;
        };
        if seen.contains(&name) {
            return Err(format!("redefinition of symbol '@{name}'"));
        }
        seen.push(name);
        if ctx
            .iter_block(ctx.top)
            .any(|t| sym_name(ctx, t) == Some(name))
        {
            return Err(format!(
                "'@{name}' is also a top-level symbol: L0 needs the names inside a nested module to differ from the top level's"
            ));
        }
    }
    Ok(())
}

fn print(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    if let Some(n) = sym_name(ctx, op) {
        p.w(&format!(" {}", ir::types::symbol_ref(n)));
    }
    if ctx.op(op).attrs.iter().any(|(k, _)| k != "sym_name") {
        p.w(" attributes");
        p.attr_dict(op, &["sym_name"]);
    }
    p.w(" ");
    let r = ctx.regions(op)[0];
    p.region(r, false);
    Ok(())
}

fn parse(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let mut attrs = Vec::new();
    if let Ok(name) = cp.expect_symbol() {
        attrs.push(("sym_name".to_string(), Attribute::Str(name)));
    }
    if cp.try_keyword("attributes") {
        let d = cp
            .try_attr_dict()
            .ok_or_else(|| cp.error("expected an attribute dictionary after 'attributes'"))?;
        attrs.extend(d.into_iter().map(|e| (e.name, e.value)));
    }
    // An empty body `{}` reads as an empty dictionary: one empty block.
    let region = match cp.try_region() {
        Some(r) => r,
        None => match cp.try_attr_dict() {
            Some(d) if d.is_empty() => ir::ast::AstRegion::new(Vec::new(), cp.op_loc),
            _ => return Err(cp.error("expected the module's body '{ ... }'")),
        },
    };
    Ok(ParsedOp {
        successors: Vec::new(),
        operands: vec![],
        result_types: vec![],
        attrs,
        regions: vec![ParsedRegion {
            region,
            entry_args: None,
        }],
    })
}

/// Registers `builtin.module`.
pub fn register(r: &mut Registry) {
    r.register(
        OpSpec::new(MODULE, "a named submodule: functions and modules")
            .regions(Arity::Exactly(1))
            .traits(Traits::ISOLATED_FROM_ABOVE | Traits::SYMBOL)
            .verify(verify)
            .custom_form(print, parse),
    );
}
