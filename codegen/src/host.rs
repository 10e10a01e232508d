//! The host side of a JIT-compiled module, shared by the Cranelift and LLVM
//! JITs: the table of entry trampolines, argument marshalling
//! ([`crate::marshal`]), the call itself, and turning a fault status into
//! the interpreter's [`RunError`] through the module's [`FaultTable`].

use std::sync::atomic::{AtomicU64, Ordering};

use ir::interp::{RtValue, RunError};
use ir::{Diagnostic, Loc, Type};
use rustc_hash::FxHashMap;

use crate::abi::Layout;
use crate::faults::FaultTable;
use crate::{marshal, runtime};

/// `l0t_<name>(args, out) -> status` (see [`crate`]'s function ABI).
pub(crate) type Trampoline = unsafe extern "C" fn(*const u64, *mut u8) -> i8;

/// One compiled function as the host calls it.
pub(crate) struct HostFunc {
    pub name: String,
    pub params: Vec<Type>,
    pub results: Vec<Type>,
    pub out: Layout,
    pub entry: Trampoline,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The callable functions of one compiled module.
pub(crate) struct Entries {
    pub funcs: Vec<HostFunc>,
    pub faults: FaultTable,
    pub unsupported: FxHashMap<String, Diagnostic>,
    pub id: u64,
    /// The backend's name, for messages.
    pub backend: &'static str,
}

/// Arguments marshalled once for repeated calls of one function.
pub struct PreparedCall {
    module: u64,
    func: usize,
    words: Vec<u64>,
    /// Element buffers the words point into (never freed by compiled code).
    _bufs: Vec<Vec<u64>>,
    /// The memory of raw array arguments ([`marshal::RawArray`]).
    _keep: Vec<std::rc::Rc<dyn std::any::Any>>,
    /// `arr` arguments, made afresh for each call (compiled code may
    /// write and free them).
    arrs: Vec<marshal::ArrArg>,
    /// Every host buffer the arguments lie in: start address and length in
    /// bytes (for `--resident`, [`crate::runtime::gpu::resident`]).
    inputs: Vec<(usize, usize)>,
}

impl PreparedCall {
    /// The host buffers the arguments lie in: start address and length in
    /// bytes. Compiled code never writes them, so they hold the same bytes
    /// on every call.
    pub fn input_buffers(&self) -> &[(usize, usize)] {
        &self.inputs
    }
}

impl Entries {
    pub fn new(
        funcs: Vec<HostFunc>,
        faults: FaultTable,
        unsupported: FxHashMap<String, Diagnostic>,
        backend: &'static str,
    ) -> Entries {
        Entries {
            funcs,
            faults,
            unsupported,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            backend,
        }
    }

    /// Whether `func` was compiled: `Err` is the diagnostic at the op (or
    /// type) the backend does not support, or a missing function.
    pub fn check(&self, func: &str) -> Result<(), Diagnostic> {
        if let Some(d) = self.unsupported.get(func) {
            return Err(d.clone());
        }
        if !self.funcs.iter().any(|f| f.name == func) {
            return Err(ir::pass::pass_error(format!("no function named '@{func}'")));
        }
        Ok(())
    }

    /// Marshals `args` for calling `func`.
    pub fn prepare(&self, func: &str, args: &[marshal::Arg]) -> Result<PreparedCall, String> {
        if let Some(d) = self.unsupported.get(func) {
            return Err(d.message.clone());
        }
        let Some(k) = self.funcs.iter().position(|f| f.name == func) else {
            return Err(format!("no function named '@{func}' to run"));
        };
        let f = &self.funcs[k];
        if f.params.len() != args.len() {
            return Err(format!(
                "function '@{func}' takes {} argument(s), got {}",
                f.params.len(),
                args.len()
            ));
        }
        // Arrays (lowered memrefs) of scalars come back as run-time arrays.
        if let Some(t) = f.results.iter().find(|t| match t {
            Type::Arr(e) => crate::abi::scalar(e).is_none(),
            _ => false,
        }) {
            return Err(format!(
                "'{t}' results are not supported by the {} backend",
                self.backend
            ));
        }
        let (mut words, mut bufs, mut keep) = (Vec::new(), Vec::new(), Vec::new());
        let mut arrs = Vec::new();
        for (i, (a, t)) in args.iter().zip(&f.params).enumerate() {
            match (a, t) {
                (marshal::Arg::Value(v), Type::Arr(_)) => {
                    marshal::prepare_arr(v, t, words.len(), &mut words).map(|a| arrs.push(a))
                }
                (marshal::Arg::Value(v), _) => marshal::marshal(v, t, &mut words, &mut bufs),
                (marshal::Arg::Raw(r), _) => marshal::marshal_raw(r, t, &mut words, &mut keep),
            }
            .map_err(|e| format!("argument #{}: {e}", i + 1))?;
        }
        words.push(0);
        let mut inputs: Vec<(usize, usize)> = bufs
            .iter()
            .map(|b| (b.as_ptr() as usize, b.len() * 8))
            .collect();
        for a in args {
            if let marshal::Arg::Raw(r) = a {
                let bytes = crate::abi::scalar(&r.elem).map_or(8, |c| c.bytes() as usize);
                inputs.push((r.data as usize, r.len * bytes));
            }
        }
        Ok(PreparedCall {
            module: self.id,
            func: k,
            words,
            _bufs: bufs,
            _keep: keep,
            arrs,
            inputs,
        })
    }

    /// Calls a prepared function. A run-time fault of the compiled code is a
    /// [`RunError`] at the faulting op.
    pub fn call(&self, p: &PreparedCall) -> Result<Vec<RtValue>, RunError> {
        let out = self.call_out(p, false)?;
        Ok(out.into_iter().map(marshal::Out::into_value).collect())
    }

    /// [`Self::call`]; vectors and matrices of scalars stay the buffers
    /// they were returned in where `raw` ([`marshal::Out::Raw`]).
    pub fn call_out(&self, p: &PreparedCall, raw: bool) -> Result<Vec<marshal::Out>, RunError> {
        if p.module != self.id {
            return Err(RunError {
                loc: Loc::UNKNOWN,
                message: "the call was prepared for another module".into(),
            });
        }
        let f = &self.funcs[p.func];
        let mut out = vec![0u64; (f.out.size as usize).div_ceil(8).max(1)];
        runtime::take_fault();
        runtime::gpu::take_error();
        // Every buffer the call allocates is recorded, so that a fault
        // (which skips the compiled code's frees) leaks nothing.
        let ledger = std::sync::Arc::new(runtime::ledger::Ledger::default());
        let scope = runtime::ledger::enter(Some(ledger.clone()));
        // Array arguments are made inside the call's ledger: a fault frees
        // them, and the ledger tells which ones the call freed itself.
        let mut words = std::borrow::Cow::Borrowed(&p.words);
        let mut headers = Vec::with_capacity(p.arrs.len());
        for a in &p.arrs {
            let h = a.make();
            if h.is_null() {
                drop(scope);
                ledger.free_all();
                return Err(RunError {
                    loc: Loc::UNKNOWN,
                    message: "out of memory for an array argument".into(),
                });
            }
            words.to_mut()[a.word] = h as u64;
            headers.push(h);
        }
        // SAFETY: the words match the trampoline's parameter list (built by
        // `prepare` from the same signature) and `out` is large enough.
        let status = unsafe { (f.entry)(words.as_ptr(), out.as_mut_ptr() as *mut u8) };
        drop(scope);
        if status != 0 {
            let (id, payload) = runtime::take_fault().unwrap_or((-1, [0; 3]));
            // The call returns nothing: its temporaries and partial
            // results are unreachable now.
            ledger.free_all();
            let mut e = self.faults.error(id, payload);
            // A device operation's own message (and, for a fault inside a
            // simulated kernel, its place).
            if let Some(g) = runtime::gpu::take_error() {
                match g.loc {
                    Some(loc) => {
                        e.loc = loc;
                        e.message = g.message;
                    }
                    None => e.message.push_str(&g.message),
                }
            } else if e.message.starts_with("'gpu.") && e.message.ends_with("op ") {
                // The runtime recorded its error on the thread that failed:
                // a worker of a parallel loop, which has no device.
                e.message.push_str(
                    "failed on a thread of a parallel loop (scf.forall), which has no GPU \
                     device: device operations belong outside parallel loops",
                );
            }
            return Err(e);
        }
        let live = |h: *mut u8| ledger.contains(h as *mut std::ffi::c_void);
        let mut arrs = marshal::ArrResults::new(&live);
        // SAFETY: a successful call wrote every result field; its array
        // results are live headers of the runtime or freed ones.
        let res = unsafe {
            marshal::unmarshal_out(
                out.as_ptr() as *const u8,
                &f.out,
                &f.results,
                raw,
                &mut arrs,
            )
        };
        // The host owns the arrays now: each live one (an argument, or a
        // result made by the call) is freed once.
        headers.extend(arrs.headers());
        headers.sort_unstable();
        headers.dedup();
        for h in headers {
            if ledger.contains(h as *mut std::ffi::c_void) {
                // SAFETY: a live header of this runtime, freed only here.
                unsafe { runtime::l0rt_arr_free(h) };
            }
        }
        Ok(res)
    }
}
