//! [`ThreadPinned`]: a value that crates requiring `Send` (redis-rs's connections,
//! tonic's and hyper's executors) can hold although it is node state built on `Rc`.
//!
//! A simulation runs every host on the one thread that called [`crate::run`] (turmoil
//! polls them in turn), so a node's streams, tasks and context never leave it. The
//! wrapper states that to the type system and checks it at run time: every use of the
//! inner value — a poll, a borrow, its drop — first checks that it happens on the
//! thread that made the wrapper, and panics with a clear message if not. No value is
//! ever touched from two threads, which is what `Send` and `Sync` must guarantee.

use std::fmt;
use std::future::Future;
use std::io;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::thread::{self, ThreadId};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A value usable only on the thread that made it, but `Send` and `Sync`: every access
/// checks the thread and panics elsewhere. For node state (`Rc`-based) handed to a crate
/// whose bounds ask for `Send`, within one simulation (one thread).
///
/// ```
/// use locksim::plugin::ThreadPinned;
/// fn needs_send<T: Send + Sync>(_: &T) {}
/// let shared = ThreadPinned::new(std::rc::Rc::new(7));
/// needs_send(&shared);
/// assert_eq!(**shared.get(), 7);
/// ```
pub struct ThreadPinned<T> {
    value: ManuallyDrop<T>,
    thread: ThreadId,
}

// SAFETY: the value is reached only through `get`, `get_mut`, `pinned` and `drop`, each
// of which first checks that the caller runs on `thread`, the thread that made the
// wrapper; so the value is only ever used on one thread, whatever thread holds the
// wrapper.
unsafe impl<T> Send for ThreadPinned<T> {}
// SAFETY: as for `Send`: a shared reference reaches the value only through `get`.
unsafe impl<T> Sync for ThreadPinned<T> {}

impl<T> ThreadPinned<T> {
    /// `value`, pinned to the current thread.
    pub fn new(value: T) -> ThreadPinned<T> {
        ThreadPinned {
            value: ManuallyDrop::new(value),
            thread: thread::current().id(),
        }
    }

    /// Whether the current thread is the one this value belongs to.
    pub fn is_home(&self) -> bool {
        thread::current().id() == self.thread
    }

    fn check(&self) {
        assert!(
            self.is_home(),
            "a ThreadPinned value (node state: {}) was used off the thread of its \
             simulation; a simulation's tasks must run on its own thread \
             (NodeCtx::spawn, not tokio::spawn on a multi-threaded runtime)",
            std::any::type_name::<T>()
        );
    }

    /// The value. Panics off its thread.
    pub fn get(&self) -> &T {
        self.check();
        &self.value
    }

    /// The value, mutably. Panics off its thread.
    pub fn get_mut(&mut self) -> &mut T {
        self.check();
        &mut self.value
    }

    /// The value, pinned. Panics off its thread.
    pub fn pinned(self: Pin<&mut Self>) -> Pin<&mut T> {
        self.check();
        // SAFETY: structural pinning: `value` is never moved out of a pinned wrapper
        // (there is no `into_inner` on a pin, and `drop` drops it in place).
        unsafe { self.map_unchecked_mut(|s| &mut *s.value) }
    }

    /// The value back. Panics off its thread.
    pub fn into_inner(self) -> T {
        self.check();
        let mut this = ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again.
        unsafe { ManuallyDrop::take(&mut this.value) }
    }
}

impl<T> Drop for ThreadPinned<T> {
    fn drop(&mut self) {
        if self.is_home() {
            // SAFETY: dropped once, here.
            unsafe { ManuallyDrop::drop(&mut self.value) }
        } else if !thread::panicking() {
            // Leaked, not dropped off its thread; the panic says where it went.
            self.check();
        }
    }
}

impl<T: Clone> Clone for ThreadPinned<T> {
    fn clone(&self) -> ThreadPinned<T> {
        ThreadPinned::new(self.get().clone())
    }
}

impl<T> fmt::Debug for ThreadPinned<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPinned")
            .field("type", &std::any::type_name::<T>())
            .field("thread", &self.thread)
            .finish()
    }
}

impl<F: Future> Future for ThreadPinned<F> {
    type Output = F::Output;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.pinned().poll(cx)
    }
}

impl<T: AsyncRead> AsyncRead for ThreadPinned<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.pinned().poll_read(cx, buf)
    }
}

impl<T: AsyncWrite> AsyncWrite for ThreadPinned<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.pinned().poll_write(cx, buf)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.pinned().poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.pinned().poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    #[test]
    fn usable_on_its_own_thread() {
        let mut pinned = ThreadPinned::new(Rc::new(1));
        *Rc::get_mut(pinned.get_mut()).unwrap() += 1;
        assert_eq!(*pinned.clone().into_inner(), 2);
    }

    #[test]
    fn a_use_off_its_thread_panics_and_the_value_is_not_dropped_there() {
        let dropped = Rc::new(());
        let pinned = ThreadPinned::new(Rc::clone(&dropped));
        let err = thread::spawn(move || {
            let _ = pinned.get();
        })
        .join()
        .unwrap_err();
        let text = err.downcast_ref::<String>().unwrap();
        assert!(text.contains("off the thread of its simulation"), "{text}");
        // The Rc inside was leaked on the other thread, never dropped there.
        assert_eq!(Rc::strong_count(&dropped), 2);
    }
}
