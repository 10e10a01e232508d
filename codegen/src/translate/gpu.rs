//! The `gpu` host ops on Cranelift: [`crate::gpu_host`]'s translation on
//! this backend's values.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{I64, I8};
use cranelift_codegen::ir::{InstBuilder, StackSlotData, StackSlotKind, Value};

use ir::{Context, Diagnostic, OpId, ValueId};

use super::{trusted, FnCx};
use crate::abi::PTR;
use crate::gpu_host::{HostEmit, RtTy};

fn ctype(t: RtTy) -> cranelift_codegen::ir::Type {
    match t {
        RtTy::I8 => I8,
        RtTy::I64 | RtTy::Ptr => I64,
    }
}

impl HostEmit for FnCx<'_, '_> {
    type V = Value;
    fn ctx(&self) -> &Context {
        self.ctx
    }
    fn part(&mut self, v: ValueId, k: usize) -> Value {
        self.get(v)[k]
    }
    fn bind(&mut self, r: ValueId, x: Value) {
        self.set(r, &[x]);
    }
    fn bind_owned(&mut self, r: ValueId, xs: &[Value]) {
        self.set_owned(r, xs);
    }
    fn int(&mut self, x: i64) -> Value {
        self.iconst(I64, x)
    }
    fn null(&mut self) -> Value {
        self.iconst(PTR, 0)
    }
    fn mul(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().imul(a, b)
    }
    fn slots(&mut self, vs: &[ValueId]) -> Value {
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            8 * vs.len().max(1) as u32,
            3,
        ));
        let env = self.b.ins().stack_addr(PTR, slot, 0);
        for (k, &v) in vs.iter().enumerate() {
            let x = self.get(v)[0];
            self.b.ins().store(trusted(), x, env, 8 * k as i32);
        }
        env
    }
    fn call(
        &mut self,
        name: &'static str,
        params: &[RtTy],
        ret: RtTy,
        args: &[Value],
    ) -> Result<Value, Diagnostic> {
        let ps: Vec<_> = params.iter().map(|&t| ctype(t)).collect();
        Ok(self.call_rt(name, &ps, &[ctype(ret)], args)?[0])
    }
    fn fault_unless_zero(
        &mut self,
        status: Value,
        op: OpId,
        template: String,
    ) -> Result<(), Diagnostic> {
        let ok = self.b.ins().icmp_imm_s(IntCC::Equal, status, 0);
        self.check(ok, op, template, &[])
    }
    fn fault_if_null(&mut self, p: Value, op: OpId, template: String) -> Result<(), Diagnostic> {
        let ok = self.b.ins().icmp_imm_s(IntCC::NotEqual, p, 0);
        self.check(ok, op, template, &[])
    }
}
