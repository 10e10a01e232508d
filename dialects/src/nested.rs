//! Nested arrays (issue 42, item 6): flattening, transposing and converting
//! between `vec<vec<T>>` and `mat<T>`.
//!
//! | op | custom form | meaning |
//! |---|---|---|
//! | `vec.flatten` | `%f = vec.flatten %vs : vec<vec<T>>` | the rows one after another |
//! | `vec.transpose` | `%t = vec.transpose %vs : vec<vec<T>>` | row `j` holds element `j` of every row; faults on ragged rows |
//! | `mat.flatten` | `%f = mat.flatten %m : mat<T>` | the entries row by row |
//! | `mat.from_rows` | `%m = mat.from_rows %vs : vec<vec<T>>` | the matrix of the rows; faults on ragged rows |
//! | `mat.to_rows` | `%vs = mat.to_rows %m : mat<T>` | the rows of `m` |
//!
//! Ragged rows (a row whose length differs from row 0's) are a located
//! fault, `ragged rows in vec.transpose` / `mat.from_rows`. With no rows,
//! the transpose is empty and the matrix is 0 x 0.
//!
//! Lowering (phase `gen`): `flatten` is a collect loop over the rows with
//! an inner loop emitting each row's elements (a flatMap); `mat.flatten`
//! a collect over `rows * cols` entries; `mat.to_rows` a collect of
//! `mat.row`s; `vec.transpose` a ragged-row check, then a collect over the
//! columns of collects over the rows; `mat.from_rows` the check, the
//! flatMap and `mat.from`.

use std::rc::Rc;

use smallvec::{smallvec, SmallVec};

use ir::interp::{Interp, MatValue, RtValue, RunError};
use ir::spec::{OpState, Registry};
use ir::{Builder, Context, OpId, Type, ValueId};

use crate::mat::{as_mat, dims, idx, mget};
use crate::vec::{as_vec, build_gen_loop, emit, get_in_bounds, vec_value, Gen};

type Vals = SmallVec<[RtValue; 2]>;
type Repl = Option<SmallVec<[ValueId; 2]>>;
type Inferred = Option<SmallVec<[Type; 2]>>;

// ----- verifiers ---------------------------------------------------------

/// The `T` of operand 0 of type `vec<vec<T>>`.
fn rows_elem(ctx: &Context, op: OpId) -> Result<Type, String> {
    match ctx.ty(ctx.operand(op, 0)) {
        Type::Vec(r) => match &**r {
            Type::Vec(t) => Ok((**t).clone()),
            _ => Err(format!(
                "operand #0 must be a 'vec<vec<T>>', but got '{}'",
                ctx.ty(ctx.operand(op, 0))
            )),
        },
        t => Err(format!("operand #0 must be a 'vec<vec<T>>', but got '{t}'")),
    }
}

/// The `T` of operand 0 of type `mat<T>`.
fn mat_elem(ctx: &Context, op: OpId) -> Result<Type, String> {
    match ctx.ty(ctx.operand(op, 0)) {
        Type::Mat(t) => Ok((**t).clone()),
        t => Err(format!("operand #0 must be a 'mat<T>', but got '{t}'")),
    }
}

fn result_is(ctx: &Context, op: OpId, want: Type) -> Result<(), String> {
    let got = ctx.ty(ctx.result(op, 0));
    if *got != want {
        return Err(format!("result must be '{want}', but is '{got}'"));
    }
    Ok(())
}

fn verify_vec_flatten(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = rows_elem(ctx, op)?;
    result_is(ctx, op, Type::vec(t))
}

fn verify_vec_transpose(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = rows_elem(ctx, op)?;
    result_is(ctx, op, Type::vec(Type::vec(t)))
}

fn verify_mat_flatten(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = mat_elem(ctx, op)?;
    result_is(ctx, op, Type::vec(t))
}

fn verify_from_rows(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = rows_elem(ctx, op)?;
    if !t.is_scalar() {
        return Err(format!("matrix entries must be scalars, but are '{t}'"));
    }
    result_is(ctx, op, Type::mat(t))
}

fn verify_to_rows(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = mat_elem(ctx, op)?;
    result_is(ctx, op, Type::vec(Type::vec(t)))
}

fn infer_from_rows(ts: &[Type], _: &[(String, ir::Attribute)]) -> Inferred {
    Some(smallvec![Type::mat(ts.first()?.elem()?.elem()?.clone())])
}

fn infer_to_rows(ts: &[Type], _: &[(String, ir::Attribute)]) -> Inferred {
    Some(smallvec![Type::vec(Type::vec(ts.first()?.elem()?.clone()))])
}

// ----- interpreter -------------------------------------------------------

/// The rows of `v` (a `vec<vec<T>>` value).
fn rows_of(ctx: &Context, op: OpId, v: &RtValue) -> Result<Vec<Rc<Vec<RtValue>>>, RunError> {
    as_vec(ctx, op, v)?
        .iter()
        .map(|r| as_vec(ctx, op, r).cloned())
        .collect()
}

/// The common length of `rows` (0 without rows), or the ragged-rows fault.
fn common_len(
    ctx: &Context,
    op: OpId,
    rows: &[Rc<Vec<RtValue>>],
    name: &str,
) -> Result<usize, RunError> {
    let c = rows.first().map_or(0, |r| r.len());
    match rows.iter().position(|r| r.len() != c) {
        Some(i) => Err(RunError::at(
            ctx,
            op,
            format!(
                "ragged rows in {name}: row {i} has length {}, row 0 has length {c}",
                rows[i].len()
            ),
        )),
        None => Ok(c),
    }
}

fn interp_vec_flatten(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let rows = rows_of(it.ctx, op, &a[0])?;
    let out: Vec<RtValue> = rows.iter().flat_map(|r| r.iter().cloned()).collect();
    Ok(smallvec![vec_value(out)])
}

fn interp_vec_transpose(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let rows = rows_of(it.ctx, op, &a[0])?;
    let c = common_len(it.ctx, op, &rows, "vec.transpose")?;
    let out = (0..c)
        .map(|j| vec_value(rows.iter().map(|r| r[j].clone()).collect()))
        .collect();
    Ok(smallvec![vec_value(out)])
}

fn interp_mat_flatten(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let m = as_mat(it.ctx, op, &a[0])?;
    Ok(smallvec![vec_value(m.data.clone())])
}

fn interp_from_rows(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let rows = rows_of(it.ctx, op, &a[0])?;
    let c = common_len(it.ctx, op, &rows, "mat.from_rows")?;
    let data = rows.iter().flat_map(|r| r.iter().cloned()).collect();
    Ok(smallvec![RtValue::Mat(Rc::new(MatValue {
        rows: rows.len(),
        cols: c,
        data
    }))])
}

fn interp_to_rows(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let m = as_mat(it.ctx, op, &a[0])?;
    let rows = (0..m.rows)
        .map(|i| vec_value(m.data[i * m.cols..(i + 1) * m.cols].to_vec()))
        .collect();
    Ok(smallvec![vec_value(rows)])
}

// ----- lowering to gen ---------------------------------------------------

/// The elements of the rows of `vs` one after another: a collect loop
/// over the rows whose inner loop emits each row's elements.
fn flat_map_rows(b: &mut Builder, vs: ValueId, t: &Type) -> ValueId {
    let r = crate::vec::len(b, vs);
    build_gen_loop(b, r, &[], vec![Gen::collect(t)], |b, i, h| {
        let row = get_in_bounds(b, vs, i);
        let n = crate::vec::len(b, row);
        let h = h[0];
        build_gen_loop(b, n, &[], vec![], |b, j, _| {
            let x = get_in_bounds(b, row, j);
            emit(b, h, x);
        });
    })[0]
}

/// The common length of the rows of `vs` (0 without rows), after a
/// located assert that no row is ragged (`ragged rows in {name}`).
fn checked_cols(b: &mut Builder, vs: ValueId, name: &str) -> ValueId {
    let r = crate::vec::len(b, vs);
    let zero = crate::arith::const_int(b, 0, &Type::Index);
    let one = crate::arith::const_int(b, 1, &Type::Index);
    let some = crate::arith::build_cmpi(b, "sgt", r, zero);
    let c = crate::scf::build_if(
        b,
        some,
        &[Type::Index],
        |b| {
            let row0 = get_in_bounds(b, vs, zero);
            vec![crate::vec::len(b, row0)]
        },
        |_| vec![zero],
    )[0];
    // The number of rows whose length is not c.
    let bad = build_gen_loop(
        b,
        r,
        &[zero],
        vec![Gen::reduce(crate::vec::BinOp::Add, &Type::Index)],
        |b, i, h| {
            let row = get_in_bounds(b, vs, i);
            let n = crate::vec::len(b, row);
            let ne = crate::arith::build_cmpi(b, "ne", n, c);
            let k = b.op1("arith.select", &[ne, one, zero], Type::Index, vec![]);
            emit(b, h[0], k);
        },
    )[0];
    let ok = crate::arith::build_cmpi(b, "eq", bad, zero);
    crate::scf::build_assert(b, ok, &format!("ragged rows in {name}"));
    c
}

fn lower_vec_flatten(b: &mut Builder, st: &OpState) -> Repl {
    let vs = *st.operands.first()?;
    let t = b.ctx.ty(vs).elem()?.elem()?.clone();
    Some(smallvec![flat_map_rows(b, vs, &t)])
}

fn lower_vec_transpose(b: &mut Builder, st: &OpState) -> Repl {
    let vs = *st.operands.first()?;
    let t = b.ctx.ty(vs).elem()?.elem()?.clone();
    let c = checked_cols(b, vs, "vec.transpose");
    let r = crate::vec::len(b, vs);
    let out = build_gen_loop(
        b,
        c,
        &[],
        vec![Gen::collect(&Type::vec(t.clone()))],
        |b, j, h| {
            let col = build_gen_loop(b, r, &[], vec![Gen::collect(&t)], |b, i, g| {
                let row = get_in_bounds(b, vs, i);
                let x = get_in_bounds(b, row, j);
                emit(b, g[0], x);
            })[0];
            emit(b, h[0], col);
        },
    )[0];
    Some(smallvec![out])
}

fn lower_mat_flatten(b: &mut Builder, st: &OpState) -> Repl {
    let m = *st.operands.first()?;
    let t = b.ctx.ty(m).elem()?.clone();
    let (r, c) = dims(b, m);
    let n = idx(b, "arith.muli", r, c);
    let out = build_gen_loop(b, n, &[], vec![Gen::collect(&t)], |b, k, h| {
        let i = idx(b, "arith.divsi", k, c);
        let j = idx(b, "arith.remsi", k, c);
        let x = mget(b, m, i, j, &t);
        emit(b, h[0], x);
    })[0];
    Some(smallvec![out])
}

fn lower_from_rows(b: &mut Builder, st: &OpState) -> Repl {
    let vs = *st.operands.first()?;
    let t = b.ctx.ty(vs).elem()?.elem()?.clone();
    let c = checked_cols(b, vs, "mat.from_rows");
    let r = crate::vec::len(b, vs);
    let flat = flat_map_rows(b, vs, &t);
    Some(smallvec![b.op1(
        "mat.from",
        &[flat, r, c],
        Type::mat(t),
        vec![]
    )])
}

fn lower_to_rows(b: &mut Builder, st: &OpState) -> Repl {
    let m = *st.operands.first()?;
    let t = b.ctx.ty(m).elem()?.clone();
    let r = b.op1("mat.rows", &[m], Type::Index, vec![]);
    let out = build_gen_loop(
        b,
        r,
        &[],
        vec![Gen::collect(&Type::vec(t.clone()))],
        |b, i, h| {
            let row = b.op1("mat.row", &[m, i], Type::vec(t.clone()), vec![]);
            emit(b, h[0], row);
        },
    )[0];
    Some(smallvec![out])
}

/// Registers the ops.
pub fn register(r: &mut Registry) {
    use crate::util::pure;
    r.register(
        pure(
            "vec.flatten",
            "the rows of a vec<vec<T>> one after another",
            1,
        )
        .assembly_format("operands attr-dict : type(first)")
        .infer(crate::util::infer_elem)
        .verify(verify_vec_flatten)
        .interpret(interp_vec_flatten)
        .lowering("gen", lower_vec_flatten),
    );
    r.register(
        pure(
            "vec.transpose",
            "the transpose of a vec<vec<T>> (faults on ragged rows)",
            1,
        )
        .assembly_format("operands attr-dict : type(first)")
        .infer(crate::util::infer_same)
        .verify(verify_vec_transpose)
        .interpret(interp_vec_transpose)
        .lowering("gen", lower_vec_transpose),
    );
    r.register(
        pure("mat.flatten", "the entries of a matrix row by row", 1)
            .assembly_format("operands attr-dict : type(first)")
            .infer(crate::util::infer_vec_of_elem)
            .verify(verify_mat_flatten)
            .interpret(interp_mat_flatten)
            .lowering("gen", lower_mat_flatten),
    );
    r.register(
        pure(
            "mat.from_rows",
            "the matrix whose rows are a vec<vec<T>>'s (faults on ragged rows)",
            1,
        )
        .assembly_format("operands attr-dict : type(first)")
        .infer(infer_from_rows)
        .verify(verify_from_rows)
        .interpret(interp_from_rows)
        .lowering("gen", lower_from_rows),
    );
    r.register(
        pure("mat.to_rows", "the rows of a matrix as a vec<vec<T>>", 1)
            .assembly_format("operands attr-dict : type(first)")
            .infer(infer_to_rows)
            .verify(verify_to_rows)
            .interpret(interp_to_rows)
            .lowering("gen", lower_to_rows),
    );
}
