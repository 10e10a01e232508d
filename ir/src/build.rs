//! Builds a [`Context`] from the syntax tree: resolves value names in nested
//! scopes, checks stated types against the values, runs custom-form parsers
//! and creates the operations (raw: no folding or hash-consing, so the
//! printed IR is what was written).

use hashbrown::HashTable;
use std::rc::Rc;

use crate::ast::*;
use crate::attributes::Attribute;
use crate::context::{BlockId, Context, Loc, RegionId, Source, ValueId};
use crate::custom::{CustomParser, ParsedOp, ParsedRegion};
use crate::diag::Diagnostic;
use crate::names::{name_hash, name_hash_key, Name};
use crate::parser::{CustomLine, GenericLine, RegionEvent};
use crate::spec::{OpKind, OpState, Registry, Traits};
use crate::types::Type;
use smallvec::SmallVec;

/// Value names in scope: one table per block, and whether the block's op is
/// isolated from above. An entry (8 bytes) is a value and the short key of
/// the name it was defined under ([`name_hash_key`]; 0 for a name without
/// one), hashed through the name. Names with keys, as generated IR's
/// numbered names are, compare by key: a lookup reads the table alone.
/// Others compare by text, read through the value's record.
struct Scopes {
    frames: Vec<(HashTable<(u32, ValueId)>, bool)>,
    /// The block labels of each region being built, innermost last.
    blocks: Vec<BlockTable>,
    /// The file's aliases, for regions read lazily.
    aliases: Rc<crate::ast::Aliases>,
}

/// The labels of one region's blocks: each block, whether its label was
/// seen yet (a branch may name a block further down), and where it was
/// first named.
#[derive(Default)]
struct BlockTable {
    labels: std::collections::HashMap<String, (BlockId, bool, Offset)>,
}

impl BlockTable {
    /// The block labeled `label` (created on its first mention).
    fn get(&mut self, ctx: &mut Context, label: &str, loc: Offset) -> BlockId {
        if let Some(&(b, _, _)) = self.labels.get(label) {
            return b;
        }
        let b = ctx.new_block();
        ctx.set_block_label(b, label);
        self.labels.insert(label.to_string(), (b, false, loc));
        b
    }
    /// Places the block labeled `label` at the end of region `r`.
    fn define(
        &mut self,
        ctx: &mut Context,
        r: RegionId,
        label: &str,
        loc: Offset,
    ) -> Result<BlockId, Diagnostic> {
        let b = self.get(ctx, label, loc);
        let entry = self.labels.get_mut(label).expect("just added");
        if entry.1 {
            return Err(diag(loc, format!("redefinition of block '^{label}'")));
        }
        entry.1 = true;
        ctx.push_block(r, b);
        Ok(b)
    }
    /// Errors for a block that was named but never defined.
    fn check(&self) -> Result<(), Diagnostic> {
        let missing = self
            .labels
            .iter()
            .filter(|(_, &(_, placed, _))| !placed)
            .min_by_key(|(_, &(_, _, loc))| loc);
        match missing {
            Some((label, &(_, _, loc))) => Err(diag(
                loc,
                format!("reference to an undefined block '^{label}'"),
            )),
            None => Ok(()),
        }
    }
}

impl Scopes {
    /// Opens the scope of a region: its values and its block labels.
    fn enter_region(&mut self, n: usize, isolated: bool) {
        self.frames.push((Scopes::table(n), isolated));
        self.blocks.push(BlockTable::default());
    }
    /// Closes the innermost region's scope; errors for a block named but
    /// never defined there.
    fn leave_region(&mut self) -> Result<(), Diagnostic> {
        self.frames.pop();
        self.blocks.pop().map_or(Ok(()), |t| t.check())
    }
    /// A table for about `n` names.
    fn table(n: usize) -> HashTable<(u32, ValueId)> {
        HashTable::with_capacity(n)
    }
    fn lookup(&self, ctx: &Context, name: &str) -> Option<ValueId> {
        let (h, key) = name_hash_key(name);
        self.lookup_hashed(ctx, name, h, key)
    }
    /// [`Scopes::lookup`] of `name`, whose hash and key are `h` and `key`.
    fn lookup_hashed(&self, ctx: &Context, name: &str, h: u64, key: u32) -> Option<ValueId> {
        let eq = |&(k, v): &(u32, ValueId)| {
            k == key && (key != 0 || value_name(ctx, v).is_some_and(|n| ctx.name_text(n) == name))
        };
        for (map, isolated) in self.frames.iter().rev() {
            if let Some(&(_, v)) = map.find(h, eq) {
                return Some(v);
            }
            if *isolated {
                break;
            }
        }
        None
    }
    /// Puts `v` in scope under its name.
    fn define(&mut self, ctx: &Context, v: ValueId, loc: Offset) -> Result<(), Diagnostic> {
        let Some(n) = ctx.value(v).name else {
            return Err(diag(
                loc,
                "internal error: a defined value without a name".into(),
            ));
        };
        let name = ctx.name_text(n);
        let (h, key) = name_hash_key(name);
        if self.lookup_hashed(ctx, name, h, key).is_some() {
            return Err(diag(loc, format!("redefinition of SSA value '%{name}'")));
        }
        self.frames
            .last_mut()
            .unwrap()
            .0
            .insert_unique(h, (key, v), |&(_, w)| {
                value_name(ctx, w).map_or(0, |m| name_hash(ctx.name_text(m)))
            });
        Ok(())
    }
}

/// The name `v` was defined under.
fn value_name(ctx: &Context, v: ValueId) -> Option<Name> {
    ctx.value(v).name
}

/// A terminator without operands named `term` (`scf.yield`), at `loc`, that
/// the builder adds itself (an implicit terminator, an empty region's).
fn terminator_op(term: &str, loc: Offset) -> AstOp {
    AstOp {
        results: vec![],
        name: term.to_string(),
        loc,
        body: AstOpBody::Custom(vec![]),
    }
}

fn diag(loc: Offset, msg: String) -> Diagnostic {
    Diagnostic::syntax(Loc(loc as u32), msg)
}

/// Builds the module `ast` into a new context over `registry`.
///
/// Errors: unknown ops, undefined or redefined values, type mismatches
/// between a use and the value, result-count mismatches, custom-form errors.
pub fn build_module(
    ast: &AstModule,
    registry: Rc<Registry>,
    source: Option<Rc<Source>>,
) -> Result<Context, Diagnostic> {
    let mut ctx = Context::new(registry);
    if let Some(s) = &source {
        // About one op and one value per 40 bytes of text (a generic op line
        // is 50-70): reserving up front saves the copies of arena growth, and
        // untouched capacity costs address space, not memory.
        ctx.reserve(s.text.len() / 40, s.text.len() / 40);
        ctx.reserve_names(s.text.len() / 6);
    }
    ctx.source = source;
    ctx.module_name = ast.name.clone();
    ctx.module_attrs = attrs_of(&ast.attrs);
    let mut scopes = Scopes {
        frames: vec![(Scopes::table(0), true)],
        blocks: Vec::new(),
        aliases: ast.aliases.clone(),
    };
    let top = ctx.top;
    for op in &ast.ops {
        build_op(&mut ctx, &mut scopes, op, top)?;
    }
    Ok(ctx)
}

fn resolve(
    ctx: &Context,
    scopes: &Scopes,
    r: &AstValueRef,
    expected: Option<&Type>,
) -> Result<ValueId, Diagnostic> {
    let v = match r.index {
        None => scopes.lookup(ctx, &r.name),
        Some(i) => scopes.lookup(ctx, &format!("{}#{i}", r.name)).or_else(|| {
            if i == 0 {
                scopes.lookup(ctx, &r.name)
            } else {
                None
            }
        }),
    };
    let shown = match r.index {
        Some(i) => format!("%{}#{i}", r.name),
        None => format!("%{}", r.name),
    };
    let v = v.ok_or_else(|| diag(r.loc, format!("use of undeclared SSA value '{shown}'")))?;
    if let Some(t) = expected {
        if ctx.ty(v) != t {
            return Err(diag(
                r.loc,
                format!(
                    "use of value '{shown}' expects different type than prior uses: '{t}' vs '{}'",
                    ctx.ty(v)
                ),
            ));
        }
    }
    Ok(v)
}

fn build_op(
    ctx: &mut Context,
    scopes: &mut Scopes,
    op: &AstOp,
    block: BlockId,
) -> Result<(), Diagnostic> {
    let registry = ctx.registry().clone();
    let kind = registry
        .kind(&op.name)
        .ok_or_else(|| diag(op.loc, format!("unknown operation '{}'", op.name)))?;
    let spec = registry.spec(kind);
    let num_results: usize = op.results.iter().map(|r| r.count).sum();

    let parsed: ParsedOp = match &op.body {
        AstOpBody::Generic(g) => {
            if g.operands.len() != g.operand_types.len() {
                return Err(diag(
                    g.type_loc,
                    format!(
                        "{} operands present, but expected {}",
                        g.operands.len(),
                        g.operand_types.len()
                    ),
                ));
            }
            let mut attrs: Vec<(String, Attribute)> = g
                .attrs
                .iter()
                .map(|e| (e.name.clone(), e.value.clone()))
                .collect();
            let mut successors = Vec::new();
            if !g.successors.is_empty() {
                let counts = match spec.successor_counts {
                    Some(f) => f(&mut attrs, g.operands.len(), g.successors.len()),
                    None => Err(format!("'{}' takes no successors", op.name)),
                }
                .map_err(|m| diag(g.successors[0].1, m))?;
                if counts.len() != g.successors.len() {
                    return Err(diag(
                        g.successors[0].1,
                        format!(
                            "'{}' forwards operands to {} successors, but {} are given",
                            op.name,
                            counts.len(),
                            g.successors.len()
                        ),
                    ));
                }
                for ((label, loc), n) in g.successors.iter().zip(counts) {
                    successors.push((label.clone(), *loc, n));
                }
            }
            ParsedOp {
                successors,
                operands: g
                    .operands
                    .iter()
                    .cloned()
                    .zip(g.operand_types.iter().cloned().map(Some))
                    .collect(),
                result_types: g.result_types.clone(),
                attrs: {
                    if let Some(f) = spec.parse_generic_attrs {
                        f(spec.name, &mut attrs);
                    }
                    attrs
                },
                regions: g
                    .regions
                    .iter()
                    // MLIR's declaration: one region without blocks.
                    .filter(|r| {
                        !(spec.optional_body
                            && g.regions.len() == 1
                            && r.blocks.is_empty()
                            && r.lazy_end.is_none_or(|end| {
                                ctx.source.as_ref().is_some_and(|s| {
                                    s.text
                                        .as_str()
                                        .get(r.loc + 1..end)
                                        .is_some_and(|t| t.trim().is_empty())
                                })
                            }))
                    })
                    .map(|r| {
                        let mut region = r.clone();
                        if g.result_types.is_empty() {
                            region.empty_terminator = spec.empty_region_terminator;
                        }
                        ParsedRegion {
                            region,
                            entry_args: None,
                        }
                    })
                    .collect(),
            }
        }
        AstOpBody::Custom(items) => {
            let end = items.last().map(|i| i.loc).unwrap_or(op.loc);
            let mut cp = CustomParser::new(items, op.loc, end, num_results);
            cp.source = ctx.source.clone();
            let Some(parse) = spec.parse else {
                if let Some(f) = &spec.format {
                    let p =
                        crate::format::parse(&mut cp, f).map_err(|e| diag(e.offset, e.message))?;
                    cp.finish().map_err(|e| diag(e.offset, e.message))?;
                    return finish_op(ctx, scopes, op, block, kind, p, true);
                }
                return Err(diag(
                    op.loc,
                    format!(
                        "operation '{}' has no custom form; write it in the generic form",
                        op.name
                    ),
                ));
            };
            let p = parse(&mut cp).map_err(|e| diag(e.offset, e.message))?;
            cp.finish().map_err(|e| diag(e.offset, e.message))?;
            p
        }
    };

    finish_op(ctx, scopes, op, block, kind, parsed, false)
}

/// Resolves a parsed op's operands, infers its result types when its
/// declarative format left them out (`infer`), checks the result count,
/// builds its regions and inserts it.
fn finish_op(
    ctx: &mut Context,
    scopes: &mut Scopes,
    op: &AstOp,
    block: BlockId,
    kind: OpKind,
    mut parsed: ParsedOp,
    infer: bool,
) -> Result<(), Diagnostic> {
    let registry = ctx.registry().clone();
    let spec = registry.spec(kind);
    let isolated = spec.traits.contains(Traits::ISOLATED_FROM_ABOVE);
    let num_results: usize = op.results.iter().map(|r| r.count).sum();
    let mut operands = Vec::with_capacity(parsed.operands.len());
    for (r, t) in &parsed.operands {
        operands.push(resolve(ctx, scopes, r, t.as_ref())?);
    }
    if infer && parsed.result_types.is_empty() {
        if let Some(f) = spec.infer {
            let types: Vec<Type> = operands.iter().map(|&v| ctx.ty(v).clone()).collect();
            match f(&types, &parsed.attrs) {
                Some(ts) => parsed.result_types = ts.into_vec(),
                None => {
                    return Err(diag(
                        op.loc,
                        format!(
                            "cannot infer the result types of '{}' from operand types ({}); check the operands",
                            op.name,
                            types.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ")
                        ),
                    ))
                }
            }
        }
    }
    if num_results != parsed.result_types.len() {
        return Err(diag(
            op.loc,
            format!(
                "operation defines {} results but was provided {} to bind",
                parsed.result_types.len(),
                num_results
            ),
        ));
    }
    let mut successors: SmallVec<[(BlockId, u32); 2]> = SmallVec::new();
    let forwarded: u32 = parsed.successors.iter().map(|s| s.2).sum();
    if forwarded as usize > operands.len() {
        return Err(diag(op.loc, "internal error: successor operands".into()));
    }
    for (label, loc, n) in &parsed.successors {
        let Some(table) = scopes.blocks.last_mut() else {
            return Err(diag(
                *loc,
                format!("reference to block '^{label}' outside of a region"),
            ));
        };
        successors.push((table.get(ctx, label, *loc), *n));
    }
    let mut regions: Vec<RegionId> = Vec::with_capacity(parsed.regions.len());
    for pr in &parsed.regions {
        regions.push(build_region(ctx, scopes, pr, isolated)?);
    }
    let st = OpState {
        kind,
        operands: operands.into(),
        result_types: parsed.result_types.into(),
        attrs: parsed.attrs,
        regions: regions.into(),
        successors,
        loc: Loc(op.loc as u32),
        existing: None,
    };
    let id = ctx.create_op(
        st.kind,
        &st.operands,
        &st.result_types,
        st.attrs,
        &st.regions,
        st.loc,
    );
    if !st.successors.is_empty() {
        ctx.set_successors(id, &st.successors);
    }
    ctx.insert_op(id, block, None);
    let mut k = 0;
    for r in &op.results {
        for i in 0..r.count {
            let v = ctx.result(id, k);
            k += 1;
            if r.count == 1 {
                ctx.set_name(v, Some(&r.name));
            } else {
                ctx.set_name(v, Some(&format!("{}#{i}", r.name)));
            }
            scopes.define(ctx, v, r.loc)?;
        }
    }
    if let Some(f) = spec.desugar {
        f(ctx, id);
    }
    Ok(())
}

fn build_region(
    ctx: &mut Context,
    scopes: &mut Scopes,
    pr: &ParsedRegion,
    isolated: bool,
) -> Result<RegionId, Diagnostic> {
    let r = ctx.new_region();
    if let Some(end) = pr.region.lazy_end {
        stream_region(ctx, scopes, pr, isolated, r, end)?;
        return Ok(r);
    }
    scopes.enter_region(0, isolated);
    for (bi, ab) in pr.region.blocks.iter().enumerate() {
        let b = match &ab.label {
            Some(l) => scopes
                .blocks
                .last_mut()
                .expect("entered")
                .define(ctx, r, l, ab.loc)?,
            None => {
                let b = ctx.new_block();
                ctx.push_block(r, b);
                b
            }
        };
        let args = match (&pr.entry_args, bi) {
            (Some(a), 0) => {
                if !ab.args.is_empty() {
                    return Err(diag(
                        ab.loc,
                        "block arguments are given by the op header".into(),
                    ));
                }
                a
            }
            _ => &ab.args,
        };
        for a in args {
            let v = ctx.add_block_arg(b, a.ty.clone(), Some(&a.name));
            scopes.define(ctx, v, a.loc)?;
        }
        for op in &ab.ops {
            build_op(ctx, scopes, op, b)?;
        }
    }
    scopes.leave_region()?;
    if pr.region.blocks.is_empty() {
        // `{}`: a region with one empty block, so that the verifier reports a
        // missing terminator at the op instead of failing elsewhere; or,
        // where the op's spec gives one, a block holding its terminator.
        let b = ctx.new_block();
        ctx.push_block(r, b);
        if let Some(term) = pr.region.empty_terminator {
            scopes.enter_region(0, isolated);
            build_op(ctx, scopes, &terminator_op(term, pr.region.loc), b)?;
            scopes.leave_region()?;
        }
    }
    Ok(r)
}

/// Builds a [`GenericLine`] without allocating a syntax tree node. Anything
/// out of the ordinary (an unknown op, a count or type mismatch, an undefined
/// operand, an operand with a `#N` suffix) goes to [`build_op`] instead, so
/// that every diagnostic comes from one place.
fn build_line(
    ctx: &mut Context,
    scopes: &mut Scopes,
    line: &GenericLine<'_>,
    block: BlockId,
) -> Result<(), Diagnostic> {
    let direct = ctx.registry().kind(line.name).filter(|_| {
        line.operands.len() == line.operand_types.len()
            && line.results.len() == line.result_types.len()
            && line.operands.iter().all(|&(_, index, _)| index.is_none())
    });
    let operands = line
        .operands
        .iter()
        .zip(&line.operand_types)
        .map(|(&(name, _, _), ty)| (name, ty));
    let plain = direct.and_then(|kind| {
        build_plain(
            ctx,
            scopes,
            kind,
            operands,
            &line.result_types,
            &line.results,
            line.loc,
            block,
        )
    });
    plain.unwrap_or_else(|| build_op(ctx, scopes, &line.to_ast(), block))
}

/// Builds a [`CustomLine`] of an op whose spec declares the same-type custom
/// form without a syntax tree node; anything else goes to [`build_op`], as in
/// [`build_line`].
fn build_custom_line(
    ctx: &mut Context,
    scopes: &mut Scopes,
    line: &CustomLine<'_>,
    block: BlockId,
) -> Result<(), Diagnostic> {
    let direct = ctx
        .registry()
        .kind(line.name)
        .filter(|&k| ctx.registry().spec(k).same_type_form);
    let operands = line.operands.iter().map(|&(name, _)| (name, &line.ty));
    let results = [line.result];
    let plain = direct.and_then(|kind| {
        let types = std::slice::from_ref(&line.ty);
        build_plain(
            ctx, scopes, kind, operands, types, &results, line.loc, block,
        )
    });
    plain.unwrap_or_else(|| build_op(ctx, scopes, &line.to_ast(), block))
}

/// The common end of [`build_line`] and [`build_custom_line`]: creates an op
/// of `kind` without attributes or regions, whose operands are the values
/// named in `operands` (each of the paired type) and whose results, of
/// `result_types`, take the names in `results`; inserts it at the end of
/// `block`. `None`, with nothing built, when an operand is undefined or of
/// another type (the caller then takes the general path for its message).
#[allow(clippy::too_many_arguments)]
fn build_plain<'t>(
    ctx: &mut Context,
    scopes: &mut Scopes,
    kind: OpKind,
    operands: impl Iterator<Item = (&'t str, &'t Type)>,
    result_types: &[Type],
    results: &[(&str, Offset)],
    loc: Offset,
    block: BlockId,
) -> Option<Result<(), Diagnostic>> {
    let mut values: SmallVec<[ValueId; 4]> = SmallVec::new();
    for (name, ty) in operands {
        let v = scopes.lookup(ctx, name).filter(|&v| ctx.ty(v) == ty)?;
        values.push(v);
    }
    let id = ctx.create_op(
        kind,
        &values,
        result_types,
        Vec::new(),
        &[],
        Loc(loc as u32),
    );
    ctx.insert_op(id, block, None);
    for (k, &(name, loc)) in results.iter().enumerate() {
        let v = ctx.result(id, k);
        ctx.set_name(v, Some(name));
        if let Err(d) = scopes.define(ctx, v, loc) {
            return Some(Err(d));
        }
    }
    Some(Ok(()))
}

/// Builds the lazy region `pr` (its `}` at `end`) into `r` while the parser
/// reads it, one op at a time: the same checks and results as the eager path
/// in [`build_region`], without a syntax tree of the body.
fn stream_region(
    ctx: &mut Context,
    scopes: &mut Scopes,
    pr: &ParsedRegion,
    isolated: bool,
    r: RegionId,
    end: Offset,
) -> Result<(), Diagnostic> {
    let Some(source) = ctx.source.clone() else {
        return Err(diag(
            pr.region.loc,
            "internal error: lazy region without source".into(),
        ));
    };
    // About one named value per 50 bytes of body: sized up front, the map
    // of a large body never rehashes.
    scopes.enter_region((end - pr.region.loc) / 50, isolated);
    // The block being built (the last one begun).
    let mut block: Option<BlockId> = None;
    // A build error, kept while the parser unwinds.
    let mut failure: Option<Diagnostic> = None;
    let start_block = |ctx: &mut Context,
                       scopes: &mut Scopes,
                       block: &mut Option<BlockId>,
                       label: Option<&AstBlock>,
                       loc: Offset|
     -> Result<BlockId, Diagnostic> {
        let entry = block.is_none();
        let b = match label.and_then(|l| l.label.as_deref()) {
            Some(name) => scopes
                .blocks
                .last_mut()
                .expect("entered")
                .define(ctx, r, name, loc)?,
            None => {
                let b = ctx.new_block();
                ctx.push_block(r, b);
                b
            }
        };
        *block = Some(b);
        let args = match (&pr.entry_args, label) {
            (Some(a), l) if entry => {
                if l.is_some_and(|l| !l.args.is_empty()) {
                    return Err(diag(
                        loc,
                        "block arguments are given by the op header".into(),
                    ));
                }
                a.as_slice()
            }
            (_, Some(l)) => l.args.as_slice(),
            (_, None) => &[],
        };
        for a in args {
            let v = ctx.add_block_arg(b, a.ty.clone(), Some(&a.name));
            scopes.define(ctx, v, a.loc)?;
        }
        Ok(b)
    };
    let aliases = scopes.aliases.clone();
    let mut sink = |ev: RegionEvent| -> Result<(), SyntaxError> {
        // The text before this op has been read: a mapped input's pages
        // can go back to the operating system.
        let at = match &ev {
            RegionEvent::Label(l) => l.loc,
            RegionEvent::Op(op) => op.loc,
            RegionEvent::Custom(line) => line.loc,
            RegionEvent::Line(line) => line.loc,
        };
        source.text.release_before(at);
        let res = match ev {
            RegionEvent::Label(l) => {
                start_block(ctx, scopes, &mut block, Some(&l), l.loc).map(|_| ())
            }
            RegionEvent::Op(op) => {
                let b = match block {
                    Some(b) => Ok(b),
                    None => start_block(ctx, scopes, &mut block, None, op.loc),
                };
                b.and_then(|b| build_op(ctx, scopes, &op, b))
            }
            RegionEvent::Custom(line) => {
                let b = match block {
                    Some(b) => Ok(b),
                    None => start_block(ctx, scopes, &mut block, None, line.loc),
                };
                b.and_then(|b| build_custom_line(ctx, scopes, line, b))
            }
            RegionEvent::Line(line) => {
                let b = match block {
                    Some(b) => Ok(b),
                    None => start_block(ctx, scopes, &mut block, None, line.loc),
                };
                b.and_then(|b| build_line(ctx, scopes, line, b))
            }
        };
        res.map_err(|d| {
            let e = SyntaxError {
                offset: d.loc.offset().unwrap_or(0),
                message: String::new(),
            };
            failure = Some(d);
            e
        })
    };
    let parsed = crate::parser::stream_region(&source.text, pr.region.loc, &aliases, &mut sink);
    if let Some(d) = failure {
        return Err(d);
    }
    parsed.map_err(|e| diag(e.offset, e.message))?;
    match (block, pr.region.implicit_terminator) {
        (None, None) => match pr.region.empty_terminator {
            // `{}` where the op's spec gives a terminator: a block with it.
            Some(term) => {
                let b = start_block(ctx, scopes, &mut block, None, pr.region.loc)?;
                build_op(ctx, scopes, &terminator_op(term, pr.region.loc), b)?;
            }
            // `{}`: one empty block (the verifier then reports the missing
            // terminator at the op).
            None => {
                let b = ctx.new_block();
                ctx.push_block(r, b);
            }
        },
        // Several blocks write their own terminators (MLIR's implicit
        // terminator is for a region of one block).
        (Some(_), Some(_)) if ctx.region(r).blocks.len() > 1 => {}
        (b, Some(term)) => {
            let b = match b {
                Some(b) => b,
                None => start_block(ctx, scopes, &mut block, None, pr.region.loc)?,
            };
            let last = ctx.block(b).last;
            let has = last.is_some_and(|o| ctx.op_name(o) == term);
            if !has {
                let at = last
                    .map(|o| ctx.op(o).loc.0 as Offset)
                    .unwrap_or(pr.region.loc);
                build_op(ctx, scopes, &terminator_op(term, at), b)?;
            }
        }
        (Some(_), None) => {}
    }
    scopes.leave_region()
}

/// Parses and builds a whole source text.
pub fn parse_source(name: &str, text: &str, registry: Rc<Registry>) -> Result<Context, Diagnostic> {
    let source = Rc::new(Source {
        name: name.to_string(),
        text: text.into(),
    });
    parse(source, registry)
}

/// Parses and builds `source` (shared: the context keeps it for diagnostics
/// without copying the text).
///
/// MLIR's `loc(...)` clauses are accepted: the text is parsed with them
/// blanked out ([`crate::parser::strip_locations`]), which keeps every
/// offset, and the context keeps the original text for diagnostics.
pub fn parse(source: Rc<Source>, registry: Rc<Registry>) -> Result<Context, Diagnostic> {
    let text = match crate::parser::strip_locations(&source.text) {
        Some(stripped) => Rc::new(Source {
            name: source.name.clone(),
            text: stripped.into(),
        }),
        None => source.clone(),
    };
    let ast =
        crate::parser::parse_module_lazy(&text.text).map_err(|e| diag(e.offset, e.message))?;
    let mut ctx = build_module(&ast, registry, Some(text))?;
    ctx.source = Some(source);
    Ok(ctx)
}

/// Converts an attribute dictionary entry list into IR attributes.
pub fn attrs_of(entries: &[AstAttrEntry]) -> Vec<(String, Attribute)> {
    entries
        .iter()
        .map(|e| (e.name.clone(), e.value.clone()))
        .collect()
}
