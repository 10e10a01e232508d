//! The parallel decomposition of top-level `gen.loop`s (issue 8), applied by
//! `lower` just before the `arr` phase: a loop over `[0, n)` becomes chunks
//! whose bodies produce partial results, run by an `scf.forall`, and a
//! combine step. The chunks are fixed by `n` alone, never by the thread
//! count, so results are bit-identical for every `--threads`.
//!
//! Chunking: `cs = max(grain, n / max_chunks + 1)` indices per chunk (at
//! most `max_chunks` chunks) and `nc = ceil(n / cs)` chunks; chunk `c`
//! covers `[c*cs, min(n, c*cs + cs))`. Loops below `grain` are one chunk,
//! which the runtime runs inline. A loop whose body holds a loop takes a
//! grain of 1 (up to `max_chunks` chunks of any size).
//!
//! Each chunk runs a `gen.loop` over its indices (index `i = lo + j`) with
//! the original body; the per-generator plans (Delite's multicore loops and
//! Futhark's segmented operations, in the order the issue fixes):
//!
//! | generator | in chunk `c` | after the chunks |
//! |---|---|---|
//! | collect, one top-level emit | `arr.store(out, i, x)` into `out = arr.alloc(n)`: each chunk writes its slice | `arr.to_vec(out)` |
//! | reduce | a chunk-local reduce from the exact identity, stored in `parts[c]` | fold `init, parts[0], parts[1], ...` in chunk order |
//! | collect (filter, flatMap) | a chunk-local collect, stored in `locals[c]` | positions by a prefix sum of the lengths, then a second `scf.forall` copies each chunk to its position |
//! | scan | a chunk-local scan from the identity in `locals[c]` | an exclusive scan of the chunk totals (from `init`), then each chunk adds its offset while copying |
//! | bucket | a chunk-local bucket: keys and values in `keys[c]`, `vals[c]` | a sequential `gen.loop` over chunks and their keys re-emits every (key, value) to the same bucket generator: keys in first-seen order, values combined in chunk order |
//!
//! A loop is decomposed when it is *top-level* (no `gen.loop` or
//! `scf.forall` around it, though it may stand in `scf.for` and `scf.while`
//! bodies; not in a GPU kernel), the arr
//! lowering accepts it, its size is not a constant below `grain`, and its
//! iterations provably touch no shared memory: every op in it that writes
//! memory writes memory allocated inside the loop, and no call gets an `arr`
//! or `var` operand, and its body reads no running fold of its own
//! generators (`gen.running`). Anything else stays sequential.

use std::collections::HashMap;

use ir::clone::clone_block_into;
use ir::{Attribute, Builder, Context, OpId, Traits, Type, ValueId};
use smallvec::SmallVec;

use dialects::arr;
use dialects::gen::{self, lower::exact_identity, GenKind, Generator, Monoid};
use dialects::scf;

/// Chunking parameters (pass options of `lower`).
#[derive(Clone, Copy, Debug)]
pub struct ParallelOptions {
    /// Fewest indices per chunk (loops below it are one chunk).
    pub grain: i64,
    /// Most chunks per loop.
    pub max_chunks: i64,
}

impl Default for ParallelOptions {
    fn default() -> Self {
        ParallelOptions {
            grain: 4096,
            max_chunks: 256,
        }
    }
}

impl ParallelOptions {
    /// Checks the options (both at least 1).
    pub fn check(&self) -> Result<(), String> {
        if self.grain < 1 || self.max_chunks < 1 {
            return Err("options 'grain' and 'chunks' must be at least 1".into());
        }
        Ok(())
    }
}

/// Decomposes every eligible loop; returns how many were decomposed.
pub fn decompose(ctx: &mut Context, opts: &ParallelOptions) -> u64 {
    let loops: Vec<OpId> = ctx
        .walk_all()
        .into_iter()
        .filter(|&op| ctx.is(op, gen::LOOP) && eligible(ctx, op, opts))
        .collect();
    if ir::remarks::enabled("lower") {
        remark_sequential(ctx, opts);
    }
    for &op in &loops {
        decompose_loop(ctx, op, opts);
    }
    loops.len() as u64
}

/// Whether `op` (a `gen.loop`) is decomposed.
fn eligible(ctx: &Context, op: OpId, opts: &ParallelOptions) -> bool {
    top_level(ctx, op) && why_sequential(ctx, op, opts).is_none()
}

/// Why top-level loop `op` stays on one thread, or `None` when it is
/// decomposed.
fn why_sequential(ctx: &Context, op: OpId, opts: &ParallelOptions) -> Option<String> {
    if !gen::lower::lowerable(ctx, op) {
        return Some("the arr lowering does not accept it".into());
    }
    if !gen::try_generators(ctx, op).is_ok_and(|g| !g.is_empty()) {
        return Some("it has no generator".into());
    }
    let grain = grain_of(ctx, op, opts);
    if let Some(n) = scf::constant_int(ctx, gen::size(ctx, op)).filter(|&n| n < grain) {
        return Some(format!("its size {n} is below the grain {grain}"));
    }
    if !iterations_independent(ctx, op) {
        return Some(
            "its body writes memory allocated outside it, or calls a function that may".into(),
        );
    }
    if gen::running::reads_own_generators(ctx, op) {
        return Some("its body reads a running fold of its own generators (gen.running)".into());
    }
    None
}

/// `--remarks=lower`: each top-level loop left on one thread, and why.
fn remark_sequential(ctx: &Context, opts: &ParallelOptions) {
    for op in ctx.walk_all() {
        if !ctx.is(op, gen::LOOP) || !top_level(ctx, op) {
            continue;
        }
        if let Some(why) = why_sequential(ctx, op, opts) {
            ir::remarks::emit(
                "lower",
                ctx.loc(op),
                format!("loop runs on one thread: {why}"),
            );
        }
    }
}

/// The fewest indices per chunk of loop `op`: 1 for the loop of a
/// user-defined operator's partials (each iteration a whole chunk,
/// `dialects::vec_combine::chunked::CHUNKS_ATTR`) and for a loop whose body
/// holds a loop (each index is a loop's work: mri-q's 32768 voxels, each a
/// loop over 2048 samples, made 8 chunks of 230 ms at grain 4096, and two
/// threads finished them in 1.16 s where 1.84 s of work was to do; the
/// runtime claims cheap chunks in batches, so small ones cost little), else
/// the option.
fn grain_of(ctx: &Context, op: OpId, opts: &ParallelOptions) -> i64 {
    if ctx
        .attr(op, dialects::vec_combine::chunked::CHUNKS_ATTR)
        .is_some()
    {
        return 1;
    }
    let nested = ctx
        .walk_nested(op)
        .into_iter()
        .any(|o| matches!(ctx.op_name(o), "gen.loop" | "scf.for" | "scf.while"));
    if nested {
        1
    } else {
        opts.grain
    }
}

/// No parallel loop around `op` (a `gen.loop` that may itself be
/// decomposed, or an `scf.forall`), and not in a GPU kernel. Sequential
/// loops around it (`scf.for`, `scf.while`: a stencil's time steps) are
/// fine: each of their iterations runs the chunks of `op` in parallel.
fn top_level(ctx: &Context, op: OpId) -> bool {
    let mut p = ctx.parent_op(op);
    while let Some(q) = p {
        match ctx.op_name(q) {
            "gen.loop" | "scf.forall" => return false,
            "func.func" if dialects::gpu::is_kernel(ctx, q) => return false,
            _ => {}
        }
        p = ctx.parent_op(q);
    }
    true
}

/// Every write in `op` is to memory allocated in `op`, and no call can
/// reach memory from outside (functions see only their operands, and only
/// an `arr` operand is mutable; a declaration's code is unknown, so a call
/// to one is never independent).
fn iterations_independent(ctx: &Context, op: OpId) -> bool {
    let inside = |v: ValueId| ctx.value_block(v).is_some_and(|b| ctx.block_in_op(b, op));
    ctx.walk_nested(op).into_iter().all(|o| {
        let name = ctx.op_name(o);
        if name == "func.call" {
            // A declaration's code is unknown: it may touch global state.
            let declared = dialects::func::callee(ctx, o)
                .and_then(|c| ctx.lookup_symbol(c))
                .is_none_or(|f| dialects::func::is_declaration(ctx, f));
            return !declared
                && ctx
                    .operands(o)
                    .iter()
                    .all(|&v| !matches!(ctx.ty(v), Type::Arr(_)));
        }
        if !ctx.has_traits(o, Traits::WRITES)
            || matches!(name, "gen.emit" | "gen.end" | "scf.assert")
        {
            return true;
        }
        ctx.operands(o).first().is_some_and(|&m| inside(m))
    })
}

fn index(b: &mut Builder, v: i64) -> ValueId {
    b.constant(Attribute::int(v, Type::Index), &Type::Index)
}

fn bin(b: &mut Builder, name: &str, x: ValueId, y: ValueId) -> ValueId {
    let t = b.ctx.ty(x).clone();
    b.op1(name, &[x, y], t, vec![])
}

/// `vec.get(v, j) {in_bounds}` (the caller knows `j < len(v)`).
fn get_in_bounds(b: &mut Builder, v: ValueId, j: ValueId) -> ValueId {
    let t = b.ctx.ty(v).elem().cloned().expect("a vector");
    b.op1(
        "vec.get",
        &[v, j],
        t,
        vec![("in_bounds".to_string(), Attribute::Unit)],
    )
}

/// `x op y` under monoid `m` (no `reassoc`: the combine step's order is
/// fixed, see [`gen::lower::combine`]).
fn combine(b: &mut Builder, m: Monoid, ty: &Type, x: ValueId, y: ValueId) -> ValueId {
    gen::lower::combine(b, m, ty, x, y, false)
}

/// How one generator is decomposed.
enum Plan {
    /// Collect with one top-level emit: chunks store into `out`.
    Dense { out: ValueId },
    /// Reduce: one partial per chunk.
    Reduce { parts: ValueId },
    /// Collect or scan: a vector per chunk.
    Local { locals: ValueId },
    /// Bucket: keys and values per chunk.
    Bucket { keys: ValueId, vals: ValueId },
}

fn decompose_loop(ctx: &mut Context, op: OpId, opts: &ParallelOptions) {
    let gens = gen::generators(ctx, op);
    let body = gen::body(ctx, op);
    let iv = gen::induction_var(ctx, op);
    let handles = gen::handles(ctx, op).to_vec();
    let n = gen::size(ctx, op);
    let inits = gen::inits(ctx, op);
    let dense: Vec<bool> = gens
        .iter()
        .zip(&handles)
        .map(|(g, &h)| {
            let e = gen::emits_to(ctx, h);
            matches!(g.kind, GenKind::Collect) && e.len() == 1 && ctx.op(e[0]).parent == Some(body)
        })
        .collect();

    let mut b = Builder::before(ctx, op);
    let (c0, c1) = (index(&mut b, 0), index(&mut b, 1));
    gen::lower::check_size(&mut b, n, c0);
    // Chunking (a function of n only).
    let g = grain_of(b.ctx, op, opts);
    let (grain, maxc) = (index(&mut b, g), index(&mut b, opts.max_chunks));
    let q = bin(&mut b, "arith.divsi", n, maxc);
    let q1 = bin(&mut b, "arith.addi", q, c1);
    let cs = bin(&mut b, "arith.maxi", grain, q1);
    let whole = bin(&mut b, "arith.divsi", n, cs);
    let rest = bin(&mut b, "arith.remsi", n, cs);
    let partial = b.op1(
        "arith.cmpi",
        &[rest, c0],
        Type::I1,
        vec![("predicate".into(), Attribute::Str("ne".into()))],
    );
    let extra = b.op1("arith.select", &[partial, c1, c0], Type::Index, vec![]);
    let nc = bin(&mut b, "arith.addi", whole, extra);

    // Buffers of the partial results.
    let plans: Vec<Plan> = gens
        .iter()
        .zip(&dense)
        .map(|(g, &d)| match g.kind {
            // Each chunk stores every element of its range.
            _ if d => Plan::Dense {
                out: arr::alloc_overwritten(&mut b, n, g.elem.clone()),
            },
            GenKind::Reduce(_) => Plan::Reduce {
                parts: arr::alloc(&mut b, nc, g.elem.clone()),
            },
            GenKind::Collect | GenKind::Scan(_) => Plan::Local {
                locals: arr::alloc(&mut b, nc, Type::vec(g.elem.clone())),
            },
            GenKind::Bucket(_) => {
                let rt = g.result_types();
                Plan::Bucket {
                    keys: arr::alloc(&mut b, nc, rt[0].clone()),
                    vals: arr::alloc(&mut b, nc, rt[1].clone()),
                }
            }
        })
        .collect();

    // The chunks.
    let inner: Vec<usize> = (0..gens.len()).filter(|&k| !dense[k]).collect();
    let inner_gens: Vec<Generator> = inner.iter().map(|&k| gens[k].clone()).collect();
    let region = b.build_region(&[Type::Index], |b, a| {
        let c = a[0];
        let lo = bin(b, "arith.muli", c, cs);
        let end = bin(b, "arith.addi", lo, cs);
        let hi = bin(b, "arith.mini", n, end);
        // hi >= lo for every chunk; the max lets the lowering see it.
        let diff = bin(b, "arith.subi", hi, lo);
        let len = bin(b, "arith.maxi", diff, c0);
        let inner_inits: Vec<ValueId> = inner_gens
            .iter()
            .filter(|g| g.kind.takes_init())
            .map(|g| {
                let m = g.monoid().expect("reduce or scan");
                let id = exact_identity(m, &g.elem).expect("checked by lowerable");
                b.constant(id, &g.elem)
            })
            .collect();
        let res = gen::build_loop(b, len, &inner_inits, &inner_gens, |b, j, hs| {
            let i = bin(b, "arith.addi", lo, j);
            let mut map = HashMap::new();
            map.insert(iv, i);
            for (&k, &h) in inner.iter().zip(hs) {
                map.insert(handles[k], h);
            }
            let nb = b.insertion_point().0;
            clone_block_into(b, body, &mut map);
            // Emits to a dense collect store into its slice of `out`.
            for e in b.ctx.block_ops(nb) {
                if !b.ctx.is(e, gen::EMIT) {
                    continue;
                }
                let h = b.ctx.operand(e, 0);
                let Some(k) = handles.iter().position(|&x| x == h) else {
                    continue;
                };
                let Plan::Dense { out } = plans[k] else {
                    continue;
                };
                let x = b.ctx.operand(e, 1);
                b.set_before(e);
                arr::store_in_bounds(b, out, i, x);
                b.ctx.erase_op(e);
            }
            b.set_end(nb);
        });
        let offsets = gen::result_offsets(&inner_gens);
        for (&k, &off) in inner.iter().zip(&offsets) {
            match plans[k] {
                Plan::Dense { .. } => {}
                Plan::Reduce { parts: t } | Plan::Local { locals: t } => {
                    arr::store_in_bounds(b, t, c, res[off]);
                }
                Plan::Bucket { keys, vals } => {
                    arr::store_in_bounds(b, keys, c, res[off]);
                    arr::store_in_bounds(b, vals, c, res[off + 1]);
                }
            }
        }
        scf::build_yield(b, &[]);
    });
    b.op_with_regions("scf.forall", &[nc], &[], vec![], &[region]);

    // The combine step.
    let mut results: SmallVec<[ValueId; 2]> = SmallVec::new();
    let mut copies: Vec<(usize, ValueId)> = Vec::new();
    for (k, g) in gens.iter().enumerate() {
        let init = |b: &mut Builder| -> ValueId {
            inits[k].unwrap_or_else(|| {
                let m = g.monoid().expect("reduce or scan");
                let id = m.identity(&g.elem).expect("checked by lowerable");
                b.constant(id, &g.elem)
            })
        };
        match plans[k] {
            Plan::Dense { out } => results.push(arr::to_vec(&mut b, out)),
            Plan::Reduce { parts } => {
                let m = g.monoid().expect("reduce");
                let start = init(&mut b);
                let r = scf::build_for(&mut b, c0, nc, c1, &[start], |b, c, acc| {
                    let x = arr::load_in_bounds(b, parts, c);
                    vec![combine(b, m, &g.elem, acc[0], x)]
                });
                arr::free(&mut b, parts);
                results.push(r[0]);
            }
            Plan::Local { locals } => {
                // Placeholder, filled by the copy step below.
                copies.push((k, locals));
                results.push(locals);
            }
            Plan::Bucket { keys, vals } => {
                results.extend(merge_buckets(&mut b, g, nc, keys, vals));
                arr::free(&mut b, keys);
                arr::free(&mut b, vals);
            }
        }
    }
    if !copies.is_empty() {
        let offsets = gen::result_offsets(&gens);
        let outs = concatenate(&mut b, &gens, &inits, nc, &copies);
        for ((k, _), v) in copies.iter().zip(outs) {
            results[offsets[*k]] = v;
        }
    }
    ctx.replace_op(op, &results);
}

/// The combine step of the collect and scan generators `copies` (generator
/// index, per-chunk vectors): positions by a prefix sum of the chunk
/// lengths (and, for a scan, offsets by an exclusive scan of the chunk
/// totals from the init), then one `scf.forall` copying every chunk to its
/// position (a scan adding its offset). Returns the result vectors.
fn concatenate(
    b: &mut Builder,
    gens: &[Generator],
    inits: &[Option<ValueId>],
    nc: ValueId,
    copies: &[(usize, ValueId)],
) -> Vec<ValueId> {
    let (c0, c1) = (index(b, 0), index(b, 1));
    // Per generator: positions, offsets (scan), total length.
    let mut tables = Vec::new();
    for &(k, locals) in copies {
        let g = &gens[k];
        // The loop below stores every position (and offset), and the
        // copies every element of the output.
        let pos = arr::alloc_overwritten(b, nc, Type::Index);
        let scan = match g.kind {
            GenKind::Scan(m) => {
                let start = inits[k].unwrap_or_else(|| {
                    let id = m.identity(&g.elem).expect("checked by lowerable");
                    b.constant(id, &g.elem)
                });
                Some((m, arr::alloc_overwritten(b, nc, g.elem.clone()), start))
            }
            _ => None,
        };
        let mut start = vec![c0];
        if let Some((_, _, s)) = scan {
            start.push(s);
        }
        let elem = g.elem.clone();
        let r = scf::build_for(b, c0, nc, c1, &start, |b, c, acc| {
            let v = arr::load_in_bounds(b, locals, c);
            let len = b.op1("vec.len", &[v], Type::Index, vec![]);
            arr::store_in_bounds(b, pos, c, acc[0]);
            let mut next = vec![bin(b, "arith.addi", acc[0], len)];
            if let Some((m, offs, _)) = scan {
                arr::store_in_bounds(b, offs, c, acc[1]);
                let empty = b.op1(
                    "arith.cmpi",
                    &[len, c0],
                    Type::I1,
                    vec![("predicate".into(), Attribute::Str("eq".into()))],
                );
                let t = elem.clone();
                let total = scf::build_if(
                    b,
                    empty,
                    std::slice::from_ref(&t),
                    |_| vec![acc[1]],
                    |b| {
                        let last_i = bin(b, "arith.subi", len, c1);
                        let last = get_in_bounds(b, v, last_i);
                        vec![combine(b, m, &t, acc[1], last)]
                    },
                );
                next.push(total[0]);
            }
            next
        });
        let out = arr::alloc_overwritten(b, r[0], g.elem.clone());
        tables.push((locals, pos, scan.map(|(m, offs, _)| (m, offs)), out));
    }
    let region = b.build_region(&[Type::Index], |b, a| {
        let c = a[0];
        for (&(k, _), &(locals, pos, scan, out)) in copies.iter().zip(&tables) {
            let elem = gens[k].elem.clone();
            let v = arr::load_in_bounds(b, locals, c);
            let at = arr::load_in_bounds(b, pos, c);
            let off = scan.map(|(m, offs)| (m, arr::load_in_bounds(b, offs, c)));
            let len = b.op1("vec.len", &[v], Type::Index, vec![]);
            scf::build_for(b, c0, len, c1, &[], |b, j, _| {
                let x = get_in_bounds(b, v, j);
                let y = match off {
                    Some((m, o)) => combine(b, m, &elem, o, x),
                    None => x,
                };
                let p = bin(b, "arith.addi", at, j);
                arr::store_in_bounds(b, out, p, y);
                vec![]
            });
        }
        scf::build_yield(b, &[]);
    });
    b.op_with_regions("scf.forall", &[nc], &[], vec![], &[region]);
    let mut outs = Vec::new();
    for &(locals, pos, scan, out) in &tables {
        arr::free(b, locals);
        arr::free(b, pos);
        if let Some((_, offs)) = scan {
            arr::free(b, offs);
        }
        outs.push(arr::to_vec(b, out));
    }
    outs
}

/// The combine step of a bucket generator: a sequential `gen.loop` over the
/// chunks whose nested loops re-emit every chunk's (key, value) pairs (for
/// a bucket of collects, every value of every key) to a bucket generator
/// like `g`, so keys come in first-seen order and values are combined (or
/// concatenated) in chunk order. Returns its two results.
fn merge_buckets(
    b: &mut Builder,
    g: &Generator,
    nc: ValueId,
    keys: ValueId,
    vals: ValueId,
) -> SmallVec<[ValueId; 2]> {
    let collect = matches!(g.kind, GenKind::Bucket(gen::BucketOf::Collect));
    gen::build_loop(b, nc, &[], std::slice::from_ref(g), |b, c, hs| {
        let h = hs[0];
        let ks = arr::load_in_bounds(b, keys, c);
        let vs = arr::load_in_bounds(b, vals, c);
        let nk = b.op1("vec.len", &[ks], Type::Index, vec![]);
        // A nested loop with one collect generator it never emits to
        // (gen.loop has at least one generator); its result is unused.
        let unused = [Generator::collect(Type::Index)];
        gen::build_loop(b, nk, &[], &unused, |b, j, _| {
            let key = get_in_bounds(b, ks, j);
            let v = get_in_bounds(b, vs, j);
            if collect {
                let nv = b.op1("vec.len", &[v], Type::Index, vec![]);
                gen::build_loop(b, nv, &[], &unused, |b, t, _| {
                    let x = get_in_bounds(b, v, t);
                    gen::emit_kv(b, h, key, x);
                });
            } else {
                gen::emit_kv(b, h, key, v);
            }
        });
    })
}
