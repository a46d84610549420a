//! Independent verification of WindowPoSt and PoRep proofs at every sector size that
//! filecoin-proofs registers (the keys of its `POREP_PARTITIONS` and `WINDOW_POST_SECTOR_COUNT`:
//! 2 KiB, 4 KiB, 16 KiB, 32 KiB, 8 MiB, 16 MiB, 512 MiB, 1 GiB, 32 GiB, 64 GiB), partition by
//! partition, from the public inputs and the circuit's `.vk` file alone (the `verify` tool).
//!
//! The `.vk` is found in the param cache by the circuit's cache identifier, as filecoin-proofs
//! names it (`v28-<circuit>-<sha256 of the parameter set>.vk`), so the official params of a
//! size verify that size's proofs. Errors, never a silent "invalid":
//! * a size filecoin-proofs does not register, or a PoRep registered proof of another size;
//! * no `.vk` for the size (the path and how to get it);
//! * a wrong `.vk` for the size: a key whose number of public inputs is not the circuit's (a
//!   `.vk` of another circuit or size under this name).

use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;

use anyhow::{bail, ensure, Context, Result};
use bellperson::groth16;
use blstrs::{Bls12, Scalar as Fr};
use filecoin_hashers::Hasher;
use filecoin_proofs::constants::{POREP_PARTITIONS, WINDOW_POST_SECTOR_COUNT};
use filecoin_proofs::parameters::{setup_params, window_post_setup_params};
use filecoin_proofs::{
    as_safe_commitment, get_num_partition_for_fallback_post, with_shape, DefaultPieceDomain,
    DefaultPieceHasher, PoRepConfig, PoRepProofPartitions, PoStConfig, PoStType, ProverId,
    SectorSize, WINDOW_POST_CHALLENGE_COUNT,
};
use storage_proofs_core::api_version::ApiVersion;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::parameter_cache::{parameter_cache_dir, parameter_cache_verifying_key_path, CacheableParameters};
use storage_proofs_core::sector::SectorId;
use storage_proofs_porep::stacked::{self, generate_replica_id, StackedCircuit, StackedCompound, StackedDrg, Tau};
use storage_proofs_post::fallback::{self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicSector};

use crate::porep;
use crate::wpost::{PARTITION_PROOF_BYTES, SECTOR_SIZE as SECTOR_SIZE_2K};

/// The sector sizes of the published seal proofs, in the order of their registered-proof ids
/// (Go abi `RegisteredSealProof`: id % 5 picks the size; 0-4 V1, 5-9 V1_1).
const SEAL_SIZES: [u64; 5] = [2 << 10, 8 << 20, 512 << 20, 32 << 30, 64 << 30];

/// Every sector size filecoin-proofs registers, ascending.
pub fn registered_sizes() -> Vec<u64> {
    let mut v: Vec<u64> = POREP_PARTITIONS.read().expect("POREP_PARTITIONS poisoned").keys().copied().collect();
    v.sort_unstable();
    v
}

/// `2048` -> "2 KiB", `34359738368` -> "32 GiB".
pub fn size_name(bytes: u64) -> String {
    for (unit, name) in [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")] {
        if bytes >= unit && bytes % unit == 0 {
            return format!("{} {name}", bytes / unit);
        }
    }
    format!("{bytes} bytes")
}

fn registered(sector_size: u64) -> Result<()> {
    if !registered_sizes().contains(&sector_size) {
        bail!(
            "sector size {sector_size} is not one filecoin-proofs registers ({})",
            registered_sizes().iter().map(|s| size_name(*s)).collect::<Vec<_>>().join(", ")
        );
    }
    Ok(())
}

/// A verifying key read from the param cache, with the number of public inputs it takes.
pub struct Vk {
    key: groth16::PreparedVerifyingKey<Bls12>,
    inputs: usize,
    path: PathBuf,
}

/// Verifies items, loading each circuit's `.vk` once.
#[derive(Default)]
pub struct Verifier {
    vks: HashMap<String, std::result::Result<Vk, String>>,
}

impl Verifier {
    fn vk(&mut self, cache_id: &str, what: &str) -> Result<&Vk> {
        let got = self.vks.entry(cache_id.to_string()).or_insert_with(|| read_vk(cache_id, what).map_err(|e| format!("{e:#}")));
        got.as_ref().map_err(|e| anyhow::anyhow!("{e}"))
    }

    /// One WindowPoSt proof (all its partitions, `partitions x 192` bytes) of `sectors` at
    /// `sector_size`. Returns one verdict per partition.
    pub fn window_post(&mut self, sector_size: u64, randomness: &[u8; 32], prover_id: ProverId,
                       sectors: &[(u64, [u8; 32])], proof: &[u8]) -> Result<Vec<bool>> {
        registered(sector_size)?;
        ensure!(!sectors.is_empty(), "no partition to verify (no sectors)");
        with_shape!(sector_size, wpost_at, self, sector_size, randomness, prover_id, sectors, proof)
    }

    /// One PoRep C2 proof at `sector_size` (`registered_proof`: the Go abi seal proof id; its
    /// porep id goes into the replica id). Returns one verdict per partition.
    pub fn porep(&mut self, sector_size: u64, registered_proof: Option<u64>, pi: &porep::PublicInputs,
                 proof: &[u8]) -> Result<Vec<bool>> {
        registered(sector_size)?;
        ensure!(pi.partitions > 0, "no partition to verify (partitions = 0)");
        let cfg = porep_config(sector_size, registered_proof, pi.partitions)?;
        with_shape!(sector_size, porep_at, self, &cfg, pi, proof)
    }
}

fn read_vk(cache_id: &str, what: &str) -> Result<Vk> {
    let path = parameter_cache_verifying_key_path(cache_id);
    let file = File::open(&path).with_context(|| {
        format!(
            "no verifying key for {what} in the param cache {}: {} is missing; put the .vk of this \
             circuit there (the official params for this sector size: `fetch-params` of curio or lotus)",
            parameter_cache_dir().display(),
            path.display()
        )
    })?;
    let vk = groth16::VerifyingKey::<Bls12>::read(BufReader::new(file))
        .with_context(|| format!("{} is not a Groth16 verifying key ({what})", path.display()))?;
    Ok(Vk { inputs: vk.ic.len().saturating_sub(1), key: groth16::prepare_verifying_key(&vk), path })
}

/// Verifies one partition's 192 bytes against `public`, after checking that the key fits.
fn verify_chunk(vk: &Vk, what: &str, public: &[Fr], chunk: &[u8]) -> Result<bool> {
    ensure!(
        vk.inputs == public.len(),
        "wrong verifying key for {what}: {} takes {} public inputs, the circuit has {}: the .vk \
         is for another circuit or sector size; replace it with this circuit's (the official \
         params of this sector size)",
        vk.path.display(),
        vk.inputs,
        public.len()
    );
    Ok(match groth16::Proof::<Bls12>::read(chunk) {
        Ok(p) => groth16::verify_proof(&vk.key, &p, public).unwrap_or(false),
        Err(_) => false, // bytes that are not curve points: invalid, not an error
    })
}

fn length(proof: &[u8], partitions: usize) -> Result<()> {
    ensure!(
        proof.len() == partitions * PARTITION_PROOF_BYTES,
        "proof is {} bytes, expected {} ({partitions} partitions x {PARTITION_PROOF_BYTES} bytes)",
        proof.len(),
        partitions * PARTITION_PROOF_BYTES
    );
    Ok(())
}

/// The WindowPoSt configuration of a registered size (filecoin-proofs' sector count and
/// challenge count; API 1.2, as refprover proves).
pub fn post_config(sector_size: u64) -> Result<PoStConfig> {
    let sector_count = *WINDOW_POST_SECTOR_COUNT
        .read()
        .expect("WINDOW_POST_SECTOR_COUNT poisoned")
        .get(&sector_size)
        .with_context(|| format!("no WindowPoSt sector count for sector size {sector_size}"))?;
    Ok(PoStConfig {
        sector_size: SectorSize(sector_size),
        challenge_count: WINDOW_POST_CHALLENGE_COUNT,
        sector_count,
        typ: PoStType::Window,
        priority: false,
        api_version: ApiVersion::V1_2_0,
    })
}

/// The PoRep configuration of a proof: `registered_proof` (default: the V1_1 id of the size)
/// must be a V1 or V1_1 seal proof of this size; the partitions are filecoin-proofs' for the
/// size, except refprover's own 2 KiB variants (1 or 2 partitions).
pub fn porep_config(sector_size: u64, registered_proof: Option<u64>, partitions: usize) -> Result<PoRepConfig> {
    let default = SEAL_SIZES.iter().position(|s| *s == sector_size).map(|i| i as u64 + 5);
    let id = match registered_proof.or(default) {
        Some(id) => id,
        None => bail!("a {} PoRep needs its registered_proof (no published seal proof has this size)", size_name(sector_size)),
    };
    if id >= 10 {
        bail!("registered seal proof {id} (synthetic or non-interactive PoRep) is not supported: V1 and V1_1 (0-9) are");
    }
    let size_of_id = SEAL_SIZES[(id % 5) as usize];
    if size_of_id != sector_size && SEAL_SIZES.contains(&sector_size) {
        bail!("registered seal proof {id} is a {} proof, but the item's sector size is {}", size_name(size_of_id), size_name(sector_size));
    }
    let mut cfg = PoRepConfig::new_groth16(sector_size, porep::porep_id(id), ApiVersion::V1_2_0);
    let expected = usize::from(cfg.partitions);
    if sector_size == SECTOR_SIZE_2K {
        ensure!(
            porep::SUPPORTED_PARTITIONS.contains(&partitions),
            "a 2 KiB PoRep has {partitions} partitions here; supported: {:?}",
            porep::SUPPORTED_PARTITIONS
        );
        cfg.partitions = PoRepProofPartitions(partitions as u8);
    } else {
        ensure!(
            partitions == expected,
            "a {} PoRep has {expected} partitions (filecoin-proofs), the item says {partitions}",
            size_name(sector_size)
        );
    }
    Ok(cfg)
}

fn wpost_at<Tree: 'static + MerkleTreeTrait>(
    v: &mut Verifier,
    sector_size: u64,
    randomness: &[u8; 32],
    prover_id: ProverId,
    sectors: &[(u64, [u8; 32])],
    proof: &[u8],
) -> Result<Vec<bool>> {
    let cfg = post_config(sector_size)?;
    let partitions = get_num_partition_for_fallback_post(&cfg, sectors.len());
    length(proof, partitions)?;
    let setup = compound_proof::SetupParams {
        vanilla_params: window_post_setup_params(&cfg),
        partitions: Some(partitions),
        priority: false,
    };
    let pp: compound_proof::PublicParams<'_, FallbackPoSt<'_, Tree>> = FallbackPoStCompound::setup(&setup)?;
    let id = <FallbackPoStCompound<Tree> as CacheableParameters<FallbackPoStCircuit<Tree>, _>>::cache_identifier(&pp.vanilla_params);
    let what = format!("{} WindowPoSt", size_name(sector_size));
    let domain = |b: &[u8; 32], name: &str| -> Result<<<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain> { as_safe_commitment(b, name) };
    let pub_sectors = sectors
        .iter()
        .map(|(sid, comm_r)| Ok(PublicSector { id: SectorId::from(*sid), comm_r: domain(comm_r, "comm_r")? }))
        .collect::<Result<Vec<_>>>()?;
    let inputs = fallback::PublicInputs {
        randomness: domain(randomness, "randomness")?,
        prover_id: domain(&prover_id, "prover_id")?,
        sectors: pub_sectors,
        k: None,
    };
    let vk = v.vk(&id, &what)?;
    (0..partitions)
        .map(|k| {
            let public = FallbackPoStCompound::<Tree>::generate_public_inputs(&inputs, &pp.vanilla_params, Some(k))?;
            verify_chunk(vk, &what, &public, &proof[k * PARTITION_PROOF_BYTES..(k + 1) * PARTITION_PROOF_BYTES])
        })
        .collect()
}

fn porep_at<Tree: 'static + MerkleTreeTrait>(
    v: &mut Verifier,
    cfg: &PoRepConfig,
    pi: &porep::PublicInputs,
    proof: &[u8],
) -> Result<Vec<bool>> {
    length(proof, pi.partitions)?;
    let comm_d: DefaultPieceDomain = as_safe_commitment(&pi.comm_d, "comm_d")?;
    let comm_r: <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain = as_safe_commitment(&pi.comm_r, "comm_r")?;
    let replica_id = generate_replica_id::<<Tree as MerkleTreeTrait>::Hasher, _>(&pi.prover_id, pi.sector_num, &pi.ticket, comm_d, &cfg.porep_id);
    let inputs = stacked::PublicInputs { replica_id, tau: Some(Tau { comm_r, comm_d }), k: None, seed: Some(pi.seed) };
    let setup = compound_proof::SetupParams { vanilla_params: setup_params(cfg)?, partitions: Some(pi.partitions), priority: false };
    let pp: compound_proof::PublicParams<'_, StackedDrg<'_, Tree, DefaultPieceHasher>> =
        StackedCompound::<Tree, DefaultPieceHasher>::setup(&setup)?;
    let id = <StackedCompound<Tree, DefaultPieceHasher> as CacheableParameters<StackedCircuit<Tree, DefaultPieceHasher>, _>>::cache_identifier(&pp.vanilla_params);
    let what = format!("{} PoRep with {} partition(s)", size_name(u64::from(cfg.sector_size)), pi.partitions);
    let vk = v.vk(&id, &what)?;
    (0..pi.partitions)
        .map(|k| {
            let public = StackedCompound::<Tree, DefaultPieceHasher>::generate_public_inputs(&inputs, &pp.vanilla_params, Some(k))?;
            verify_chunk(vk, &what, &public, &proof[k * PARTITION_PROOF_BYTES..(k + 1) * PARTITION_PROOF_BYTES])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pi(partitions: usize) -> porep::PublicInputs {
        porep::PublicInputs { comm_r: [1; 32], comm_d: [2; 32], prover_id: [0; 32], sector_num: 1, ticket: [3; 32], seed: [4; 32], partitions }
    }

    /// One param cache for the test process: storage-proofs reads the variable once.
    fn cache() -> &'static std::path::Path {
        static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
        let dir = DIR.get_or_init(|| tempfile::tempdir().unwrap());
        crate::params::set_param_cache(dir.path().to_str().unwrap());
        dir.path()
    }

    /// A well-formed Groth16 verifying key for `inputs` public inputs (curve generators): a
    /// key of some other circuit.
    fn other_circuits_vk(inputs: usize) -> groth16::VerifyingKey<Bls12> {
        use group::prime::PrimeCurveAffine;
        let (g1, g2) = (blstrs::G1Affine::generator(), blstrs::G2Affine::generator());
        groth16::VerifyingKey { alpha_g1: g1, beta_g1: g1, beta_g2: g2, gamma_g2: g2, delta_g1: g1, delta_g2: g2, ic: vec![g1; inputs + 1] }
    }

    #[test]
    fn a_wrong_vk_for_the_size_is_a_clear_error() {
        cache();
        let (_, path) = crate::params::files_for("porep-2k").unwrap();
        other_circuits_vk(2).write(std::fs::File::create(&path).unwrap()).unwrap();
        let mut v = Verifier::default();
        let err = v.porep(2048, Some(5), &pi(1), &[0; 192]).unwrap_err().to_string();
        assert!(err.starts_with("wrong verifying key for 2 KiB PoRep with 1 partition(s): "), "{err}");
        assert!(err.contains("takes 2 public inputs") && err.contains("the .vk is for another circuit or sector size"), "{err}");
    }

    #[test]
    fn every_registered_size_is_looked_up_by_its_own_vk() {
        // no .vk but 2 KiB PoRep's: each other size asks for its own .vk, never "2 KiB only"
        cache();
        let sizes = registered_sizes();
        assert_eq!(sizes.len(), 10, "{sizes:?}");
        let mut v = Verifier::default();
        for size in sizes.into_iter().filter(|s| *s != SECTOR_SIZE_2K) {
            let err = v.window_post(size, &[5; 32], [0; 32], &[(1, [6; 32])], &[0; 192]).unwrap_err().to_string();
            assert!(err.contains(&format!("no verifying key for {} WindowPoSt", size_name(size))), "{err}");
            let parts = POREP_PARTITIONS.read().unwrap()[&size] as usize;
            let reg = SEAL_SIZES.iter().position(|s| *s == size).map(|i| i as u64 + 5).or(Some(5));
            let err = v.porep(size, reg, &pi(parts), &vec![0; parts * 192]).unwrap_err().to_string();
            assert!(err.contains("no verifying key for") && err.contains("PoRep"), "{size}: {err}");
        }
        let err = v.window_post(4096 * 3, &[5; 32], [0; 32], &[(1, [6; 32])], &[0; 192]).unwrap_err().to_string();
        assert!(err.contains("not one filecoin-proofs registers"), "{err}");
    }

    #[test]
    fn a_porep_proof_must_say_its_sizes_partitions_and_registered_proof() {
        assert!(porep_config(32 << 30, None, 10).is_ok());
        let err = porep_config(32 << 30, None, 1).unwrap_err().to_string();
        assert!(err.contains("a 32 GiB PoRep has 10 partitions"), "{err}");
        let err = porep_config(32 << 30, Some(5), 10).unwrap_err().to_string();
        assert!(err.contains("registered seal proof 5 is a 2 KiB proof"), "{err}");
        let err = porep_config(32 << 30, Some(13), 10).unwrap_err().to_string();
        assert!(err.contains("not supported"), "{err}");
    }
}
