//! `bench`'s checker lines: the linearizability engine on generated hard histories.

/// The linearizability checker on generated cas-register histories of 10,000 operations:
/// the corrupted twin (one read no order can explain) and the linearizable one, for 20 to
/// 50 processes; the corrupted ones again without the pre-pass (the search and its
/// windows alone); and a changed read the pre-pass cannot refute.
pub(super) fn bench_checker(opts: &crate::linearizability::CheckOptions) {
    use crate::linearizability::generate::{time_cas_check, time_changed_read_check};
    for procs in [20, 30, 40, 50] {
        for linearizable in [false, true] {
            println!(
                "{}",
                time_cas_check(1, 10_000, procs, linearizable, opts).line()
            );
        }
    }
    let no_prepass = crate::linearizability::CheckOptions {
        prepass: false,
        ..*opts
    };
    for procs in [30, 40, 50] {
        let m = time_cas_check(1, 10_000, procs, false, &no_prepass);
        println!("{} (without the pre-pass)", m.line());
    }
    // Operation 4278 reads 2; read 1 it is a violation only a search can find (see the
    // sweep in `window_tests.rs`).
    let m = time_changed_read_check(1, 10_000, 40, (4278, 1), opts);
    println!("{} (one read changed: 4278 reads 1)", m.line());
}
