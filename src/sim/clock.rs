//! Per-node clocks: an offset, a drift rate and wall-clock steps, over true time.
//!
//! Real machines have two clocks and real lock code confuses them:
//!
//! * the **monotonic** clock (`CLOCK_MONOTONIC`, `Instant`) never steps, but runs fast or
//!   slow by the oscillator's drift (tens of ppm on healthy hardware, far more under
//!   faulty NTP slewing). `mono(t) = m₀ + (1 + drift) × (t − t₀)`, piecewise linear in
//!   true time `t` so that changing the drift never makes the clock jump.
//! * the **wall** clock (`CLOCK_REALTIME`, `SystemTime`) is the monotonic reading plus an
//!   offset that NTP, an operator or a VM migration can *step* at any moment, forwards or
//!   backwards. Redis expires keys by comparing absolute wall-clock deadlines with
//!   `mstime()`, so a forward step expires keys early (antirez, "Is Redlock safe?").
//!
//! All arithmetic is integer nanoseconds so a run is identical on every machine.

use crate::history::names;

/// The fixed wall-clock epoch of every simulation: 2026-01-01T00:00:00Z in ns since the
/// Unix epoch. Never `SystemTime::now()`: the run must not depend on when it ran.
pub const EPOCH_NS: i64 = 1_767_225_600_000_000_000;

/// One node's clock. All readings are functions of the simulator's true time.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Clock {
    /// True time (ns since run start) of the start of the current drift segment.
    base_true_ns: u64,
    /// Monotonic reading at `base_true_ns`.
    base_mono_ns: i64,
    /// Current drift in parts per million: +100 runs 100 µs per second fast.
    drift_ppm: i64,
    /// Wall clock minus (epoch + monotonic), changed by skews and jumps.
    wall_offset_ns: i64,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new(0, 0)
    }
}

impl Clock {
    /// A clock whose wall reading is `skew_ns` off true time and which drifts by `drift_ppm`.
    ///
    /// # Panics
    /// If `drift_ppm <= -1_000_000` (a clock that stops or runs backwards); scenario
    /// validation rejects such values before a run starts.
    pub fn new(skew_ns: i64, drift_ppm: i64) -> Clock {
        assert!(drift_ppm > -1_000_000, "drift must be > -1e6 ppm");
        Clock {
            base_true_ns: 0,
            base_mono_ns: 0,
            drift_ppm,
            wall_offset_ns: skew_ns,
        }
    }

    /// Monotonic reading (ns) at true time `true_ns`.
    pub fn mono_ns(&self, true_ns: u64) -> i64 {
        let dt = true_ns.saturating_sub(self.base_true_ns) as i128;
        let local = dt * (1_000_000 + self.drift_ppm as i128) / 1_000_000;
        self.base_mono_ns + local as i64
    }

    /// Wall-clock reading (ns since the Unix epoch) at true time `true_ns`.
    pub fn wall_ns(&self, true_ns: u64) -> i64 {
        EPOCH_NS + self.mono_ns(true_ns) + self.wall_offset_ns
    }

    /// Wall-clock reading in ms since the Unix epoch (what Redis's `mstime()` returns).
    pub fn wall_ms(&self, true_ns: u64) -> i64 {
        self.wall_ns(true_ns).div_euclid(1_000_000)
    }

    /// How far the wall clock is ahead of true time (ns), at true time `true_ns`.
    pub fn wall_error_ns(&self, true_ns: u64) -> i64 {
        self.wall_ns(true_ns) - EPOCH_NS - true_ns as i64
    }

    /// Current drift in ppm.
    pub fn drift_ppm(&self) -> i64 {
        self.drift_ppm
    }

    /// Change the drift from true time `true_ns` on, without a discontinuity.
    pub fn set_drift(&mut self, true_ns: u64, drift_ppm: i64) {
        assert!(drift_ppm > -1_000_000, "drift must be > -1e6 ppm");
        self.base_mono_ns = self.mono_ns(true_ns);
        self.base_true_ns = true_ns;
        self.drift_ppm = drift_ppm;
    }

    /// Step the wall clock by `delta_ns` (an NTP step or an operator's `date -s`). The
    /// monotonic clock is unaffected.
    pub fn jump(&mut self, delta_ns: i64) {
        self.wall_offset_ns += delta_ns;
    }

    /// Set the wall clock to be `skew_ns` off true time at true time `true_ns`.
    pub fn skew(&mut self, true_ns: u64, skew_ns: i64) {
        let current = self.wall_error_ns(true_ns);
        self.wall_offset_ns += skew_ns - current;
    }

    /// True duration that elapses while this clock's monotonic reading advances by
    /// `local_ns` at the current drift, rounded up so a local timer never fires early.
    pub fn true_duration_ns(&self, local_ns: u64) -> u64 {
        let rate = (1_000_000 + self.drift_ppm) as u128;
        ((local_ns as u128 * 1_000_000).div_ceil(rate)) as u64
    }
}

/// A clock fault as it strikes one node: the nemesis's `clock-jump`, `skew` and `drift`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClockChange {
    /// Step the wall clock.
    Jump {
        /// Step, ns.
        delta_ns: i64,
    },
    /// Set the wall clock this far from true time.
    Skew {
        /// Offset, ns.
        skew_ns: i64,
    },
    /// Set the drift.
    Drift {
        /// Drift, ppm.
        ppm: i64,
    },
}

impl ClockChange {
    /// Apply it to `clock` at true time `true_ns`; returns the history event's `f` and
    /// `value`.
    pub fn apply(self, clock: &mut Clock, true_ns: u64) -> (&'static str, serde_json::Value) {
        use serde_json::json;
        match self {
            ClockChange::Jump { delta_ns } => {
                clock.jump(delta_ns);
                let err = clock.wall_error_ns(true_ns);
                let value =
                    json!({"delta_ms": delta_ns as f64 / 1e6, "wall_error_ms": err as f64 / 1e6});
                (names::CLOCK_JUMP, value)
            }
            ClockChange::Skew { skew_ns } => {
                clock.skew(true_ns, skew_ns);
                (names::SKEW, json!({"skew_ms": skew_ns as f64 / 1e6}))
            }
            ClockChange::Drift { ppm } => {
                clock.set_drift(true_ns, ppm);
                (names::DRIFT, json!({"drift_ppm": ppm}))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn perfect_clock_tracks_true_time() {
        let c = Clock::default();
        assert_eq!(c.mono_ns(5 * S), 5 * S as i64);
        assert_eq!(c.wall_ns(5 * S), EPOCH_NS + 5 * S as i64);
        assert_eq!(c.wall_error_ns(5 * S), 0);
    }

    #[test]
    fn drift_math() {
        // +10_000 ppm = 1 % fast: 10 true seconds read as 10.1 s.
        let c = Clock::new(0, 10_000);
        assert_eq!(c.mono_ns(10 * S), 10_100_000_000);
        // A local 1.01 s sleep takes exactly 1 true second.
        assert_eq!(c.true_duration_ns(1_010_000_000), S);
        // Slow clock: -500_000 ppm runs at half speed, so local 1 s takes 2 true s.
        let slow = Clock::new(0, -500_000);
        assert_eq!(slow.true_duration_ns(S), 2 * S);
        // Rounding never makes a timer fire early.
        let odd = Clock::new(0, 3);
        let d = odd.true_duration_ns(999_999_999);
        assert!(odd.mono_ns(d) >= 999_999_999);
    }

    #[test]
    fn changing_drift_is_continuous() {
        let mut c = Clock::new(0, 100_000);
        let before = c.mono_ns(2 * S);
        c.set_drift(2 * S, -100_000);
        assert_eq!(c.mono_ns(2 * S), before);
        assert_eq!(c.mono_ns(3 * S), before + 900_000_000);
    }

    #[test]
    fn jumps_move_wall_not_mono() {
        let mut c = Clock::default();
        c.jump(-3 * S as i64);
        assert_eq!(c.mono_ns(S), S as i64);
        assert_eq!(c.wall_error_ns(S), -3 * S as i64);
        c.skew(S, 250);
        assert_eq!(c.wall_error_ns(S), 250);
        assert_eq!(c.wall_ms(0), (EPOCH_NS + 250) / 1_000_000);
    }

    #[test]
    fn wall_ms_floors_before_epoch_offsets() {
        let mut c = Clock::default();
        c.jump(-1); // 1 ns before a millisecond boundary floors down
        assert_eq!(c.wall_ms(0), EPOCH_NS / 1_000_000 - 1);
    }
}
