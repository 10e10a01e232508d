//! The printer: MLIR's text format. Ops print in their custom form when their
//! spec has one, unless generic printing is forced. Value names keep the
//! source's hints where they are unique in their isolated scope (a function);
//! other values are numbered `%0, %1, ...`.

use hashbrown::HashTable;
use std::fmt::{self, Write};
use std::rc::Rc;

use crate::attributes::Attribute;
use crate::context::{BlockId, Context, OpId, RegionId, ValueId};
use crate::names::{name_hash, Name};
use crate::spec::Traits;
use crate::types::Type;

/// Printing options.
#[derive(Copy, Clone, Default, Debug)]
pub struct PrintOptions {
    /// Print every op in the generic form.
    pub generic: bool,
    /// Print ops under L0's own names even where the spec gives MLIR's
    /// ([`crate::spec::OpSpec::mlir_name`]): `arith.sqrt` rather than the
    /// default `math.sqrt` (IR-SPEC §1: the math ops print with MLIR's
    /// `math` dialect names; both spellings parse).
    pub l0_names: bool,
    /// Print each op's location after it, as MLIR's
    /// `--mlir-print-debuginfo` does: `loc("file":line:col)`, the op's own
    /// MLIR location clause where its text had one (see
    /// [`crate::diag::mlir_location`]), else its position in the text it
    /// was parsed from; `loc(unknown)` without a source.
    pub debuginfo: bool,
}

/// A printed name, 4 bytes: a context's interned [`Name`] (a value's source
/// name, shared) or, with [`OWNED`] set, an index into the printer's own
/// names.
type NameKey = u32;
const OWNED: u32 = 1 << 31;
/// No name yet (in [`Printer::names`]).
const UNNAMED: u32 = u32::MAX;
/// Output is handed to the sink in pieces of about this many bytes.
const FLUSH_AT: usize = 1 << 16;

/// Prints IR into a string, or in pieces into an [`std::io::Write`] sink.
/// Custom op printers receive it to write their form.
///
/// Memory: 4 bytes per value for its printed name plus one hash-table slot
/// per name in scope; a value printed under its source name shares the
/// context's string.
pub struct Printer<'a> {
    ctx: &'a Context,
    out: String,
    indent: usize,
    /// The printed name of each value ([`UNNAMED`] until defined).
    names: Vec<NameKey>,
    /// Names made by the printer (`x_1`, `0`, `r#1`).
    owned: Vec<Rc<str>>,
    /// Names taken in each isolated scope, and its next number.
    scopes: Vec<(HashTable<NameKey>, usize)>,
    opts: PrintOptions,
    sink: Option<&'a mut dyn std::io::Write>,
    sink_error: Option<std::io::Error>,
    /// The last character handed to the sink.
    flushed_last: Option<char>,
    /// For [`PrintOptions::debuginfo`]: the offsets where the source's
    /// lines start, and whether it holds any `loc(` clause (computed once).
    lines: Option<(Vec<usize>, bool)>,
}

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'$' | b'-'))
}

/// The text of a name key.
fn key_str<'s>(ctx: &'s Context, owned: &'s [Rc<str>], key: NameKey) -> &'s str {
    if key & OWNED != 0 {
        &owned[(key & !OWNED) as usize]
    } else {
        Name::from_raw(key).map_or("", |n| ctx.name_text(n))
    }
}

/// Where a fresh name comes from.
enum Hint {
    None,
    /// The source name of a value (shared when it is free).
    Value(ValueId),
    /// A name made by the printer.
    Text(Rc<str>),
}

impl<'a> Printer<'a> {
    /// A printer for `ctx`.
    pub fn new(ctx: &'a Context, opts: PrintOptions) -> Self {
        // About 40 bytes per op: reserved, the text never moves.
        Printer::with_buffer(ctx, opts, ctx.num_ops().saturating_mul(40))
    }
    fn with_buffer(ctx: &'a Context, opts: PrintOptions, capacity: usize) -> Self {
        Printer {
            ctx,
            out: String::with_capacity(capacity),
            indent: 0,
            names: vec![UNNAMED; ctx.num_values()],
            owned: Vec::new(),
            scopes: vec![(HashTable::new(), 0)],
            opts,
            sink: None,
            sink_error: None,
            flushed_last: None,
            lines: None,
        }
    }
    /// A printer that hands its text to `sink` in pieces as it goes, so the
    /// whole text never exists at once; [`Printer::finish_to_sink`] writes
    /// the rest.
    pub fn to_sink(ctx: &'a Context, opts: PrintOptions, sink: &'a mut dyn std::io::Write) -> Self {
        let mut p = Printer::with_buffer(ctx, opts, 2 * FLUSH_AT);
        p.sink = Some(sink);
        p
    }
    /// The context being printed.
    pub fn ctx(&self) -> &'a Context {
        self.ctx
    }
    /// The text printed so far (a printer made by [`Printer::to_sink`]: the
    /// text not yet handed over).
    pub fn finish(self) -> String {
        self.out
    }
    /// Hands the rest of the text to the sink. Errors: the sink's first
    /// write error.
    pub fn finish_to_sink(mut self) -> std::io::Result<()> {
        self.flush(0);
        match self.sink_error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
    /// Hands the text to the sink once it holds at least `at` bytes.
    fn flush(&mut self, at: usize) {
        if self.out.len() < at.max(1) {
            return;
        }
        if let Some(sink) = self.sink.as_mut() {
            if self.sink_error.is_none() {
                if let Err(e) = sink.write_all(self.out.as_bytes()) {
                    self.sink_error = Some(e);
                }
            }
            self.flushed_last = self.out.chars().next_back();
            self.out.clear();
        }
    }
    /// Writes raw text.
    pub fn w(&mut self, s: &str) {
        self.out.push_str(s);
    }

    /// Whether `name` is taken in the current scope.
    fn taken(&self, name: &str) -> bool {
        let (ctx, owned) = (self.ctx, &self.owned);
        let scope = &self.scopes.last().unwrap().0;
        scope
            .find(name_hash(name), |&k| key_str(ctx, owned, k) == name)
            .is_some()
    }

    /// Takes `key` in the current scope.
    fn take(&mut self, key: NameKey) -> NameKey {
        let (ctx, owned) = (self.ctx, &self.owned);
        let h = name_hash(key_str(ctx, owned, key));
        self.scopes
            .last_mut()
            .unwrap()
            .0
            .insert_unique(h, key, |&k| name_hash(key_str(ctx, owned, k)));
        key
    }

    fn own(&mut self, name: Rc<str>) -> NameKey {
        self.owned.push(name);
        (self.owned.len() - 1) as u32 | OWNED
    }

    /// A name for a new value: the hint itself when it is valid and free in
    /// the current scope (shared, not copied), else `hint_1`, `hint_2`, ...
    /// or the next number.
    fn fresh(&mut self, hint: Hint) -> NameKey {
        let ctx = self.ctx;
        let text: Option<&str> = match &hint {
            Hint::None => None,
            Hint::Value(v) => ctx.value_name(*v),
            Hint::Text(t) => Some(t),
        };
        if let Some(h) = text.filter(|h| valid_name(h)) {
            if !self.taken(h) {
                let shared = match &hint {
                    Hint::Value(v) => ctx.value(*v).name.filter(|n| n.raw() < OWNED),
                    _ => None,
                };
                let key = match shared {
                    Some(n) => n.raw(),
                    None => self.own(Rc::from(h)),
                };
                return self.take(key);
            }
            // `%1_1` is not an SSA name MLIR reads (a name that starts with
            // a digit is all digits): a taken number gets the next number.
            let mut k = 1;
            while !h.starts_with(|c: char| c.is_ascii_digit()) {
                let cand = format!("{h}_{k}");
                if !self.taken(&cand) {
                    let key = self.own(Rc::from(cand.as_str()));
                    return self.take(key);
                }
                k += 1;
            }
        }
        loop {
            let scope = self.scopes.last_mut().unwrap();
            let cand = scope.1.to_string();
            scope.1 += 1;
            if !self.taken(&cand) {
                let key = self.own(Rc::from(cand.as_str()));
                return self.take(key);
            }
        }
    }

    /// Names `v` (first use of a definition).
    fn define(&mut self, v: ValueId) {
        let n = self.fresh(Hint::Value(v));
        self.names[v.index()] = n;
    }

    /// The last character written, if any.
    pub fn last_char(&self) -> Option<char> {
        self.out.chars().next_back().or(self.flushed_last)
    }
    /// Writes a use of `v`.
    pub fn value(&mut self, v: ValueId) {
        self.out.push('%');
        match self.names.get(v.index()).copied().filter(|&k| k != UNNAMED) {
            Some(k) => self.out.push_str(key_str(self.ctx, &self.owned, k)),
            None => self.out.push_str("<<UNKNOWN SSA VALUE>>"),
        }
    }
    /// Writes uses `a, b, c`.
    pub fn values(&mut self, vs: &[ValueId]) {
        for (i, &v) in vs.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.value(v);
        }
    }
    /// Defines and writes a block argument `%x: T`.
    pub fn arg_decl(&mut self, v: ValueId) {
        self.define(v);
        self.value(v);
        let t = self.ctx.ty(v).to_string();
        let _ = write!(self.out, ": {t}");
    }
    /// Defines a block argument's name without writing anything.
    pub fn define_arg(&mut self, v: ValueId) {
        self.define(v);
    }
    /// Writes a type.
    pub fn ty(&mut self, t: &Type) {
        let _ = write!(self.out, "{t}");
    }
    /// Writes `a, b` types.
    pub fn types(&mut self, ts: &[Type]) {
        for (i, t) in ts.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.ty(t);
        }
    }
    /// Writes `T` for one type, `(A, B)` otherwise.
    pub fn type_list(&mut self, ts: &[Type]) {
        if ts.len() == 1 && !matches!(ts[0], Type::Function(_)) {
            self.ty(&ts[0]);
        } else {
            self.out.push('(');
            self.types(ts);
            self.out.push(')');
        }
    }
    /// Writes an attribute.
    pub fn attr(&mut self, a: &Attribute) {
        let _ = write!(self.out, "{a}");
    }
    /// Writes ` {k = v, ...}` for the attributes of `op` not in `skip` (nothing if none).
    pub fn attr_dict(&mut self, op: OpId, skip: &[&str]) {
        let attrs: Vec<&(String, Attribute)> = self
            .ctx
            .op(op)
            .attrs
            .iter()
            .filter(|(k, _)| !skip.contains(&k.as_str()))
            .collect();
        self.attr_entries(&attrs);
    }
    /// Writes ` {k = v, ...}` for `attrs` (nothing if empty).
    pub fn attr_list(&mut self, attrs: &[(String, Attribute)]) {
        let refs: Vec<&(String, Attribute)> = attrs.iter().collect();
        self.attr_entries(&refs);
    }
    fn attr_entries(&mut self, attrs: &[&(String, Attribute)]) {
        if attrs.is_empty() {
            return;
        }
        self.out.push_str(" {");
        for (i, (k, a)) in attrs.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            if matches!(a, Attribute::Unit) {
                let _ = write!(self.out, "{k}");
            } else {
                let _ = write!(self.out, "{k} = {a}");
            }
        }
        self.out.push('}');
    }

    /// Starts a new line at the current indentation.
    pub fn newline(&mut self) {
        self.flush(FLUSH_AT);
        self.out.push('\n');
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
    }

    /// Writes a region `{ ... }`. With `entry_args` false the entry block's
    /// label and arguments are omitted (a custom form declared them already).
    pub fn region(&mut self, r: RegionId, entry_args: bool) {
        self.out.push('{');
        self.indent += 1;
        let blocks = self.ctx.region(r).blocks.clone();
        for (i, b) in blocks.into_iter().enumerate() {
            // The entry block of several needs no label without arguments.
            let label = i > 0
                || (entry_args
                    && (i == 0 && !self.ctx.block_args(b).is_empty()
                        || self.ctx.region(r).blocks.len() == 1));
            self.block(b, label);
        }
        self.indent -= 1;
        self.newline();
        self.out.push('}');
    }

    /// Writes a reference to block `b`: `^bbN`, `N` its position in its
    /// region (as MLIR numbers blocks).
    pub fn block_ref(&mut self, b: BlockId) {
        let n = self
            .ctx
            .block_region(b)
            .and_then(|r| self.ctx.region(r).blocks.iter().position(|&x| x == b))
            .unwrap_or(0);
        let _ = write!(self.out, "^bb{n}");
    }

    /// Writes successor `i` of `op` in MLIR's custom form:
    /// `^bb1` or `^bb1(%a, %b : i64, f64)`.
    pub fn successor(&mut self, op: OpId, i: usize) {
        let ctx = self.ctx;
        self.block_ref(ctx.successors(op)[i].0);
        let vs = ctx.successor_operands(op, i).to_vec();
        if !vs.is_empty() {
            self.out.push('(');
            self.values(&vs);
            self.out.push_str(" : ");
            let ts: Vec<Type> = vs.iter().map(|&v| ctx.ty(v).clone()).collect();
            self.types(&ts);
            self.out.push(')');
        }
    }

    fn block(&mut self, b: BlockId, label: bool) {
        let args = self.ctx.block_args(b).to_vec();
        let multi = self
            .ctx
            .block_region(b)
            .is_some_and(|r| self.ctx.region(r).blocks.len() > 1);
        if multi && label {
            self.indent -= 1;
            self.newline();
            self.block_ref(b);
            if !args.is_empty() {
                self.out.push('(');
                for (i, &a) in args.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.arg_decl(a);
                }
                self.out.push(')');
            }
            self.out.push(':');
            self.indent += 1;
        } else if label && !args.is_empty() {
            self.indent -= 1;
            self.newline();
            let name = self
                .ctx
                .block(b)
                .label
                .clone()
                .unwrap_or_else(|| "bb0".into());
            let _ = write!(self.out, "^{name}(");
            for (i, &a) in args.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.arg_decl(a);
            }
            self.out.push_str("):");
            self.indent += 1;
        } else if label && self.ctx.block(b).first.is_none() {
            // An empty block (a module's body) keeps its label: `({})`
            // is a region without blocks in MLIR's generic form.
            self.indent -= 1;
            self.newline();
            let name = self.ctx.block(b).label.as_deref().unwrap_or("bb0");
            let _ = write!(self.out, "^{name}:");
            self.indent += 1;
        }
        for op in self.ctx.iter_block(b) {
            self.newline();
            self.op(op);
        }
    }

    fn results(&mut self, op: OpId) {
        let res = self.ctx.results(op).to_vec();
        if res.is_empty() {
            return;
        }
        if res.len() == 1 {
            self.define(res[0]);
            self.value(res[0]);
            self.out.push_str(" = ");
            return;
        }
        let ctx = self.ctx;
        let hints: Vec<Option<&str>> = res.iter().map(|&r| ctx.value_name(r)).collect();
        let plain = hints.iter().all(|h| h.is_some_and(valid_name));
        if plain {
            for (i, &r) in res.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.define(r);
                self.value(r);
            }
            self.out.push_str(" = ");
            return;
        }
        // Several groups, as `%base, %offset, %sizes:2 = ...` was parsed:
        // each result a plain name or one of a run `X#0, X#1, ...`.
        if let Some(groups) = name_groups(&hints) {
            if groups.len() > 1 {
                let mut i = 0;
                for (k, (base, len)) in groups.into_iter().enumerate() {
                    if k > 0 {
                        self.out.push_str(", ");
                    }
                    match base {
                        None => {
                            self.define(res[i]);
                            self.value(res[i]);
                        }
                        Some(b) => {
                            let key = self.fresh(Hint::Text(Rc::from(b)));
                            let name = key_str(self.ctx, &self.owned, key).to_string();
                            for (j, &r) in res[i..i + len].iter().enumerate() {
                                self.names[r.index()] =
                                    self.own(Rc::from(format!("{name}#{j}").as_str()));
                            }
                            let _ = write!(self.out, "%{name}:{len}");
                        }
                    }
                    i += len;
                }
                self.out.push_str(" = ");
                return;
            }
        }
        let base = match hints[0].and_then(|h| h.strip_suffix("#0")) {
            Some(b) => Hint::Text(Rc::from(b)),
            None => Hint::None,
        };
        let key = self.fresh(base);
        let name = key_str(self.ctx, &self.owned, key).to_string();
        for (i, &r) in res.iter().enumerate() {
            self.names[r.index()] = self.own(Rc::from(format!("{name}#{i}").as_str()));
        }
        let _ = write!(self.out, "%{name}:{} = ", res.len());
    }

    /// Writes one op (without leading indentation or trailing newline).
    pub fn op(&mut self, op: OpId) {
        self.results(op);
        let spec = self.ctx.spec(op);
        let isolated = spec.traits.contains(Traits::ISOLATED_FROM_ABOVE);
        if isolated {
            // Sized for every value defined inside, so a large function's
            // table never rehashes.
            let ctx = self.ctx;
            let nested = ctx.walk_nested(op);
            let values: usize = nested.iter().map(|&o| ctx.results(o).len()).sum();
            let args: usize = ctx
                .regions(op)
                .iter()
                .flat_map(|&r| ctx.region(r).blocks.iter())
                .map(|&b| ctx.block_args(b).len())
                .sum();
            self.scopes
                .push((HashTable::with_capacity(values + args), 0));
        }
        let name = self.op_name(op);
        match (spec.print, &spec.format, self.opts.generic) {
            (Some(print), _, false) => {
                // MLIR writes its builtin ops without the dialect prefix.
                self.out
                    .push_str(name.strip_prefix("builtin.").unwrap_or(name));
                let _ = print(self, op);
            }
            (None, Some(f), false) if crate::format::printable(self, op, f) => {
                self.out.push_str(name);
                crate::format::print(self, op, f);
            }
            _ => self.generic_op(op),
        }
        if isolated {
            self.scopes.pop();
        }
        if self.opts.debuginfo {
            self.location(op);
        }
    }

    /// Writes ` loc(...)` for `op` (see [`PrintOptions::debuginfo`]).
    fn location(&mut self, op: OpId) {
        let ctx = self.ctx;
        let (Some(at), Some(src)) = (ctx.loc(op).offset(), ctx.source.as_deref()) else {
            self.out.push_str(" loc(unknown)");
            return;
        };
        let text = src.text.as_str();
        let (starts, has_loc) = self.lines.get_or_insert_with(|| {
            let mut v = vec![0];
            v.extend(
                text.bytes()
                    .enumerate()
                    .filter(|&(_, c)| c == b'\n')
                    .map(|(i, _)| i + 1),
            );
            (v, text.contains("loc("))
        });
        let clause = if *has_loc {
            crate::diag::mlir_location(text, at)
        } else {
            None
        };
        let (file, line, col) = match clause.as_deref().and_then(split_location) {
            Some((f, l, c)) => (f.to_string(), l, c),
            None => {
                let at = at.min(text.len());
                let line = starts.partition_point(|&s| s <= at);
                let start = starts[line.max(1) - 1];
                let col = text
                    .get(start..at)
                    .map_or(at - start, |t| t.chars().count())
                    + 1;
                let name = if src.name == "-" {
                    "<stdin>"
                } else {
                    &src.name
                };
                (name.to_string(), line.max(1), col)
            }
        };
        let _ = write!(self.out, " loc({}:{line}:{col})", Attribute::Str(file));
    }

    /// The name `op` is printed under (see [`PrintOptions::l0_names`]).
    fn op_name(&self, op: OpId) -> &'a str {
        let ctx = self.ctx;
        match ctx.spec(op).mlir_name {
            Some(f) if !self.opts.l0_names => f(ctx, op),
            _ => ctx.op_name(op),
        }
    }

    fn generic_op(&mut self, op: OpId) {
        let ctx = self.ctx;
        let _ = write!(self.out, "\"{}\"(", self.op_name(op));
        self.values(ctx.operands(op));
        self.out.push(')');
        if !ctx.successors(op).is_empty() {
            self.out.push('[');
            for (i, &(b, _)) in ctx.successors(op).iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.block_ref(b);
            }
            self.out.push(']');
        }
        let regions = ctx.regions(op).to_vec();
        if !regions.is_empty() {
            self.out.push_str(" (");
            for (i, r) in regions.into_iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.region(r, true);
            }
            self.out.push(')');
        } else if ctx.spec(op).optional_body {
            // MLIR's generic declaration: one region without blocks.
            self.out.push_str(" ({");
            self.newline();
            self.out.push_str("})");
        }
        match ctx.spec(op).generic_attrs {
            Some(f) => self.attr_list(&f(ctx, op)),
            None => self.attr_dict(op, &[]),
        }
        self.out.push_str(" : (");
        let ots: Vec<Type> = ctx
            .operands(op)
            .iter()
            .map(|&v| ctx.ty(v).clone())
            .collect();
        self.types(&ots);
        self.out.push_str(") -> ");
        let rts: Vec<Type> = ctx.results(op).iter().map(|&v| ctx.ty(v).clone()).collect();
        if rts.len() == 1 && !matches!(rts[0], Type::Function(_)) {
            self.ty(&rts[0]);
        } else {
            self.out.push('(');
            self.types(&rts);
            self.out.push(')');
        }
    }

    /// Writes the whole module: `module { ... }`.
    pub fn module(&mut self) {
        self.out.push_str("module ");
        if let Some(n) = &self.ctx.module_name {
            self.out.push_str(&crate::types::symbol_ref(n));
            self.out.push(' ');
        }
        if !self.ctx.module_attrs.is_empty() {
            self.out.push_str("attributes");
            let attrs = self.ctx.module_attrs.clone();
            self.attr_list(&attrs);
            self.out.push(' ');
        }
        self.out.push('{');
        self.indent += 1;
        for op in self.ctx.iter_block(self.ctx.top) {
            self.newline();
            self.op(op);
        }
        self.indent -= 1;
        self.out.push_str("\n}\n");
    }
}

/// Prints the whole module.
pub fn print_module(ctx: &Context, opts: PrintOptions) -> String {
    let mut p = Printer::new(ctx, opts);
    p.module();
    p.finish()
}

/// Prints the whole module into `sink`, a piece at a time (the whole text is
/// never held in memory). Errors: the sink's first write error.
pub fn print_module_to(
    ctx: &Context,
    opts: PrintOptions,
    sink: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let mut p = Printer::to_sink(ctx, opts, sink);
    p.module();
    p.finish_to_sink()
}

/// Prints a single op (with names local to this print), for debugging and messages.
pub fn print_op(ctx: &Context, op: OpId, opts: PrintOptions) -> String {
    let mut p = Printer::new(ctx, opts);
    p.op(op);
    p.finish()
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_module(self, PrintOptions::default()))
    }
}

/// `file:line:col` split into its parts (the file may hold colons).
fn split_location(s: &str) -> Option<(&str, usize, usize)> {
    let mut it = s.rsplitn(3, ':');
    let col = it.next()?.parse().ok()?;
    let line = it.next()?.parse().ok()?;
    Some((it.next()?, line, col))
}

/// The result groups that names `hints` spell: `(None, 1)` for a plain
/// name, `(Some(X), k)` for a run `X#0` to `X#{k-1}`; `None` where a name
/// fits neither.
fn name_groups<'a>(hints: &[Option<&'a str>]) -> Option<Vec<(Option<&'a str>, usize)>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < hints.len() {
        let h = hints[i]?;
        if valid_name(h) {
            out.push((None, 1));
            i += 1;
            continue;
        }
        let base = h.strip_suffix("#0").filter(|b| valid_name(b))?;
        let mut len = 1;
        while hints.get(i + len).copied().flatten().is_some_and(|n| {
            n.strip_prefix(base).and_then(|t| t.strip_prefix('#')) == Some(&len.to_string())
        }) {
            len += 1;
        }
        out.push((Some(base), len));
        i += len;
    }
    Some(out)
}
