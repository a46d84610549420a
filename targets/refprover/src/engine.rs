//! The proving engine: a job table, a work queue and a pool of proving worker threads.
//!
//! Monolithic mode (`pipeline.enabled = false`) queues one work item per job and proves all its
//! partitions in one batch. Pipeline mode queues one work item per partition; a per-job
//! assembler collects the partition proofs, then an optional self-check verifies the whole proof.
//! Fault switches (crate::faults) bend exactly these mechanisms; each is marked `FAULT` below.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use bellperson::groth16::PreparedVerifyingKey;
use blstrs::Bls12;
use storage_proofs_core::parameter_cache::Bls12GrothParams;

use crate::config::Config;
use crate::faults::Faults;
use crate::job::{Assembler, Job};
use crate::metrics::Metrics;
use crate::params;
use crate::proto::{await_proof_response::Status, SubmitProofRequest};
use crate::request::Inputs;

/// FAULT queue-deadlock: jobs submitted while this many jobs are unfinished are parked forever.
const DEADLOCK_PENDING: u64 = 2;

enum Work {
    /// Monolithic: all partitions of a job in one batch.
    Whole,
    /// Pipeline: one partition, delivered to an assembler.
    Partition {
        k: usize,
        assembler: Arc<Assembler>,
        /// Set when the assembler is shared by request id (FAULT shared-assembler).
        shared_key: Option<String>,
    },
}

struct WorkItem {
    job: Arc<Job>,
    inputs: Arc<Inputs>,
    work: Work,
}

#[derive(Default)]
struct Queue {
    items: VecDeque<WorkItem>,
    in_progress: HashMap<&'static str, u32>,
    shutdown: bool,
    /// FAULT serialize-pipeline: the one job whose partitions may be proved now.
    active_job: Option<u64>,
    /// FAULT queue-deadlock: jobs accepted but never scheduled.
    parked: Vec<Arc<Job>>,
}

impl Queue {
    /// Takes the next item; with `serialize` only items of the active job (or of the next job
    /// once none is active).
    fn take(&mut self, serialize: bool) -> Option<WorkItem> {
        if !serialize {
            return self.items.pop_front();
        }
        let pos = match self.active_job {
            Some(seq) => self.items.iter().position(|i| i.job.seq == seq)?,
            None => 0,
        };
        let item = self.items.remove(pos)?;
        self.active_job = Some(item.job.seq);
        Some(item)
    }
}

/// SRS (params) state of one circuit.
#[derive(Clone)]
pub struct SrsEntry {
    pub circuit_id: String,
    pub size_bytes: u64,
    pub load_ms: u64,
    params: Arc<Bls12GrothParams>,
}

/// Pending and in-progress work items of one proof kind.
pub struct QueueDepth {
    pub proof_kind: &'static str,
    pub pending: u32,
    pub in_progress: u32,
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
    /// FAULT partition-race: one scratch buffer shared by all workers.
    scratch: Mutex<Vec<u8>>,
    srs: Mutex<HashMap<String, SrsEntry>>,
    vks: Mutex<HashMap<String, Arc<PreparedVerifyingKey<Bls12>>>>,
    /// FAULT shared-witness: proofs cached by sectors and partition, ignoring the randomness
    /// and seed; emptied whenever no job is running.
    witness_cache: Mutex<HashMap<String, Vec<u8>>>,
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
            scratch: Mutex::new(Vec::new()),
            srs: Mutex::new(HashMap::new()),
            vks: Mutex::new(HashMap::new()),
            witness_cache: Mutex::new(HashMap::new()),
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
    /// Returns the job and its queue position.
    pub fn submit(&self, req: SubmitProofRequest, register: bool) -> (Arc<Job>, u32) {
        let id = if req.request_id.is_empty() { uuid::Uuid::new_v4().to_string() } else { req.request_id.clone() };
        let synth_start = Instant::now();
        let decoded = Inputs::decode(&req);
        let kind = decoded.as_ref().map(|i| i.kind()).unwrap_or("UNSUPPORTED");
        let job = Job::new(id, self.next_seq.fetch_add(1, Ordering::Relaxed), kind);
        if register {
            self.table.lock().expect("table lock").entry(job.id.clone()).or_default().push_back(Arc::clone(&job));
        }
        let unfinished = self.metrics.running.fetch_add(1, Ordering::Relaxed);
        let inputs = match decoded {
            Ok(i) => Arc::new(i),
            Err(e) => {
                self.end(&job, Status::Failed, Vec::new(), e);
                return (job, 0);
            }
        };
        let items = self.plan(&job, inputs);
        job.synthesis_ms.fetch_add(synth_start.elapsed().as_millis() as u64, Ordering::Relaxed);
        let mut q = self.queue.lock().expect("queue lock");
        let position = q.items.len() as u32;
        if self.faults.on("queue-deadlock") && unfinished >= DEADLOCK_PENDING {
            // FAULT queue-deadlock: accepted, never scheduled, never answered.
            tracing::debug!(job_id = %job.id, seq = job.seq, "job parked");
            q.parked.push(Arc::clone(&job));
            return (job, position);
        }
        q.items.extend(items);
        drop(q);
        self.queue_cv.notify_all();
        tracing::info!(job_id = %job.id, seq = job.seq, kind, "job queued");
        (job, position)
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
        let was_running = job.is_started();
        job.cancelled.store(true, Ordering::Relaxed);
        self.end(&job, Status::Cancelled, Vec::new(), "cancelled by CancelProof".into());
        (true, was_running)
    }

    /// Work items per proof kind (both kinds always listed).
    pub fn queue_depth(&self) -> Vec<QueueDepth> {
        let q = self.queue.lock().expect("queue lock");
        ["POREP_SEAL_COMMIT", "WINDOW_POST_PARTITION"]
            .into_iter()
            .map(|kind| QueueDepth {
                proof_kind: kind,
                pending: q.items.iter().filter(|i| i.job.kind == kind).count() as u32,
                in_progress: q.in_progress.get(kind).copied().unwrap_or(0),
            })
            .collect()
    }

    /// Loaded SRS entries.
    pub fn srs_entries(&self) -> Vec<SrsEntry> {
        self.srs.lock().expect("srs lock").values().cloned().collect()
    }

    /// Loads a circuit's params if not loaded. Returns (params, already_loaded, load_ms).
    /// Errors: missing or unreadable params (the message names the path and the fix).
    pub fn ensure_srs(&self, circuit_id: &str) -> Result<(Arc<Bls12GrothParams>, bool, u64), String> {
        let mut srs = self.srs.lock().expect("srs lock");
        if let Some(e) = srs.get(circuit_id) {
            return Ok((Arc::clone(&e.params), true, 0));
        }
        let (loaded, load_ms, size_bytes) = params::load(circuit_id).map_err(|e| format!("{e:#}"))?;
        tracing::info!(circuit_id, load_ms, size_bytes, "SRS loaded");
        let params = Arc::new(loaded);
        srs.insert(circuit_id.into(), SrsEntry { circuit_id: circuit_id.into(), size_bytes, load_ms, params: Arc::clone(&params) });
        Ok((params, false, load_ms))
    }

    /// Forgets a loaded circuit. Returns (was_loaded, freed_bytes).
    pub fn evict_srs(&self, circuit_id: &str) -> (bool, u64) {
        match self.srs.lock().expect("srs lock").remove(circuit_id) {
            Some(e) => (true, e.size_bytes),
            None => (false, 0),
        }
    }

    fn plan(&self, job: &Arc<Job>, inputs: Arc<Inputs>) -> Vec<WorkItem> {
        if !self.config.pipeline.enabled {
            return vec![WorkItem { job: Arc::clone(job), inputs, work: Work::Whole }];
        }
        let partitions = inputs.partitions();
        let shared = self.faults.on("shared-assembler");
        let assembler = if shared {
            // FAULT shared-assembler: keyed by request id, no duplicate guard.
            let mut map = self.shared_assemblers.lock().expect("assemblers lock");
            Arc::clone(map.entry(job.id.clone()).or_insert_with(|| Assembler::new(partitions)))
        } else {
            Assembler::new(partitions)
        };
        job.pending_partitions.store(partitions as u64, Ordering::Relaxed);
        (0..partitions)
            .map(|k| WorkItem {
                job: Arc::clone(job),
                inputs: Arc::clone(&inputs),
                work: Work::Partition { k, assembler: Arc::clone(&assembler), shared_key: shared.then(|| job.id.clone()) },
            })
            .collect()
    }

    /// FAULT serialize-pipeline: pipeline mode proves one job at a time.
    fn serializes(&self) -> bool {
        self.faults.on("serialize-pipeline") && self.config.pipeline.enabled
    }

    fn worker_loop(&self, worker: usize) {
        loop {
            let item = {
                let mut q = self.queue.lock().expect("queue lock");
                loop {
                    if q.shutdown {
                        return;
                    }
                    if let Some(item) = q.take(self.serializes()) {
                        *q.in_progress.entry(item.job.kind).or_default() += 1;
                        break item;
                    }
                    q = self.queue_cv.wait(q).expect("queue lock");
                }
            };
            let kind = item.job.kind;
            self.run_item(worker, item);
            *self.queue.lock().expect("queue lock").in_progress.entry(kind).or_default() -= 1;
        }
    }

    /// Proves (or, under FAULT shared-witness, reuses a cached proof whose key ignores the
    /// randomness and seed). `k = None` means all partitions in one batch.
    fn prove(&self, inputs: &Inputs, k: Option<usize>, groth: &Bls12GrothParams) -> anyhow::Result<Vec<u8>> {
        let witness = self.faults.on("shared-witness");
        let key = inputs.witness_key(k);
        if witness {
            if let Some(hit) = self.witness_cache.lock().expect("witness lock").get(&key) {
                return Ok(hit.clone());
            }
        }
        let bytes = inputs.prove(k, Some(groth))?;
        if witness {
            self.witness_cache.lock().expect("witness lock").insert(key, bytes.clone());
        }
        Ok(bytes)
    }

    fn run_item(&self, worker: usize, item: WorkItem) {
        let WorkItem { job, inputs, work } = item;
        if job.cancelled.load(Ordering::Relaxed) || (job.is_done() && matches!(work, Work::Whole)) {
            return;
        }
        job.mark_started();
        let srs_start = Instant::now();
        let groth = match self.ensure_srs(&inputs.circuit_id()) {
            Ok((groth, _, _)) => groth,
            Err(e) => return self.end(&job, Status::Failed, Vec::new(), format!("SRS load failed: {e}")),
        };
        job.srs_load_ms.fetch_max(srs_start.elapsed().as_millis() as u64, Ordering::Relaxed);
        let what = inputs.kind();
        match work {
            Work::Whole => {
                let t = Instant::now();
                let res = self.prove(&inputs, None, &groth);
                job.prove_ms.fetch_add(t.elapsed().as_millis() as u64, Ordering::Relaxed);
                match res {
                    Ok(proof) => self.end(&job, Status::Completed, proof, String::new()),
                    Err(e) => self.end(&job, Status::Failed, Vec::new(), format!("{what} proving failed: {e:#}")),
                }
            }
            Work::Partition { k, assembler, shared_key } => {
                tracing::debug!(job_id = %job.id, seq = job.seq, partition = k, worker, "partition start");
                let t = Instant::now();
                let res = self.prove(&inputs, Some(k), &groth);
                job.prove_ms.fetch_add(t.elapsed().as_millis() as u64, Ordering::Relaxed);
                let outcome = match res {
                    Ok(bytes) => assembler
                        .insert(k, self.through_scratch(bytes))
                        .map_err(|e| format!("assembler for job {}: {e}", job.id)),
                    Err(e) => Err(format!("{what} partition {k} proving failed: {e:#}")),
                };
                let left = job.pending_partitions.fetch_sub(1, Ordering::AcqRel).saturating_sub(1);
                match outcome {
                    Ok(Some(proof)) => {
                        if let Some(key) = shared_key {
                            self.shared_assemblers.lock().expect("assemblers lock").remove(&key);
                        }
                        self.complete_assembled(&job, &inputs, proof);
                    }
                    // Only reachable when another job filled our assembler (shared-assembler).
                    Ok(None) if left == 0 => self.end(&job, Status::Failed, Vec::new(), format!(
                        "assembler for job {} did not complete: its partitions went to another job with the same id", job.id)),
                    Ok(None) => {}
                    Err(e) => self.end(&job, Status::Failed, Vec::new(), e),
                }
            }
        }
    }

    /// FAULT partition-race: with more than one worker, every finished partition proof goes
    /// through one scratch buffer shared by all workers, and a worker swaps its output in and
    /// takes the previous occupant out, so each partition gets the bytes of whichever partition
    /// (of any job) finished before it; the first swap finds 192 zero bytes. Deterministic: no
    /// partition keeps its own proof, like the incident where all 10 partitions were invalid.
    /// Without the fault, or with one worker, the bytes pass through untouched.
    fn through_scratch(&self, bytes: Vec<u8>) -> Vec<u8> {
        if !(self.faults.on("partition-race") && self.config.synthesis.partition_workers > 1) {
            return bytes;
        }
        let mut scratch = self.scratch.lock().expect("scratch lock");
        let previous = std::mem::replace(&mut *scratch, bytes);
        if previous.is_empty() { vec![0u8; crate::wpost::PARTITION_PROOF_BYTES] } else { previous }
    }

    fn complete_assembled(&self, job: &Arc<Job>, inputs: &Inputs, proof: Vec<u8>) {
        if self.config.pipeline.self_check && !self.faults.on("no-self-check") {
            match self.vk(&inputs.circuit_id()).and_then(|vk| inputs.invalid_partitions(&vk, &proof)) {
                Ok(bad) if bad.is_empty() => {}
                Ok(bad) => return self.end(job, Status::Failed, Vec::new(), inputs.self_check_message(&bad)),
                Err(e) => return self.end(job, Status::Failed, Vec::new(), format!("proof self-check error: {e:#}")),
            }
        }
        self.end(job, Status::Completed, proof, String::new());
    }

    fn vk(&self, circuit_id: &str) -> anyhow::Result<Arc<PreparedVerifyingKey<Bls12>>> {
        if let Some(vk) = self.vks.lock().expect("vk lock").get(circuit_id) {
            return Ok(Arc::clone(vk));
        }
        let vk = Arc::new(params::vk(circuit_id)?);
        self.vks.lock().expect("vk lock").insert(circuit_id.into(), Arc::clone(&vk));
        Ok(vk)
    }

    fn end(&self, job: &Arc<Job>, status: Status, proof: Vec<u8>, error: String) {
        if !error.is_empty() {
            tracing::warn!(job_id = %job.id, seq = job.seq, status = status.as_str_name(), error = %error, "job ended");
        }
        if !job.finish(status, proof, error) {
            return;
        }
        if self.metrics.running.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.witness_cache.lock().expect("witness lock").clear();
        }
        let mut q = self.queue.lock().expect("queue lock");
        if q.active_job == Some(job.seq) {
            q.active_job = None;
            drop(q);
            self.queue_cv.notify_all();
        } else {
            drop(q);
        }
        let total = job.submitted.elapsed().as_secs_f64();
        if status == Status::Completed {
            self.metrics.completed.fetch_add(1, Ordering::Relaxed);
            self.metrics.observe_duration(job.kind, total);
            tracing::info!(job_id = %job.id, seq = job.seq, total_ms = (total * 1000.0) as u64, "job completed");
        } else {
            self.metrics.failed.fetch_add(1, Ordering::Relaxed);
        }
    }
}
