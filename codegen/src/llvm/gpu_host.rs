//! The `gpu` host ops in LLVM IR: [`crate::gpu_host`]'s translation on
//! this backend's values.

use ir::{Context, Diagnostic, OpId, ValueId};

use super::translate::{parts, FnCx};
use super::writer::{Mem, Ty};
use crate::gpu_host::{HostEmit, RtTy};

fn ty(t: RtTy) -> Ty {
    match t {
        RtTy::I8 => Ty::I8,
        RtTy::I64 => Ty::I64,
        RtTy::Ptr => Ty::Ptr,
    }
}

impl HostEmit for FnCx<'_> {
    type V = String;
    fn ctx(&self) -> &Context {
        self.ctx
    }
    fn part(&mut self, v: ValueId, k: usize) -> String {
        self.get(v)[k].clone()
    }
    fn bind(&mut self, r: ValueId, x: String) {
        self.set(r, &[x]);
    }
    fn bind_owned(&mut self, r: ValueId, xs: &[String]) {
        self.set_owned(r, xs);
    }
    fn int(&mut self, x: i64) -> String {
        x.to_string()
    }
    fn null(&mut self) -> String {
        "null".into()
    }
    fn mul(&mut self, a: String, b: String) -> String {
        self.w.val(format!("mul i64 {a}, {b}"))
    }
    fn slots(&mut self, vs: &[ValueId]) -> String {
        let env = self.w.stack(8 * vs.len() as u32);
        for (k, &v) in vs.iter().enumerate() {
            let t = parts(self.ctx.ty(v))[0];
            let x = self.get(v)[0].clone();
            self.w.store(t, &x, &env, 8 * k as i64, Mem::Other);
        }
        env
    }
    fn call(
        &mut self,
        name: &'static str,
        params: &[RtTy],
        ret: RtTy,
        args: &[String],
    ) -> Result<String, Diagnostic> {
        let ps: Vec<Ty> = params.iter().map(|&t| ty(t)).collect();
        Ok(self.call_rt(name, &ps, Some(ty(ret)), args))
    }
    fn fault_unless_zero(
        &mut self,
        status: String,
        op: OpId,
        template: String,
    ) -> Result<(), Diagnostic> {
        let ok = self.w.val(format!("icmp eq i8 {status}, 0"));
        self.check(&ok, op, template, &[]);
        Ok(())
    }
    fn fault_if_null(&mut self, p: String, op: OpId, template: String) -> Result<(), Diagnostic> {
        let ok = self.w.val(format!("icmp ne i8* {p}, null"));
        self.check(&ok, op, template, &[]);
        Ok(())
    }
}
