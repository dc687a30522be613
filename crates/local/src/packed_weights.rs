//! Which weight matrices moot's kernels read packed eight rows side by side
//! (`moot_q8_0::Packed`): those inside a loaded model file's mapping, which never change,
//! packed the first time a prompt or a step of several sequences multiplies them, and dropped
//! with the model.
//!
//! llama.cpp hands the kernel bare pointers, to the model's weights and to its own buffers
//! alike (the attention's keys, which change every step), so a pointer is taken for weights
//! only when it lies in the read-only mapping of the file the model was loaded from.
//!
//! A model's copies lie in memory of 2 MiB pages where Linux gives them (`huge_pages`); there a
//! step of one sequence reads them too, which over the file's own mapping (4 KiB pages) was
//! slower.

use super::huge_pages::Arena;
use moot_q8_0::{Block, PACKED_ALIGNMENT, Packed};
use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

/// A matrix as llama.cpp passes it: where its first row starts, its rows, their blocks and the
/// stride between rows (in blocks).
type Matrix = (usize, usize, usize, usize);

/// One loaded model's mapped file and what has been packed of it (`None` for a matrix the
/// packed kernel cannot take, so it is not tried again).
struct Mapped {
    id: u64,
    ranges: Vec<Range<usize>>,
    packed: HashMap<Matrix, Option<Arc<Packed>>>,
    /// Where its copies are made (as large as the mapped file, whose weights they copy); on
    /// the heap where it could not be reserved.
    arena: Option<Arc<Arena>>,
}

impl Mapped {
    fn holds(&self, bytes: &Range<usize>) -> bool {
        self.ranges
            .iter()
            .any(|range| range.start <= bytes.start && bytes.end <= range.end)
    }
}

static MAPPED: RwLock<Vec<Mapped>> = RwLock::new(Vec::new());
/// The lowest and highest address any registered mapping covers, kept with `MAPPED`, so that a
/// pointer outside them (the attention's keys, some eight hundred products a step) is turned
/// away without taking the lock the threads would contend for.
static LOWEST: AtomicUsize = AtomicUsize::new(usize::MAX);
static HIGHEST: AtomicUsize = AtomicUsize::new(0);

/// Sets `LOWEST` and `HIGHEST` to the bounds of what `mapped` covers.
fn bound(mapped: &[Mapped]) {
    let ranges = || mapped.iter().flat_map(|model| &model.ranges);
    let lowest = ranges().map(|range| range.start).min();
    let highest = ranges().map(|range| range.end).max();
    LOWEST.store(lowest.unwrap_or(usize::MAX), Ordering::Relaxed);
    HIGHEST.store(highest.unwrap_or(0), Ordering::Relaxed);
}
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// A model's weights registered for packing; dropping it (before the model) drops their
/// packed copies.
pub(super) struct MappedWeights {
    id: u64,
}

impl Drop for MappedWeights {
    fn drop(&mut self) {
        if let Ok(mut mapped) = MAPPED.write() {
            mapped.retain(|model| model.id != self.id);
            bound(&mapped);
        }
    }
}

/// Registers the read-only mappings of `file` (the GGUF llama.cpp has just loaded) as weights
/// that may be packed, or `None` where the file is not mapped (llama.cpp read it into memory
/// instead, or `/proc/self/maps` cannot be read): then the kernel reads weights as ggml lays
/// them out.
pub(super) fn register(file: &Path) -> Option<MappedWeights> {
    let file = std::fs::canonicalize(file).ok()?;
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let ranges = read_only_mappings(&maps, &file.to_string_lossy());
    if ranges.is_empty() {
        return None;
    }
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let arena = Arena::reserve(ranges.iter().map(Range::len).sum()).map(Arc::new);
    let mut mapped = MAPPED.write().ok()?;
    mapped.push(Mapped {
        id,
        ranges,
        packed: HashMap::new(),
        arena,
    });
    bound(&mapped);
    Some(MappedWeights { id })
}

/// The address ranges of `/proc/self/maps` lines that map `file` without write permission.
fn read_only_mappings(maps: &str, file: &str) -> Vec<Range<usize>> {
    maps.lines()
        .filter_map(|line| {
            // address perms offset device inode path (the path may hold spaces).
            let mut fields = line.splitn(6, ' ');
            let (addresses, permissions) = (fields.next()?, fields.next()?);
            let path = fields.nth(3)?.trim_start();
            if path != file || permissions.contains('w') {
                return None;
            }
            let (start, end) = addresses.split_once('-')?;
            let start = usize::from_str_radix(start, 16).ok()?;
            let end = usize::from_str_radix(end, 16).ok()?;
            (start < end).then_some(start..end)
        })
        .collect()
}

/// The packed copy of the matrix at `weights` (`rows` rows of `blocks` blocks, `stride` blocks
/// apart) for a product of `columns` columns, packed now if this is its first product; `None`
/// when it is not a loaded model's weights, the packed kernel cannot take it, or the product is
/// of one column and the model's copies are not in large pages (one column is read faster from
/// the file's own mapping than from a copy in small pages).
pub(super) fn packed(
    weights: *const Block,
    rows: usize,
    blocks: usize,
    stride: usize,
    columns: usize,
) -> Option<Arc<Packed>> {
    let start = weights as usize;
    let length = rows
        .checked_sub(1)?
        .checked_mul(stride)?
        .checked_add(blocks)?
        .checked_mul(std::mem::size_of::<Block>())?;
    let bytes = start..start.checked_add(length)?;
    if bytes.start < LOWEST.load(Ordering::Relaxed) || bytes.end > HIGHEST.load(Ordering::Relaxed) {
        return None;
    }
    let matrix = (start, rows, blocks, stride);
    let wanted = |model: &Mapped| {
        columns > 1
            || model
                .arena
                .as_ref()
                .is_some_and(|arena| arena.large_pages())
    };
    {
        let mapped = MAPPED.read().ok()?;
        let model = mapped.iter().find(|model| model.holds(&bytes))?;
        if !wanted(model) {
            return None;
        }
        if let Some(entry) = model.packed.get(&matrix) {
            return entry.clone();
        }
    }
    // The first product to meet this matrix packs it; another thread asking meanwhile waits here
    // for the same copy rather than packing its own.
    let mut mapped = MAPPED.write().ok()?;
    let model = mapped.iter_mut().find(|model| model.holds(&bytes))?;
    let arena = model.arena.clone();
    model
        .packed
        .entry(matrix)
        .or_insert_with(|| {
            // SAFETY (both): the matrix lies within the model's mapped file, which stays mapped
            // while it is registered, and the registration is held (the lock) while this
            // reads; the arena's range is aligned, as large as the copy, and the arena lives
            // as long as the copy, which holds it.
            let in_arena = arena.and_then(|arena| {
                let memory = arena.take(Packed::bytes_for(rows, blocks)?, PACKED_ALIGNMENT)?;
                unsafe { Packed::new_in(weights, rows, blocks, stride, memory, arena) }
            });
            in_arena
                .or_else(|| unsafe { Packed::new(weights, rows, blocks, stride) })
                .map(Arc::new)
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The arena a registered model's copies are made in.
    fn arena_of(registration: &MappedWeights) -> Option<Arc<Arena>> {
        let mapped = MAPPED.read().unwrap();
        let model = mapped.iter().find(|model| model.id == registration.id)?;
        model.arena.clone()
    }

    #[test]
    fn only_read_only_mappings_of_the_model_file_are_weights() {
        let maps = "\
7f0000000000-7f0000100000 r--s 00000000 08:01 42 /models/a model.gguf
7f0000200000-7f0000300000 rw-p 00000000 08:01 42 /models/a model.gguf
7f0000400000-7f0000500000 r--p 00000000 08:01 43 /models/other.gguf
7f0000600000-7f0000601000 r--p 00000000 00:00 0 
";
        assert_eq!(
            read_only_mappings(maps, "/models/a model.gguf"),
            vec![0x7f00_0000_0000..0x7f00_0010_0000]
        );
        assert!(read_only_mappings(maps, "/models/missing.gguf").is_empty());
    }

    #[test]
    fn a_pointer_outside_every_mapped_model_is_not_packed() {
        // A buffer of this process's heap, as the attention's keys are: never taken for weights.
        let blocks = vec![
            Block {
                scale: 0x3c00,
                quants: [1; 32],
            };
            16
        ];
        assert!(packed(blocks.as_ptr(), 8, 2, 2, 2).is_none());
    }

    #[test]
    fn a_registered_file_is_packed_once_and_forgotten_with_its_model() {
        // A file mapped read-only, as llama.cpp maps a model.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("weights.bin");
        let rows = 16;
        let blocks = 3;
        let mut bytes = Vec::new();
        for n in 0..rows * blocks {
            bytes.extend_from_slice(&0x3c00u16.to_le_bytes());
            bytes.extend((0..32).map(|v| ((v + n) % 200) as u8));
        }
        std::fs::write(&path, &bytes).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: a read-only shared mapping of a file nothing else writes, unmapped below.
        let address = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes.len(),
                libc::PROT_READ,
                libc::MAP_SHARED,
                std::os::fd::AsRawFd::as_raw_fd(&file),
                0,
            )
        };
        assert_ne!(address, libc::MAP_FAILED);
        let weights = address as *const Block;
        assert!(
            packed(weights, rows, blocks, blocks, 2).is_none(),
            "not yet registered"
        );
        let registration = register(&path).expect("the mapping is found");
        let first = packed(weights, rows, blocks, blocks, 2);
        if moot_q8_0::Packed::built() {
            let first = first.expect("packed");
            assert_eq!((first.rows(), first.blocks()), (rows, blocks));
            let again = packed(weights, rows, blocks, blocks, 2).unwrap();
            assert!(Arc::ptr_eq(&first, &again), "packed once");
            // Made in the model's arena, which one column reads from where its pages are large.
            let arena = arena_of(&registration).expect("address space for the arena");
            assert!(arena.holds(first.address()));
            let one_column = packed(weights, rows, blocks, blocks, 1);
            assert_eq!(one_column.is_some(), arena.large_pages());
            if let Some(one_column) = one_column {
                assert!(Arc::ptr_eq(&first, &one_column), "the same copy");
            }
            // Past the end of the mapping (a page): not the model's weights.
            assert!(packed(weights, 128, blocks, blocks, 2).is_none());
        } else {
            assert!(first.is_none());
        }
        drop(registration);
        assert!(
            packed(weights, rows, blocks, blocks, 2).is_none(),
            "forgotten"
        );
        // SAFETY: the mapping made above, no longer read.
        unsafe { libc::munmap(address, bytes.len()) };
    }
}
