//! `paramgen --param-cache DIR CIRCUIT...`: generates Groth16 params, vk and metadata for the
//! named circuits (`wpost-2k`) into DIR, as rust-fil-proofs' `paramcache` does (random setup).
//! Existing files are kept. Prints one JSON line per circuit: paths, sizes (bytes), seconds.
//! `--print-cache-id` prints each circuit's cache identifier (the parameter-set hash the
//! proof crates name the files by) without generating anything: a content key for caches.

use std::time::Instant;

use clap::Parser;

#[derive(Parser)]
#[command(name = "paramgen", about = "Generate Groth16 params for refprover's circuits")]
struct Args {
    /// Output directory (becomes FIL_PROOFS_PARAMETER_CACHE).
    #[arg(long)]
    param_cache: String,
    /// Only print the cache identifiers, generate nothing.
    #[arg(long)]
    print_cache_id: bool,
    /// Circuits: wpost-2k, porep-2k, porep-2k-2p.
    #[arg(required = true)]
    circuits: Vec<String>,
}

fn main() {
    let args = Args::parse();
    refprover::params::set_param_cache(&args.param_cache);
    if !args.print_cache_id {
        if let Err(e) = std::fs::create_dir_all(&args.param_cache) {
            eprintln!("paramgen: cannot create {}: {e}", args.param_cache);
            std::process::exit(1);
        }
    }
    for c in &args.circuits {
        if args.print_cache_id {
            match refprover::params::cache_id(c) {
                Ok(id) => println!("{}", serde_json::json!({"circuit": c, "cache_id": id})),
                Err(e) => {
                    eprintln!("paramgen: {c}: {e:#}");
                    std::process::exit(1);
                }
            }
            continue;
        }
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
