//! Groth16 parameter files (SRS) of the circuits refprover proves (`wpost-2k`, `porep-2k`,
//! `porep-2k-2p`): where they are, loading them (timed), verifying keys, and generating them as
//! rust-fil-proofs' `paramcache` does (a random setup with an OS rng: fine for tests, never for
//! production).
//!
//! The cache directory comes from `FIL_PROOFS_PARAMETER_CACHE`, which storage-proofs reads once
//! (lazily) into its settings: callers must call `set_param_cache` before any proof call.

use anyhow::{Context, Result};
use bellperson::groth16;
use blstrs::Bls12;
use filecoin_proofs::DefaultPieceHasher;
use rand::rngs::OsRng;
use std::path::PathBuf;
use std::time::Instant;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::parameter_cache::{
    parameter_cache_dir, parameter_cache_params_path, parameter_cache_verifying_key_path,
    Bls12GrothParams, CacheableParameters,
};
use storage_proofs_porep::stacked::{StackedCircuit, StackedCompound, StackedDrg};
use storage_proofs_post::fallback::{FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound};

use crate::wpost::{self, Tree};
use crate::porep;

type Wpost = FallbackPoStCompound<Tree>;
type WpostScheme<'a> = FallbackPoSt<'a, Tree>;
type WpostCircuit = FallbackPoStCircuit<Tree>;
type Porep = StackedCompound<Tree, DefaultPieceHasher>;
type PorepScheme<'a> = StackedDrg<'a, Tree, DefaultPieceHasher>;
type PorepCircuit<'a> = StackedCircuit<Tree, DefaultPieceHasher>;

/// Every circuit id refprover knows.
pub const CIRCUITS: &[&str] = &["wpost-2k", "porep-2k", "porep-2k-2p"];

/// Points the proof crates at `dir` (sets `FIL_PROOFS_PARAMETER_CACHE`). Must run before the
/// first proof call: storage-proofs reads the variable once.
pub fn set_param_cache(dir: &str) {
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", dir);
}

/// The effective param cache directory of the proof crates.
pub fn param_cache() -> PathBuf {
    parameter_cache_dir()
}

fn unknown(circuit_id: &str) -> anyhow::Error {
    anyhow::anyhow!("unknown circuit id {circuit_id:?}; known: {}", CIRCUITS.join(", "))
}

/// The cache identifier of a circuit (`<prefix>-<sha256 of the circuit's parameter set>`), the
/// stem of its `.params`, `.vk` and `.meta` file names. Errors: an unknown circuit id.
pub fn cache_id(circuit_id: &str) -> Result<String> {
    if circuit_id == wpost::CIRCUIT_ID {
        let pp = wpost::public_params()?;
        return Ok(<Wpost as CacheableParameters<WpostCircuit, _>>::cache_identifier(&pp));
    }
    let partitions = porep::partitions_of(circuit_id).ok_or_else(|| unknown(circuit_id))?;
    let pp = porep::vanilla_public_params(partitions)?;
    Ok(<Porep as CacheableParameters<PorepCircuit<'_>, _>>::cache_identifier(&pp))
}

/// Paths of the `.params` and `.vk` files of a circuit. Errors: an unknown circuit id.
pub fn files_for(circuit_id: &str) -> Result<(PathBuf, PathBuf)> {
    let id = cache_id(circuit_id)?;
    Ok((parameter_cache_params_path(&id), parameter_cache_verifying_key_path(&id)))
}

/// Reads a circuit's `.params` file, as the first proof would.
/// Returns (params, load time in ms, file size in bytes).
///
/// Errors: the file is missing or unreadable, naming the path and how to provide it.
pub fn load(circuit_id: &str) -> Result<(Bls12GrothParams, u64, u64)> {
    let (params, _vk) = files_for(circuit_id)?;
    let start = Instant::now();
    let size = std::fs::metadata(&params)
        .with_context(|| {
            format!(
                "SRS for {circuit_id} not found at {} (param cache {}): mount the params there \
                 read-only, or point srs.param_cache / FIL_PROOFS_PARAMETER_CACHE at them",
                params.display(),
                param_cache().display()
            )
        })?
        .len();
    let loaded = if circuit_id == wpost::CIRCUIT_ID {
        <Wpost as CompoundProof<WpostScheme<'_>, WpostCircuit>>::groth_params::<OsRng>(None, &wpost::public_params()?)
    } else {
        let partitions = porep::partitions_of(circuit_id).ok_or_else(|| unknown(circuit_id))?;
        <Porep as CompoundProof<PorepScheme<'_>, PorepCircuit<'_>>>::groth_params::<OsRng>(None, &porep::vanilla_public_params(partitions)?)
    }
    .with_context(|| format!("SRS for {circuit_id} at {} is unreadable", params.display()))?;
    Ok((loaded, start.elapsed().as_millis() as u64, size))
}

/// Loads the prepared verifying key of a circuit from its `.vk` file.
///
/// Errors: the `.vk` file is missing (verification never generates parameters).
pub fn vk(circuit_id: &str) -> Result<groth16::PreparedVerifyingKey<Bls12>> {
    let vk = if circuit_id == wpost::CIRCUIT_ID {
        <Wpost as CompoundProof<WpostScheme<'_>, WpostCircuit>>::verifying_key::<OsRng>(None, &wpost::public_params()?)
    } else {
        let partitions = porep::partitions_of(circuit_id).ok_or_else(|| unknown(circuit_id))?;
        <Porep as CompoundProof<PorepScheme<'_>, PorepCircuit<'_>>>::verifying_key::<OsRng>(None, &porep::vanilla_public_params(partitions)?)
    }
    .with_context(|| format!("no verifying key for {circuit_id} in {}", param_cache().display()))?;
    Ok(groth16::prepare_verifying_key(&vk))
}

/// Generates (or keeps, when present) the `.params`, `.vk` and `.meta` files of a circuit.
/// Returns the `.params` and `.vk` paths. Errors: an unknown circuit id, I/O.
pub fn generate(circuit_id: &str) -> Result<Vec<PathBuf>> {
    let mut rng = OsRng;
    if circuit_id == wpost::CIRCUIT_ID {
        let pp = wpost::public_params()?;
        let circuit = <Wpost as CompoundProof<WpostScheme<'_>, WpostCircuit>>::blank_circuit(&pp);
        <Wpost as CacheableParameters<WpostCircuit, _>>::get_param_metadata(circuit, &pp)?;
        <Wpost as CompoundProof<WpostScheme<'_>, WpostCircuit>>::groth_params(Some(&mut rng), &pp)?;
        <Wpost as CompoundProof<WpostScheme<'_>, WpostCircuit>>::verifying_key(Some(&mut rng), &pp)?;
    } else {
        let partitions = porep::partitions_of(circuit_id).ok_or_else(|| unknown(circuit_id))?;
        let pp = porep::vanilla_public_params(partitions)?;
        let circuit = <Porep as CompoundProof<PorepScheme<'_>, PorepCircuit<'_>>>::blank_circuit(&pp);
        <Porep as CacheableParameters<PorepCircuit<'_>, _>>::get_param_metadata(circuit, &pp)?;
        <Porep as CompoundProof<PorepScheme<'_>, PorepCircuit<'_>>>::groth_params(Some(&mut rng), &pp)?;
        <Porep as CompoundProof<PorepScheme<'_>, PorepCircuit<'_>>>::verifying_key(Some(&mut rng), &pp)?;
    }
    let (p, v) = files_for(circuit_id)?;
    Ok(vec![p, v])
}
