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
/// (DESIGN.md §3).
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

/// Parses the C1 envelope. Errors read like cuzk's: `C1 parse failed: ...`.
pub fn parse_c1(bytes: &[u8]) -> Result<C1> {
    let env: Envelope = serde_json::from_slice(bytes)
        .map_err(|e| anyhow::anyhow!("C1 parse failed: envelope is not JSON {{SectorNum, Phase1Out, SectorSize}}: {e}"))?;
    if env.sector_size != SECTOR_SIZE {
        bail!("C1 parse failed: SectorSize {} is not supported (refprover proves 2 KiB = 2048)", env.sector_size);
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(env.phase1_out.trim())
        .map_err(|e| anyhow::anyhow!("C1 parse failed: Phase1Out is not base64: {e}"))?;
    let out: SealCommitPhase1Output<Tree> = serde_json::from_slice(&raw)
        .map_err(|e| anyhow::anyhow!("C1 parse failed: Phase1Out is not a SealCommitPhase1Output for 2 KiB: {e}"))?;
    let c1 = C1 { sector_num: env.sector_num, out };
    if !SUPPORTED_PARTITIONS.contains(&c1.partitions()) {
        bail!("C1 parse failed: {} partitions (supported: {SUPPORTED_PARTITIONS:?})", c1.partitions());
    }
    Ok(c1)
}

/// Writes the cuzk C1 envelope for a C1 output.
pub fn envelope(sector_num: u64, out: &SealCommitPhase1Output<Tree>) -> Result<Vec<u8>> {
    let phase1 = base64::engine::general_purpose::STANDARD.encode(serde_json::to_vec(out)?);
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
    fn bad_envelopes_fail_like_cuzk() {
        for bad in [&b"not json"[..], br#"{"SectorNum":1,"Phase1Out":"!!","SectorSize":2048}"#, br#"{"SectorNum":1,"Phase1Out":"e30=","SectorSize":34359738368}"#] {
            let err = parse_c1(bad).err().expect("must fail").to_string();
            assert!(err.starts_with("C1 parse failed: "), "{err}");
        }
    }
}
