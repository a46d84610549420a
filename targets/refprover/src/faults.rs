//! Fault switches read from `REFPROVER_FAULTS` (comma list), for proofdiff's self-tests.
//! Each is latent in a bench-style config and triggered by a prod-style one (docs/fault-catalog.md),
//! except `slow-prove=<factor>`, which slows every config alike (a slower candidate image for
//! the gate's timing verdict), `gpu-bound-ms=<N>`, which makes every partition wait N ms
//! idle, standing in for GPU time while the host's cores are free (the fleet's scale-out
//! benchmark on a machine without a GPU), and `no-first-run-artifact`, which keeps every
//! config's first run from leaving its artifact (crate::first_run).

use std::collections::BTreeMap;

/// The fault names this build knows.
pub const KNOWN_FAULTS: &[&str] = &[
    "partition-race",
    "shared-assembler",
    "no-self-check",
    "param-path-default",
    "serialize-pipeline",
    "queue-deadlock",
    "shared-witness",
    "ignore-priority",
    "exceed-inflight",
    "host-memory",
    "env-bool",
    "ignore-deprecated",
    "slow-prove",
    "lenient-verify",
    "gpu-bound-ms",
    "retain-witness",
    "serialize-partitions",
    "compute-micros",
    "status-waits",
    "early-release",
    "no-first-run-artifact",
];

/// Faults that take a value (`name=value`); the others take none.
const VALUED: &[&str] = &["slow-prove", "gpu-bound-ms"];

/// The set of enabled faults.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    enabled: BTreeMap<String, Option<String>>,
}

impl Faults {
    /// Parses a comma list such as `"partition-race,no-self-check"` or `"slow-prove=1.25"`.
    ///
    /// Errors: an unknown name, with the list of known names; a value on a fault that takes
    /// none; `slow-prove` without a factor >= 1.
    pub fn parse(list: &str) -> anyhow::Result<Self> {
        let mut enabled = BTreeMap::new();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, value) = match item.split_once('=') {
                Some((n, v)) => (n.trim(), Some(v.trim().to_string())),
                None => (item, None),
            };
            if !KNOWN_FAULTS.contains(&name) {
                anyhow::bail!(
                    "unknown fault {name:?} in REFPROVER_FAULTS; known faults: {}",
                    KNOWN_FAULTS.join(", ")
                );
            }
            if value.is_some() != VALUED.contains(&name) {
                anyhow::bail!(
                    "fault {name:?} in REFPROVER_FAULTS {}",
                    if value.is_some() { "takes no value" } else { "needs a value, e.g. slow-prove=1.25" }
                );
            }
            enabled.insert(name.to_string(), value);
        }
        let f = Self { enabled };
        if f.on("slow-prove") && f.slow_factor() < 1.0 {
            anyhow::bail!("slow-prove needs a factor >= 1 (proving takes factor x as long), e.g. slow-prove=1.25");
        }
        if f.on("gpu-bound-ms") && f.gpu_bound().is_none() {
            anyhow::bail!("gpu-bound-ms needs a whole number of milliseconds per partition, e.g. gpu-bound-ms=500");
        }
        Ok(f)
    }

    /// The `slow-prove` factor: 1.0 when off, NaN-free (an unparsable value reads as 0, which
    /// `parse` rejects).
    pub fn slow_factor(&self) -> f64 {
        match self.enabled.get("slow-prove") {
            Some(Some(v)) => v.parse::<f64>().ok().filter(|x| x.is_finite()).unwrap_or(0.0),
            _ => 1.0,
        }
    }

    /// The `gpu-bound-ms` wait per partition: `Some(ZERO)` when off, `None` when its value is
    /// not a whole number of milliseconds (which `parse` rejects).
    pub fn gpu_bound(&self) -> Option<std::time::Duration> {
        match self.enabled.get("gpu-bound-ms") {
            Some(Some(v)) => v.parse::<u64>().ok().map(std::time::Duration::from_millis),
            _ => Some(std::time::Duration::ZERO),
        }
    }

    /// Reads `REFPROVER_FAULTS` from the environment (unset = no faults).
    pub fn from_env() -> anyhow::Result<Self> {
        Self::parse(&std::env::var("REFPROVER_FAULTS").unwrap_or_default())
    }

    /// True when the named fault is on.
    pub fn on(&self, name: &str) -> bool {
        self.enabled.contains_key(name)
    }

    /// The enabled faults as given (`name` or `name=value`), sorted by name.
    pub fn names(&self) -> Vec<String> {
        self.enabled
            .iter()
            .map(|(n, v)| v.as_ref().map_or_else(|| n.clone(), |v| format!("{n}={v}")))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_known_and_rejects_unknown() {
        let f = Faults::parse(" partition-race, no-self-check ,").unwrap();
        assert!(f.on("partition-race") && f.on("no-self-check") && !f.on("shared-assembler"));
        let err = Faults::parse("partition-rase").unwrap_err().to_string();
        assert!(err.contains("partition-rase") && err.contains("shared-assembler"));
        let f = Faults::parse("ignore-priority,exceed-inflight,host-memory,env-bool,ignore-deprecated").unwrap();
        assert_eq!(f.names().len(), 5);
        let f = Faults::parse("retain-witness,serialize-partitions,compute-micros,status-waits,early-release").unwrap();
        assert_eq!(f.names().len(), 5);
        assert!(Faults::parse("no-first-run-artifact").unwrap().on("no-first-run-artifact"));
    }

    #[test]
    fn slow_prove_takes_a_factor() {
        assert_eq!(Faults::default().slow_factor(), 1.0);
        let f = Faults::parse("slow-prove=1.25,partition-race").unwrap();
        assert_eq!(f.slow_factor(), 1.25);
        assert_eq!(f.names(), vec!["partition-race".to_string(), "slow-prove=1.25".to_string()]);
        for bad in ["slow-prove", "slow-prove=0.5", "slow-prove=fast", "partition-race=2"] {
            assert!(Faults::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn gpu_bound_takes_milliseconds() {
        assert_eq!(Faults::default().gpu_bound(), Some(std::time::Duration::ZERO));
        let f = Faults::parse("gpu-bound-ms=250").unwrap();
        assert_eq!(f.gpu_bound(), Some(std::time::Duration::from_millis(250)));
        for bad in ["gpu-bound-ms", "gpu-bound-ms=-1", "gpu-bound-ms=0.5", "gpu-bound-ms=soon"] {
            let err = Faults::parse(bad).unwrap_err().to_string();
            assert!(err.contains("gpu-bound-ms"), "{bad}: {err}");
        }
    }
}
