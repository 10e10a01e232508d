//! `--run` with `--target=nvptx`: the kernels' PTX is loaded through the
//! CUDA driver API (`cudarc`, which loads `libcuda` at run time) and the
//! host part of the program runs in the interpreter, whose `gpu.alloc`,
//! `gpu.memcpy`, `gpu.dealloc` and `gpu.launch_func` go to the device
//! ([`dialects::gpu::sim::Device`]). The host part of a lowered program is
//! allocation, copies and launches plus any loop no kernel could run.
//!
//! Without a driver or a device this is a diagnostic (exit 1), never a
//! panic: `cudarc` panics when `libcuda` is missing, so its presence is
//! checked first. A kernel whose run-time check traps makes the launch
//! fail; the message says so (run the `gpu` level with `--backend=interp`
//! to see which op failed).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{CudaContext, CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;

use dialects::gpu::sim::Device;
use ir::interp::RtValue;
use ir::Type;

/// A device buffer: bytes on the GPU holding `len` elements of `elem`.
struct DevBuf {
    data: RefCell<Option<CudaSlice<u8>>>,
    elem: Type,
    len: usize,
}

/// The GPU behind the host ops, with the module of the program's kernels.
pub struct Cuda {
    stream: Arc<CudaStream>,
    module: Arc<CudaModule>,
    /// Time spent in kernels (launch to completion), for `--bench`.
    pub kernel_time: Cell<Duration>,
    /// Time spent copying host to device (encoding the host values
    /// included, until the stream has finished the copy), for `--bench`.
    pub h2d_time: Cell<Duration>,
    /// Time spent copying device to host (decoding included), for `--bench`.
    pub d2h_time: Cell<Duration>,
}

impl Cuda {
    /// Zeroes the kernel and copy timers.
    pub fn reset_times(&self) {
        for c in [&self.kernel_time, &self.h2d_time, &self.d2h_time] {
            c.set(Duration::ZERO);
        }
    }

    fn add(&self, c: &Cell<Duration>, since: Instant) {
        c.set(c.get() + since.elapsed());
    }
}

/// Bytes per element of scalar `t` (as the kernels store it).
fn elem_size(t: &Type) -> usize {
    match t {
        Type::I0 | Type::I1 | Type::I8 => 1,
        Type::I16 => 2,
        // A 16-bit float is the f32 of its value (codegen::half).
        Type::I32 | Type::F16 | Type::BF16 | Type::F32 => 4,
        // Another width: its container, sign-extended (codegen::abi).
        Type::Int(w) => codegen::abi::container(*w as u32).bytes() as usize,
        _ => 8,
    }
}

fn encode(items: &[RtValue], t: &Type) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(items.len() * elem_size(t));
    for x in items {
        match (t, x) {
            (Type::I0, _) => out.push(0),
            (Type::I1, v) => out.push(v.as_bool().ok_or("expected a boolean")? as u8),
            (Type::I8, v) => out.push(v.as_int().ok_or("expected an integer")? as u8),
            (Type::I16, v) => {
                out.extend((v.as_int().ok_or("expected an integer")? as i16).to_le_bytes())
            }
            (Type::I32, v) => {
                out.extend((v.as_int().ok_or("expected an integer")? as i32).to_le_bytes())
            }
            (Type::F16 | Type::BF16 | Type::F32, RtValue::F32(f)) => out.extend(f.to_le_bytes()),
            (Type::F64, RtValue::F64(f)) => out.extend(f.to_le_bytes()),
            (Type::Int(_), v) => {
                let b = v.as_int().ok_or("expected an integer")?.to_le_bytes();
                out.extend(&b[..elem_size(t)])
            }
            (_, v) => out.extend(v.as_int().ok_or("expected an integer")?.to_le_bytes()),
        }
    }
    Ok(out)
}

fn decode(bytes: &[u8], t: &Type) -> Vec<RtValue> {
    let n = elem_size(t);
    bytes
        .chunks_exact(n)
        .map(|c| match t {
            Type::I0 => RtValue::Int(0),
            Type::I1 => RtValue::Bool(c[0] != 0),
            Type::I8 => RtValue::Int(c[0] as i8 as i64),
            Type::I16 => RtValue::Int(i16::from_le_bytes(c.try_into().unwrap()) as i64),
            Type::I32 => RtValue::Int(i32::from_le_bytes(c.try_into().unwrap()) as i64),
            Type::F16 | Type::BF16 | Type::F32 => {
                RtValue::F32(f32::from_le_bytes(c.try_into().unwrap()))
            }
            Type::F64 => RtValue::F64(f64::from_le_bytes(c.try_into().unwrap())),
            Type::Int(_) => {
                // Little-endian and sign-extended in its container.
                let mut b = [if c[c.len() - 1] & 0x80 != 0 { 0xFF } else { 0 }; 8];
                b[..c.len()].copy_from_slice(c);
                RtValue::Int(i64::from_le_bytes(b))
            }
            _ => RtValue::Int(i64::from_le_bytes(c.try_into().unwrap())),
        })
        .collect()
}

fn dev(v: &RtValue) -> Option<&DevBuf> {
    match v {
        RtValue::Opaque(o) => o.downcast_ref::<DevBuf>(),
        _ => None,
    }
}

/// The message when there is no CUDA driver.
pub const NO_DRIVER: &str = "--target=nvptx cannot run here: no CUDA driver (libcuda.so) on this machine; run the gpu level with --backend=interp instead";

/// Whether `libcuda` can be loaded (checked before anything calls `cudarc`,
/// which panics without it).
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen libcuda.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

impl Cuda {
    /// Opens device 0 and loads `ptx`; a message when there is no driver,
    /// no device, or the driver rejects the module.
    pub fn open(ptx: &str) -> Result<Cuda, String> {
        if !driver_present() {
            return Err(NO_DRIVER.into());
        }
        let ctx = std::panic::catch_unwind(|| CudaContext::new(0))
            .map_err(|_| "the CUDA driver could not be initialised".to_string())?
            .map_err(|e| format!("no usable CUDA device: {e}"))?;
        let module = ctx
            .load_module(Ptx::from_src(ptx))
            .map_err(|e| format!("the CUDA driver rejects the kernels' PTX: {e}"))?;
        Ok(Cuda {
            stream: ctx.default_stream(),
            module,
            kernel_time: Cell::new(Duration::ZERO),
            h2d_time: Cell::new(Duration::ZERO),
            d2h_time: Cell::new(Duration::ZERO),
        })
    }
}

impl Device for Cuda {
    fn alloc(&self, elem: &Type, n: usize) -> Result<RtValue, String> {
        let bytes = n
            .checked_mul(elem_size(elem))
            .ok_or_else(|| format!("allocation of {n} elements is too large"))?;
        let data = self
            .stream
            .alloc_zeros::<u8>(bytes.max(8))
            .map_err(|e| format!("cannot allocate {bytes} bytes on the device: {e}"))?;
        Ok(RtValue::Opaque(Rc::new(DevBuf {
            data: RefCell::new(Some(data)),
            elem: elem.clone(),
            len: n,
        })))
    }

    fn memcpy(&self, dst: &RtValue, src: &RtValue, elem: &Type) -> Result<(), String> {
        let mismatch = |a: usize, b: usize| {
            format!("size mismatch: copying {b} elements into a buffer of {a}")
        };
        match (dev(dst), dev(src)) {
            (Some(d), None) => {
                let t = Instant::now();
                // Encoded straight from the host values: a copy of them first
                // (24 bytes an element) cost more than the transfer itself.
                let host;
                let items: &[RtValue] = match src {
                    RtValue::Vec(v) => v,
                    RtValue::Arr(a) => {
                        host = a.borrow();
                        &host
                    }
                    RtValue::Mat(m) => &m.data,
                    _ => return Err("source is not a buffer, vector or matrix".into()),
                };
                if items.len() != d.len {
                    return Err(mismatch(d.len, items.len()));
                }
                let bytes = encode(items, elem)?;
                let mut slot = d.data.borrow_mut();
                let s = slot.as_mut().ok_or("use of a released device buffer")?;
                self.stream
                    .memcpy_htod(&bytes, s)
                    .and_then(|_| self.stream.synchronize())
                    .map_err(|e| format!("copy to the device failed: {e}"))?;
                self.add(&self.h2d_time, t);
                Ok(())
            }
            (None, Some(s)) => {
                let t = Instant::now();
                let RtValue::Arr(h) = dst else {
                    return Err("destination is not a buffer".into());
                };
                if h.borrow().len() != s.len {
                    return Err(mismatch(h.borrow().len(), s.len));
                }
                let slot = s.data.borrow();
                let data = slot.as_ref().ok_or("use of a released device buffer")?;
                let bytes = self
                    .stream
                    .clone_dtoh(data)
                    .map_err(|e| format!("copy from the device failed: {e}"))?;
                let vals = decode(&bytes[..s.len * elem_size(&s.elem)], &s.elem);
                h.borrow_mut().clone_from_slice(&vals);
                self.add(&self.d2h_time, t);
                Ok(())
            }
            (Some(d), Some(s)) => {
                if d.len != s.len {
                    return Err(mismatch(d.len, s.len));
                }
                if std::ptr::eq(d, s) {
                    return Ok(());
                }
                let from = s.data.borrow();
                let mut to = d.data.borrow_mut();
                match (from.as_ref(), to.as_mut()) {
                    (Some(f), Some(t)) => self
                        .stream
                        .memcpy_dtod(f, t)
                        .map_err(|e| format!("device copy failed: {e}")),
                    _ => Err("use of a released device buffer".into()),
                }
            }
            (None, None) => Err("neither side of the copy is a device buffer".into()),
        }
    }

    fn dealloc(&self, buf: &RtValue) -> Result<(), String> {
        let d = dev(buf).ok_or("not a device buffer")?;
        d.data.borrow_mut().take();
        Ok(())
    }

    fn launch(
        &self,
        name: &str,
        grid: usize,
        block: usize,
        args: &[RtValue],
        types: &[Type],
    ) -> Result<(), String> {
        if types.len() != args.len() {
            return Err(format!("kernel '@{name}' takes {} arguments", types.len()));
        }
        let f = self
            .module
            .load_function(name)
            .map_err(|e| format!("kernel '@{name}' is not in the module: {e}"))?;
        // Scalar arguments live here until the launch (the builder keeps
        // pointers to them); buffers keep their slices borrowed.
        let n = args.len();
        let (mut i64s, mut i32s, mut f64s, mut f32s, mut u8s) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        let mut slots = Vec::new();
        let bad = || format!("an argument of kernel '@{name}' does not match its parameter type");
        for (a, t) in args.iter().zip(types) {
            match t {
                Type::Arr(_) => {
                    let d = dev(a).ok_or_else(bad)?;
                    slots.push(d.data.borrow());
                    i64s.push(d.len as i64);
                }
                Type::F64 => f64s.push(a.as_f64().ok_or_else(bad)?),
                Type::F16 | Type::BF16 | Type::F32 => f32s.push(a.as_f64().ok_or_else(bad)? as f32),
                Type::I1 => u8s.push(a.as_bool().ok_or_else(bad)? as u8),
                Type::I32 => i32s.push(a.as_int().ok_or_else(bad)? as i32),
                Type::I0 | Type::I8 | Type::I16 | Type::Int(_) => {
                    return Err(format!(
                    "kernel '@{name}' takes a scalar '{t}' parameter, which launches do not pass"
                ))
                }
                _ => i64s.push(a.as_int().ok_or_else(bad)?),
            }
        }
        let mut b = self.stream.launch_builder(&f);
        let (mut i, mut j, mut k, mut l, mut m, mut s) = (0, 0, 0, 0, 0, 0);
        for t in types {
            match t {
                Type::Arr(_) => {
                    let sl = slots[s].as_ref().ok_or("use of a released device buffer")?;
                    b.arg(sl);
                    b.arg(&i64s[i]);
                    s += 1;
                    i += 1;
                }
                Type::F64 => {
                    b.arg(&f64s[k]);
                    k += 1;
                }
                Type::F16 | Type::BF16 | Type::F32 => {
                    b.arg(&f32s[l]);
                    l += 1;
                }
                Type::I1 => {
                    b.arg(&u8s[m]);
                    m += 1;
                }
                Type::I32 => {
                    b.arg(&i32s[j]);
                    j += 1;
                }
                _ => {
                    b.arg(&i64s[i]);
                    i += 1;
                }
            }
        }
        let cfg = LaunchConfig {
            grid_dim: (grid as u32, 1, 1),
            block_dim: (block as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        let t = Instant::now();
        // SAFETY: the arguments match the kernel's parameters: the kernels
        // are generated from the same IR whose verifier checked the launch's
        // argument types, and each `arr` is passed as (pointer, length).
        unsafe { b.launch(cfg) }.map_err(|e| format!("launch of '@{name}' failed: {e}"))?;
        self.stream.synchronize().map_err(|e| {
            format!("kernel '@{name}' failed: {e} (a run-time check in the kernel trapped, or the device faulted; run the gpu level with --backend=interp to find the op)")
        })?;
        self.kernel_time.set(self.kernel_time.get() + t.elapsed());
        Ok(())
    }
}
