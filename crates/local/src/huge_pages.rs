//! Memory for a model's packed weights in 2 MiB pages, where Linux gives them (transparent huge
//! pages): one reservation a model, handed out in order as its matrices are packed.
//!
//! A step reads every weight of the model, some 143 MB for the default one. In 4 KiB pages that
//! is some 35,000 pages a step, more than the CPU's address cache holds; in 2 MiB pages, about
//! seventy. Switched decode by decode in one process, the same packed copies in 2 MiB pages
//! made steps of two and three sequences about 6 % faster, and one sequence read over them
//! faster than over the model file's own mapping (7.8 against 8.7 ms a token), where over
//! packed copies in 4 KiB pages it had been slower (ARCHITECTURE.md, "The embedded model").

use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The size of a large page, to which the reservation is aligned so that every page of it can
/// be one.
const LARGE_PAGE: usize = 2 << 20;

/// Where Linux says whether it backs memory with large pages (`always`, `madvise` or `never`,
/// the one in force in brackets).
const THP_SETTING: &str = "/sys/kernel/mm/transparent_hugepage/enabled";

/// Address space reserved for packed copies (committed only as it is written), asked to be
/// backed by large pages.
pub(super) struct Arena {
    /// The whole mapping, as `mmap` returned it.
    mapping: NonNull<libc::c_void>,
    mapped: usize,
    /// Its first large-page boundary, where copies start, and the bytes from there.
    start: usize,
    capacity: usize,
    used: AtomicUsize,
    large_pages: bool,
}

// SAFETY: the arena only hands out disjoint ranges of its mapping (`take` is atomic), and unmaps
// it once, on drop; what is written there belongs to whoever took it.
unsafe impl Send for Arena {}
// SAFETY: as above.
unsafe impl Sync for Arena {}

impl Arena {
    /// Reserves `bytes` of address space for packed copies, or `None` where it cannot be mapped.
    pub(super) fn reserve(bytes: usize) -> Option<Arena> {
        let capacity = bytes.checked_next_multiple_of(LARGE_PAGE)?;
        let mapped = capacity.checked_add(LARGE_PAGE)?;
        // SAFETY: a fresh private anonymous mapping, unmapped only on drop. NORESERVE: only the
        // pages written take memory.
        let mapping = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapped,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if mapping == libc::MAP_FAILED {
            return None;
        }
        let mapping = NonNull::new(mapping)?;
        let start = (mapping.as_ptr() as usize).next_multiple_of(LARGE_PAGE);
        // SAFETY: the aligned part lies within the mapping just made.
        let advised =
            unsafe { libc::madvise(start as *mut libc::c_void, capacity, libc::MADV_HUGEPAGE) };
        let setting = std::fs::read_to_string(THP_SETTING).unwrap_or_default();
        Some(Arena {
            mapping,
            mapped,
            start,
            capacity,
            used: AtomicUsize::new(0),
            large_pages: advised == 0 && large_pages_when_advised(&setting),
        })
    }

    /// `bytes` of the arena aligned to `alignment` (a power of two at most a page), or `None`
    /// when it has no room left.
    pub(super) fn take(&self, bytes: usize, alignment: usize) -> Option<NonNull<u8>> {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let at = used.checked_next_multiple_of(alignment)?;
            let end = at.checked_add(bytes)?;
            if end > self.capacity {
                return None;
            }
            match self
                .used
                .compare_exchange_weak(used, end, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return NonNull::new((self.start + at) as *mut u8),
                Err(now) => used = now,
            }
        }
    }

    /// Whether the kernel was asked for large pages and backs advised memory with them (it may
    /// still fall back to small pages where memory is too fragmented).
    pub(super) fn large_pages(&self) -> bool {
        self.large_pages
    }

    /// Whether `address` lies in this arena.
    #[cfg(test)]
    pub(super) fn holds(&self, address: usize) -> bool {
        (self.start..self.start + self.capacity).contains(&address)
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `reserve`, unmapped once; every copy in it holds the
        // arena, so none is read after this.
        unsafe { libc::munmap(self.mapping.as_ptr(), self.mapped) };
    }
}

/// Whether the setting in force (`[always]` or `[madvise]` in `THP_SETTING`'s text) backs
/// memory advised with `MADV_HUGEPAGE` with large pages.
fn large_pages_when_advised(setting: &str) -> bool {
    setting.contains("[always]") || setting.contains("[madvise]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_in_force_is_the_bracketed_one() {
        assert!(large_pages_when_advised("always [madvise] never\n"));
        assert!(large_pages_when_advised("[always] madvise never\n"));
        assert!(!large_pages_when_advised("always madvise [never]\n"));
        assert!(!large_pages_when_advised(""));
    }

    #[test]
    fn the_arena_hands_out_aligned_disjoint_ranges_until_it_is_full() {
        let arena = Arena::reserve(3 << 20).expect("address space");
        assert_eq!(arena.start % LARGE_PAGE, 0, "starts on a large page");
        let first = arena.take(100, 64).unwrap().as_ptr() as usize;
        let second = arena.take(4096, 64).unwrap().as_ptr() as usize;
        assert_eq!(first % 64, 0);
        assert_eq!(second % 64, 0);
        assert!(second >= first + 100, "disjoint");
        assert!(arena.holds(first) && arena.holds(second + 4095));
        // Written and read back: the memory is there.
        // SAFETY: the range just taken, used by nothing else.
        unsafe {
            std::ptr::write_bytes(second as *mut u8, 0xab, 4096);
            assert_eq!(*((second + 4095) as *const u8), 0xab);
        }
        // The rest of the 4 MiB reserved (3 MiB rounded up to large pages), then nothing.
        let left = (4 << 20) - (second + 4096 - arena.start);
        assert!(arena.take(left + 1, 64).is_none());
        assert!(arena.take(left, 1).is_some());
        assert!(arena.take(1, 1).is_none());
    }
}
