//! The Cranelift side of [`crate::half`]: the sequences' operations as
//! Cranelift instructions.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::immediates::{Ieee32, Ieee64};
use cranelift_codegen::ir::types::{F32, F64, I16, I32, I64};
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Type as CType, Value};

use super::FnCx;
use crate::half::{Cmp, Conv, Emit, FloatOp, IntOp, W};

fn ctype(w: W) -> CType {
    match w {
        W::I32 => I32,
        W::I64 => I64,
        W::F32 => F32,
        W::F64 => F64,
    }
}

impl Emit for FnCx<'_, '_> {
    type V = Value;
    fn konst(&mut self, w: W, bits: u64) -> Value {
        match w {
            W::F32 => self.b.ins().f32const(Ieee32::with_bits(bits as u32)),
            W::F64 => self.b.ins().f64const(Ieee64::with_bits(bits)),
            w => self.iconst(ctype(w), bits as i64),
        }
    }
    fn bitcast(&mut self, x: Value, _from: W, to: W) -> Value {
        self.b.ins().bitcast(ctype(to), MemFlagsData::new(), x)
    }
    fn int(&mut self, op: IntOp, _w: W, a: Value, b: Value) -> Value {
        let i = self.b.ins();
        match op {
            IntOp::Add => i.iadd(a, b),
            IntOp::Sub => i.isub(a, b),
            IntOp::And => i.band(a, b),
            IntOp::Or => i.bor(a, b),
            IntOp::Shl => i.ishl(a, b),
            IntOp::LShr => i.ushr(a, b),
        }
    }
    fn float(&mut self, op: FloatOp, _w: W, a: Value, b: Value) -> Value {
        let i = self.b.ins();
        match op {
            FloatOp::Add => i.fadd(a, b),
            FloatOp::Sub => i.fsub(a, b),
            FloatOp::Mul => i.fmul(a, b),
            FloatOp::CopySign => i.fcopysign(a, b),
        }
    }
    fn fabs(&mut self, _w: W, x: Value) -> Value {
        self.b.ins().fabs(x)
    }
    fn cmp(&mut self, p: Cmp, _w: W, a: Value, b: Value) -> Value {
        let i = self.b.ins();
        match p {
            Cmp::FLt => i.fcmp(FloatCC::LessThan, a, b),
            Cmp::FGt => i.fcmp(FloatCC::GreaterThan, a, b),
            Cmp::FUno => i.fcmp(FloatCC::Unordered, a, b),
            Cmp::ULt => i.icmp(IntCC::UnsignedLessThan, a, b),
            Cmp::UGe => i.icmp(IntCC::UnsignedGreaterThanOrEqual, a, b),
            Cmp::Eq => i.icmp(IntCC::Equal, a, b),
        }
    }
    fn select(&mut self, _w: W, c: Value, a: Value, b: Value) -> Value {
        self.b.ins().select(c, a, b)
    }
    fn convert(&mut self, c: Conv, x: Value) -> Value {
        let i = self.b.ins();
        match c {
            Conv::Zext16 => i.uextend(I32, x),
            Conv::Trunc16 => i.ireduce(I16, x),
            Conv::U32ToF32 => i.fcvt_from_uint(F32, x),
            Conv::F32ToU32 => i.fcvt_to_uint_sat(I32, x),
            Conv::F64ToF32 => i.fdemote(F32, x),
        }
    }
}
