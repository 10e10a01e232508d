//! The interpreter framework: reference semantics for any level of the IR.
//! Each op spec supplies an [`crate::spec::InterpFn`]; this module binds
//! values, walks blocks, runs regions and calls functions. Run-time faults are
//! [`RunError`]s at the op's location.

use std::any::Any;
use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

use smallvec::SmallVec;

use crate::context::{BlockId, Context, Loc, OpId, RegionId, ValueId};
use crate::diag::Diagnostic;
use crate::spec::Traits;

/// A 2-D row-major matrix value.
#[derive(Clone, Debug, PartialEq)]
pub struct MatValue {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<RtValue>,
}

/// The run-time value of a `memref` (held as [`RtValue::Opaque`]):
/// element `(i0, i1, ...)` is `buf[offset + i0*strides[0] + ...]`.
/// `memref.dealloc` empties `buf`, so any later access faults. Elements
/// never stored hold the `arr` dialect's marker of undefined elements.
#[derive(Debug, Clone)]
pub struct MemRefValue {
    pub buf: Rc<RefCell<Vec<RtValue>>>,
    pub offset: i64,
    pub sizes: Vec<i64>,
    pub strides: Vec<i64>,
}

impl MemRefValue {
    /// A fresh row-major allocation holding `data` with shape `sizes`.
    pub fn row_major(data: Vec<RtValue>, sizes: Vec<i64>) -> MemRefValue {
        MemRefValue {
            buf: Rc::new(RefCell::new(data)),
            offset: 0,
            strides: Self::row_major_strides(&sizes),
            sizes,
        }
    }

    /// The row-major strides of `sizes` (each the product of the sizes
    /// after it, saturating).
    pub fn row_major_strides(sizes: &[i64]) -> Vec<i64> {
        let mut strides = vec![1i64; sizes.len()];
        for k in (0..sizes.len().saturating_sub(1)).rev() {
            strides[k] = strides[k + 1].saturating_mul(sizes[k + 1]);
        }
        strides
    }

    /// The elements of the view in row-major (C) order, as `.npy` writes
    /// them. Errors: an element outside the allocation (the view was
    /// freed), or one never stored (`arr.alloc {uninit}`).
    pub fn elements(&self) -> Result<Vec<RtValue>, String> {
        let buf = self.buf.borrow();
        let count = self.sizes.iter().map(|&s| s.max(0) as usize).product();
        let mut out = Vec::with_capacity(count);
        let mut index = vec![0i64; self.sizes.len()];
        for _ in 0..count {
            let pos = self.offset
                + index
                    .iter()
                    .zip(&self.strides)
                    .map(|(i, s)| i * s)
                    .sum::<i64>();
            match usize::try_from(pos).ok().and_then(|p| buf.get(p)) {
                Some(RtValue::Opaque(_)) => {
                    return Err("the memref holds an element never stored".into())
                }
                Some(v) => out.push(v.clone()),
                None => return Err("the memref was freed".into()),
            }
            // The next index in row-major order.
            for k in (0..index.len()).rev() {
                index[k] += 1;
                if index[k] < self.sizes[k] {
                    break;
                }
                index[k] = 0;
            }
        }
        Ok(out)
    }

    /// Writes the view as nested lists (`[[1, 2], [3, 4]]`; a rank-0 view
    /// as its element); an element outside the allocation (freed) as
    /// `<freed>`, one never stored as `<undef>`.
    fn write(&self, f: &mut fmt::Formatter<'_>, dim: usize, pos: i64) -> fmt::Result {
        if dim == self.sizes.len() {
            let buf = self.buf.borrow();
            return match usize::try_from(pos).ok().and_then(|p| buf.get(p)) {
                Some(RtValue::Opaque(_)) => f.write_str("<undef>"),
                Some(v) => write!(f, "{v}"),
                None => f.write_str("<freed>"),
            };
        }
        f.write_str("[")?;
        for i in 0..self.sizes[dim] {
            if i > 0 {
                f.write_str(", ")?;
            }
            self.write(f, dim + 1, pos + i * self.strides[dim])?;
        }
        f.write_str("]")
    }
}

/// A run-time value.
#[derive(Clone)]
pub enum RtValue {
    /// `i1`.
    Bool(bool),
    /// `i32`, `i64`, `index` (i32 values are kept sign-extended).
    Int(i64),
    /// `f32`, and `f16`/`bf16` (whose values are exact in `f32`).
    F32(f32),
    F64(f64),
    /// `vec<T>`.
    Vec(Rc<Vec<RtValue>>),
    /// `mat<T>`.
    Mat(Rc<MatValue>),
    /// `arr<T>`: a mutable buffer.
    Arr(Rc<RefCell<Vec<RtValue>>>),
    /// `struct<...>`: the field values in declaration order.
    Struct(Rc<Vec<RtValue>>),
    /// Dialect-specific state (e.g. a generator handle).
    Opaque(Rc<dyn Any>),
}

impl RtValue {
    /// The integer of `Int` (and `Bool` as 0/1).
    pub fn as_int(&self) -> Option<i64> {
        match self {
            RtValue::Int(v) => Some(*v),
            RtValue::Bool(b) => Some(*b as i64),
            _ => None,
        }
    }
    /// The float of `F32`/`F64`, widened.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            RtValue::F32(v) => Some(*v as f64),
            RtValue::F64(v) => Some(*v),
            _ => None,
        }
    }
    /// The boolean of `Bool`.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            RtValue::Bool(b) => Some(*b),
            RtValue::Int(v) => Some(*v != 0),
            _ => None,
        }
    }
    /// The values a value of type `ty` is passed and printed as at a
    /// function boundary, one per [`Type::leaves`] entry: a struct is its
    /// flattened fields, a vector of structs one vector per field. `None`
    /// when the value does not have that shape.
    pub fn leaves(&self, ty: &crate::Type) -> Option<Vec<RtValue>> {
        let mut out = Vec::new();
        self.push_leaves(ty, &mut out)?;
        Some(out)
    }
    fn push_leaves(&self, ty: &crate::Type, out: &mut Vec<RtValue>) -> Option<()> {
        use crate::Type;
        match (ty, self) {
            (Type::Struct(st), RtValue::Struct(xs)) if xs.len() == st.fields.len() => {
                for ((_, t), x) in st.fields.iter().zip(xs.iter()) {
                    x.push_leaves(t, out)?;
                }
            }
            (Type::Vec(e), RtValue::Vec(items)) if e.contains_struct() => {
                let n = e.leaves().len();
                let mut cols: Vec<Vec<RtValue>> = vec![Vec::with_capacity(items.len()); n];
                for it in items.iter() {
                    for (c, x) in cols.iter_mut().zip(it.leaves(e)?) {
                        c.push(x);
                    }
                }
                out.extend(cols.into_iter().map(|c| RtValue::Vec(Rc::new(c))));
            }
            (Type::Struct(_), _) => return None,
            _ => out.push(self.clone()),
        }
        Some(())
    }
    /// The inverse of [`RtValue::leaves`]: builds a value of type `ty` from
    /// the front of `leaves`. `None` when there are too few, or the vectors
    /// of one struct-of-arrays differ in length.
    pub fn from_leaves(
        ty: &crate::Type,
        leaves: &mut dyn Iterator<Item = RtValue>,
    ) -> Option<RtValue> {
        use crate::Type;
        Some(match ty {
            Type::Struct(st) => RtValue::Struct(Rc::new(
                st.fields
                    .iter()
                    .map(|(_, t)| RtValue::from_leaves(t, leaves))
                    .collect::<Option<Vec<_>>>()?,
            )),
            Type::Vec(e) if e.contains_struct() => {
                let cols: Vec<Rc<Vec<RtValue>>> = (0..e.leaves().len())
                    .map(|_| leaves.next()?.as_vec().cloned())
                    .collect::<Option<_>>()?;
                let len = cols.first()?.len();
                if cols.iter().any(|c| c.len() != len) {
                    return None;
                }
                let items = (0..len)
                    .map(|i| RtValue::from_leaves(e, &mut cols.iter().map(|c| c[i].clone())))
                    .collect::<Option<Vec<_>>>()?;
                RtValue::Vec(Rc::new(items))
            }
            _ => leaves.next()?,
        })
    }
    /// The elements of `Vec`.
    pub fn as_vec(&self) -> Option<&Rc<Vec<RtValue>>> {
        match self {
            RtValue::Vec(v) => Some(v),
            _ => None,
        }
    }
}

impl PartialEq for RtValue {
    fn eq(&self, other: &Self) -> bool {
        use RtValue::*;
        match (self, other) {
            (Bool(a), Bool(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (F32(a), F32(b)) => a.to_bits() == b.to_bits(),
            (F64(a), F64(b)) => a.to_bits() == b.to_bits(),
            (Vec(a), Vec(b)) => a == b,
            (Mat(a), Mat(b)) => a == b,
            (Arr(a), Arr(b)) => *a.borrow() == *b.borrow(),
            (Struct(a), Struct(b)) => a == b,
            _ => false,
        }
    }
}

impl fmt::Display for RtValue {
    /// Scalars in Rust's shortest round-trip form (`2.5`, `10`, `-0`, `inf`,
    /// `NaN`); vectors as `[a, b]`; matrices as `[[a, b], [c, d]]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RtValue::Bool(b) => write!(f, "{b}"),
            RtValue::Int(v) => write!(f, "{v}"),
            RtValue::F32(v) => write!(f, "{v}"),
            RtValue::F64(v) => write!(f, "{v}"),
            RtValue::Vec(items) => write_seq(f, items),
            RtValue::Arr(items) => write_seq(f, &items.borrow()),
            RtValue::Mat(m) => {
                f.write_str("[")?;
                for r in 0..m.rows {
                    if r > 0 {
                        f.write_str(", ")?;
                    }
                    write_seq(f, &m.data[r * m.cols..(r + 1) * m.cols])?;
                }
                f.write_str("]")
            }
            RtValue::Struct(fields) => {
                f.write_str("(")?;
                crate::types::write_list(f, fields)?;
                f.write_str(")")
            }
            RtValue::Opaque(o) => match o.downcast_ref::<MemRefValue>() {
                Some(m) => m.write(f, 0, m.offset),
                None => f.write_str("<opaque>"),
            },
        }
    }
}

impl RtValue {
    /// How many parts (scalars and brackets) the printed form
    /// (`Display`) has, saturating: an upper bound on its length over a
    /// constant. A matrix or memref with a zero dimension holds no element
    /// but prints one `[]` per row, so a `(2^63 - 1) x 0` matrix prints
    /// 2^63 parts; a printer checks this first (issue 43).
    pub fn printed_parts(&self) -> u128 {
        match self {
            RtValue::Vec(items) => seq_parts(items),
            RtValue::Arr(items) => seq_parts(&items.borrow()),
            RtValue::Struct(fields) => seq_parts(fields),
            RtValue::Mat(m) => {
                let (r, c) = (m.rows as u128, m.cols as u128);
                1u128.saturating_add(r.saturating_mul(c.saturating_add(1)))
            }
            RtValue::Opaque(o) => match o.downcast_ref::<MemRefValue>() {
                // One bracket per row of every rank, and the elements.
                Some(m) => {
                    let (mut total, mut rows) = (1u128, 1u128);
                    for &d in &m.sizes {
                        rows = rows.saturating_mul(d.max(0) as u128);
                        total = total.saturating_add(rows);
                    }
                    total
                }
                None => 1,
            },
            _ => 1,
        }
    }
}

fn seq_parts(items: &[RtValue]) -> u128 {
    items
        .iter()
        .fold(1u128, |n, v| n.saturating_add(v.printed_parts()))
}

fn write_seq(f: &mut fmt::Formatter<'_>, items: &[RtValue]) -> fmt::Result {
    f.write_str("[")?;
    crate::types::write_list(f, items)?;
    f.write_str("]")
}

impl fmt::Debug for RtValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

/// A run-time fault at an op.
#[derive(Clone, Debug, PartialEq)]
pub struct RunError {
    pub loc: Loc,
    pub message: String,
}

impl RunError {
    /// A fault at `op`.
    pub fn at(ctx: &Context, op: OpId, message: impl Into<String>) -> RunError {
        RunError {
            loc: ctx.loc(op),
            message: format!("'{}' op {}", ctx.op_name(op), message.into()),
        }
    }
    /// As a diagnostic.
    pub fn into_diagnostic(self) -> Diagnostic {
        Diagnostic::error(self.loc, self.message)
    }
}

/// Maximum nesting of function calls before the interpreter reports an error.
pub const MAX_CALL_DEPTH: usize = 2000;

/// Executes IR. Values live in a table indexed by value id.
pub struct Interp<'a> {
    pub ctx: &'a Context,
    /// State a dialect binds around a run (e.g. the simulated GPU thread
    /// whose `gpu.thread_id` this interpreter answers); `None` on the host.
    pub ambient: Option<Rc<dyn Any>>,
    env: Vec<Option<RtValue>>,
    depth: usize,
    /// Ops executed so far, and the most this interpreter may execute
    /// (its fuel, [`max_steps`] when created).
    steps: u64,
    pub max_steps: u64,
    /// Deferred faults (`--defer-faults`, [`crate::poison`]); `None` when off.
    pub deferral: Option<crate::poison::Deferral>,
    /// The successor the last terminator run chose ([`Interp::branch_to`]).
    branch: Option<usize>,
}

/// The default fuel of an interpreter: about 15 s of interpretation here.
pub const DEFAULT_MAX_STEPS: u64 = 250_000_000;

static MAX_STEPS: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(DEFAULT_MAX_STEPS);

/// Sets the fuel of interpreters created from now on (`--max-steps=N`): a
/// run that executes more than `n` ops stops with a located fault instead
/// of running on (a loop that does not end).
pub fn set_max_steps(n: u64) {
    MAX_STEPS.store(n, std::sync::atomic::Ordering::Relaxed);
}

/// The fuel of new interpreters.
pub fn max_steps() -> u64 {
    MAX_STEPS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Where [`Interp::run_until`] stopped.
#[derive(Debug)]
pub enum Stop {
    /// Before this op (not executed), for which the stop predicate held.
    At(OpId),
    /// After the block's terminator, with its operands.
    Returned(SmallVec<[RtValue; 2]>),
}

impl<'a> Interp<'a> {
    /// An interpreter over `ctx`.
    pub fn new(ctx: &'a Context) -> Self {
        Interp {
            ctx,
            ambient: None,
            env: vec![None; ctx.num_values()],
            depth: 0,
            steps: 0,
            max_steps: max_steps(),
            deferral: crate::poison::defer_faults().then(Default::default),
            branch: None,
        }
    }
    /// Called by a branch's interpretation: control goes to its successor
    /// `i`, whose arguments take the values the branch returns.
    pub fn branch_to(&mut self, i: usize) {
        self.branch = Some(i);
    }
    /// The current value of `v` (a fault if it was never computed).
    pub fn get(&self, v: ValueId) -> Option<&RtValue> {
        self.env.get(v.index()).and_then(|x| x.as_ref())
    }
    /// Binds `v`.
    pub fn set(&mut self, v: ValueId, val: RtValue) {
        self.env[v.index()] = Some(val);
    }

    /// Calls the function named `name` (an op with `sym_name` and a body
    /// region whose entry block takes the arguments).
    pub fn call(
        &mut self,
        name: &str,
        args: &[RtValue],
        at: Loc,
    ) -> Result<Vec<RtValue>, RunError> {
        let f = self.ctx.lookup_symbol(name).ok_or_else(|| RunError {
            loc: at,
            message: format!("no function named '@{name}'"),
        })?;
        let Some(&body) = self.ctx.regions(f).first() else {
            return Err(RunError {
                loc: at,
                message: format!(
                    "function '@{name}' is a declaration without a body (L0 links no external code)"
                ),
            });
        };
        if self.depth >= MAX_CALL_DEPTH {
            self.hard_fault();
            return Err(RunError {
                loc: at,
                message: format!("call depth limit ({MAX_CALL_DEPTH}) exceeded"),
            });
        }
        let nargs = self.ctx.block_args(self.ctx.region_block(body)).len();
        if nargs != args.len() {
            return Err(RunError {
                loc: at,
                message: format!(
                    "function '@{name}' takes {nargs} arguments, got {}",
                    args.len()
                ),
            });
        }
        self.depth += 1;
        // Values of a recursive activation would clobber the caller's: save them.
        let saved = if self.depth > 1 {
            Some(self.save_scope(f))
        } else {
            None
        };
        let r = self.run_region(body, args);
        if let Some(s) = saved {
            self.restore_scope(s);
        }
        self.depth -= 1;
        let r = r?;
        if self.depth == 0 {
            self.check_results(&r)?;
        }
        Ok(r.into_vec())
    }

    fn save_scope(&self, f: OpId) -> Vec<(ValueId, Option<RtValue>)> {
        let mut out = Vec::new();
        for op in self.ctx.walk_nested(f) {
            for &r in self.ctx.results(op) {
                out.push((r, self.env[r.index()].clone()));
            }
            for &reg in self.ctx.regions(op) {
                for &b in &self.ctx.region(reg).blocks {
                    for &a in self.ctx.block_args(b) {
                        out.push((a, self.env[a.index()].clone()));
                    }
                }
            }
        }
        for &reg in self.ctx.regions(f) {
            for &b in &self.ctx.region(reg).blocks {
                for &a in self.ctx.block_args(b) {
                    out.push((a, self.env[a.index()].clone()));
                }
            }
        }
        out
    }

    fn restore_scope(&mut self, saved: Vec<(ValueId, Option<RtValue>)>) {
        for (v, x) in saved {
            self.env[v.index()] = x;
        }
    }

    /// Binds the arguments of block `b` to `args`.
    pub fn bind_args(&mut self, b: BlockId, args: &[RtValue]) {
        for (&a, v) in self.ctx.block_args(b).iter().zip(args) {
            self.env[a.index()] = Some(v.clone());
        }
    }

    /// Runs region `r` from its entry block, with `args` bound to the entry
    /// block's arguments, following branches from block to block, and
    /// returns the operands of the terminator that leaves the region.
    pub fn run_region(
        &mut self,
        r: RegionId,
        args: &[RtValue],
    ) -> Result<SmallVec<[RtValue; 2]>, RunError> {
        let mut b = self.ctx.region_block(r);
        self.bind_args(b, args);
        loop {
            self.branch = None;
            match self.run_until(b, None, None)? {
                Stop::Returned(v) => {
                    let Some(i) = self.branch.take() else {
                        return Ok(v);
                    };
                    let t = self.ctx.terminator(b);
                    let Some(&(next, _)) = t.and_then(|t| self.ctx.successors(t).get(i)) else {
                        self.hard_fault();
                        return Err(RunError {
                            loc: t.map_or(Loc::UNKNOWN, |t| self.ctx.loc(t)),
                            message: format!("branch to a missing successor #{i}"),
                        });
                    };
                    self.bind_args(next, &v);
                    b = next;
                }
                Stop::At(_) => return Ok(SmallVec::new()),
            }
        }
    }

    /// Runs the ops of block `b` from `from` (its first op when `None`)
    /// until the terminator, which is executed ([`Stop::Returned`]), or
    /// until an op for which `stop` holds, which is not ([`Stop::At`]). The
    /// block's arguments must be bound. A block without a terminator
    /// returns no values.
    pub fn run_until(
        &mut self,
        b: BlockId,
        from: Option<OpId>,
        stop: Option<&dyn Fn(OpId) -> bool>,
    ) -> Result<Stop, RunError> {
        let ctx = self.ctx;
        let mut cur = match from {
            Some(op) => Some(op),
            None => ctx.block(b).first,
        };
        let mut operands: SmallVec<[RtValue; 4]> = SmallVec::new();
        while let Some(op) = cur {
            if let Some(p) = stop {
                if p(op) {
                    return Ok(Stop::At(op));
                }
            }
            cur = ctx.op(op).next;
            self.steps += 1;
            if self.steps > self.max_steps {
                self.hard_fault();
                return Err(RunError::at(
                    ctx,
                    op,
                    format!(
                        "interpreter step limit ({} ops) exceeded: the run does not end, or needs --max-steps above it",
                        self.max_steps
                    ),
                ));
            }
            let spec = ctx.spec(op);
            let Some(f) = spec.interpret else {
                self.hard_fault();
                return Err(RunError::at(ctx, op, "has no interpreter semantics"));
            };
            operands.clear();
            for &v in ctx.operands(op) {
                match &self.env[v.index()] {
                    Some(x) => operands.push(x.clone()),
                    None => {
                        self.hard_fault();
                        return Err(RunError::at(ctx, op, "operand has no value"));
                    }
                }
            }
            let results = if self.deferral.is_some() {
                self.step_deferring(op, f, &operands)?
            } else {
                f(self, op, &operands)?
            };
            if spec.traits.contains(Traits::TERMINATOR) {
                return Ok(Stop::Returned(results));
            }
            for (&r, v) in ctx.results(op).iter().zip(results) {
                self.env[r.index()] = Some(v);
            }
        }
        Ok(Stop::Returned(SmallVec::new()))
    }
}
