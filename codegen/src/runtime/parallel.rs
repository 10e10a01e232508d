//! `l0rt_parallel_for`: runs the chunks of an `scf.forall` on a pool of
//! worker threads (rayon), with deterministic faults.
//!
//! The compiled body of an `scf.forall` is a *chunk function*
//! `(env, c, depth) -> status` ([`ChunkFn`]): `env` points to the values the
//! body captures, `c` is the iteration, `depth` the caller's call depth,
//! and a non-zero status means the chunk faulted (its fault recorded on the
//! thread that ran it). The results never depend on the thread count:
//! which chunk computes what is fixed by the IR (`passes::parallel`).
//!
//! Faults: a chunk that faults makes every chunk after it (by index) that
//! has not started yet skip; chunks before it still run, since one of them
//! may fault too. The fault reported is that of the lowest faulting chunk,
//! the one a sequential run reports, moved to the calling thread. The call
//! returns only when no chunk is running.

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use super::{set_fault, take_fault};

/// A compiled `scf.forall` body: `(env, iteration, depth) -> status`.
pub type ChunkFn = unsafe extern "C" fn(*const u8, i64, i64) -> i8;

/// Stack of a worker thread: chunk bodies may call functions as deeply as
/// the main thread (the interpreter's call depth limit), so workers get
/// the main thread's big stack (reserved, not committed).
const WORKER_STACK: usize = 1 << 28;

/// Threads for parallel loops: 0 means every core.
static THREADS: AtomicUsize = AtomicUsize::new(0);

/// The pool and the thread count it was built for.
static POOL: Mutex<Option<(usize, Arc<rayon::ThreadPool>)>> = Mutex::new(None);

/// Sets how many threads run parallel loops (`--threads=N`; 0: every core).
pub fn set_threads(n: usize) {
    THREADS.store(n, Ordering::SeqCst);
}

/// The thread count in effect (every core when unset).
pub fn threads() -> usize {
    match THREADS.load(Ordering::SeqCst) {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
}

/// The pool for `n` threads (built on first use, rebuilt when `n` changes).
fn pool(n: usize) -> Option<Arc<rayon::ThreadPool>> {
    let mut g = POOL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((k, p)) = g.as_ref() {
        if *k == n {
            return Some(p.clone());
        }
    }
    let p = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .stack_size(WORKER_STACK)
        .thread_name(|i| format!("l0-worker-{i}"))
        .build()
        .ok()?;
    let p = Arc::new(p);
    *g = Some((n, p.clone()));
    Some(p)
}

/// The captured values, shared read-only by the chunks.
#[derive(Clone, Copy)]
struct Env(*const u8);
// SAFETY: chunks only read the environment (the values the body captures);
// what they write is disjoint memory, by the definition of scf.forall.
unsafe impl Send for Env {}
unsafe impl Sync for Env {}

/// Runs chunk function `f` for every `c` in `[0, n)`; returns 0, or 1 after
/// a fault (recorded on the calling thread as the lowest faulting chunk's).
/// One chunk, or one thread, runs inline on the calling thread.
///
/// # Safety
/// `f` must be a chunk function compiled for `env`.
pub unsafe extern "C" fn l0rt_parallel_for(f: ChunkFn, env: *const u8, n: i64, depth: i64) -> i8 {
    if n <= 0 {
        return 0;
    }
    let t = threads();
    let pool = if n == 1 || t == 1 { None } else { pool(t) };
    let Some(pool) = pool else {
        for c in 0..n {
            if f(env, c, depth) != 0 {
                return 1;
            }
        }
        return 0;
    };
    let env = Env(env);
    let first = AtomicI64::new(i64::MAX);
    let fault: Mutex<Option<(i64, Option<(i64, [i64; 3])>)>> = Mutex::new(None);
    pool.install(|| {
        (0..n as usize)
            .into_par_iter()
            .with_max_len(1)
            .for_each(|c| {
                let c = c as i64;
                if c > first.load(Ordering::Acquire) {
                    return;
                }
                let env = env;
                // SAFETY: the caller's contract.
                if unsafe { f(env.0, c, depth) } != 0 {
                    let what = take_fault();
                    let mut g = fault.lock().unwrap_or_else(|e| e.into_inner());
                    if g.as_ref().is_none_or(|(k, _)| c < *k) {
                        *g = Some((c, what));
                    }
                    first.fetch_min(c, Ordering::AcqRel);
                }
            });
    });
    match fault.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some((_, what)) => {
            if let Some(w) = what {
                set_fault(w);
            }
            1
        }
        None => 0,
    }
}
