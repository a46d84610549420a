//! The proving engine: a job table, a work queue and a pool of proving worker threads.
//!
//! Monolithic mode (`pipeline.enabled = false`) queues one work item per job and proves all its
//! partitions in one batch. Pipeline mode queues one work item per partition; a per-job
//! assembler collects the partition proofs, then an optional self-check verifies the whole proof.
//! Fault switches (crate::faults) bend exactly these mechanisms; each is marked `FAULT` below.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bellperson::groth16::PreparedVerifyingKey;
use blstrs::Bls12;
use filecoin_proofs::{ChallengeSeed, FallbackPoStSectorProof, ProverId};
use tokio::sync::watch;

use crate::config::Config;
use crate::faults::Faults;
use crate::metrics::Metrics;
use crate::proto::{await_proof_response::Status, AwaitProofResponse, ProofKind, SubmitProofRequest};
use crate::{params, wpost};

/// How long a worker in the `partition-race` fault keeps its result in the shared scratch buffer
/// before reading it back (the race window), in ms: any worker finishing meanwhile overwrites it.
/// Partition proofs on 2 cores finish seconds apart, so the window must span seconds to make the
/// race as reliable as the production incident (every partition invalid); it is bounded, so a
/// lone worker never hangs.
const RACE_WINDOW_MS: u64 = 3000;

/// One submitted proof job.
pub struct Job {
    /// The caller's request id (a UUID v4 when empty). Not unique: cuzk does not deduplicate.
    pub id: String,
    /// Engine-internal unique sequence number.
    pub seq: u64,
    submitted: Instant,
    started: Mutex<Option<Instant>>,
    srs_load_ms: AtomicU64,
    synthesis_ms: AtomicU64,
    prove_ms: AtomicU64,
    /// Partition work items of this job not yet finished (pipeline mode).
    pending_partitions: AtomicU64,
    cancelled: AtomicBool,
    result: watch::Sender<Option<AwaitProofResponse>>,
}

impl Job {
    fn new(id: String, seq: u64) -> Arc<Self> {
        let (tx, _rx) = watch::channel(None);
        Arc::new(Self {
            id,
            seq,
            submitted: Instant::now(),
            started: Mutex::new(None),
            srs_load_ms: AtomicU64::new(0),
            synthesis_ms: AtomicU64::new(0),
            prove_ms: AtomicU64::new(0),
            pending_partitions: AtomicU64::new(0),
            cancelled: AtomicBool::new(false),
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

    fn mark_started(&self) {
        let mut s = self.started.lock().expect("job lock");
        if s.is_none() {
            *s = Some(Instant::now());
        }
    }

    /// Delivers the result once; later deliveries are ignored. Returns true when this call won.
    fn finish(&self, status: Status, proof: Vec<u8>, error: String) -> bool {
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
struct Assembler {
    slots: Mutex<Vec<Option<Vec<u8>>>>,
}

impl Assembler {
    fn new(partitions: usize) -> Arc<Self> {
        Arc::new(Self { slots: Mutex::new(vec![None; partitions]) })
    }

    /// Inserts partition `k`; returns the assembled proof once every slot is filled.
    /// Errors: the slot is already filled (`partition k already inserted`).
    fn insert(&self, k: usize, bytes: Vec<u8>) -> Result<Option<Vec<u8>>, String> {
        let mut slots = self.slots.lock().expect("assembler lock");
        match slots.get_mut(k) {
            None => return Err(format!("partition {k} out of range ({} partitions)", slots.len())),
            Some(Some(_)) => return Err(format!("partition {k} already inserted")),
            Some(slot) => *slot = Some(bytes),
        }
        if slots.iter().all(Option::is_some) {
            Ok(Some(slots.iter_mut().flat_map(|s| s.take().unwrap_or_default()).collect()))
        } else {
            Ok(None)
        }
    }
}

/// The public inputs of a WindowPoSt job (for the self-check).
struct WpostJob {
    randomness: ChallengeSeed,
    prover_id: ProverId,
    miner_id: u64,
    sectors: Vec<(u64, [u8; 32])>,
}

enum Work {
    /// Monolithic: all partitions of a job in one batch.
    Whole { vanilla: Vec<FallbackPoStSectorProof<wpost::Tree>> },
    /// Pipeline: one partition, delivered to an assembler.
    Partition {
        k: usize,
        vanilla: Vec<FallbackPoStSectorProof<wpost::Tree>>,
        assembler: Arc<Assembler>,
        /// Set when the assembler is shared by request id (FAULT shared-assembler).
        shared_key: Option<String>,
    },
}

struct WorkItem {
    job: Arc<Job>,
    inputs: Arc<WpostJob>,
    work: Work,
}

#[derive(Default)]
struct Queue {
    items: VecDeque<WorkItem>,
    in_progress: u32,
    shutdown: bool,
}

/// SRS (params) state of one circuit.
#[derive(Debug, Clone)]
pub struct SrsEntry {
    pub circuit_id: String,
    pub size_bytes: u64,
    pub load_ms: u64,
}

/// The engine shared by the gRPC service and the workers.
pub struct Engine {
    pub config: Config,
    pub faults: Faults,
    pub ignored_keys: Vec<String>,
    pub metrics: Metrics,
    pub started: Instant,
    next_seq: AtomicU64,
    queue: Mutex<Queue>,
    queue_cv: Condvar,
    /// Unclaimed jobs submitted through SubmitProof, by request id (oldest first).
    table: Mutex<HashMap<String, VecDeque<Arc<Job>>>>,
    /// FAULT shared-assembler: assemblers keyed by request id, without a duplicate guard.
    shared_assemblers: Mutex<HashMap<String, Arc<Assembler>>>,
    /// FAULT partition-race: one scratch buffer shared by all workers (generation, bytes).
    scratch: Mutex<(u64, Vec<u8>)>,
    scratch_cv: Condvar,
    srs: Mutex<HashMap<String, SrsEntry>>,
    vk: OnceLock<PreparedVerifyingKey<Bls12>>,
}

impl Engine {
    /// Creates the engine and starts `synthesis.partition_workers` worker threads.
    pub fn start(config: Config, faults: Faults, ignored_keys: Vec<String>) -> Arc<Self> {
        let workers = config.synthesis.partition_workers.max(1);
        let engine = Arc::new(Self {
            config,
            faults,
            ignored_keys,
            metrics: Metrics::default(),
            started: Instant::now(),
            next_seq: AtomicU64::new(1),
            queue: Mutex::new(Queue::default()),
            queue_cv: Condvar::new(),
            table: Mutex::new(HashMap::new()),
            shared_assemblers: Mutex::new(HashMap::new()),
            scratch: Mutex::new((0, Vec::new())),
            scratch_cv: Condvar::new(),
            srs: Mutex::new(HashMap::new()),
            vk: OnceLock::new(),
        });
        for w in 0..workers {
            let e = Arc::clone(&engine);
            std::thread::Builder::new()
                .name(format!("prover-{w}"))
                .spawn(move || e.worker_loop(w))
                .expect("spawn worker thread");
        }
        engine
    }

    /// Stops the workers after their current item.
    pub fn shutdown(&self) {
        self.queue.lock().expect("queue lock").shutdown = true;
        self.queue_cv.notify_all();
    }

    /// Submits a request. Bad input does not fail the call: the job ends FAILED with the
    /// reason, like cuzk. `register` puts the job in the AwaitProof table.
    pub fn submit(&self, req: SubmitProofRequest, register: bool) -> (Arc<Job>, u32) {
        let id = if req.request_id.is_empty() { uuid::Uuid::new_v4().to_string() } else { req.request_id.clone() };
        let job = Job::new(id.clone(), self.next_seq.fetch_add(1, Ordering::Relaxed));
        if register {
            self.table.lock().expect("table lock").entry(id.clone()).or_default().push_back(Arc::clone(&job));
        }
        self.metrics.running.fetch_add(1, Ordering::Relaxed);
        match self.plan(&job, req) {
            Ok(items) => {
                let mut q = self.queue.lock().expect("queue lock");
                let position = q.items.len() as u32;
                q.items.extend(items);
                drop(q);
                self.queue_cv.notify_all();
                tracing::info!(job_id = %job.id, seq = job.seq, "job queued");
                (job, position)
            }
            Err(e) => {
                self.end(&job, Status::Failed, Vec::new(), e);
                (job, 0)
            }
        }
    }

    /// Oldest unclaimed job with this id.
    pub fn lookup(&self, id: &str) -> Option<Arc<Job>> {
        self.table.lock().expect("table lock").get(id).and_then(|q| q.front().cloned())
    }

    /// Removes a job from the AwaitProof table once its result was handed out.
    pub fn claim(&self, job: &Arc<Job>) {
        let mut t = self.table.lock().expect("table lock");
        if let Some(q) = t.get_mut(&job.id) {
            q.retain(|j| j.seq != job.seq);
            if q.is_empty() {
                t.remove(&job.id);
            }
        }
    }

    /// Cancels the oldest unfinished job with this id. Returns (found, was_running).
    pub fn cancel(&self, id: &str) -> (bool, bool) {
        let Some(job) = self.lookup(id) else { return (false, false) };
        let was_running = job.started.lock().expect("job lock").is_some();
        job.cancelled.store(true, Ordering::Relaxed);
        self.end(&job, Status::Cancelled, Vec::new(), "cancelled by CancelProof".into());
        (true, was_running)
    }

    /// (pending, in_progress) work items.
    pub fn queue_depth(&self) -> (u32, u32) {
        let q = self.queue.lock().expect("queue lock");
        (q.items.len() as u32, q.in_progress)
    }

    /// Loaded SRS entries.
    pub fn srs_entries(&self) -> Vec<SrsEntry> {
        self.srs.lock().expect("srs lock").values().cloned().collect()
    }

    /// Loads a circuit's params if not loaded. Returns (already_loaded, load_ms).
    /// Errors: missing or unreadable params (the message names the path and the fix).
    pub fn ensure_srs(&self, circuit_id: &str) -> Result<(bool, u64), String> {
        let mut srs = self.srs.lock().expect("srs lock");
        if srs.contains_key(circuit_id) {
            return Ok((true, 0));
        }
        let (load_ms, size_bytes) = params::load(circuit_id).map_err(|e| format!("{e:#}"))?;
        tracing::info!(circuit_id, load_ms, size_bytes, "SRS loaded");
        srs.insert(circuit_id.into(), SrsEntry { circuit_id: circuit_id.into(), size_bytes, load_ms });
        Ok((false, load_ms))
    }

    /// Forgets a loaded circuit. Returns (was_loaded, freed_bytes).
    pub fn evict_srs(&self, circuit_id: &str) -> (bool, u64) {
        match self.srs.lock().expect("srs lock").remove(circuit_id) {
            Some(e) => (true, e.size_bytes),
            None => (false, 0),
        }
    }

    fn plan(&self, job: &Arc<Job>, req: SubmitProofRequest) -> Result<Vec<WorkItem>, String> {
        let synth_start = Instant::now();
        let kind = ProofKind::try_from(req.proof_kind).unwrap_or(ProofKind::Unspecified);
        if kind != ProofKind::WindowPostPartition {
            return Err(format!(
                "proof kind {} is not supported by this refprover build (supported: WINDOW_POST_PARTITION)",
                kind.as_str_name()
            ));
        }
        if req.sector_size != wpost::SECTOR_SIZE {
            return Err(format!("sector size {} not supported: refprover proves 2 KiB (2048) sectors", req.sector_size));
        }
        let randomness = wpost::randomness(&req.randomness).map_err(|e| e.to_string())?;
        let vanilla = wpost::decode_vanilla(&req.vanilla_proofs).map_err(|e| format!("{e:#}"))?;
        let inputs = Arc::new(WpostJob {
            randomness,
            prover_id: wpost::prover_id(req.miner_id),
            miner_id: req.miner_id,
            sectors: vanilla.iter().map(|v| (u64::from(v.sector_id), <[u8; 32]>::from(v.comm_r))).collect(),
        });
        let items = if !self.config.pipeline.enabled {
            vec![WorkItem { job: Arc::clone(job), inputs, work: Work::Whole { vanilla } }]
        } else {
            let parts = wpost::split_partitions(vanilla);
            let shared = self.faults.on("shared-assembler");
            let assembler = if shared {
                // FAULT shared-assembler: keyed by request id, no duplicate guard.
                Arc::clone(self.shared_assemblers.lock().expect("assemblers lock").entry(job.id.clone()).or_insert_with(|| Assembler::new(parts.len())))
            } else {
                Assembler::new(parts.len())
            };
            job.pending_partitions.store(parts.len() as u64, Ordering::Relaxed);
            parts
                .into_iter()
                .enumerate()
                .map(|(k, vanilla)| WorkItem {
                    job: Arc::clone(job),
                    inputs: Arc::clone(&inputs),
                    work: Work::Partition { k, vanilla, assembler: Arc::clone(&assembler), shared_key: shared.then(|| job.id.clone()) },
                })
                .collect()
        };
        job.synthesis_ms.fetch_add(synth_start.elapsed().as_millis() as u64, Ordering::Relaxed);
        Ok(items)
    }

    fn worker_loop(&self, worker: usize) {
        loop {
            let item = {
                let mut q = self.queue.lock().expect("queue lock");
                loop {
                    if q.shutdown {
                        return;
                    }
                    if let Some(item) = q.items.pop_front() {
                        q.in_progress += 1;
                        break item;
                    }
                    q = self.queue_cv.wait(q).expect("queue lock");
                }
            };
            self.run_item(worker, item);
            self.queue.lock().expect("queue lock").in_progress -= 1;
        }
    }

    fn run_item(&self, worker: usize, item: WorkItem) {
        let WorkItem { job, inputs, work } = item;
        if job.cancelled.load(Ordering::Relaxed) || job.is_done() && !matches!(work, Work::Partition { .. }) {
            return;
        }
        job.mark_started();
        let srs_start = Instant::now();
        if let Err(e) = self.ensure_srs(wpost::CIRCUIT_ID) {
            self.end(&job, Status::Failed, Vec::new(), format!("SRS load failed: {e}"));
            return;
        }
        job.srs_load_ms.fetch_max(srs_start.elapsed().as_millis() as u64, Ordering::Relaxed);
        match work {
            Work::Whole { vanilla } => {
                let t = Instant::now();
                let res = wpost::prove_all(&inputs.randomness, inputs.prover_id, vanilla);
                job.prove_ms.fetch_add(t.elapsed().as_millis() as u64, Ordering::Relaxed);
                match res {
                    Ok(proof) => self.end(&job, Status::Completed, proof, String::new()),
                    Err(e) => self.end(&job, Status::Failed, Vec::new(), format!("WindowPoSt proving failed: {e:#}")),
                }
            }
            Work::Partition { k, vanilla, assembler, shared_key } => {
                tracing::debug!(job_id = %job.id, seq = job.seq, partition = k, worker, "partition start");
                let t = Instant::now();
                let res = wpost::prove_partition(&inputs.randomness, inputs.prover_id, vanilla, k);
                job.prove_ms.fetch_add(t.elapsed().as_millis() as u64, Ordering::Relaxed);
                let outcome = match res {
                    Ok(bytes) => {
                        let bytes = self.through_scratch(bytes);
                        assembler.insert(k, bytes).map_err(|e| format!("assembler for job {}: {e}", job.id))
                    }
                    Err(e) => Err(format!("WindowPoSt partition {k} proving failed: {e:#}")),
                };
                let left = job.pending_partitions.fetch_sub(1, Ordering::AcqRel) - 1;
                match outcome {
                    Ok(Some(proof)) => {
                        if let Some(key) = shared_key {
                            self.shared_assemblers.lock().expect("assemblers lock").remove(&key);
                        }
                        self.complete_assembled(&job, &inputs, proof);
                    }
                    Ok(None) if left == 0 => {
                        // Only reachable when another job filled our assembler (shared-assembler).
                        self.end(&job, Status::Failed, Vec::new(), format!(
                            "assembler for job {} did not complete: its partitions went to another job with the same id", job.id));
                    }
                    Ok(None) => {}
                    Err(e) => self.end(&job, Status::Failed, Vec::new(), e),
                }
            }
        }
    }

    /// FAULT partition-race: with more than one worker, a finished partition proof goes
    /// through one scratch buffer shared by every worker; a worker reads back whatever the last
    /// writer left there. Without the fault (or with one worker) the bytes pass through untouched.
    fn through_scratch(&self, bytes: Vec<u8>) -> Vec<u8> {
        if !(self.faults.on("partition-race") && self.config.synthesis.partition_workers > 1) {
            return bytes;
        }
        let mut s = self.scratch.lock().expect("scratch lock");
        s.0 += 1;
        let my_gen = s.0;
        s.1 = bytes;
        self.scratch_cv.notify_all();
        let (s, _) = self
            .scratch_cv
            .wait_timeout_while(s, Duration::from_millis(RACE_WINDOW_MS), |s| s.0 == my_gen)
            .expect("scratch lock");
        s.1.clone()
    }

    fn complete_assembled(&self, job: &Arc<Job>, inputs: &WpostJob, proof: Vec<u8>) {
        if self.config.pipeline.self_check && !self.faults.on("no-self-check") {
            match self.self_check(inputs, &proof) {
                Ok(bad) if bad.is_empty() => {}
                Ok(bad) => {
                    return self.end(job, Status::Failed, Vec::new(), format!(
                        "WindowPoSt proof self-check failed: assembled proof did not verify (partitions {bad:?} invalid, miner={})",
                        inputs.miner_id));
                }
                Err(e) => return self.end(job, Status::Failed, Vec::new(), format!("WindowPoSt proof self-check error: {e}")),
            }
        }
        self.end(job, Status::Completed, proof, String::new());
    }

    /// Returns the indices of partitions that do not verify.
    fn self_check(&self, inputs: &WpostJob, proof: &[u8]) -> Result<Vec<usize>, String> {
        let vk = match self.vk.get() {
            Some(vk) => vk,
            None => {
                let vk = params::window_post_vk().map_err(|e| format!("{e:#}"))?;
                self.vk.get_or_init(|| vk)
            }
        };
        let verdicts = wpost::verify_partitions(vk, &inputs.randomness, inputs.prover_id, &inputs.sectors, proof)
            .map_err(|e| format!("{e:#}"))?;
        Ok(verdicts.iter().enumerate().filter(|(_, ok)| !**ok).map(|(k, _)| k).collect())
    }

    fn end(&self, job: &Arc<Job>, status: Status, proof: Vec<u8>, error: String) {
        if !error.is_empty() {
            tracing::warn!(job_id = %job.id, seq = job.seq, status = status.as_str_name(), error = %error, "job ended");
        }
        if job.finish(status, proof, error) {
            self.metrics.running.fetch_sub(1, Ordering::Relaxed);
            let total = job.submitted.elapsed().as_secs_f64();
            match status {
                Status::Completed => {
                    self.metrics.completed.fetch_add(1, Ordering::Relaxed);
                    self.metrics.observe_duration("WINDOW_POST_PARTITION", total);
                    tracing::info!(job_id = %job.id, seq = job.seq, total_ms = (total * 1000.0) as u64, "job completed");
                }
                _ => {
                    self.metrics.failed.fetch_add(1, Ordering::Relaxed);
                }
            }
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
}
