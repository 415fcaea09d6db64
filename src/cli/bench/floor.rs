//! The raw turmoil floor: an empty simulation with a scenario's hosts, tick and duration,
//! what turmoil itself charges per host per tick. `bench` divides the harness's time by
//! it; `report` prints the machine's floor beside its own time, so a report's minutes on
//! one machine can be compared with another's.

use std::time::{Duration, Instant};

/// Run an empty turmoil simulation of `hosts` for `duration_ms` (seeded by `seed`, which
/// only turmoil's own draws see).
pub(crate) fn raw_floor(hosts: &[String], duration_ms: u64, seed: u64) {
    let mut sim = turmoil::Builder::new()
        .simulation_duration(Duration::from_millis(duration_ms + 1000))
        .tick_duration(crate::sim::TICK)
        .rng_seed(seed)
        .build();
    for h in hosts {
        sim.host(h.as_str(), || async {
            std::future::pending::<()>().await;
            Ok(())
        });
    }
    while sim.elapsed() < Duration::from_millis(duration_ms) {
        sim.step().expect("idle hosts do not fail");
    }
}

/// Host-ticks per wall second this machine's turmoil floor runs now, on one thread: the
/// best of three short runs of 7 hosts for 2 simulated seconds (about a tenth of a
/// second each), so a busy moment lowers it less.
pub(crate) fn host_ticks_per_s() -> f64 {
    let hosts: Vec<String> = (0..7).map(|i| format!("h{i}")).collect();
    let ms = 2000;
    let ticks = (hosts.len() as u64 * ms / crate::sim::TICK.as_millis() as u64) as f64;
    (0..3)
        .map(|seed| {
            let start = Instant::now();
            raw_floor(&hosts, ms, seed);
            ticks / start.elapsed().as_secs_f64()
        })
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_floor_is_a_positive_rate() {
        assert!(super::host_ticks_per_s() > 0.0);
    }
}
