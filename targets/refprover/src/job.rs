//! A submitted job (its result channel and timings) and the per-job partition assembler.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::watch;

use crate::proto::{await_proof_response::Status, AwaitProofResponse};

/// One submitted proof job.
pub struct Job {
    /// The caller's request id (a UUID v4 when empty). Not unique: cuzk does not deduplicate.
    pub id: String,
    /// Engine-internal unique sequence number.
    pub seq: u64,
    /// The proof kind's name, e.g. `WINDOW_POST_PARTITION`.
    pub kind: &'static str,
    pub(crate) submitted: Instant,
    started: Mutex<Option<Instant>>,
    pub(crate) srs_load_ms: AtomicU64,
    pub(crate) synthesis_ms: AtomicU64,
    pub(crate) prove_ms: AtomicU64,
    /// Partition work items of this job not yet finished (pipeline mode).
    pub(crate) pending_partitions: AtomicU64,
    pub(crate) cancelled: AtomicBool,
    /// Counted by the status gate while in progress (FAULT status-waits).
    pub(crate) gated: AtomicBool,
    result: watch::Sender<Option<AwaitProofResponse>>,
}

impl Job {
    pub(crate) fn new(id: String, seq: u64, kind: &'static str) -> Arc<Self> {
        let (tx, _rx) = watch::channel(None);
        Arc::new(Self {
            id,
            seq,
            kind,
            submitted: Instant::now(),
            started: Mutex::new(None),
            srs_load_ms: AtomicU64::new(0),
            synthesis_ms: AtomicU64::new(0),
            prove_ms: AtomicU64::new(0),
            pending_partitions: AtomicU64::new(0),
            cancelled: AtomicBool::new(false),
            gated: AtomicBool::new(false),
            result: tx,
        })
    }

    /// A receiver that sees the result once the job ends.
    pub fn subscribe(&self) -> watch::Receiver<Option<AwaitProofResponse>> {
        self.result.subscribe()
    }

    /// True once a result was delivered.
    pub fn is_done(&self) -> bool {
        self.result.borrow().is_some()
    }

    /// True once a worker picked up one of its work items.
    pub fn is_started(&self) -> bool {
        self.started.lock().expect("job lock").is_some()
    }

    pub(crate) fn mark_started(&self) {
        let mut s = self.started.lock().expect("job lock");
        if s.is_none() {
            *s = Some(Instant::now());
        }
    }

    /// Delivers the result once; later deliveries are ignored. Returns true when this call won.
    pub(crate) fn finish(&self, status: Status, proof: Vec<u8>, error: String) -> bool {
        let started = *self.started.lock().expect("job lock");
        let queue_wait_ms = started.map(|s| (s - self.submitted).as_millis() as u64).unwrap_or(0);
        let resp = AwaitProofResponse {
            job_id: self.id.clone(),
            status: status as i32,
            proof,
            error_message: error,
            queue_wait_ms,
            srs_load_ms: self.srs_load_ms.load(Ordering::Relaxed),
            synthesis_ms: self.synthesis_ms.load(Ordering::Relaxed),
            gpu_compute_ms: self.prove_ms.load(Ordering::Relaxed),
            total_ms: self.submitted.elapsed().as_millis() as u64,
        };
        self.result.send_if_modified(|slot| {
            if slot.is_some() {
                return false;
            }
            *slot = Some(resp);
            true
        })
    }
}

/// Collects the partition proofs of a job in order.
pub struct Assembler {
    slots: Mutex<Vec<Option<Vec<u8>>>>,
}

impl Assembler {
    /// An empty assembler for `partitions` partitions.
    pub fn new(partitions: usize) -> Arc<Self> {
        Arc::new(Self { slots: Mutex::new(vec![None; partitions]) })
    }

    /// Inserts partition `k`; returns the assembled proof once every slot is filled. A
    /// completed assembler stays full, so a late insert into it fails: one assembler serves one
    /// job. Errors: the slot is already filled (`partition k already inserted`, cuzk's
    /// assembler message) or out of range.
    pub fn insert(&self, k: usize, bytes: Vec<u8>) -> Result<Option<Vec<u8>>, String> {
        let mut slots = self.slots.lock().expect("assembler lock");
        match slots.get_mut(k) {
            None => return Err(format!("partition {k} out of range ({} partitions)", slots.len())),
            Some(Some(_)) => return Err(format!("partition {k} already inserted")),
            Some(slot) => *slot = Some(bytes),
        }
        if slots.iter().all(Option::is_some) {
            Ok(Some(slots.iter().flat_map(|s| s.iter().flatten().copied()).collect()))
        } else {
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assembler_orders_partitions_and_rejects_duplicates() {
        let a = Assembler::new(2);
        assert_eq!(a.insert(1, vec![2]).unwrap(), None);
        assert_eq!(a.insert(1, vec![9]).unwrap_err(), "partition 1 already inserted");
        assert_eq!(a.insert(0, vec![1]).unwrap(), Some(vec![1, 2]));
    }

    #[test]
    fn a_result_is_delivered_once() {
        let j = Job::new("a".into(), 1, "WINDOW_POST_PARTITION");
        assert!(j.finish(Status::Completed, vec![1], String::new()));
        assert!(!j.finish(Status::Failed, vec![], "late".into()));
        assert_eq!(j.subscribe().borrow().as_ref().unwrap().status, Status::Completed as i32);
    }
}
