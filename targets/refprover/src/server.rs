//! The `cuzk.v1.ProvingEngine` gRPC service over the engine.

use std::sync::Arc;
use std::time::Duration;

use tonic::{Request, Response, Status};

use crate::engine::Engine;
use crate::job::Job;
use crate::proto::proving_engine_server::ProvingEngine;
use crate::proto::*;
use crate::wpost;

/// The gRPC service.
pub struct Service {
    pub engine: Arc<Engine>,
}

/// Waits for a job's result; `timeout_ms == 0` waits without limit. Returns None on timeout.
async fn wait_result(job: &Job, timeout_ms: u64) -> Option<AwaitProofResponse> {
    let mut rx = job.subscribe();
    let fut = async {
        loop {
            if let Some(r) = rx.borrow_and_update().clone() {
                return Some(r);
            }
            if rx.changed().await.is_err() {
                return None;
            }
        }
    };
    if timeout_ms == 0 {
        fut.await
    } else {
        tokio::time::timeout(Duration::from_millis(timeout_ms), fut).await.ok().flatten()
    }
}

#[tonic::async_trait]
impl ProvingEngine for Service {
    async fn submit_proof(&self, req: Request<SubmitProofRequest>) -> Result<Response<SubmitProofResponse>, Status> {
        let (job, queue_position) = self.engine.submit(req.into_inner(), true);
        Ok(Response::new(SubmitProofResponse { job_id: job.id.clone(), queue_position, assigned_gpu: "cpu".into() }))
    }

    async fn await_proof(&self, req: Request<AwaitProofRequest>) -> Result<Response<AwaitProofResponse>, Status> {
        let req = req.into_inner();
        let job = self
            .engine
            .lookup(&req.job_id)
            .ok_or_else(|| Status::not_found(format!("no unclaimed job with id {:?}", req.job_id)))?;
        match wait_result(&job, req.timeout_ms).await {
            Some(r) => {
                self.engine.claim(&job);
                Ok(Response::new(r))
            }
            None => Ok(Response::new(AwaitProofResponse {
                job_id: job.id.clone(),
                status: await_proof_response::Status::Timeout as i32,
                error_message: format!("job not finished within timeout_ms={}", req.timeout_ms),
                ..Default::default()
            })),
        }
    }

    async fn prove(&self, req: Request<ProveRequest>) -> Result<Response<ProveResponse>, Status> {
        let submit = req.into_inner().submit.ok_or_else(|| Status::invalid_argument("ProveRequest.submit is missing"))?;
        let (job, _) = self.engine.submit(submit, false);
        let result = wait_result(&job, 0).await.ok_or_else(|| Status::internal("job result channel closed"))?;
        Ok(Response::new(ProveResponse { result: Some(result) }))
    }

    async fn cancel_proof(&self, req: Request<CancelProofRequest>) -> Result<Response<CancelProofResponse>, Status> {
        let id = req.into_inner().job_id;
        match self.engine.cancel(&id) {
            (false, _) => Err(Status::not_found(format!("no unclaimed job with id {id:?}"))),
            (true, was_running) => Ok(Response::new(CancelProofResponse { was_running })),
        }
    }

    async fn get_status(&self, _req: Request<GetStatusRequest>) -> Result<Response<GetStatusResponse>, Status> {
        let e = &self.engine;
        if e.faults.on("status-waits") {
            // FAULT status-waits: a "consistent snapshot" that waits for the pipeline to drain.
            e.status_gate.drained().await;
        }
        let c = |n: &std::sync::atomic::AtomicU64| n.load(std::sync::atomic::Ordering::Relaxed);
        Ok(Response::new(GetStatusResponse {
            gpus: Vec::new(), // CPU only
            srs: e
                .srs_entries()
                .into_iter()
                .map(|s| SrsStatus { circuit_id: s.circuit_id, tier: srs_status::Tier::Hot as i32, size_bytes: s.size_bytes, ref_count: 0 })
                .collect(),
            queues: e
                .queue_depth()
                .into_iter()
                .map(|d| QueueStatus { proof_kind: d.proof_kind.into(), pending: d.pending, in_progress: d.in_progress })
                .collect(),
            total_proofs_completed: c(&e.metrics.completed),
            total_proofs_failed: c(&e.metrics.failed),
            uptime_seconds: e.started.elapsed().as_secs(),
            pinned_memory_bytes: 0,
            pinned_memory_limit_bytes: 0,
        }))
    }

    async fn get_metrics(&self, _req: Request<GetMetricsRequest>) -> Result<Response<GetMetricsResponse>, Status> {
        let pending = self.engine.queue_depth().iter().map(|d| d.pending).sum();
        Ok(Response::new(GetMetricsResponse { prometheus_text: self.engine.metrics.render(pending) }))
    }

    async fn preload_srs(&self, req: Request<PreloadSrsRequest>) -> Result<Response<PreloadSrsResponse>, Status> {
        let mut id = req.into_inner().circuit_id;
        if id.is_empty() {
            id = wpost::CIRCUIT_ID.into();
        }
        let engine = Arc::clone(&self.engine);
        let res = tokio::task::spawn_blocking(move || engine.ensure_srs(&id))
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        match res {
            Ok((_, already_loaded, load_time_ms)) => Ok(Response::new(PreloadSrsResponse { already_loaded, load_time_ms })),
            Err(e) => Err(Status::failed_precondition(e)),
        }
    }

    async fn evict_srs(&self, req: Request<EvictSrsRequest>) -> Result<Response<EvictSrsResponse>, Status> {
        let (was_loaded, freed_bytes) = self.engine.evict_srs(&req.into_inner().circuit_id);
        Ok(Response::new(EvictSrsResponse { was_loaded, freed_bytes }))
    }
}
