//! Seals real 2 KiB sectors (PC1 + PC2 over random piece data) and writes proofdiff workloads
//! (formats in README.md, "Workload files"). Deterministic for a given seed; needs no params.
//! - `seal wpost --out FILE [--sectors 4] [--jobs 4] [--miner-id 1000] [--seed 1]`: per job a
//!   fresh randomness and one vanilla proof per sector.
//! - `seal porep --out FILE [--sectors 2] [--partitions 1] [--miner-id 1000] [--seed 1]`: per
//!   sector one job, its C1 output in the cuzk envelope plus the verifier's public inputs.

use std::collections::BTreeMap;
use std::io::{Seek, Write};
use std::time::Instant;

use anyhow::{Context, Result};
use base64::Engine as _;
use clap::{Parser, Subcommand};
use filecoin_proofs::{
    add_piece, clear_cache, generate_fallback_sector_challenges, generate_piece_commitment,
    generate_single_vanilla_proof, seal_commit_phase1, seal_pre_commit_phase1, seal_pre_commit_phase2,
    PaddedBytesAmount, PoRepConfig, PrivateReplicaInfo, SealCommitPhase1Output, UnpaddedBytesAmount,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use refprover::porep;
use refprover::wpost::{self, Tree};
use storage_proofs_core::sector::SectorId;

#[derive(Parser)]
#[command(name = "seal", about = "Seal 2 KiB sectors and write proofdiff workloads")]
struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// A WindowPoSt workload (wpost-2k).
    Wpost {
        /// Accepted for symmetry with paramgen; sealing needs no params.
        #[arg(long)]
        param_cache: Option<String>,
        /// Output workload JSON.
        #[arg(long)]
        out: String,
        /// Sectors to seal (2 per partition).
        #[arg(long, default_value_t = 4)]
        sectors: u64,
        /// Jobs (each with its own randomness).
        #[arg(long, default_value_t = 4)]
        jobs: usize,
        #[arg(long, default_value_t = 1000)]
        miner_id: u64,
        /// RNG seed: piece data, tickets and randomness.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// A PoRep C2 workload (porep-2k, or porep-2k-2p with --partitions 2).
    Porep {
        /// Output workload JSON.
        #[arg(long)]
        out: String,
        /// Sectors to seal: one job each, sector numbers 1..=N.
        #[arg(long, default_value_t = 2)]
        sectors: u64,
        /// PoRep partitions (1 = standard 2 KiB; 2 = the 2-partition variant).
        #[arg(long, default_value_t = 1)]
        partitions: usize,
        #[arg(long, default_value_t = 1000)]
        miner_id: u64,
        /// RNG seed: piece data, tickets and seeds.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

struct Sealed {
    id: SectorId,
    comm_r: [u8; 32],
    replica: PrivateReplicaInfo<Tree>,
    /// The C1 output and its seed, when asked for (PoRep workloads).
    c1: Option<(SealCommitPhase1Output<Tree>, [u8; 32])>,
    _dir: tempfile::TempDir,
}

fn seal_sector(cfg: &PoRepConfig, rng: &mut ChaCha20Rng, prover_id: [u8; 32], id: u64, with_c1: bool) -> Result<Sealed> {
    let dir = tempfile::tempdir()?;
    let cache = dir.path().join("cache");
    std::fs::create_dir_all(&cache)?;
    let staged = dir.path().join("staged");
    let sealed = dir.path().join("sealed");
    let piece_size = UnpaddedBytesAmount::from(PaddedBytesAmount(wpost::SECTOR_SIZE));
    let piece: Vec<u8> = (0..u64::from(piece_size)).map(|_| rng.gen()).collect();
    let piece_info = generate_piece_commitment(&piece[..], piece_size)?;
    let mut staged_f = std::fs::File::create(&staged)?;
    add_piece(&piece[..], &mut staged_f, piece_size, &[])?;
    staged_f.flush()?;
    staged_f.rewind()?;
    std::fs::File::create(&sealed)?;
    let ticket: [u8; 32] = rng.gen();
    let sector_id = SectorId::from(id);
    let p1 = seal_pre_commit_phase1::<_, _, _, Tree>(cfg, &cache, &staged, &sealed, prover_id, sector_id, ticket, std::slice::from_ref(&piece_info))
        .context("seal_pre_commit_phase1")?;
    let pc = seal_pre_commit_phase2(cfg, p1, &cache, &sealed).context("seal_pre_commit_phase2")?;
    let comm_r = pc.comm_r;
    let c1 = if with_c1 {
        let seed = fr_bytes(rng);
        let out = seal_commit_phase1::<_, Tree>(cfg, &cache, &sealed, prover_id, sector_id, ticket, seed, pc, &[piece_info])
            .context("seal_commit_phase1")?;
        Some((out, seed))
    } else {
        None
    };
    clear_cache(&cache)?;
    let replica = PrivateReplicaInfo::<Tree>::new(sealed, comm_r, cache)?;
    Ok(Sealed { id: sector_id, comm_r, replica, c1, _dir: dir })
}

/// A random 32-byte value that is a valid field element (top two bits clear).
fn fr_bytes(rng: &mut ChaCha20Rng) -> [u8; 32] {
    let mut r: [u8; 32] = rng.gen();
    r[31] &= 0x3f;
    r
}

fn wpost_workload(out: &str, sectors: u64, jobs: usize, miner_id: u64, seed: u64) -> Result<()> {
    let t0 = Instant::now();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let cfg = porep::config(1)?;
    let prover_id = wpost::prover_id(miner_id);
    let sealed = (1..=sectors)
        .map(|id| seal_sector(&cfg, &mut rng, prover_id, id, false).with_context(|| format!("sealing sector {id}")))
        .collect::<Result<Vec<_>>>()?;
    let seal_s = t0.elapsed().as_secs_f64();
    let post_cfg = wpost::post_config();
    let ids: Vec<SectorId> = sealed.iter().map(|s| s.id).collect();
    let by_id: BTreeMap<SectorId, &Sealed> = sealed.iter().map(|s| (s.id, s)).collect();
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut job_list = Vec::new();
    for j in 0..jobs {
        let randomness = fr_bytes(&mut rng);
        let challenges = generate_fallback_sector_challenges::<Tree>(&post_cfg, &randomness, &ids, prover_id)?;
        let mut vanilla = Vec::new();
        for id in &ids {
            let s = by_id[id];
            let v = generate_single_vanilla_proof::<Tree>(&post_cfg, *id, &s.replica, &challenges[id])?;
            vanilla.push(b64.encode(bincode::serialize(&v)?));
        }
        job_list.push(serde_json::json!({
            "name": format!("wpost-{j}"),
            "miner_id": miner_id,
            "randomness": hex::encode(randomness),
            "sectors": sealed.iter().map(|s| serde_json::json!({"sector_id": u64::from(s.id), "comm_r": hex::encode(s.comm_r)})).collect::<Vec<_>>(),
            "vanilla_proofs": vanilla,
        }));
    }
    let doc = serde_json::json!({
        "schema": 1,
        "workload": "wpost-2k",
        "proof_kind": "WINDOW_POST_PARTITION",
        "sector_size": wpost::SECTOR_SIZE,
        "registered_proof": wpost::REGISTERED_PROOF,
        "api_version": "1.2.0",
        "partitions": wpost::partitions_for(sectors as usize),
        "seed": seed,
        "jobs": job_list,
    });
    std::fs::write(out, serde_json::to_vec_pretty(&doc)?).with_context(|| format!("writing {out}"))?;
    println!("{}", serde_json::json!({"out": out, "sectors": sectors, "jobs": jobs, "seal_seconds": seal_s, "seconds": t0.elapsed().as_secs_f64()}));
    Ok(())
}

fn porep_workload(out: &str, sectors: u64, partitions: usize, miner_id: u64, seed: u64) -> Result<()> {
    let t0 = Instant::now();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let cfg = porep::config(partitions)?;
    let prover_id = wpost::prover_id(miner_id);
    let mut jobs = Vec::new();
    for id in 1..=sectors {
        let s = seal_sector(&cfg, &mut rng, prover_id, id, true).with_context(|| format!("sealing sector {id}"))?;
        let (c1, seed) = s.c1.expect("asked for C1");
        let envelope = porep::envelope(id, &c1)?;
        jobs.push(serde_json::json!({
            "name": format!("porep-s{id}"),
            "miner_id": miner_id,
            "sector_number": id,
            "comm_r": hex::encode(c1.comm_r),
            "comm_d": hex::encode(c1.comm_d),
            "ticket": hex::encode(c1.ticket),
            "seed": hex::encode(seed),
            "c1": String::from_utf8(envelope)?,
        }));
    }
    let doc = serde_json::json!({
        "schema": 1,
        "workload": porep::circuit_id(partitions),
        "proof_kind": "POREP_SEAL_COMMIT",
        "sector_size": wpost::SECTOR_SIZE,
        "registered_proof": porep::REGISTERED_PROOF,
        "api_version": "1.2.0",
        "partitions": partitions,
        "seed": seed,
        "jobs": jobs,
    });
    std::fs::write(out, serde_json::to_vec_pretty(&doc)?).with_context(|| format!("writing {out}"))?;
    println!("{}", serde_json::json!({"out": out, "sectors": sectors, "partitions": partitions, "seconds": t0.elapsed().as_secs_f64()}));
    Ok(())
}

fn main() {
    let args = Args::parse();
    let res = match args.cmd {
        Cmd::Wpost { param_cache, out, sectors, jobs, miner_id, seed } => {
            if let Some(p) = param_cache {
                refprover::params::set_param_cache(&p);
            }
            wpost_workload(&out, sectors, jobs, miner_id, seed)
        }
        Cmd::Porep { out, sectors, partitions, miner_id, seed } => porep_workload(&out, sectors, partitions, miner_id, seed),
    };
    if let Err(e) = res {
        eprintln!("seal: error: {e:#}");
        std::process::exit(1);
    }
}
