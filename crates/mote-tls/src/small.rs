//! A fixed-capacity list of `Copy` values on the stack (negotiation lists: suites, groups,
//! schemes), so building a ClientHello needs no heap.

#[derive(Clone, Copy, Debug)]
pub(crate) struct Small<T: Copy, const N: usize> {
    items: [T; N],
    len: usize,
}

impl<T: Copy + PartialEq, const N: usize> Small<T, N> {
    /// An empty list; `filler` only initialises unused slots.
    pub(crate) const fn new(filler: T) -> Self {
        Self { items: [filler; N], len: 0 }
    }

    /// Appends `v` unless it is already there or the list is full.
    pub(crate) fn push_unique(&mut self, v: T) {
        if self.as_slice().contains(&v) {
            return;
        }
        if let Some(slot) = self.items.get_mut(self.len) {
            *slot = v;
            self.len += 1;
        }
    }

    pub(crate) fn as_slice(&self) -> &[T] {
        self.items.get(..self.len).unwrap_or(&[])
    }

    pub(crate) fn contains(&self, v: &T) -> bool {
        self.as_slice().contains(v)
    }

    pub(crate) fn first(&self) -> Option<T> {
        self.as_slice().first().copied()
    }
}
