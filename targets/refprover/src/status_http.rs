//! Optional HTTP `GET /status` (JSON) on `daemon.status_listen`, as cuzk offers: counters, the
//! effective param cache, what the daemon effectively does (pipeline, workers, limits), cuzk's
//! `memory` and `synthesis` objects, enabled faults and the config keys that were ignored.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::engine::Engine;

/// The JSON body of `/status`.
pub fn status_json(e: &Engine) -> serde_json::Value {
    let depth = e.queue_depth();
    let pending: u32 = depth.iter().map(|d| d.pending).sum();
    let in_progress: u32 = depth.iter().map(|d| d.in_progress).sum();
    let eff = &e.effective;
    let used = e.memory_used();
    serde_json::json!({
        "uptime_seconds": e.started.elapsed().as_secs(),
        "total_proofs_completed": e.metrics.completed.load(Ordering::Relaxed),
        "total_proofs_failed": e.metrics.failed.load(Ordering::Relaxed),
        "queue": {"pending": pending, "in_progress": in_progress},
        "param_cache": crate::params::param_cache(),
        // What the daemon does, after REFPROVER_DISABLE_PIPELINE and the faults.
        "pipeline_enabled": eff.pipeline_enabled,
        "partition_workers": eff.partition_workers,
        "max_parallel_synthesis": eff.max_parallel_synthesis,
        "memory_budget_source": eff.budget.source.as_str(),
        // cuzk's shapes.
        "memory": {
            "total_bytes": eff.budget.total_bytes,
            "used_bytes": used,
            "available_bytes": eff.budget.total_bytes.saturating_sub(used),
        },
        "synthesis": {"max_concurrent": eff.max_concurrent(), "active": e.active_items()},
        "faults": e.faults.names(),
        "ignored_keys": e.ignored_keys,
    })
}

/// Serves `/status` until the process ends. Errors: the address cannot be bound.
pub async fn serve(addr: String, engine: Arc<Engine>) -> anyhow::Result<()> {
    let listener = TcpListener::bind(&addr).await?;
    tracing::info!(%addr, "status HTTP listening");
    loop {
        let (mut sock, _) = listener.accept().await?;
        let engine = Arc::clone(&engine);
        tokio::spawn(async move {
            let mut buf = [0u8; 2048];
            let n = tokio::time::timeout(std::time::Duration::from_secs(5), sock.read(&mut buf)).await;
            let req = match n {
                Ok(Ok(n)) => String::from_utf8_lossy(&buf[..n]).to_string(),
                _ => return,
            };
            if engine.faults.on("status-waits") {
                engine.status_gate.drained().await; // FAULT status-waits, as GetStatus
            }
            let (code, body) = if req.starts_with("GET /status") {
                ("200 OK", status_json(&engine).to_string())
            } else {
                ("404 Not Found", "{\"error\":\"only GET /status\"}".to_string())
            };
            let resp = format!(
                "HTTP/1.1 {code}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = sock.write_all(resp.as_bytes()).await;
        });
    }
}
