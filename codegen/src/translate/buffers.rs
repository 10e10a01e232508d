//! Copies and frees of `vec`/`mat` buffer values (deep for nested vectors,
//! [`crate::abi::own_depth`]) and the move-or-copy of a vector stored into
//! an array.

use cranelift_codegen::ir::types::I64;
use cranelift_codegen::ir::InstBuilder;

use ir::{Diagnostic, OpId, Type, ValueId};

use super::{FnCx, Vals};
use crate::abi::{self, PTR};

impl FnCx<'_, '_> {
    /// Number of elements of buffer value `v` (`len` or `rows * cols`).
    fn buffer_len(&mut self, v: ValueId) -> cranelift_codegen::ir::Value {
        let p = self.get(v);
        match self.ctx.ty(v) {
            Type::Mat(_) => self.b.ins().imul(p[1], p[2]),
            _ => p[1],
        }
    }

    /// A fresh owned (deep) copy of buffer value `v`, made at `op`.
    pub fn copy_buffer(&mut self, v: ValueId, op: OpId) -> Result<Vals, Diagnostic> {
        let t = self.ctx.ty(v);
        let (depth, es) = (abi::own_depth(t), abi::leaf_size(t) as i64);
        let n = self.buffer_len(v);
        let mut p = self.get(v);
        let r = if depth == 0 {
            let bytes = self.b.ins().imul_imm_s(n, es);
            self.call_rt("l0rt_copy", &[PTR, I64], &[PTR], &[p[0], bytes])?
        } else {
            let (es, depth) = (self.iconst(I64, es), self.iconst(I64, depth));
            self.call_rt(
                "l0rt_vec_clone",
                &[PTR, I64, I64, I64],
                &[PTR],
                &[p[0], n, es, depth],
            )?
        };
        self.check_alloc(r[0], op)?;
        p[0] = r[0];
        Ok(p)
    }

    /// Frees owned buffer value `v` (and its element vectors).
    pub fn free_buffer(&mut self, v: ValueId) -> Result<(), Diagnostic> {
        let depth = abi::own_depth(self.ctx.ty(v));
        let p = self.get(v);
        if depth == 0 {
            self.call_rt("l0rt_free", &[PTR], &[], &[p[0]])?;
        } else {
            self.drop_vecs(p[0], p[1], depth)?;
        }
        Ok(())
    }

    /// `l0rt_vec_drop(data, n, depth)`: frees `n` elements owning `depth`
    /// levels of vectors, then `data`.
    pub fn drop_vecs(
        &mut self,
        data: cranelift_codegen::ir::Value,
        n: cranelift_codegen::ir::Value,
        depth: i64,
    ) -> Result<(), Diagnostic> {
        let d = self.iconst(I64, depth);
        self.call_rt("l0rt_vec_drop", &[PTR, I64, I64], &[], &[data, n, d])?;
        Ok(())
    }

    /// The values of `vs` passed into a loop: buffers are copied.
    pub fn copy_in(&mut self, vs: &[ValueId], op: OpId) -> Result<Vals, Diagnostic> {
        let mut out = Vals::new();
        for &v in vs {
            if abi::is_buffer(self.ctx.ty(v)) {
                let c = self.copy_buffer(v, op)?;
                out.extend(c);
            } else {
                out.extend(self.get(v));
            }
        }
        Ok(out)
    }

    /// The parts of `x` to store into an array at `op` (`arr.store` /
    /// `arr.push`): a buffer is moved when the op's block owns it and `op` is
    /// its last use (the block then no longer frees it), else copied, so the
    /// array always owns what it holds. Scalars and `arr`s are as they are.
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

    pub fn value_to_store(&mut self, x: ValueId, op: OpId) -> Result<Vals, Diagnostic> {
        let ctx = self.ctx;
        if !abi::is_buffer(ctx.ty(x)) {
            return Ok(self.get(x));
        }
        if crate::ownership::movable_into_array(ctx, &self.owned, x, op) {
            self.owned.remove(&x);
            Ok(self.get(x))
        } else {
            self.copy_buffer(x, op)
        }
    }
}
