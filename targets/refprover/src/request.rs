//! From a SubmitProofRequest to proof inputs: decoding and validation per proof kind (errors are
//! the FAILED messages callers see), proving all partitions or one, and verification of an
//! assembled proof (the daemon's self-check).

use anyhow::Result;
use bellperson::groth16::PreparedVerifyingKey;
use blstrs::Bls12;
use filecoin_proofs::{ChallengeSeed, ProverId};
use storage_proofs_core::parameter_cache::Bls12GrothParams;

use crate::proto::{ProofKind, SubmitProofRequest};
use crate::{porep, wpost};

/// The decoded inputs of one job.
pub enum Inputs {
    Wpost {
        randomness: ChallengeSeed,
        prover_id: ProverId,
        miner_id: u64,
        sectors: Vec<(u64, [u8; 32])>,
        /// Bincode sector proofs split by partition (validated at decode; decoded again to prove,
        /// as `FallbackPoStSectorProof` is not `Clone`).
        parts: Vec<Vec<Vec<u8>>>,
        /// The request's `partition_index`: the WindowPoSt partition its first part is. cuzk
        /// proves one partition per request (curio sends each partition's sectors with its
        /// index); refprover also proves a whole job's partitions in one request (index 0).
        first_partition: usize,
    },
    Porep {
        c1: porep::C1,
        public: porep::PublicInputs,
        miner_id: u64,
    },
}

impl Inputs {
    /// Decodes and validates a request. Errors: the FAILED message for the caller.
    pub fn decode(req: &SubmitProofRequest) -> Result<Self, String> {
        let kind = ProofKind::try_from(req.proof_kind).unwrap_or(ProofKind::Unspecified);
        if req.sector_size != wpost::SECTOR_SIZE {
            return Err(format!("sector size {} not supported: refprover proves 2 KiB (2048) sectors", req.sector_size));
        }
        match kind {
            ProofKind::WindowPostPartition => {
                let randomness = wpost::randomness(&req.randomness).map_err(|e| e.to_string())?;
                let vanilla = wpost::decode_vanilla(&req.vanilla_proofs).map_err(|e| format!("{e:#}"))?;
                let sectors = vanilla.iter().map(|v| (u64::from(v.sector_id), <[u8; 32]>::from(v.comm_r))).collect();
                Ok(Inputs::Wpost {
                    randomness,
                    prover_id: wpost::prover_id(req.miner_id),
                    miner_id: req.miner_id,
                    sectors,
                    parts: req.vanilla_proofs.chunks(wpost::sectors_per_partition()).map(<[Vec<u8>]>::to_vec).collect(),
                    first_partition: req.partition_index as usize,
                })
            }
            ProofKind::PorepSealCommit => {
                let c1 = porep::parse_c1(&req.vanilla_proof).map_err(|e| format!("{e:#}"))?;
                if req.sector_number != 0 && req.sector_number != c1.sector_num {
                    return Err(format!(
                        "C1 parse failed: request sector_number {} does not match the envelope's SectorNum {}",
                        req.sector_number, c1.sector_num
                    ));
                }
                let public = porep::PublicInputs::of_c1(&c1, wpost::prover_id(req.miner_id));
                Ok(Inputs::Porep { c1, public, miner_id: req.miner_id })
            }
            other => Err(format!(
                "proof kind {} is not supported by this refprover build (supported: POREP_SEAL_COMMIT, WINDOW_POST_PARTITION)",
                other.as_str_name()
            )),
        }
    }

    /// The proof kind's name.
    pub fn kind(&self) -> &'static str {
        match self {
            Inputs::Wpost { .. } => "WINDOW_POST_PARTITION",
            Inputs::Porep { .. } => "POREP_SEAL_COMMIT",
        }
    }

    /// The circuit (SRS) this job needs: `wpost-2k`, `porep-2k` or `porep-2k-2p`.
    pub fn circuit_id(&self) -> String {
        match self {
            Inputs::Wpost { .. } => wpost::CIRCUIT_ID.into(),
            Inputs::Porep { c1, .. } => porep::circuit_id(c1.partitions()),
        }
    }

    /// Number of partitions.
    pub fn partitions(&self) -> usize {
        match self {
            Inputs::Wpost { parts, .. } => parts.len(),
            Inputs::Porep { c1, .. } => c1.partitions(),
        }
    }

    /// A key that names the sectors and partition but not the randomness or seed (used by the
    /// `shared-witness` fault, whose cache wrongly ignores them).
    pub fn witness_key(&self, k: Option<usize>) -> String {
        match self {
            Inputs::Wpost { sectors, .. } => format!("wpost{:?}/{k:?}", sectors.iter().map(|s| s.0).collect::<Vec<_>>()),
            Inputs::Porep { c1, .. } => format!("porep{}/{k:?}", c1.sector_num),
        }
    }

    /// Proves all partitions in one batch (`k = None`) or partition `k`. `groth` is needed for
    /// PoRep (WindowPoSt proving loads its params through filecoin-proofs' own cache).
    pub fn prove(&self, k: Option<usize>, groth: Option<&Bls12GrothParams>) -> Result<Vec<u8>> {
        match self {
            Inputs::Wpost { randomness, prover_id, parts, first_partition, .. } => match k {
                None if *first_partition == 0 => {
                    wpost::prove_all(randomness, *prover_id, wpost::decode_vanilla(&parts.concat())?)
                }
                None => {
                    let mut out = Vec::new();
                    for (i, part) in parts.iter().enumerate() {
                        out.extend(wpost::prove_partition(randomness, *prover_id, wpost::decode_vanilla(part)?, first_partition + i)?);
                    }
                    Ok(out)
                }
                Some(k) => wpost::prove_partition(randomness, *prover_id, wpost::decode_vanilla(&parts[k])?, first_partition + k),
            },
            Inputs::Porep { c1, .. } => {
                let groth = groth.ok_or_else(|| anyhow::anyhow!("PoRep params not loaded"))?;
                porep::prove(c1, k, groth)
            }
        }
    }

    /// Verifies a whole proof; returns the indices of partitions that do not verify. A WindowPoSt
    /// request for a later partition alone is not checked here (its public inputs are those of
    /// the whole job's sector list, which the request does not carry); the independent verifier
    /// checks the assembled job.
    pub fn invalid_partitions(&self, vk: &PreparedVerifyingKey<Bls12>, proof: &[u8]) -> Result<Vec<usize>> {
        let verdicts = match self {
            Inputs::Wpost { first_partition, .. } if *first_partition > 0 => return Ok(Vec::new()),
            Inputs::Wpost { randomness, prover_id, sectors, .. } => {
                wpost::verify_partitions(vk, randomness, *prover_id, sectors, proof)?
            }
            Inputs::Porep { public, .. } => porep::verify_partitions(vk, public, proof)?,
        };
        Ok(verdicts.iter().enumerate().filter(|(_, ok)| !**ok).map(|(k, _)| k).collect())
    }

    /// The self-check failure message, in cuzk's words for PoRep.
    pub fn self_check_message(&self, bad: &[usize]) -> String {
        match self {
            Inputs::Wpost { miner_id, .. } => format!(
                "WindowPoSt proof self-check failed: assembled proof did not verify (partitions {bad:?} invalid, miner={miner_id})"
            ),
            Inputs::Porep { c1, miner_id, .. } => format!(
                "PoRep proof self-check failed: assembled proof did not verify (sector={}, miner={miner_id}, partitions {bad:?} invalid)",
                c1.sector_num
            ),
        }
    }
}

/// The scheduling priority of a request, as cuzk takes it: the request's `priority`
/// (LOW = 1, NORMAL = 2, HIGH = 3, CRITICAL = 4) as given; UNSPECIFIED (0) or an unknown value
/// means the proof kind's default: WinningPoSt CRITICAL, WindowPoSt HIGH, PoRep and SnapDeals
/// (and anything else) NORMAL. Higher is scheduled first.
pub fn effective_priority(priority: i32, proof_kind: i32) -> u8 {
    use crate::proto::Priority;
    match Priority::try_from(priority) {
        Ok(Priority::Low) => 1,
        Ok(Priority::Normal) => 2,
        Ok(Priority::High) => 3,
        Ok(Priority::Critical) => 4,
        Ok(Priority::Unspecified) | Err(_) => match ProofKind::try_from(proof_kind) {
            Ok(ProofKind::WinningPost) => Priority::Critical as u8,
            Ok(ProofKind::WindowPostPartition) => Priority::High as u8,
            _ => Priority::Normal as u8,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_defaults_by_kind() {
        let k = |p: ProofKind| p as i32;
        assert_eq!(effective_priority(0, k(ProofKind::WinningPost)), 4);
        assert_eq!(effective_priority(0, k(ProofKind::WindowPostPartition)), 3);
        assert_eq!(effective_priority(0, k(ProofKind::PorepSealCommit)), 2);
        assert_eq!(effective_priority(0, k(ProofKind::SnapDealsUpdate)), 2);
        assert_eq!(effective_priority(0, k(ProofKind::Unspecified)), 2);
        // Given priorities are used as given, whatever the kind.
        assert_eq!(effective_priority(1, k(ProofKind::WinningPost)), 1);
        assert_eq!(effective_priority(4, k(ProofKind::PorepSealCommit)), 4);
        assert_eq!(effective_priority(2, k(ProofKind::WindowPostPartition)), 2);
        assert_eq!(effective_priority(3, k(ProofKind::PorepSealCommit)), 3);
        // Out of range: treated as unspecified.
        assert_eq!(effective_priority(9, k(ProofKind::WindowPostPartition)), 3);
    }
}
