//! refprover: a reference prover daemon speaking the cuzk gRPC interface (package `cuzk.v1`),
//! proving for real with `filecoin-proofs` 19.1 on the CPU. Used by proofdiff as the reference
//! target; see README.md for the contract (config keys, faults, workload and verifier formats).

pub mod config;
pub mod engine;
pub mod fault_state;
pub mod faults;
pub mod first_run;
pub mod metrics;
pub mod job;
pub mod memory;
pub mod params;
pub mod porep;
pub mod request;
pub mod server;
pub mod status_http;
pub mod verify_any;
pub mod wpost;

/// Generated gRPC types and service traits for `cuzk.v1` (from proto/cuzk.proto).
pub mod proto {
    tonic::include_proto!("cuzk.v1");
}
