//! Translation of one `func.func` body to Cranelift IR.
//!
//! L0 values map to one or more Cranelift values ([`crate::abi`]). Nested
//! single-block regions become Cranelift blocks; values of enclosing blocks
//! dominate them, so they are used directly (no variables). Every fault site
//! branches to a cold block that calls `l0rt_fault` and jumps to the
//! function's `fault_exit`, which returns status 1.
//!
//! Ownership of `vec`/`mat` buffers (no IR op frees them, so the backend
//! does): a buffer value is *owned* by the block that defines it when it is
//! the result of `arr.to_vec`, `func.call` or an `scf` op, or a loop-carried
//! block argument; every other buffer value (parameters, `mat.from`,
//! `mat.row` and `select` results) is a borrowed view. At a block's
//! terminator each buffer operand is *moved* when the block owns it (first
//! occurrence only) and *copied* otherwise, so what a terminator passes on
//! is always owned by the receiver; then the block frees the owned buffers
//! it did not move. Loop inits are copied. On a fault, temporaries leak.
//!
//! An `scf.forall` body is outlined into a chunk function of its own
//! ([`forall`]), run by the runtime's thread pool.
//!
//! Nested vectors own their element vectors ([`crate::abi::own_depth`]):
//! copies and frees are deep ([`buffers`]). `vec.get` of a `vec<vec<T>>`
//! and `arr.load` of an `arr<vec<T>>` are borrowed views of the element.
//! `arr.store`/`arr.push` of a vector into an `arr<vec<T>>` move it when it
//! is owned by the op's block and this is its last use, and copy it
//! otherwise; the array owns its element vectors (`arr.store` frees the one
//! it replaces, `arr.free` frees them all, `arr.to_vec` hands them on). A
//! view read from an array is valid until that element is replaced or the
//! array freed (the lowering never uses one after that).

mod arith;
pub(crate) use arith::ROUNDED;
mod arr;
mod buffers;
mod forall;
mod gpu;
mod half;
mod mem;
mod pair_map;
mod scf;
pub mod slp;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{self, I64, I8};
use cranelift_codegen::ir::{
    AbiParam, Block, BlockArg, FuncRef, InstBuilder, MemFlagsData, Signature, Type as CType,
    UserFuncName, Value,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{FuncId, Linkage, Module};
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::{smallvec, SmallVec};

use ir::spec::Traits;
use ir::{BlockId, Context, Diagnostic, OpId, Type, ValueId};

use crate::abi::{self, Layout, PTR};
use crate::faults::FaultTable;

/// The Cranelift values of one L0 value, or of a list of them.
pub(crate) type Vals = SmallVec<[Value; 4]>;

/// The interpreter's call depth limit, enforced at each `func.call`.
pub const MAX_DEPTH: i64 = ir::interp::MAX_CALL_DEPTH as i64;

/// What the module knows about one L0 function.
pub(crate) struct FuncInfo {
    pub op: OpId,
    pub name: String,
    pub body: BlockId,
    /// The internal function `l0i_<name>`.
    pub id: FuncId,
    pub param_tys: Vec<Type>,
    pub result_tys: Vec<Type>,
    /// Flattened parameter types.
    pub params: Vec<CType>,
    /// Layout of the flattened results behind the out-pointer.
    pub out: Layout,
}

/// The functions of a module, by name.
#[derive(Default)]
pub(crate) struct Funcs {
    pub list: Vec<FuncInfo>,
    pub by_name: FxHashMap<String, usize>,
}

/// The internal signature: `(params..., out: ptr, depth: i64) -> i8 status`.
pub(crate) fn internal_sig(m: &dyn Module, f: &FuncInfo) -> Signature {
    let mut s = m.make_signature();
    s.params.extend(f.params.iter().map(|&t| AbiParam::new(t)));
    s.params.push(AbiParam::new(PTR));
    s.params.push(AbiParam::new(I64));
    s.returns.push(AbiParam::new(I8));
    s
}

/// Memory flags of every access the backend emits (in bounds by construction).
pub(crate) fn trusted() -> MemFlagsData {
    MemFlagsData::trusted()
}

/// Per-function translation state.
pub(crate) struct FnCx<'a, 'f> {
    pub ctx: &'a Context,
    pub m: &'a mut dyn Module,
    pub b: FunctionBuilder<'f>,
    pub funcs: &'a Funcs,
    pub faults: &'a mut FaultTable,
    vals: FxHashMap<ValueId, Vals>,
    owned: FxHashSet<ValueId>,
    imports: FxHashMap<&'static str, FuncRef>,
    callees: FxHashMap<FuncId, FuncRef>,
    fault_exit: Block,
    depth: Value,
}

/// Translates and defines function `fi`.
pub(crate) fn define(
    m: &mut dyn Module,
    cl: &mut cranelift_codegen::Context,
    fctx: &mut FunctionBuilderContext,
    ctx: &Context,
    funcs: &Funcs,
    faults: &mut FaultTable,
    fi: &FuncInfo,
) -> Result<(), Diagnostic> {
    m.clear_context(cl);
    cl.func.signature = internal_sig(m, fi);
    cl.func.name = UserFuncName::user(0, fi.id.as_u32());
    {
        let mut b = FunctionBuilder::new(&mut cl.func, fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let params = b.block_params(entry).to_vec();
        let fault_exit = b.create_block();
        b.set_cold_block(fault_exit);
        let n = params.len();
        let (out, depth) = (params[n - 2], params[n - 1]);
        let mut cx = FnCx::new(ctx, &mut *m, b, funcs, faults, fault_exit, depth);
        let mut k = 0;
        for &a in ctx.block_args(fi.body) {
            let w = cx.flat(ctx.ty(a)).len();
            cx.set(a, &params[k..k + w]);
            k += w;
        }
        let blocks = ctx
            .block_region(fi.body)
            .map(|r| ctx.region(r).blocks.clone())
            .unwrap_or_default();
        if blocks.len() > 1 {
            cx.emit_cfg(fi, &blocks, out)?;
            cx.finish_fault_exit();
        } else {
            let (_, vals) = cx.emit_block(fi.body)?;
            cx.store_results(fi, &vals, out)?;
            cx.finish_status();
        }
    }
    let r = crate::listing::define(m, fi.id, cl, &fi.name);
    r.map_err(|e| define_error(ctx, fi.op, &format!("'@{}'", fi.name), cl, *e))
}

/// The diagnostic at `op` when Cranelift cannot compile function `what`.
pub(crate) fn define_error(
    ctx: &Context,
    op: OpId,
    what: &str,
    cl: &cranelift_codegen::Context,
    e: cranelift_module::ModuleError,
) -> Diagnostic {
    let detail = match e {
        cranelift_module::ModuleError::Compilation(ce) => {
            cranelift_codegen::print_errors::pretty_error(&cl.func, ce)
        }
        other => other.to_string(),
    };
    Diagnostic::at_op(
        ctx,
        op,
        format!("the Cranelift backend failed to compile {what}: {detail}"),
    )
}

impl<'a, 'f> FnCx<'a, 'f> {
    /// A translation context for a function being built by `b`, whose
    /// faults branch to `fault_exit` and whose call depth is `depth`.
    pub(crate) fn new(
        ctx: &'a Context,
        m: &'a mut dyn Module,
        b: FunctionBuilder<'f>,
        funcs: &'a Funcs,
        faults: &'a mut FaultTable,
        fault_exit: Block,
        depth: Value,
    ) -> FnCx<'a, 'f> {
        FnCx {
            ctx,
            m,
            b,
            funcs,
            faults,
            vals: FxHashMap::default(),
            owned: FxHashSet::default(),
            imports: FxHashMap::default(),
            callees: FxHashMap::default(),
            fault_exit,
            depth,
        }
    }

    /// Stores a function's result values at `out` (its results record).
    fn store_results(
        &mut self,
        fi: &FuncInfo,
        vals: &[Value],
        out: Value,
    ) -> Result<(), Diagnostic> {
        if vals.len() != fi.out.offsets.len() {
            return Err(Diagnostic::at_op(
                self.ctx,
                fi.op,
                "function results do not match its type",
            ));
        }
        for (v, &off) in vals.iter().zip(&fi.out.offsets) {
            self.b.ins().store(trusted(), *v, out, off as i32);
        }
        Ok(())
    }

    /// Translates a function body of several blocks (`cf` branches; see
    /// [`crate::check`] for what it may hold): one Cranelift block per
    /// block, its arguments as block parameters, `cf.br`/`cf.cond_br` as
    /// `jump`/`brif`, and each `func.return` storing the results and
    /// returning status 0.
    fn emit_cfg(
        &mut self,
        fi: &FuncInfo,
        blocks: &[BlockId],
        out: Value,
    ) -> Result<(), Diagnostic> {
        let ctx = self.ctx;
        let mut map: FxHashMap<BlockId, Block> = FxHashMap::default();
        for &b in &blocks[1..] {
            let tys = self.flat_all(ctx.block_args(b));
            let cb = self.block_with(&tys);
            let params = self.b.block_params(cb).to_vec();
            self.bind(ctx.block_args(b), &params, false);
            map.insert(b, cb);
        }
        for (i, &b) in blocks.iter().enumerate() {
            if i > 0 {
                self.b.switch_to_block(map[&b]);
            }
            let (term, vals) = self.emit_block(b)?;
            let succ = |k: usize| map.get(&ctx.successors(term)[k].0).copied();
            match ctx.op_name(term) {
                "func.return" => {
                    self.store_results(fi, &vals, out)?;
                    let zero = self.b.ins().iconst(I8, 0);
                    self.b.ins().return_(&[zero]);
                }
                "cf.br" => {
                    let t = succ(0).ok_or_else(|| self.unsupported(term))?;
                    self.jump(t, &vals);
                }
                "cf.cond_br" => {
                    let (t, e) = (
                        succ(0).ok_or_else(|| self.unsupported(term))?,
                        succ(1).ok_or_else(|| self.unsupported(term))?,
                    );
                    let nt = self.flat_all(ctx.successor_operands(term, 0)).len();
                    let c = vals[0];
                    self.brif(c, t, &vals[1..1 + nt], e, &vals[1 + nt..]);
                }
                "cf.switch" => {
                    // A chain of compares, first case first.
                    let cases = dialects::cf_switch::case_values(ctx, term)
                        .ok_or_else(|| self.unsupported(term))?;
                    let ty = self.b.func.dfg.value_type(vals[0]);
                    let mut start = 1;
                    let ranges: Vec<(Block, std::ops::Range<usize>)> = (0..=cases.len())
                        .map(|k| {
                            let n = self.flat_all(ctx.successor_operands(term, k)).len();
                            let r = start..start + n;
                            start += n;
                            succ(k)
                                .map(|b| (b, r))
                                .ok_or_else(|| self.unsupported(term))
                        })
                        .collect::<Result<_, _>>()?;
                    for (k, &v) in cases.iter().enumerate() {
                        let (t, r) = ranges[k + 1].clone();
                        // Cranelift's immediates are zero-extended from the width.
                        let bits = ty.bits();
                        let imm = if bits < 64 {
                            v & ((1i64 << bits) - 1)
                        } else {
                            v
                        };
                        let x = self.b.ins().iconst(ty, imm);
                        let c = self.b.ins().icmp(IntCC::Equal, vals[0], x);
                        let next = self.block_with(&[]);
                        self.brif(c, t, &vals[r], next, &[]);
                        self.b.switch_to_block(next);
                    }
                    let (d, r) = ranges[0].clone();
                    self.jump(d, &vals[r]);
                }
                _ => return Err(self.unsupported(term)),
            }
        }
        Ok(())
    }

    /// Ends a function whose every block has returned or branched: the
    /// fault exit returns 1; seals and finalizes it.
    pub(crate) fn finish_fault_exit(mut self) {
        self.b.switch_to_block(self.fault_exit);
        let one = self.b.ins().iconst(I8, 1);
        self.b.ins().return_(&[one]);
        let config = self.m.target_config();
        self.b.seal_all_blocks();
        self.b.finalize(config);
    }

    /// Ends a function whose current block succeeds (`return 0`) and whose
    /// fault exit returns 1; seals and finalizes it.
    pub(crate) fn finish_status(mut self) {
        let zero = self.b.ins().iconst(I8, 0);
        self.b.ins().return_(&[zero]);
        self.finish_fault_exit();
    }

    // ----- values --------------------------------------------------------

    /// The Cranelift values of `v`.
    pub fn get(&self, v: ValueId) -> Vals {
        self.vals.get(&v).cloned().unwrap_or_default()
    }
    /// The single Cranelift value of scalar `v`.
    pub fn get1(&self, v: ValueId) -> Value {
        self.vals[&v][0]
    }
    /// Binds `v`.
    pub fn set(&mut self, v: ValueId, parts: &[Value]) {
        self.vals.insert(v, SmallVec::from_slice(parts));
    }
    /// Binds `v` and records that the current block owns it if it is a buffer.
    pub fn set_owned(&mut self, v: ValueId, parts: &[Value]) {
        self.set(v, parts);
        if abi::is_buffer(self.ctx.ty(v)) {
            self.owned.insert(v);
        }
    }
    /// The flattened types of `t` (checked supported before translation).
    pub fn flat(&self, t: &Type) -> abi::Flat {
        abi::flatten(t).unwrap_or_default()
    }
    /// The flattened types of a list of values.
    pub fn flat_all(&self, vs: &[ValueId]) -> Vec<CType> {
        vs.iter().flat_map(|&v| self.flat(self.ctx.ty(v))).collect()
    }
    /// Binds `vs` to consecutive chunks of `parts`; `owned` marks buffers owned.
    pub fn bind(&mut self, vs: &[ValueId], parts: &[Value], owned: bool) {
        let mut k = 0;
        for &v in vs {
            let w = self.flat(self.ctx.ty(v)).len();
            if owned {
                self.set_owned(v, &parts[k..k + w]);
            } else {
                self.set(v, &parts[k..k + w]);
            }
            k += w;
        }
    }
    /// A new block with parameters of `tys`.
    pub fn block_with(&mut self, tys: &[CType]) -> Block {
        let blk = self.b.create_block();
        for &t in tys {
            self.b.append_block_param(blk, t);
        }
        blk
    }
    /// `jump blk(vals)`.
    pub fn jump(&mut self, blk: Block, vals: &[Value]) {
        let args: Vec<BlockArg> = vals.iter().map(|&v| v.into()).collect();
        self.b.ins().jump(blk, &args);
    }
    /// `brif c, t(tv), e(ev)`.
    pub fn brif(&mut self, c: Value, t: Block, tv: &[Value], e: Block, ev: &[Value]) {
        let ta: Vec<BlockArg> = tv.iter().map(|&v| v.into()).collect();
        let ea: Vec<BlockArg> = ev.iter().map(|&v| v.into()).collect();
        self.b.ins().brif(c, t, &ta, e, &ea);
    }
    /// An integer constant of type `ty` (masked to its width, as the verifier wants).
    pub fn iconst(&mut self, ty: CType, v: i64) -> Value {
        let bits = ty.bits();
        let v = if bits >= 64 {
            v
        } else {
            v & ((1i64 << bits) - 1)
        };
        self.b.ins().iconst(ty, v)
    }
    /// `v` sign-extended to i64.
    pub fn widen_i64(&mut self, v: Value) -> Value {
        match self.b.func.dfg.value_type(v) {
            types::I64 => v,
            _ => self.b.ins().sextend(I64, v),
        }
    }
    /// `ptr + i * size`.
    pub fn elem_addr(&mut self, ptr: Value, i: Value, size: u32) -> Value {
        let off = if size == 1 {
            i
        } else {
            let sh = self.iconst(I64, size.trailing_zeros() as i64);
            self.b.ins().ishl(i, sh)
        };
        self.b.ins().iadd(ptr, off)
    }

    // ----- calls ---------------------------------------------------------

    /// A reference to the imported function `name` (runtime or libm).
    pub fn import(
        &mut self,
        name: &'static str,
        params: &[CType],
        rets: &[CType],
    ) -> Result<FuncRef, Diagnostic> {
        if let Some(&f) = self.imports.get(name) {
            return Ok(f);
        }
        let mut sig = self.m.make_signature();
        sig.params.extend(params.iter().map(|&t| AbiParam::new(t)));
        sig.returns.extend(rets.iter().map(|&t| AbiParam::new(t)));
        let id = self
            .m
            .declare_function(name, Linkage::Import, &sig)
            .map_err(|e| ir::pass::pass_error(format!("cannot import '{name}': {e}")))?;
        let f = self.m.declare_func_in_func(id, self.b.func);
        self.imports.insert(name, f);
        Ok(f)
    }
    /// Calls an imported function; returns its results.
    pub fn call_rt(
        &mut self,
        name: &'static str,
        params: &[CType],
        rets: &[CType],
        args: &[Value],
    ) -> Result<Vals, Diagnostic> {
        let f = self.import(name, params, rets)?;
        let inst = self.b.ins().call(f, args);
        Ok(SmallVec::from_slice(self.b.inst_results(inst)))
    }
    /// A reference to the internal function `id`.
    pub fn callee(&mut self, id: FuncId) -> FuncRef {
        if let Some(&f) = self.callees.get(&id) {
            return f;
        }
        let f = self.m.declare_func_in_func(id, self.b.func);
        self.callees.insert(id, f);
        f
    }
    /// The current function's call depth.
    pub fn depth(&self) -> Value {
        self.depth
    }

    // ----- faults --------------------------------------------------------

    /// Continues when `ok` is non-zero; otherwise reports a fault at `op`
    /// with `template` (formatted with `payload` when it is not empty).
    pub fn check(
        &mut self,
        ok: Value,
        op: OpId,
        template: String,
        payload: &[Value],
    ) -> Result<(), Diagnostic> {
        let cont = self.b.create_block();
        let fail = self.b.create_block();
        self.b.set_cold_block(fail);
        self.brif(ok, cont, &[], fail, &[]);
        self.b.switch_to_block(fail);
        let id = self
            .faults
            .add(self.ctx.loc(op), template, !payload.is_empty());
        let mut args: Vals = smallvec![self.iconst(I64, id)];
        for k in 0..3 {
            let a = match payload.get(k) {
                Some(&v) => self.widen_i64(v),
                None => self.iconst(I64, 0),
            };
            args.push(a);
        }
        self.call_rt("l0rt_fault", &[I64; 4], &[], &args)?;
        self.jump(self.fault_exit, &[]);
        self.b.switch_to_block(cont);
        Ok(())
    }
    /// Faults at `op` with "out of memory" when pointer `p` is null.
    pub fn check_alloc(&mut self, p: Value, op: OpId) -> Result<(), Diagnostic> {
        let ok = self.b.ins().icmp_imm_s(IntCC::NotEqual, p, 0);
        let msg = format!("'{}' op out of memory", self.ctx.op_name(op));
        self.check(ok, op, msg, &[])
    }
    /// Returns status 1 from this function when `status` (of a call) is non-zero.
    pub fn propagate(&mut self, status: Value) {
        let cont = self.b.create_block();
        self.brif(status, self.fault_exit, &[], cont, &[]);
        self.b.switch_to_block(cont);
    }
    /// The message of an unsupported op.
    pub fn unsupported(&self, op: OpId) -> Diagnostic {
        Diagnostic::at_op(
            self.ctx,
            op,
            format!(
                "'{}' is not supported by the Cranelift backend",
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
                    let c = self.copy_buffer(v, term)?;
                    out.extend(c);
                }
                _ => out.extend(self.get(v)),
            }
        }
        for v in to_free {
            self.free_buffer(v)?;
        }
        Ok((term, out))
    }

    /// Emits one non-terminator op.
    fn emit_op(&mut self, op: OpId) -> Result<(), Diagnostic> {
        let name = self.ctx.op_name(op);
        match name.split('.').next().unwrap_or("") {
            "arith" => arith::emit(self, op, name),
            "scf" => scf::emit(self, op, name),
            "cf" if name == "cf.assert" => scf::emit(self, op, "scf.assert"),
            "func" if name == "func.call" => scf::call(self, op),
            "vec" | "mat" | "arr" => mem::emit(self, op, name),
            "gpu" if crate::gpu_host::is_host_op(name) => crate::gpu_host::emit(self, op),
            _ => Err(self.unsupported(op)),
        }?;
        // An `i0` result is 0, whatever the op computed in its carrier byte
        // (a truncation to `i0`, say); the op still ran, so its faults stay.
        for &r in self.ctx.results(op) {
            if *self.ctx.ty(r) == Type::I0 {
                let z = self.iconst(I8, 0);
                self.set(r, &[z]);
            }
        }
        Ok(())
    }
}
