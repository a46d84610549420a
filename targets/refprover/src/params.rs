//! Groth16 parameter files (SRS) for the circuits refprover proves: where they are, loading them
//! once (timed), and generating them as rust-fil-proofs' `paramcache` does (a random setup with an
//! OS rng: valid for tests, not for production).
//!
//! The cache directory comes from `FIL_PROOFS_PARAMETER_CACHE`, which storage-proofs reads once
//! (lazily) into its settings: callers must call `set_param_cache` before any proof call.

use anyhow::{Context, Result};
use bellperson::groth16;
use blstrs::Bls12;
use rand::rngs::OsRng;
use std::path::PathBuf;
use std::time::Instant;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::parameter_cache::{
    parameter_cache_dir, parameter_cache_params_path, parameter_cache_verifying_key_path,
    read_cached_params, CacheableParameters,
};
use storage_proofs_post::fallback::{FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound};

use crate::wpost::{self, Tree};

type WpostCompound = FallbackPoStCompound<Tree>;

/// Points the proof crates at `dir` (sets `FIL_PROOFS_PARAMETER_CACHE`). Must run before the
/// first proof call: storage-proofs reads the variable once.
pub fn set_param_cache(dir: &str) {
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", dir);
}

/// The effective param cache directory of the proof crates.
pub fn param_cache() -> PathBuf {
    parameter_cache_dir()
}

/// The cache identifier of the 2 KiB WindowPoSt circuit (`<prefix>-<sha256 of the circuit id>`).
pub fn wpost_cache_id() -> Result<String> {
    let pp = wpost::public_params()?;
    Ok(<WpostCompound as CacheableParameters<FallbackPoStCircuit<Tree>, _>>::cache_identifier(&pp))
}

/// Paths of the `.params` and `.vk` files of a circuit id (`wpost-2k`).
///
/// Errors: an unknown circuit id, listing the known ones.
pub fn files_for(circuit_id: &str) -> Result<(PathBuf, PathBuf)> {
    match circuit_id {
        wpost::CIRCUIT_ID => {
            let id = wpost_cache_id()?;
            Ok((parameter_cache_params_path(&id), parameter_cache_verifying_key_path(&id)))
        }
        other => anyhow::bail!("unknown circuit id {other:?}; known: {}", wpost::CIRCUIT_ID),
    }
}

/// Reads and checks the `.params` file of a circuit, as the first proof would.
/// Returns (load time in ms, file size in bytes).
///
/// Errors: the file is missing or unreadable, naming the path and how to provide it.
pub fn load(circuit_id: &str) -> Result<(u64, u64)> {
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
    let loaded = read_cached_params(&params)
        .with_context(|| format!("SRS for {circuit_id} at {} is unreadable", params.display()))?;
    drop(loaded);
    Ok((start.elapsed().as_millis() as u64, size))
}

/// Loads the prepared verifying key of the 2 KiB WindowPoSt circuit from its `.vk` file.
///
/// Errors: the `.vk` file is missing (verification never generates parameters).
pub fn window_post_vk() -> Result<groth16::PreparedVerifyingKey<Bls12>> {
    let pp = wpost::public_params()?;
    let vk = <WpostCompound as CompoundProof<FallbackPoSt<'_, Tree>, FallbackPoStCircuit<Tree>>>::verifying_key::<OsRng>(None, &pp)
        .with_context(|| format!("no WindowPoSt 2 KiB verifying key in {}", param_cache().display()))?;
    Ok(groth16::prepare_verifying_key(&vk))
}

/// Generates (or keeps, when present) the `.params`, `.vk` and `.meta` files of a circuit.
/// Returns the paths written.
pub fn generate(circuit_id: &str) -> Result<Vec<PathBuf>> {
    match circuit_id {
        wpost::CIRCUIT_ID => {
            let pp = wpost::public_params()?;
            let mut rng = OsRng;
            type C = FallbackPoStCircuit<Tree>;
            let circuit = <WpostCompound as CompoundProof<FallbackPoSt<'_, Tree>, C>>::blank_circuit(&pp);
            <WpostCompound as CacheableParameters<C, _>>::get_param_metadata(circuit, &pp)?;
            <WpostCompound as CompoundProof<FallbackPoSt<'_, Tree>, C>>::groth_params(Some(&mut rng), &pp)?;
            <WpostCompound as CompoundProof<FallbackPoSt<'_, Tree>, C>>::verifying_key(Some(&mut rng), &pp)?;
            let (p, v) = files_for(circuit_id)?;
            Ok(vec![p, v])
        }
        other => anyhow::bail!("unknown circuit id {other:?}; known: {}", wpost::CIRCUIT_ID),
    }
}
