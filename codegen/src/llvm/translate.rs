//! Translation of one `func.func` body to LLVM IR text.
//!
//! The same value representation ([`crate::abi`]), function ABI, ownership
//! rules and fault sites as the Cranelift translation ([`crate::translate`]
//! explains them); only the instructions differ. Every L0 value maps to one
//! or more LLVM values ([`parts`]); `i1` is an `i8` holding 0 or 1, as in
//! memory. Nested single-block regions become LLVM blocks; values of
//! enclosing blocks dominate them and are used directly.

use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

use ir::spec::Traits;
use ir::{BlockId, Context, Diagnostic, OpId, Type, ValueId};

use super::writer::{Blk, FnWriter, Mem, Ty};
use crate::abi::{self, Layout};
use crate::faults::FaultTable;

/// The LLVM values of one L0 value, or of a list of them.
pub(crate) type Vals = SmallVec<[String; 3]>;

/// The LLVM part types of a value of L0 type `t` (checked supported before
/// translation): scalars one part, `vec` `(ptr, i64)`, `mat` `(ptr, i64,
/// i64)`, `arr` `(ptr)`.
pub(crate) fn parts(t: &Type) -> SmallVec<[Ty; 3]> {
    let mut out = SmallVec::new();
    match t {
        Type::Vec(_) => out.extend([Ty::Ptr, Ty::I64]),
        Type::Mat(_) => out.extend([Ty::Ptr, Ty::I64, Ty::I64]),
        Type::Arr(_) => out.push(Ty::Ptr),
        t => out.extend(scalar(t)),
    }
    out
}

/// The LLVM type of a scalar L0 type.
pub(crate) fn scalar(t: &Type) -> Option<Ty> {
    Some(match t {
        // `i0` is carried in a byte that always holds 0.
        Type::I0 | Type::I1 | Type::I8 => Ty::I8,
        Type::I16 => Ty::I16,
        Type::I32 => Ty::I32,
        Type::I64 | Type::Index => Ty::I64,
        // Another width: the smallest machine integer that holds it, kept
        // sign-extended from the width.
        Type::Int(w) => match w {
            0..=8 => Ty::I8,
            9..=16 => Ty::I16,
            17..=32 => Ty::I32,
            _ => Ty::I64,
        },
        // A 16-bit float is the `f32` of its value (see `crate::half`).
        Type::F16 | Type::BF16 | Type::F32 => Ty::F32,
        Type::F64 => Ty::F64,
        _ => return None,
    })
}

/// What the module knows about one L0 function.
pub(crate) struct FuncInfo {
    pub op: OpId,
    pub name: String,
    pub body: BlockId,
    pub param_tys: Vec<Type>,
    pub result_tys: Vec<Type>,
    /// Flattened parameter types.
    pub params: Vec<Ty>,
    /// Flattened result types, in the order of the out-struct's fields.
    pub results: Vec<Ty>,
    /// Layout of the flattened results behind the out-pointer.
    pub out: Layout,
}

/// The functions of a module, by name.
#[derive(Default)]
pub(crate) struct Funcs {
    pub list: Vec<FuncInfo>,
    pub by_name: FxHashMap<String, usize>,
}

/// The internal function's parameter list: `(params..., i8* out, i64 depth)`.
pub(crate) fn internal_params(f: &FuncInfo) -> String {
    let mut s: Vec<String> = f
        .params
        .iter()
        .enumerate()
        .map(|(k, t)| format!("{} %p{k}", t.name()))
        .collect();
    s.push("i8* %out".into());
    s.push("i64 %depth".into());
    s.join(", ")
}

/// Per-function translation state.
pub(crate) struct FnCx<'a> {
    pub ctx: &'a Context,
    pub w: FnWriter,
    pub funcs: &'a Funcs,
    pub faults: &'a mut FaultTable,
    /// Runtime and libm functions called, with their declarations.
    pub decls: &'a mut FxHashMap<String, String>,
    vals: FxHashMap<ValueId, Vals>,
    owned: FxHashSet<ValueId>,
    fault_exit: Blk,
    /// Translating a GPU kernel: faults trap, libm calls go to CUDA's
    /// libdevice (`__nv_*`), and the host runtime cannot be called.
    pub device: bool,
    /// What a kernel needed that the device cannot do (reported after
    /// translation).
    pub device_errors: Vec<(OpId, String)>,
    /// The op being translated.
    current: Option<OpId>,
    /// The label of the first block (after the allocas' entry block).
    first: String,
    /// Chunk functions outlined from `scf.forall` bodies (definitions).
    pub outlined: Vec<String>,
}

/// Translates function `fi`; returns its definition's text.
pub(crate) fn define(
    ctx: &Context,
    funcs: &Funcs,
    faults: &mut FaultTable,
    decls: &mut FxHashMap<String, String>,
    fi: &FuncInfo,
    attrs: &str,
) -> Result<String, Diagnostic> {
    let mut cx = FnCx::begin(ctx, funcs, faults, decls, None);
    let mut k = 0;
    for &a in ctx.block_args(fi.body) {
        let n = parts(ctx.ty(a)).len();
        let ps: Vals = (k..k + n).map(|j| format!("%p{j}")).collect();
        cx.set(a, &ps);
        k += n;
    }
    let header = format!(
        "define internal i8 {}({}) {attrs}",
        super::global("l0i_", &fi.name),
        internal_params(fi)
    );
    let blocks = ctx
        .block_region(fi.body)
        .map(|r| ctx.region(r).blocks.clone())
        .unwrap_or_default();
    if blocks.len() > 1 {
        cx.emit_cfg(fi, &blocks)?;
        return Ok(cx.finish_fault_exit(&header));
    }
    let (_, vals) = cx.emit_block(fi.body)?;
    cx.store_results(fi, &vals)?;
    Ok(cx.finish_status(&header))
}

/// Translates kernel `f` (a `gpu.kernel` function) for NVPTX: `define
/// void @<name>(params)`, where an `arr<T>` parameter is a global-memory
/// data pointer and a length (`T addrspace(1)*`-like `i8 addrspace(1)*`,
/// `i64`) and a scalar is itself; the body sees each `arr` through a
/// header on the stack (which SROA removes), so the `arr` ops translate as
/// on the host. `decls` gathers intrinsics, libdevice functions and the
/// workgroup (`addrspace(3)`) buffers.
pub(crate) fn define_kernel(
    ctx: &Context,
    funcs: &Funcs,
    faults: &mut FaultTable,
    decls: &mut FxHashMap<String, String>,
    f: OpId,
    name: &str,
) -> Result<String, Diagnostic> {
    let mut cx = FnCx::begin(ctx, funcs, faults, decls, Some(f));
    let body = ctx.op_block(f, 0);
    let mut params = Vec::new();
    for (k, &a) in ctx.block_args(body).iter().enumerate() {
        match ctx.ty(a) {
            Type::Arr(_) => {
                params.push(format!("i8 addrspace(1)* %p{k}"));
                params.push(format!("i64 %n{k}"));
                let data =
                    cx.w.val(format!("addrspacecast i8 addrspace(1)* %p{k} to i8*"));
                let h = super::gpu::header(&mut cx, &data, &format!("%n{k}"));
                cx.set(a, &[h]);
            }
            t => {
                let Some(s) = scalar(t) else {
                    return Err(Diagnostic::at_op(
                        ctx,
                        f,
                        format!("kernel parameter type '{t}'"),
                    ));
                };
                params.push(format!("{} %p{k}", s.name()));
                cx.set(a, &[format!("%p{k}")]);
            }
        }
    }
    let (term, vals) = cx.emit_block(body)?;
    if !vals.is_empty() || !ctx.is(term, "func.return") {
        return Err(Diagnostic::at_op(
            ctx,
            f,
            "a kernel must end in 'func.return' with no values",
        ));
    }
    if let Some((op, why)) = cx.device_errors.first() {
        return Err(Diagnostic::at_op(
            ctx,
            *op,
            format!("cannot run in a GPU kernel: {why}"),
        ));
    }
    cx.w.line("ret void");
    let fe = cx.fault_exit.clone();
    cx.w.start(&fe);
    cx.w.line("unreachable");
    let header = format!("define void @{name}({}) #0", params.join(", "));
    Ok(cx.w.finish(&header, &cx.first))
}

impl<'a> FnCx<'a> {
    /// A translation context with its first block started; `kernel` is
    /// the kernel being translated in device mode, `None` on the host.
    fn begin(
        ctx: &'a Context,
        funcs: &'a Funcs,
        faults: &'a mut FaultTable,
        decls: &'a mut FxHashMap<String, String>,
        kernel: Option<OpId>,
    ) -> FnCx<'a> {
        let mut w = FnWriter::default();
        let first = w.block(&[]);
        let fault_exit = w.block(&[]);
        w.set_cold(&fault_exit);
        let mut cx = FnCx {
            ctx,
            w,
            funcs,
            faults,
            decls,
            vals: FxHashMap::default(),
            owned: FxHashSet::default(),
            fault_exit,
            device: kernel.is_some(),
            device_errors: Vec::new(),
            current: kernel,
            first: first.label.clone(),
            outlined: Vec::new(),
        };
        cx.w.start(&first);
        cx
    }

    /// A host translation context for another function of the module (a
    /// chunk function), sharing this one's fault table and declarations.
    pub fn nested(&mut self) -> FnCx<'_> {
        FnCx::begin(self.ctx, self.funcs, self.faults, self.decls, None)
    }

    /// Stores a function's result values in `%out` (its results record).
    fn store_results(&mut self, fi: &FuncInfo, vals: &[String]) -> Result<(), Diagnostic> {
        if vals.len() != fi.out.offsets.len() {
            return Err(Diagnostic::at_op(
                self.ctx,
                fi.op,
                "function results do not match its type",
            ));
        }
        for ((v, &off), &t) in vals.iter().zip(&fi.out.offsets).zip(&fi.results) {
            self.w.store(t, v, "%out", off as i64, Mem::Other);
        }
        Ok(())
    }

    /// Translates a function body of several blocks (`cf` branches; see
    /// [`crate::check`] for what it may hold): one LLVM block per block,
    /// its arguments passed as the writer passes block arguments,
    /// `cf.br`/`cf.cond_br` as `br`, and each `func.return` storing the
    /// results and returning status 0.
    fn emit_cfg(&mut self, fi: &FuncInfo, blocks: &[BlockId]) -> Result<(), Diagnostic> {
        let ctx = self.ctx;
        let mut map: FxHashMap<BlockId, super::writer::Blk> = FxHashMap::default();
        for &b in &blocks[1..] {
            let tys = self.flat_all(ctx.block_args(b));
            map.insert(b, self.w.block(&tys));
        }
        for (i, &b) in blocks.iter().enumerate() {
            if i > 0 {
                let blk = map[&b].clone();
                let ps = self.w.start(&blk);
                self.bind(ctx.block_args(b), &ps, false);
            }
            let (term, vals) = self.emit_block(b)?;
            let succ = |k: usize| map.get(&ctx.successors(term)[k].0).cloned();
            match ctx.op_name(term) {
                "func.return" => {
                    self.store_results(fi, &vals)?;
                    self.w.line("ret i8 0");
                }
                "cf.br" => {
                    let t = succ(0).ok_or_else(|| self.unsupported(term))?;
                    self.w.jump(&t, &vals);
                }
                "cf.cond_br" => {
                    let (t, e) = (
                        succ(0).ok_or_else(|| self.unsupported(term))?,
                        succ(1).ok_or_else(|| self.unsupported(term))?,
                    );
                    let nt = self.flat_all(ctx.successor_operands(term, 0)).len();
                    let c = self.cond(&vals[0]);
                    self.w.brif(&c, &t, &vals[1..1 + nt], &e, &vals[1 + nt..]);
                }
                "cf.switch" => {
                    // A chain of compares, first case first.
                    let cases = dialects::cf_switch::case_values(ctx, term)
                        .ok_or_else(|| self.unsupported(term))?;
                    let ty = scalar(ctx.ty(ctx.operand(term, 0)))
                        .ok_or_else(|| self.unsupported(term))?
                        .name();
                    let mut start = 1;
                    let mut ranges = Vec::new();
                    for k in 0..=cases.len() {
                        let n = self.flat_all(ctx.successor_operands(term, k)).len();
                        let b = succ(k).ok_or_else(|| self.unsupported(term))?;
                        ranges.push((b, start..start + n));
                        start += n;
                    }
                    for (k, &v) in cases.iter().enumerate() {
                        let (t, r) = ranges[k + 1].clone();
                        let c = self.w.val(format!("icmp eq {ty} {}, {v}", vals[0]));
                        let next = self.w.block(&[]);
                        self.w.brif(&c, &t, &vals[r], &next, &[]);
                        self.w.start(&next);
                    }
                    let (d, r) = ranges[0].clone();
                    self.w.jump(&d, &vals[r]);
                }
                _ => return Err(self.unsupported(term)),
            }
        }
        Ok(())
    }

    /// Ends a host function whose every block has returned or branched:
    /// the fault exit returns 1; its text with header `header`, followed by
    /// the chunk functions outlined from it.
    pub fn finish_fault_exit(mut self, header: &str) -> String {
        let fe = self.fault_exit.clone();
        self.w.start(&fe);
        self.w.line("ret i8 1");
        let mut text = self.w.finish(header, &self.first);
        for o in self.outlined {
            text.push('\n');
            text.push_str(&o);
        }
        text
    }

    /// Ends a host function whose current block succeeds (`ret i8 0`) and
    /// whose fault exit returns 1; its text with header `header`, followed
    /// by the chunk functions outlined from it.
    pub fn finish_status(mut self, header: &str) -> String {
        self.w.line("ret i8 0");
        self.finish_fault_exit(header)
    }

    // ----- values --------------------------------------------------------

    /// The LLVM values of `v`.
    pub fn get(&self, v: ValueId) -> Vals {
        self.vals.get(&v).cloned().unwrap_or_default()
    }
    /// The single LLVM value of scalar `v`.
    pub fn get1(&self, v: ValueId) -> String {
        self.vals[&v][0].clone()
    }
    /// Binds `v`.
    pub fn set(&mut self, v: ValueId, ps: &[String]) {
        self.vals.insert(v, SmallVec::from_vec(ps.to_vec()));
    }
    /// Binds `v` and records that the current block owns it if it is a buffer.
    pub fn set_owned(&mut self, v: ValueId, ps: &[String]) {
        self.set(v, ps);
        if abi::is_buffer(self.ctx.ty(v)) {
            self.owned.insert(v);
        }
    }
    /// The flattened types of a list of values.
    pub fn flat_all(&self, vs: &[ValueId]) -> Vec<Ty> {
        vs.iter().flat_map(|&v| parts(self.ctx.ty(v))).collect()
    }
    /// Binds `vs` to consecutive chunks of `ps`; `owned` marks buffers owned.
    pub fn bind(&mut self, vs: &[ValueId], ps: &[String], owned: bool) {
        let mut k = 0;
        for &v in vs {
            let n = parts(self.ctx.ty(v)).len();
            if owned {
                self.set_owned(v, &ps[k..k + n]);
            } else {
                self.set(v, &ps[k..k + n]);
            }
            k += n;
        }
    }
    /// `i1` of an `i8` boolean.
    pub fn cond(&mut self, v: &str) -> String {
        self.w.val(format!("trunc i8 {v} to i1"))
    }
    /// `i8` 0/1 of an `i1`.
    pub fn bool8(&mut self, c: &str) -> String {
        self.w.val(format!("zext i1 {c} to i8"))
    }

    // ----- calls ---------------------------------------------------------

    /// Calls the runtime or libm function `name`; returns its result (or
    /// an empty string for `void`).
    pub fn call_rt(
        &mut self,
        name: &'static str,
        params: &[Ty],
        ret: Option<Ty>,
        args: &[String],
    ) -> String {
        let name: String = if self.device {
            if let (true, Some(at)) = (name.starts_with("l0rt_"), self.current) {
                self.device_errors
                    .push((at, format!("needs the host runtime ({name})")));
            }
            // libm on the device is CUDA's libdevice.
            format!("__nv_{name}")
        } else {
            name.to_string()
        };
        let name = name.as_str();
        let rt = ret.map_or("void", |t| t.name());
        let ps: Vec<&str> = params.iter().map(|t| t.name()).collect();
        self.declare(name, || format!("declare {rt} @{name}({})", ps.join(", ")));
        let a: Vec<String> = params
            .iter()
            .zip(args)
            .map(|(t, v)| format!("{} {v}", t.name()))
            .collect();
        let call = format!("call {rt} @{name}({})", a.join(", "));
        if ret.is_some() {
            self.w.val(call)
        } else {
            self.w.line(call);
            String::new()
        }
    }

    /// Records the declaration of function `name` (once).
    pub fn declare(&mut self, name: &str, decl: impl FnOnce() -> String) {
        if !self.decls.contains_key(name) {
            self.decls.insert(name.to_string(), decl());
        }
    }

    // ----- faults --------------------------------------------------------

    /// Continues when the `i1` `ok` holds; otherwise reports a fault at `op`
    /// with `template` (formatted with the `i64` `payload` when not empty).
    pub fn check(&mut self, ok: &str, op: OpId, template: String, payload: &[String]) {
        let cont = self.w.block(&[]);
        let fail = self.w.block(&[]);
        self.w.set_cold(&fail);
        self.w.brif(ok, &cont, &[], &fail, &[]);
        self.w.start(&fail);
        if self.device {
            // A kernel cannot report where it failed: it traps, and the
            // launch fails (the gpu level's interpreter run names the op).
            self.declare("llvm.trap", || "declare void @llvm.trap()".into());
            self.w.line("call void @llvm.trap()");
            self.w.line("unreachable");
            self.w.start(&cont);
            return;
        }
        let id = self
            .faults
            .add(self.ctx.loc(op), template, !payload.is_empty());
        let mut args = vec![id.to_string()];
        for k in 0..3 {
            args.push(payload.get(k).cloned().unwrap_or_else(|| "0".into()));
        }
        self.call_rt("l0rt_fault", &[Ty::I64; 4], None, &args);
        let fe = self.fault_exit.clone();
        self.w.jump(&fe, &[]);
        self.w.start(&cont);
    }
    /// Faults at `op` with "out of memory" when pointer `p` is null.
    pub fn check_alloc(&mut self, p: &str, op: OpId) {
        let ok = self.w.val(format!("icmp ne i8* {p}, null"));
        let msg = format!("'{}' op out of memory", self.ctx.op_name(op));
        self.check(&ok, op, msg, &[]);
    }
    /// Returns status 1 from this function when the `i8` `status` is non-zero.
    pub fn propagate(&mut self, status: &str) {
        let bad = self.w.val(format!("icmp ne i8 {status}, 0"));
        let cont = self.w.block(&[]);
        let fe = self.fault_exit.clone();
        self.w.brif(&bad, &fe, &[], &cont, &[]);
        self.w.start(&cont);
    }
    /// The message of an unsupported op.
    pub fn unsupported(&self, op: OpId) -> Diagnostic {
        Diagnostic::at_op(
            self.ctx,
            op,
            format!(
                "'{}' is not supported by the LLVM backend",
                self.ctx.op_name(op)
            ),
        )
    }

    // ----- blocks --------------------------------------------------------

    /// Emits the ops of `blk` before its terminator, then the terminator's
    /// ownership transfer and frees; returns the terminator and the
    /// flattened values it passes on (the caller emits the branch).
    pub fn emit_block(&mut self, blk: BlockId) -> Result<(OpId, Vals), Diagnostic> {
        let ctx = self.ctx;
        let mut term = None;
        for op in ctx.iter_block(blk) {
            if ctx.has_traits(op, Traits::TERMINATOR) {
                term = Some(op);
                break;
            }
            self.emit_op(op)?;
        }
        let Some(term) = term else {
            return Err(ir::pass::pass_error("a block has no terminator"));
        };
        let (transfers, to_free) =
            crate::ownership::terminator_transfer(ctx, blk, term, &self.owned);
        let mut out = Vals::new();
        for (v, t) in transfers {
            match t {
                crate::ownership::Transfer::Copy => {
                    let c = self.copy_buffer(v, term);
                    out.extend(c);
                }
                _ => out.extend(self.get(v)),
            }
        }
        for v in to_free {
            self.free_buffer(v);
        }
        Ok((term, out))
    }

    /// Emits one non-terminator op.
    pub(crate) fn emit_op(&mut self, op: OpId) -> Result<(), Diagnostic> {
        let name = self.ctx.op_name(op);
        self.current = Some(op);
        if self.device && !super::gpu::device_op(name) {
            return Err(Diagnostic::at_op(
                self.ctx,
                op,
                format!("'{name}' cannot run in a GPU kernel"),
            ));
        }
        match name.split('.').next().unwrap_or("") {
            "gpu" if !self.device && crate::gpu_host::is_host_op(name) => {
                crate::gpu_host::emit(self, op)
            }
            "gpu" => super::gpu::emit(self, op, name),
            "arith" => super::arith::emit(self, op, name),
            "scf" => super::scf::emit(self, op, name),
            "cf" if name == "cf.assert" => super::scf::emit(self, op, "scf.assert"),
            "func" if name == "func.call" => super::scf::call(self, op),
            "vec" | "mat" | "arr" => super::mem::emit(self, op, name),
            _ => Err(self.unsupported(op)),
        }?;
        // An `i0` result is 0, whatever the op computed in its carrier byte
        // (a truncation to `i0`, say); the op still ran, so its faults stay.
        for &r in self.ctx.results(op) {
            if *self.ctx.ty(r) == Type::I0 {
                self.set(r, &["0".to_string()]);
            }
        }
        Ok(())
    }

    // ----- buffers -------------------------------------------------------

    /// Number of elements of buffer value `v` (`len` or `rows * cols`).
    fn buffer_len(&mut self, v: ValueId) -> String {
        let p = self.get(v);
        match self.ctx.ty(v) {
            Type::Mat(_) => self.w.val(format!("mul i64 {}, {}", p[1], p[2])),
            _ => p[1].clone(),
        }
    }

    /// A fresh owned (deep) copy of buffer value `v`, made at `op`.
    pub fn copy_buffer(&mut self, v: ValueId, op: OpId) -> Vals {
        let t = self.ctx.ty(v);
        let (depth, es) = (abi::own_depth(t), abi::leaf_size(t) as i64);
        let n = self.buffer_len(v);
        let mut p = self.get(v);
        let r = if depth == 0 {
            let bytes = self.w.val(format!("mul i64 {n}, {es}"));
            self.call_rt(
                "l0rt_copy",
                &[Ty::Ptr, Ty::I64],
                Some(Ty::Ptr),
                &[p[0].clone(), bytes],
            )
        } else {
            self.call_rt(
                "l0rt_vec_clone",
                &[Ty::Ptr, Ty::I64, Ty::I64, Ty::I64],
                Some(Ty::Ptr),
                &[p[0].clone(), n, es.to_string(), depth.to_string()],
            )
        };
        self.check_alloc(&r, op);
        p[0] = r;
        p
    }

    /// Frees owned buffer value `v` (and its element vectors).
    pub fn free_buffer(&mut self, v: ValueId) {
        let depth = abi::own_depth(self.ctx.ty(v));
        let p = self.get(v);
        if depth == 0 {
            self.call_rt("l0rt_free", &[Ty::Ptr], None, &[p[0].clone()]);
        } else {
            self.drop_vecs(&p[0], &p[1], depth);
        }
    }

    /// `l0rt_vec_drop(data, n, depth)`.
    pub fn drop_vecs(&mut self, data: &str, n: &str, depth: i64) {
        self.call_rt(
            "l0rt_vec_drop",
            &[Ty::Ptr, Ty::I64, Ty::I64],
            None,
            &[data.into(), n.into(), depth.to_string()],
        );
    }

    /// The values of `vs` passed into a loop: buffers are copied.
    pub fn copy_in(&mut self, vs: &[ValueId], op: OpId) -> Vals {
        let mut out = Vals::new();
        for &v in vs {
            if abi::is_buffer(self.ctx.ty(v)) {
                let c = self.copy_buffer(v, op);
                out.extend(c);
            } else {
                out.extend(self.get(v));
            }
        }
        out
    }

    /// The parts of `x` to store into an array at `op`: a buffer is moved
    /// when the op's block owns it and `op` is its last use, else copied.
    /// Whether `op` may take vector `x`'s buffer (an owned vector at its
    /// last use, [`crate::ownership::movable_into_array`]); if so, `x` is
    /// no longer this block's to free.
    pub fn take_buffer(&mut self, x: ValueId, op: OpId) -> bool {
        let movable = crate::ownership::movable_into_array(self.ctx, &self.owned, x, op);
        if movable {
            self.owned.remove(&x);
        }
        movable
    }

    pub fn value_to_store(&mut self, x: ValueId, op: OpId) -> Vals {
        let ctx = self.ctx;
        if !abi::is_buffer(ctx.ty(x)) {
            return self.get(x);
        }
        if crate::ownership::movable_into_array(ctx, &self.owned, x, op) {
            self.owned.remove(&x);
            self.get(x)
        } else {
            self.copy_buffer(x, op)
        }
    }
}
