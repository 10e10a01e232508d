//! The `func` dialect: `func.func`, `func.return`, `func.call`.
//!
//! Custom forms:
//! `func.func @name(%a: T {attrs}, ...) -> (R {attrs}, ...) { body }` (the
//! dictionaries optional: [`ARG_ATTRS`], [`RES_ATTRS`]),
//! `func.return %a, %b : T, U`, `%r = func.call @f(%a) : (T) -> R`.

use smallvec::smallvec;

use ir::ast::{AstItemKind, SyntaxError};
use ir::custom::{CustomParser, ParsedOp, ParsedRegion};
use ir::interp::{Interp, RtValue, RunError};
use ir::printer::Printer;
use ir::spec::{Arity, OpSpec, Registry, Traits};
use ir::{Attribute, Context, OpId, Type};

/// The function type `(inputs) -> results` of a `func.func` op.
pub fn function_type(ctx: &Context, f: OpId) -> Option<(&[Type], &[Type])> {
    match ctx.attr(f, "function_type") {
        Some(Attribute::Type(Type::Function(ft))) => Some((&ft.inputs, &ft.results)),
        _ => None,
    }
}

/// The symbol name of a `func.func`.
pub fn func_name(ctx: &Context, f: OpId) -> Option<&str> {
    match ctx.attr(f, "sym_name") {
        Some(Attribute::Str(s)) | Some(Attribute::SymbolRef(s)) => Some(s),
        _ => None,
    }
}

/// The symbol a `func.call` op calls (its `callee` attribute), if it has one.
pub fn callee(ctx: &Context, call: OpId) -> Option<&str> {
    ctx.attr(call, "callee").and_then(|a| a.as_symbol())
}

/// Whether `func.func` op `f` is a declaration (MLIR's external function:
/// a signature and no body region). L0 links no external code: calling one
/// is an error in the interpreter and in both backends, and no pass inlines
/// it, runs loops that call it in parallel, or assumes anything about its
/// effects.
pub fn is_declaration(ctx: &Context, f: OpId) -> bool {
    ctx.regions(f).is_empty()
}

fn verify_func(ctx: &Context, op: OpId) -> Result<(), String> {
    let Some(name) = func_name(ctx, op) else {
        return Err("requires a 'sym_name' string attribute".into());
    };
    if !ir::types::is_valid_symbol(name) {
        return Err(format!(
            "'sym_name' must be a symbol name (not empty, no NUL character), but got \"{}\"",
            ir::attributes::escape_str(name)
        ));
    }
    let Some((inputs, results)) = function_type(ctx, op) else {
        return Err("requires a 'function_type' attribute of function type".into());
    };
    verify_signature_attrs(ctx, op, ARG_ATTRS, inputs.len())?;
    verify_signature_attrs(ctx, op, RES_ATTRS, results.len())?;
    if is_declaration(ctx, op) {
        // MLIR: a symbol declaration cannot have public visibility.
        let v = ctx.attr(op, "sym_visibility").and_then(|a| a.as_str());
        if !matches!(v, Some("private" | "nested")) {
            return Err(
                "a declaration without a body cannot be public: write 'func.func private'".into(),
            );
        }
        if ctx.attr(op, crate::gpu::KERNEL_ATTR).is_some() {
            return Err("a kernel needs a body".into());
        }
    } else {
        let b = ctx.op_block(op, 0);
        let args: Vec<&Type> = ctx.block_args(b).iter().map(|&a| ctx.ty(a)).collect();
        if args.len() != inputs.len() || args.iter().zip(inputs).any(|(a, t)| *a != t) {
            return Err("entry block argument types must match the function signature".into());
        }
    }
    let name = func_name(ctx, op).unwrap();
    let dup = ctx
        .iter_block(ctx.top)
        .filter(|&o| o != op && func_name(ctx, o) == Some(name))
        .count();
    if dup > 0 && ctx.op(op).parent == Some(ctx.top) {
        return Err(format!("redefinition of symbol '@{name}'"));
    }
    if ctx.attr(op, crate::gpu::KERNEL_ATTR).is_some() {
        crate::gpu::verify_kernel_func(ctx, op)?;
    }
    Ok(())
}

fn print_func(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let name = func_name(ctx, op).unwrap_or("<invalid>").to_string();
    let visibility = ctx.attr(op, "sym_visibility").and_then(|a| a.as_str());
    if let Some(v) = visibility.filter(|v| VISIBILITIES.contains(v)) {
        p.w(" ");
        p.w(v);
    }
    p.w(&format!(" {}(", ir::types::symbol_ref(&name)));
    let results: Vec<Type> = function_type(ctx, op)
        .map(|(_, r)| r.to_vec())
        .unwrap_or_default();
    let body = ctx.regions(op).first().copied();
    let arg_dicts = signature_attrs(ctx, op, ARG_ATTRS);
    let res_dicts = signature_attrs(ctx, op, RES_ATTRS);
    // ` {dict}` after parameter or result `i` where it has attributes.
    let dict = |p: &mut Printer, dicts: &Option<Vec<Attribute>>, i: usize| {
        if let Some(d) = dicts.as_ref().and_then(|d| d.get(i)) {
            if !matches!(d, Attribute::Dict(e) if e.is_empty()) {
                p.w(&format!(" {d}"));
            }
        }
    };
    match body {
        Some(r) => {
            for (i, &a) in ctx.block_args(ctx.region_block(r)).iter().enumerate() {
                if i > 0 {
                    p.w(", ");
                }
                p.arg_decl(a);
                dict(p, &arg_dicts, i);
            }
        }
        // A declaration: the parameter types only, as MLIR writes it.
        None => {
            let ins: Vec<Type> = function_type(ctx, op)
                .map(|(i, _)| i.to_vec())
                .unwrap_or_default();
            for (i, t) in ins.iter().enumerate() {
                if i > 0 {
                    p.w(", ");
                }
                p.w(&t.to_string());
                dict(p, &arg_dicts, i);
            }
        }
    }
    p.w(")");
    if !results.is_empty() {
        p.w(" -> ");
        if res_dicts.is_some() {
            p.w("(");
            for (i, t) in results.iter().enumerate() {
                if i > 0 {
                    p.w(", ");
                }
                p.w(&t.to_string());
                dict(p, &res_dicts, i);
            }
            p.w(")");
        } else {
            p.type_list(&results);
        }
    }
    let printed: &[&str] = if visibility.is_some_and(|v| VISIBILITIES.contains(&v)) {
        &[
            "sym_name",
            "function_type",
            "sym_visibility",
            ARG_ATTRS,
            RES_ATTRS,
        ]
    } else {
        &["sym_name", "function_type", ARG_ATTRS, RES_ATTRS]
    };
    let extra = ctx
        .op(op)
        .attrs
        .iter()
        .any(|(k, _)| !printed.contains(&k.as_str()));
    if extra {
        p.w(" attributes");
    }
    p.attr_dict(op, printed);
    if let Some(r) = body {
        p.w(" ");
        p.region(r, false);
    }
    Ok(())
}

/// The attribute that holds a function's parameter attributes (MLIR's
/// `arg_attrs`): an array of one dictionary per parameter, written
/// `%x: f64 {llvm.noalias}` in the custom form; absent when none has any.
pub const ARG_ATTRS: &str = "arg_attrs";
/// The same for results (`-> (f64 {a})`; MLIR's `res_attrs`).
pub const RES_ATTRS: &str = "res_attrs";

/// The dictionaries of `f`'s `key` ([`ARG_ATTRS`] or [`RES_ATTRS`]), when
/// it is an array of dictionaries.
pub fn signature_attrs(ctx: &Context, f: OpId, key: &str) -> Option<Vec<Attribute>> {
    match ctx.attr(f, key) {
        Some(Attribute::Array(ds)) if ds.iter().all(|d| matches!(d, Attribute::Dict(_))) => {
            Some(ds.clone())
        }
        _ => None,
    }
}

/// Checks that `f`'s `key` holds one dictionary per element of `of` (its
/// parameters or results).
fn verify_signature_attrs(ctx: &Context, f: OpId, key: &str, of: usize) -> Result<(), String> {
    let Some(a) = ctx.attr(f, key) else {
        return Ok(());
    };
    let what = if key == ARG_ATTRS {
        "parameter"
    } else {
        "result"
    };
    match a {
        Attribute::Array(ds) if ds.iter().all(|d| matches!(d, Attribute::Dict(_))) => {
            if ds.len() != of {
                return Err(format!(
                    "'{key}' holds {} dictionaries, but the function has {of} {what}(s)",
                    ds.len()
                ));
            }
            Ok(())
        }
        _ => Err(format!(
            "'{key}' must be an array of dictionaries, one per {what}"
        )),
    }
}

/// `T` or `(T {attrs}, ...)`: the types and a dictionary per type.
fn types_with_attrs(cp: &mut CustomParser) -> Result<(Vec<Type>, Vec<Attribute>), SyntaxError> {
    if let Some(t) = cp.try_type() {
        return Ok((vec![t], vec![Attribute::Dict(vec![])]));
    }
    let mut inner = cp.expect_paren()?;
    let (mut types, mut dicts) = (Vec::new(), Vec::new());
    if !inner.at_end() {
        loop {
            types.push(inner.expect_type()?);
            dicts.push(dict_of(inner.try_attr_dict().unwrap_or_default()));
            if !inner.try_punct(",") {
                break;
            }
        }
    }
    inner.finish()?;
    Ok((types, dicts))
}

fn dict_of(entries: Vec<ir::ast::AstAttrEntry>) -> Attribute {
    Attribute::Dict(entries.into_iter().map(|e| (e.name, e.value)).collect())
}

/// MLIR's symbol visibilities, written between `func.func` and the name and
/// kept as the `sym_visibility` string attribute.
const VISIBILITIES: [&str; 3] = ["public", "private", "nested"];

fn parse_func(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let visibility = VISIBILITIES.into_iter().find(|v| cp.try_keyword(v));
    let name = cp.expect_symbol()?;
    // `(%a: T, ...)`, or MLIR's types only `(T, ...)`, where the body's entry
    // block label names the arguments (the verifier checks they agree).
    let types_only = matches!(
        cp.peek().map(|i| &i.kind),
        Some(AstItemKind::Paren(items))
            if matches!(items.first().map(|i| &i.kind), Some(AstItemKind::Type(_)))
    );
    let (inputs, args, arg_dicts) = if types_only {
        let (types, dicts) = types_with_attrs(cp)?;
        (types, None, dicts)
    } else {
        let (args, dicts) = cp.arg_list_with_attrs()?;
        let dicts = dicts.into_iter().map(dict_of).collect();
        (
            args.iter().map(|a| a.ty.clone()).collect(),
            Some(args),
            dicts,
        )
    };
    let (results, res_dicts) = if cp.try_punct("->") {
        types_with_attrs(cp)?
    } else {
        (vec![], vec![])
    };
    let mut attrs = vec![
        ("sym_name".to_string(), Attribute::Str(name.clone())),
        (
            "function_type".to_string(),
            Attribute::Type(Type::function(inputs, results)),
        ),
    ];
    if let Some(v) = visibility {
        attrs.push(("sym_visibility".to_string(), Attribute::Str(v.to_string())));
    }
    for (key, dicts) in [(ARG_ATTRS, arg_dicts), (RES_ATTRS, res_dicts)] {
        if dicts
            .iter()
            .any(|d| !matches!(d, Attribute::Dict(e) if e.is_empty()))
        {
            attrs.push((key.to_string(), Attribute::Array(dicts)));
        }
    }
    cp.optional_attr_dict(&mut attrs);
    if cp.at_end() {
        // A declaration: no body region.
        if args.as_ref().is_some_and(|a| !a.is_empty()) {
            return Err(SyntaxError {
                offset: cp.op_loc,
                message: format!(
                    "the declaration '@{name}' names its parameters: write their types only, or give it a body"
                ),
            });
        }
        return Ok(ParsedOp {
            successors: Vec::new(),
            operands: vec![],
            result_types: vec![],
            attrs,
            regions: vec![],
        });
    }
    let region = cp.expect_region()?;
    Ok(ParsedOp {
        successors: Vec::new(),
        operands: vec![],
        result_types: vec![],
        attrs,
        regions: vec![ParsedRegion {
            region,
            entry_args: args,
        }],
    })
}

fn verify_return(ctx: &Context, op: OpId) -> Result<(), String> {
    let Some(f) = ctx.parent_op(op) else {
        return Err("must be nested in 'func.func'".into());
    };
    if !ctx.is(f, "func.func") {
        return Err("expects parent op 'func.func'".into());
    }
    let Some((_, results)) = function_type(ctx, f) else {
        return Ok(());
    };
    let got: Vec<&Type> = ctx.operands(op).iter().map(|&v| ctx.ty(v)).collect();
    if got.len() != results.len() {
        return Err(format!(
            "has {} operands, but enclosing function returns {}",
            got.len(),
            results.len()
        ));
    }
    for (i, (g, r)) in got.iter().zip(results).enumerate() {
        if *g != r {
            return Err(format!(
                "type of return operand {i} ('{g}') doesn't match function result type ('{r}')"
            ));
        }
    }
    Ok(())
}

/// Prints ` %a, %b {attrs} : T, U` (without operands: the attributes only).
pub fn print_terminator(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ops = p.ctx().operands(op).to_vec();
    print_values_attrs_types(p, op, &ops, &[]);
    Ok(())
}

/// Prints ` {attrs} %a, %b : T, U` for `vals` (a terminator's operands, or
/// some of them), with the attributes of `op` not in `skip`: MLIR's order
/// (`attr-dict ($operands^ : type($operands))?`).
pub fn print_values_attrs_types(p: &mut Printer, op: OpId, vals: &[ir::ValueId], skip: &[&str]) {
    let ctx = p.ctx();
    p.attr_dict(op, skip);
    if !vals.is_empty() {
        p.w(" ");
        p.values(vals);
    }
    if !vals.is_empty() {
        p.w(" : ");
        let tys: Vec<Type> = vals.iter().map(|&v| ctx.ty(v).clone()).collect();
        p.types(&tys);
    }
}

/// Parses `{attrs} %a, %b : T, U` (MLIR's order), `%a, %b {attrs} : T, U`,
/// `{attrs}` or nothing.
pub fn parse_terminator(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let mut attrs = Vec::new();
    cp.optional_attr_dict(&mut attrs);
    let vals = cp.value_list()?;
    if attrs.is_empty() {
        cp.optional_attr_dict(&mut attrs);
    }
    let mut tys = Vec::new();
    if !vals.is_empty() {
        cp.expect_punct(":")?;
        tys.push(cp.expect_type()?);
        while cp.try_punct(",") {
            tys.push(cp.expect_type()?);
        }
    }
    if tys.len() != vals.len() {
        return Err(cp.error(format!(
            "expected {} types, found {}",
            vals.len(),
            tys.len()
        )));
    }
    Ok(ParsedOp {
        operands: vals.into_iter().zip(tys.into_iter().map(Some)).collect(),
        attrs,
        ..Default::default()
    })
}

/// Terminator semantics: yield the operands.
pub fn interp_terminator(
    _: &mut Interp,
    _: OpId,
    args: &[RtValue],
) -> Result<smallvec::SmallVec<[RtValue; 2]>, RunError> {
    Ok(args.iter().cloned().collect())
}

fn verify_call(ctx: &Context, op: OpId) -> Result<(), String> {
    let Some(callee) = callee(ctx, op) else {
        return Err("requires a 'callee' symbol reference attribute".into());
    };
    let Some(f) = crate::builtin::lookup_from(ctx, op, callee) else {
        return Err(format!("'{callee}' does not reference a valid function"));
    };
    let Some((inputs, results)) = function_type(ctx, f) else {
        return Err(format!("'{callee}' does not reference a valid function"));
    };
    let args: Vec<&Type> = ctx.operands(op).iter().map(|&v| ctx.ty(v)).collect();
    if args.len() != inputs.len() {
        return Err("incorrect number of operands for callee".into());
    }
    for (i, (a, t)) in args.iter().zip(inputs).enumerate() {
        if *a != t {
            return Err(format!("operand type mismatch: expected operand type '{t}', but provided '{a}' for operand number {i}"));
        }
    }
    let res: Vec<&Type> = ctx.results(op).iter().map(|&v| ctx.ty(v)).collect();
    if res.len() != results.len() || res.iter().zip(results).any(|(a, b)| *a != b) {
        return Err("result type mismatch with the callee's signature".into());
    }
    Ok(())
}

fn print_call(p: &mut Printer, op: OpId) -> std::fmt::Result {
    let ctx = p.ctx();
    let callee = callee(ctx, op).unwrap_or("<invalid>");
    p.w(&format!(" {}(", ir::types::symbol_ref(callee)));
    p.values(ctx.operands(op));
    p.w(")");
    p.attr_dict(op, &["callee"]);
    p.w(" : (");
    let ins: Vec<Type> = ctx
        .operands(op)
        .iter()
        .map(|&v| ctx.ty(v).clone())
        .collect();
    p.types(&ins);
    p.w(") -> ");
    let outs: Vec<Type> = ctx.results(op).iter().map(|&v| ctx.ty(v).clone()).collect();
    if outs.len() == 1 {
        p.ty(&outs[0]);
    } else {
        p.w("(");
        p.types(&outs);
        p.w(")");
    }
    Ok(())
}

fn parse_call(cp: &mut CustomParser) -> Result<ParsedOp, SyntaxError> {
    let callee = cp.expect_symbol()?;
    let mut inner = cp.expect_paren()?;
    let vals = inner.value_list()?;
    inner.finish()?;
    let mut attrs = vec![("callee".to_string(), Attribute::SymbolRef(callee))];
    cp.optional_attr_dict(&mut attrs);
    cp.expect_punct(":")?;
    let ins = cp.type_list()?;
    cp.expect_punct("->")?;
    let outs = cp.type_list()?;
    if ins.len() != vals.len() {
        return Err(cp.error(format!(
            "expected {} operand types, found {}",
            vals.len(),
            ins.len()
        )));
    }
    Ok(ParsedOp {
        successors: Vec::new(),
        operands: vals.into_iter().zip(ins.into_iter().map(Some)).collect(),
        result_types: outs,
        attrs,
        regions: vec![],
    })
}

fn interp_call(
    it: &mut Interp,
    op: OpId,
    args: &[RtValue],
) -> Result<smallvec::SmallVec<[RtValue; 2]>, RunError> {
    let ctx = it.ctx;
    let callee = callee(ctx, op)
        .ok_or_else(|| RunError::at(ctx, op, "missing callee"))?
        .to_string();
    let r = it.call(&callee, args, ctx.loc(op))?;
    Ok(r.into_iter().collect())
}

fn interp_func(
    _: &mut Interp,
    op: OpId,
    _: &[RtValue],
) -> Result<smallvec::SmallVec<[RtValue; 2]>, RunError> {
    let _ = op;
    Ok(smallvec![])
}

/// Registers `func.func`, `func.return`, `func.call`.
/// `func.func`'s generic-form attributes: as stored.
fn func_generic_attrs(ctx: &Context, op: OpId) -> Vec<(String, Attribute)> {
    ctx.op(op).attrs.iter().cloned().collect()
}

/// Reads `func.func`'s generic attributes in the order its custom form
/// stores them (`sym_name`, `function_type`, `sym_visibility`, then the
/// others as written), so that both forms build the same op and print the
/// same: MLIR writes them sorted by name.
fn func_parse_generic_attrs(_: &str, attrs: &mut [(String, Attribute)]) {
    let rank = |k: &str| match k {
        "sym_name" => 0,
        "function_type" => 1,
        "sym_visibility" => 2,
        ARG_ATTRS => 3,
        RES_ATTRS => 4,
        _ => 5,
    };
    attrs.sort_by_key(|(k, _)| rank(k));
}

pub fn register(r: &mut Registry) {
    r.register(
        OpSpec::new(
            "func.func",
            "a function: a symbol with a body region, or a declaration without one",
        )
        .regions(Arity::Between(0, 1))
        .optional_body()
        .multi_block()
        .traits(Traits::ISOLATED_FROM_ABOVE | Traits::SYMBOL | Traits::REGIONS_NEED_TERMINATOR)
        .verify(verify_func)
        .interpret(interp_func)
        .generic_attrs(func_generic_attrs, func_parse_generic_attrs)
        .custom_form(print_func, parse_func),
    );
    r.register(
        OpSpec::new("func.return", "returns from a function")
            .operands(Arity::AtLeast(0))
            .traits(Traits::TERMINATOR | Traits::PURE)
            .verify(verify_return)
            .interpret(interp_terminator)
            .custom_form(print_terminator, parse_terminator),
    );
    r.register(
        OpSpec::new("func.call", "calls a function by symbol")
            .operands(Arity::AtLeast(0))
            .results(Arity::AtLeast(0))
            .traits(Traits::READS | Traits::WRITES)
            .verify(verify_call)
            .interpret(interp_call)
            .custom_form(print_call, parse_call),
    );
}
