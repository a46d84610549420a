"""What a running daemon says about itself: its HTTP ``GET /status`` JSON and its log lines.

cuzk offers an optional ``GET /status`` on ``daemon.status_listen`` (docs/design/cuzk-interface.md);
refprover's carries ``param_cache`` (the directory the proof crates read params from),
``ignored_keys`` (config keys it does not know) and ``faults``. A daemon without a status
listener still logs both facts at start (``refprover starting ... param_cache=...`` and
``ignored config key ... key=...``), so each helper falls back to the log.
"""

from __future__ import annotations

import http.client
import json
import re
from typing import Any

__all__ = ["deprecated_keys_from_log", "fetch_status", "ignored_keys_from_log",
           "param_cache_from_log"]

_PARAM_RE = re.compile(r"param_cache=(\S+)")
_MAX_CONCURRENT_RE = re.compile(r"\bmax_concurrent=(\d+)")
_DEPRECATED_RE = re.compile(r"\b([a-z_]+\.[a-z_.]+) is deprecated")
_IGNORED_RE = re.compile(r"ignored config key.*?\bkey=(\S+)|\bkey=(\S+).*?ignored config key")


def fetch_status(port: int | None, timeout_s: float = 3.0) -> dict[str, Any] | None:
    """``GET /status`` on ``127.0.0.1:port`` (the daemon's published ``status`` port); ``None``
    when there is no such port or the daemon does not answer JSON within ``timeout_s`` seconds
    (default 3). Never raises: the status endpoint is optional in cuzk."""
    if not port:
        return None
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
    try:
        conn.request("GET", "/status")
        resp = conn.getresponse()
        if resp.status != 200:
            return None
        doc = json.loads(resp.read().decode("utf-8", "replace"))
        return doc if isinstance(doc, dict) else None
    except (OSError, ValueError, http.client.HTTPException):
        return None
    finally:
        conn.close()


def param_cache_from_log(log: str) -> str | None:
    """The ``param_cache=`` the daemon logged at start (the last one), or ``None``."""
    found = _PARAM_RE.findall(log)
    return found[-1].strip('"') if found else None


def max_concurrent_from_log(log: str) -> int | None:
    """The limit on work items in progress the daemon logged at start (``max_concurrent=N``,
    refprover's ``scheduler`` line: the least of its workers, in-flight limit and memory
    budget; the last one logged), or ``None``."""
    found = _MAX_CONCURRENT_RE.findall(log)
    return int(found[-1]) if found else None


def ignored_keys_from_log(log: str) -> list[str]:
    """Config keys the daemon logged as ``ignored config key`` (in order, no repeats)."""
    keys: list[str] = []
    for line in log.splitlines():
        if "ignored config key" not in line:
            continue
        m = _IGNORED_RE.search(line)
        if m:
            key = (m.group(1) or m.group(2)).strip('"')
            if key not in keys:
                keys.append(key)
    return keys


def deprecated_keys_from_log(log: str) -> list[str]:
    """Config keys the daemon logged as deprecated (cuzk: ``synthesis.partition_workers is
    deprecated - ...``): it reads them only to say it ignores them."""
    return list(dict.fromkeys(_DEPRECATED_RE.findall(log)))
