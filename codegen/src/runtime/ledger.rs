//! The allocation ledger of one call of compiled code (issue 43): every
//! buffer the runtime allocates while a call runs is recorded, and every one
//! it frees is struck off, so that when the call faults (compiled code
//! returns status 1 up its call chain and skips its frees) the host frees
//! what is left: temporaries and partial results, on the calling thread and
//! on the workers of its parallel loops alike. A call that ends forgets its
//! ledger: what is left then is its results, which the host now owns.
//!
//! The ledger is per call (a host may call compiled functions from several
//! threads at once through `opt_main`'s library API): the calling thread
//! holds it in a thread-local while the call runs ([`enter`]), and
//! `l0rt_parallel_for` hands it to the workers for the chunks they run.
//! Outside a call (the host marshalling arguments or dropping results)
//! nothing is recorded. The record is a set of addresses in a few shards
//! behind their own locks, so threads that allocate at once seldom wait.

use std::cell::RefCell;
use std::collections::HashSet;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

extern "C" {
    fn malloc(n: usize) -> *mut c_void;
    fn calloc(n: usize, size: usize) -> *mut c_void;
    fn realloc(p: *mut c_void, n: usize) -> *mut c_void;
    fn free(p: *mut c_void);
}

const SHARDS: usize = 16;

/// The live allocations of one call.
#[derive(Default)]
pub struct Ledger {
    shards: [Mutex<HashSet<usize>>; SHARDS],
}

impl Ledger {
    fn shard(&self, p: *mut c_void) -> &Mutex<HashSet<usize>> {
        // malloc's blocks are 16-byte aligned: drop the low bits.
        &self.shards[((p as usize) >> 4) % SHARDS]
    }
    fn insert(&self, p: *mut c_void) {
        if !p.is_null() {
            let mut s = self.shard(p).lock().unwrap_or_else(|e| e.into_inner());
            s.insert(p as usize);
        }
    }
    fn remove(&self, p: *mut c_void) {
        if !p.is_null() {
            let mut s = self.shard(p).lock().unwrap_or_else(|e| e.into_inner());
            s.remove(&(p as usize));
        }
    }
    /// Whether `p` is a live allocation of this ledger's call.
    pub fn contains(&self, p: *mut c_void) -> bool {
        let s = self.shard(p).lock().unwrap_or_else(|e| e.into_inner());
        s.contains(&(p as usize))
    }
    /// How many allocations are live.
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).len())
            .sum()
    }
    /// Whether no allocation is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Frees every allocation still live (after a fault: nothing refers to
    /// them any more, as the faulting call returns no results).
    pub fn free_all(&self) {
        for s in &self.shards {
            let mut s = s.lock().unwrap_or_else(|e| e.into_inner());
            for p in s.drain() {
                // SAFETY: recorded by this runtime's allocation and not
                // freed since (a free strikes it off first).
                unsafe { free(p as *mut c_void) };
            }
        }
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Ledger>>> = const { RefCell::new(None) };
}

/// Makes `ledger` this thread's ledger until the guard drops (the previous
/// one, if any, comes back then).
pub fn enter(ledger: Option<Arc<Ledger>>) -> Scope {
    let prev = CURRENT.with(|c| std::mem::replace(&mut *c.borrow_mut(), ledger));
    Scope { prev }
}

/// This thread's ledger, for handing to workers.
pub fn current() -> Option<Arc<Ledger>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Restores the previous ledger of the thread when dropped.
pub struct Scope {
    prev: Option<Arc<Ledger>>,
}

impl Drop for Scope {
    fn drop(&mut self) {
        let prev = self.prev.take();
        CURRENT.with(|c| *c.borrow_mut() = prev);
    }
}

fn with(f: impl FnOnce(&Ledger)) {
    CURRENT.with(|c| {
        if let Some(l) = &*c.borrow() {
            f(l)
        }
    })
}

/// `malloc`, recorded.
///
/// # Safety
/// As `malloc`.
pub unsafe fn c_malloc(n: usize) -> *mut c_void {
    let p = malloc(n);
    with(|l| l.insert(p));
    p
}

/// `calloc`, recorded.
///
/// # Safety
/// As `calloc`.
pub unsafe fn c_calloc(n: usize, size: usize) -> *mut c_void {
    let p = calloc(n, size);
    with(|l| l.insert(p));
    p
}

/// `realloc`, recorded: the old block is struck off where it moved.
///
/// # Safety
/// As `realloc`: `p` is null or a live block of the C allocator.
pub unsafe fn c_realloc(p: *mut c_void, n: usize) -> *mut c_void {
    let q = realloc(p, n);
    if !q.is_null() && q != p {
        with(|l| {
            l.remove(p);
            l.insert(q);
        });
    }
    q
}

/// `free`, struck off first.
///
/// # Safety
/// As `free`: `p` is null or a live block of the C allocator.
pub unsafe fn c_free(p: *mut c_void) {
    with(|l| l.remove(p));
    free(p);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_faulting_call_frees_what_is_left_and_a_finished_one_keeps_it() {
        let ledger = Arc::new(Ledger::default());
        let (kept, gone);
        {
            let _scope = enter(Some(ledger.clone()));
            unsafe {
                kept = c_malloc(32);
                gone = c_calloc(4, 8);
                let moved = c_realloc(c_malloc(8), 1 << 20);
                c_free(gone);
                assert!(!moved.is_null());
            }
            // A worker thread with the same ledger.
            let l = current();
            std::thread::spawn(move || {
                let _s = enter(l);
                unsafe { c_malloc(64) };
            })
            .join()
            .unwrap();
        }
        let _ = gone;
        assert_eq!(ledger.len(), 3, "kept, moved and the worker's block");
        // Outside the scope nothing is recorded.
        let outside = unsafe { c_malloc(16) };
        assert_eq!(ledger.len(), 3);
        unsafe { c_free(outside) };
        let _ = kept;
        ledger.free_all();
        assert!(ledger.is_empty());
    }
}
