//! PoRep C2 for 2 KiB sectors: the cuzk C1 envelope, proving all partitions in one batch or one
//! partition at a time, and per-partition verification from public inputs and the vk alone.
//! Call sequences follow rust-fil-proofs `filecoin-proofs/src/api/seal.rs` (19.1.0:
//! `seal_commit_phase2_circuit_proofs`, `verify_seal`).
//!
//! The standard 2 KiB PoRep has 1 partition. `PoRepConfig`'s fields are public, so a 2-partition
//! variant (same sector, challenges split over 2 circuits, its own params) exercises partition
//! assembly; the C1 output carries the partition count (`vanilla_proofs.len()`).

use anyhow::{bail, ensure, Context, Result};
use base64::Engine as _;
use bellperson::groth16;
use blstrs::Bls12;
use filecoin_hashers::Hasher;
use filecoin_proofs::{
    as_safe_commitment, parameters::public_params, parameters::setup_params, DefaultPieceDomain,
    DefaultPieceHasher, PoRepConfig, PoRepProofPartitions, ProverId, SealCommitPhase1Output,
};
use serde::Deserialize;
use storage_proofs_core::api_version::ApiVersion;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::parameter_cache::Bls12GrothParams;
use storage_proofs_porep::stacked::{self, generate_replica_id, StackedCompound, StackedDrg, Tau};

use crate::wpost::{Tree, PARTITION_PROOF_BYTES, SECTOR_SIZE};

/// `RegisteredSealProof::StackedDrg2KiBV1_1` (go-state-types abi numbering).
pub const REGISTERED_PROOF: u64 = 5;
/// Partition counts refprover supports for 2 KiB PoRep: the standard 1 and a 2-partition variant.
pub const SUPPORTED_PARTITIONS: &[usize] = &[1, 2];

type Compound = StackedCompound<Tree, DefaultPieceHasher>;
type Domain = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

/// The porep id of a registered seal proof: its number as u64 little-endian, zero-padded.
pub fn porep_id(registered_proof: u64) -> [u8; 32] {
    let mut id = [0u8; 32];
    id[..8].copy_from_slice(&registered_proof.to_le_bytes());
    id
}

/// The PoRep config of a 2 KiB sector with `partitions` partitions (API version 1.2.0).
///
/// Errors: a partition count other than 1 or 2.
pub fn config(partitions: usize) -> Result<PoRepConfig> {
    ensure!(
        SUPPORTED_PARTITIONS.contains(&partitions),
        "2 KiB PoRep with {partitions} partitions is not supported (supported: {SUPPORTED_PARTITIONS:?})"
    );
    let mut cfg = PoRepConfig::new_groth16(SECTOR_SIZE, porep_id(REGISTERED_PROOF), ApiVersion::V1_2_0);
    cfg.partitions = PoRepProofPartitions(partitions as u8);
    Ok(cfg)
}

/// The circuit id of a partition count: `porep-2k` (1) or `porep-2k-2p` (2).
pub fn circuit_id(partitions: usize) -> String {
    if partitions == 1 { "porep-2k".into() } else { format!("porep-2k-{partitions}p") }
}

/// Partition count of a circuit id (inverse of `circuit_id`).
pub fn partitions_of(circuit_id: &str) -> Option<usize> {
    match circuit_id {
        "porep-2k" => Some(1),
        "porep-2k-2p" => Some(2),
        _ => None,
    }
}

/// The vanilla public params (what the param files are keyed by).
pub fn vanilla_public_params(partitions: usize) -> Result<stacked::PublicParams<Tree>> {
    public_params::<Tree>(&config(partitions)?)
}

/// The cuzk C1 envelope: `{"SectorNum": u64, "Phase1Out": base64 JSON, "SectorSize": u64}`
/// (docs/cuzk-interface.md).
#[derive(Deserialize)]
struct Envelope {
    #[serde(rename = "SectorNum")]
    sector_num: u64,
    #[serde(rename = "Phase1Out")]
    phase1_out: String,
    #[serde(rename = "SectorSize")]
    sector_size: u64,
}

/// A parsed C1 output.
pub struct C1 {
    pub sector_num: u64,
    pub out: SealCommitPhase1Output<Tree>,
}

impl C1 {
    /// Partitions in this C1 (one vanilla proof list per partition).
    pub fn partitions(&self) -> usize {
        self.out.vanilla_proofs.len()
    }
}

/// `registered_proof` of the C1 outputs refprover writes: filecoin-proofs-api's name of
/// [`REGISTERED_PROOF`].
pub const REGISTERED_PROOF_NAME: &str = "StackedDrg2KiBV1_1";
/// The `VanillaSealProof` variant of a 2 KiB sector in filecoin-proofs-api.
const VANILLA_VARIANT: &str = "StackedDrg2KiBV1";

/// Parses the C1 envelope. `Phase1Out` is filecoin-proofs-api's `SealCommitPhase1Output` JSON,
/// as filecoin-ffi's SealCommitPhase1 writes it and cuzk reads it (filecoin-proofs-api 19.0.0
/// `seal.rs`: `registered_proof`, `vanilla_proofs` = `{"StackedDrg2KiBV1": [[...]]}`, `comm_r`,
/// `comm_d`, `replica_id`, `seed`, `ticket`). Errors read like cuzk's: `C1 parse failed: ...`.
pub fn parse_c1(bytes: &[u8]) -> Result<C1> {
    let env: Envelope = serde_json::from_slice(bytes)
        .map_err(|e| anyhow::anyhow!("C1 parse failed: envelope is not JSON {{SectorNum, Phase1Out, SectorSize}}: {e}"))?;
    if env.sector_size != SECTOR_SIZE {
        bail!("C1 parse failed: SectorSize {} is not supported (refprover proves 2 KiB = 2048)", env.sector_size);
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(env.phase1_out.trim())
        .map_err(|e| anyhow::anyhow!("C1 parse failed: Phase1Out is not base64: {e}"))?;
    let mut doc: serde_json::Value = serde_json::from_slice(&raw)
        .map_err(|e| anyhow::anyhow!("C1 parse failed: Phase1Out is not JSON: {e}"))?;
    let registered = doc.get("registered_proof").and_then(|v| v.as_str()).unwrap_or_default().to_string();
    if !registered.starts_with("StackedDrg2KiB") {
        bail!(
            "C1 parse failed: failed to deserialize SealCommitPhase1Output from JSON: registered_proof {registered:?} is not a 2 KiB seal proof (filecoin-proofs-api's form, e.g. {REGISTERED_PROOF_NAME:?}; regenerate the workload with `seal`)"
        );
    }
    let vanilla = doc
        .get_mut("vanilla_proofs")
        .and_then(|v| v.as_object_mut())
        .and_then(|m| m.remove(VANILLA_VARIANT))
        .with_context(|| format!("C1 parse failed: failed to deserialize SealCommitPhase1Output from JSON: vanilla_proofs is not {{\"{VANILLA_VARIANT}\": [...]}}"))?;
    doc["vanilla_proofs"] = vanilla;
    let out: SealCommitPhase1Output<Tree> = serde_json::from_value(doc)
        .map_err(|e| anyhow::anyhow!("C1 parse failed: failed to deserialize SealCommitPhase1Output from JSON: {e}"))?;
    let c1 = C1 { sector_num: env.sector_num, out };
    if !SUPPORTED_PARTITIONS.contains(&c1.partitions()) {
        bail!("C1 parse failed: {} partitions (supported: {SUPPORTED_PARTITIONS:?})", c1.partitions());
    }
    Ok(c1)
}

/// Writes the cuzk C1 envelope for a C1 output, `Phase1Out` in filecoin-proofs-api's form
/// (see [`parse_c1`]).
pub fn envelope(sector_num: u64, out: &SealCommitPhase1Output<Tree>) -> Result<Vec<u8>> {
    let mut doc = serde_json::to_value(out)?;
    let vanilla = doc["vanilla_proofs"].take();
    doc["vanilla_proofs"] = serde_json::json!({ VANILLA_VARIANT: vanilla });
    doc["registered_proof"] = serde_json::Value::from(REGISTERED_PROOF_NAME);
    let phase1 = base64::engine::general_purpose::STANDARD.encode(serde_json::to_vec(&doc)?);
    Ok(serde_json::to_vec(&serde_json::json!({"SectorNum": sector_num, "Phase1Out": phase1, "SectorSize": SECTOR_SIZE}))?)
}

fn public_inputs(c1: &C1) -> Result<stacked::PublicInputs<Domain, DefaultPieceDomain>> {
    Ok(stacked::PublicInputs {
        replica_id: c1.out.replica_id,
        tau: Some(Tau {
            comm_d: as_safe_commitment(&c1.out.comm_d, "comm_d")?,
            comm_r: as_safe_commitment(&c1.out.comm_r, "comm_r")?,
        }),
        k: None,
        seed: Some(c1.out.seed),
    })
}

fn compound_params(partitions: usize) -> Result<compound_proof::PublicParams<'static, StackedDrg<'static, Tree, DefaultPieceHasher>>> {
    let setup = compound_proof::SetupParams {
        vanilla_params: setup_params(&config(partitions)?)?,
        partitions: Some(partitions),
        priority: false,
    };
    Compound::setup(&setup)
}

fn to_bytes(proofs: &[groth16::Proof<Bls12>]) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(proofs.len() * PARTITION_PROOF_BYTES);
    for p in proofs {
        p.write(&mut out)?;
    }
    Ok(out)
}

/// Proves partitions of a C1: all of them in one batch (`k = None`, num_circuits = partitions)
/// or only partition `k`. Returns `192 x proved partitions` bytes.
pub fn prove(c1: &C1, k: Option<usize>, groth: &Bls12GrothParams) -> Result<Vec<u8>> {
    let partitions = c1.partitions();
    let pp = compound_params(partitions)?;
    let inputs = public_inputs(c1)?;
    let vanilla = match k {
        None => c1.out.vanilla_proofs.clone(),
        Some(k) => {
            let v = c1.out.vanilla_proofs.get(k).with_context(|| format!("partition {k} out of range ({partitions})"))?;
            // circuit_proofs numbers its circuits from 0; a PoRep circuit takes its challenges
            // from the vanilla proof, so proving one partition alone is sound.
            vec![v.clone()]
        }
    };
    let proofs = Compound::circuit_proofs(&inputs, vanilla, &pp.vanilla_params, groth, false)?;
    to_bytes(&proofs)
}

/// The public inputs a verifier needs, from the workload (never from the prover).
pub struct PublicInputs {
    pub comm_r: [u8; 32],
    pub comm_d: [u8; 32],
    pub prover_id: ProverId,
    pub sector_num: u64,
    pub ticket: [u8; 32],
    pub seed: [u8; 32],
    pub partitions: usize,
}

impl PublicInputs {
    /// The public inputs of a C1 output (for the daemon's self-check).
    pub fn of_c1(c1: &C1, prover_id: ProverId) -> Self {
        Self {
            comm_r: c1.out.comm_r,
            comm_d: c1.out.comm_d,
            prover_id,
            sector_num: c1.sector_num,
            ticket: c1.out.ticket,
            seed: c1.out.seed,
            partitions: c1.partitions(),
        }
    }
}

/// Verifies a PoRep proof partition by partition (`vk` from `params::vk`). Returns one verdict
/// per partition. Errors: wrong length (not `partitions x 192` bytes), bad commitments.
pub fn verify_partitions(vk: &groth16::PreparedVerifyingKey<Bls12>, pi: &PublicInputs, proof: &[u8]) -> Result<Vec<bool>> {
    if proof.len() != pi.partitions * PARTITION_PROOF_BYTES {
        bail!(
            "proof is {} bytes, expected {} ({} partitions x {} bytes)",
            proof.len(),
            pi.partitions * PARTITION_PROOF_BYTES,
            pi.partitions,
            PARTITION_PROOF_BYTES
        );
    }
    let cfg = config(pi.partitions)?;
    let comm_d: DefaultPieceDomain = as_safe_commitment(&pi.comm_d, "comm_d")?;
    let comm_r: Domain = as_safe_commitment(&pi.comm_r, "comm_r")?;
    let replica_id = generate_replica_id::<<Tree as MerkleTreeTrait>::Hasher, _>(
        &pi.prover_id,
        pi.sector_num,
        &pi.ticket,
        comm_d,
        &cfg.porep_id,
    );
    let inputs = stacked::PublicInputs { replica_id, tau: Some(Tau { comm_r, comm_d }), k: None, seed: Some(pi.seed) };
    let pp = compound_params(pi.partitions)?;
    let mut verdicts = Vec::with_capacity(pi.partitions);
    for k in 0..pi.partitions {
        let public = Compound::generate_public_inputs(&inputs, &pp.vanilla_params, Some(k))?;
        let chunk = &proof[k * PARTITION_PROOF_BYTES..(k + 1) * PARTITION_PROOF_BYTES];
        let ok = match groth16::Proof::<Bls12>::read(chunk) {
            Ok(p) => groth16::verify_proof(vk, &p, &public).unwrap_or(false),
            Err(_) => false,
        };
        verdicts.push(ok);
    }
    Ok(verdicts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn circuit_ids_round_trip() {
        for p in SUPPORTED_PARTITIONS {
            assert_eq!(partitions_of(&circuit_id(*p)), Some(*p));
        }
        assert!(config(3).is_err());
    }

    #[test]
    fn phase1_out_is_filecoin_proofs_api_form() {
        let b64 = |v: serde_json::Value| base64::engine::general_purpose::STANDARD.encode(v.to_string());
        let env = |inner: serde_json::Value| serde_json::json!({"SectorNum": 1, "Phase1Out": b64(inner), "SectorSize": 2048}).to_string();
        // filecoin-proofs' own (internal) form, without registered_proof: what cuzk rejects
        let internal = env(serde_json::json!({"vanilla_proofs": [[]], "comm_r": vec![0u8; 32]}));
        let err = parse_c1(internal.as_bytes()).err().expect("must fail").to_string();
        assert!(err.contains("failed to deserialize SealCommitPhase1Output") && err.contains("registered_proof"), "{err}");
        let unwrapped = env(serde_json::json!({"registered_proof": REGISTERED_PROOF_NAME, "vanilla_proofs": [[]]}));
        let err = parse_c1(unwrapped.as_bytes()).err().expect("must fail").to_string();
        assert!(err.contains("StackedDrg2KiBV1"), "{err}");
    }

    #[test]
    fn bad_envelopes_fail_like_cuzk() {
        for bad in [&b"not json"[..], br#"{"SectorNum":1,"Phase1Out":"!!","SectorSize":2048}"#, br#"{"SectorNum":1,"Phase1Out":"e30=","SectorSize":34359738368}"#] {
            let err = parse_c1(bad).err().expect("must fail").to_string();
            assert!(err.starts_with("C1 parse failed: "), "{err}");
        }
    }
}
