//! Addresses and NAT: which node owns which local address, and the external address each
//! local address appears as to the rest of the network.
//!
//! Every node binds one or more *local* addresses (its sockets). Each local address has an
//! *external* address — itself unless a NAT maps it elsewhere. A datagram sent from local
//! address `L` is seen by its receiver as coming from `external(L)`, and a datagram sent to
//! address `D` reaches the local address whose external address is `D`. Links join local
//! addresses, so a NAT rebinding (a new external address for `L`) changes what the peer
//! sees without changing the path the datagrams take — as when a home router or carrier
//! NAT reassigns a mapping. Datagrams addressed to a mapping that no longer exists are
//! dropped with [`DropReason::NoRoute`](crate::DropReason::NoRoute).

use std::collections::BTreeMap;
use std::net::SocketAddr;

use crate::error::SimError;
use crate::node::NodeId;

/// A bound local address.
#[derive(Clone, Copy, Debug)]
struct Binding {
    node: NodeId,
    external: SocketAddr,
}

/// Local addresses, their owners and their external addresses.
#[derive(Debug, Default)]
pub(crate) struct AddressTable {
    /// By local address.
    local: BTreeMap<SocketAddr, Binding>,
    /// External address → local address.
    external: BTreeMap<SocketAddr, SocketAddr>,
}

impl AddressTable {
    /// Binds `addr` to `node`, reachable as itself.
    pub(crate) fn bind(&mut self, node: NodeId, addr: SocketAddr) -> Result<(), SimError> {
        if self.local.contains_key(&addr) || self.external.contains_key(&addr) {
            return Err(SimError::AddressInUse(addr));
        }
        self.local.insert(addr, Binding { node, external: addr });
        self.external.insert(addr, addr);
        Ok(())
    }

    /// The node bound to local address `addr`.
    pub(crate) fn owner(&self, addr: SocketAddr) -> Option<NodeId> {
        self.local.get(&addr).map(|b| b.node)
    }

    /// The address a datagram from local address `addr` appears to come from.
    pub(crate) fn external_of(&self, addr: SocketAddr) -> Option<SocketAddr> {
        self.local.get(&addr).map(|b| b.external)
    }

    /// The local address (and its node) that datagrams sent to `dest` reach.
    pub(crate) fn resolve(&self, dest: SocketAddr) -> Option<(SocketAddr, NodeId)> {
        let local = *self.external.get(&dest)?;
        Some((local, self.local.get(&local)?.node))
    }

    /// Gives local address `local` the external address `external`, dropping its old
    /// mapping; returns the old external address.
    pub(crate) fn map(
        &mut self,
        local: SocketAddr,
        external: SocketAddr,
    ) -> Result<SocketAddr, SimError> {
        let binding = self.local.get(&local).ok_or(SimError::UnknownAddress(local))?;
        let old = binding.external;
        if old == external {
            return Ok(old);
        }
        if self.external.contains_key(&external) {
            return Err(SimError::AddressInUse(external));
        }
        self.external.remove(&old);
        self.external.insert(external, local);
        if let Some(b) = self.local.get_mut(&local) {
            b.external = external;
        }
        Ok(old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn bind_resolve_map() {
        let mut t = AddressTable::default();
        t.bind(NodeId(0), a("10.0.0.1:1000")).unwrap();
        t.bind(NodeId(1), a("192.0.2.1:443")).unwrap();
        assert_eq!(
            t.bind(NodeId(1), a("10.0.0.1:1000")),
            Err(SimError::AddressInUse(a("10.0.0.1:1000")))
        );
        assert_eq!(t.resolve(a("10.0.0.1:1000")), Some((a("10.0.0.1:1000"), NodeId(0))));

        let old = t.map(a("10.0.0.1:1000"), a("203.0.113.7:40000")).unwrap();
        assert_eq!(old, a("10.0.0.1:1000"));
        assert_eq!(t.external_of(a("10.0.0.1:1000")), Some(a("203.0.113.7:40000")));
        assert_eq!(t.resolve(a("10.0.0.1:1000")), None);
        assert_eq!(t.resolve(a("203.0.113.7:40000")), Some((a("10.0.0.1:1000"), NodeId(0))));
        // The external address is taken; the old one is free again.
        assert!(t.bind(NodeId(1), a("203.0.113.7:40000")).is_err());
        assert_eq!(
            t.map(a("192.0.2.1:443"), a("203.0.113.7:40000")),
            Err(SimError::AddressInUse(a("203.0.113.7:40000")))
        );
        assert_eq!(
            t.map(a("10.9.9.9:1"), a("1.1.1.1:1")),
            Err(SimError::UnknownAddress(a("10.9.9.9:1")))
        );
    }
}
