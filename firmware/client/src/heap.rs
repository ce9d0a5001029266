//! The heap of the X.509 build (rustls-webpki allocates while it verifies a chain): a
//! linked-list allocator over a static arena, wrapped to count the bytes in use and their
//! high-water mark, which the firmware reports. The other builds have no allocator at all.

#![allow(unsafe_code)]

use core::alloc::{GlobalAlloc, Layout};
use core::cell::Cell;

use critical_section::Mutex;
use embedded_alloc::LlffHeap;

/// Arena size: a two-certificate chain parses in a few KB.
const ARENA: usize = 16 * 1024;

/// The allocator with its counters (bytes in use, peak).
pub struct Counting {
    heap: LlffHeap,
    used: Mutex<Cell<(usize, usize)>>,
}

#[global_allocator]
static HEAP: Counting = Counting { heap: LlffHeap::empty(), used: Mutex::new(Cell::new((0, 0))) };

// SAFETY: forwards to LlffHeap, which is a correct allocator; the counters are updated in a
// critical section.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is passed on unchanged.
        let p = unsafe { self.heap.alloc(layout) };
        if !p.is_null() {
            critical_section::with(|cs| {
                let c = self.used.borrow(cs);
                let (used, peak) = c.get();
                let used = used + layout.size();
                c.set((used, peak.max(used)));
            });
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { self.heap.dealloc(ptr, layout) };
        critical_section::with(|cs| {
            let c = self.used.borrow(cs);
            let (used, peak) = c.get();
            c.set((used.saturating_sub(layout.size()), peak));
        });
    }
}

/// Gives the allocator its arena. Call once, before anything allocates.
pub fn init() {
    static mut MEMORY: [u8; ARENA] = [0; ARENA];
    // SAFETY: called once at boot; the arena is used by nothing else.
    unsafe { HEAP.heap.init(core::ptr::addr_of_mut!(MEMORY) as usize, ARENA) }
}

/// The most bytes ever allocated at once.
pub fn peak() -> usize {
    critical_section::with(|cs| HEAP.used.borrow(cs).get().1)
}
