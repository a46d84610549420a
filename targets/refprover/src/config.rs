//! Daemon configuration: the cuzk TOML keys that matter to refprover, merged over defaults.
//! Like cuzk, unknown keys are not an error: they are logged and listed (`ignored_keys`).

use serde::{Deserialize, Serialize};
use std::path::Path;

/// `[daemon]` section.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct DaemonSection {
    /// gRPC listen address, `host:port` (cuzk deployments use `0.0.0.0:9820`).
    pub listen: String,
    /// Optional HTTP `GET /status` address, e.g. `0.0.0.0:9821`.
    pub status_listen: Option<String>,
}

impl Default for DaemonSection {
    fn default() -> Self {
        Self { listen: "0.0.0.0:9820".into(), status_listen: None }
    }
}

/// `[srs]` section.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct SrsSection {
    /// Directory holding the Groth16 params and vk files (cuzk default `/data/zk/params`).
    pub param_cache: String,
}

impl Default for SrsSection {
    fn default() -> Self {
        Self { param_cache: "/data/zk/params".into() }
    }
}

/// `[pipeline]` section.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PipelineSection {
    /// true: one work item per partition, assembled per job; false: monolithic.
    pub enabled: bool,
    /// Verify the assembled proof before returning it.
    pub self_check: bool,
    /// Accepted for compatibility with cuzk configs; refprover does not use them.
    pub synthesis_concurrency: Option<u64>,
    pub max_parallel_synthesis: Option<u64>,
}

/// `[synthesis]` section.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct SynthesisSection {
    /// Proving worker threads: work items proved concurrently. Default 1.
    pub partition_workers: usize,
}

impl Default for SynthesisSection {
    fn default() -> Self {
        Self { partition_workers: 1 }
    }
}

/// `[scheduler]` section.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct SchedulerSection {
    /// Accepted and reported; refprover proves one work item per worker at a time.
    pub max_batch_size: usize,
}

impl Default for SchedulerSection {
    fn default() -> Self {
        Self { max_batch_size: 1 }
    }
}

/// `[logging]` section.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct LoggingSection {
    /// tracing filter, e.g. `info` or `refprover=debug`.
    pub level: String,
}

impl Default for LoggingSection {
    fn default() -> Self {
        Self { level: "info".into() }
    }
}

/// The whole daemon configuration.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    pub daemon: DaemonSection,
    pub srs: SrsSection,
    pub pipeline: PipelineSection,
    pub synthesis: SynthesisSection,
    pub scheduler: SchedulerSection,
    pub logging: LoggingSection,
}

/// Keys refprover reads (dotted). Any other key in the file is ignored with a warning, as in cuzk.
pub const KNOWN_KEYS: &[&str] = &[
    "daemon.listen",
    "daemon.status_listen",
    "srs.param_cache",
    "pipeline.enabled",
    "pipeline.self_check",
    "pipeline.synthesis_concurrency",
    "pipeline.max_parallel_synthesis",
    "synthesis.partition_workers",
    "scheduler.max_batch_size",
    "logging.level",
];

/// A parsed config plus the dotted keys that were present but unknown.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    pub ignored_keys: Vec<String>,
}

/// Parses TOML text. Errors: TOML syntax or a known key of the wrong type (with the serde message).
pub fn parse(text: &str) -> anyhow::Result<Loaded> {
    let value: toml::Value = toml::from_str(text)?;
    let mut ignored_keys = Vec::new();
    collect_unknown(&value, "", &mut ignored_keys);
    let config: Config = value.try_into()?;
    if config.synthesis.partition_workers == 0 {
        anyhow::bail!("synthesis.partition_workers must be at least 1 (got 0)");
    }
    Ok(Loaded { config, ignored_keys })
}

/// Loads the config file. A missing file at the default path means defaults; a missing file at
/// an explicit path is an error naming the path.
pub fn load(path: &Path, explicit: bool) -> anyhow::Result<Loaded> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse(&text)
            .map_err(|e| anyhow::anyhow!("config {}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
            Ok(Loaded { config: Config::default(), ignored_keys: Vec::new() })
        }
        Err(e) => Err(anyhow::anyhow!(
            "cannot read config {}: {e} (mount the file there or pass -c PATH)",
            path.display()
        )),
    }
}

fn collect_unknown(value: &toml::Value, prefix: &str, out: &mut Vec<String>) {
    if let toml::Value::Table(table) = value {
        for (k, v) in table {
            let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
            let is_section = KNOWN_KEYS.iter().any(|known| known.starts_with(&format!("{key}.")));
            if KNOWN_KEYS.contains(&key.as_str()) {
                continue;
            } else if is_section && v.is_table() {
                collect_unknown(v, &key, out);
            } else {
                out.push(key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_unknown_keys() {
        let l = parse("[pipeline]\nenabled = true\nbogus = 1\n[gpus]\ndevices = [0]\n").unwrap();
        assert!(l.config.pipeline.enabled);
        assert_eq!(l.config.synthesis.partition_workers, 1);
        assert_eq!(l.config.srs.param_cache, "/data/zk/params");
        assert_eq!(l.ignored_keys, vec!["gpus".to_string(), "pipeline.bogus".to_string()]);
    }

    #[test]
    fn wrong_type_is_an_error() {
        assert!(parse("[synthesis]\npartition_workers = \"four\"\n").is_err());
        assert!(parse("[synthesis]\npartition_workers = 0\n").is_err());
    }
}
