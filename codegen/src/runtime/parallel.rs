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
//! returns only when no chunk is running. (A chunk's temporaries leak on a
//! fault, as in sequential compiled code.)

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

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

/// The thread count in effect (every core when unset). The core count is
/// read once: `available_parallelism` reads cgroup files, too slow for each
/// parallel loop.
pub fn threads() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    match THREADS.load(Ordering::Relaxed) {
        0 => *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        n => n,
    }
}

/// `scf.forall_threads`: the threads an `scf.forall` started here may use
/// ([`threads`]).
pub extern "C" fn l0rt_forall_threads() -> i64 {
    threads() as i64
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

/// Estimated work (ns) below which the chunks after the first run inline:
/// handing chunks to a second thread costs about 18 us here (waking a
/// sleeping worker: sum of squares over 8192 f64 in two chunks took 19 us
/// on two threads against 0.8 us on one), so a loop gains only above about
/// twice that (benches/threads.sh). The environment variable
/// `L0_INLINE_NS` overrides it (0: every loop of several chunks goes to
/// the pool, as the tests want).
const INLINE_NS: u128 = 40_000;

/// [`INLINE_NS`], or `L0_INLINE_NS` when set (read once).
fn inline_ns() -> u128 {
    static V: std::sync::OnceLock<u128> = std::sync::OnceLock::new();
    *V.get_or_init(|| {
        std::env::var("L0_INLINE_NS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(INLINE_NS)
    })
}

/// Work (ns) a thread claims at once: claiming is an atomic operation on a
/// line all threads share (about 0.2 us a chunk with two threads), so
/// cheap chunks are claimed in batches (which chunk computes what does not
/// change).
const BATCH_NS: u128 = 5_000;

/// A recorded fault: its site id and payloads ([`crate::faults`]).
type Fault = (i64, [i64; 3]);

/// The state the threads of one `l0rt_parallel_for` share. Helpers hold it
/// by `Arc` and may start after the call has returned: they claim a chunk
/// before touching `env`, and there is none left to claim by then.
struct Shared {
    f: ChunkFn,
    env: Env,
    n: i64,
    depth: i64,
    /// Chunks a thread claims at once (about [`BATCH_NS`] of work).
    batch: i64,
    /// The next chunk to claim.
    next: AtomicI64,
    /// Chunks finished (run or skipped).
    done: AtomicI64,
    /// The lowest faulting chunk so far (`i64::MAX`: none).
    first: AtomicI64,
    /// That chunk and its fault.
    fault: Mutex<Option<(i64, Option<Fault>)>>,
    /// The allocation ledger of the call this loop belongs to: the chunks a
    /// worker runs allocate into it ([`super::ledger`]).
    ledger: Option<Arc<super::ledger::Ledger>>,
}

impl Shared {
    /// Claims and runs batches of chunks until none is left.
    fn work(&self) {
        let _ledger = super::ledger::enter(self.ledger.clone());
        loop {
            let lo = self.next.fetch_add(self.batch, Ordering::AcqRel);
            if lo >= self.n {
                return;
            }
            let hi = (lo + self.batch).min(self.n);
            for c in lo..hi {
                if c > self.first.load(Ordering::Acquire) {
                    break;
                }
                // SAFETY: the contract of `l0rt_parallel_for`; `c` was
                // claimed, so the caller is still waiting (env is alive).
                if unsafe { (self.f)(self.env.0, c, self.depth) } != 0 {
                    self.record(c, take_fault());
                    break;
                }
            }
            self.done.fetch_add(hi - lo, Ordering::AcqRel);
        }
    }

    fn record(&self, c: i64, what: Option<Fault>) {
        let mut g = self.fault.lock().unwrap_or_else(|e| e.into_inner());
        if g.as_ref().is_none_or(|(k, _)| c < *k) {
            *g = Some((c, what));
        }
        self.first.fetch_min(c, Ordering::AcqRel);
    }
}

/// Runs chunk function `f` for every `c` in `[0, n)`; returns 0, or 1 after
/// a fault (recorded on the calling thread as the lowest faulting chunk's).
///
/// The calling thread runs chunk 0 and times it; when the other chunks
/// look cheap (their estimated work below [`INLINE_NS`], see
/// [`inline_ns`]), or with one
/// thread, it runs them too, in order, with no hand-off. Otherwise it
/// wakes `threads - 1` helpers on the pool and claims batches of chunks
/// with them from a shared counter, so it never waits for a helper to wake, only for
/// chunks a helper has started.
///
/// # Safety
/// `f` must be a chunk function compiled for `env`.
pub unsafe extern "C" fn l0rt_parallel_for(f: ChunkFn, env: *const u8, n: i64, depth: i64) -> i8 {
    let inline = |from: i64| -> i8 {
        for c in from..n {
            if f(env, c, depth) != 0 {
                return 1;
            }
        }
        0
    };
    let t = threads();
    if n <= 1 || t == 1 {
        return inline(0);
    }
    let t0 = std::time::Instant::now();
    if f(env, 0, depth) != 0 {
        return 1;
    }
    let chunk_ns = t0.elapsed().as_nanos().max(1);
    let estimate = chunk_ns.saturating_mul((n - 1) as u128);
    let pool = if estimate < inline_ns() {
        None
    } else {
        pool(t)
    };
    let Some(pool) = pool else {
        return inline(1);
    };
    let shared = Arc::new(Shared {
        f,
        env: Env(env),
        n,
        depth,
        batch: (BATCH_NS / chunk_ns).clamp(1, n as u128) as i64,
        next: AtomicI64::new(1),
        done: AtomicI64::new(1),
        first: AtomicI64::new(i64::MAX),
        fault: Mutex::new(None),
        ledger: super::ledger::current(),
    });
    for _ in 1..t.min(n as usize) {
        let s = shared.clone();
        pool.spawn(move || s.work());
    }
    shared.work();
    let mut spins = 0u32;
    while shared.done.load(Ordering::Acquire) < n {
        spins += 1;
        if spins < 1000 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
    let what = shared
        .fault
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    match what {
        Some((_, what)) => {
            if let Some(w) = what {
                set_fault(w);
            }
            1
        }
        None => 0,
    }
}
