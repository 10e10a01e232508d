//! Resident memory at start-up (issue 14).
//!
//! `l0-opt` links LLVM (for `--backend=llvm`, `--emit=llvm/asm/obj` and PTX),
//! and starting it makes LLVM's pages resident: its static initializers run
//! code across the whole library. Linked dynamically (`libLLVM-14.so`) that is
//! about 40 MiB; linked statically into the executable, as `codegen/build.rs`
//! prefers, the pages are the executable's own (`--timing` of a 6 MiB input:
//! 35 MiB peak with the advice below, 56 MiB without). Most runs never call
//! LLVM. For a large input (where the IR, not the tool, should decide
//! the peak), [`release_llvm_pages`] asks the kernel to reclaim those pages
//! (`MADV_PAGEOUT`, Linux 5.4+): for the library's clean pages that only
//! drops them from this process, and a run that does use LLVM faults back in
//! what it needs from the page cache. The advice never changes what memory
//! holds, so it is safe for any mapping; where it is not supported nothing
//! happens.

/// Advises the kernel to reclaim the resident pages of the read-only
/// mappings of libLLVM and of the executable (which holds LLVM when it is
/// linked statically). Returns the number of mappings advised (0 off Linux).
pub fn release_llvm_pages() -> usize {
    #[cfg(target_os = "linux")]
    {
        let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
            return 0;
        };
        let exe = std::fs::read_link("/proc/self/exe").unwrap_or_default();
        let mut n = 0;
        for line in maps.lines() {
            // start-end perms offset dev inode path
            let mut f = line.split_whitespace();
            let (Some(range), Some(perms)) = (f.next(), f.next()) else {
                continue;
            };
            let path = f.nth(3).unwrap_or("");
            let file = path.rsplit('/').next().unwrap_or("");
            let llvm = file.starts_with("libLLVM") || std::path::Path::new(path) == exe;
            if !llvm || perms.contains('w') {
                continue;
            }
            let Some((a, b)) = range.split_once('-') else {
                continue;
            };
            let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
            else {
                continue;
            };
            // SAFETY: MADV_PAGEOUT is advice: it reclaims pages without
            // changing their contents (dirty private pages are swapped or
            // kept), on a mapping this process owns.
            let r = unsafe { libc::madvise(a as *mut libc::c_void, b - a, libc::MADV_PAGEOUT) };
            if r == 0 {
                n += 1;
            }
        }
        n
    }
    #[cfg(not(target_os = "linux"))]
    0
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    /// LLVM is mapped somewhere read-only: in this test binary (static
    /// linking) or in `libLLVM-14.so` (the dynamic fallback).
    #[test]
    fn advises_the_mappings_that_hold_llvm() {
        assert!(super::release_llvm_pages() > 0);
    }
}
