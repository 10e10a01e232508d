//! The LLVM side of [`crate::half`]: the sequences' operations as LLVM IR
//! text (IEEE operations without fast-math flags, so LLVM keeps
//! `(a + c) - c`).

use super::arith::intrinsic;
use super::translate::FnCx;
use super::writer::Ty;
use crate::half::{Cmp, Conv, Emit, FloatOp, IntOp, W};

fn ty(w: W) -> Ty {
    match w {
        W::I32 => Ty::I32,
        W::I64 => Ty::I64,
        W::F32 => Ty::F32,
        W::F64 => Ty::F64,
    }
}

impl Emit for FnCx<'_> {
    type V = String;
    fn konst(&mut self, w: W, bits: u64) -> String {
        match w {
            W::I32 => (bits as u32 as i32).to_string(),
            W::I64 => (bits as i64).to_string(),
            // LLVM spells a float constant as the bits of the same value
            // as a double.
            W::F32 => format!("0x{:016X}", (f32::from_bits(bits as u32) as f64).to_bits()),
            W::F64 => format!("0x{bits:016X}"),
        }
    }
    fn bitcast(&mut self, x: String, from: W, to: W) -> String {
        let (f, t) = (ty(from).name(), ty(to).name());
        self.w.val(format!("bitcast {f} {x} to {t}"))
    }
    fn int(&mut self, op: IntOp, w: W, a: String, b: String) -> String {
        let i = match op {
            IntOp::Add => "add",
            IntOp::Sub => "sub",
            IntOp::And => "and",
            IntOp::Or => "or",
            IntOp::Shl => "shl",
            IntOp::LShr => "lshr",
        };
        self.w.val(format!("{i} {} {a}, {b}", ty(w).name()))
    }
    fn float(&mut self, op: FloatOp, w: W, a: String, b: String) -> String {
        let i = match op {
            FloatOp::Add => "fadd",
            FloatOp::Sub => "fsub",
            FloatOp::Mul => "fmul",
            FloatOp::CopySign => return intrinsic(self, "copysign", ty(w), &[a, b]),
        };
        self.w.val(format!("{i} {} {a}, {b}", ty(w).name()))
    }
    fn fabs(&mut self, w: W, x: String) -> String {
        intrinsic(self, "fabs", ty(w), &[x])
    }
    fn cmp(&mut self, p: Cmp, w: W, a: String, b: String) -> String {
        let c = match p {
            Cmp::FLt => "fcmp olt",
            Cmp::FGt => "fcmp ogt",
            Cmp::FUno => "fcmp uno",
            Cmp::ULt => "icmp ult",
            Cmp::UGe => "icmp uge",
            Cmp::Eq => "icmp eq",
        };
        self.w.val(format!("{c} {} {a}, {b}", ty(w).name()))
    }
    fn select(&mut self, w: W, c: String, a: String, b: String) -> String {
        let n = ty(w).name();
        self.w.val(format!("select i1 {c}, {n} {a}, {n} {b}"))
    }
    fn convert(&mut self, c: Conv, x: String) -> String {
        match c {
            Conv::Zext16 => self.w.val(format!("zext i16 {x} to i32")),
            Conv::Trunc16 => self.w.val(format!("trunc i32 {x} to i16")),
            Conv::U32ToF32 => self.w.val(format!("uitofp i32 {x} to float")),
            Conv::F32ToU32 => {
                let name = "llvm.fptoui.sat.i32.f32";
                self.declare(name, || format!("declare i32 @{name}(float)"));
                self.w.val(format!("call i32 @{name}(float {x})"))
            }
            Conv::F64ToF32 => self.w.val(format!("fptrunc double {x} to float")),
        }
    }
}
