//! Unroll-and-jam of column reductions (issue 44): a collect over columns
//! `j` whose body is one reduction over rows `i` that reads a matrix at
//! `(i, j)` (with speculatable ops before and after it) reads the matrix
//! by columns, one cache line (on a new page, for wide rows) per element. The column sums of a matrix, and the transposed
//! `mat.matvec`, lower to such loops.
//!
//! The rewrite unrolls the outer loop by a block width `w` and jams the
//! copies into the inner loop (Carr and Kennedy, "Improving the ratio of
//! memory operations to floating-point operations in loops", TOPLAS 1994):
//! a collect over blocks of `w` neighbouring columns, each one loop over the
//! rows with `w` reduce generators, copy `k` the original body at column
//! `j0 + k`. Each row's `w` neighbouring entries then feed `w` reductions,
//! so the matrix streams through the caches by rows. The widths are
//! `widths` (widest first; [`DEFAULT_WIDTHS`] unless option `lower{jam=...}`
//! says), each over the columns the wider ones left; a
//! read-back collect takes entry `j` from its block, or runs the original
//! reduction for the last columns.
//!
//! Each reduction still folds its own column's values in row order from its
//! own init, so every entry is exactly the original's. Only the order
//! between different columns changes, so the body must not be able to
//! fault (which fault came first would change): it holds only speculatable
//! ops, reads proved in bounds (`vec.get {in_bounds}`, `mat.get` at loop
//! indices over the matrix's dimensions) and emits to its own generator.
//!
//! `lower` runs it for `target=native` just before the `arr` phase, after
//! the bounds proofs. A GPU kernel keeps one thread per column:
//! neighbouring threads read neighbouring entries, which coalesces.

use ir::clone::{clone_block_into, clone_op_into, ValueMap};
use ir::{Attribute, Builder, Context, OpId, Type, ValueId};

use dialects::arith::build_binop;
use dialects::gen::{self, GenKind, Generator};

/// Columns per block, widest first: 64 `f64` are eight cache lines of a
/// row; the columns no 64-block covers go in blocks of 8 (one line), and at
/// most 7 keep the original loop. The reductions of a block are not split
/// further ([`crate::split_reductions`]). 1024x1024 `f64`, 20 transposed
/// products, and 2048x2048 column sums, one thread (`benches/matvec.sh`,
/// AVX-512), ms: LLVM 2.0 and 1.1 with `[64, 8]`, 2.6 and 1.6 with
/// `[32, 8]`, 3.8 and 2.3 with `[16, 8]`; Cranelift 4.0 and 1.8, 4.8 and
/// 2.6, 4.1 and 4.1 (C's transposed product: 1.7). Reading by columns,
/// the transposed product took 42x C's time (LLVM) and 32x (Cranelift).
pub const DEFAULT_WIDTHS: [i64; 2] = [64, 8];

/// Parses option `jam`'s value: `false`/`0` (off), `true`/`1` ([`DEFAULT_WIDTHS`]),
/// or block widths `w1,w2,...`, strictly decreasing, each from 2 to 1024.
pub fn parse_widths(v: &str) -> Result<Vec<i64>, String> {
    match v {
        "false" | "0" => return Ok(vec![]),
        "true" | "1" | "" => return Ok(DEFAULT_WIDTHS.to_vec()),
        _ => {}
    }
    let bad = || {
        format!("option 'jam' expects false, true or decreasing block widths from 2 to 1024 (e.g. 64,8), got '{v}'")
    };
    let ws: Vec<i64> = v
        .split(',')
        .map(|w| w.trim().parse::<i64>().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    if ws.iter().any(|&w| !(2..=1024).contains(&w)) || ws.windows(2).any(|p| p[0] <= p[1]) {
        return Err(bad());
    }
    Ok(ws)
}

/// Jams every eligible collect of column reductions in `ctx`; returns how
/// many were rewritten.
pub fn jam_column_reductions(ctx: &mut Context, widths: &[i64]) -> u64 {
    if widths.is_empty() {
        return 0;
    }
    let loops: Vec<OpId> = ctx
        .walk_all()
        .into_iter()
        .filter(|&o| ctx.is(o, gen::LOOP))
        .collect();
    let mut n = 0;
    for l in loops {
        if !ctx.alive(l) {
            continue;
        }
        if let Some(sh) = candidate(ctx, l) {
            jam(ctx, l, sh, widths);
            n += 1;
        }
    }
    n
}

/// The shape of a collect of column reductions (module doc).
struct Shape {
    /// The ops of the collect's body before the reduction (all
    /// speculatable), the reduction, and the ops after it up to the emit.
    pre: Vec<OpId>,
    r: OpId,
    post: Vec<OpId>,
    /// The value the collect emits.
    x: ValueId,
    /// The reduction's `mat.get` reads, proved in bounds.
    proved: Vec<OpId>,
}

/// The shape of `l` when `l` is a collect of column reductions that may be
/// jammed: its body is speculatable ops, one reduction `r` whose size and
/// init come from outside `l`, speculatable ops, and one emit.
fn candidate(ctx: &Context, l: OpId) -> Option<Shape> {
    let gens = gen::try_generators(ctx, l).ok()?;
    if gens.len() != 1 || gens[0].kind != GenKind::Collect {
        return None;
    }
    let ops = ctx.block_ops(gen::body(ctx, l));
    let [body @ .., e, _end] = &ops[..] else {
        return None;
    };
    if !ctx.is(*e, gen::EMIT) || ctx.operand(*e, 0) != gen::handles(ctx, l)[0] {
        return None;
    }
    let at = body.iter().position(|&o| ctx.is(o, gen::LOOP))?;
    let (pre, rest) = body.split_at(at);
    let (r, post) = (rest[0], &rest[1..]);
    let spec = |o: &OpId| crate::code_motion::speculatable(ctx, *o);
    if !pre.iter().all(spec) || !post.iter().all(spec) {
        return None;
    }
    let rgens = gen::try_generators(ctx, r).ok()?;
    if rgens.len() != 1 || !matches!(rgens[0].kind, GenKind::Reduce(_)) {
        return None;
    }
    // The size and init of the reduction are the same for every column.
    let inside = |v: ValueId| ctx.value_block(v).is_some_and(|b| ctx.block_in_op(b, l));
    if ctx.operands(r).iter().any(|&v| inside(v)) {
        return None;
    }
    let (j, i) = (gen::induction_var(ctx, l), gen::induction_var(ctx, r));
    let h = gen::handles(ctx, r)[0];
    let mut by_column = false;
    let mut asserts = None;
    let mut proved = Vec::new();
    for o in ctx.walk_nested(r) {
        match ctx.op_name(o) {
            gen::END => {}
            gen::EMIT if ctx.operand(o, 0) == h => {}
            "vec.get" if ctx.attr(o, "in_bounds").is_some() => {}
            "mat.get" => {
                let asserts = asserts.get_or_insert_with(|| crate::bounds::equality_asserts(ctx));
                if !crate::bounds::mat_get_in_bounds(ctx, asserts, o) {
                    return None;
                }
                proved.push(o);
                by_column |= dialects::mat::get_entry(ctx, o) == (i, j);
            }
            _ if crate::code_motion::speculatable(ctx, o) => {}
            _ => return None,
        }
    }
    by_column.then(|| Shape {
        proved,
        pre: pre.to_vec(),
        r,
        post: post.to_vec(),
        x: ctx.operand(*e, 1),
    })
}

fn index(b: &mut Builder, v: i64) -> ValueId {
    dialects::arith::const_int(b, v, &Type::Index)
}

/// Clones `ops` at `b` with `map`.
fn clone_all(b: &mut Builder, ops: &[OpId], map: &mut ValueMap) {
    for &o in ops {
        clone_op_into(b, o, map);
    }
}

/// Rewrites collect `l` of shape `sh` into blocks of `widths` columns and
/// the read-back collect.
fn jam(ctx: &mut Context, l: OpId, sh: Shape, widths: &[i64]) {
    // The proofs hold for the copies too: a copy reads at a row of the
    // same loop and at a column `j0 + k < c` (or the tail's `j < c`).
    for &o in &sh.proved {
        ctx.set_attr(o, "in_bounds", Attribute::Unit);
    }
    let r = sh.r;
    let c = gen::size(ctx, l);
    let collect = gen::generators(ctx, l)[0].clone();
    let reduce = gen::generators(ctx, r)[0].clone();
    let rows = gen::size(ctx, r);
    let inits = ctx.operands(r)[1..].to_vec();
    let (j, body) = (gen::induction_var(ctx, l), gen::body(ctx, r));
    let (i, h) = (gen::induction_var(ctx, r), gen::handles(ctx, r)[0]);
    let sum = ctx.result(r, 0);
    let mut b = Builder::before(ctx, l);
    // Per width: the first column it covers, its entries, how many.
    let mut parts = Vec::new();
    // The columns left to each width: `c`, then `c rem 64`, ... (a
    // remainder by a constant, which the lowering sees is not negative).
    let mut start = index(&mut b, 0);
    let mut left = c;
    for &w in widths {
        let wc = index(&mut b, w);
        let blocks = build_binop(&mut b, "arith.divsi", left, wc);
        let entries = gen::build_loop(
            &mut b,
            blocks,
            &[],
            std::slice::from_ref(&collect),
            |b, s, hb| {
                let off = build_binop(b, "arith.muli", s, wc);
                let j0 = build_binop(b, "arith.addi", start, off);
                // Column `j0 + k`'s values of the ops before the reduction.
                let mut maps: Vec<ValueMap> = (0..w)
                    .map(|k| {
                        let ck = index(b, k);
                        let mut map = ValueMap::new();
                        map.insert(j, build_binop(b, "arith.addi", j0, ck));
                        clone_all(b, &sh.pre, &mut map);
                        map
                    })
                    .collect();
                let inits: Vec<ValueId> = (0..w).flat_map(|_| inits.iter().copied()).collect();
                let gens: Vec<Generator> = (0..w).map(|_| reduce.clone()).collect();
                let sums = gen::build_loop(b, rows, &inits, &gens, |b, row, hs| {
                    for (map, &hk) in maps.iter().zip(hs) {
                        let mut map = map.clone();
                        map.insert(i, row);
                        map.insert(h, hk);
                        clone_block_into(b, body, &mut map);
                    }
                });
                for (map, &v) in maps.iter_mut().zip(&sums) {
                    map.insert(sum, v);
                    clone_all(b, &sh.post, map);
                    let x = map.get(&sh.x).copied().unwrap_or(sh.x);
                    gen::emit(b, hb[0], x);
                }
            },
        )[0];
        let covered = build_binop(&mut b, "arith.muli", blocks, wc);
        parts.push((start, entries, covered));
        start = build_binop(&mut b, "arith.addi", start, covered);
        left = build_binop(&mut b, "arith.remsi", left, wc);
    }
    let t = collect.elem.clone();
    let out = gen::build_loop(
        &mut b,
        c,
        &[],
        std::slice::from_ref(&collect),
        |b, col, hb| {
            let v = read_back(b, &parts, col, &t, &mut |b| {
                let mut map = ValueMap::new();
                map.insert(j, col);
                clone_all(b, &sh.pre, &mut map);
                clone_op_into(b, r, &mut map);
                clone_all(b, &sh.post, &mut map);
                map.get(&sh.x).copied().unwrap_or(sh.x)
            });
            gen::emit(b, hb[0], v);
        },
    )[0];
    ctx.replace_op(l, &[out]);
}

/// Entry `col`: from the first of `parts` that covers it (`col < start +
/// covered`), else `original`'s value.
fn read_back(
    b: &mut Builder,
    parts: &[(ValueId, ValueId, ValueId)],
    col: ValueId,
    t: &Type,
    original: &mut dyn FnMut(&mut Builder) -> ValueId,
) -> ValueId {
    let Some((&(start, sums, covered), rest)) = parts.split_first() else {
        return original(b);
    };
    let end = build_binop(b, "arith.addi", start, covered);
    let inside = dialects::arith::build_cmpi(b, "slt", col, end);
    dialects::scf::build_if(
        b,
        inside,
        std::slice::from_ref(t),
        |b| {
            let at = build_binop(b, "arith.subi", col, start);
            vec![b.op1(
                "vec.get",
                &[sums, at],
                t.clone(),
                dialects::util::in_bounds_attr(),
            )]
        },
        |b| vec![read_back(b, rest, col, t, original)],
    )[0]
}
