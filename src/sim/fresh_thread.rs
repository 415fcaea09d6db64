//! Each seed on a thread of its own, so it starts from fresh thread-local state.
//!
//! A client library may keep thread-locals: a connection-id counter, a cached
//! connection, a lazily seeded RNG. On one thread, a sweep's seeds would inherit them
//! from whatever seeds ran before, and a seed's history would depend on the sweep it ran
//! in. A thread costs tens of microseconds; a seed, milliseconds at least.

/// The stack of a run's thread: as a process's main thread gets (a test thread gets
/// 2 MiB, which Lua scripts and deep futures can outgrow).
const RUN_STACK: usize = 8 << 20;

/// Run `f` on a new thread, with the caller's tracing dispatcher if it has one (a test's
/// scoped subscriber still sees the run); a panic in `f` is resumed on the caller's
/// thread.
pub(crate) fn on_fresh_thread<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    let scoped = scoped_dispatch();
    let name = std::thread::current().name().unwrap_or("run").to_string();
    std::thread::scope(|scope| {
        let thread = std::thread::Builder::new()
            .name(name)
            .stack_size(RUN_STACK)
            .spawn_scoped(scope, move || match scoped {
                Some(dispatch) => tracing::dispatcher::with_default(&dispatch, f),
                None => f(),
            })
            .unwrap_or_else(|e| panic!("cannot start a run's thread: {e}"));
        match thread.join() {
            Ok(out) => out,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// The caller's dispatcher, unless there is none. Setting a scoped dispatcher when none
/// is needed is not free: while any is set, every tracing callsite (turmoil has one on
/// each segment) looks up the thread's dispatcher.
fn scoped_dispatch() -> Option<tracing::Dispatch> {
    tracing::dispatcher::get_default(|d| {
        (!d.is::<tracing::subscriber::NoSubscriber>()).then(|| d.clone())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        static CALLS: Cell<u32> = const { Cell::new(0) };
    }

    fn count() -> u32 {
        CALLS.with(|c| {
            c.set(c.get() + 1);
            c.get()
        })
    }

    #[test]
    fn each_call_sees_fresh_thread_locals() {
        assert_eq!(on_fresh_thread(count), 1);
        assert_eq!(on_fresh_thread(count), 1);
    }

    #[test]
    fn a_panic_reaches_the_caller() {
        let caught = std::panic::catch_unwind(|| on_fresh_thread(|| panic!("inside")));
        let panic = caught.unwrap_err();
        assert_eq!(panic.downcast_ref::<&str>(), Some(&"inside"));
    }
}
