//! `verify --param-cache DIR --input FILE`: independent verification of WindowPoSt proofs from
//! their public inputs and the `.vk` file alone, partition by partition. Input and output formats
//! are in README.md ("Verifier input and output"). Exit 0 when the input was read, 2 otherwise.

use clap::Parser;
use serde::Deserialize;
use serde_json::json;

#[derive(Parser)]
#[command(name = "verify", about = "Verify proofs from public inputs and vk files")]
struct Args {
    /// Directory with the .vk files (FIL_PROOFS_PARAMETER_CACHE).
    #[arg(long)]
    param_cache: String,
    /// Batch file (JSON, {"items": [...]}).
    #[arg(long)]
    input: String,
}

#[derive(Deserialize)]
struct Sector {
    sector_id: u64,
    comm_r: String,
}

#[derive(Deserialize)]
struct Item {
    id: String,
    proof_kind: String,
    sector_size: u64,
    miner_id: u64,
    randomness: String,
    sectors: Vec<Sector>,
    proof: String,
}

#[derive(Deserialize)]
struct Batch {
    items: Vec<Item>,
}

fn hex32(s: &str, what: &str) -> anyhow::Result<[u8; 32]> {
    let v = hex::decode(s).map_err(|e| anyhow::anyhow!("{what} is not hex: {e}"))?;
    v.try_into().map_err(|v: Vec<u8>| anyhow::anyhow!("{what} must be 32 bytes, got {}", v.len()))
}

fn verify_item(
    vk: &Result<bellperson::groth16::PreparedVerifyingKey<blstrs::Bls12>, String>,
    it: &Item,
) -> anyhow::Result<Vec<bool>> {
    anyhow::ensure!(it.proof_kind == "WINDOW_POST_PARTITION", "proof kind {} not supported by this verifier", it.proof_kind);
    anyhow::ensure!(it.sector_size == refprover::wpost::SECTOR_SIZE, "sector size {} has no vk here (2 KiB only)", it.sector_size);
    let vk = vk.as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
    let randomness = hex32(&it.randomness, "randomness")?;
    let sectors = it
        .sectors
        .iter()
        .map(|s| Ok((s.sector_id, hex32(&s.comm_r, "comm_r")?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let proof = hex::decode(&it.proof).map_err(|e| anyhow::anyhow!("proof is not hex: {e}"))?;
    refprover::wpost::verify_partitions(vk, &randomness, refprover::wpost::prover_id(it.miner_id), &sectors, &proof)
}

fn main() {
    let args = Args::parse();
    refprover::params::set_param_cache(&args.param_cache);
    let batch: Batch = match std::fs::read_to_string(&args.input)
        .map_err(anyhow::Error::from)
        .and_then(|t| serde_json::from_str(&t).map_err(anyhow::Error::from))
    {
        Ok(b) => b,
        Err(e) => {
            eprintln!("verify: cannot read batch {}: {e}", args.input);
            std::process::exit(2);
        }
    };
    let vk = refprover::params::window_post_vk().map_err(|e| format!("{e:#}"));
    let partitions_expected = |it: &Item| refprover::wpost::partitions_for(it.sectors.len());
    let results: Vec<_> = batch
        .items
        .iter()
        .map(|it| match verify_item(&vk, it) {
            Ok(parts) => json!({"id": it.id, "valid": parts.iter().all(|p| *p), "partitions": parts, "error": null}),
            Err(e) => json!({"id": it.id, "valid": false,
                             "partitions": vec![false; partitions_expected(it)], "error": format!("{e:#}")}),
        })
        .collect();
    println!("{}", json!({"results": results}));
}
