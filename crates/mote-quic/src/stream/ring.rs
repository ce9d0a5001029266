//! The one ring copy shared by the send buffer and the reassembler.

/// Copies `data` into the ring `buf` starting at index `p`, wrapping to the front at the
/// end. The caller checked that it fits (`data.len() <= buf.len()`); anything that would
/// not is left out rather than panicking.
// Out of line: the send buffer's `write` and the reassembler's `copy_in` (issue 8).
#[inline(never)]
pub(super) fn copy_in(buf: &mut [u8], p: usize, data: &[u8]) {
    let first = data.len().min(buf.len().saturating_sub(p));
    let (a, b) = data.split_at(first);
    if let Some(dst) = buf.get_mut(p..p + a.len()) {
        dst.copy_from_slice(a);
    }
    if let Some(dst) = buf.get_mut(..b.len()) {
        dst.copy_from_slice(b);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn wraps_at_the_end() {
        let mut buf = [0u8; 5];
        super::copy_in(&mut buf, 3, b"abcd");
        assert_eq!(&buf, b"cd\0ab");
        super::copy_in(&mut buf, 0, b"xyz");
        assert_eq!(&buf, b"xyzab");
        // Too long for the ring: the part past the wrap that does not fit is left out.
        let mut small = [0u8; 2];
        super::copy_in(&mut small, 1, b"pqrs");
        assert_eq!(&small, b"\0p");
    }
}
