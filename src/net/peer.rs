//! Server-to-server messaging for replicated families (a ZooKeeper ensemble's Raft
//! messages and session touches; written to serve a Raft family's `raft-N` nodes too).
//!
//! Each server keeps a [`Mesh`]: one bounded outbox per peer and one sender task per peer
//! (like etcd's rafthttp pipeline). A sender takes up to [`PEER_BATCH`] queued messages,
//! sends them as one frame and waits for the receiver's empty acknowledgement frame;
//! the acknowledgement's deadline is how a sender notices a connection wedged by a
//! partition (turmoil's TCP has no retransmission) and replaces it. A batch that is not
//! acknowledged is lost: the protocols above retransmit (Raft does). A full outbox drops
//! new messages, as etcd does.
//!
//! The receiving side is [`serve_peers`]: the shared accept loop with a handler called
//! once per message, in order. Messages are opaque bytes; a family tags its own kinds.

use super::frame::{encode_frame, FrameTooLarge, Frames};
use super::remote::Remote;
use super::server::serve;
use crate::sim::NodeCtx;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Duration;
use tokio::sync::Notify;

/// Messages a peer's outbox holds before new ones are dropped.
pub(crate) const PEER_QUEUE: usize = 1024;
/// Messages sent in one batch at most.
pub(crate) const PEER_BATCH: usize = 256;

struct Inner {
    outbox: RefCell<Vec<VecDeque<Vec<u8>>>>,
    ready: Vec<Notify>,
}

/// A server's outboxes, one per peer index. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Mesh(Rc<Inner>);

impl Mesh {
    /// Outboxes for `peers` peers (indices `0..peers`; a node's own index stays unused).
    pub(crate) fn new(peers: usize) -> Mesh {
        Mesh(Rc::new(Inner {
            outbox: RefCell::new(vec![VecDeque::new(); peers]),
            ready: (0..peers).map(|_| Notify::new()).collect(),
        }))
    }

    /// Queue `msg` for peer `to`. Returns false if it was dropped (full outbox or unknown
    /// peer).
    pub(crate) fn send(&self, to: usize, msg: Vec<u8>) -> bool {
        let mut outbox = self.0.outbox.borrow_mut();
        let Some(q) = outbox.get_mut(to) else {
            return false;
        };
        if q.len() >= PEER_QUEUE {
            return false;
        }
        q.push_back(msg);
        self.0.ready[to].notify_one();
        true
    }

    /// Start one sender task per peer: peer `i` is `hosts[i]` on `port` (skipping index
    /// `me`); each batch's acknowledgement must arrive within `timeout` of local time.
    pub(crate) fn spawn_senders(
        &self,
        ctx: &NodeCtx,
        me: usize,
        hosts: &[String],
        port: u16,
        timeout: Duration,
    ) {
        for (i, host) in hosts.iter().enumerate() {
            if i != me {
                ctx.spawn(sender(
                    ctx.clone(),
                    self.clone(),
                    i,
                    host.clone(),
                    port,
                    timeout,
                ));
            }
        }
    }

    fn take_batch(&self, to: usize) -> Option<Vec<u8>> {
        let mut outbox = self.0.outbox.borrow_mut();
        let q = &mut outbox[to];
        if q.is_empty() {
            return None;
        }
        let n = q.len().min(PEER_BATCH);
        let mut batch = Vec::new();
        for m in q.drain(..n) {
            push_message(&mut batch, &m);
        }
        Some(batch)
    }
}

async fn sender(ctx: NodeCtx, mesh: Mesh, to: usize, host: String, port: u16, timeout: Duration) {
    // Simulated TCP in a simulation, loopback in a live run (`locksim serve`).
    let mut remote = Remote::with_connector(&host, port, timeout, Frames, super::Tcp);
    loop {
        let Some(batch) = mesh.take_batch(to) else {
            mesh.0.ready[to].notified().await;
            continue;
        };
        let mut frame = Vec::with_capacity(batch.len() + 4);
        encode_frame(&batch, &mut frame);
        if remote.request(&ctx, &frame).await.is_err() {
            // Lost with its batch. Pause before the next connect: a refused turmoil
            // connect retried at once spins (and leaks an ephemeral port per try).
            ctx.sleep(timeout).await;
        }
    }
}

/// Accept peers on `port` forever; `handler` gets each message of each batch, in order.
pub(crate) async fn serve_peers<H>(ctx: NodeCtx, port: u16, handler: H)
where
    H: Fn(&NodeCtx, &[u8]) + Clone + 'static,
{
    serve(
        ctx,
        port,
        Frames,
        move |ctx: &NodeCtx, req: Result<Vec<u8>, FrameTooLarge>, out: &mut Vec<u8>| {
            if let Ok(batch) = req {
                for msg in split_batch(&batch) {
                    handler(ctx, msg);
                }
            }
            encode_frame(b"", out);
        },
    )
    .await
}

/// Append one message (4-byte big-endian length, then its bytes) to a batch.
pub(crate) fn push_message(batch: &mut Vec<u8>, msg: &[u8]) {
    let len = u32::try_from(msg.len()).expect("peer messages are smaller than 4 GiB");
    batch.extend_from_slice(&len.to_be_bytes());
    batch.extend_from_slice(msg);
}

/// Split a batch into its messages; a torn batch yields its whole messages.
pub(crate) fn split_batch(mut payload: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while payload.len() >= 4 {
        let len = u32::from_be_bytes(payload[..4].try_into().expect("4 bytes")) as usize;
        let Some(msg) = payload.get(4..4 + len) else {
            break;
        };
        out.push(msg);
        payload = &payload[4 + len..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_round_trip_and_outboxes_are_bounded() {
        let mut b = Vec::new();
        push_message(&mut b, b"abc");
        push_message(&mut b, b"");
        push_message(&mut b, b"de");
        assert_eq!(split_batch(&b), vec![&b"abc"[..], b"", b"de"]);
        assert_eq!(split_batch(&b[..b.len() - 1]), vec![&b"abc"[..], b""]);

        let mesh = Mesh::new(2);
        for _ in 0..PEER_QUEUE {
            assert!(mesh.send(1, vec![1]));
        }
        assert!(!mesh.send(1, vec![1]), "a full outbox drops");
        assert!(!mesh.send(5, vec![1]), "no such peer");
        let batch = mesh.take_batch(1).unwrap();
        assert_eq!(split_batch(&batch).len(), PEER_BATCH);
        assert!(mesh.take_batch(0).is_none());
    }
}
