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
    /// Accepted for compatibility with cuzk configs; refprover does not use it.
    pub synthesis_concurrency: Option<u64>,
    /// cuzk: "Maximum number of partition syntheses running in parallel". refprover: at most
    /// this many work items are being proved at once across all workers (unset or 0 = no limit
    /// beyond the worker count).
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

/// `[memory]` section (sizes: a byte count or a string such as `"512MiB"`, `"4GiB"`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct MemorySection {
    /// `"auto"` (the smaller of MemTotal and the cgroup limit, minus `safety_margin`) or a size.
    #[serde(deserialize_with = "string_or_int")]
    pub total_budget: String,
    /// Subtracted from an `"auto"` budget. refprover default `"64MiB"` (cuzk: `"5GiB"`).
    #[serde(deserialize_with = "string_or_int")]
    pub safety_margin: String,
    /// refprover only: bytes one work item allocates and touches while it is proved. `"0"` = none
    /// (then the budget gates nothing).
    #[serde(deserialize_with = "string_or_int")]
    pub partition_working_set: String,
}

impl Default for MemorySection {
    fn default() -> Self {
        Self { total_budget: "auto".into(), safety_margin: "64MiB".into(), partition_working_set: "0".into() }
    }
}

/// A size key may be written as a TOML string (`"4GiB"`) or integer (bytes).
fn string_or_int<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum V {
        S(String),
        I(u64),
    }
    Ok(match V::deserialize(d)? {
        V::S(s) => s,
        V::I(i) => i.to_string(),
    })
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
    pub memory: MemorySection,
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
    "memory.total_budget",
    "memory.safety_margin",
    "memory.partition_working_set",
    "logging.level",
];

/// A parsed config plus the dotted keys that were present but unknown, and the known keys that
/// were present (to tell a key set to its default from an absent one).
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    pub config: Config,
    pub ignored_keys: Vec<String>,
    pub present_keys: Vec<String>,
}

/// Parses TOML text. Errors: TOML syntax or a known key of the wrong type (with the serde message).
pub fn parse(text: &str) -> anyhow::Result<Loaded> {
    let value: toml::Value = toml::from_str(text)?;
    let mut ignored_keys = Vec::new();
    let mut present_keys = Vec::new();
    collect_keys(&value, "", &mut ignored_keys, &mut present_keys);
    let config: Config = value.try_into()?;
    if config.synthesis.partition_workers == 0 {
        anyhow::bail!("synthesis.partition_workers must be at least 1 (got 0)");
    }
    for (key, text) in [
        ("memory.safety_margin", &config.memory.safety_margin),
        ("memory.partition_working_set", &config.memory.partition_working_set),
    ] {
        crate::memory::parse_size(text).map_err(|e| anyhow::anyhow!("{key}: {e}"))?;
    }
    if !config.memory.total_budget.trim().eq_ignore_ascii_case("auto") {
        crate::memory::parse_size(&config.memory.total_budget)
            .map_err(|e| anyhow::anyhow!("memory.total_budget (\"auto\" or a size): {e}"))?;
    }
    Ok(Loaded { config, ignored_keys, present_keys })
}

/// Loads the config file. A missing file at the default path means defaults; a missing file at
/// an explicit path is an error naming the path.
pub fn load(path: &Path, explicit: bool) -> anyhow::Result<Loaded> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse(&text)
            .map_err(|e| anyhow::anyhow!("config {}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
            Ok(Loaded::default())
        }
        Err(e) => Err(anyhow::anyhow!(
            "cannot read config {}: {e} (mount the file there or pass -c PATH)",
            path.display()
        )),
    }
}

/// The environment variable that turns pipeline mode off whatever the config says.
pub const DISABLE_PIPELINE_ENV: &str = "REFPROVER_DISABLE_PIPELINE";

/// The warning logged when FAULT ignore-deprecated drops `synthesis.partition_workers`.
pub const DEPRECATED_WORKERS_WARNING: &str = "synthesis.partition_workers is deprecated and ignored";

/// True when `REFPROVER_DISABLE_PIPELINE`'s value (None = unset) turns the pipeline off:
/// `1`, `true`, `yes` or `on`, case-insensitive, surrounding blanks ignored.
/// FAULT env-bool: any value at all, even `0`, `false` or empty (set means on).
pub fn env_flag_on(value: Option<&str>, env_bool_fault: bool) -> bool {
    match value {
        None => false,
        Some(_) if env_bool_fault => true,
        Some(v) => matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"),
    }
}

/// What the daemon effectively does once the environment and the faults are applied (the
/// config as read stays in `Config`; `/status` reports these).
#[derive(Debug, Clone)]
pub struct Effective {
    pub pipeline_enabled: bool,
    /// Proving worker threads.
    pub partition_workers: usize,
    /// `pipeline.max_parallel_synthesis` as configured; 0 = unset.
    pub max_parallel_synthesis: u64,
    pub budget: crate::memory::Budget,
    /// `memory.partition_working_set` in bytes.
    pub working_set: u64,
    /// Lines to log as warnings at start (environment override, deprecated key).
    pub warnings: Vec<String>,
}

impl Effective {
    /// The in-flight limit on work items being proved (None = none beyond the worker count).
    pub fn inflight_limit(&self) -> Option<usize> {
        (self.max_parallel_synthesis > 0).then(|| usize::try_from(self.max_parallel_synthesis).unwrap_or(usize::MAX))
    }

    /// Work items the memory budget admits at once (None = no gate: working set 0).
    pub fn budget_slots(&self) -> Option<usize> {
        crate::memory::budget_slots(self.budget.total_bytes, self.working_set)
    }

    /// The effective limit on work items in progress: the smallest of the worker count, the
    /// in-flight limit and the budget gate.
    pub fn max_concurrent(&self) -> usize {
        [Some(self.partition_workers), self.inflight_limit(), self.budget_slots()].into_iter().flatten().min().unwrap_or(1)
    }
}

/// Applies `REFPROVER_DISABLE_PIPELINE` (its value, None = unset), the faults `env-bool`,
/// `ignore-deprecated` and `host-memory`, and resolves the memory budget from `host`.
/// Errors: a malformed size, or an `"auto"` budget with no readable memory size.
pub fn resolve(
    loaded: &Loaded,
    faults: &crate::faults::Faults,
    disable_pipeline: Option<&str>,
    host: &crate::memory::HostMemory,
) -> anyhow::Result<Effective> {
    let cfg = &loaded.config;
    let mut warnings = Vec::new();
    let mut pipeline_enabled = cfg.pipeline.enabled;
    if env_flag_on(disable_pipeline, faults.on("env-bool")) {
        let value = disable_pipeline.unwrap_or_default();
        warnings.push(if pipeline_enabled {
            format!("pipeline disabled by {DISABLE_PIPELINE_ENV}={value:?}: monolithic proving although pipeline.enabled = true")
        } else {
            format!("{DISABLE_PIPELINE_ENV}={value:?}: pipeline stays disabled")
        });
        pipeline_enabled = false;
    }
    let mut partition_workers = cfg.synthesis.partition_workers.max(1);
    if faults.on("ignore-deprecated") {
        // FAULT ignore-deprecated: as real cuzk, the key is deprecated and ignored.
        if loaded.present_keys.iter().any(|k| k == "synthesis.partition_workers") {
            warnings.push(DEPRECATED_WORKERS_WARNING.to_string());
        }
        partition_workers = 1;
    }
    let m = &cfg.memory;
    let budget = crate::memory::resolve_budget(&m.total_budget, &m.safety_margin, host, faults.on("host-memory"))?;
    let working_set = crate::memory::parse_size(&m.partition_working_set)
        .map_err(|e| anyhow::anyhow!("memory.partition_working_set: {e}"))?;
    Ok(Effective {
        pipeline_enabled,
        partition_workers,
        max_parallel_synthesis: cfg.pipeline.max_parallel_synthesis.unwrap_or(0),
        budget,
        working_set,
        warnings,
    })
}

fn collect_keys(value: &toml::Value, prefix: &str, unknown: &mut Vec<String>, present: &mut Vec<String>) {
    if let toml::Value::Table(table) = value {
        for (k, v) in table {
            let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
            let is_section = KNOWN_KEYS.iter().any(|known| known.starts_with(&format!("{key}.")));
            if KNOWN_KEYS.contains(&key.as_str()) {
                present.push(key);
            } else if is_section && v.is_table() {
                collect_keys(v, &key, unknown, present);
            } else {
                unknown.push(key);
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
    fn memory_keys_are_known_and_checked() {
        let l = parse("[memory]\ntotal_budget = \"512MiB\"\nsafety_margin = 1024\npartition_working_set = \"64MiB\"\n").unwrap();
        assert!(l.ignored_keys.is_empty(), "{:?}", l.ignored_keys);
        assert_eq!(l.config.memory.total_budget, "512MiB");
        assert_eq!(l.config.memory.safety_margin, "1024");
        assert_eq!(l.config.memory.partition_working_set, "64MiB");
        let d = parse("").unwrap().config.memory;
        assert_eq!((d.total_budget.as_str(), d.safety_margin.as_str(), d.partition_working_set.as_str()), ("auto", "64MiB", "0"));
        assert!(parse("[memory]\ntotal_budget = \"plenty\"\n").is_err());
        assert!(parse("[memory]\npartition_working_set = \"4 bananas\"\n").is_err());
        assert!(parse("[memory]\nsafety_margin = true\n").is_err());
        assert!(parse("[memory]\ntotal_budget = \"AUTO\"\n").is_ok());
    }

    #[test]
    fn disable_pipeline_env() {
        for v in ["1", "true", "TRUE", "Yes", "on", " on "] {
            assert!(env_flag_on(Some(v), false), "{v:?}");
        }
        for v in ["0", "false", "no", "off", "", "2", "enabled"] {
            assert!(!env_flag_on(Some(v), false), "{v:?}");
            assert!(env_flag_on(Some(v), true), "FAULT env-bool: {v:?} means on");
        }
        assert!(!env_flag_on(None, false) && !env_flag_on(None, true));
    }

    fn host() -> crate::memory::HostMemory {
        crate::memory::HostMemory { meminfo: Some("MemTotal: 1048576 kB\n".into()), cgroup_v2_max: Some("536870912\n".into()), cgroup_v1_limit: None }
    }

    #[test]
    fn effective_settings() {
        use crate::faults::Faults;
        let toml = "[pipeline]\nenabled = true\nmax_parallel_synthesis = 3\n[synthesis]\npartition_workers = 4\n[memory]\nsafety_margin = \"0\"\npartition_working_set = \"128MiB\"\n";
        let l = parse(toml).unwrap();
        let none = Faults::default();
        let e = resolve(&l, &none, None, &host()).unwrap();
        assert!(e.pipeline_enabled && e.warnings.is_empty());
        assert_eq!((e.partition_workers, e.max_parallel_synthesis, e.inflight_limit()), (4, 3, Some(3)));
        assert_eq!((e.budget.total_bytes, e.budget.source.as_str()), (512 << 20, "cgroup"));
        assert_eq!((e.budget_slots(), e.max_concurrent()), (Some(4), 3));
        // REFPROVER_DISABLE_PIPELINE
        let e = resolve(&l, &none, Some("yes"), &host()).unwrap();
        assert!(!e.pipeline_enabled && e.warnings[0].contains("REFPROVER_DISABLE_PIPELINE"));
        assert!(resolve(&l, &none, Some("0"), &host()).unwrap().pipeline_enabled);
        let env_bool = Faults::parse("env-bool").unwrap();
        assert!(!resolve(&l, &env_bool, Some("0"), &host()).unwrap().pipeline_enabled);
        assert!(resolve(&l, &env_bool, None, &host()).unwrap().pipeline_enabled);
        // FAULT ignore-deprecated
        let dep = Faults::parse("ignore-deprecated").unwrap();
        let e = resolve(&l, &dep, None, &host()).unwrap();
        assert_eq!(e.partition_workers, 1);
        assert_eq!(e.warnings, vec![DEPRECATED_WORKERS_WARNING.to_string()]);
        assert_eq!(e.max_concurrent(), 1);
        // FAULT host-memory: MemTotal (1 GiB) only.
        let e = resolve(&l, &Faults::parse("host-memory").unwrap(), None, &host()).unwrap();
        assert_eq!((e.budget.total_bytes, e.budget.source.as_str(), e.budget_slots()), (1 << 30, "meminfo", Some(8)));
        // Defaults: no limits beyond one worker.
        let e = resolve(&parse("").unwrap(), &none, None, &host()).unwrap();
        assert_eq!((e.inflight_limit(), e.budget_slots(), e.max_concurrent(), e.max_parallel_synthesis), (None, None, 1, 0));
        let e = resolve(&parse("[pipeline]\nmax_parallel_synthesis = 0\n").unwrap(), &none, None, &host()).unwrap();
        assert_eq!(e.inflight_limit(), None);
    }

    #[test]
    fn wrong_type_is_an_error() {
        assert!(parse("[synthesis]\npartition_workers = \"four\"\n").is_err());
        assert!(parse("[synthesis]\npartition_workers = 0\n").is_err());
    }
}
