//! A real server that many tests share lives until the test process ends. A `static` is
//! never dropped, so the server's handle is given to [`keep_until_exit`] instead, which
//! drops it (the server is killed and its folder removed) from an `atexit` handler: when
//! libtest's `main` returns and when it calls `process::exit` after a failure alike. A
//! process killed outright leaves the server to its watchdog (`watchdog.rs`). Either
//! way no server outlives the test binary (`live` tests look for leftovers).

use std::sync::{Mutex, Once, PoisonError};

/// The handles kept so far, dropped at exit.
static KEPT: Mutex<Vec<Box<dyn Send>>> = Mutex::new(Vec::new());

/// Keeps `server` (a handle whose drop stops the server) until the process exits.
pub fn keep_until_exit<T: Send + 'static>(server: T) {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        // SAFETY: `drop_kept` is a plain `extern "C" fn()`; atexit only stores it.
        let status = unsafe { libc::atexit(drop_kept) };
        assert_eq!(
            status, 0,
            "atexit refused the handler that stops shared servers"
        );
    });
    let mut kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
    kept.push(Box::new(server));
}

/// Drops every kept handle (their `Drop`s kill and reap the servers; they do not panic).
extern "C" fn drop_kept() {
    let kept = std::mem::take(&mut *KEPT.lock().unwrap_or_else(PoisonError::into_inner));
    drop(kept);
}
