//! What client crates that require `Send` need to run on a node: a connector whose
//! streams are `Send` ([`SendTcp`], for redis-rs and the like), an executor that spawns
//! through the node ([`SendExecutor`], for hyper and tonic), and a gRPC channel for tonic
//! clients and etcd-client ([`SendGrpcChannel`]). Each is a [`ThreadPinned`] wrapper
//! around the node's own (`Rc`-based) version: a simulation runs on one thread.

use super::connector::Connector;
use super::grpc::{BoxError, Deadlines, GrpcChannel};
use super::live::{NetStream, Tcp};
use super::thread_pinned::ThreadPinned;
use crate::sim::{Elapsed, LocalBoxFuture, NodeCtx};
use std::future::Future;
use std::io;
use std::task::{Context, Poll};
use std::time::Duration;
use tower_service::Service;

/// A connected stream that is `Send`: simulated TCP in a simulation, loopback in a live
/// run ([`Tcp`]'s), usable only on the simulation's thread.
pub type SendStream = ThreadPinned<NetStream>;

/// [`Tcp`], with streams that are `Send` ([`SendStream`]) for crates that require it
/// (redis-rs's `MultiplexedConnection::new_with_config`). The connect deadline is on the
/// node's local clock, as with [`Tcp`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendTcp;

impl Connector for SendTcp {
    type Stream = SendStream;

    fn connect<'a>(
        &'a self,
        ctx: &'a NodeCtx,
        host: &'a str,
        port: u16,
        deadline: Duration,
    ) -> LocalBoxFuture<'a, Result<io::Result<SendStream>, Elapsed>> {
        Box::pin(async move {
            let stream = Tcp.connect(ctx, host, port, deadline).await?;
            Ok(stream.map(ThreadPinned::new))
        })
    }
}

/// An executor that spawns through a node ([`NodeCtx::spawn`]): tasks freeze when the
/// node is paused and die when it crashes. `Send`, `Sync` and `Clone`, as hyper's and
/// tonic's executors must be; for a crate's own background tasks use [`spawn`](Self::spawn).
#[derive(Clone)]
pub struct SendExecutor {
    ctx: ThreadPinned<NodeCtx>,
}

impl SendExecutor {
    /// An executor spawning on the node of `ctx`.
    pub fn new(ctx: &NodeCtx) -> SendExecutor {
        SendExecutor {
            ctx: ThreadPinned::new(ctx.clone()),
        }
    }

    /// Spawn `fut` on the node, detached (it still pauses and dies with the node).
    pub fn spawn<F: Future + 'static>(&self, fut: F) {
        drop(self.ctx.get().spawn(fut));
    }
}

impl<F: Future + 'static> hyper::rt::Executor<F> for SendExecutor {
    fn execute(&self, fut: F) {
        self.spawn(fut);
    }
}

/// A gRPC channel that is `Send + Sync`, for tonic's generated clients and etcd-client
/// (its `raw-channel` custom channel): a node's [`GrpcChannel`] (one HTTP/2 connection,
/// opened on first use and again after a failure or a missed deadline, its tasks spawned
/// through the node), pinned to the simulation's thread.
#[derive(Clone)]
pub struct SendGrpcChannel {
    channel: ThreadPinned<GrpcChannel>,
}

impl SendGrpcChannel {
    /// A channel from the node of `ctx` to `host:port` with `deadlines`.
    pub fn new(ctx: &NodeCtx, host: &str, port: u16, deadlines: Deadlines) -> SendGrpcChannel {
        let channel = GrpcChannel::with_deadlines(ctx.clone(), host, port, deadlines);
        SendGrpcChannel {
            channel: ThreadPinned::new(channel),
        }
    }

    /// The node's channel inside.
    pub fn channel(&self) -> &GrpcChannel {
        self.channel.get()
    }
}

/// A [`SendGrpcChannel`] call's future.
pub type SendCall =
    ThreadPinned<LocalBoxFuture<'static, Result<http::Response<tonic::body::Body>, BoxError>>>;

impl Service<http::Request<tonic::body::Body>> for SendGrpcChannel {
    // tonic's body, as etcd-client's custom channel wants; generated clients take any.
    type Response = http::Response<tonic::body::Body>;
    type Error = BoxError;
    type Future = SendCall;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.channel.get_mut().poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> SendCall {
        let call = self.channel.get_mut().call(req);
        ThreadPinned::new(Box::pin(async move {
            Ok(call.await?.map(tonic::body::Body::new))
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Recorder;
    use crate::sim::NodeState;
    use std::cell::Cell;
    use std::rc::Rc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn assert_send_sync<T: Send + Sync>(_: &T) {}

    /// A task started through the hyper executor freezes with its node's pause (the
    /// reason it spawns through the node); a `Send` stream carries bytes to an echo
    /// server.
    #[test]
    fn the_executor_s_tasks_freeze_with_a_pause_and_the_send_stream_carries_bytes() {
        let mut sim = turmoil::Builder::new().build();
        sim.host("echo-0", || async {
            let listener = turmoil::net::TcpListener::bind(("0.0.0.0", 7000)).await?;
            let (mut s, _) = listener.accept().await?;
            let mut buf = [0u8; 5];
            s.read_exact(&mut buf).await?;
            s.write_all(&buf).await?;
            std::future::pending::<()>().await;
            Ok(())
        });
        sim.client("client-0", async {
            let state = Rc::new(NodeState::new("client-0", 1));
            let ctx = NodeCtx::new(state.clone(), Recorder::new());
            // A ticking task, as hyper's connection drivers are long-lived: started by
            // the executor, it must freeze while the node is paused.
            let ticks = Rc::new(Cell::new(0u32));
            let exec = SendExecutor::new(&ctx);
            assert_send_sync(&exec);
            let (count, tick_ctx) = (ticks.clone(), ctx.clone());
            hyper::rt::Executor::execute(&exec, async move {
                loop {
                    count.set(count.get() + 1);
                    tick_ctx.sleep(Duration::from_millis(1)).await;
                }
            });
            tokio::time::sleep(Duration::from_millis(10)).await;
            assert!(ticks.get() > 0, "the executor's task did not run");
            state.pause.pause();
            let frozen_at = ticks.get();
            tokio::time::sleep(Duration::from_millis(10)).await;
            assert_eq!(
                ticks.get(),
                frozen_at,
                "a pause did not freeze the executor's task"
            );
            state.pause.resume();
            tokio::time::sleep(Duration::from_millis(10)).await;
            assert!(
                ticks.get() > frozen_at,
                "the executor's task did not resume"
            );

            let mut stream = SendTcp
                .connect(&ctx, "echo-0", 7000, Duration::from_secs(1))
                .await
                .expect("connected in time")?;
            assert_send_sync(&stream);
            stream.write_all(b"hello").await?;
            let mut back = [0u8; 5];
            stream.read_exact(&mut back).await?;
            assert_eq!(&back, b"hello");
            Ok(())
        });
        sim.run().unwrap();
    }
}
