//! Stop-the-world process pauses.
//!
//! A GC pause, a VM migration or `SIGSTOP` freezes a *whole* process: no thread runs, no
//! timer callback fires, no socket is read. When it resumes, the code carries on with
//! beliefs that may be seconds stale — the heart of Kleppmann's argument against
//! lease-based locks without fencing.
//!
//! turmoil has no host pause, so a node's top-level future and every task it spawns are
//! wrapped in [`Pausable`], which shares the node's [`PauseSwitch`]. While the switch is
//! on, a wrapped future is not polled at all; its waker is parked in the switch and woken
//! on resume. Timers that expired meanwhile then fire at once, and bytes that arrived
//! meanwhile are read then (they wait in turmoil's socket buffers).

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

#[derive(Default)]
struct PauseState {
    paused: bool,
    parked: Vec<Waker>,
}

/// The shared on/off switch of one node. Cloning shares the switch.
#[derive(Clone, Default)]
pub struct PauseSwitch(Rc<RefCell<PauseState>>);

impl PauseSwitch {
    /// A switch that starts running (not paused).
    pub fn new() -> PauseSwitch {
        PauseSwitch::default()
    }

    /// Freeze every future wrapped with this switch at its next poll.
    pub fn pause(&self) {
        self.0.borrow_mut().paused = true;
    }

    /// Unfreeze and wake every parked future.
    pub fn resume(&self) {
        let parked = {
            let mut s = self.0.borrow_mut();
            s.paused = false;
            std::mem::take(&mut s.parked)
        };
        for w in parked {
            w.wake();
        }
    }

    /// Whether the node is paused now.
    pub fn is_paused(&self) -> bool {
        self.0.borrow().paused
    }

    /// Forget parked wakers without waking them (the node crashed: its tasks are gone).
    pub fn reset(&self) {
        let mut s = self.0.borrow_mut();
        s.paused = false;
        s.parked.clear();
    }

    /// Wrap `fut` so it is not polled while this switch is on.
    pub fn wrap<F: Future>(&self, fut: F) -> Pausable<F> {
        Pausable {
            inner: Box::pin(fut),
            switch: self.clone(),
        }
    }
}

/// A future that is frozen while its [`PauseSwitch`] is on. See the module docs.
pub struct Pausable<F> {
    inner: Pin<Box<F>>,
    switch: PauseSwitch,
}

impl<F: Future> Future for Pausable<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        {
            let mut s = self.switch.0.borrow_mut();
            if s.paused {
                // A task may be woken repeatedly during a long pause (timers, sockets):
                // park each distinct waker once.
                if !s.parked.iter().any(|w| w.will_wake(cx.waker())) {
                    s.parked.push(cx.waker().clone());
                }
                return Poll::Pending;
            }
        }
        self.inner.as_mut().poll(cx)
    }
}

/// A future that returns `Pending` once (waking itself) and then `Ready`: lets a
/// [`Pausable`] wrapper see a pause that the wrapped code itself just switched on.
pub(crate) struct YieldNow(bool);

impl YieldNow {
    pub(crate) fn new() -> YieldNow {
        YieldNow(false)
    }
}

impl Future for YieldNow {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::time::Duration;

    /// A timer armed before a pause fires only after the pause ends, at once.
    #[test]
    fn paused_node_timers_fire_only_after_resume() {
        let mut sim = turmoil::Builder::new()
            .simulation_duration(Duration::from_secs(5))
            .build();
        let switch = PauseSwitch::new();
        let fired_at = Rc::new(Cell::new(None));
        let (s, f) = (switch.clone(), fired_at.clone());
        sim.client(
            "node",
            s.wrap(async move {
                tokio::time::sleep(Duration::from_millis(200)).await;
                f.set(Some(turmoil::sim_elapsed().unwrap()));
                Ok(())
            }),
        );
        for _ in 0..150 {
            sim.step().unwrap();
        }
        switch.pause();
        for _ in 0..1000 {
            sim.step().unwrap();
            assert_eq!(fired_at.get(), None, "timer fired during the pause");
        }
        switch.resume();
        sim.step().unwrap();
        let at = fired_at.get().expect("fired right after resume");
        // Resumed before tick 1151 ran: the overdue timer fires at the start of that tick.
        assert_eq!(at, Duration::from_millis(1150));
    }

    /// Parking the same waker repeatedly does not grow the parked list.
    #[test]
    fn parks_each_waker_once() {
        let switch = PauseSwitch::new();
        switch.pause();
        let mut fut = switch.wrap(std::future::ready(7));
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        for _ in 0..10 {
            assert!(Pin::new(&mut fut).poll(&mut cx).is_pending());
        }
        assert_eq!(switch.0.borrow().parked.len(), 1);
        switch.resume();
        assert_eq!(Pin::new(&mut fut).poll(&mut cx), Poll::Ready(7));
    }
}
