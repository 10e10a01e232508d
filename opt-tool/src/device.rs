//! The devices of `--run --target=nvptx`: the simulated GPU of
//! `--device=sim` ([`SimDevice`]), and the bridge that lets the
//! interpreter's host ops use any device ([`Bridge`], for
//! `--backend=interp`). Compiled host code talks to a device through
//! [`codegen::runtime::gpu`]; the interpreter through
//! [`dialects::gpu::sim::Device`].

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use std::collections::HashMap;

use codegen::runtime::gpu::bytes::{decode, elem_size, encode};
use codegen::runtime::gpu::{GpuDevice, GpuError, KernelArg};
use ir::interp::RtValue;
use ir::{Context, OpId, Type};

/// The elements of a buffer while a simulated kernel runs.
type Elems = Rc<RefCell<Vec<RtValue>>>;

/// A GPU simulated in host memory: buffers are byte vectors, and a launch
/// runs the kernel in the gpu-level interpreter
/// ([`dialects::gpu::sim::run_kernel`]) on the buffers' decoded elements,
/// then stores them back. Every machine can thus run the native host path
/// of `--target=nvptx`; faults inside kernels are reported at their op.
pub struct SimDevice<'c> {
    ctx: &'c Context,
    /// The kernels in module order: op, name, parameter types.
    kernels: Vec<(OpId, String, Vec<Type>)>,
    /// Live buffers by address.
    mem: RefCell<HashMap<u64, Vec<u8>>>,
    /// The next address to hand out (distinct for every buffer, never 0).
    next: Cell<u64>,
}

impl<'c> SimDevice<'c> {
    /// The device for the kernels of `ctx`.
    pub fn new(ctx: &'c Context) -> SimDevice<'c> {
        let kernels = codegen::runtime::gpu::kernels(ctx)
            .into_iter()
            .map(|(f, name)| {
                let params = dialects::func::function_type(ctx, f)
                    .map(|(ins, _)| ins.to_vec())
                    .unwrap_or_default();
                (f, name, params)
            })
            .collect();
        SimDevice {
            ctx,
            kernels,
            mem: RefCell::default(),
            next: Cell::new(1 << 32),
        }
    }

    fn with_buf<R>(&self, addr: u64, f: impl FnOnce(&mut Vec<u8>) -> R) -> Result<R, String> {
        let mut mem = self.mem.borrow_mut();
        let b = mem
            .get_mut(&addr)
            .ok_or("use of a released device buffer")?;
        Ok(f(b))
    }
}

impl GpuDevice for SimDevice<'_> {
    fn kernel_params(&self, k: usize) -> Option<&[Type]> {
        self.kernels.get(k).map(|(_, _, p)| &p[..])
    }

    fn kernel_name(&self, k: usize) -> &str {
        self.kernels.get(k).map_or("", |(_, n, _)| n)
    }

    fn alloc(&self, bytes: usize) -> Result<u64, String> {
        let addr = self.next.get();
        // Aligned and apart, as device allocations are.
        let step = (bytes as u64).max(8).div_ceil(256) * 256;
        self.next
            .set(addr.checked_add(step).ok_or("out of device addresses")?);
        let mut v = Vec::new();
        v.try_reserve_exact(bytes)
            .map_err(|_| format!("cannot allocate {bytes} bytes on the device"))?;
        v.resize(bytes, 0);
        self.mem.borrow_mut().insert(addr, v);
        Ok(addr)
    }

    fn free(&self, addr: u64) {
        self.mem.borrow_mut().remove(&addr);
    }

    fn copy_in(&self, dst: u64, src: &[u8]) -> Result<(), String> {
        self.with_buf(dst, |b| b[..src.len()].copy_from_slice(src))
    }

    fn copy_out(&self, dst: &mut [u8], src: u64) -> Result<(), String> {
        self.with_buf(src, |b| dst.copy_from_slice(&b[..dst.len()]))
    }

    fn copy_within(&self, dst: u64, src: u64, bytes: usize) -> Result<(), String> {
        let from = self.with_buf(src, |b| b[..bytes].to_vec())?;
        self.with_buf(dst, |b| b[..bytes].copy_from_slice(&from))
    }

    fn launch(&self, k: usize, grid: u32, block: u32, args: &[KernelArg]) -> Result<(), GpuError> {
        let Some((kernel, _, params)) = self.kernels.get(k) else {
            return Err(format!("no kernel number {k}").into());
        };
        // Each buffer decoded once, so that two arguments naming one buffer
        // share its elements as on the device.
        let mut bufs: Vec<(u64, Type, Elems)> = Vec::new();
        let mut kargs = Vec::with_capacity(args.len());
        for (a, t) in args.iter().zip(params) {
            kargs.push(match a {
                KernelArg::Buffer { addr, len } => {
                    let elem = t.elem().cloned().unwrap_or(Type::I64);
                    if let Some((_, _, v)) = bufs.iter().find(|(p, _, _)| p == addr) {
                        RtValue::Arr(v.clone())
                    } else {
                        let n = (*len).max(0) as usize * elem_size(&elem);
                        let items = self.with_buf(*addr, |b| decode(&b[..n], &elem))?;
                        let v = Rc::new(RefCell::new(items));
                        bufs.push((*addr, elem, v.clone()));
                        RtValue::Arr(v)
                    }
                }
                KernelArg::Scalar(w) => codegen::runtime::gpu::scalar_of(t, *w),
            });
        }
        let run = dialects::gpu::sim::run_kernel(
            self.ctx,
            *kernel,
            *kernel,
            grid as usize,
            block as usize,
            &kargs,
        );
        // What the kernel stored is kept also when it faulted (as on a GPU).
        for (addr, elem, v) in &bufs {
            let bytes = encode(&v.borrow(), elem)?;
            self.with_buf(*addr, |b| b[..bytes.len()].copy_from_slice(&bytes))?;
        }
        run.map_err(|e| GpuError {
            loc: Some(e.loc),
            message: e.message,
        })
    }
}

/// A device buffer as the interpreter sees it ([`RtValue::Opaque`]).
struct DevBuf {
    addr: Cell<Option<u64>>,
    len: usize,
}

fn dev(v: &RtValue) -> Option<&DevBuf> {
    match v {
        RtValue::Opaque(o) => o.downcast_ref::<DevBuf>(),
        _ => None,
    }
}

/// The interpreter's host ops on a [`GpuDevice`] (`--backend=interp` with
/// `--target=nvptx`): buffers are handles to device memory, and values
/// cross as bytes in compiled code's layout.
pub struct Bridge {
    pub device: Rc<dyn GpuDevice>,
    /// Buffers still live, freed when the bridge goes.
    live: RefCell<Vec<Rc<dyn std::any::Any>>>,
}

impl Bridge {
    /// A bridge to `device`; what is still allocated when it goes is freed.
    pub fn new(device: Rc<dyn GpuDevice>) -> Bridge {
        Bridge {
            device,
            live: RefCell::default(),
        }
    }

    fn addr(&self, d: &DevBuf) -> Result<u64, String> {
        d.addr
            .get()
            .ok_or_else(|| "use of a released device buffer".to_string())
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        for b in self.live.take() {
            if let Some(a) = b.downcast_ref::<DevBuf>().and_then(|d| d.addr.take()) {
                self.device.free(a);
            }
        }
    }
}

fn mismatch(dst: usize, src: usize) -> String {
    format!("size mismatch: copying {src} elements into a buffer of {dst}")
}

impl dialects::gpu::sim::Device for Bridge {
    fn alloc(&self, elem: &Type, n: usize) -> Result<RtValue, String> {
        let bytes = n
            .checked_mul(elem_size(elem))
            .ok_or_else(|| format!("allocation of {n} elements is too large"))?;
        let addr = self.device.alloc(bytes)?;
        let b: Rc<dyn std::any::Any> = Rc::new(DevBuf {
            addr: Cell::new(Some(addr)),
            len: n,
        });
        self.live.borrow_mut().push(b.clone());
        Ok(RtValue::Opaque(b))
    }

    fn memcpy(&self, dst: &RtValue, src: &RtValue, elem: &Type) -> Result<(), String> {
        match (dev(dst), dev(src)) {
            (Some(d), None) => {
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
                self.device.copy_in(self.addr(d)?, &encode(items, elem)?)
            }
            (None, Some(s)) => {
                let RtValue::Arr(h) = dst else {
                    return Err("destination is not a buffer".into());
                };
                if h.borrow().len() != s.len {
                    return Err(mismatch(h.borrow().len(), s.len));
                }
                let mut bytes = vec![0; s.len * elem_size(elem)];
                self.device.copy_out(&mut bytes, self.addr(s)?)?;
                h.borrow_mut().clone_from_slice(&decode(&bytes, elem));
                Ok(())
            }
            (Some(d), Some(s)) => {
                if d.len != s.len {
                    return Err(mismatch(d.len, s.len));
                }
                let (a, b) = (self.addr(d)?, self.addr(s)?);
                if a == b {
                    return Ok(());
                }
                self.device.copy_within(a, b, s.len * elem_size(elem))
            }
            (None, None) => Err("neither side of the copy is a device buffer".into()),
        }
    }

    fn len(&self, buf: &RtValue) -> Result<usize, String> {
        Ok(dev(buf).ok_or("not a device buffer")?.len)
    }

    fn dealloc(&self, buf: &RtValue) -> Result<(), String> {
        let d = dev(buf).ok_or("not a device buffer")?;
        let a = self.addr(d)?;
        d.addr.set(None);
        self.device.free(a);
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
        let k = (0..)
            .take_while(|&k| self.device.kernel_params(k).is_some())
            .find(|&k| self.device.kernel_name(k) == name)
            .ok_or_else(|| format!("no kernel named '@{name}'"))?;
        let bad = || format!("an argument of kernel '@{name}' does not match its parameter type");
        let mut kargs = Vec::with_capacity(args.len());
        for (a, t) in args.iter().zip(types) {
            kargs.push(match t {
                Type::Arr(_) => {
                    let d = dev(a).ok_or_else(bad)?;
                    KernelArg::Buffer {
                        addr: self.addr(d)?,
                        len: d.len as i64,
                    }
                }
                _ => {
                    let b = encode(std::slice::from_ref(a), t).map_err(|_| bad())?;
                    let mut w = [0u8; 8];
                    w[..b.len()].copy_from_slice(&b);
                    KernelArg::Scalar(u64::from_le_bytes(w))
                }
            });
        }
        self.device
            .launch(k, grid as u32, block as u32, &kargs)
            .map_err(|e| e.message)
    }
}
