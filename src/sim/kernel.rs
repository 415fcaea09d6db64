//! What the simulated kernels know about the network, for the transport layer
//! (`crate::net::tcp`): which directed links the nemesis has cut, which hosts are
//! down, which listeners are bound, and which TCP connections are open at their
//! connecting end.
//!
//! turmoil 0.7.2 has no TCP handshake in its kernel and no keepalive, and two of its
//! gaps leak sockets over long runs (see `crate::net::tcp`):
//! * a `TcpStream::connect` that fails (SYN dropped: partition, no listener, host
//!   down) or is cancelled registers its socket in the host's table and never removes
//!   it, so every failed connect leaks an ephemeral port for good (`ports exhausted`);
//! * a server never learns that a client dropped a connection whose FIN a partition
//!   lost, so the server's socket stays forever, and when the client's port counter
//!   wraps around to that port the server's `accept` panics (`already connected`).
//!
//! This is the state the connection layer uses to fail a connect without handing
//! turmoil a SYN it would drop, and to answer a keepalive probe the way the peer's
//! kernel would.
//!
//! It also counts what the hosts send each other ([`Traffic`]), for the cost a lock puts
//! on the network (`crate::metrics`).

use serde::Serialize;
use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::rc::Rc;

/// Shared by every node of one run; the driver keeps `cut` in step with turmoil.
#[derive(Default)]
pub struct Kernel {
    /// Directed links (from, to) cut by the nemesis, by host name.
    cut: RefCell<BTreeSet<(String, String)>>,
    /// Open connections at their connecting end: (local, remote).
    open: RefCell<BTreeSet<(SocketAddr, SocketAddr)>>,
    /// Bound listeners: (host, port).
    listening: RefCell<BTreeSet<(String, u16)>>,
    /// Hosts whose software is down (crashed, not restarted yet).
    down: RefCell<BTreeSet<String>>,
    /// Data sent from one host to another so far.
    traffic: Cell<Traffic>,
}

/// TCP data one run's hosts sent each other: every write on a simulated connection
/// between two hosts, which turmoil sends as one segment carrying the whole buffer.
/// Handshakes, FINs and keepalive probes carry no data and are not counted; neither is
/// a host's traffic with itself (it never crosses a link).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Traffic {
    /// Bytes of data.
    pub bytes: u64,
    /// Data segments (writes).
    pub segments: u64,
}

impl Kernel {
    /// A network view for one run: nothing cut, nothing open.
    pub fn new() -> Rc<Kernel> {
        Rc::new(Kernel::default())
    }

    /// The driver cut (`true`) or repaired the directed link `from → to`.
    pub fn set_cut(&self, from: &str, to: &str, cut: bool) {
        let key = (from.to_string(), to.to_string());
        if cut {
            self.cut.borrow_mut().insert(key);
        } else {
            self.cut.borrow_mut().remove(&key);
        }
    }

    /// Whether the directed link `from → to` is cut.
    pub fn is_cut(&self, from: &str, to: &str) -> bool {
        self.cut
            .borrow()
            .contains(&(from.to_string(), to.to_string()))
    }

    /// The driver crashed (`true`) or restarted `host`.
    pub fn set_down(&self, host: &str, down: bool) {
        if down {
            self.down.borrow_mut().insert(host.to_string());
        } else {
            self.down.borrow_mut().remove(host);
        }
    }

    /// Whether `host` is crashed.
    pub fn is_down(&self, host: &str) -> bool {
        self.down.borrow().contains(host)
    }

    /// Record a listener bound on `host:port`, until the returned guard drops (keep it
    /// with the listener; a crash drops both).
    pub fn listen(self: &Rc<Kernel>, host: &str, port: u16) -> Listening {
        let key = (host.to_string(), port);
        self.listening.borrow_mut().insert(key.clone());
        Listening {
            net: self.clone(),
            key,
        }
    }

    /// Whether `host` has a listener bound on `port`.
    pub fn is_listening(&self, host: &str, port: u16) -> bool {
        self.listening.borrow().contains(&(host.to_string(), port))
    }

    /// Record an open connection at its connecting end; it stays open until the
    /// returned guard drops (drop it together with the stream).
    pub fn open(self: &Rc<Kernel>, local: SocketAddr, remote: SocketAddr) -> Open {
        self.open.borrow_mut().insert((local, remote));
        Open {
            net: self.clone(),
            key: (local, remote),
        }
    }

    /// A host sent `bytes` bytes of data, as one segment, to another.
    pub fn sent(&self, bytes: usize) {
        let t = self.traffic.get();
        self.traffic.set(Traffic {
            bytes: t.bytes + bytes as u64,
            segments: t.segments + 1,
        });
    }

    /// Everything sent between hosts so far.
    pub fn traffic(&self) -> Traffic {
        self.traffic.get()
    }

    /// Whether the connecting end `(local, remote)` still has its socket.
    pub fn is_open(&self, local: SocketAddr, remote: SocketAddr) -> bool {
        self.open.borrow().contains(&(local, remote))
    }
}

/// An open connection's entry in [`Kernel`]; removed on drop.
pub struct Open {
    net: Rc<Kernel>,
    key: (SocketAddr, SocketAddr),
}

impl Drop for Open {
    fn drop(&mut self) {
        self.net.open.borrow_mut().remove(&self.key);
    }
}

/// A bound listener's entry in [`Kernel`]; removed on drop.
pub struct Listening {
    net: Rc<Kernel>,
    key: (String, u16),
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.net.listening.borrow_mut().remove(&self.key);
    }
}
