//! `bench`: a cuzk-bench-compatible client (docs/cuzk-interface.md): the same flags and output format as
//! cuzk-bench (curio e0294b0f, `extern/cuzk/cuzk-bench/src/main.rs`), so a `bench-cli` profile
//! drives refprover exactly as operators drive cuzk.
//!
//! ```text
//! bench [-a ADDR] single -t porep --c1 FILE [--sector-num N] [--miner-id M]
//! bench [-a ADDR] single -t wpost --vanilla FILE --randomness HEX [--partition K] [...]
//! bench [-a ADDR] batch  -t porep|wpost ... [-c COUNT] [-j CONCURRENCY]
//! ```
//! `--vanilla` is a JSON array of base64 vanilla proofs (one per sector), as cuzk-bench reads
//! it. refprover's extensions, which real cuzk-bench lacks: `--save-proofs DIR` writes
//! `<i>.proof` (hex) so a batch's proofs can be re-verified; `--timeout SECONDS` per proof;
//! `--sector-size` (cuzk-bench sends 32 GiB whatever the proof; refprover checks it); a FAILED
//! batch line ends with `: <error>` (cuzk-bench prints no error there).

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
    #[arg(short = 't', long = "type", value_name = "PROOF_TYPE")]
    typ: String,
    /// Path to C1 output JSON (for PoRep).
    #[arg(long = "c1")]
    c1: Option<String>,
    /// Path to vanilla proof JSON file (for PoSt): JSON array of base64-encoded proofs.
    #[arg(long = "vanilla")]
    vanilla: Option<String>,
    /// Registered proof type (numeric; 0 = refprover's for the type).
    #[arg(long = "registered-proof", default_value_t = 0)]
    registered_proof: u64,
    #[arg(long = "sector-num", default_value_t = 1)]
    sector_num: u64,
    #[arg(long = "miner-id", default_value_t = 1000)]
    miner_id: u64,
    /// Hex-encoded 32-byte randomness (for PoSt).
    #[arg(long = "randomness")]
    randomness: Option<String>,
    /// refprover extension: sector size in bytes.
    #[arg(long = "sector-size", default_value_t = 2048)]
    sector_size: u64,
    /// refprover extension: write each proof as <DIR>/<i>.proof (hex).
    #[arg(long = "save-proofs")]
    save_proofs: Option<String>,
    /// refprover extension: per-proof deadline in seconds.
    #[arg(long = "timeout", default_value_t = 3600)]
    timeout_s: u64,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a single proof through the daemon.
    Single {
        #[command(flatten)]
        proof: ProofArgs,
        /// Partition index (for WindowPoSt).
        #[arg(long = "partition", default_value_t = 0)]
        partition: u32,
    },
    /// Run N identical proofs and report throughput statistics.
    Batch {
        #[command(flatten)]
        proof: ProofArgs,
        /// Number of proofs to run.
        #[arg(short = 'c', long = "count", default_value_t = 3)]
        count: usize,
        /// Number of concurrent proof requests.
        #[arg(short = 'j', long = "concurrency", default_value_t = 1)]
        concurrency: usize,
    },
}

fn vanilla_proofs(path: &str) -> anyhow::Result<Vec<Vec<u8>>> {
    let bytes = std::fs::read(path).map_err(|e| anyhow::anyhow!("cannot read --vanilla {path}: {e}"))?;
    let b64 = base64::engine::general_purpose::STANDARD;
    match serde_json::from_slice::<Vec<String>>(&bytes) {
        Ok(items) => items.iter().map(|v| b64.decode(v).map_err(anyhow::Error::from)).collect(),
        Err(_) => Ok(vec![bytes]), // as cuzk-bench: not a JSON array, the file is one raw proof
    }
}

fn request(a: &ProofArgs, partition: u32) -> anyhow::Result<SubmitProofRequest> {
    let mut req = SubmitProofRequest {
        sector_size: a.sector_size,
        miner_id: a.miner_id,
        sector_number: a.sector_num,
        registered_proof: a.registered_proof,
        partition_index: partition,
        ..Default::default()
    };
    match a.typ.to_lowercase().as_str() {
        "porep" | "porep-c2" | "seal-commit" => {
            let c1 = a.c1.as_ref().ok_or_else(|| anyhow::anyhow!("--c1 required for PoRep"))?;
            req.proof_kind = ProofKind::PorepSealCommit as i32;
            if req.registered_proof == 0 {
                req.registered_proof = refprover::porep::REGISTERED_PROOF;
            }
            req.vanilla_proof = std::fs::read(c1).map_err(|e| anyhow::anyhow!("cannot read --c1 {c1}: {e}"))?;
        }
        "wpost" | "window-post" | "windowpost" => {
            let v = a.vanilla.as_ref().ok_or_else(|| anyhow::anyhow!("--vanilla required for PoSt/SnapDeals proof types"))?;
            req.proof_kind = ProofKind::WindowPostPartition as i32;
            if req.registered_proof == 0 {
                req.registered_proof = refprover::wpost::REGISTERED_PROOF;
            }
            req.vanilla_proofs = vanilla_proofs(v)?;
            req.randomness = match &a.randomness {
                Some(h) => hex::decode(h)?,
                None => vec![0u8; 32], // cuzk-bench's default
            };
        }
        "snap" | "snap-deals" | "update" | "winning" | "winning-post" | "winningpost" => {
            anyhow::bail!("type {} is not supported by refprover", a.typ)
        }
        other => anyhow::bail!("unknown type {other:?} (porep, snap, wpost, winning)"),
    }
    Ok(req)
}

struct Outcome {
    status: i32,
    wall: Duration,
    resp: refprover::proto::AwaitProofResponse,
    error: String,
}

impl Outcome {
    fn ok(&self) -> bool {
        self.status == Status::Completed as i32
    }
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
        Ok(r) => Outcome { status: r.status, wall: start.elapsed(), error: r.error_message.clone(), resp: r },
        Err(e) => Outcome { status: Status::Failed as i32, wall: start.elapsed(), resp: Default::default(), error: format!("{e:#}") },
    }
}

fn status_label(status: i32) -> &'static str {
    match Status::try_from(status) {
        Ok(Status::Completed) => "COMPLETED",
        Ok(Status::Failed) => "FAILED",
        Ok(Status::Cancelled) => "CANCELLED",
        Ok(Status::Timeout) => "TIMEOUT",
        _ => "UNKNOWN",
    }
}

/// One batch line, as cuzk-bench prints it, with refprover's `: <error>` on a failure.
fn line(i: usize, count: usize, o: &Outcome) -> String {
    let mut s = format!(
        "  [{i}/{count}] {} — {:.1}s (prove={} ms, queue={} ms)",
        status_label(o.status),
        o.wall.as_secs_f64(),
        o.resp.gpu_compute_ms,
        o.resp.queue_wait_ms
    );
    if !o.ok() {
        s.push_str(&format!(": {}", o.error));
    }
    s
}

/// cuzk-bench's `print_result` block.
fn print_result(o: &Outcome) {
    println!("\n=== Proof Result ===");
    println!("status:    {}", status_label(o.status));
    println!("job_id:    {}", o.resp.job_id);
    if o.ok() {
        let r = &o.resp;
        println!(
            "timings:   total={} ms (queue={} ms, srs={} ms, synth={} ms, gpu={} ms)",
            r.total_ms, r.queue_wait_ms, r.srs_load_ms, r.synthesis_ms, r.gpu_compute_ms
        );
        println!("wall time: {} ms", o.wall.as_millis());
        let hex = if r.proof.len() <= 256 { hex::encode(&r.proof) } else { format!("{}...", hex::encode(&r.proof[..128])) };
        println!("proof:     {} bytes (hex: {hex})", r.proof.len());
    } else {
        println!("error:     {}", o.error);
    }
}

fn save(dir: &Option<String>, i: usize, o: &Outcome) {
    if let (Some(dir), true) = (dir, o.ok()) {
        let _ = std::fs::create_dir_all(dir);
        let _ = std::fs::write(format!("{dir}/{i}.proof"), hex::encode(&o.resp.proof));
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let cli = Cli::parse();
    let code = match cli.cmd {
        Cmd::Single { proof, partition } => match request(&proof, partition) {
            Ok(req) => {
                let o = prove_once(cli.addr.clone(), req, proof.timeout_s).await;
                print_result(&o);
                save(&proof.save_proofs, 1, &o);
                i32::from(!o.ok())
            }
            Err(e) => {
                eprintln!("Error: {e:#}");
                1
            }
        },
        Cmd::Batch { proof, count, concurrency } => batch(&cli.addr, &proof, count, concurrency.max(1)).await,
    };
    std::process::exit(code);
}

async fn batch(addr: &str, a: &ProofArgs, count: usize, concurrency: usize) -> i32 {
    let req = match request(a, 0) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("Error: {e:#}");
            return 1;
        }
    };
    println!("=== Batch Benchmark ===");
    println!("proof type:  {}", a.typ);
    println!("count:       {count}");
    println!("concurrency: {concurrency}");
    println!();
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
            println!("{}", line(i, count, &o));
            save(&a.save_proofs, i, &o);
            outcomes.push(o);
        }
    }
    let wall = start.elapsed().as_secs_f64();
    let done: Vec<&Outcome> = outcomes.iter().filter(|o| o.ok()).collect();
    println!();
    println!("=== Batch Summary ===");
    println!("total time:    {wall:.1}s");
    println!("completed:     {}", done.len());
    println!("failed:        {}", outcomes.len() - done.len());
    if !done.is_empty() {
        let stats = |xs: Vec<f64>| {
            let avg = xs.iter().sum::<f64>() / xs.len() as f64;
            (avg, xs.iter().cloned().fold(f64::INFINITY, f64::min), xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max))
        };
        let (wa, wmin, wmax) = stats(done.iter().map(|o| o.wall.as_secs_f64()).collect());
        let (pa, pmin, pmax) = stats(done.iter().map(|o| o.resp.gpu_compute_ms as f64 / 1000.0).collect());
        println!("wall time:     avg={wa:.1}s min={wmin:.1}s max={wmax:.1}s");
        println!("prove time:    avg={pa:.1}s min={pmin:.1}s max={pmax:.1}s");
        println!("throughput:    {:.3} proofs/min ({:.1}s/proof)", done.len() as f64 / wall * 60.0, wall / done.len() as f64);
    }
    i32::from(outcomes.len() > done.len())
}
