//! A node's panic is that node's crash, not the harness's.
//!
//! A real server that panics (raft-rs's "to_commit is out of range", an `unwrap` on a
//! corrupt file) is a process that exits; a supervisor restarts it, and if the cause is
//! still there it panics again. The harness should show exactly that, and let the seed
//! finish so the checks say what it meant. So every future a node runs (its main and every
//! [`NodeCtx::spawn`](super::NodeCtx::spawn)) is polled inside `catch_unwind`: a panic is
//! handed to the node (which records it and asks for its own crash) and the future never
//! runs again. A panic anywhere else (the nemesis, turmoil, a checker) is not caught here
//! and stays a harness error.
//!
//! The default panic hook would print every caught panic to stderr, once per restart of a
//! crash-looping node; the message is in the history instead, so the hook stays quiet
//! while node code is being polled.

use std::cell::Cell;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Once;
use std::task::{Context, Poll};

/// How long a supervisor waits before it restarts a process that panicked (systemd's
/// default `RestartSec`, 100 ms).
pub(crate) const SUPERVISOR_RESTART_NS: u64 = 100_000_000;

thread_local! {
    /// Whether this thread is polling node code right now.
    static IN_NODE_CODE: Cell<bool> = const { Cell::new(false) };
}

/// Installs, once per process, a panic hook that is silent for panics in node code and
/// otherwise does what the previous hook did.
pub(crate) fn quiet_hook_for_node_panics() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_NODE_CODE.with(Cell::get) {
                previous(info);
            }
        }));
    });
}

/// A node future whose panic is handed to `on_panic` (once) instead of unwinding further.
/// Polled in place (no box of its own): it wraps every task of every node.
pub(crate) struct CrashOnPanic<F, P> {
    inner: F,
    on_panic: Option<P>,
}

impl<F, P: FnOnce(String)> CrashOnPanic<F, P> {
    /// Wrap `fut`; `on_panic` gets the panic's message.
    pub(crate) fn new(fut: F, on_panic: P) -> Self {
        CrashOnPanic {
            inner: fut,
            on_panic: Some(on_panic),
        }
    }
}

impl<F: Future, P: FnOnce(String)> Future for CrashOnPanic<F, P> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `inner` is pinned structurally: it is never moved out of `self`, there
        // is no `Drop` impl here and no `Unpin` impl beyond the auto one (which requires
        // `F: Unpin`). `on_panic` is not pinned and only taken.
        let this = unsafe { self.get_unchecked_mut() };
        // After a panic the future is broken: it waits for the crash that cancels it.
        if this.on_panic.is_none() {
            return Poll::Pending;
        }
        let inner = unsafe { Pin::new_unchecked(&mut this.inner) };
        let outer = IN_NODE_CODE.with(|f| f.replace(true));
        let polled = catch_unwind(AssertUnwindSafe(|| inner.poll(cx)));
        IN_NODE_CODE.with(|f| f.set(outer));
        match polled {
            Ok(poll) => poll,
            Err(payload) => {
                if let Some(on_panic) = this.on_panic.take() {
                    on_panic(message(payload.as_ref()));
                }
                Poll::Pending
            }
        }
    }
}

/// The text a panic carries (`panic!` gives a `&str` or a `String`).
fn message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    fn poll_once<F: Future>(f: &mut Pin<Box<F>>) -> Poll<F::Output> {
        let waker = std::task::Waker::noop();
        f.as_mut().poll(&mut Context::from_waker(waker))
    }

    #[test]
    fn a_panic_is_reported_once_and_the_future_then_waits_forever() {
        quiet_hook_for_node_panics();
        let seen = Rc::new(RefCell::new(Vec::new()));
        let s = seen.clone();
        let mut f = Box::pin(CrashOnPanic::new(
            async { panic!("to_commit 1 is out of range [last_index 0]") },
            move |m| s.borrow_mut().push(m),
        ));
        assert!(poll_once(&mut f).is_pending());
        assert!(poll_once(&mut f).is_pending());
        assert_eq!(
            *seen.borrow(),
            vec!["to_commit 1 is out of range [last_index 0]".to_string()]
        );
        assert!(!IN_NODE_CODE.with(Cell::get));
    }

    #[test]
    fn a_future_that_does_not_panic_is_untouched() {
        let mut f = Box::pin(CrashOnPanic::new(async { 7 }, |_| unreachable!()));
        assert_eq!(poll_once(&mut f), Poll::Ready(7));
    }
}
