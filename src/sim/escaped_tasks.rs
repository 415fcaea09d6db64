//! Tasks that escaped the node context.
//!
//! turmoil runs each host on a tokio runtime of its own, and runs the host's code (and
//! every [`NodeCtx::spawn`](super::NodeCtx::spawn)) on that runtime's `LocalSet`, wrapped
//! in the node's pause switch. A task a library starts with `tokio::spawn` lands on the
//! runtime itself, outside the switch: a pause does not freeze it, so the simulated
//! process is not stopped the way a real one is.
//!
//! The runtime counts its own tasks (`RuntimeMetrics::num_alive_tasks`) and not the
//! `LocalSet`'s, so that count *is* the number of escaped tasks. It is sampled whenever
//! a node task is polled (an atomic load), and the most seen at once is kept. It only
//! observes: nothing here changes what runs, or when.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

/// The most escaped tasks seen alive at once on one node. Cloning shares the count.
#[derive(Clone, Default)]
pub(crate) struct EscapedTasks(Rc<Cell<usize>>);

impl EscapedTasks {
    /// Wrap `fut` so each poll samples the runtime's task count.
    pub(crate) fn watch<F: Future>(&self, fut: F) -> Watched<F> {
        Watched {
            inner: Box::pin(fut),
            seen: self.clone(),
        }
    }

    /// The most seen at once so far.
    pub(crate) fn most(&self) -> usize {
        self.0.get()
    }

    fn sample(&self) {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let alive = runtime.metrics().num_alive_tasks();
            self.0.set(self.0.get().max(alive));
        }
    }
}

/// A future that samples its node's escaped tasks at every poll.
pub(crate) struct Watched<F> {
    inner: Pin<Box<F>>,
    seen: EscapedTasks,
}

impl<F: Future> Future for Watched<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.seen.sample();
        self.inner.as_mut().poll(cx)
    }
}
