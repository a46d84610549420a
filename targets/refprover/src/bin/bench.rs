//! `bench`: a cuzk-bench-compatible client (DESIGN.md §3): the same flags and output format, so
//! a `bench-cli` profile drives refprover exactly as operators drive cuzk.
//!
//! ```text
//! bench [-a ADDR] single -t porep|wpost --c1 FILE [--sector-num N] [--miner-id M]
//! bench [-a ADDR] batch  -t porep|wpost --c1 FILE [-c COUNT] [-j CONCURRENCY] [...]
//! ```
//! For `-t wpost` the `--c1` file is a workload job (JSON with `vanilla_proofs`, `randomness`,
//! `miner_id`), since WindowPoSt has no C1. `--save-proofs DIR` is refprover's extension (real
//! cuzk-bench has no such flag): it writes `<i>.proof` (hex) so proofs can be re-verified.

use std::time::{Duration, Instant};

use base64::Engine as _;
use clap::{Args, Parser, Subcommand};
use refprover::proto::proving_engine_client::ProvingEngineClient;
use refprover::proto::{await_proof_response::Status, ProofKind, ProveRequest, SubmitProofRequest};

#[derive(Parser)]
#[command(name = "cuzk-bench", version, about = "Benchmark client for the cuzk proving engine")]
struct Cli {
    /// Engine address.
    #[arg(short = 'a', long = "addr", default_value = "http://127.0.0.1:9820")]
    addr: String,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Args, Clone)]
struct ProofArgs {
    /// Proof type: porep, snap, wpost, winning.
    #[arg(short = 't', long = "type")]
    typ: String,
    /// C1 output file (PoRep: the cuzk envelope; wpost: a workload job JSON).
    #[arg(long = "c1")]
    c1: String,
    #[arg(long = "sector-num", default_value_t = 1)]
    sector_num: u64,
    #[arg(long = "miner-id", default_value_t = 1000)]
    miner_id: u64,
    /// Sector size in bytes.
    #[arg(long = "sector-size", default_value_t = 2048)]
    sector_size: u64,
    /// refprover extension: write each proof as <DIR>/<i>.proof (hex).
    #[arg(long = "save-proofs")]
    save_proofs: Option<String>,
    /// Per-proof deadline in seconds.
    #[arg(long = "timeout", default_value_t = 3600)]
    timeout_s: u64,
}

#[derive(Subcommand)]
enum Cmd {
    /// Prove once.
    Single(ProofArgs),
    /// Prove COUNT times with CONCURRENCY in flight.
    Batch {
        #[command(flatten)]
        proof: ProofArgs,
        /// Number of proofs.
        #[arg(short = 'c', long = "count", default_value_t = 3)]
        count: usize,
        /// Proofs in flight.
        #[arg(short = 'j', long = "concurrency", default_value_t = 1)]
        concurrency: usize,
    },
}

fn request(a: &ProofArgs) -> anyhow::Result<SubmitProofRequest> {
    let bytes = std::fs::read(&a.c1).map_err(|e| anyhow::anyhow!("cannot read --c1 {}: {e}", a.c1))?;
    let mut req = SubmitProofRequest { sector_size: a.sector_size, miner_id: a.miner_id, sector_number: a.sector_num, ..Default::default() };
    match a.typ.as_str() {
        "porep" => {
            req.proof_kind = ProofKind::PorepSealCommit as i32;
            req.registered_proof = refprover::porep::REGISTERED_PROOF;
            req.vanilla_proof = bytes;
        }
        "wpost" => {
            let job: serde_json::Value = serde_json::from_slice(&bytes)?;
            req.proof_kind = ProofKind::WindowPostPartition as i32;
            req.registered_proof = refprover::wpost::REGISTERED_PROOF;
            req.randomness = hex::decode(job["randomness"].as_str().unwrap_or_default())?;
            req.miner_id = job["miner_id"].as_u64().unwrap_or(a.miner_id);
            let b64 = base64::engine::general_purpose::STANDARD;
            for v in job["vanilla_proofs"].as_array().cloned().unwrap_or_default() {
                req.vanilla_proofs.push(b64.decode(v.as_str().unwrap_or_default())?);
            }
        }
        "snap" | "winning" => anyhow::bail!("type {} is not supported by refprover", a.typ),
        other => anyhow::bail!("unknown type {other:?} (porep, snap, wpost, winning)"),
    }
    Ok(req)
}

struct Outcome {
    ok: bool,
    wall: Duration,
    prove_ms: u64,
    queue_ms: u64,
    error: String,
    proof: Vec<u8>,
}

async fn prove_once(addr: String, mut req: SubmitProofRequest, timeout_s: u64) -> Outcome {
    let start = Instant::now();
    req.request_id = uuid::Uuid::new_v4().to_string(); // cuzk-bench: a fresh id per proof
    let res = async {
        let mut client = ProvingEngineClient::connect(addr).await?;
        client = client.max_decoding_message_size(128 << 20).max_encoding_message_size(128 << 20);
        let mut r = tonic::Request::new(ProveRequest { submit: Some(req) });
        r.set_timeout(Duration::from_secs(timeout_s));
        Ok::<_, anyhow::Error>(client.prove(r).await?.into_inner().result.unwrap_or_default())
    }
    .await;
    match res {
        Ok(r) => Outcome {
            ok: r.status == Status::Completed as i32,
            wall: start.elapsed(),
            prove_ms: r.gpu_compute_ms,
            queue_ms: r.queue_wait_ms,
            error: r.error_message,
            proof: r.proof,
        },
        Err(e) => Outcome { ok: false, wall: start.elapsed(), prove_ms: 0, queue_ms: 0, error: format!("{e:#}"), proof: Vec::new() },
    }
}

fn line(o: &Outcome) -> String {
    let status = if o.ok { "COMPLETED" } else { "FAILED" };
    let mut s = format!("{status} — {:.1}s (prove={} ms, queue={} ms)", o.wall.as_secs_f64(), o.prove_ms, o.queue_ms);
    if !o.ok {
        s.push_str(&format!(": {}", o.error));
    }
    s
}

fn save(dir: &Option<String>, i: usize, o: &Outcome) {
    if let (Some(dir), true) = (dir, o.ok) {
        let _ = std::fs::create_dir_all(dir);
        let _ = std::fs::write(format!("{dir}/{i}.proof"), hex::encode(&o.proof));
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let cli = Cli::parse();
    let code = match cli.cmd {
        Cmd::Single(a) => match request(&a) {
            Ok(req) => {
                let o = prove_once(cli.addr.clone(), req, a.timeout_s).await;
                println!("{}", line(&o));
                save(&a.save_proofs, 1, &o);
                i32::from(!o.ok)
            }
            Err(e) => {
                eprintln!("error: {e:#}");
                2
            }
        },
        Cmd::Batch { proof, count, concurrency } => batch(&cli.addr, &proof, count, concurrency.max(1)).await,
    };
    std::process::exit(code);
}

async fn batch(addr: &str, a: &ProofArgs, count: usize, concurrency: usize) -> i32 {
    let req = match request(a) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e:#}");
            return 2;
        }
    };
    println!("=== Batch Benchmark ===");
    println!("  type: {}  count: {count}  concurrency: {concurrency}  addr: {addr}", a.typ);
    let start = Instant::now();
    let sem = std::sync::Arc::new(tokio::sync::Semaphore::new(concurrency));
    let mut handles = Vec::new();
    for i in 1..=count {
        let permit = sem.clone().acquire_owned().await.expect("semaphore");
        let (addr, req, t) = (addr.to_string(), req.clone(), a.timeout_s);
        handles.push(tokio::spawn(async move {
            let o = prove_once(addr, req, t).await;
            drop(permit);
            (i, o)
        }));
    }
    let mut outcomes = Vec::new();
    for h in handles {
        if let Ok((i, o)) = h.await {
            println!("  [{i}/{count}] {}", line(&o));
            save(&a.save_proofs, i, &o);
            outcomes.push(o);
        }
    }
    let wall = start.elapsed().as_secs_f64();
    let done: Vec<f64> = outcomes.iter().filter(|o| o.ok).map(|o| o.wall.as_secs_f64()).collect();
    let failed = outcomes.len() - done.len();
    let avg = if done.is_empty() { 0.0 } else { done.iter().sum::<f64>() / done.len() as f64 };
    let min = done.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = done.iter().cloned().fold(0.0, f64::max);
    println!("=== Batch Summary ===");
    println!("  completed:  {}", done.len());
    println!("  failed:     {failed}");
    println!("  wall avg:   {avg:.1}s  min: {:.1}s  max: {max:.1}s", if min.is_finite() { min } else { 0.0 });
    println!("  throughput: {:.2} proofs/min", if wall > 0.0 { done.len() as f64 * 60.0 / wall } else { 0.0 });
    i32::from(failed > 0)
}
