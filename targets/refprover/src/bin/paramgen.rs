//! `paramgen --param-cache DIR CIRCUIT...`: generates Groth16 params, vk and metadata for the
//! named circuits (`wpost-2k`) into DIR, as rust-fil-proofs' `paramcache` does (random setup).
//! Existing files are kept. Prints one JSON line per circuit: paths, sizes (bytes), seconds.

use std::time::Instant;

use clap::Parser;

#[derive(Parser)]
#[command(name = "paramgen", about = "Generate Groth16 params for refprover's circuits")]
struct Args {
    /// Output directory (becomes FIL_PROOFS_PARAMETER_CACHE).
    #[arg(long)]
    param_cache: String,
    /// Circuits to generate: wpost-2k.
    #[arg(required = true)]
    circuits: Vec<String>,
}

fn main() {
    let args = Args::parse();
    refprover::params::set_param_cache(&args.param_cache);
    if let Err(e) = std::fs::create_dir_all(&args.param_cache) {
        eprintln!("paramgen: cannot create {}: {e}", args.param_cache);
        std::process::exit(1);
    }
    for c in &args.circuits {
        let t = Instant::now();
        match refprover::params::generate(c) {
            Ok(paths) => {
                let files: Vec<_> = paths
                    .iter()
                    .map(|p| serde_json::json!({"path": p, "size_bytes": std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)}))
                    .collect();
                println!("{}", serde_json::json!({"circuit": c, "files": files, "seconds": t.elapsed().as_secs_f64()}));
            }
            Err(e) => {
                eprintln!("paramgen: {c}: {e:#}");
                std::process::exit(1);
            }
        }
    }
}
