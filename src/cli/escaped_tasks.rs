//! The warning `run`, `replay` and `shrink` print when node code started tasks outside its node
//! context (`tokio::spawn`): a pause does not freeze them. It changes no verdict.

use crate::sweep::SeedOutcome;
use std::collections::BTreeMap;

/// Per node, the most tasks seen alive at once outside its node context over the seeds,
/// and the first seed where any were.
#[derive(Default)]
pub(super) struct EscapedTasks(BTreeMap<String, (usize, u64)>);

impl EscapedTasks {
    /// Count one seed's escaped tasks.
    pub(super) fn add(&mut self, o: &SeedOutcome) {
        self.add_run(o.seed, &o.escaped_tasks);
    }

    /// Count one run's escaped tasks (node → the most alive at once).
    pub(super) fn add_run(&mut self, seed: u64, escaped: &BTreeMap<String, usize>) {
        for (node, &n) in escaped {
            let e = self.0.entry(node.clone()).or_insert((0, seed));
            e.0 = e.0.max(n);
            e.1 = e.1.min(seed);
        }
    }

    /// Print the warning to stderr, if any task escaped.
    pub(super) fn warn(&self) {
        if let Some(warning) = self.warning() {
            eprintln!("{warning}");
        }
    }

    /// The warning to print, if any task escaped.
    fn warning(&self) -> Option<String> {
        if self.0.is_empty() {
            return None;
        }
        let nodes: Vec<String> = self
            .0
            .iter()
            .map(|(node, (n, seed))| format!("{node} (up to {n} at once; seed {seed})"))
            .collect();
        Some(format!(
            "locksim: WARNING: tasks escaped the node context on {}: code there (a library, \
             typically) started them with `tokio::spawn`, so a pause does not freeze them. \
             Spawn through NodeCtx::spawn, or give the library an executor that does.",
            nodes.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warning_names_each_node_with_its_first_seed() {
        let mut e = EscapedTasks::default();
        assert_eq!(e.warning(), None);
        let seed = |seed, n| SeedOutcome {
            seed,
            history_hash: String::new(),
            events: 0,
            sim_s: 0.0,
            checks: Vec::new(),
            error: None,
            acquire_errors: None,
            metrics: None,
            escaped_tasks: BTreeMap::from([("client-0".to_string(), n)]),
        };
        e.add(&seed(7, 2));
        e.add(&seed(3, 1));
        let w = e.warning().unwrap();
        assert!(w.contains("client-0 (up to 2 at once; seed 3)"), "{w}");
    }
}
