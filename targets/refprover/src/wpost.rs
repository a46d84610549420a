//! WindowPoSt for 2 KiB sectors: configuration, request decoding, proving (all partitions in one
//! batch, or one partition) and per-partition verification. Call sequences follow
//! rust-fil-proofs `filecoin-proofs/tests/api.rs` (window_post tests) and
//! `filecoin-proofs/src/api/window_post.rs` (19.1.0).

use anyhow::{bail, ensure, Context, Result};
use bellperson::groth16;
use blstrs::Bls12;
use filecoin_hashers::Hasher;
use filecoin_proofs::{
    generate_single_window_post_with_vanilla, generate_window_post_with_vanilla,
    get_num_partition_for_fallback_post, parameters::window_post_public_params,
    parameters::window_post_setup_params, ChallengeSeed, FallbackPoStSectorProof,
    PoStConfig, PoStType, ProverId, SectorShape2KiB, SectorSize, WINDOW_POST_CHALLENGE_COUNT,
    WINDOW_POST_SECTOR_COUNT,
};
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::api_version::ApiVersion;
use storage_proofs_core::sector::SectorId;
use storage_proofs_post::fallback::{self, FallbackPoSt, FallbackPoStCompound, PublicSector};

/// The merkle tree shape of a 2 KiB sector.
pub type Tree = SectorShape2KiB;
/// Sector size in bytes.
pub const SECTOR_SIZE: u64 = 2048;
/// `RegisteredPoStProof::StackedDrgWindow2KiBV1_1` (go-state-types abi numbering).
pub const REGISTERED_PROOF: u64 = 10;
/// Bytes of one Groth16 proof (one partition): 48 + 96 + 48 (G1, G2, G1 compressed).
pub const PARTITION_PROOF_BYTES: usize = 192;
/// The circuit id used in SRS status and PreloadSRS.
pub const CIRCUIT_ID: &str = "wpost-2k";

/// The PoSt config of a 2 KiB WindowPoSt (API version 1.2.0).
pub fn post_config() -> PoStConfig {
    let sector_count = *WINDOW_POST_SECTOR_COUNT
        .read()
        .expect("WINDOW_POST_SECTOR_COUNT poisoned")
        .get(&SECTOR_SIZE)
        .expect("2 KiB is a known sector size");
    PoStConfig {
        sector_size: SectorSize(SECTOR_SIZE),
        challenge_count: WINDOW_POST_CHALLENGE_COUNT,
        sector_count,
        typ: PoStType::Window,
        priority: false,
        api_version: ApiVersion::V1_2_0,
    }
}

/// Sectors per partition (2 for 2 KiB).
pub fn sectors_per_partition() -> usize {
    post_config().sector_count
}

/// Number of partitions for `n_sectors` sectors.
pub fn partitions_for(n_sectors: usize) -> usize {
    get_num_partition_for_fallback_post(&post_config(), n_sectors)
}

/// The prover id of a miner: the payload of its ID address, i.e. the unsigned LEB128 encoding of
/// the actor id, zero-padded to 32 bytes (as lotus/curio derive it from `address.NewIDAddress`).
pub fn prover_id(miner_id: u64) -> ProverId {
    let mut out = [0u8; 32];
    let mut v = miner_id;
    let mut i = 0;
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out[i] = byte;
            break;
        }
        out[i] = byte | 0x80;
        i += 1;
    }
    out
}

/// Parses 32 bytes of randomness. Errors: wrong length.
pub fn randomness(bytes: &[u8]) -> Result<ChallengeSeed> {
    ensure!(bytes.len() == 32, "randomness must be 32 bytes, got {}", bytes.len());
    let mut r = [0u8; 32];
    r.copy_from_slice(bytes);
    Ok(r)
}

/// Decodes one bincode `FallbackPoStSectorProof` per sector. Errors name the failing index.
pub fn decode_vanilla(items: &[Vec<u8>]) -> Result<Vec<FallbackPoStSectorProof<Tree>>> {
    ensure!(!items.is_empty(), "no vanilla proofs in the request (vanilla_proofs is empty)");
    items
        .iter()
        .enumerate()
        .map(|(i, b)| {
            bincode::deserialize(b)
                .with_context(|| format!("vanilla proof {i} is not a bincode FallbackPoStSectorProof"))
        })
        .collect()
}

/// Proves all partitions of a job in one batch (num_circuits = partitions).
/// Returns `partitions x 192` bytes.
pub fn prove_all(
    randomness: &ChallengeSeed,
    prover_id: ProverId,
    vanilla: Vec<FallbackPoStSectorProof<Tree>>,
) -> Result<Vec<u8>> {
    generate_window_post_with_vanilla::<Tree>(&post_config(), randomness, prover_id, vanilla)
}

/// Proves partition `k` from that partition's sector proofs. Returns 192 bytes.
pub fn prove_partition(
    randomness: &ChallengeSeed,
    prover_id: ProverId,
    vanilla: Vec<FallbackPoStSectorProof<Tree>>,
    k: usize,
) -> Result<Vec<u8>> {
    let p = generate_single_window_post_with_vanilla::<Tree>(
        &post_config(),
        randomness,
        prover_id,
        vanilla,
        k,
    )?;
    Ok(p.0)
}

/// Verifies a WindowPoSt proof partition by partition from public inputs and the vk alone
/// (`vk` from `params::window_post_vk`). Returns one verdict per expected partition.
///
/// Errors: a proof whose length is not `partitions x 192` bytes, bad commitments.
pub fn verify_partitions(
    vk: &groth16::PreparedVerifyingKey<Bls12>,
    randomness: &ChallengeSeed,
    prover_id: ProverId,
    sectors: &[(u64, [u8; 32])],
    proof: &[u8],
) -> Result<Vec<bool>> {
    let cfg = post_config();
    let partitions = partitions_for(sectors.len());
    if proof.len() != partitions * PARTITION_PROOF_BYTES {
        bail!(
            "proof is {} bytes, expected {} ({} partitions x {} bytes)",
            proof.len(),
            partitions * PARTITION_PROOF_BYTES,
            partitions,
            PARTITION_PROOF_BYTES
        );
    }
    let setup = compound_proof::SetupParams {
        vanilla_params: window_post_setup_params(&cfg),
        partitions: Some(partitions),
        priority: false,
    };
    let pub_params: compound_proof::PublicParams<'_, FallbackPoSt<'_, Tree>> =
        FallbackPoStCompound::setup(&setup)?;
    let domain = |b: &[u8; 32], what: &str| -> Result<<<Tree as storage_proofs_core::merkle::MerkleTreeTrait>::Hasher as Hasher>::Domain> {
        filecoin_proofs::as_safe_commitment(b, what)
    };
    let pub_sectors = sectors
        .iter()
        .map(|(id, comm_r)| Ok(PublicSector { id: SectorId::from(*id), comm_r: domain(comm_r, "comm_r")? }))
        .collect::<Result<Vec<_>>>()?;
    let pub_inputs = fallback::PublicInputs {
        randomness: domain(randomness, "randomness")?,
        prover_id: domain(&prover_id, "prover_id")?,
        sectors: pub_sectors,
        k: None,
    };
    let mut verdicts = Vec::with_capacity(partitions);
    for k in 0..partitions {
        let inputs = FallbackPoStCompound::<Tree>::generate_public_inputs(
            &pub_inputs,
            &pub_params.vanilla_params,
            Some(k),
        )?;
        let chunk = &proof[k * PARTITION_PROOF_BYTES..(k + 1) * PARTITION_PROOF_BYTES];
        let ok = match groth16::Proof::<Bls12>::read(chunk) {
            Ok(p) => groth16::verify_proof(vk, &p, &inputs).unwrap_or(false),
            Err(_) => false, // bytes that are not curve points: invalid, not an error
        };
        verdicts.push(ok);
    }
    Ok(verdicts)
}

/// The vanilla public params of the 2 KiB WindowPoSt circuit (what the param files are keyed by).
pub fn public_params() -> Result<fallback::PublicParams> {
    window_post_public_params::<Tree>(&post_config())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prover_id_is_leb128_of_the_miner_id() {
        assert_eq!(prover_id(1000)[..3], [0xe8, 0x07, 0x00]);
        assert_eq!(prover_id(1)[..2], [0x01, 0x00]);
    }

    #[test]
    fn two_kib_has_two_sectors_per_partition() {
        assert_eq!(sectors_per_partition(), 2);
        assert_eq!(partitions_for(4), 2);
        assert_eq!(partitions_for(3), 2);
        assert_eq!(partitions_for(2), 1);
    }
}
