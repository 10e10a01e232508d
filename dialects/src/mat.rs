//! The `mat` dialect (IR-SPEC §3): immutable dense 2-D row-major matrices.
//! Every op is pure; shapes and indices are checked at run time.
//!
//! Ops (generic form only): `mat.from(v, rows, cols) -> mat<T>` (faults
//! unless `rows * cols == len(v)`), `mat.rows(m) -> index`,
//! `mat.cols(m) -> index`, `mat.get(m, i, j) -> T`, `mat.row(m, i) -> vec<T>`,
//! `mat.transpose(m) -> mat<T>`, `mat.mul(a, b) -> mat<T>` (faults unless
//! `cols(a) == rows(b)`), `mat.matvec(m, v) -> vec<T>` (faults unless
//! `cols(m) == len(v)`). `mat.mul`/`mat.matvec` need a numeric element type
//! and compute each entry as a left fold from zero of the products, in order
//! of the inner index (as `vec.dot`).
//!
//! `mat.get(m, i, j) {transposed}` is entry `(i, j)` of `transpose(m)`,
//! that is `m[j][i]`, with the faults of reading the transpose: the row
//! index `i` is checked first, against `cols(m)`, then the column index `j`
//! against `rows(m)`, with the same messages.
//!
//! `mat.matvec(m, v) {transposed}` is `mat.matvec(transpose(m), v)`, with
//! its faults (the message gives the transpose's shape).
//!
//! `mat.row(m, i) {transposed}` is row `i` of `transpose(m)`, that is
//! column `i` of `m` (`rows(m)` entries), faulting as that row would: the
//! index is checked against `cols(m)`, with the same message.
//!
//! Construction-time rewrites: `transpose(transpose(m)) -> m`;
//! `get(transpose(m), i, j) -> get(m, i, j) {transposed}`,
//! `row(transpose(m), i) -> row(m, i) {transposed}` and
//! `matvec(transpose(m), v) -> matvec(m, v) {transposed}` (and the
//! reverse), so reading an entry or a row of a transpose, or multiplying a
//! vector by it, never builds it;
//! `rows(from(v, r, c)) -> r`, `cols(from(v, r, c)) -> c` (these assume the
//! `mat.from` is well formed: like deleting an unused pure op, they can
//! remove its shape fault); `rows(transpose(m)) -> cols(m)`,
//! `cols(transpose(m)) -> rows(m)`.
//!
//! Lowering to `gen` (phase `"gen"`): `transpose`, `mul` become one collect
//! loop over the flat result index (`i / cols`, `i % cols` give the entry;
//! `mul` reduces each entry with an inner reduce loop) followed by
//! `mat.from`; `matvec` a collect loop over rows with an inner reduce loop
//! (over columns, read in place, when `{transposed}`); a `{transposed}`
//! `row` a check of its index and a collect loop that reads the column in
//! place (a map producer that `fuse` merges into the loops that read it).
//! `mat.from/rows/cols/get` and plain `row` stay.

use std::rc::Rc;

use smallvec::smallvec;

use ir::interp::{Interp, MatValue, RtValue, RunError};
use ir::spec::{OpState, Registry, Traits};
use ir::{Builder, Context, OpId, Type, ValueId};

use crate::vec::{
    as_index, as_vec, assert_eq_sizes, binop, build_gen_loop, check_size, elem_of, emit,
    is_numeric, vec_value, BinOp, Gen,
};

type Vals = smallvec::SmallVec<[RtValue; 2]>;
type Repl = Option<smallvec::SmallVec<[ValueId; 2]>>;

// ----- verifiers -----------------------------------------------------------

fn mat_elem(ctx: &Context, op: OpId, i: usize) -> Result<Type, String> {
    match ctx.ty(ctx.operand(op, i)) {
        Type::Mat(t) => Ok((**t).clone()),
        t => Err(format!("operand #{i} must be a mat, but got '{t}'")),
    }
}

fn expect(ctx: &Context, v: ValueId, want: &Type, what: &str) -> Result<(), String> {
    if ctx.ty(v) != want {
        return Err(format!(
            "{what} must have type '{want}', but got '{}'",
            ctx.ty(v)
        ));
    }
    Ok(())
}

fn numeric(t: &Type) -> Result<(), String> {
    if is_numeric(t) {
        Ok(())
    } else {
        Err(format!(
            "element type must be i32, i64, index, f32 or f64, but got '{t}'"
        ))
    }
}

fn verify_from(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = match ctx.ty(ctx.operand(op, 0)) {
        Type::Vec(t) => (**t).clone(),
        t => return Err(format!("operand #0 must be a vec, but got '{t}'")),
    };
    expect(ctx, ctx.operand(op, 1), &Type::Index, "rows operand")?;
    expect(ctx, ctx.operand(op, 2), &Type::Index, "cols operand")?;
    expect(ctx, ctx.result(op, 0), &Type::mat(t), "result")
}

fn verify_dim(ctx: &Context, op: OpId) -> Result<(), String> {
    mat_elem(ctx, op, 0)?;
    expect(ctx, ctx.result(op, 0), &Type::Index, "result")
}

fn verify_get(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = mat_elem(ctx, op, 0)?;
    expect(ctx, ctx.operand(op, 1), &Type::Index, "row index")?;
    expect(ctx, ctx.operand(op, 2), &Type::Index, "column index")?;
    expect(ctx, ctx.result(op, 0), &t, "result")
}

fn verify_row(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = mat_elem(ctx, op, 0)?;
    expect(ctx, ctx.operand(op, 1), &Type::Index, "row index")?;
    expect(ctx, ctx.result(op, 0), &Type::vec(t), "result")
}

fn verify_transpose(ctx: &Context, op: OpId) -> Result<(), String> {
    mat_elem(ctx, op, 0).map(|_| ())
}

fn verify_mul(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = mat_elem(ctx, op, 0)?;
    numeric(&t)
}

fn verify_matvec(ctx: &Context, op: OpId) -> Result<(), String> {
    let t = mat_elem(ctx, op, 0)?;
    numeric(&t)?;
    expect(ctx, ctx.operand(op, 1), &Type::vec(t.clone()), "operand #1")?;
    expect(ctx, ctx.result(op, 0), &Type::vec(t), "result")
}

// ----- interpreter ---------------------------------------------------------

pub(crate) fn as_mat<'v>(
    ctx: &Context,
    op: OpId,
    v: &'v RtValue,
) -> Result<&'v Rc<MatValue>, RunError> {
    match v {
        RtValue::Mat(m) => Ok(m),
        _ => Err(RunError::at(ctx, op, "expected a matrix operand")),
    }
}

fn mat_value(rows: usize, cols: usize, data: Vec<RtValue>) -> RtValue {
    RtValue::Mat(Rc::new(MatValue { rows, cols, data }))
}

fn elem_type(ctx: &Context, op: OpId) -> Type {
    ctx.ty(ctx.operand(op, 0))
        .elem()
        .cloned()
        .unwrap_or(Type::F64)
}

fn interp_from(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let ctx = it.ctx;
    let v = as_vec(ctx, op, &a[0])?;
    let r = crate::util::as_size(ctx, op, &a[1])?;
    let c = crate::util::as_size(ctx, op, &a[2])?;
    if r.checked_mul(c) != Some(v.len()) {
        return Err(RunError::at(
            ctx,
            op,
            format!(
                "shape {r}x{c} does not match a vector of length {}",
                v.len()
            ),
        ));
    }
    Ok(smallvec![mat_value(r, c, v.as_ref().clone())])
}

fn interp_rows(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let m = as_mat(it.ctx, op, &a[0])?;
    Ok(smallvec![RtValue::Int(m.rows as i64)])
}

fn interp_cols(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let m = as_mat(it.ctx, op, &a[0])?;
    Ok(smallvec![RtValue::Int(m.cols as i64)])
}

/// Whether a `mat.get` reads its matrix transposed (see the module doc).
pub fn get_is_transposed(ctx: &Context, op: OpId) -> bool {
    ctx.attr(op, "transposed").is_some()
}

/// The row and column of its matrix operand that `mat.get` op `op` reads:
/// its index operands, swapped for `{transposed}` (entry `(a, b)` of the
/// transpose is entry `(b, a)` of the matrix).
pub fn get_entry(ctx: &Context, op: OpId) -> (ValueId, ValueId) {
    let (a, b) = (ctx.operand(op, 1), ctx.operand(op, 2));
    if get_is_transposed(ctx, op) {
        (b, a)
    } else {
        (a, b)
    }
}

fn interp_get(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let ctx = it.ctx;
    let m = as_mat(ctx, op, &a[0])?;
    if get_is_transposed(ctx, op) {
        let i = as_index(ctx, op, &a[1], m.cols, "row index")?;
        let j = as_index(ctx, op, &a[2], m.rows, "column index")?;
        return Ok(smallvec![m.data[j * m.cols + i].clone()]);
    }
    let i = as_index(ctx, op, &a[1], m.rows, "row index")?;
    let j = as_index(ctx, op, &a[2], m.cols, "column index")?;
    Ok(smallvec![m.data[i * m.cols + j].clone()])
}

/// Whether a `mat.row` reads a column, row `i` of the transpose (see the
/// module doc).
pub fn row_is_transposed(ctx: &Context, op: OpId) -> bool {
    ctx.attr(op, "transposed").is_some()
}

/// The op that gives the length of the rows `mat.row` op `op` reads:
/// `"mat.cols"`, or `"mat.rows"` when it reads columns (`{transposed}`).
pub fn row_len_op(ctx: &Context, op: OpId) -> &'static str {
    if row_is_transposed(ctx, op) {
        "mat.rows"
    } else {
        "mat.cols"
    }
}

/// The op that gives how many rows `mat.row` op `op` may read (its valid
/// indices): `"mat.rows"`, or `"mat.cols"` when it reads columns.
pub fn row_count_op(ctx: &Context, op: OpId) -> &'static str {
    if row_is_transposed(ctx, op) {
        "mat.cols"
    } else {
        "mat.rows"
    }
}

fn interp_row(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let ctx = it.ctx;
    let m = as_mat(ctx, op, &a[0])?;
    if row_is_transposed(ctx, op) {
        let i = as_index(ctx, op, &a[1], m.cols, "row index")?;
        let col = (0..m.rows).map(|j| m.data[j * m.cols + i].clone());
        return Ok(smallvec![vec_value(col.collect())]);
    }
    let i = as_index(ctx, op, &a[1], m.rows, "row index")?;
    Ok(smallvec![vec_value(
        m.data[i * m.cols..(i + 1) * m.cols].to_vec()
    )])
}

fn interp_transpose(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let m = as_mat(it.ctx, op, &a[0])?;
    let (r, c) = (m.rows, m.cols);
    let mut data = Vec::with_capacity(r * c);
    for j in 0..c {
        for i in 0..r {
            data.push(m.data[i * c + j].clone());
        }
    }
    Ok(smallvec![mat_value(c, r, data)])
}

fn interp_mul(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let ctx = it.ctx;
    let t = elem_type(ctx, op);
    let x = as_mat(ctx, op, &a[0])?;
    let y = as_mat(ctx, op, &a[1])?;
    if x.cols != y.rows {
        return Err(RunError::at(
            ctx,
            op,
            format!(
                "size mismatch: {}x{} times {}x{} matrix",
                x.rows, x.cols, y.rows, y.cols
            ),
        ));
    }
    let (m, k, n) = (x.rows, x.cols, y.cols);
    let total = m
        .checked_mul(n)
        .ok_or_else(|| RunError::at(ctx, op, "result too large"))?;
    check_size(ctx, op, total)?;
    let zero = crate::util::zero_value(&t);
    let mut data = Vec::with_capacity(total);
    for p in 0..m {
        for q in 0..n {
            let mut acc = zero.clone();
            for j in 0..k {
                let prod = binop(
                    ctx,
                    op,
                    BinOp::Mul,
                    &t,
                    &x.data[p * k + j],
                    &y.data[j * n + q],
                )?;
                acc = binop(ctx, op, BinOp::Add, &t, &acc, &prod)?;
            }
            data.push(acc);
        }
    }
    Ok(smallvec![mat_value(m, n, data)])
}

fn interp_matvec(it: &mut Interp, op: OpId, a: &[RtValue]) -> Result<Vals, RunError> {
    let ctx = it.ctx;
    let t = elem_type(ctx, op);
    let m = as_mat(ctx, op, &a[0])?;
    let v = as_vec(ctx, op, &a[1])?;
    // `{transposed}`: the product of transpose(m), read in place. Entry
    // (p, j) of the matrix multiplied is at p * row_step + j * col_step.
    let (rows, cols, row_step, col_step) = if get_is_transposed(ctx, op) {
        (m.cols, m.rows, 1, m.cols)
    } else {
        (m.rows, m.cols, m.cols, 1)
    };
    let at = |p: usize, j: usize| p * row_step + j * col_step;
    if cols != v.len() {
        return Err(RunError::at(
            ctx,
            op,
            format!(
                "size mismatch: {rows}x{cols} matrix times vector of length {}",
                v.len()
            ),
        ));
    }
    let zero = crate::util::zero_value(&t);
    let mut out = Vec::with_capacity(rows);
    for p in 0..rows {
        let mut acc = zero.clone();
        for (j, x) in v.iter().enumerate() {
            let prod = binop(ctx, op, BinOp::Mul, &t, &m.data[at(p, j)], x)?;
            acc = binop(ctx, op, BinOp::Add, &t, &acc, &prod)?;
        }
        out.push(acc);
    }
    Ok(smallvec![vec_value(out)])
}

// ----- construction-time rewrites ------------------------------------------

fn rw_transpose(b: &mut Builder, st: &OpState) -> Repl {
    let m = *st.operands.first()?;
    let d = b.ctx.def_op_named(m, "mat.transpose")?;
    let inner = b.ctx.operand(d, 0);
    (Some(b.ctx.ty(inner)) == st.result_types.first()).then(|| smallvec![inner])
}

/// `op(transpose(m), rest...)` as `op(m, rest...)` with the `transposed`
/// flag flipped: the same values and the same faults, and no copy of `m`.
fn read_through_transpose(b: &mut Builder, st: &OpState, name: &str) -> Repl {
    let (&m, rest) = st.operands.split_first()?;
    let d = b.ctx.def_op_named(m, "mat.transpose")?;
    let mut operands = vec![b.ctx.operand(d, 0)];
    operands.extend_from_slice(rest);
    let mut attrs: Vec<(String, ir::Attribute)> = st
        .attrs
        .iter()
        .filter(|(k, _)| k != "transposed")
        .cloned()
        .collect();
    if st.attr("transposed").is_none() {
        attrs.push(transposed_attr());
    }
    Some(smallvec![b.op1(
        name,
        &operands,
        st.result_types.first()?.clone(),
        attrs
    )])
}

/// `get(transpose(m), i, j)` reads `m` transposed.
fn rw_get(b: &mut Builder, st: &OpState) -> Repl {
    (st.operands.len() == 3).then_some(())?;
    read_through_transpose(b, st, "mat.get")
}

/// `row(transpose(m), i)` is column `i` of `m`, read in place.
fn rw_row(b: &mut Builder, st: &OpState) -> Repl {
    (st.operands.len() == 2).then_some(())?;
    read_through_transpose(b, st, "mat.row")
}

/// `matvec(transpose(m), v)` multiplies by `m` read transposed.
fn rw_matvec(b: &mut Builder, st: &OpState) -> Repl {
    (st.operands.len() == 2).then_some(())?;
    read_through_transpose(b, st, "mat.matvec")
}

fn rw_dim(b: &mut Builder, st: &OpState, from_operand: usize, other: &str) -> Repl {
    let m = *st.operands.first()?;
    let d = b.ctx.def_op(m)?;
    match b.ctx.op_name(d) {
        "mat.from" => Some(smallvec![b.ctx.operand(d, from_operand)]),
        "mat.transpose" => {
            let inner = b.ctx.operand(d, 0);
            Some(smallvec![b.op1(other, &[inner], Type::Index, vec![])])
        }
        _ => None,
    }
}

fn rw_rows(b: &mut Builder, st: &OpState) -> Repl {
    rw_dim(b, st, 1, "mat.cols")
}

fn rw_cols(b: &mut Builder, st: &OpState) -> Repl {
    rw_dim(b, st, 2, "mat.rows")
}

// ----- lowering to gen -----------------------------------------------------

pub(crate) fn dims(b: &mut Builder, m: ValueId) -> (ValueId, ValueId) {
    let r = b.op1("mat.rows", &[m], Type::Index, vec![]);
    let c = b.op1("mat.cols", &[m], Type::Index, vec![]);
    (r, c)
}

pub(crate) fn idx(b: &mut Builder, name: &str, x: ValueId, y: ValueId) -> ValueId {
    b.op1(name, &[x, y], Type::Index, vec![])
}

pub(crate) fn mget(b: &mut Builder, m: ValueId, i: ValueId, j: ValueId, t: &Type) -> ValueId {
    b.op1("mat.get", &[m, i, j], t.clone(), vec![])
}

fn lower_transpose(b: &mut Builder, st: &OpState) -> Repl {
    let m = *st.operands.first()?;
    let t = elem_of(b.ctx, m)?;
    Some(smallvec![transposed_copy(b, m, t)])
}

/// The transpose of `m` (element type `t`) as a new row-major matrix: a
/// collect loop over its entries, then `mat.from`. Built directly, not as
/// `mat.transpose`, so that the rows read from it stay plain rows (unit
/// stride) instead of becoming columns of `m` (`rw_row`).
fn transposed_copy(b: &mut Builder, m: ValueId, t: Type) -> ValueId {
    let (r, c) = dims(b, m);
    let total = idx(b, "arith.muli", c, r);
    // Result entry (p, q) at flat index i = p * r + q is m[q, p].
    let flat = build_gen_loop(b, total, &[], vec![Gen::collect(&t)], |b, i, h| {
        let p = idx(b, "arith.divsi", i, r);
        let q = idx(b, "arith.remsi", i, r);
        let x = mget(b, m, q, p, &t);
        emit(b, h[0], x);
    })[0];
    b.op1("mat.from", &[flat, c, r], Type::mat(t), vec![])
}

/// `m` with a transpose undone: the operand of `m`'s `mat.transpose`, or a
/// transposed copy of `m` ([`transposed_copy`]).
pub(crate) fn transposed(b: &mut Builder, m: ValueId, t: &Type) -> ValueId {
    match b.ctx.def_op_named(m, "mat.transpose") {
        Some(d) => b.ctx.operand(d, 0),
        None => transposed_copy(b, m, t.clone()),
    }
}

/// `mat.row(m, i) {transposed}`, column `i` of `m`: the index checked
/// against `cols(m)` (an `scf.assert`, since the loop below does not run
/// when `m` has no rows; it folds away inside a loop over the columns), then a collect loop over the rows reading
/// `m[j][i]` in place. The read is `mat.get {transposed}`, whose own checks
/// then always pass. Plain rows stay (a native backend reads them as a view).
fn lower_row(b: &mut Builder, st: &OpState) -> Repl {
    (st.attr("transposed").is_some()).then_some(())?;
    let (&m, &i) = (st.operands.first()?, st.operands.get(1)?);
    let t = elem_of(b.ctx, m)?;
    let (r, c) = dims(b, m);
    // Folds away when `i` is the index of a loop over `cols(m)` (arith's
    // fold of a loop index against its bound).
    let ok = crate::arith::build_cmpi(b, "ult", i, c);
    crate::scf::build_assert(b, ok, "row index out of bounds in mat.row");
    Some(build_gen_loop(
        b,
        r,
        &[],
        vec![Gen::collect(&t)],
        |b, j, h| {
            let x = b.op1("mat.get", &[m, i, j], t.clone(), vec![transposed_attr()]);
            emit(b, h[0], x);
        },
    ))
}

/// The `{transposed}` attribute of a `mat.get` or `mat.row` that reads
/// its matrix transposed.
pub(crate) fn transposed_attr() -> (String, ir::Attribute) {
    ("transposed".into(), ir::Attribute::Unit)
}

/// `vec.dot(mat.row(x, p), mat.row(y, q))`: both rows are read with unit
/// stride, and `vec.dot`'s own lowering (a reduce that `lower` may split
/// into several accumulators) computes the sum.
pub(crate) fn row_dot(
    b: &mut Builder,
    x: ValueId,
    p: ValueId,
    y: ValueId,
    q: ValueId,
    t: &Type,
) -> ValueId {
    let xr = b.op1("mat.row", &[x, p], Type::vec(t.clone()), vec![]);
    let yr = b.op1("mat.row", &[y, q], Type::vec(t.clone()), vec![]);
    b.op1("vec.dot", &[xr, yr], t.clone(), vec![])
}

/// `mat.mul(x, y)` as one collect loop over the entries of the result,
/// entry `(p, q)` the dot product of row `p` of `x` and row `q` of
/// `transpose(y)`: every operand is read with unit stride (issue 9, item
/// 9), at the cost of one transposed copy of `y` (O(k n) next to the
/// product's O(m k n); none when `y` is itself a transpose, which is
/// undone), and one of `x` when `x` is a transpose.
fn lower_mul(b: &mut Builder, st: &OpState) -> Repl {
    let (&x, &y) = (st.operands.first()?, st.operands.get(1)?);
    let t = elem_of(b.ctx, x)?;
    elem_of(b.ctx, y)?;
    let (rx, cx) = dims(b, x);
    let (ry, cy) = dims(b, y);
    assert_eq_sizes(b, cx, ry, "size mismatch in mat.mul");
    let yt = transposed(b, y, &t);
    let x = row_major(b, x, &t);
    let total = idx(b, "arith.muli", rx, cy);
    let flat = build_gen_loop(b, total, &[], vec![Gen::collect(&t)], |b, i, h| {
        let p = idx(b, "arith.divsi", i, cy);
        let q = idx(b, "arith.remsi", i, cy);
        let s = row_dot(b, x, p, yt, q, &t);
        emit(b, h[0], s);
    })[0];
    Some(smallvec![b.op1(
        "mat.from",
        &[flat, rx, cy],
        Type::mat(t),
        vec![]
    )])
}

/// `x` with its rows unit-stride: a transposed left operand is copied once
/// (O(m k) next to the product's O(m k n)); its rows would otherwise be
/// strided columns, gathered again for every entry.
pub(crate) fn row_major(b: &mut Builder, x: ValueId, t: &Type) -> ValueId {
    match b.ctx.def_op_named(x, "mat.transpose") {
        Some(d) => {
            let inner = b.ctx.operand(d, 0);
            transposed_copy(b, inner, t.clone())
        }
        None => x,
    }
}

/// `mat.matvec(m, v)`: one collect loop over the rows of `m`, each the dot
/// product of the row (unit stride) and `v`. With `{transposed}` (the
/// product of `transpose(m)`), entry `j` is the dot product of column `j`
/// of `m`, read in place with stride `cols(m)`, and `v`: no transposed copy
/// of `m` is built (issue 9, item 1). Each entry is the same left fold from
/// zero over the inner index either way.
fn lower_matvec(b: &mut Builder, st: &OpState) -> Repl {
    let (&m, &v) = (st.operands.first()?, st.operands.get(1)?);
    let t = elem_of(b.ctx, m)?;
    elem_of(b.ctx, v)?;
    let (r, c) = dims(b, m);
    let n = b.op1("vec.len", &[v], Type::Index, vec![]);
    if st.attr("transposed").is_some() {
        assert_eq_sizes(b, r, n, "size mismatch in mat.matvec");
        let zero = b.constant(crate::vec::zero_attr(&t), &t);
        let mul = BinOp::Mul.arith_op(&t);
        return Some(build_gen_loop(
            b,
            c,
            &[],
            vec![Gen::collect(&t)],
            |b, j, h| {
                let s = build_gen_loop(
                    b,
                    n,
                    &[zero],
                    vec![Gen::reduce(BinOp::Add, &t)],
                    |b, k, g| {
                        let x = mget(b, m, k, j, &t);
                        let y = b.op1("vec.get", &[v, k], t.clone(), vec![]);
                        let p = b.op1(mul, &[x, y], t.clone(), vec![]);
                        emit(b, g[0], p);
                    },
                )[0];
                emit(b, h[0], s);
            },
        ));
    }
    assert_eq_sizes(b, c, n, "size mismatch in mat.matvec");
    Some(build_gen_loop(
        b,
        r,
        &[],
        vec![Gen::collect(&t)],
        |b, i, h| {
            let row = b.op1("mat.row", &[m, i], Type::vec(t.clone()), vec![]);
            let s = b.op1("vec.dot", &[row, v], t.clone(), vec![]);
            emit(b, h[0], s);
        },
    ))
}

// ----- registration --------------------------------------------------------

use crate::util::pure;

/// Registers the `mat` ops.
pub fn register(r: &mut Registry) {
    r.register(
        pure(
            "mat.from",
            "a rows x cols matrix from a row-major vector",
            3,
        )
        .assembly_format("operands attr-dict : type(first)")
        .infer(crate::util::infer_mat_of_elem)
        .verify(verify_from)
        .interpret(interp_from),
    );
    r.register(
        pure("mat.rows", "the number of rows", 1)
            .assembly_format("operands attr-dict : type(operands)")
            .infer(crate::util::infer_index)
            .verify(verify_dim)
            .interpret(interp_rows)
            .rewrite(rw_rows),
    );
    r.register(
        pure("mat.cols", "the number of columns", 1)
            .assembly_format("operands attr-dict : type(operands)")
            .infer(crate::util::infer_index)
            .verify(verify_dim)
            .interpret(interp_cols)
            .rewrite(rw_cols),
    );
    r.register(
        pure("mat.get", "entry (i, j) (faults out of bounds)", 3)
            .assembly_format("operands attr-dict : type(first)")
            .infer(crate::util::infer_elem)
            .verify(verify_get)
            .interpret(interp_get)
            .rewrite(rw_get),
    );
    r.register(
        pure("mat.row", "row i as a vector (faults out of bounds)", 2)
            .assembly_format("operands attr-dict : type(first)")
            .infer(crate::util::infer_vec_of_elem)
            .verify(verify_row)
            .interpret(interp_row)
            .rewrite(rw_row)
            .lowering("gen", lower_row),
    );
    r.register(
        pure("mat.transpose", "the transposed matrix", 1)
            .traits(Traits::SAME_OPERANDS_AND_RESULT_TYPE)
            .assembly_format("operands attr-dict : type(operands)")
            .infer(crate::util::infer_same)
            .verify(verify_transpose)
            .interpret(interp_transpose)
            .rewrite(rw_transpose)
            .lowering("gen", lower_transpose),
    );
    r.register(
        pure("mat.mul", "the matrix product", 2)
            .traits(Traits::SAME_OPERANDS_AND_RESULT_TYPE)
            .assembly_format("operands attr-dict : type(first)")
            .infer(crate::util::infer_same)
            .verify(verify_mul)
            .interpret(interp_mul)
            .lowering("gen", lower_mul),
    );
    r.register(
        pure("mat.matvec", "the matrix-vector product", 2)
            .assembly_format("operands attr-dict : type(first)")
            .infer(crate::util::infer_vec_of_elem)
            .verify(verify_matvec)
            .interpret(interp_matvec)
            .rewrite(rw_matvec)
            .lowering("gen", lower_matvec),
    );
}
