//! [`Client::init`]: the client written in place into the caller's `MaybeUninit` slot. A
//! device keeps the ~1.4 KB client in a static; [`Client::new`] returns it by value, which
//! the compiler builds in a stack frame of that size and then copies into the slot.
#![allow(unsafe_code)]

use core::mem::MaybeUninit;
use core::ptr::addr_of_mut;

use super::{Client, Ctl, Kind, Phase, Setup, SLOTS};

impl<const CAP: usize> Client<CAP> {
    /// Writes a new client with `config` into `slot` (what it held is not dropped; a client
    /// owns nothing that needs dropping) and returns it: the same client as
    /// [`Client::new`] with `setup.config()`, field by field. A device's `setup` is a
    /// constant ([`Setup::new`] in a `const`), so its control stream's bytes are encoded
    /// at build time and the image holds no code for that.
    #[inline(never)]
    pub fn init<'s>(slot: &'s mut MaybeUninit<Self>, setup: &Setup) -> &'s mut Self {
        let p = slot.as_mut_ptr();
        // SAFETY: `p` comes from an exclusive borrow of the slot, so it is valid and
        // aligned for a write of `Self`. The slot is zeroed first; then every field that is
        // not an integer, a bool or a byte array (for which all-zero is a valid value, the
        // zeroing rule of mote-quic's device constructor) is written through its address
        // with the value `new` gives it (the compiler drops the stores that write zero
        // bytes again), and so is an integer `new` does not set to 0 (`control`, `goaway`,
        // `peer_max`). The whole client is then initialized as by `new`.
        unsafe {
            p.write_bytes(0, 1);
            let st = addr_of_mut!((*p).st);
            addr_of_mut!((*st).setup).write(*setup);
            Self::cap(&mut (*st).setup.config);
            addr_of_mut!((*st).closed).write(None);
            addr_of_mut!((*st).control).write(super::NO_STREAM);
            addr_of_mut!((*st).peer_max).write(super::NO_LIMIT);
            addr_of_mut!((*st).goaway).write(super::NO_GOAWAY);
            let slots = addr_of_mut!((*p).slots).cast::<Ctl>();
            for i in 0..SLOTS {
                let c = slots.add(i);
                addr_of_mut!((*c).kind).write(Kind::Free);
                addr_of_mut!((*c).phase).write(Phase::Head);
                addr_of_mut!((*c).content_left).write(None);
            }
            slot.assume_init_mut()
        }
    }

    /// Names every field (an exhaustive pattern, never called), so that adding a field
    /// brings the reader here and to [`Client::init`]: only integer, bool and byte-array
    /// fields that `new` sets to 0 may be left to its zeroing; every other field must be
    /// written there.
    #[allow(dead_code)]
    fn all_fields(&self) {
        let Self { st, slots, bufs: _ } = self;
        let super::State {
            setup: _,
            closed: _,
            control: _,
            control_written: _,
            peer_max: _,
            goaway: _,
            seen: _,
        } = st;
        for c in slots {
            let Ctl {
                id: _,
                kind: _,
                left: _,
                data: _,
                phase: _,
                content_left: _,
                head_sent: _,
                sending: _,
                head_request: _,
                len: _,
                fin: _,
            } = c;
        }
    }
}
