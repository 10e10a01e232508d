//! Buckets in kernels (issue 41, item 3: "buckets and histograms"): a
//! `#gen.bucket<#gen.reduce<m>>` generator with integer keys becomes a
//! grouping by a hash table on the device and a histogram.
//!
//! A bucket's result is the distinct keys in first-seen order and, per key,
//! the fold of its values from the monoid's identity (IR-SPEC, `gen`). Under
//! `lower{target=gpu}`, before the phases (`Lower::run`), a loop whose
//! bucket generator has scalar keys (integers, `i1`, or floats compared by
//! bit pattern) and scalar values of a monoid with an identity is rewritten
//! (at any depth of host code):
//! 1. the bucket becomes two collects, of its keys `ks` and of its values
//!    `vs`, fed where the bucket was (`gen.emit %h, %k, %v` becomes an
//!    emit of `%k` and one of `%v`): a loop like any other (a flatMap
//!    where the emits are conditional);
//! 2. a hash table of `T = 2c + 1` slots for the `c` pairs (open
//!    addressing, linear probing): an `scf.forall` over the pairs, marked
//!    `l0.left_fold = "gen.bucket"`, where pair `j` claims the first slot
//!    from its key's hash that is free (`gpu.atomic_cas` of `0` to `j + 1`)
//!    or owned by a pair with its key (owners never change, and the keys
//!    are read from `ks`, so no thread waits for another), records its slot
//!    and makes the slot's first pair the smallest `j` (`gpu.atomic_rmw
//!    max` of `c - j`). It runs as a kernel with a thread per pair
//!    ([`super::chunks`]); some slot is always free, so each probe ends;
//! 3. `first[j]`, the first pair with `j`'s key; pair `j` is its key's head
//!    when `first[j] == j`; the inclusive scan of the heads numbers the keys
//!    in first-seen order; the heads' keys are the result's keys (a filter),
//!    `scan[first[j]] - 1` is pair `j`'s key number;
//! 4. the values: `vec.hist #gen.reduce<m>` of `vs` by key number into the
//!    identity, one bin per key (atomics for integer `add`/`min`/`max`,
//!    else [`dialects::vec_combine::hist`]'s chunks: a bin's values in
//!    order, grouped by the lengths alone).
//!
//! Every step is data parallel, and the result does not depend on which
//! thread wins a slot: the keys' order and numbers come from the smallest
//! `j`s, the values' grouping from the lengths.
//!
//! A bucket of collects (scalar values) is grouped the same way up to the
//! key numbers; its rows come from a stable sort of the pairs by key
//! number, the counts per key and their scan ([`rows`]).

use ir::{Attribute, Builder, Context, OpId, Type, ValueId};

use dialects::arith::{build_binop, build_cmpi, const_int};
use dialects::gen::{self, BucketOf, GenKind, Generator, Monoid};
use dialects::{arr, gpu, scf, vec};

use crate::fuse::loops::{self, Gen};

/// The value of the marker attribute on a bucket's table loop.
pub const TABLE_LOOP: &str = "gen.bucket";

/// Rewrites every bucket of reduces with integer keys in host code (see
/// the module documentation); returns how many.
pub fn group_buckets(ctx: &mut Context) -> u64 {
    let loops: Vec<OpId> = ctx
        .walk_all()
        .into_iter()
        .filter(|&op| ctx.is(op, gen::LOOP))
        .filter(|&op| gpu::enclosing_kernel(ctx, op).is_none())
        .collect();
    let mut n = 0;
    for l in loops {
        let mut cur = l;
        while let Some(p) = groupable(ctx, cur) {
            cur = rewrite(ctx, cur, p);
            n += 1;
        }
    }
    n
}

/// The position of a bucket generator of `l` to rewrite, if any.
fn groupable(ctx: &Context, l: OpId) -> Option<usize> {
    let gens = gen::try_generators(ctx, l).ok()?;
    let handles = gen::handles(ctx, l);
    gens.iter().zip(handles).position(|(g, &h)| {
        let elem_ok = match g.kind {
            GenKind::Bucket(BucketOf::Reduce(m)) => {
                super::scalar(&g.elem) && Monoid::supports(&g.elem) && m.identity(&g.elem).is_some()
            }
            GenKind::Bucket(BucketOf::Collect) => super::scalar(&g.elem),
            _ => false,
        };
        let key_ok = matches!(
            g.key.as_ref(),
            Some(Type::I1 | Type::I32 | Type::I64 | Type::Index | Type::F32 | Type::F64)
        );
        let only_emits = ctx
            .uses(h)
            .iter()
            .all(|u| u.index == 0 && ctx.is(u.op, gen::EMIT) && ctx.operands(u.op).len() == 3);
        key_ok && elem_ok && only_emits
    })
}

/// Rewrites bucket generator `p` of loop `l`; returns the new loop.
fn rewrite(ctx: &mut Context, l: OpId, p: usize) -> OpId {
    let g = gen::generators(ctx, l)[p].clone();
    let GenKind::Bucket(of) = g.kind else {
        unreachable!("checked by groupable")
    };
    let kt = g.key.clone().expect("a bucket has a key type");
    let vt = g.elem.clone();
    let view = loops::view(ctx, l).expect("a well-formed loop");
    let body = view.body;
    let hk = gen::handles(ctx, l)[p];
    let hv = ctx.add_block_arg(body, Generator::collect(vt.clone()).handle_type(), None);
    ctx.set_type(hk, Generator::collect(kt.clone()).handle_type());
    for e in gen::emits_to(ctx, hk) {
        let (k, v) = (ctx.operand(e, 1), ctx.operand(e, 2));
        ctx.set_operands(e, &[hk, k]);
        gen::emit(&mut Builder::before(ctx, e), hv, v);
    }
    // The values' collect holds scalars (a bucket of collects' result
    // holds their rows until `group` makes them).
    let vals = view.gens[p].results[1];
    ctx.set_type(vals, Type::vec(vt.clone()));
    let collect = GenKind::Collect.attr();
    let mut gens = Vec::new();
    for (k, og) in view.gens.iter().enumerate() {
        if k != p {
            gens.push(og.clone());
            continue;
        }
        gens.push(Gen {
            attr: collect.clone(),
            kind: "collect".into(),
            handle: hk,
            init: None,
            results: smallvec::smallvec![og.results[0]],
        });
        gens.push(Gen {
            attr: collect.clone(),
            kind: "collect".into(),
            handle: hv,
            init: None,
            results: smallvec::smallvec![og.results[1]],
        });
    }
    let ops = loops::body_ops(ctx, body);
    let nl = loops::build_loop(ctx, l, view.size, &gens, &[view.index], &ops);
    // build_loop moved the old results' uses to the new loop's.
    let offs = gen::result_offsets(&gen::generators(ctx, nl));
    let ks = ctx.result(nl, offs[p]);
    let vs = ctx.result(nl, offs[p + 1]);
    let users: Vec<(OpId, u32, bool)> = ctx
        .uses(ks)
        .iter()
        .map(|u| (u.op, u.index, true))
        .chain(ctx.uses(vs).iter().map(|u| (u.op, u.index, false)))
        .collect();
    ctx.erase_op(l);

    let (uk, red) = group(ctx, nl, ks, vs, &kt, &vt, of);
    for (op, index, is_key) in users {
        ctx.set_operand(op, index as usize, if is_key { uk } else { red });
    }
    nl
}

/// Builds steps 2-4 after loop `l` for its collected keys `ks` and values
/// `vs`; returns the distinct keys and their folds (a bucket of reduces) or
/// their rows of values ([`rows`], a bucket of collects).
fn group(
    ctx: &mut Context,
    l: OpId,
    ks: ValueId,
    vs: ValueId,
    kt: &Type,
    vt: &Type,
    of: BucketOf,
) -> (ValueId, ValueId) {
    let mut b = Builder::after(ctx, l);
    let b = &mut b;
    let ix = Type::Index;
    let zero = const_int(b, 0, &ix);
    let one = const_int(b, 1, &ix);
    let c = vec::len(b, ks);
    let two = const_int(b, 2, &ix);
    let c2 = build_binop(b, "arith.muli", c, two);
    let t = build_binop(b, "arith.addi", c2, one);
    let owner = arr::alloc(b, t, ix.clone());
    let first = arr::alloc(b, t, ix.clone());
    let slot_of = arr::alloc(b, c, ix.clone());
    let region = b.build_region(std::slice::from_ref(&ix), |b, args| {
        let j = args[0];
        let k = vec::get_in_bounds(b, ks, j);
        let hk = key_bits(b, k, kt);
        // A multiplicative hash (Knuth), its high bits folded down.
        let mul = const_int(b, 0x9E37_79B9_7F4A_7C15_u64 as i64, &ix);
        let x = build_binop(b, "arith.muli", hk, mul);
        let sh = const_int(b, 29, &ix);
        let hi = build_binop(b, "arith.shrui", x, sh);
        let x = build_binop(b, "arith.xori", x, hi);
        let h0 = build_binop(b, "arith.remui", x, t);
        let jp1 = build_binop(b, "arith.addi", j, one);
        let slot = scf::build_while(
            b,
            &[h0],
            std::slice::from_ref(&ix),
            |b, hs| {
                let h = hs[0];
                let st = b.state(
                    "gpu.atomic_cas",
                    &[owner, h, zero, jp1],
                    &[Type::Index],
                    vec![],
                );
                let cas = b.create_raw(st);
                let prev = b.ctx.result(cas, 0);
                let free = build_cmpi(b, "eq", prev, zero);
                let pm1 = build_binop(b, "arith.subi", prev, one);
                let who = b.op1("arith.select", &[free, j, pm1], Type::Index, vec![]);
                let other = vec::get_in_bounds(b, ks, who);
                let other = key_bits(b, other, kt);
                let differs = build_cmpi(b, "ne", other, hk);
                (differs, vec![h])
            },
            |b, hs| {
                let h1 = build_binop(b, "arith.addi", hs[0], one);
                let end = build_cmpi(b, "eq", h1, t);
                vec![b.op1("arith.select", &[end, zero, h1], Type::Index, vec![])]
            },
        )[0];
        arr::store_in_bounds(b, slot_of, j, slot);
        let enc = build_binop(b, "arith.subi", c, j);
        let st = b.state(
            "gpu.atomic_rmw",
            &[first, slot, enc],
            &[Type::Index],
            vec![("kind".to_string(), Attribute::Str("max".into()))],
        );
        b.create_raw(st);
        scf::build_yield(b, &[]);
    });
    b.op_with_regions(
        "scf.forall",
        &[c],
        &[],
        vec![(
            dialects::vec_combine::SEQUENTIAL_ATTR.to_string(),
            Attribute::Str(TABLE_LOOP.into()),
        )],
        &[region],
    );
    let slot_v = arr::to_vec(b, slot_of);
    let first_v = arr::to_vec(b, first);
    let collect_ix = Generator::collect(ix.clone());
    // first[j]: the smallest pair with j's key.
    let fj = gen::build_loop(b, c, &[], std::slice::from_ref(&collect_ix), |b, j, hs| {
        let s = vec::get_in_bounds(b, slot_v, j);
        let e = vec::get_in_bounds(b, first_v, s);
        let f = build_binop(b, "arith.subi", c, e);
        gen::emit(b, hs[0], f);
    })[0];
    // The running count of heads: a key's number plus one.
    let scan = Generator::scan(Monoid::Add, ix.clone());
    let num = gen::build_loop(b, c, &[zero], &[scan], |b, j, hs| {
        let f = vec::get_in_bounds(b, fj, j);
        let head = build_cmpi(b, "eq", f, j);
        let h = b.op1("arith.select", &[head, one, zero], Type::Index, vec![]);
        gen::emit(b, hs[0], h);
    })[0];
    let uk = gen::build_loop(b, c, &[], &[Generator::collect(kt.clone())], |b, j, hs| {
        let f = vec::get_in_bounds(b, fj, j);
        let head = build_cmpi(b, "eq", f, j);
        scf::build_if_then(b, head, |b| {
            let k = vec::get_in_bounds(b, ks, j);
            gen::emit(b, hs[0], k);
        });
    })[0];
    let gid = gen::build_loop(b, c, &[], &[collect_ix], |b, j, hs| {
        let f = vec::get_in_bounds(b, fj, j);
        let n = vec::get_in_bounds(b, num, f);
        let g = build_binop(b, "arith.subi", n, one);
        gen::emit(b, hs[0], g);
    })[0];
    let u = vec::len(b, uk);
    let m = match of {
        BucketOf::Reduce(m) => m,
        BucketOf::Collect => return (uk, rows(b, gid, vs, u, vt)),
    };
    let id = m.identity(vt).expect("checked by groupable");
    let idv = b.constant(id, vt);
    let dest = b.op1("vec.fill", &[u, idv], Type::vec(vt.clone()), vec![]);
    let red = b.op1(
        "vec.hist",
        &[dest, gid, vs],
        Type::vec(vt.clone()),
        vec![("kind".to_string(), GenKind::Reduce(m).attr())],
    );
    (uk, red)
}

/// The rows of a bucket of collects: for each of the `u` keys, the values
/// `vs[j]` of the pairs `j` whose key number `gid[j]` is its number, in the
/// order of `j`. Each step is a loop that kernels run:
/// 1. `ord`, the pairs sorted by key number, stably (`j` breaks ties): a
///    merge sort from runs of one pair, where each pass doubles the runs
///    and each output position finds its pair by a binary search for the
///    number of pairs the first run gives the merge before it (a gather:
///    no two threads write one place); the passes run in an `scf.while`,
///    `ceil(log2(c))` of them;
/// 2. the values in that order, and each key's count (a histogram of
///    `gid`, integer adds), whose inclusive scan is the rows' ends;
/// 3. the rows: a collect of vectors whose row `k` is a collect loop over
///    the sorted values between the ends (a flatMap of rows,
///    `super::flat`).
fn rows(b: &mut Builder, gid: ValueId, vs: ValueId, u: ValueId, vt: &Type) -> ValueId {
    let ix = Type::Index;
    let collect_ix = Generator::collect(ix.clone());
    let c = vec::len(b, gid);
    let zero = const_int(b, 0, &ix);
    let one = const_int(b, 1, &ix);
    let two = const_int(b, 2, &ix);
    let iota = gen::build_loop(b, c, &[], std::slice::from_ref(&collect_ix), |b, j, hs| {
        gen::emit(b, hs[0], j);
    })[0];
    let ord_t = Type::vec(ix.clone());
    let sorted = scf::build_while(
        b,
        &[one, iota],
        &[ix.clone(), ord_t.clone()],
        |b, a| {
            let go = build_cmpi(b, "ult", a[0], c);
            (go, vec![a[0], a[1]])
        },
        |b, a| {
            let (w, ord) = (a[0], a[1]);
            let w2 = build_binop(b, "arith.muli", w, two);
            let next = gen::build_loop(b, c, &[], std::slice::from_ref(&collect_ix), |b, q, hs| {
                let key = |b: &mut Builder, at: ValueId| {
                    let j = vec::get_in_bounds(b, ord, at);
                    vec::get_in_bounds(b, gid, j)
                };
                // Runs A = [s, ae) and B = [ae, be); q is output r of their merge.
                let blk = build_binop(b, "arith.divui", q, w2);
                let s = build_binop(b, "arith.muli", blk, w2);
                let ae = build_binop(b, "arith.addi", s, w);
                let ae = build_binop(b, "arith.minui", ae, c);
                let be = build_binop(b, "arith.addi", s, w2);
                let be = build_binop(b, "arith.minui", be, c);
                let la = build_binop(b, "arith.subi", ae, s);
                let lb = build_binop(b, "arith.subi", be, ae);
                let r = build_binop(b, "arith.subi", q, s);
                // The number i of A's pairs among the first r outputs: the
                // least i in [max(r - lb, 0), min(r, la)] whose A[i] does not
                // come before B[r - i - 1] (A first on equal keys).
                let rl = build_binop(b, "arith.subi", r, lb);
                let neg = build_cmpi(b, "ult", r, lb);
                let lo = b.op1("arith.select", &[neg, zero, rl], ix.clone(), vec![]);
                let hi = build_binop(b, "arith.minui", r, la);
                let found = scf::build_while(
                    b,
                    &[lo, hi],
                    &[ix.clone(), ix.clone()],
                    |b, a| {
                        let go = build_cmpi(b, "ult", a[0], a[1]);
                        (go, vec![a[0], a[1]])
                    },
                    |b, a| {
                        let (lo, hi) = (a[0], a[1]);
                        let sum = build_binop(b, "arith.addi", lo, hi);
                        let mid = build_binop(b, "arith.divui", sum, two);
                        let at_a = build_binop(b, "arith.addi", s, mid);
                        let ka = key(b, at_a);
                        let rm = build_binop(b, "arith.subi", r, mid);
                        let rm = build_binop(b, "arith.subi", rm, one);
                        let at_b = build_binop(b, "arith.addi", ae, rm);
                        let kb = key(b, at_b);
                        let before = build_cmpi(b, "ule", ka, kb);
                        let m1 = build_binop(b, "arith.addi", mid, one);
                        let lo2 = b.op1("arith.select", &[before, m1, lo], ix.clone(), vec![]);
                        let hi2 = b.op1("arith.select", &[before, hi, mid], ix.clone(), vec![]);
                        vec![lo2, hi2]
                    },
                );
                let i = found[0];
                let jb = build_binop(b, "arith.subi", r, i);
                // Output r is A[i] unless A is used up, or B[jb] comes first.
                let a_left = build_cmpi(b, "ult", i, la);
                let b_left = build_cmpi(b, "ult", jb, lb);
                let at_a = build_binop(b, "arith.addi", s, i);
                let at_b = build_binop(b, "arith.addi", ae, jb);
                // Clamped so that both reads stay in bounds; the select
                // below only uses a read whose side is left.
                let last = build_binop(b, "arith.subi", c, one);
                let ra = build_binop(b, "arith.minui", at_a, last);
                let rb = build_binop(b, "arith.minui", at_b, last);
                let ka = key(b, ra);
                let kb = key(b, rb);
                let a_first = build_cmpi(b, "ule", ka, kb);
                let no = zero_i1(b);
                let nb = build_cmpi(b, "eq", b_left, no);
                let take_a = build_binop(b, "arith.ori", nb, a_first);
                let take_a = build_binop(b, "arith.andi", a_left, take_a);
                let from = b.op1("arith.select", &[take_a, ra, rb], ix.clone(), vec![]);
                let j = vec::get_in_bounds(b, ord, from);
                gen::emit(b, hs[0], j);
            })[0];
            vec![w2, next]
        },
    )[1];
    let sv = gen::build_loop(b, c, &[], &[Generator::collect(vt.clone())], |b, q, hs| {
        let j = vec::get_in_bounds(b, sorted, q);
        let x = vec::get_in_bounds(b, vs, j);
        gen::emit(b, hs[0], x);
    })[0];
    let zeros = b.op1("vec.fill", &[u, zero], Type::vec(ix.clone()), vec![]);
    let ones = b.op1("vec.fill", &[c, one], Type::vec(ix.clone()), vec![]);
    let counts = b.op1(
        "vec.hist",
        &[zeros, gid, ones],
        Type::vec(ix.clone()),
        vec![("kind".to_string(), GenKind::Reduce(Monoid::Add).attr())],
    );
    let scan = Generator::scan(Monoid::Add, ix.clone());
    let ends = gen::build_loop(b, u, &[zero], &[scan], |b, k, hs| {
        let n = vec::get_in_bounds(b, counts, k);
        gen::emit(b, hs[0], n);
    })[0];
    let row_t = Generator::collect(Type::vec(vt.clone()));
    gen::build_loop(b, u, &[], &[row_t], |b, k, hs| {
        let end = vec::get_in_bounds(b, ends, k);
        let first = build_cmpi(b, "eq", k, zero);
        let km1 = build_binop(b, "arith.maxui", k, one);
        let km1 = build_binop(b, "arith.subi", km1, one);
        let prev = vec::get_in_bounds(b, ends, km1);
        let start = b.op1("arith.select", &[first, zero, prev], ix.clone(), vec![]);
        let len = build_binop(b, "arith.subi", end, start);
        let row = gen::build_loop(
            b,
            len,
            &[],
            &[Generator::collect(vt.clone())],
            |b, j, hs| {
                let at = build_binop(b, "arith.addi", start, j);
                let x = vec::get_in_bounds(b, sv, at);
                gen::emit(b, hs[0], x);
            },
        )[0];
        gen::emit(b, hs[0], row);
    })[0]
}

/// `false`.
fn zero_i1(b: &mut Builder) -> ValueId {
    const_int(b, 0, &Type::I1)
}

/// Key `k` of type `kt` as an `index` with the same bits (distinct keys give
/// distinct values): what the table hashes and compares. Floats compare by
/// bit pattern, as `arr.find_or_insert` and the interpreter do (`-0.0` and
/// `0.0` are two keys; a NaN is equal to itself).
fn key_bits(b: &mut Builder, k: ValueId, kt: &Type) -> ValueId {
    let int = match kt {
        Type::Index => return k,
        Type::F64 => b.op1("arith.bitcast", &[k], Type::I64, vec![]),
        Type::F32 => b.op1("arith.bitcast", &[k], Type::I32, vec![]),
        Type::I1 => b.op1("arith.extui", &[k], Type::I64, vec![]),
        _ => k,
    };
    b.op1("arith.index_cast", &[int], Type::Index, vec![])
}
