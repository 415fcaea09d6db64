//! The `[faults]` table of a scenario: the random nemesis's specs (one per fault kind,
//! node selectors not yet resolved) and the explicit `[[faults.at]]` schedule.

use super::{RawSelector, Selector};
use crate::key_error::KeyError;
use crate::locks::param::Range;
use crate::sim::{FaultPoint, Schedule};
use serde::Deserialize;

/// `[faults].pause`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseSpec<S = Selector> {
    /// Nodes that may be paused.
    pub nodes: S,
    /// Pause length, true ms.
    pub duration_ms: Range<u64>,
    /// Where the pause strikes (default `anywhere`).
    #[serde(default)]
    pub at: FaultPoint,
}

/// `[faults].partition`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartitionSpec<S = Selector> {
    /// Nodes that may be cut off (a random non-empty subset of them, from everyone else).
    pub nodes: S,
    /// How long until heal, ms.
    pub duration_ms: Range<u64>,
    /// Drop only traffic from the cut-off side [false].
    #[serde(default)]
    pub oneway: bool,
}

/// `[faults].clock`: each clock fault draws one of the given sub-kinds.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockSpec<S = Selector> {
    /// Nodes whose clocks may be disturbed.
    pub nodes: S,
    /// Set the wall clock this far off true time.
    pub skew_ms: Option<Range<i64>>,
    /// Set the drift rate (both clocks).
    pub drift_ppm: Option<Range<i64>>,
    /// Step the wall clock by this much.
    pub jump_ms: Option<Range<i64>>,
}

/// `[faults].crash`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashSpec<S = Selector> {
    /// Nodes that may crash.
    pub nodes: S,
    /// Down time before the restart, ms.
    pub down_ms: Range<u64>,
    /// Where the crash strikes (default `anywhere`).
    #[serde(default)]
    pub at: FaultPoint,
}

/// `[faults].disk-stall`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskStallSpec<S = Selector> {
    /// Nodes whose disk may stall (those of them with a disk).
    pub nodes: S,
    /// Stall length, true ms.
    pub duration_ms: Range<u64>,
}

/// `[faults]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Faults {
    /// Gap between random faults, ms [[500, 3000]].
    pub interval_ms: Range<u64>,
    /// Each seed enables a random non-empty subset of the kinds below [false].
    pub swarm: bool,
    /// Random pauses.
    pub pause: Option<PauseSpec>,
    /// Random partitions.
    pub partition: Option<PartitionSpec>,
    /// Random clock faults.
    pub clock: Option<ClockSpec>,
    /// Random crashes.
    pub crash: Option<CrashSpec>,
    /// Random disk stalls.
    pub disk_stall: Option<DiskStallSpec>,
    /// Explicit schedule: the `[[faults.at]]` entries, in file order.
    pub at: Schedule,
}

/// The most random faults a run may draw: one every 100 ms over the longest (one-hour)
/// run. A run keeps every fault it applies (its events in the history, its entry in the
/// applied schedule that replay and shrink need), so without a bound a fault every
/// millisecond for an hour grew past 2.9 GB; at this bound an hour stays near a
/// fault-free hour's memory.
pub const MAX_RANDOM_FAULTS: u64 = 36_000;

impl Faults {
    /// No faults at all.
    pub fn none() -> Faults {
        Faults {
            interval_ms: DEFAULT_INTERVAL_MS,
            swarm: false,
            pause: None,
            partition: None,
            clock: None,
            crash: None,
            disk_stall: None,
            at: Schedule::new(),
        }
    }

    /// Whether any random fault kind is configured.
    pub fn any_random(&self) -> bool {
        self.pause.is_some()
            || self.partition.is_some()
            || self.clock.is_some()
            || self.crash.is_some()
            || self.disk_stall.is_some()
    }
}

/// Refuse a random nemesis that could draw more than [`MAX_RANDOM_FAULTS`] in
/// `duration_ms`: with gaps of at least `interval_ms[0]`, it draws at most
/// `duration_ms / interval_ms[0]`.
pub(super) fn check_density(
    interval_ms: Range<u64>,
    any_random: bool,
    duration_ms: u64,
) -> Result<(), KeyError> {
    let gap = interval_ms[0].max(1);
    let most = duration_ms / gap;
    if !any_random || most <= MAX_RANDOM_FAULTS {
        return Ok(());
    }
    Err(KeyError::new("faults.interval_ms", format!(
            "a minimum gap of {gap} ms lets the random nemesis draw up to {most} faults in {duration_ms} ms, but at most {MAX_RANDOM_FAULTS} are accepted per run (one every 100 ms for an hour); raise the minimum gap to at least {} ms or shorten the run",
            duration_ms.div_ceil(MAX_RANDOM_FAULTS)
        )))
}

/// `[faults]` as written: explicit entries keep their spans for messages.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFaults {
    pub(super) interval_ms: Option<Range<u64>>,
    pub(super) swarm: Option<bool>,
    pub(super) pause: Option<PauseSpec<RawSelector>>,
    pub(super) partition: Option<PartitionSpec<RawSelector>>,
    pub(super) clock: Option<ClockSpec<RawSelector>>,
    pub(super) crash: Option<CrashSpec<RawSelector>>,
    #[serde(rename = "disk-stall")]
    pub(super) disk_stall: Option<DiskStallSpec<RawSelector>>,
    #[serde(default)]
    pub(super) at: Vec<toml::Spanned<toml::Table>>,
}

/// The default gap between random faults, ms.
pub(super) const DEFAULT_INTERVAL_MS: Range<u64> = Range([500, 3000]);

impl RawFaults {
    /// Whether any random fault kind is configured.
    pub(super) fn any_random(&self) -> bool {
        self.pause.is_some()
            || self.partition.is_some()
            || self.clock.is_some()
            || self.crash.is_some()
            || self.disk_stall.is_some()
    }
}

impl Default for RawFaults {
    fn default() -> Self {
        toml::from_str("").expect("defaults parse")
    }
}
