//! Code generation from the lowest level (`func` + `arith` + `scf` + `arr`,
//! plus `vec.len/get` and `mat.from/rows/cols/get/row`) to native code with
//! Cranelift: a JIT for `--run` ([`JitModule`]) and relocatable object files
//! for `--emit=obj` ([`emit_object`]). The backend translates what it is
//! given and does not optimise (DESIGN.md); Cranelift's own `opt_level=speed`
//! runs on the result.
//!
//! The host code of the `gpu` level compiles too: its `gpu.alloc`,
//! `gpu.memcpy`, `gpu.dealloc` and `gpu.launch_func` become calls into the
//! GPU runtime ([`runtime::gpu`]; one translation for both backends in
//! `gpu_host`), which forwards them to the device the caller installs
//! (`runtime::gpu::with_device`: the CUDA driver, or a simulation). Kernels
//! (functions marked `gpu.kernel`) are not compiled here but to PTX
//! ([`llvm::ptx`]). Host code may use a device buffer only in those ops and
//! `arr.len`, which compiling checks.
//!
//! # Values
//! See [`abi`]: scalars map to one Cranelift value (`i1` is an `i8` 0/1),
//! `vec<T>` to `(data, len)`, `mat<T>` to `(data, rows, cols)`, `arr<T>` to a
//! pointer to a heap header `{data, len, cap}` (24 bytes). Elements are
//! stored densely: scalars; `vec` elements as 16-byte descriptors
//! `{data, len}`; `arr` elements (of an `arr`) as 8-byte header pointers.
//!
//! # Nested vectors
//! `vec<vec<T>>` is `(data, len)` where `data` points to `len` descriptors
//! `struct { T *data; int64_t len; }` (`l0_vec` in `runtime/l0rt.h`);
//! `vec<vec<vec<T>>>` has descriptors whose `data` point to descriptors,
//! and so on. `vec.get` of a nested vector yields the inner vector as a
//! borrowed view (no copy). An owned nested vector owns every level: the
//! backend frees and copies it deeply; a returned one is fresh at every
//! level (a C caller releases it with `l0_vec_free(data, len, depth)`,
//! `depth` 1 for `vec<vec<T>>`; an inner `data` may be NULL when its `len`
//! is 0). The JIT host marshals `RtValue::Vec` of `RtValue::Vec` arguments
//! into such descriptors and frees returned nested vectors (outer and
//! inner) after converting them. `arr<vec<V>>` buffers (16-byte elements)
//! own their element vectors; `arr<arr<V>>` buffers (8-byte elements) only
//! refer to their element arrays, which the program frees or converts
//! itself (the bucket-collect lowering converts each with `arr.to_vec`,
//! then `arr.free` of the outer one frees only the outer buffer).
//!
//! # Function ABI (System V on x86-64)
//! Each `func.func @f` becomes:
//! - `l0i_f(params..., out: *mut Out, depth: i64) -> i8` (internal): the
//!   parameters flattened in order (`vec` -> `ptr, i64`; `mat` -> `ptr, i64,
//!   i64`; `arr` -> `ptr`); `out` points to a C struct of the flattened
//!   results in order, each field naturally aligned (`int8_t` for `i1`,
//!   `int32_t`, `int64_t`, `float`, `double`, pointers 8 bytes); `depth`
//!   is the call depth, checked at every `func.call` against the
//!   interpreter's limit. The result is a status: 0 ok, 1 fault.
//! - `l0_f(params..., out) -> int8_t` (exported from object files), which
//!   calls `l0i_f` with depth 1. For example `func.func @main(%x: vec<f64>)
//!   -> f64` is `int8_t l0_main(const double *x, int64_t n, double *out)`
//!   and a `vec<f64>` result is `struct { double *data; int64_t len; }`.
//! - `l0t_f(args: *const u64, out) -> i8` (JIT only): parameter k is read
//!   from the word `args[k]`, so the host calls every function through one
//!   Rust type.
//!
//! # Memory
//! Buffers come from `malloc`/`calloc`/`realloc` through the runtime
//! ([`runtime`], and `runtime/l0rt.c` for object files). `arr.alloc`,
//! `arr.push` (doubling), `arr.from_vec` (copy), `arr.find_or_insert` (a
//! hash index for key tables only `find_or_insert` writes,
//! `ownership::keys_only`; else a scan) and `arr.free` call the runtime;
//! `arr.to_vec` takes the header's data without
//! copying and frees the header when it is the array's last use (the
//! lowering's guarantee, re-checked here), else copies. `arr.free` that is
//! not the last use (a use after free, which faults in the interpreter)
//! frees the data but keeps an empty header, so the later access fails its
//! bounds check like in the interpreter. Vectors are never
//! freed by the IR, so the backend tracks ownership (see [`translate`]):
//! temporaries are freed at the end of the block that owns them, and
//! returned vectors/matrices are always fresh buffers owned by the caller
//! (the JIT host frees them after converting them; a C caller calls `free`).
//! Arguments are borrowed and never freed. A fault leaks the temporaries
//! live at that point.
//!
//! # Faults
//! Bounds checks on `vec.get`, `mat.get`, `mat.row`, `arr.load`,
//! `arr.store`; `scf.assert`; division by zero; `mat.from` shapes;
//! `scf.for` steps; negative or huge `arr.alloc`; the call depth limit. A
//! fault calls `l0rt_fault(id, a, b, c)` (id into the module's
//! [`faults::FaultTable`], payloads such as the index and the length) and
//! returns status 1 through every frame; [`JitModule::call`] turns it into
//! the interpreter's [`RunError`] (same location, same message).
//!
//! # Parallel loops
//! `scf.forall` (built by the parallel decomposition of `gen.loop`,
//! `passes::parallel`) becomes a call `l0rt_parallel_for(f, env, n, depth)`
//! where `f` is its body outlined into a chunk function
//! `l0p_forall_<op>(env, c, depth) -> i8` and `env` a stack array of the
//! captured values ([`outline`]); the runtime runs the chunks on a pool of
//! `--threads` threads ([`runtime::set_threads`]) and reports the lowest
//! faulting chunk's fault. Object files get a sequential
//! `l0rt_parallel_for` from `runtime/l0rt.c`.
//!
//! Unsupported: matrices of non-scalars, vectors of arrays or matrices
//! (`vec<arr<T>>`, `vec<mat<T>>`), arrays of matrices, non-scalar
//! `arr.find_or_insert` keys, `arr` values at the host boundary,
//! any op above the `arr` level (`vec.map`, `gen.loop`, ...: run
//! `--pass=lower` first), and 32-bit hosts. [`JitModule::compile`] leaves out
//! the functions that use them (and their callers) and
//! [`JitModule::check`] gives the diagnostic at the op; [`emit_object`]
//! fails on the first one.

pub mod abi;
mod check;
pub mod contract;
pub mod faults;
mod gpu_host;
mod half;
mod host;
mod isa;
mod jit;
mod listing;
pub mod llvm;
mod marshal;
mod module;
mod object;
mod outline;
mod ownership;
pub mod proofs;
pub mod runtime;
pub mod sincos;
pub mod translate;

pub use host::PreparedCall;
pub use jit::JitModule;
pub use marshal::{Arg, Out, OwnedArray, RawArray};
pub use object::{emit_asm, emit_object};
