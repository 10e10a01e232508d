//! Lowering of `gen.loop` to `arr` + `scf` (phase `"arr"`, `LEVELS.md`).
//!
//! A loop becomes `scf.for %i = 0 to size step 1` whose body is a clone of
//! the loop body with every `gen.emit` to one of the loop's handles
//! rewritten. Per generator (an emit is *top-level* when it sits directly in
//! the loop body, not under `scf.if` nor in a nested loop):
//!
//! | generator | emits | before the loop | at an emit of `x` | after the loop |
//! |---|---|---|---|---|
//! | collect | all `k` top-level | `a = arr.alloc(k * size)` (`{uninit}` for scalars; `size * k` checked not to wrap) | the `j`-th: `arr.store(a, k * i + j, x)` | `arr.to_vec(a)` |
//! | collect | otherwise | `a = arr.alloc(0)` | `arr.push(a, x)` | `arr.to_vec(a)` |
//! | reduce | all top-level | accumulator iter_arg = init | `acc = op(acc, x)` | the `scf.for` result |
//! | reduce | otherwise | `c = arr.alloc(1)`, `store(c, 0, init)` | load / op / store `c[0]` | `arr.load(c, 0)`, `arr.free(c)` |
//! | scan | one, top-level | iter_arg = init, `o = arr.alloc(size)` (`{uninit}` for scalars) | `acc = op(acc, x)`, `arr.store(o, i, acc)` | `arr.to_vec(o)` |
//! | scan | otherwise | cell `c` as for reduce, `o = arr.alloc(0)` | load / op / store `c[0]`, `arr.push(o, acc)` | `arr.free(c)`, `arr.to_vec(o)` |
//! | bucket reduce | any | `ks = arr.alloc(0) : arr<K>`, `vs = arr.alloc(0) : arr<V>` | `j = find_or_insert(ks, k)`; if `j == len(vs)` push the identity; load / op / store `vs[j]` | `to_vec(ks)`, `to_vec(vs)` |
//! | bucket collect | any | `ks` as above, `vs = arr.alloc(0) : arr<arr<V>>` | `j = find_or_insert(ks, k)`; if `j == len(vs)` push `arr.alloc(0)`; `arr.push(vs[j], v)` | `to_vec(ks)`; an `scf.for` over the keys storing `to_vec(vs[j])` into `arr<vec<V>>`; `arr.free(vs)`; `to_vec` of that |
//!
//! Without init operands, reduce/scan start from the monoid's identity. A
//! `gen.running` of a reduce or scan becomes the accumulator's current value
//! (the iter_arg chain's latest value, or a load of the cell); a reduce
//! accumulator it observes is never marked `reassoc`.
//! Emits in a nested loop to an outer handle are rewritten with the outer
//! loop; the nested loops of the cloned body are then lowered recursively, so
//! no `gen` op remains whatever order the driver visits loops in.

use std::collections::HashMap;

use smallvec::SmallVec;

use ir::clone::clone_block_into;
use ir::spec::OpState;
use ir::{Attribute, Builder, Context, OpId, Type, ValueId};

use super::{emits_to, try_generators, BucketOf, GenKind, Generator, Monoid, EMIT, LOOP, RUNNING};
use crate::arr;

/// How one generator is lowered.
#[derive(Clone, Copy, Debug)]
enum Plan {
    /// `per` top-level emits per iteration: the `j`-th stores element
    /// `i * per + j` of `buf` (`size * per` elements).
    CollectDense {
        buf: ValueId,
        per: usize,
    },
    CollectPush {
        buf: ValueId,
    },
    ReduceAcc {
        slot: usize,
    },
    ReduceCell {
        cell: ValueId,
    },
    ScanDense {
        slot: usize,
        out: ValueId,
    },
    ScanCell {
        cell: ValueId,
        out: ValueId,
    },
    BucketReduce {
        keys: ValueId,
        vals: ValueId,
    },
    BucketCollect {
        keys: ValueId,
        vals: ValueId,
    },
}

/// The `"arr"`-phase lowering of `gen.loop` (an [`ir::spec::RewriteFn`]).
pub fn lower_loop(b: &mut Builder, st: &OpState) -> Option<SmallVec<[ValueId; 2]>> {
    let op = st.existing?;
    b.ctx.op(op).parent?;
    if !lowerable(b.ctx, op) {
        return None;
    }
    Some(lower_loop_op(b, op, None))
}

/// Whether index value `v` is provably `>= 0`: a length, a non-negative
/// constant, a sum, product or minimum of such values, a maximum with one,
/// or a quotient or remainder of one by a positive constant.
pub fn non_negative(ctx: &Context, v: ValueId) -> bool {
    let Some(d) = ctx.def_op(v) else {
        return false;
    };
    let name = ctx.op_name(d);
    match name {
        "vec.len" | "arr.len" | "mat.rows" | "mat.cols" => true,
        "arith.constant" => ctx
            .attr(d, "value")
            .and_then(|a| a.as_int())
            .is_some_and(|c| c >= 0),
        "arith.addi" | "arith.muli" | "arith.mini" => {
            ctx.operands(d).iter().all(|&o| non_negative(ctx, o))
        }
        "arith.maxi" => ctx.operands(d).iter().any(|&o| non_negative(ctx, o)),
        "arith.divsi" | "arith.remsi" => {
            let pos = ctx
                .def_op_named(ctx.operand(d, 1), "arith.constant")
                .and_then(|c| ctx.attr(c, "value"))
                .and_then(|a| a.as_int())
                .is_some_and(|c| c > 0);
            pos && non_negative(ctx, ctx.operand(d, 0))
        }
        _ => false,
    }
}

/// Whether `op` and every loop nested in it are well formed enough to lower
/// (checked before anything is built).
pub fn lowerable(ctx: &Context, op: OpId) -> bool {
    std::iter::once(op)
        .chain(ctx.walk_nested(op).into_iter().filter(|&o| ctx.is(o, LOOP)))
        .all(|l| {
            let Ok(gens) = try_generators(ctx, l) else {
                return false;
            };
            let ninit = gens.iter().filter(|g| g.kind.takes_init()).count();
            let n = ctx.operands(l).len();
            n >= 1
                && (n == 1 || n == 1 + ninit)
                && gens.iter().all(|g| {
                    g.monoid().is_none_or(|m| {
                        m.identity(&g.elem).is_some() && m.combine_op(&g.elem).is_some()
                    })
                })
        })
}

/// Whether `op` lies inside an isolated-from-above op (a nested function)
/// that is itself inside block `outer`.
fn in_isolated(ctx: &Context, op: OpId, outer: ir::BlockId) -> bool {
    let mut cur = ctx.parent_op(op);
    while let Some(p) = cur {
        if ctx.has_traits(p, ir::Traits::ISOLATED_FROM_ABOVE) {
            return true;
        }
        if ctx.op(p).parent == Some(outer) {
            return false;
        }
        cur = ctx.parent_op(p);
    }
    false
}

fn const_index(b: &mut Builder, v: i64) -> ValueId {
    crate::arith::const_int(b, v, &Type::Index)
}

fn constant(b: &mut Builder, a: Attribute, ty: &Type) -> ValueId {
    b.op1(
        "arith.constant",
        &[],
        ty.clone(),
        vec![("value".to_string(), a)],
    )
}

fn identity(b: &mut Builder, g: &Generator) -> ValueId {
    let m = g.monoid().expect("reduction without a monoid");
    let a = m.identity(&g.elem).expect("checked by lowerable");
    constant(b, a, &g.elem)
}

/// `scf.assert(size >= 0) {msg = "negative size"}` unless `size` is
/// provably non-negative ([`non_negative`]); `c0` is the index 0. The
/// interpreter faults on a loop of negative size, where an `scf.for` (or a
/// chunking) would just run nothing.
pub fn check_size(b: &mut Builder, size: ValueId, c0: ValueId) {
    if non_negative(b.ctx, size) {
        return;
    }
    let ok = crate::arith::build_cmpi(b, "sge", size, c0);
    crate::scf::build_assert(b, ok, "negative size");
}

/// The op combining `acc` with `x` under monoid `m`. With `reassoc`, a
/// float combine carries `fastmath<reassoc>` (the accumulator of a reduce
/// generator, whose monoid is associative by declaration, IR-SPEC §3),
/// which lets the LLVM backend reassociate it; the interpreter and
/// Cranelift ignore it.
pub fn combine(
    b: &mut Builder,
    m: Monoid,
    ty: &Type,
    acc: ValueId,
    x: ValueId,
    reassoc: bool,
) -> ValueId {
    let name = m.combine_op(ty).expect("checked by lowerable");
    let attrs = if reassoc && ty.is_float() {
        vec![(
            ir::fastmath::KEY.to_string(),
            ir::FastMath::REASSOC.to_attr(),
        )]
    } else {
        vec![]
    };
    b.op1(name, &[acc, x], ty.clone(), attrs)
}

fn yield_(b: &mut Builder, vals: &[ValueId]) {
    let st = b.state("scf.yield", vals, &[], vec![]);
    b.create_raw(st);
}

/// An exact identity of monoid `m` at type `ty`: like [`Monoid::identity`]
/// but `-0.0` for a float sum (`-0.0 + y == y` for every `y`, while
/// `+0.0 + -0.0 == +0.0`).
pub fn exact_identity(m: Monoid, ty: &Type) -> Option<Attribute> {
    match (m, ty.is_float()) {
        (Monoid::Add, true) => Some(Attribute::float(-0.0, ty.clone())),
        _ => m.identity(ty),
    }
}

/// If-conversion of filtered reductions: an emit `scf.if %c { gen.emit(%h,
/// %x) }` to reduce handle `h`, whose `scf.if` sits directly in the loop
/// body, holds nothing else and has no else branch, and whose value `%x` is
/// computed outside the `scf.if`, becomes `gen.emit(%h, select(%c, %x,
/// identity))`: the fold is unchanged (combining with an exact identity is
/// exact, `-0.0` for a float sum), nothing is speculated but a `select`,
/// and the reduction becomes a top-level accumulator (an `iter_arg` with no
/// branch, which compilers vectorize) instead of a memory cell updated
/// under a branch.
fn if_convert_reduce_emits(b: &mut Builder, body: ir::BlockId, h: ValueId, m: Monoid, ty: &Type) {
    let Some(id) = exact_identity(m, ty) else {
        return;
    };
    for e in emits_to(b.ctx, h) {
        let Some(ifop) = if_convertible(b.ctx, body, e) else {
            continue;
        };
        let ctx = &*b.ctx;
        let x = *ctx.operands(e).last().expect("emit without a value");
        let c = ctx.operand(ifop, 0);
        let mut nb = Builder::before(&mut *b.ctx, ifop);
        let idv = constant(&mut nb, id.clone(), ty);
        let sel = nb.op1("arith.select", &[c, x, idv], ty.clone(), vec![]);
        nb.op(EMIT, &[h, sel], &[], vec![]);
        b.ctx.erase_op(ifop);
    }
}

/// The `scf.if` around emit `e` of a loop with body `body` when
/// [`if_convert_reduce_emits`] can turn it into a `select`: the `scf.if`
/// sits directly in the body, has no results, its then-branch holds only
/// the (non-bucket) emit and its else-branch nothing, and the emitted value
/// is computed outside the `scf.if`. (Whether the monoid has an exact
/// identity is the caller's check.)
pub fn if_convertible(ctx: &Context, body: ir::BlockId, e: OpId) -> Option<OpId> {
    let blk = ctx.op(e).parent?;
    let ifop = ctx.block_parent_op(blk)?;
    let x = *ctx.operands(e).last()?;
    let then_only_emit = ctx.block_ops(blk).len() == 2
        && ctx.terminator(blk).is_some_and(|t| ctx.is(t, "scf.yield"))
        && ctx.operands(e).len() == 2;
    let else_empty = ctx.regions(ifop).get(1).is_none_or(|&r| {
        ctx.region(r)
            .blocks
            .iter()
            .all(|&eb| ctx.block_ops(eb).len() <= 1)
    });
    let ok = ctx.is(ifop, "scf.if")
        && ctx.op(ifop).parent == Some(body)
        && ctx.results(ifop).is_empty()
        && ctx.region_block(ctx.regions(ifop)[0]) == blk
        && then_only_emit
        && else_empty
        && !ctx
            .value_block(x)
            .is_some_and(|vb| ctx.block_in_op(vb, ifop));
    ok.then_some(ifop)
}

/// Lowers `op` (checked by [`lowerable`]) before itself; returns the values
/// replacing its results. The caller replaces and erases `op`. `consts` are
/// the index constants 0 and 1 when an enclosing lowering already has them.
fn lower_loop_op(
    b: &mut Builder,
    op: OpId,
    consts: Option<(ValueId, ValueId)>,
) -> SmallVec<[ValueId; 2]> {
    let gens = try_generators(b.ctx, op).expect("checked by lowerable");
    let body = b.ctx.op_block(op, 0);
    let args = b.ctx.block_args(body).to_vec();
    let (iv, handles) = (args[0], args[1..].to_vec());
    let size = b.ctx.operand(op, 0);
    let given_inits = b.ctx.operands(op)[1..].to_vec();
    let (c0, c1) = match consts {
        Some(c) => c,
        None => (const_index(b, 0), const_index(b, 1)),
    };
    check_size(b, size, c0);

    for (g, &h) in gens.iter().zip(&handles) {
        if let GenKind::Reduce(m) = g.kind {
            if_convert_reduce_emits(b, body, h, m, &g.elem);
        }
    }

    // Generators whose running fold the body reads (`gen.running`): their
    // accumulators are observed, so they are never reassociated.
    let observed: Vec<bool> = handles
        .iter()
        .map(|&h| !super::running::reads_of(b.ctx, h).is_empty())
        .collect();

    // Plans and the buffers they need, built before the loop.
    let mut init_it = given_inits.iter();
    let mut plans = Vec::with_capacity(gens.len());
    let mut acc_inits: Vec<ValueId> = Vec::new();
    let mut acc_types: Vec<Type> = Vec::new();
    for (g, &h) in gens.iter().zip(&handles) {
        let emits = emits_to(b.ctx, h);
        let top = emits.iter().all(|&e| b.ctx.op(e).parent == Some(body));
        let single = top && emits.len() == 1;
        let t = g.elem.clone();
        let per = emits.len();
        let init = if g.kind.takes_init() {
            Some(match init_it.next() {
                Some(&v) => v,
                None => identity(b, g),
            })
        } else {
            None
        };
        let plan = match g.kind {
            // Every element is stored before the buffer is read.
            GenKind::Collect if single => Plan::CollectDense {
                buf: arr::alloc_overwritten(b, size, t),
                per: 1,
            },
            // Each iteration runs its top-level emits once, in order (a
            // 2x2 block of a blocked `mat.mul` emits four sums, a block of
            // `passes::jam`'s column reductions 64).
            GenKind::Collect if top && (2..=64).contains(&per) => {
                let k = const_index(b, per as i64);
                let limit = const_index(b, i64::MAX / per as i64);
                let fits = crate::arith::build_cmpi(b, "sle", size, limit);
                crate::scf::build_assert(b, fits, "collect too large");
                let n = b.op1("arith.muli", &[size, k], Type::Index, vec![]);
                Plan::CollectDense {
                    buf: arr::alloc_overwritten(b, n, t),
                    per,
                }
            }
            GenKind::Collect => Plan::CollectPush {
                buf: arr::alloc(b, c0, t),
            },
            GenKind::Reduce(_) if top => {
                acc_inits.push(init.unwrap());
                acc_types.push(t);
                Plan::ReduceAcc {
                    slot: acc_inits.len() - 1,
                }
            }
            GenKind::Reduce(_) => {
                let cell = arr::alloc(b, c1, t);
                arr::store(b, cell, c0, init.unwrap());
                Plan::ReduceCell { cell }
            }
            GenKind::Scan(_) if single => {
                acc_inits.push(init.unwrap());
                acc_types.push(t.clone());
                let out = arr::alloc_overwritten(b, size, t);
                Plan::ScanDense {
                    slot: acc_inits.len() - 1,
                    out,
                }
            }
            GenKind::Scan(_) => {
                let cell = arr::alloc(b, c1, t.clone());
                arr::store(b, cell, c0, init.unwrap());
                let out = arr::alloc(b, c0, t);
                Plan::ScanCell { cell, out }
            }
            GenKind::Bucket(of) => {
                let k = g.key.clone().unwrap_or(Type::Index);
                let keys = arr::alloc(b, c0, k);
                match of {
                    BucketOf::Reduce(_) => Plan::BucketReduce {
                        keys,
                        vals: arr::alloc(b, c0, t),
                    },
                    BucketOf::Collect => Plan::BucketCollect {
                        keys,
                        vals: arr::alloc(b, c0, Type::arr(t)),
                    },
                }
            }
        };
        plans.push(plan);
    }

    // The loop.
    let mut arg_types = vec![Type::Index];
    arg_types.extend(acc_types.iter().cloned());
    let region = b.build_region(&arg_types, |b, fargs| {
        let mut map = HashMap::new();
        map.insert(iv, fargs[0]);
        clone_block_into(b, body, &mut map);
        let nb = b.insertion_point().0;
        let mut cur: Vec<ValueId> = fargs[1..].to_vec();
        let mut nth = vec![0usize; gens.len()];
        // Program order, so top-level accumulator chains are in order.
        for e in b.ctx.walk_block(nb) {
            let running = b.ctx.is(e, RUNNING);
            if !b.ctx.alive(e) || !(b.ctx.is(e, EMIT) || running) {
                continue;
            }
            let h = b.ctx.operand(e, 0);
            let Some(g) = handles.iter().position(|&x| x == h) else {
                continue;
            };
            if running {
                b.set_before(e);
                let acc = running_value(b, plans[g], c0, &cur);
                b.ctx.replace_op(e, &[acc]);
                continue;
            }
            let vals = b.ctx.operands(e)[1..].to_vec();
            b.set_before(e);
            // The element this emit stores, for a dense collect.
            let at = match plans[g] {
                Plan::CollectDense { per, .. } if per > 1 => {
                    let k = const_index(b, per as i64);
                    let base = b.op1("arith.muli", &[fargs[0], k], Type::Index, vec![]);
                    let j = const_index(b, nth[g] as i64);
                    nth[g] += 1;
                    b.op1("arith.addi", &[base, j], Type::Index, vec![])
                }
                _ => fargs[0],
            };
            rewrite_emit(b, &gens[g], plans[g], at, c0, &mut cur, &vals, !observed[g]);
            b.ctx.erase_op(e);
        }
        // Nested loops of the clone (outer ones first; lowering one erases
        // the loops inside it and lowers their clones recursively).
        for l in b.ctx.walk_block(nb) {
            // A loop in a function nested here is its own: it must not see
            // these constants (the greedy driver lowers it later).
            if b.ctx.alive(l) && b.ctx.is(l, LOOP) && !in_isolated(b.ctx, l, nb) {
                b.set_before(l);
                let vals = lower_loop_op(b, l, Some((c0, c1)));
                b.ctx.replace_op(l, &vals);
            }
        }
        b.set_end(nb);
        yield_(b, &cur);
    });
    let mut for_operands = vec![c0, size, c1];
    for_operands.extend(acc_inits.iter().copied());
    let accs = b.op_with_regions("scf.for", &for_operands, &acc_types, vec![], &[region]);

    // Results.
    let mut out = SmallVec::new();
    for (g, plan) in gens.iter().zip(&plans) {
        match *plan {
            Plan::CollectDense { buf, .. } | Plan::CollectPush { buf } => {
                out.push(arr::to_vec(b, buf));
            }
            Plan::ReduceAcc { slot } => out.push(accs[slot]),
            Plan::ReduceCell { cell } => {
                out.push(arr::load(b, cell, c0));
                arr::free(b, cell);
            }
            Plan::ScanDense { out: o, .. } => out.push(arr::to_vec(b, o)),
            Plan::ScanCell { cell, out: o } => {
                arr::free(b, cell);
                out.push(arr::to_vec(b, o));
            }
            Plan::BucketReduce { keys, vals } => {
                out.push(arr::to_vec(b, keys));
                out.push(arr::to_vec(b, vals));
            }
            Plan::BucketCollect { keys, vals } => {
                out.push(arr::to_vec(b, keys));
                let vt = Type::vec(g.elem.clone());
                let nk = arr::len(b, vals);
                let res = arr::alloc(b, nk, vt);
                let r = b.build_region(&[Type::Index], |b, a| {
                    let buf = arr::load(b, vals, a[0]);
                    let v = arr::to_vec(b, buf);
                    arr::store(b, res, a[0], v);
                    yield_(b, &[]);
                });
                b.op_with_regions("scf.for", &[c0, nk, c1], &[], vec![], &[r]);
                arr::free(b, vals);
                out.push(arr::to_vec(b, res));
            }
        }
    }
    out
}

/// The accumulator a `gen.running` reads under `plan` (a reduce or scan;
/// the builder is before it): the current iter_arg value of a top-level
/// accumulator, or a load of its cell.
fn running_value(b: &mut Builder, plan: Plan, c0: ValueId, cur: &[ValueId]) -> ValueId {
    match plan {
        Plan::ReduceAcc { slot } | Plan::ScanDense { slot, .. } => cur[slot],
        Plan::ReduceCell { cell } | Plan::ScanCell { cell, .. } => arr::load(b, cell, c0),
        _ => unreachable!("gen.running of a generator that is no reduce or scan (verified)"),
    }
}

/// Replaces one emit (the builder is before it) according to `plan`. With
/// `reassoc`, a top-level reduce accumulator may be reassociated (nothing
/// observes its intermediate values).
#[allow(clippy::too_many_arguments)]
fn rewrite_emit(
    b: &mut Builder,
    g: &Generator,
    plan: Plan,
    iv: ValueId,
    c0: ValueId,
    cur: &mut [ValueId],
    vals: &[ValueId],
    reassoc: bool,
) {
    let t = &g.elem;
    let x = *vals.last().expect("emit without a value");
    match plan {
        // `buf` has `size * per` elements and `iv` is the emit's element
        // (`i * per + j`, `i` in [0, size), `j` in [0, per)).
        Plan::CollectDense { buf, .. } => arr::store_in_bounds(b, buf, iv, x),
        Plan::CollectPush { buf } => arr::push(b, buf, x),
        Plan::ReduceAcc { slot } => {
            cur[slot] = combine(b, g.monoid().unwrap(), t, cur[slot], x, reassoc);
        }
        Plan::ReduceCell { cell } => {
            let a = arr::load(b, cell, c0);
            let a2 = combine(b, g.monoid().unwrap(), t, a, x, false);
            arr::store(b, cell, c0, a2);
        }
        Plan::ScanDense { slot, out } => {
            let a2 = combine(b, g.monoid().unwrap(), t, cur[slot], x, false);
            arr::store_in_bounds(b, out, iv, a2);
            cur[slot] = a2;
        }
        Plan::ScanCell { cell, out } => {
            let a = arr::load(b, cell, c0);
            let a2 = combine(b, g.monoid().unwrap(), t, a, x, false);
            arr::store(b, cell, c0, a2);
            arr::push(b, out, a2);
        }
        Plan::BucketReduce { keys, vals: vs } => {
            let j = arr::find_or_insert(b, keys, vals[0]);
            let n = arr::len(b, vs);
            let is_new = b.op1(
                "arith.cmpi",
                &[j, n],
                Type::I1,
                vec![("predicate".to_string(), Attribute::Str("eq".into()))],
            );
            let id = identity(b, g);
            crate::scf::build_if_then(b, is_new, |b| arr::push(b, vs, id));
            let a = arr::load(b, vs, j);
            let a2 = combine(b, g.monoid().unwrap(), t, a, x, false);
            arr::store(b, vs, j, a2);
        }
        Plan::BucketCollect { keys, vals: vs } => {
            let j = arr::find_or_insert(b, keys, vals[0]);
            let n = arr::len(b, vs);
            let is_new = b.op1(
                "arith.cmpi",
                &[j, n],
                Type::I1,
                vec![("predicate".to_string(), Attribute::Str("eq".into()))],
            );
            let t = t.clone();
            crate::scf::build_if_then(b, is_new, |b| {
                let fresh = arr::alloc(b, c0, t);
                arr::push(b, vs, fresh);
            });
            let buf = arr::load(b, vs, j);
            arr::push(b, buf, x);
        }
    }
}
