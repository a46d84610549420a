//! `verify --param-cache DIR --input FILE`: independent verification of WindowPoSt and PoRep
//! proofs from their public inputs and the `.vk` files alone, partition by partition, at every
//! sector size filecoin-proofs registers (refprover::verify_any). Input and
//! output formats are in README.md ("Verifier input and output"). Exit 0 when the input was
//! read (whatever the verdicts), 2 otherwise.
//!
//! `verify --param-cache DIR --serve`: the same for many batches, one per stdin line, each
//! answered by one stdout line (flushed), with the `.vk` files loaded once: one verifier per run
//! instead of one process per flow. A line that is not a batch is answered
//! `{"error": "..."}` and the next line is read; exit 0 at end of input.

use anyhow::Result;
use clap::Parser;
use refprover::verify_any::Verifier;
use refprover::{faults::Faults, params, porep, wpost};
use serde::Deserialize;
use serde_json::json;
use std::io::{BufRead, Write};

#[derive(Parser)]
#[command(name = "verify", about = "Verify proofs from public inputs and vk files")]
struct Args {
    /// Directory with the .vk files (FIL_PROOFS_PARAMETER_CACHE).
    #[arg(long)]
    param_cache: String,
    /// Batch file (JSON, {"items": [...]}).
    #[arg(long, required_unless_present = "serve", conflicts_with = "serve")]
    input: Option<String>,
    /// Read batches from stdin, one JSON line each, and answer each with one line.
    #[arg(long)]
    serve: bool,
}

#[derive(Deserialize)]
struct Sector {
    sector_id: u64,
    comm_r: String,
}

/// One proof with its public inputs; fields by proof kind (README.md).
#[derive(Deserialize)]
struct Item {
    id: String,
    proof_kind: String,
    sector_size: u64,
    miner_id: u64,
    proof: String,
    // WINDOW_POST_PARTITION
    randomness: Option<String>,
    #[serde(default)]
    sectors: Vec<Sector>,
    // POREP_SEAL_COMMIT
    sector_number: Option<u64>,
    comm_r: Option<String>,
    comm_d: Option<String>,
    ticket: Option<String>,
    seed: Option<String>,
    partitions: Option<usize>,
    /// The Go abi seal proof id (its porep id is in the replica id); default: the V1_1 id of
    /// the sector size.
    registered_proof: Option<u64>,
}

#[derive(Deserialize)]
struct Batch {
    items: Vec<Item>,
}

fn hex32(s: Option<&String>, what: &str) -> Result<[u8; 32]> {
    let s = s.ok_or_else(|| anyhow::anyhow!("{what} is missing"))?;
    let v = hex::decode(s).map_err(|e| anyhow::anyhow!("{what} is not hex: {e}"))?;
    v.try_into().map_err(|v: Vec<u8>| anyhow::anyhow!("{what} must be 32 bytes, got {}", v.len()))
}

/// The number of partitions the item's public inputs imply (for the error row).
fn expected_partitions(it: &Item) -> usize {
    match it.proof_kind.as_str() {
        "POREP_SEAL_COMMIT" => it.partitions.unwrap_or(1),
        _ => refprover::verify_any::post_config(it.sector_size)
            .map(|cfg| filecoin_proofs::get_num_partition_for_fallback_post(&cfg, it.sectors.len().max(1)))
            .unwrap_or(1),
    }
}

fn verify_item(v: &mut Verifier, it: &Item) -> Result<Vec<bool>> {
    let proof = hex::decode(&it.proof).map_err(|e| anyhow::anyhow!("proof is not hex: {e}"))?;
    let prover_id = wpost::prover_id(it.miner_id);
    match it.proof_kind.as_str() {
        "WINDOW_POST_PARTITION" => {
            let randomness = hex32(it.randomness.as_ref(), "randomness")?;
            let sectors = it
                .sectors
                .iter()
                .map(|s| Ok((s.sector_id, hex32(Some(&s.comm_r), "comm_r")?)))
                .collect::<Result<Vec<_>>>()?;
            v.window_post(it.sector_size, &randomness, prover_id, &sectors, &proof)
        }
        "POREP_SEAL_COMMIT" => {
            let pi = porep::PublicInputs {
                comm_r: hex32(it.comm_r.as_ref(), "comm_r")?,
                comm_d: hex32(it.comm_d.as_ref(), "comm_d")?,
                prover_id,
                sector_num: it.sector_number.ok_or_else(|| anyhow::anyhow!("sector_number is missing"))?,
                ticket: hex32(it.ticket.as_ref(), "ticket")?,
                seed: hex32(it.seed.as_ref(), "seed")?,
                partitions: it.partitions.unwrap_or(1),
            };
            v.porep(it.sector_size, it.registered_proof, &pi, &proof)
        }
        other => anyhow::bail!("proof kind {other} not supported (POREP_SEAL_COMMIT, WINDOW_POST_PARTITION)"),
    }
}

/// The verdict over per-partition results: valid only when there is at least one partition and
/// every partition verifies (an empty list is not a proof: "no partition to verify").
fn verdict(parts: &[bool]) -> (bool, Option<&'static str>) {
    if parts.is_empty() {
        return (false, Some("no partition to verify"));
    }
    (parts.iter().all(|p| *p), None)
}

/// The results line of one batch (`lenient`: the lenient-verify fault, every proof valid).
fn judge(verifier: &mut Verifier, lenient: bool, batch: &Batch) -> serde_json::Value {
    let results: Vec<_> = batch
        .items
        .iter()
        .map(|it| match if lenient { Ok(vec![true; expected_partitions(it)]) } else { verify_item(verifier, it) } {
            Ok(parts) => {
                let (valid, error) = verdict(&parts);
                json!({"id": it.id, "valid": valid, "partitions": parts, "error": error})
            }
            Err(e) => json!({"id": it.id, "valid": false,
                             "partitions": vec![false; expected_partitions(it)], "error": format!("{e:#}")}),
        })
        .collect();
    json!({"results": results})
}

/// `--serve`: one answer line per stdin line until end of input.
fn serve(verifier: &mut Verifier, lenient: bool) -> std::io::Result<()> {
    let stdout = std::io::stdout();
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<Batch>(&line) {
            Ok(batch) => judge(verifier, lenient, &batch),
            Err(e) => json!({"error": format!("cannot read batch: {e}")}),
        };
        let mut out = stdout.lock();
        writeln!(out, "{answer}")?;
        out.flush()?;
    }
    Ok(())
}

fn main() {
    let args = Args::parse();
    params::set_param_cache(&args.param_cache);
    // FAULT lenient-verify: a verifier that accepts every proof (a baseline image whose own
    // verify tool is broken; the gate's cross-check against its pinned verifier must say so).
    let lenient = match Faults::from_env() {
        Ok(f) => f.on("lenient-verify"),
        Err(e) => {
            eprintln!("verify: {e:#}");
            std::process::exit(2);
        }
    };
    let mut verifier = Verifier::default();
    let Some(input) = args.input else {
        if let Err(e) = serve(&mut verifier, lenient) {
            eprintln!("verify: --serve: {e}");
            std::process::exit(2);
        }
        return;
    };
    let batch: Batch = match std::fs::read_to_string(&input)
        .map_err(anyhow::Error::from)
        .and_then(|t| serde_json::from_str(&t).map_err(anyhow::Error::from))
    {
        Ok(b) => b,
        Err(e) => {
            eprintln!("verify: cannot read batch {input}: {e}");
            std::process::exit(2);
        }
    };
    println!("{}", judge(&mut verifier, lenient, &batch));
}

#[cfg(test)]
mod tests {
    use super::verdict;

    #[test]
    fn an_empty_partition_list_is_not_valid() {
        assert_eq!(verdict(&[]), (false, Some("no partition to verify")));
        assert_eq!(verdict(&[true, true]), (true, None));
        assert_eq!(verdict(&[true, false]), (false, None));
    }
}
