//! The proving engine: a job table, a work queue and a pool of proving worker threads.
//!
//! Monolithic mode (`pipeline.enabled = false`) queues one work item per job and proves all its
//! partitions in one batch. Pipeline mode queues one work item per partition; a per-job
//! assembler collects the partition proofs, then an optional self-check verifies the whole proof.
//!
//! Scheduling, as cuzk: a free worker takes the pending item of the highest priority (the
//! request's, or its proof kind's default: `request::effective_priority`); within one priority,
//! FIFO by job submission order, then partition index. Work being proved is never pre-empted.
//! A worker waits instead of taking an item while `pipeline.max_parallel_synthesis` items are
//! in progress, or while the memory budget admits no further working set
//! (`memory.partition_working_set`, see crate::memory).
//! Fault switches (crate::faults) bend exactly these mechanisms; each is marked `FAULT` below.

use std::cmp::Reverse;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use bellperson::groth16::PreparedVerifyingKey;
use blstrs::Bls12;
use storage_proofs_core::parameter_cache::Bls12GrothParams;

use crate::config::{Config, Effective};
use crate::fault_state::{witness_bytes, RetryCache, StatusGate};
use crate::faults::Faults;
use crate::job::{Assembler, Job};
use crate::memory::WorkingSet;
use crate::metrics::Metrics;
use crate::params;
use crate::proto::{await_proof_response::Status, SubmitProofRequest};
use crate::request::{effective_priority, Inputs};

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
    /// The job's priority (1 LOW .. 4 CRITICAL; higher first).
    priority: u8,
    /// The partition index (0 for a monolithic item).
    partition: usize,
}

/// How items are chosen and admitted (fixed at start from the effective settings and faults).
#[derive(Debug, Clone, Copy)]
struct Policy {
    /// false: plain FIFO, priority ignored (FAULT ignore-priority, pipeline mode only).
    by_priority: bool,
    /// FAULT serialize-pipeline: only the active job's items are taken while it is unfinished.
    serialize: bool,
    /// `pipeline.max_parallel_synthesis` (None = no limit beyond the worker count).
    inflight_limit: Option<usize>,
    /// FAULT exceed-inflight: the in-flight limit counts distinct request ids in progress.
    limit_counts_ids: bool,
    /// Items the memory budget admits at once (None = no gate).
    budget_slots: Option<usize>,
    /// FAULT serialize-partitions: an item of a job with an item in progress waits.
    one_per_job: bool,
    /// FAULT early-release: the slot is given back as soon as a worker takes the item.
    early_release: bool,
}

impl Policy {
    fn of(e: &Effective, faults: &Faults) -> Self {
        Self {
            by_priority: !(faults.on("ignore-priority") && e.pipeline_enabled),
            serialize: faults.on("serialize-pipeline") && e.pipeline_enabled,
            inflight_limit: e.inflight_limit(),
            limit_counts_ids: faults.on("exceed-inflight"),
            budget_slots: e.budget_slots(),
            one_per_job: faults.on("serialize-partitions") && e.pipeline_enabled,
            early_release: faults.on("early-release") && e.inflight_limit().is_some(),
        }
    }

    /// The order key of an item: smaller is taken first.
    fn key(&self, i: &WorkItem) -> (Reverse<u8>, u64, usize) {
        (Reverse(if self.by_priority { i.priority } else { 0 }), i.job.seq, i.partition)
    }
}

#[derive(Default)]
struct Queue {
    /// Pending items (in submission order; taken in `Policy::key` order).
    items: Vec<WorkItem>,
    in_progress: HashMap<&'static str, u32>,
    /// Items being proved now, all kinds.
    active: usize,
    /// Items being proved now, by request id (FAULT exceed-inflight counts these keys).
    active_ids: HashMap<String, usize>,
    /// Items being proved now, by job (FAULT serialize-partitions).
    active_jobs: HashMap<u64, usize>,
    shutdown: bool,
    /// FAULT serialize-pipeline: the one job whose partitions may be proved now.
    active_job: Option<u64>,
    /// FAULT queue-deadlock: jobs accepted but never scheduled.
    parked: Vec<Arc<Job>>,
}

impl Queue {
    /// The index of the item to take next, admitted or not: the smallest key; with `serialize`
    /// only items of the active job (any job once none is active).
    fn next(&self, p: &Policy) -> Option<usize> {
        self.items
            .iter()
            .enumerate()
            .filter(|(_, i)| !p.serialize || self.active_job.is_none_or(|seq| i.job.seq == seq))
            .filter(|(_, i)| !p.one_per_job || !self.active_jobs.contains_key(&i.job.seq))
            .min_by_key(|(_, i)| p.key(i))
            .map(|(n, _)| n)
    }

    /// Whether one more item (of request `id`) may start now under the limits.
    fn admits(&self, id: &str, p: &Policy) -> bool {
        if p.budget_slots.is_some_and(|n| self.active >= n) {
            return false;
        }
        match p.inflight_limit {
            None => true,
            // FAULT exceed-inflight: a request id already in progress never counts again.
            Some(n) if p.limit_counts_ids => self.active_ids.contains_key(id) || self.active_ids.len() < n,
            Some(n) => self.active < n,
        }
    }

    /// Takes the next item if the limits admit it, and counts it in progress.
    fn take(&mut self, p: &Policy) -> Option<WorkItem> {
        let pos = self.next(p)?;
        if !self.admits(&self.items[pos].job.id, p) {
            return None;
        }
        let item = self.items.remove(pos);
        if p.serialize {
            self.active_job = Some(item.job.seq);
        }
        *self.in_progress.entry(item.job.kind).or_default() += 1;
        *self.active_ids.entry(item.job.id.clone()).or_default() += 1;
        *self.active_jobs.entry(item.job.seq).or_default() += 1;
        self.active += 1;
        Some(item)
    }

    /// Counts one item of job `seq` out of the per-job count, once its proof is done.
    fn release_job(&mut self, seq: u64) {
        if let Some(n) = self.active_jobs.get_mut(&seq) {
            *n -= 1;
            if *n == 0 {
                self.active_jobs.remove(&seq);
            }
        }
    }

    /// Counts one item of this kind and request id out of progress (the admission counts).
    fn release(&mut self, kind: &'static str, id: &str) {
        if let Some(n) = self.in_progress.get_mut(kind) {
            *n = n.saturating_sub(1);
        }
        if let Some(n) = self.active_ids.get_mut(id) {
            *n -= 1;
            if *n == 0 {
                self.active_ids.remove(id);
            }
        }
        self.active = self.active.saturating_sub(1);
    }

    /// Pending items that would be taken before an item with this key (the queue position).
    fn ahead_of(&self, p: &Policy, key: (Reverse<u8>, u64, usize)) -> u32 {
        self.items.iter().filter(|i| p.key(i) < key).count() as u32
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
    /// The config as read.
    pub config: Config,
    /// What the daemon effectively does (after the environment and the faults).
    pub effective: Effective,
    pub faults: Faults,
    policy: Policy,
    /// Bytes of working sets allocated now.
    mem_used: AtomicU64,
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
    /// FAULT retain-witness: every proved partition's witness, never evicted.
    retry_cache: RetryCache,
    /// FAULT status-waits: the partitioned jobs in progress, which a status snapshot awaits.
    pub status_gate: StatusGate,
    /// The first-run artifact, written after the first COMPLETED proof (crate::first_run).
    first_run: crate::first_run::FirstRun,
}

impl Engine {
    /// Creates the engine and starts the effective number of worker threads.
    pub fn start(config: Config, effective: Effective, faults: Faults, ignored_keys: Vec<String>) -> Arc<Self> {
        let workers = effective.partition_workers.max(1);
        let policy = Policy::of(&effective, &faults);
        tracing::info!(
            workers,
            max_concurrent = effective.max_concurrent(),
            inflight_limit = ?policy.inflight_limit,
            budget_slots = ?policy.budget_slots,
            by_priority = policy.by_priority,
            "scheduler"
        );
        let engine = Arc::new(Self {
            config,
            effective,
            faults,
            policy,
            mem_used: AtomicU64::new(0),
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
            retry_cache: RetryCache::default(),
            status_gate: StatusGate::default(),
            first_run: crate::first_run::FirstRun::default(),
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
        let priority = effective_priority(req.priority, req.proof_kind);
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
        let items = self.plan(&job, inputs, priority);
        job.synthesis_ms.fetch_add(synth_start.elapsed().as_millis() as u64, Ordering::Relaxed);
        let mut q = self.queue.lock().expect("queue lock");
        let position = q.ahead_of(&self.policy, (Reverse(if self.policy.by_priority { priority } else { 0 }), job.seq, 0));
        if self.faults.on("queue-deadlock") && unfinished >= DEADLOCK_PENDING {
            // FAULT queue-deadlock: accepted, never scheduled, never answered.
            tracing::debug!(job_id = %job.id, seq = job.seq, "job parked");
            q.parked.push(Arc::clone(&job));
            return (job, position);
        }
        q.items.extend(items);
        drop(q);
        self.queue_cv.notify_all();
        tracing::info!(job_id = %job.id, seq = job.seq, kind, priority, position, "job queued");
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

    /// Bytes of working sets allocated now (`/status` `memory.used_bytes`).
    pub fn memory_used(&self) -> u64 {
        self.mem_used.load(Ordering::Relaxed)
    }

    /// Work items being proved now, all kinds (`/status` `synthesis.active`).
    pub fn active_items(&self) -> usize {
        self.queue.lock().expect("queue lock").active
    }

    fn plan(&self, job: &Arc<Job>, inputs: Arc<Inputs>, priority: u8) -> Vec<WorkItem> {
        if !self.effective.pipeline_enabled {
            return vec![WorkItem { job: Arc::clone(job), inputs, work: Work::Whole, priority, partition: 0 }];
        }
        let partitions = inputs.partitions();
        if self.faults.on("status-waits") {
            self.status_gate.enter();
            job.gated.store(true, Ordering::Relaxed);
        }
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
                priority,
                partition: k,
            })
            .collect()
    }

    fn worker_loop(&self, worker: usize) {
        loop {
            let item = {
                let mut q = self.queue.lock().expect("queue lock");
                loop {
                    if q.shutdown {
                        return;
                    }
                    // Waits while the queue is empty, the active job (serialize-pipeline) has
                    // nothing pending, or the in-flight limit / memory budget is reached.
                    if let Some(item) = q.take(&self.policy) {
                        break item;
                    }
                    q = self.queue_cv.wait(q).expect("queue lock");
                }
            };
            let (kind, id, seq) = (item.job.kind, item.job.id.clone(), item.job.seq);
            if self.policy.early_release {
                // FAULT early-release: the slot counts the hand-off to a worker, not the proof.
                self.queue.lock().expect("queue lock").release(kind, &id);
                self.queue_cv.notify_all();
            }
            self.run_item(worker, item);
            let mut q = self.queue.lock().expect("queue lock");
            q.release_job(seq);
            if !self.policy.early_release {
                q.release(kind, &id);
            }
            drop(q);
            // A slot under the limits is free again.
            self.queue_cv.notify_all();
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
        let started = Instant::now();
        let bytes = inputs.prove(k, Some(groth))?;
        // FAULT slow-prove=<factor>: real work (hashing), not a sleep, until the item has taken
        // factor x its proving time, so the slower candidate also competes for the cores.
        let factor = self.faults.slow_factor();
        if factor > 1.0 {
            burn_until(started + started.elapsed().mul_f64(factor));
        }
        // FAULT gpu-bound-ms=<N>: an idle wait of N ms per partition proved, as a GPU's kernels
        // would take while the host's cores do nothing (no real GPU here).
        let per_partition = self.faults.gpu_bound().unwrap_or_default();
        if !per_partition.is_zero() {
            let partitions = if k.is_some() { 1 } else { inputs.partitions() };
            std::thread::sleep(per_partition * partitions as u32);
        }
        if witness {
            self.witness_cache.lock().expect("witness lock").insert(key, bytes.clone());
        }
        Ok(bytes)
    }

    fn run_item(&self, worker: usize, item: WorkItem) {
        let WorkItem { job, inputs, work, .. } = item;
        if job.cancelled.load(Ordering::Relaxed) || (job.is_done() && matches!(work, Work::Whole)) {
            return;
        }
        job.mark_started();
        // Held (allocated, every page written) while the item is proved; freed on return.
        let _working_set = WorkingSet::allocate(self.effective.working_set, &self.mem_used);
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
                // FAULT compute-micros: the partition path adds microseconds to a millisecond field.
                let took = if self.faults.on("compute-micros") { t.elapsed().as_micros() } else { t.elapsed().as_millis() };
                job.prove_ms.fetch_add(took as u64, Ordering::Relaxed);
                tracing::debug!(job_id = %job.id, seq = job.seq, partition = k, worker, "partition done");
                if let (true, Ok(bytes)) = (self.faults.on("retain-witness"), &res) {
                    // FAULT retain-witness: the witness kept for a retry, never evicted.
                    self.retry_cache.keep(&job.id, k, witness_bytes(&groth), bytes.first().copied().unwrap_or(1));
                }
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
        if !(self.faults.on("partition-race") && self.effective.partition_workers > 1) {
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
        if job.gated.swap(false, Ordering::Relaxed) {
            self.status_gate.leave();
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
            // FAULT no-first-run-artifact: the first run leaves nothing behind
            if !self.faults.on("no-first-run-artifact") {
                let loaded: Vec<_> = self.srs_entries().into_iter().map(|e| (e.circuit_id, e.size_bytes, e.load_ms)).collect();
                self.first_run.record(&loaded);
            }
        } else {
            self.metrics.failed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Hashes (SHA-256 over a 64 KiB block, chained) until `deadline`: CPU work the optimiser
/// cannot drop, for FAULT slow-prove.
fn burn_until(deadline: Instant) {
    use sha2::{Digest, Sha256};
    let mut block = vec![0u8; 64 << 10];
    while Instant::now() < deadline {
        let digest = Sha256::digest(&block);
        block[..32].copy_from_slice(&digest);
    }
    std::hint::black_box(&block);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs() -> Arc<Inputs> {
        Arc::new(Inputs::Wpost { randomness: [0; 32], prover_id: [0; 32], miner_id: 0, sectors: Vec::new(), parts: Vec::new(), first_partition: 0 })
    }

    /// Queues a job of `partitions` items (0 = one monolithic item) and returns its seq.
    fn push(q: &mut Queue, seq: u64, id: &str, priority: u8, partitions: usize) -> u64 {
        let job = Job::new(id.into(), seq, "WINDOW_POST_PARTITION");
        if partitions == 0 {
            q.items.push(WorkItem { job, inputs: inputs(), work: Work::Whole, priority, partition: 0 });
        } else {
            let a = Assembler::new(partitions);
            for k in 0..partitions {
                let work = Work::Partition { k, assembler: Arc::clone(&a), shared_key: None };
                q.items.push(WorkItem { job: Arc::clone(&job), inputs: inputs(), work, priority, partition: k });
            }
        }
        seq
    }

    fn policy() -> Policy {
        Policy { by_priority: true, serialize: false, inflight_limit: None, limit_counts_ids: false, budget_slots: None, one_per_job: false, early_release: false }
    }

    /// Takes (and immediately releases) every item: the order a single worker proves them in.
    fn drain(q: &mut Queue, p: &Policy) -> Vec<(u64, usize)> {
        let mut out = Vec::new();
        while let Some(i) = q.take(p) {
            out.push((i.job.seq, i.partition));
            q.release(i.job.kind, &i.job.id);
            if q.active_job == Some(i.job.seq) && !q.items.iter().any(|x| x.job.seq == i.job.seq) {
                q.active_job = None; // what Engine::end does once the job finishes
            }
        }
        out
    }

    #[test]
    fn highest_priority_first_then_fifo_then_partition() {
        let mut q = Queue::default();
        push(&mut q, 1, "a", 2, 2); // NORMAL, 2 partitions
        push(&mut q, 2, "b", 3, 0); // HIGH
        push(&mut q, 3, "c", 1, 0); // LOW
        push(&mut q, 4, "d", 3, 2); // HIGH, 2 partitions
        push(&mut q, 5, "e", 4, 0); // CRITICAL
        assert_eq!(drain(&mut q, &policy()), vec![(5, 0), (2, 0), (4, 0), (4, 1), (1, 0), (1, 1), (3, 0)]);
    }

    #[test]
    fn submission_order_not_insertion_order_within_a_priority() {
        let mut q = Queue::default();
        push(&mut q, 7, "late-insert", 2, 0);
        push(&mut q, 6, "early-seq", 2, 0);
        assert_eq!(drain(&mut q, &policy()), vec![(6, 0), (7, 0)]);
    }

    #[test]
    fn fifo_when_priority_is_ignored() {
        let mut q = Queue::default();
        push(&mut q, 1, "a", 1, 2);
        push(&mut q, 2, "b", 4, 0);
        push(&mut q, 3, "c", 3, 1);
        let fifo = Policy { by_priority: false, ..policy() };
        assert_eq!(drain(&mut q, &fifo), vec![(1, 0), (1, 1), (2, 0), (3, 0)]);
    }

    #[test]
    fn ignore_priority_applies_to_pipeline_mode_only() {
        use crate::memory::{Budget, BudgetSource};
        let mut e = Effective {
            pipeline_enabled: true,
            partition_workers: 2,
            max_parallel_synthesis: 0,
            budget: Budget { total_bytes: 1 << 30, source: BudgetSource::Config, detail: String::new() },
            working_set: 0,
            warnings: Vec::new(),
        };
        let f = Faults::parse("ignore-priority,serialize-pipeline").unwrap();
        let p = Policy::of(&e, &f);
        assert!(!p.by_priority && p.serialize);
        e.pipeline_enabled = false;
        let p = Policy::of(&e, &f);
        assert!(p.by_priority && !p.serialize);
        assert!(Policy::of(&e, &Faults::default()).by_priority);
        e.max_parallel_synthesis = 2;
        e.working_set = 256 << 20;
        let p = Policy::of(&e, &Faults::parse("exceed-inflight").unwrap());
        assert_eq!((p.inflight_limit, p.budget_slots, p.limit_counts_ids), (Some(2), Some(4), true));
    }

    #[test]
    fn serialize_keeps_to_the_active_job_then_takes_the_highest_priority() {
        let mut q = Queue::default();
        let p = Policy { serialize: true, ..policy() };
        push(&mut q, 1, "a", 2, 2);
        let first = q.take(&p).unwrap();
        assert_eq!((first.job.seq, first.partition), (1, 0));
        // A CRITICAL job arrives while job 1 is active: job 1's items still go first.
        push(&mut q, 2, "b", 2, 1);
        push(&mut q, 3, "c", 4, 1);
        let second = q.take(&p).unwrap();
        assert_eq!((second.job.seq, second.partition), (1, 1));
        assert!(q.take(&p).is_none(), "nothing of the active job is pending");
        q.release(first.job.kind, &first.job.id);
        q.release(second.job.kind, &second.job.id);
        q.active_job = None;
        assert_eq!(drain(&mut q, &p), vec![(3, 0), (2, 0)]);
    }

    #[test]
    fn inflight_limit_counts_items() {
        let mut q = Queue::default();
        let p = Policy { inflight_limit: Some(2), ..policy() };
        push(&mut q, 1, "a", 2, 3);
        push(&mut q, 2, "a", 2, 1);
        let a = q.take(&p).unwrap();
        let _b = q.take(&p).unwrap();
        assert!(q.take(&p).is_none(), "limit of 2 items reached");
        assert_eq!(q.active, 2);
        q.release(a.job.kind, &a.job.id);
        assert!(q.take(&p).is_some());
        assert!(q.take(&p).is_none());
        assert_eq!(q.in_progress.get("WINDOW_POST_PARTITION"), Some(&2));
    }

    #[test]
    fn exceed_inflight_counts_request_ids() {
        let mut q = Queue::default();
        let p = Policy { inflight_limit: Some(1), limit_counts_ids: true, ..policy() };
        push(&mut q, 1, "porep-1000-1", 2, 2);
        push(&mut q, 2, "porep-1000-1", 2, 1); // a retry with the same id
        push(&mut q, 3, "porep-1000-2", 2, 1);
        let taken: Vec<_> = std::iter::from_fn(|| q.take(&p)).collect();
        // Both partitions of job 1 and job 2 (same id) slip past a limit of 1.
        assert_eq!(taken.iter().map(|i| (i.job.seq, i.partition)).collect::<Vec<_>>(), vec![(1, 0), (1, 1), (2, 0)]);
        assert_eq!((q.active, q.active_ids.len()), (3, 1));
        for i in &taken {
            q.release(i.job.kind, &i.job.id);
        }
        assert!(q.active_ids.is_empty());
        assert_eq!(q.take(&p).map(|i| i.job.seq), Some(3));
    }

    #[test]
    fn budget_gate_counts_items_even_with_exceed_inflight() {
        let mut q = Queue::default();
        let p = Policy { budget_slots: Some(1), inflight_limit: Some(4), limit_counts_ids: true, ..policy() };
        push(&mut q, 1, "a", 2, 2);
        let a = q.take(&p).unwrap();
        assert!(q.take(&p).is_none(), "one working set fits the budget");
        q.release(a.job.kind, &a.job.id);
        assert!(q.take(&p).is_some());
    }

    #[test]
    fn serialize_partitions_takes_one_item_of_a_job_at_a_time() {
        let mut q = Queue::default();
        let p = Policy { one_per_job: true, ..policy() };
        push(&mut q, 1, "a", 2, 2);
        push(&mut q, 2, "b", 2, 2);
        let a0 = q.take(&p).unwrap();
        let b0 = q.take(&p).unwrap();
        assert_eq!(((a0.job.seq, a0.partition), (b0.job.seq, b0.partition)), ((1, 0), (2, 0)));
        assert!(q.take(&p).is_none(), "each job has its item in progress");
        q.release(a0.job.kind, &a0.job.id);
        q.release_job(a0.job.seq);
        assert_eq!(q.take(&p).map(|i| (i.job.seq, i.partition)), Some((1, 1)));
        assert!(Policy::of(&effective(false), &Faults::parse("serialize-partitions").unwrap()).one_per_job == false);
        assert!(Policy::of(&effective(true), &Faults::parse("serialize-partitions").unwrap()).one_per_job);
    }

    #[test]
    fn early_release_applies_under_an_inflight_limit_only() {
        let f = Faults::parse("early-release").unwrap();
        let mut e = effective(true);
        assert!(!Policy::of(&e, &f).early_release, "no limit: nothing to release early");
        e.max_parallel_synthesis = 3;
        assert!(Policy::of(&e, &f).early_release);
        assert!(!Policy::of(&e, &Faults::default()).early_release);
    }

    fn effective(pipeline: bool) -> Effective {
        use crate::memory::{Budget, BudgetSource};
        Effective {
            pipeline_enabled: pipeline,
            partition_workers: 4,
            max_parallel_synthesis: 0,
            budget: Budget { total_bytes: 1 << 30, source: BudgetSource::Config, detail: String::new() },
            working_set: 0,
            warnings: Vec::new(),
        }
    }

    #[test]
    fn burn_until_works_until_its_deadline() {
        let t = Instant::now();
        super::burn_until(t + std::time::Duration::from_millis(30));
        assert!(t.elapsed() >= std::time::Duration::from_millis(30));
    }

    #[test]
    fn queue_position_counts_items_taken_before() {
        let mut q = Queue::default();
        let p = policy();
        push(&mut q, 1, "a", 2, 2);
        push(&mut q, 2, "b", 3, 1);
        assert_eq!(q.ahead_of(&p, (Reverse(4), 3, 0)), 0);
        assert_eq!(q.ahead_of(&p, (Reverse(2), 3, 0)), 3);
        assert_eq!(q.ahead_of(&p, (Reverse(3), 3, 0)), 1);
    }
}
