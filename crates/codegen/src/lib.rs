//! Code generation from the lowest level (`func` + `arith` + `scf` + `arr`,
//! plus `vec.len/get` and `mat.from/rows/cols/get/row`) to native code with
//! Cranelift: a JIT for `--run` ([`JitModule`]) and relocatable object files
//! for `--emit=obj` ([`emit_object`]). The backend translates what it is
//! given and does not optimise (DESIGN.md); Cranelift's own `opt_level=speed`
//! runs on the result.
//!
//! # Values
//! See [`abi`]: scalars map to one Cranelift value (`i1` is an `i8` 0/1),
//! `vec<T>` to `(data, len)`, `mat<T>` to `(data, rows, cols)`, `arr<T>` to a
//! pointer to a heap header `{data, len, cap}` (24 bytes). Elements are
//! dense scalars; nested containers (`vec<vec<T>>`, `arr<arr<T>>`) are not
//! supported: compiling them is a diagnostic at the op.
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
//! `arr.push` (doubling), `arr.from_vec` (copy), `arr.find_or_insert` and
//! `arr.free` call the runtime; `arr.to_vec` takes the header's data without
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
//! Unsupported: nested containers, `arr` values at the host boundary,
//! any op above the `arr` level (`vec.map`, `gen.loop`, ...: run
//! `--pass=lower` first), and 32-bit hosts. [`JitModule::compile`] leaves out
//! the functions that use them (and their callers) and
//! [`JitModule::check`] gives the diagnostic at the op; [`emit_object`]
//! fails on the first one.

pub mod abi;
mod check;
pub mod faults;
mod isa;
mod jit;
mod marshal;
mod module;
mod object;
pub mod runtime;
pub mod translate;

pub use jit::{JitModule, PreparedCall};
pub use object::emit_object;
