//! The CUDA device behind compiled host code (`--run --target=nvptx`,
//! `--device=cuda`): the kernels' PTX is loaded through the CUDA driver
//! API (`cudarc`, which loads `libcuda` at run time) and the runtime's
//! buffer and launch calls ([`codegen::runtime::gpu::GpuDevice`]) go to
//! the driver.
//!
//! Without a driver or a device this is a diagnostic (exit 1), never a
//! panic: `cudarc` panics when `libcuda` is missing, so its presence is
//! checked first. A kernel whose run-time check traps makes the launch
//! fail; the message says so (run with `--device=sim` to see which op
//! failed).

use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{result, CudaContext, CudaFunction, CudaStream, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;

use codegen::runtime::gpu::{GpuDevice, GpuError, KernelArg};
use ir::{Context, Type};

/// The GPU, with the module of the program's kernels.
pub struct Cuda {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// The kernels in module order: name, parameter types, function.
    kernels: Vec<(String, Vec<Type>, CudaFunction)>,
    /// Time spent in kernels (launch to completion), for `--bench`.
    pub kernel_time: Cell<Duration>,
    /// Time spent copying host to device, for `--bench`.
    pub h2d_time: Cell<Duration>,
    /// Time spent copying device to host, for `--bench`.
    pub d2h_time: Cell<Duration>,
}

/// The message when there is no CUDA driver.
pub const NO_DRIVER: &str = "--target=nvptx cannot run here: no CUDA driver (libcuda.so) on this machine; run with --device=sim to simulate the kernels, or with --backend=interp";

/// Whether `libcuda` can be loaded (checked before anything calls `cudarc`,
/// which panics without it).
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen libcuda.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

impl Cuda {
    /// Opens device 0 and loads `ptx`, the PTX of `ir`'s kernels; a
    /// message when there is no driver, no device, or the driver rejects
    /// the module.
    pub fn open(ir: &Context, ptx: &str) -> Result<Cuda, String> {
        if !driver_present() {
            return Err(NO_DRIVER.into());
        }
        let ctx = std::panic::catch_unwind(|| CudaContext::new(0))
            .map_err(|_| "the CUDA driver could not be initialised".to_string())?
            .map_err(|e| format!("no usable CUDA device: {e}"))?;
        let module = ctx
            .load_module(Ptx::from_src(ptx))
            .map_err(|e| format!("the CUDA driver rejects the kernels' PTX: {e}"))?;
        let mut kernels = Vec::new();
        for (f, name) in codegen::runtime::gpu::kernels(ir) {
            let params = dialects::func::function_type(ir, f)
                .map(|(ins, _)| ins.to_vec())
                .unwrap_or_default();
            let func = module
                .load_function(&name)
                .map_err(|e| format!("kernel '@{name}' is not in the module: {e}"))?;
            kernels.push((name, params, func));
        }
        Ok(Cuda {
            stream: ctx.default_stream(),
            ctx,
            kernels,
            kernel_time: Cell::new(Duration::ZERO),
            h2d_time: Cell::new(Duration::ZERO),
            d2h_time: Cell::new(Duration::ZERO),
        })
    }

    /// Zeroes the kernel and copy timers.
    pub fn reset_times(&self) {
        for c in [&self.kernel_time, &self.h2d_time, &self.d2h_time] {
            c.set(Duration::ZERO);
        }
    }

    fn add(&self, c: &Cell<Duration>, since: Instant) {
        c.set(c.get() + since.elapsed());
    }

    /// Makes the context current on this thread (the driver's raw calls
    /// act on the current context).
    fn bind(&self) -> Result<(), String> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| format!("the CUDA context cannot be used: {e}"))
    }
}

impl GpuDevice for Cuda {
    fn kernel_params(&self, k: usize) -> Option<&[Type]> {
        self.kernels.get(k).map(|(_, p, _)| &p[..])
    }

    fn kernel_name(&self, k: usize) -> &str {
        self.kernels.get(k).map_or("", |(n, _, _)| n)
    }

    fn alloc(&self, bytes: usize) -> Result<u64, String> {
        self.bind()?;
        // SAFETY: a plain allocation in the current context, zeroed
        // before use (at least 8 bytes: a zero-byte buffer still has an
        // address of its own).
        unsafe {
            let p = result::malloc_sync(bytes.max(8))
                .map_err(|e| format!("cannot allocate {bytes} bytes on the device: {e}"))?;
            result::memset_d8_sync(p, 0, bytes.max(8))
                .map_err(|e| format!("cannot clear {bytes} bytes on the device: {e}"))?;
            Ok(p)
        }
    }

    fn alloc_uninit(&self, bytes: usize) -> Result<u64, String> {
        self.bind()?;
        // SAFETY: a plain allocation in the current context; every byte is
        // written before it is read (`gpu.alloc {uninit}`).
        unsafe {
            result::malloc_sync(bytes.max(8))
                .map_err(|e| format!("cannot allocate {bytes} bytes on the device: {e}"))
        }
    }

    fn free(&self, addr: u64) {
        if self.bind().is_ok() {
            // SAFETY: `addr` came from `alloc` and is freed once (the
            // runtime forgets it first).
            let _ = unsafe { result::free_sync(addr) };
        }
    }

    fn copy_in(&self, dst: u64, src: &[u8]) -> Result<(), String> {
        let t = Instant::now();
        self.bind()?;
        // SAFETY: `dst` is a device buffer of at least `src.len()` bytes
        // (the runtime checked the element counts).
        unsafe { result::memcpy_htod_sync(dst, src) }
            .map_err(|e| format!("copy to the device failed: {e}"))?;
        self.add(&self.h2d_time, t);
        Ok(())
    }

    fn copy_out(&self, dst: &mut [u8], src: u64) -> Result<(), String> {
        let t = Instant::now();
        self.bind()?;
        // SAFETY: as in `copy_in`, the other way.
        unsafe { result::memcpy_dtoh_sync(dst, src) }
            .map_err(|e| format!("copy from the device failed: {e}"))?;
        self.add(&self.d2h_time, t);
        Ok(())
    }

    fn copy_within(&self, dst: u64, src: u64, bytes: usize) -> Result<(), String> {
        self.bind()?;
        // SAFETY: two device buffers of at least `bytes` bytes.
        unsafe { result::memcpy_dtod_sync(dst, src, bytes) }
            .map_err(|e| format!("device copy failed: {e}"))
    }

    fn launch(&self, k: usize, grid: u32, block: u32, args: &[KernelArg]) -> Result<(), GpuError> {
        let Some((name, params, f)) = self.kernels.get(k) else {
            return Err(format!("no kernel number {k}").into());
        };
        self.bind()?;
        // The builder keeps pointers to the arguments: they live here.
        enum Word {
            Ptr(u64, i64),
            I64(i64),
            I32(i32),
            U8(u8),
            F32(f32),
            F64(f64),
        }
        let mut words = Vec::with_capacity(args.len());
        for (a, t) in args.iter().zip(params) {
            words.push(match (a, t) {
                (KernelArg::Buffer { addr, len }, _) => Word::Ptr(*addr, *len),
                (KernelArg::Scalar(w), Type::F64) => Word::F64(f64::from_bits(*w)),
                (KernelArg::Scalar(w), Type::F16 | Type::BF16 | Type::F32) => {
                    Word::F32(f32::from_bits(*w as u32))
                }
                (KernelArg::Scalar(w), Type::I1) => Word::U8(*w as u8 & 1),
                (KernelArg::Scalar(w), Type::I32) => Word::I32(*w as u32 as i32),
                (KernelArg::Scalar(w), Type::I64 | Type::Index) => Word::I64(*w as i64),
                (KernelArg::Scalar(_), t) => {
                    return Err(format!(
                    "kernel '@{name}' takes a scalar '{t}' parameter, which launches do not pass"
                )
                    .into())
                }
            });
        }
        let mut b = self.stream.launch_builder(f);
        for w in &words {
            match w {
                Word::Ptr(p, n) => {
                    b.arg(p);
                    b.arg(n);
                }
                Word::I64(x) => {
                    b.arg(x);
                }
                Word::I32(x) => {
                    b.arg(x);
                }
                Word::U8(x) => {
                    b.arg(x);
                }
                Word::F32(x) => {
                    b.arg(x);
                }
                Word::F64(x) => {
                    b.arg(x);
                }
            }
        }
        let cfg = LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        };
        let t = Instant::now();
        // SAFETY: the arguments match the kernel's parameters: the kernels
        // are generated from the same IR whose verifier checked the launch's
        // argument types, and each `arr` is passed as (pointer, length) of
        // a live device buffer.
        unsafe { b.launch(cfg) }.map_err(|e| format!("launch of '@{name}' failed: {e}"))?;
        self.stream.synchronize().map_err(|e| {
            format!("kernel '@{name}' failed: {e} (a run-time check in the kernel trapped, or the device faulted; run with --device=sim to find the op)")
        })?;
        self.add(&self.kernel_time, t);
        Ok(())
    }
}
