//! The first-run artifact: after the daemon's first COMPLETED proof, a circuit summary
//! (`circuits.json`: the circuits whose SRS it loaded, with their sizes and load times) is
//! written once into `<temp dir>/refprover/` (`$TMPDIR`, else `/tmp`: a tmpfs in refprover's
//! read-only containers, the process's private dir on the process runtime). It stands in for
//! cuzk's pre-compiled constraint evaluator (PCE), which cuzk extracts during its first proof
//! and saves beside the param cache (curio extern/cuzk/cuzk-core/src/pipeline.rs,
//! `PceCache::insert_blocking`): what a first run must leave behind, which proofdiff's
//! `warmup/first-run-artifacts` checks. A failed first proof writes nothing, as a failed cuzk
//! warmup extracts nothing. FAULT no-first-run-artifact: nothing is ever written.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

/// The file's path: `<temp dir>/refprover/circuits.json`.
pub fn artifact_path() -> PathBuf {
    std::env::temp_dir().join("refprover").join("circuits.json")
}

/// Writes the summary once per daemon (the first call that gets here wins).
#[derive(Debug, Default)]
pub struct FirstRun {
    done: AtomicBool,
}

impl FirstRun {
    /// Writes `circuits` (circuit id, SRS size in bytes, load time in ms) as JSON to
    /// [`artifact_path`] on the first call; later calls do nothing. A write error is logged,
    /// never fatal: the proof is already done.
    pub fn record(&self, circuits: &[(String, u64, u64)]) {
        self.record_to(&artifact_path(), circuits);
    }

    /// [`FirstRun::record`] into `path`.
    pub fn record_to(&self, path: &std::path::Path, circuits: &[(String, u64, u64)]) {
        if self.done.swap(true, Ordering::SeqCst) {
            return;
        }
        let body = serde_json::json!({
            "circuits": circuits.iter().map(|(id, size, ms)| serde_json::json!(
                {"circuit_id": id, "size_bytes": size, "load_ms": ms})).collect::<Vec<_>>(),
        });
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(path, body.to_string()));
        match written {
            Ok(()) => tracing::info!(path = %path.display(), circuits = circuits.len(), "first-run artifact written"),
            Err(e) => tracing::warn!(path = %path.display(), error = %e, "first-run artifact not written"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_once() {
        let dir = std::env::temp_dir().join(format!("refprover-first-run-test-{}", std::process::id()));
        let path = dir.join("refprover").join("circuits.json");
        let f = FirstRun::default();
        f.record_to(&path, &[("c1".into(), 10, 2)]);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"circuit_id\":\"c1\""), "{text}");
        std::fs::remove_file(&path).unwrap();
        f.record_to(&path, &[("c2".into(), 10, 2)]);
        assert!(!path.exists(), "a second call writes nothing");
        std::fs::remove_dir_all(dir).unwrap();
        assert!(artifact_path().ends_with("refprover/circuits.json"));
    }
}
