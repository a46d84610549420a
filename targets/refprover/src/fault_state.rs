//! State that five fault switches keep (crate::faults), each latent in a monolithic bench config
//! and triggered by the partitioned pipeline (or its in-flight limit) of a prod one:
//!
//! * `retain-witness`: a retry cache of every proved partition's witness, never evicted
//!   ([`RetryCache`]): memory that grows with the jobs served.
//! * `serialize-partitions`: one partition of a job at a time (crate::engine's queue).
//! * `compute-micros`: a partition's proving time added in microseconds (crate::engine).
//! * `status-waits`: the status snapshot waits until no partitioned job is in progress
//!   ([`StatusGate`]): GetStatus and `/status` answer only when the pipeline drains.
//! * `early-release`: the in-flight slot given back once the item is handed to a worker, before
//!   its proof (crate::engine's worker loop).

use std::collections::HashMap;
use std::sync::Mutex;

use storage_proofs_core::parameter_cache::Bls12GrothParams;
use tokio::sync::watch;

/// Bytes of one field element (a BLS12-381 scalar) in an assignment.
const SCALAR_BYTES: usize = 32;

/// Bytes of a partition's synthesized witness as bellperson's `ProvingAssignment` holds it:
/// the A, B and C evaluations (one scalar per constraint, the constraint count being the
/// domain's size: `h` has one element fewer) and the auxiliary assignment (one scalar per
/// variable: one `l` element each).
pub fn witness_bytes(groth: &Bls12GrothParams) -> usize {
    (3 * (groth.h.len() + 1) + groth.l.len()) * SCALAR_BYTES
}

/// FAULT retain-witness: a retry cache keyed by request id and partition that keeps each
/// proved partition's witness (touched, so it is resident) so that a failed partition could be
/// proved again without synthesis; nothing ever evicts it.
#[derive(Default)]
pub struct RetryCache {
    entries: Mutex<HashMap<(String, usize), Vec<u8>>>,
}

impl RetryCache {
    /// Keeps `bytes` bytes for partition `k` of request `id` (a retried id replaces its entry).
    pub fn keep(&self, id: &str, k: usize, bytes: usize, fill: u8) {
        let witness = vec![fill | 1; bytes];
        std::hint::black_box(&witness);
        self.entries.lock().expect("retry cache lock").insert((id.to_string(), k), witness);
    }

    /// Bytes held.
    pub fn held(&self) -> usize {
        self.entries.lock().expect("retry cache lock").values().map(Vec::len).sum()
    }
}

/// FAULT status-waits: counts the partitioned jobs in progress; a status snapshot waits for
/// the count to reach zero ("a consistent view of the assembler table").
pub struct StatusGate {
    busy: watch::Sender<usize>,
}

impl Default for StatusGate {
    fn default() -> Self {
        Self { busy: watch::channel(0).0 }
    }
}

impl StatusGate {
    /// One more partitioned job in progress.
    pub fn enter(&self) {
        self.busy.send_modify(|n| *n += 1);
    }

    /// One partitioned job ended.
    pub fn leave(&self) {
        self.busy.send_modify(|n| *n = n.saturating_sub(1));
    }

    /// Waits until no partitioned job is in progress.
    pub async fn drained(&self) {
        let mut rx = self.busy.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_cache_keeps_every_partition_and_replaces_a_retried_id() {
        let c = RetryCache::default();
        c.keep("a", 0, 100, 7);
        c.keep("a", 1, 100, 7);
        c.keep("b", 0, 100, 7);
        assert_eq!(c.held(), 300);
        c.keep("a", 0, 50, 7);
        assert_eq!(c.held(), 250);
    }

    #[tokio::test]
    async fn the_status_gate_opens_when_the_pipeline_drains() {
        let g = std::sync::Arc::new(StatusGate::default());
        g.drained().await; // nothing in progress: at once
        g.enter();
        g.enter();
        let waiter = {
            let g = std::sync::Arc::clone(&g);
            tokio::spawn(async move { g.drained().await })
        };
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        g.leave();
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        g.leave();
        tokio::time::timeout(std::time::Duration::from_secs(2), waiter).await.unwrap().unwrap();
    }
}
