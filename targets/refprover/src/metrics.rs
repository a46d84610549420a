//! Prometheus text metrics with cuzk's names (docs/cuzk-interface.md).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Counters and duration sums, rendered by `render`.
#[derive(Default)]
pub struct Metrics {
    pub completed: AtomicU64,
    pub failed: AtomicU64,
    pub running: AtomicU64,
    /// proof kind -> (count, sum of seconds)
    durations: Mutex<BTreeMap<String, (u64, f64)>>,
}

impl Metrics {
    /// Records one completed proof's duration in seconds.
    pub fn observe_duration(&self, kind: &str, seconds: f64) {
        let mut d = self.durations.lock().expect("metrics lock");
        let e = d.entry(kind.to_string()).or_insert((0, 0.0));
        e.0 += 1;
        e.1 += seconds;
    }

    /// Prometheus exposition text; `queue_depth` = pending work items.
    pub fn render(&self, queue_depth: u32) -> String {
        let mut out = String::new();
        let c = |n: &AtomicU64| n.load(Ordering::Relaxed);
        let _ = writeln!(out, "# TYPE cuzk_proofs_completed_total counter\ncuzk_proofs_completed_total {}", c(&self.completed));
        let _ = writeln!(out, "# TYPE cuzk_proofs_failed_total counter\ncuzk_proofs_failed_total {}", c(&self.failed));
        let _ = writeln!(out, "# TYPE cuzk_queue_depth gauge\ncuzk_queue_depth {queue_depth}");
        let _ = writeln!(out, "# TYPE cuzk_running_jobs gauge\ncuzk_running_jobs {}", c(&self.running));
        let _ = writeln!(out, "# TYPE cuzk_proof_duration_seconds summary");
        for (kind, (count, sum)) in self.durations.lock().expect("metrics lock").iter() {
            let _ = writeln!(out, "cuzk_proof_duration_seconds_count{{proof_kind=\"{kind}\"}} {count}");
            let _ = writeln!(out, "cuzk_proof_duration_seconds_sum{{proof_kind=\"{kind}\"}} {sum:.6}");
        }
        out
    }
}
