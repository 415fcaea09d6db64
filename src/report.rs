//! What locksim reports beyond one run's table: counterexample stories (text) and
//! timelines (SVG), and the guarantees matrix that compares algorithms.

mod story;
mod timeline;

pub use story::{describe, event_line, explain, ms, wall_clock};
pub use timeline::timeline_svg;
