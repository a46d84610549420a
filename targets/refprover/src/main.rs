//! refprover daemon: `refprover [-c CONFIG] [-l LISTEN] [--log-level LEVEL]`.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Parser;
use refprover::{config, engine::Engine, faults::Faults, memory, params, proto, server, status_http};

#[derive(Parser, Debug)]
#[command(name = "refprover", version, about = "Reference prover daemon speaking the cuzk gRPC interface")]
struct Args {
    /// Config file (TOML). Default /data/zk/cuzk.toml; a missing default file means defaults.
    #[arg(short = 'c', long = "config")]
    config: Option<PathBuf>,
    /// gRPC listen address (overrides daemon.listen), e.g. 0.0.0.0:9820.
    #[arg(short = 'l', long = "listen")]
    listen: Option<String>,
    /// Log filter (overrides logging.level), e.g. info, debug.
    #[arg(long = "log-level")]
    log_level: Option<String>,
}

fn main() {
    if let Err(e) = run() {
        eprintln!("refprover: error: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    let explicit = args.config.is_some();
    let path = args.config.unwrap_or_else(|| PathBuf::from("/data/zk/cuzk.toml"));
    let loaded = config::load(&path, explicit)?;
    let mut cfg = loaded.config.clone();
    if let Some(l) = args.listen {
        cfg.daemon.listen = l;
    }
    let level = args.log_level.clone().unwrap_or_else(|| cfg.logging.level.clone());
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&level));
    tracing_subscriber::fmt().with_env_filter(filter).with_target(false).with_ansi(false).init();

    let faults = Faults::from_env()?;
    // Like cuzk: the daemon sets FIL_PROOFS_PARAMETER_CACHE from srs.param_cache before any
    // proof call (storage-proofs reads it once).
    // FAULT param-path-default: ignore srs.param_cache and the environment, read cuzk's default.
    if faults.on("param-path-default") {
        cfg.srs.param_cache = "/data/zk/params".into();
    }
    params::set_param_cache(&cfg.srs.param_cache);
    for key in &loaded.ignored_keys {
        tracing::warn!(key = %key, "ignored config key: refprover does not know it");
    }
    let disable_pipeline = std::env::var_os(config::DISABLE_PIPELINE_ENV).map(|v| v.to_string_lossy().into_owned());
    let effective = config::resolve(&loaded, &faults, disable_pipeline.as_deref(), &memory::HostMemory::read())?;
    for w in &effective.warnings {
        tracing::warn!("{w}");
    }
    tracing::info!(
        config = %path.display(),
        listen = %cfg.daemon.listen,
        param_cache = %cfg.srs.param_cache,
        pipeline = effective.pipeline_enabled,
        partition_workers = effective.partition_workers,
        max_parallel_synthesis = effective.max_parallel_synthesis,
        self_check = cfg.pipeline.self_check,
        faults = ?faults.names(),
        ignored_keys = ?loaded.ignored_keys,
        "refprover starting"
    );
    tracing::info!(
        total_bytes = effective.budget.total_bytes,
        source = effective.budget.source.as_str(),
        detail = %effective.budget.detail,
        partition_working_set = effective.working_set,
        budget_slots = ?effective.budget_slots(),
        "memory budget"
    );
    let addr: std::net::SocketAddr = cfg
        .daemon
        .listen
        .trim_start_matches("http://")
        .parse()
        .map_err(|e| anyhow::anyhow!("daemon.listen {:?} is not host:port: {e}", cfg.daemon.listen))?;
    let status_listen = cfg.daemon.status_listen.clone();
    let engine = Engine::start(cfg, effective, faults, loaded.ignored_keys);

    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(async move {
        if let Some(addr) = status_listen {
            let e = Arc::clone(&engine);
            tokio::spawn(async move {
                if let Err(err) = status_http::serve(addr, e).await {
                    tracing::error!(error = %err, "status HTTP failed");
                }
            });
        }
        let svc = server::Service { engine: Arc::clone(&engine) };
        tracing::info!(%addr, "gRPC listening");
        tonic::transport::Server::builder()
            .add_service(proto::proving_engine_server::ProvingEngineServer::new(svc).max_decoding_message_size(128 << 20).max_encoding_message_size(128 << 20))
            .serve_with_shutdown(addr, shutdown_signal())
            .await?;
        engine.shutdown();
        tracing::info!("refprover stopped");
        Ok::<_, anyhow::Error>(())
    })
}

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => return std::future::pending().await,
    };
    tokio::select! {
        _ = term.recv() => {},
        _ = tokio::signal::ctrl_c() => {},
    }
    tracing::info!("shutdown signal received");
}
