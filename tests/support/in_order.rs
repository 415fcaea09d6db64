//! The sections of a differential test that must run once each, in one order, on one
//! pair of servers: each starts from the state the earlier ones left (ids, revisions and
//! zxids are compared as they are), yet each is reported by a test of its own. The first
//! test that asks for section `n` runs every section up to `n` that has not run yet;
//! the others find their outcome recorded. A section's `run` catches its own panics, so
//! one section that fails does not keep the later ones from running.

use std::sync::{Mutex, PoisonError};

/// Sections run so far on one runner (the servers and the clients' state), in order.
pub struct InOrder<R, O> {
    runner: Option<R>,
    outcomes: Vec<O>,
}

impl<R, O: Clone> InOrder<R, O> {
    /// Nothing started, nothing run.
    pub const fn new() -> Self {
        InOrder {
            runner: None,
            outcomes: Vec::new(),
        }
    }

    /// The outcome of section `index` of `this`: runs the sections before it that have not
    /// run (starting the runner with `start` first), then it, each with `run`.
    pub fn outcome(
        this: &Mutex<Self>,
        index: usize,
        start: impl FnOnce() -> R,
        mut run: impl FnMut(&mut R, usize) -> O,
    ) -> O {
        // A test that panicked here (its server did not start) leaves nothing half done.
        let mut me = this.lock().unwrap_or_else(PoisonError::into_inner);
        let me = &mut *me;
        let runner = me.runner.get_or_insert_with(start);
        while me.outcomes.len() <= index {
            let next = me.outcomes.len();
            me.outcomes.push(run(runner, next));
        }
        me.outcomes[index].clone()
    }
}

/// The message of a caught panic.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}
