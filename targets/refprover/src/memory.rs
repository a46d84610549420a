//! The memory budget (cuzk's `memory.total_budget` / `memory.safety_margin`) and the per-item
//! working set (refprover's `memory.partition_working_set`).
//!
//! `total_budget = "auto"` is the smaller of `/proc/meminfo` MemTotal and the cgroup memory limit
//! (v2 `/sys/fs/cgroup/memory.max` unless `max`, else v1
//! `/sys/fs/cgroup/memory/memory.limit_in_bytes`), minus the safety margin. An explicit size is
//! the budget as given. With a working set > 0 the budget gates work: at most
//! `max(1, budget / working_set)` work items are proved at once.
//! FAULT host-memory: "auto" reads MemTotal only and ignores the cgroup limit (as cuzk does).

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{bail, Context, Result};

/// Parses a size: a byte count (`1048576`) or a number with a unit, case-insensitive, spaces
/// allowed: `B`; binary `K`/`KiB`, `M`/`MiB`, `G`/`GiB`, `T`/`TiB`; decimal `KB`, `MB`, `GB`,
/// `TB`. Fractions are allowed with a unit (`1.5GiB`). Errors: empty, malformed, unknown unit
/// or overflow, each naming the text.
pub fn parse_size(text: &str) -> Result<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = (t[..split].trim(), t[split..].trim());
    if num.is_empty() {
        bail!("size {text:?} is not a number with an optional unit (e.g. 512MiB, 4GiB, 1073741824)");
    }
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        other => bail!("size {text:?}: unknown unit {other:?} (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)"),
    };
    if let Ok(n) = num.parse::<u64>() {
        return n.checked_mul(mult).with_context(|| format!("size {text:?} overflows 64 bits"));
    }
    let f: f64 = num.parse().map_err(|_| anyhow::anyhow!("size {text:?}: {num:?} is not a number"))?;
    let bytes = f * mult as f64;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        bail!("size {text:?} overflows 64 bits");
    }
    Ok(bytes.round() as u64)
}

/// Where the budget came from (`/status` `memory_budget_source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetSource {
    /// An explicit `memory.total_budget`.
    Config,
    /// "auto", and the cgroup limit was the smaller.
    Cgroup,
    /// "auto", and MemTotal was the smaller (or the only one known).
    Meminfo,
}

impl BudgetSource {
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetSource::Config => "config",
            BudgetSource::Cgroup => "cgroup",
            BudgetSource::Meminfo => "meminfo",
        }
    }
}

/// The resolved memory budget.
#[derive(Debug, Clone)]
pub struct Budget {
    pub total_bytes: u64,
    pub source: BudgetSource,
    /// How it was derived, for the start log.
    pub detail: String,
}

/// What the host says about its memory: the raw texts of /proc/meminfo and the cgroup files
/// (None when unreadable). Separate from the resolution so that it can be tested.
#[derive(Debug, Clone, Default)]
pub struct HostMemory {
    pub meminfo: Option<String>,
    pub cgroup_v2_max: Option<String>,
    pub cgroup_v1_limit: Option<String>,
}

impl HostMemory {
    /// Reads /proc/meminfo, /sys/fs/cgroup/memory.max and
    /// /sys/fs/cgroup/memory/memory.limit_in_bytes.
    pub fn read() -> Self {
        let read = |p: &str| std::fs::read_to_string(p).ok();
        Self {
            meminfo: read("/proc/meminfo"),
            cgroup_v2_max: read("/sys/fs/cgroup/memory.max"),
            cgroup_v1_limit: read("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
        }
    }

    /// MemTotal in bytes (`MemTotal:  24683584 kB`).
    pub fn mem_total(&self) -> Option<u64> {
        let line = self.meminfo.as_deref()?.lines().find(|l| l.starts_with("MemTotal:"))?;
        let mut parts = line["MemTotal:".len()..].split_whitespace();
        let n: u64 = parts.next()?.parse().ok()?;
        match parts.next().map(str::to_ascii_lowercase).as_deref() {
            Some("kb") => n.checked_mul(1024),
            None | Some("b") => Some(n),
            Some(_) => None,
        }
    }

    /// The cgroup memory limit in bytes and which file gave it; None when unlimited or unknown.
    pub fn cgroup_limit(&self) -> Option<(u64, &'static str)> {
        let v2 = self.cgroup_v2_max.as_deref().map(str::trim);
        if let Some(n) = v2.filter(|v| *v != "max").and_then(|v| v.parse::<u64>().ok()) {
            return Some((n, "/sys/fs/cgroup/memory.max"));
        }
        let v1 = self.cgroup_v1_limit.as_deref().map(str::trim)?;
        v1.parse::<u64>().ok().map(|n| (n, "/sys/fs/cgroup/memory/memory.limit_in_bytes"))
    }
}

/// Resolves `memory.total_budget` ("auto" or a size) with `memory.safety_margin` (subtracted
/// from "auto" only). `ignore_cgroup` is FAULT host-memory. Errors: a malformed size, or "auto"
/// when neither MemTotal nor a cgroup limit can be read.
pub fn resolve_budget(total_budget: &str, safety_margin: &str, host: &HostMemory, ignore_cgroup: bool) -> Result<Budget> {
    let margin = parse_size(safety_margin).context("memory.safety_margin")?;
    if !total_budget.trim().eq_ignore_ascii_case("auto") {
        let total_bytes = parse_size(total_budget).context("memory.total_budget")?;
        return Ok(Budget { total_bytes, source: BudgetSource::Config, detail: format!("memory.total_budget = {total_budget:?}") });
    }
    let mem_total = host.mem_total();
    let cgroup = if ignore_cgroup { None } else { host.cgroup_limit() };
    let (limit, source, what) = match (mem_total, cgroup) {
        (Some(m), Some((c, file))) if c < m => (c, BudgetSource::Cgroup, format!("cgroup limit {c} ({file}) < MemTotal {m}")),
        (Some(m), Some((c, file))) => (m, BudgetSource::Meminfo, format!("MemTotal {m} <= cgroup limit {c} ({file})")),
        (Some(m), None) if ignore_cgroup => (m, BudgetSource::Meminfo, format!("MemTotal {m} (cgroup limit not read)")),
        (Some(m), None) => (m, BudgetSource::Meminfo, format!("MemTotal {m} (no cgroup limit)")),
        (None, Some((c, file))) => (c, BudgetSource::Cgroup, format!("cgroup limit {c} ({file}); MemTotal unreadable")),
        (None, None) => bail!(
            "memory.total_budget = \"auto\": cannot read MemTotal from /proc/meminfo nor a cgroup memory limit; set an explicit size such as \"4GiB\""
        ),
    };
    Ok(Budget {
        total_bytes: limit.saturating_sub(margin),
        source,
        detail: format!("auto: {what}, minus safety_margin {margin}"),
    })
}

/// Work items the budget admits at once: None (no gate) when the working set is 0, else
/// `max(1, budget / working_set)`.
pub fn budget_slots(budget_bytes: u64, working_set: u64) -> Option<usize> {
    if working_set == 0 {
        return None;
    }
    Some(usize::try_from(budget_bytes / working_set).unwrap_or(usize::MAX).max(1))
}

const PAGE: usize = 4096;

/// One work item's working set: `bytes` allocated and every page written, counted in `used`
/// until dropped.
pub struct WorkingSet<'a> {
    buf: Vec<u8>,
    bytes: u64,
    used: &'a AtomicU64,
}

impl<'a> WorkingSet<'a> {
    /// Allocates and touches `bytes` (nothing when 0). The count in `used` goes up first, so
    /// `/status` shows the reservation while the pages are being written.
    pub fn allocate(bytes: u64, used: &'a AtomicU64) -> Self {
        if bytes == 0 {
            return Self { buf: Vec::new(), bytes, used };
        }
        used.fetch_add(bytes, Ordering::Relaxed);
        let len = usize::try_from(bytes).unwrap_or(usize::MAX);
        let mut buf = vec![0u8; len];
        for (n, i) in (0..len).step_by(PAGE).enumerate() {
            buf[i] = (n as u8) | 1;
        }
        if let Some(last) = buf.last_mut() {
            *last = 1;
        }
        std::hint::black_box(&mut buf);
        Self { buf, bytes, used }
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
}

impl Drop for WorkingSet<'_> {
    fn drop(&mut self) {
        std::hint::black_box(&mut self.buf);
        if self.bytes > 0 {
            self.used.fetch_sub(self.bytes, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("0").unwrap(), 0);
        assert_eq!(parse_size("1048576").unwrap(), 1 << 20);
        assert_eq!(parse_size("512MiB").unwrap(), 512 << 20);
        assert_eq!(parse_size("4GiB").unwrap(), 4 << 30);
        assert_eq!(parse_size("256 gib").unwrap(), 256 << 30);
        assert_eq!(parse_size("5G").unwrap(), 5 << 30);
        assert_eq!(parse_size("64k").unwrap(), 64 << 10);
        assert_eq!(parse_size("2GB").unwrap(), 2_000_000_000);
        assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_size("10B").unwrap(), 10);
        for bad in ["", "GiB", "4 parsecs", "-1", "1.2.3MiB", "99999999999999TiB"] {
            assert!(parse_size(bad).is_err(), "{bad:?} should not parse");
        }
    }

    fn host(meminfo_kb: Option<u64>, v2: Option<&str>, v1: Option<&str>) -> HostMemory {
        HostMemory {
            meminfo: meminfo_kb.map(|k| format!("MemTotal:       {k} kB\nMemFree:        1 kB\n")),
            cgroup_v2_max: v2.map(|s| format!("{s}\n")),
            cgroup_v1_limit: v1.map(|s| format!("{s}\n")),
        }
    }

    #[test]
    fn explicit_budget_is_taken_as_given() {
        let b = resolve_budget("512MiB", "64MiB", &HostMemory::default(), false).unwrap();
        assert_eq!((b.total_bytes, b.source), (512 << 20, BudgetSource::Config));
        assert!(resolve_budget("lots", "64MiB", &HostMemory::default(), false).is_err());
        assert!(resolve_budget("auto", "some", &host(Some(1), None, None), false).is_err());
    }

    #[test]
    fn auto_takes_the_smaller_of_meminfo_and_cgroup() {
        let gib = 1u64 << 30;
        // 8 GiB host, 2 GiB cgroup v2 limit.
        let h = host(Some(8 << 20), Some(&(2 * gib).to_string()), None);
        let b = resolve_budget("auto", "64MiB", &h, false).unwrap();
        assert_eq!((b.total_bytes, b.source), (2 * gib - (64 << 20), BudgetSource::Cgroup));
        // FAULT host-memory: the cgroup limit is ignored.
        let b = resolve_budget("AUTO", "64MiB", &h, true).unwrap();
        assert_eq!((b.total_bytes, b.source), (8 * gib - (64 << 20), BudgetSource::Meminfo));
        // v2 "max" falls back to v1; v1's "unlimited" is a huge number.
        let h = host(Some(8 << 20), Some("max"), Some("9223372036854771712"));
        let b = resolve_budget("auto", "0", &h, false).unwrap();
        assert_eq!((b.total_bytes, b.source), (8 * gib, BudgetSource::Meminfo));
        let h = host(Some(8 << 20), None, Some(&gib.to_string()));
        let b = resolve_budget("auto", "0", &h, false).unwrap();
        assert_eq!((b.total_bytes, b.source), (gib, BudgetSource::Cgroup));
        // No cgroup files at all.
        let b = resolve_budget("auto", "5GiB", &host(Some(8 << 20), None, None), false).unwrap();
        assert_eq!((b.total_bytes, b.source), (3 * gib, BudgetSource::Meminfo));
        // The margin never underflows.
        let b = resolve_budget("auto", "1TiB", &host(Some(8 << 20), None, None), false).unwrap();
        assert_eq!(b.total_bytes, 0);
        // Nothing readable.
        assert!(resolve_budget("auto", "0", &HostMemory::default(), false).is_err());
        let b = resolve_budget("auto", "0", &host(None, Some("1024"), None), false).unwrap();
        assert_eq!((b.total_bytes, b.source), (1024, BudgetSource::Cgroup));
    }

    #[test]
    fn slots() {
        assert_eq!(budget_slots(1 << 30, 0), None);
        assert_eq!(budget_slots(1 << 30, 256 << 20), Some(4));
        assert_eq!(budget_slots(1 << 30, 300 << 20), Some(3));
        assert_eq!(budget_slots(100, 1 << 30), Some(1));
        assert_eq!(budget_slots(0, 1), Some(1));
    }

    #[test]
    fn working_set_is_counted_while_held() {
        let used = AtomicU64::new(0);
        {
            let ws = WorkingSet::allocate(3 * PAGE as u64 + 5, &used);
            assert_eq!(ws.len(), 3 * PAGE + 5);
            assert_eq!(used.load(Ordering::Relaxed), 3 * PAGE as u64 + 5);
            let none = WorkingSet::allocate(0, &used);
            assert!(none.is_empty());
        }
        assert_eq!(used.load(Ordering::Relaxed), 0);
    }
}
