//! `split-structs`: every struct value becomes one value per field, and
//! every vector of structs one vector per field (array-of-structs to
//! struct-of-arrays). LMS's data-structure optimizations (Rompf et al.,
//! POPL'13, "Optimizing data structures in high-level programs", sections
//! 3.2 and 3.3): "splitting compound expressions allows existing
//! optimizations on their pieces", so a field nobody reads dies, and each
//! field is simplified on its own.
//!
//! The pass is a one-to-many type conversion (MLIR's
//! `OneToNTypeConversion`) over the whole module. A value of type `T` is
//! replaced by the values of [`ir::Type::leaves`] of `T`: a struct by its
//! (flattened) fields, `vec<struct<f: A, g: B>>` by `vec<A>, vec<B>`,
//! `var<struct<...>>` by one variable per field, and a generator handle
//! `!gen.collect<struct<...>>` (also `reduce`, `scan`) by one handle per
//! field. Then, op by op:
//! - `struct.new` and `struct.get` disappear: a field is the value it was
//!   built from;
//! - `vec.get(v, i)` becomes one `vec.get` per field vector, `vec.len(v)` the
//!   length of the first (all field vectors have one length);
//! - a `gen.loop` generator over structs becomes one generator per field,
//!   of the same kind (a struct-valued reduce or scan folds each field with
//!   the same monoid), fed by one `gen.emit` per field: a `vec.map` that
//!   yields a struct is a loop with one collect generator per field, so no
//!   element is computed twice and no branch is evaluated twice;
//! - `scf.if` results, `scf.for`/`scf.while` carried values, function
//!   parameters and results (`func.func`, `func.call`, `func.return`) and
//!   `arith.select` carry one value per field; `var.new/get/set` act per
//!   field.
//!
//! Before that, every `vec`/`mat` op that takes or yields structs is viewed
//! as the `gen.loop` it stands for (its `gen` lowering), so that the
//! conversion above covers every op. A bucket generator of records becomes
//! one bucket per field, each fed the key and its field (so each keeps the
//! keys in the same first-seen order). An op the conversion does not know
//! (e.g. a `mat<struct<...>>`, or a bucket keyed by a struct) is a
//! diagnostic at that op, never a half-converted module.
//!
//! The function boundary follows the same rule: a `vec<struct<...>>`
//! parameter is one `vec` per field (struct-of-arrays; the `--run` ABI,
//! see `opt-tool/src/run.rs`). `lower` runs this pass first, then drops the
//! generators whose results are unused, so no backend sees a struct.

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use dialects::gen::{gens_attr, try_generators, GenKind, Generator};
use ir::pass::{Pass, PassInfo, PassOptions, PassStats};
use ir::spec::OpState;
use ir::types::TypeParam;
use ir::{Attribute, BlockId, Builder, Context, Diagnostic, OpId, Type, ValueId};

/// The pass.
pub struct SplitStructs;

impl Pass for SplitStructs {
    fn name(&self) -> &'static str {
        "split-structs"
    }
    fn run(&mut self, ctx: &mut Context, stats: &mut PassStats) -> Result<(), Diagnostic> {
        stats.add("split-values", split_structs(ctx)?);
        Ok(())
    }
}

/// Whether any value, or any function signature, of the module has a
/// struct type.
pub fn has_structs(ctx: &Context) -> bool {
    ctx.walk_all().into_iter().any(|op| op_has_structs(ctx, op))
}

fn signature_has_struct(ctx: &Context, op: OpId) -> bool {
    matches!(ctx.attr(op, "function_type"), Some(Attribute::Type(t)) if t.contains_struct())
}

/// Whether `op` has an operand or a result whose type holds a struct.
fn own_values_have_struct(ctx: &Context, op: OpId) -> bool {
    let d = ctx.op(op);
    d.operands
        .iter()
        .chain(&d.results)
        .any(|&v| ctx.ty(v).contains_struct())
}

/// Whether `op` has an operand, a result, or a block argument of one of
/// its regions whose type holds a struct.
fn touches(ctx: &Context, op: OpId) -> bool {
    own_values_have_struct(ctx, op)
        || ctx.regions(op).iter().any(|&r| {
            ctx.region(r).blocks.iter().any(|&b| {
                ctx.block_args(b)
                    .iter()
                    .any(|&a| ctx.ty(a).contains_struct())
            })
        })
}

/// Whether `op` has struct values or a function signature that holds a
/// struct (what [`has_structs`] looks for, one op at a time).
pub fn op_has_structs(ctx: &Context, op: OpId) -> bool {
    touches(ctx, op) || signature_has_struct(ctx, op)
}

/// Splits every struct value of the module into its fields; returns how
/// many struct-typed values were replaced. Errors name the first op that
/// cannot be converted; the module is then unchanged only in part, so
/// callers stop.
pub fn split_structs(ctx: &mut Context) -> Result<u64, Diagnostic> {
    Ok(split_structs_keeping(ctx)?.0)
}

/// The field vectors that one split vector of records (computed, not a
/// function's parameter) became: where that vector was defined, and each
/// field's path (`.weight`) and vector.
pub struct FieldVectors {
    pub loc: ir::Loc,
    pub fields: Vec<(String, ValueId)>,
}

/// [`split_structs`], also returning the field vectors of every split
/// vector of records, so that a caller that then removes unread fields
/// can say which survive (`--remarks=lower`, issue 44 item 4).
pub fn split_structs_keeping(ctx: &mut Context) -> Result<(u64, Vec<FieldVectors>), Diagnostic> {
    if !has_structs(ctx) {
        return Ok((0, Vec::new()));
    }
    view_as_loops(ctx)?;
    let mut s = Split::default();
    for f in ctx.block_ops(ctx.top) {
        if ctx.is(f, "func.func") {
            s.function(ctx, f)?;
        }
    }
    for fields in &s.soa {
        assert_one_length(ctx, fields);
    }
    for &op in s.dead.iter().rev() {
        ctx.erase_op(op);
    }
    Ok((s.count, s.records))
}

/// Remarks (`--remarks=lower`) for the fields of split vectors of records
/// that are still read after `lower` removed the unread ones and
/// simplified: each names the field and an op that reads it (a note at
/// that op). `moved` maps a result of a loop that was rebuilt to its
/// replacement. A field read only for its length does not count.
pub fn remark_surviving_fields(
    ctx: &Context,
    records: &[FieldVectors],
    moved: &std::collections::HashMap<ValueId, ValueId>,
) {
    for r in records {
        for (path, v) in &r.fields {
            let mut v = v;
            while let Some(n) = moved.get(v) {
                v = n;
            }
            let alive = match ctx.value(*v).def {
                ir::context::ValueDef::Result(op, _) => ctx.alive(op),
                ir::context::ValueDef::BlockArg(..) => true,
            };
            if !alive {
                continue;
            }
            let reader = ctx
                .uses(*v)
                .iter()
                .map(|u| u.op)
                .find(|&u| !ctx.is(u, "vec.len"));
            let Some(reader) = reader else { continue };
            ir::remarks::emit_with_note(
                "lower",
                r.loc,
                format!(
                    "field '{}' of this vector of records survives split-structs: '{}' reads it",
                    path.trim_start_matches('.'),
                    ctx.op_name(reader)
                ),
                ctx.loc(reader),
                "the reader",
            );
        }
    }
}

/// Applies the `gen` lowering of every op that takes or yields structs and
/// has one (the `vec` and `mat` ops), until none is left.
fn view_as_loops(ctx: &mut Context) -> Result<(), Diagnostic> {
    loop {
        let mut changed = false;
        for op in ctx.walk_all() {
            if !ctx.alive(op) || ctx.op(op).parent.is_none() || !touches(ctx, op) {
                continue;
            }
            let lowerings: SmallVec<[ir::spec::RewriteFn; 2]> = ctx
                .spec(op)
                .lowerings
                .iter()
                .filter(|(p, _)| *p == "gen")
                .map(|(_, f)| *f)
                .collect();
            if lowerings.is_empty() {
                continue;
            }
            let st = OpState::of(ctx, op);
            let mut done = None;
            for f in lowerings {
                let mut b = Builder::before(ctx, op);
                if let Some(vals) = f(&mut b, &st) {
                    done = Some(vals);
                    break;
                }
            }
            let Some(vals) = done else {
                let name = ctx.op_name(op);
                return Err(Diagnostic::at_op(
                    ctx,
                    op,
                    format!("split-structs: '{name}' on struct values cannot be lowered to a generator loop"),
                ));
            };
            ctx.replace_op(op, &vals);
            changed = true;
        }
        if !changed {
            return Ok(());
        }
    }
}

/// [`leaf_types`] of each of `values`; an error is reported at `at`.
fn leaves_of_each(
    ctx: &Context,
    at: OpId,
    values: &[ValueId],
) -> Result<Vec<Vec<(String, Type)>>, Diagnostic> {
    values
        .iter()
        .map(|&v| leaf_types(ctx.ty(v)).map_err(|m| Diagnostic::at_op(ctx, at, m)))
        .collect()
}

/// The types a value of type `t` becomes, each with its field path, or
/// why it cannot be split.
fn leaf_types(t: &Type) -> Result<Vec<(String, Type)>, String> {
    if !t.contains_struct() {
        return Ok(vec![(String::new(), t.clone())]);
    }
    let leaves = match t {
        // A bucket of records: one bucket per field, each keyed by the key.
        Type::Dialect(d) if d.dialect == "gen" && d.name == "bucket" => match &d.params[..] {
            [TypeParam::Type(k), TypeParam::Type(v)] if !k.contains_struct() => v
                .named_leaves()
                .into_iter()
                .map(|(p, l)| {
                    let params = vec![TypeParam::Type(k.clone()), TypeParam::Type(l)];
                    (p, Type::dialect("gen", "bucket", params))
                })
                .collect(),
            _ => {
                return Err(format!(
                    "cannot split the fields of '{t}': bucket keys of structs are not supported"
                ))
            }
        },
        Type::Dialect(d) if d.dialect == "gen" => match &d.params[..] {
            [TypeParam::Type(e)] => e
                .named_leaves()
                .into_iter()
                .map(|(p, l)| (p, Type::dialect("gen", &d.name, vec![TypeParam::Type(l)])))
                .collect(),
            _ => return Err(format!("cannot split the fields of '{t}'")),
        },
        _ => t.named_leaves(),
    };
    match leaves.iter().find(|(_, l)| l.contains_struct()) {
        Some(_) => Err(format!(
            "cannot split the fields of '{t}': structs are split inside 'vec' and 'var' types only"
        )),
        None => Ok(leaves),
    }
}

#[derive(Default)]
struct Split {
    /// The field values of each converted struct-typed value.
    fields: FxHashMap<ValueId, SmallVec<[ValueId; 4]>>,
    /// Replaced ops, erased at the end (consumers after producers).
    dead: Vec<OpId>,
    /// The field vectors of each split `vec<struct<...>>` value.
    soa: Vec<SmallVec<[ValueId; 4]>>,
    /// The same, with where each vector was defined and the field paths.
    records: Vec<FieldVectors>,
    count: u64,
}

impl Split {
    /// The values that stand for `v`: its fields, or itself.
    fn leaves(&self, v: ValueId) -> SmallVec<[ValueId; 4]> {
        match self.fields.get(&v) {
            Some(l) => l.clone(),
            None => SmallVec::from_slice(&[v]),
        }
    }

    fn flat(&self, vs: &[ValueId]) -> Vec<ValueId> {
        vs.iter().flat_map(|&v| self.leaves(v)).collect()
    }

    /// Records `leaves` as standing for `old`: the field values of a struct
    /// value, or the one replacement of any other.
    fn bind(&mut self, ctx: &mut Context, old: ValueId, leaves: &[ValueId], paths: &[String]) {
        if let Some(n) = ctx.value_name(old).map(str::to_string) {
            for (&l, p) in leaves.iter().zip(paths) {
                if ctx.value_name(l).is_none() {
                    ctx.set_name(l, Some(&format!("{n}{p}")));
                }
            }
        }
        if ctx.ty(old).contains_struct() {
            if matches!(ctx.ty(old), Type::Vec(_)) && leaves.len() > 1 {
                self.soa.push(SmallVec::from_slice(leaves));
                // Computed vectors of records (a parameter's fields are
                // the caller's, not work this function does).
                let def = match ctx.value(old).def {
                    ir::context::ValueDef::Result(op, _) => Some(op),
                    ir::context::ValueDef::BlockArg(b, _) => {
                        ctx.block_parent_op(b).filter(|&p| !ctx.is(p, "func.func"))
                    }
                };
                if let Some(def) = def {
                    self.records.push(FieldVectors {
                        loc: ctx.loc(def),
                        fields: paths.iter().cloned().zip(leaves.iter().copied()).collect(),
                    });
                }
            }
            self.count += 1;
            self.fields.insert(old, SmallVec::from_slice(leaves));
        } else if leaves.first() != Some(&old) {
            ctx.replace_all_uses(old, leaves[0]);
        }
    }

    fn function(&mut self, ctx: &mut Context, f: OpId) -> Result<(), Diagnostic> {
        if let Some(Attribute::Type(Type::Function(ft))) = ctx.attr(f, "function_type").cloned() {
            if Type::Function(ft.clone()).contains_struct() {
                let split = |ts: &[Type]| -> Result<Vec<Type>, String> {
                    let mut out = Vec::new();
                    for t in ts {
                        out.extend(leaf_types(t)?.into_iter().map(|(_, l)| l));
                    }
                    Ok(out)
                };
                let ins = split(&ft.inputs).map_err(|m| Diagnostic::at_op(ctx, f, m))?;
                let outs = split(&ft.results).map_err(|m| Diagnostic::at_op(ctx, f, m))?;
                // Each field of a split parameter or result keeps its
                // attributes (`arg_attrs`, `res_attrs`).
                for (key, ts) in [
                    (dialects::func::ARG_ATTRS, &ft.inputs),
                    (dialects::func::RES_ATTRS, &ft.results),
                ] {
                    if let Some(ds) = dialects::func::signature_attrs(ctx, f, key) {
                        let mut out = Vec::new();
                        for (d, t) in ds.into_iter().zip(ts.iter()) {
                            let n = leaf_types(t)
                                .map_err(|m| Diagnostic::at_op(ctx, f, m))?
                                .len();
                            out.extend(std::iter::repeat_n(d, n));
                        }
                        ctx.set_attr(f, key, Attribute::Array(out));
                    }
                }
                ctx.set_attr(
                    f,
                    "function_type",
                    Attribute::Type(Type::function(ins, outs)),
                );
            }
        }
        self.regions(ctx, f)
    }

    /// Converts the block arguments and ops of every region of `op`.
    fn regions(&mut self, ctx: &mut Context, op: OpId) -> Result<(), Diagnostic> {
        for r in ctx.regions(op).to_vec() {
            for b in ctx.region(r).blocks.clone() {
                self.block_args(ctx, op, b)?;
                for o in ctx.block_ops(b) {
                    self.op(ctx, o)?;
                }
            }
        }
        Ok(())
    }

    fn block_args(&mut self, ctx: &mut Context, owner: OpId, b: BlockId) -> Result<(), Diagnostic> {
        let args = ctx.block_args(b).to_vec();
        if !args.iter().any(|&a| ctx.ty(a).contains_struct()) {
            return Ok(());
        }
        let per_arg = leaves_of_each(ctx, owner, &args)?;
        let types: Vec<Type> = per_arg.iter().flatten().map(|(_, t)| t.clone()).collect();
        let new = ctx.replace_block_args(b, &types);
        self.bind_each(ctx, &args, &per_arg, &new);
        Ok(())
    }

    /// Binds each of `old` to its run of `new` (one value per leaf in
    /// `per_value`, in order).
    fn bind_each(
        &mut self,
        ctx: &mut Context,
        old: &[ValueId],
        per_value: &[Vec<(String, Type)>],
        new: &[ValueId],
    ) {
        let mut k = 0;
        for (&v, leaves) in old.iter().zip(per_value) {
            let paths: Vec<String> = leaves.iter().map(|(p, _)| p.clone()).collect();
            let n = leaves.len();
            self.bind(ctx, v, &new[k..k + n], &paths);
            k += n;
        }
    }

    fn op(&mut self, ctx: &mut Context, op: OpId) -> Result<(), Diagnostic> {
        let name = ctx.op_name(op);
        if name == "func.func" {
            // A function nested in another one's body (the verifier
            // reports it) still keeps its signature and arguments in step.
            return self.function(ctx, op);
        }
        // A loop's generators are read before its handles are split.
        let gens = (name == "gen.loop" && touches(ctx, op)).then(|| try_generators(ctx, op));
        self.regions(ctx, op)?;
        let own = own_values_have_struct(ctx, op);
        if !own {
            return Ok(());
        }
        let err = |ctx: &Context, m: String| Diagnostic::at_op(ctx, op, m);
        match name {
            "struct.new" => {
                let leaves = self.flat(ctx.operands(op));
                let r = ctx.result(op, 0);
                let paths = paths_of(ctx.ty(r));
                self.bind(ctx, r, &leaves, &paths);
                self.dead.push(op);
            }
            "struct.get" => {
                let s = ctx.operand(op, 0);
                let st = ctx
                    .ty(s)
                    .as_struct()
                    .cloned()
                    .ok_or_else(|| err(ctx, "operand must be a struct".into()))?;
                let want = dialects::structs::field_name(&ctx.op(op).attrs).unwrap_or("");
                let mut start = 0;
                let mut range = None;
                for (n, t) in &st.fields {
                    let len = t.leaves().len();
                    if n == want {
                        range = Some(start..start + len);
                        break;
                    }
                    start += len;
                }
                let range = range.ok_or_else(|| err(ctx, format!("no field '{want}'")))?;
                let leaves = self.leaves(s)[range].to_vec();
                let r = ctx.result(op, 0);
                let paths = paths_of(ctx.ty(r));
                self.bind(ctx, r, &leaves, &paths);
                self.dead.push(op);
            }
            "vec.get" => {
                let (v, i) = (ctx.operand(op, 0), ctx.operand(op, 1));
                // The field vectors of one vector of records have its
                // length, so an `in_bounds` proof holds for each.
                let attrs: Vec<_> = ctx.op(op).attrs.iter().cloned().collect();
                let mut out = Vec::new();
                for l in self.leaves(v) {
                    let t = ctx.ty(l).elem().cloned().unwrap_or(Type::Index);
                    let mut b = Builder::before(ctx, op);
                    out.push(b.op1("vec.get", &[l, i], t, attrs.clone()));
                }
                self.replace(ctx, op, &out);
            }
            "vec.len" => {
                let v = self.leaves(ctx.operand(op, 0))[0];
                let mut b = Builder::before(ctx, op);
                let n = b.op1("vec.len", &[v], Type::Index, vec![]);
                self.replace(ctx, op, &[n]);
            }
            "arith.select" => {
                let c = ctx.operand(op, 0);
                let (xs, ys) = (
                    self.leaves(ctx.operand(op, 1)),
                    self.leaves(ctx.operand(op, 2)),
                );
                let mut out = Vec::new();
                for (&x, &y) in xs.iter().zip(&ys) {
                    let t = ctx.ty(x).clone();
                    let mut b = Builder::before(ctx, op);
                    out.push(b.op1("arith.select", &[c, x, y], t, vec![]));
                }
                self.replace(ctx, op, &out);
            }
            "var.new" | "var.get" => {
                let x = self.leaves(ctx.operand(op, 0));
                let mut out = Vec::new();
                for &l in &x {
                    let t = match name {
                        "var.new" => Type::var(ctx.ty(l).clone()),
                        _ => ctx.ty(l).elem().cloned().unwrap_or(Type::Index),
                    };
                    let mut b = Builder::before(ctx, op);
                    out.push(b.op1(name, &[l], t, vec![]));
                }
                self.replace(ctx, op, &out);
            }
            "gen.running" => {
                // One running fold per field generator.
                let hs = self.leaves(ctx.operand(op, 0));
                let mut out = Vec::new();
                for &h in &hs {
                    let mut b = Builder::before(ctx, op);
                    out.push(dialects::gen::running::running(&mut b, h));
                }
                self.replace(ctx, op, &out);
            }
            "var.set" | "gen.emit" => {
                let target = self.leaves(ctx.operand(op, 0));
                let rest = ctx.operands(op)[1..].to_vec();
                // A bucket emit `(handle, key, value)`: each field's bucket
                // gets the key and its field.
                let key = match rest[..] {
                    [_] => None,
                    [k, _] if name == "gen.emit" && !ctx.ty(k).contains_struct() => Some(k),
                    _ => {
                        return Err(err(
                            ctx,
                            "cannot split the fields of a bucket keyed by a struct".into(),
                        ))
                    }
                };
                let x = self.leaves(*rest.last().expect("checked above"));
                for (&t, &l) in target.iter().zip(&x) {
                    let mut b = Builder::before(ctx, op);
                    let operands: Vec<ValueId> = std::iter::once(t).chain(key).chain([l]).collect();
                    b.op(name, &operands, &[], vec![]);
                }
                self.dead.push(op);
            }
            "gen.loop" => {
                let gens = match gens {
                    Some(Ok(g)) => g,
                    Some(Err(m)) => return Err(err(ctx, m)),
                    None => return Err(err(ctx, "malformed generator loop".into())),
                };
                let inits = ctx.operands(op)[1..].to_vec();
                let mut new_gens = Vec::new();
                let mut new_inits = vec![ctx.operand(op, 0)];
                let mut next_init = inits.iter();
                let old_gens = gens.clone();
                for g in gens {
                    if g.kind.takes_init() {
                        if let Some(&i) = next_init.next() {
                            new_inits.extend(self.leaves(i));
                        }
                    }
                    if !g.elem.contains_struct() {
                        new_gens.push(g);
                        continue;
                    }
                    let leaves = leaf_types(&g.elem).map_err(|m| err(ctx, m))?;
                    for (_, l) in leaves {
                        new_gens.push(Generator {
                            kind: g.kind,
                            elem: l,
                            key: g.key.clone(),
                        });
                    }
                }
                let mut attrs = ctx.op(op).attrs.to_vec();
                for (k, a) in attrs.iter_mut() {
                    if k == "gens" {
                        *a = gens_attr(&new_gens);
                    }
                }
                if old_gens
                    .iter()
                    .any(|g| matches!(g.kind, GenKind::Bucket(_)) && g.elem.contains_struct())
                {
                    self.rebuild_buckets(ctx, op, new_inits, attrs, &old_gens, &new_gens)?;
                } else {
                    self.rebuild(ctx, op, new_inits, attrs)?;
                }
            }
            "scf.if" | "scf.for" | "scf.while" | "scf.yield" | "scf.condition" | "func.return"
            | "func.call" => {
                let operands = self.flat(ctx.operands(op));
                let attrs = ctx.op(op).attrs.to_vec();
                self.rebuild(ctx, op, operands, attrs)?;
            }
            _ => {
                return Err(err(
                    ctx,
                    format!("split-structs: '{name}' on struct values is not supported"),
                ))
            }
        }
        Ok(())
    }

    /// [`Split::rebuild`] for a `gen.loop` with a bucket generator of
    /// records, split into one bucket per field (`new_gens`): the loop
    /// makes keys and values per field bucket, `k0, v0, k1, v1, ...`; the
    /// old keys are the first field's (every field bucket sees the same
    /// keys in the same order), the old values the fields' values.
    fn rebuild_buckets(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        operands: Vec<ValueId>,
        attrs: Vec<(String, Attribute)>,
        old_gens: &[Generator],
        new_gens: &[Generator],
    ) -> Result<(), Diagnostic> {
        let old = ctx.results(op).to_vec();
        let types = dialects::gen::result_types(new_gens);
        let results = recreate(ctx, op, &operands, &types, attrs);
        let (mut k, mut o) = (0, 0);
        for g in old_gens {
            let n = if g.elem.contains_struct() {
                leaf_types(&g.elem)
                    .map_err(|m| Diagnostic::at_op(ctx, op, m))?
                    .len()
            } else {
                1
            };
            if matches!(g.kind, GenKind::Bucket(_)) {
                let (keys, vals) = (old[o], old[o + 1]);
                self.bind(ctx, keys, &[results[k]], &[String::new()]);
                let fields: Vec<ValueId> = (0..n).map(|f| results[k + 2 * f + 1]).collect();
                let paths = paths_of(ctx.ty(vals));
                self.bind(ctx, vals, &fields, &paths);
                k += 2 * n;
                o += 2;
            } else {
                let r = old[o];
                let per = leaves_of_each(ctx, op, &[r])?;
                let m = per[0].len();
                let paths: Vec<String> = per[0].iter().map(|(p, _)| p.clone()).collect();
                self.bind(ctx, r, &results[k..k + m], &paths);
                k += m;
                o += 1;
            }
        }
        self.dead.push(op);
        Ok(())
    }

    /// `op`'s results are the fields `out`, in order.
    fn replace(&mut self, ctx: &mut Context, op: OpId, out: &[ValueId]) {
        let r = ctx.result(op, 0);
        let paths = paths_of(ctx.ty(r));
        self.bind(ctx, r, out, &paths);
        self.dead.push(op);
    }

    /// A copy of `op` with `operands`, `attrs`, its regions, and one result
    /// per leaf of each old result.
    fn rebuild(
        &mut self,
        ctx: &mut Context,
        op: OpId,
        operands: Vec<ValueId>,
        attrs: Vec<(String, Attribute)>,
    ) -> Result<(), Diagnostic> {
        let old = ctx.results(op).to_vec();
        let per_result = leaves_of_each(ctx, op, &old)?;
        let types: Vec<Type> = per_result
            .iter()
            .flatten()
            .map(|(_, t)| t.clone())
            .collect();
        let results = recreate(ctx, op, &operands, &types, attrs);
        self.bind_each(ctx, &old, &per_result, &results);
        self.dead.push(op);
        Ok(())
    }
}

/// A new op of `op`'s kind with `operands`, result `types` and `attrs`,
/// taking over `op`'s regions, inserted right after it; its results.
fn recreate(
    ctx: &mut Context,
    op: OpId,
    operands: &[ValueId],
    types: &[Type],
    attrs: Vec<(String, Attribute)>,
) -> Vec<ValueId> {
    let regions: SmallVec<[ir::RegionId; 2]> = std::mem::take(&mut ctx.op_mut(op).regions)
        .into_iter()
        .collect();
    let (kind, loc) = (ctx.op(op).kind, ctx.loc(op));
    let new = ctx.create_op(kind, operands, types, attrs, &regions, loc);
    let parent = ctx.op(op).parent.expect("converted ops are in a block");
    ctx.insert_op(new, parent, Some(op));
    ctx.results(new).to_vec()
}

/// Right after the field vectors of one vector of records are defined:
/// `scf.assert` that they have one length. A record vector's length is its
/// first field's (`vec.len`), and the asserts let `lower` prove reads of
/// the other fields in bounds at that length ([`crate::bounds`]); they
/// hold by construction except for arguments, where they check the
/// caller (a native call with field vectors of different lengths is a
/// fault, never a read out of bounds).
fn assert_one_length(ctx: &mut Context, fields: &[ValueId]) {
    let last = fields[fields.len() - 1];
    let before = match ctx.value(last).def {
        ir::context::ValueDef::Result(op, _) => ctx.op(op).next,
        ir::context::ValueDef::BlockArg(b, _) => ctx.block(b).first,
    };
    let Some(before) = before else { return };
    let mut b = Builder::before(ctx, before);
    let n = b.op1("vec.len", &[fields[0]], Type::Index, vec![]);
    for &f in &fields[1..] {
        let m = b.op1("vec.len", &[f], Type::Index, vec![]);
        dialects::vec::assert_eq_sizes(
            &mut b,
            n,
            m,
            "the field vectors of a record vector differ in length",
        );
    }
}

fn paths_of(t: &Type) -> Vec<String> {
    t.named_leaves().into_iter().map(|(p, _)| p).collect()
}

fn create(opts: &PassOptions) -> Result<Box<dyn Pass>, String> {
    opts.check_known("split-structs", &[])?;
    Ok(Box::new(SplitStructs))
}

/// Registration record.
pub fn info() -> PassInfo {
    PassInfo {
        name: "split-structs",
        description: "replace struct values by their fields and vectors of structs by one vector per field (AoS to SoA)",
        options: &[],
        create,
    }
}
