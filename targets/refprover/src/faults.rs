//! Fault switches read from `REFPROVER_FAULTS` (comma list), for proofdiff's self-tests.
//! Each is latent in a bench-style config and triggered by a prod-style one (DESIGN.md §4).

use std::collections::BTreeSet;

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
];

/// The set of enabled faults.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    enabled: BTreeSet<String>,
}

impl Faults {
    /// Parses a comma list such as `"partition-race,no-self-check"`.
    ///
    /// Errors: an unknown name, with the list of known names.
    pub fn parse(list: &str) -> anyhow::Result<Self> {
        let mut enabled = BTreeSet::new();
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if !KNOWN_FAULTS.contains(&name) {
                anyhow::bail!(
                    "unknown fault {name:?} in REFPROVER_FAULTS; known faults: {}",
                    KNOWN_FAULTS.join(", ")
                );
            }
            enabled.insert(name.to_string());
        }
        Ok(Self { enabled })
    }

    /// Reads `REFPROVER_FAULTS` from the environment (unset = no faults).
    pub fn from_env() -> anyhow::Result<Self> {
        Self::parse(&std::env::var("REFPROVER_FAULTS").unwrap_or_default())
    }

    /// True when the named fault is on.
    pub fn on(&self, name: &str) -> bool {
        self.enabled.contains(name)
    }

    /// The enabled fault names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.enabled.iter().cloned().collect()
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
    }
}
