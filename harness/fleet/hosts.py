"""The hosts file (``--hosts FILE``): the machines a Dask ``SSHCluster`` starts workers on.

A TOML file::

    scheduler = "127.0.0.1"         # SSH address of the scheduler's host (default: the first host's)
    scheduler_port = 8786           # the scheduler's port there (default 8786)
    known_hosts = "~/.ssh/known_hosts"  # host keys are checked against it (OpenSSH's format;
                                        # this is the default); a host may name its own

    [[host]]
    name = "h200-a"                 # unique; the Dask worker's name: letters, digits, . _ -
    ssh = "root@gpu-a.example:22"   # [USER@]HOST[:PORT]
    labels = ["h200", "nightly"]    # free words (default none)
    gpus = 1                        # a count, or
    # gpu_uuids = ["GPU-5d1c..."]   # the devices by UUID: never both (default gpus = 0)
    slots = 1                       # units at once on the host (default 1)
    runtime = "process"             # how its daemons run: "process" or "docker"
    bin_dir = "/opt/cuzk/bin"       # process: the host's own programs (default: the caller's
                                    # binaries, shipped there: proofdiff.fleet.shipping)
    ssh_key = "~/.ssh/fleet_ed25519"  # the caller's private key for it (default: the agent
                                      # and ~/.ssh/id_*)
    # docker_socket = "unix:///var/run/docker.sock"   # docker: the engine (this is the default)
    python = "/usr/bin/python3"     # the host's Python with proofdiff and distributed (default
                                    # python3): a program name or path, no shell characters

Every host's SSH key is checked against its ``known_hosts`` file before anything is sent to it:
a host whose key is not there, or differs from the one there, is refused. ``--accept-unknown-
host-keys`` (:func:`accepting_unknown_keys`) lets a host that the file does not name in; a key
that differs from the file's is refused all the same.

Every mistake is a :class:`HostsError` naming the file and line (tomllib keeps no line
numbers, so the line is found by scanning the text for the key within its ``[[host]]`` table)
and listing the valid keys.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import msgspec

from proofdiff.model.errors import ProofdiffError

__all__ = ["DEFAULT_KNOWN_HOSTS", "HOST_KEYS", "TOP_KEYS", "Host", "Hosts", "HostsError",
           "accepting_unknown_keys", "load_hosts", "parse_hosts"]

#: The keys of one ``[[host]]`` table.
HOST_KEYS = ("name", "ssh", "labels", "gpus", "gpu_uuids", "slots", "runtime", "bin_dir",
             "docker_socket", "python", "ssh_key", "known_hosts")
#: The keys at the top of the file.
TOP_KEYS = ("scheduler", "scheduler_port", "known_hosts", "host")
#: How a host's daemons run.
RUNTIMES = ("process", "docker")
DEFAULT_SOCKET = "unix:///var/run/docker.sock"
#: The host keys a hosts file that names no ``known_hosts`` is checked against (OpenSSH's).
DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"
_SSH = re.compile(r"^(?:[A-Za-z0-9._-]+@)?[A-Za-z0-9.:_-]+?(?::\d{1,5})?$")
#: A host's name: it names the Dask worker, goes into the command line that starts it over SSH
#: and into report folders (``<run id>-<host>``), so it is a plain word: no path, no shell.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
#: A host's Python: a program name or path, run through the remote shell (quoted as well).
PYTHON = re.compile(r"^[A-Za-z0-9_./+][A-Za-z0-9_./+-]*$")


class HostsError(ProofdiffError):
    """A hosts file that cannot be used (the file, the line, the valid keys)."""


class Host(msgspec.Struct, frozen=True, kw_only=True):
    """One host of the fleet.

    Attributes:
        name: unique in the file; the Dask worker's name. ssh: ``[USER@]HOST[:PORT]``.
        labels: free words. gpus: how many GPUs (``len(gpu_uuids)`` when UUIDs are given).
        gpu_uuids: the devices by UUID ('' none given). slots: units at once (>= 1).
        runtime: ``process`` or ``docker``. bin_dir: the host's own programs for the process
            runtime ('' = the caller's, shipped). docker_socket: the engine of the docker
            runtime. python: the host's Python. ssh_key: the caller's private key file for
            this host ('' = asyncssh's defaults: the agent, ``~/.ssh/id_*``). known_hosts: an
            OpenSSH known_hosts file the host's key must be in (its own, else the file's
            top-level one; '' = :data:`DEFAULT_KNOWN_HOSTS`). accept_unknown_key: a host the
            file does not name is let in unchecked (``--accept-unknown-host-keys``; never read
            from the hosts file); a key that differs from the file's is refused all the same.
    """

    name: str
    ssh: str
    labels: tuple[str, ...] = ()
    gpus: int = 0
    gpu_uuids: tuple[str, ...] = ()
    slots: int = 1
    runtime: str = "process"
    bin_dir: str = ""
    docker_socket: str = ""
    python: str = "python3"
    ssh_key: str = ""
    known_hosts: str = ""
    accept_unknown_key: bool = False

    @property
    def ssh_host(self) -> str:
        """The SSH address without user and port (what ``asyncssh.connect`` dials)."""
        host = self.ssh.rpartition("@")[2]
        return host.rsplit(":", 1)[0] if re.search(r":\d+$", host) else host

    @property
    def port(self) -> int | None:
        """The SSH port ``ssh`` names (``None``: the default, 22)."""
        got = re.search(r":(\d+)$", self.ssh.rpartition("@")[2])
        return int(got.group(1)) if got else None

    @property
    def known_hosts_file(self) -> Path:
        """The known_hosts file this host's key is checked against."""
        return Path(self.known_hosts or DEFAULT_KNOWN_HOSTS).expanduser()

    def key_known(self) -> bool:
        """Whether :attr:`known_hosts_file` names this host (a key or a CA for it, at its
        port or without one, as OpenSSH and asyncssh match); false when there is no file."""
        import asyncssh

        try:
            known = asyncssh.read_known_hosts(str(self.known_hosts_file))
        except (OSError, ValueError):  # no file, or one asyncssh cannot read: nothing known
            return False
        keys, cas, _rev, certs, _rc, subjects, _rs = known.match(self.ssh_host, self.ssh_host,
                                                                 self.port)
        return bool(keys or cas or certs or subjects)

    @property
    def connect_options(self) -> dict[str, Any]:
        """``asyncssh.connect`` options: the user and port where ``ssh`` names them, the
        client key, and the known_hosts file the host's key must be in (``None``, asyncssh's
        "accept any key", only for a host that file does not name, and only with
        ``accept_unknown_key``)."""
        user, at, _rest = self.ssh.rpartition("@")
        out: dict[str, Any] = {"username": user} if at else {}
        if self.port is not None:
            out["port"] = self.port
        if self.ssh_key:
            out["client_keys"] = [str(Path(self.ssh_key).expanduser())]
        out["known_hosts"] = (None if self.accept_unknown_key and not self.key_known()
                              else str(self.known_hosts_file))
        return out


class Hosts(msgspec.Struct, frozen=True, kw_only=True):
    """A hosts file, validated: the hosts in file order, the scheduler's SSH address and port,
    the file it came from, its top-level ``known_hosts`` ('' = :data:`DEFAULT_KNOWN_HOSTS`)
    and whether unknown host keys are let in (:func:`accepting_unknown_keys`)."""

    hosts: tuple[Host, ...]
    scheduler: str
    scheduler_port: int = 8786
    source: str = ""
    known_hosts: str = ""
    accept_unknown_keys: bool = False


def _line(text: str, table: int | None, key: str) -> int:
    """The 1-based line of ``key = ...`` in the ``table``-th ``[[host]]`` table (``None``: at the
    top of the file), else of that table's header, else 1."""
    lines = text.splitlines()
    headers = [i for i, ln in enumerate(lines) if re.match(r"\s*\[\[\s*host\s*\]\]", ln)]
    if table is None:
        start, end = 0, headers[0] if headers else len(lines)
    elif table < len(headers):
        start = headers[table]
        end = next((i for i, ln in enumerate(lines) if i > start and re.match(r"\s*\[", ln)),
                   len(lines))
    else:  # an inline array of tables: the first mention of the key
        start, end = 0, len(lines)
    pat = re.compile(rf"^\s*\"?{re.escape(key)}\"?\s*=")
    for i in range(start, end):
        if pat.match(lines[i]):
            return i + 1
    return (start + 1) if table is not None and table < len(headers) else 1


def _fail(where: str, text: str, table: int | None, key: str, what: str, fix: str) -> HostsError:
    return HostsError(f"{where}:{_line(text, table, key)}: {what}", fix=fix)


def _valid_keys() -> str:
    return (f"valid keys of a [[host]]: {', '.join(HOST_KEYS)}; at the top: "
            f"{', '.join(k for k in TOP_KEYS if k != 'host')}")


def _host(raw: Any, i: int, text: str, where: str, known_hosts: str = "") -> Host:
    """One ``[[host]]`` table, checked (module docstring)."""
    def fail(key: str, what: str, fix: str = "") -> HostsError:
        return _fail(where, text, i, key, f"host #{i + 1}: {what}", fix or _valid_keys())

    if not isinstance(raw, dict):
        raise fail("host", f"expected a table, got {type(raw).__name__}")
    for key in raw:
        if key not in HOST_KEYS:
            raise fail(key, f"unknown key {key!r}")
    for key, example in (("name", '"h200-a"'), ("ssh", '"root@gpu-a:22"')):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise fail(key, f"{key!r} is missing or not a non-empty string",
                       f"give it, e.g. {key} = {example}")
    name = raw["name"]
    if not NAME.match(name):
        raise fail("name", f"name = {name!r} is not a plain name (it names the host's Dask "
                   "worker, its report folder and goes into the command line that starts the "
                   "worker over SSH)", "use letters, digits, '.', '_' and '-', starting with a "
                   "letter or digit, at most 63 characters: name = \"h200-a\"")
    if not _SSH.match(raw["ssh"]):
        raise fail("ssh", f"ssh = {raw['ssh']!r} is no SSH address", "write [USER@]HOST[:PORT]")
    if "gpus" in raw and "gpu_uuids" in raw:
        raise fail("gpu_uuids", f"{name!r} gives both a GPU count (gpus) and GPU UUIDs "
                   "(gpu_uuids)", "give one: gpus = N, or gpu_uuids = [\"GPU-...\", ...]; "
                   + _valid_keys())
    gpus = raw.get("gpus", 0)
    if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 0:
        raise fail("gpus", f"gpus = {gpus!r} is not a count >= 0", "gpus = 1")
    uuids = raw.get("gpu_uuids", [])
    if not isinstance(uuids, list) or not all(isinstance(u, str) and u.startswith("GPU-")
                                              for u in uuids):
        raise fail("gpu_uuids", f"gpu_uuids = {uuids!r} is not a list of GPU-... UUIDs",
                   "list them as nvidia-smi -L prints them: gpu_uuids = [\"GPU-5d1c...\"]")
    slots = raw.get("slots", 1)
    if not isinstance(slots, int) or isinstance(slots, bool) or slots < 1:
        raise fail("slots", f"slots = {slots!r} is not a count >= 1", "slots = 1")
    labels = raw.get("labels", [])
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
        raise fail("labels", f"labels = {labels!r} is not a list of strings",
                   "labels = [\"h200\"]")
    runtime = raw.get("runtime", "process")
    if runtime not in RUNTIMES:
        raise fail("runtime", f"runtime = {runtime!r}", f"one of {', '.join(RUNTIMES)}")
    for key in ("bin_dir", "docker_socket", "python", "ssh_key", "known_hosts"):
        if key in raw and (not isinstance(raw[key], str) or not raw[key]):
            raise fail(key, f"{key} = {raw[key]!r} is not a non-empty string")
    if "python" in raw and not PYTHON.match(raw["python"]):
        raise fail("python", f"python = {raw['python']!r} is not a program name or path (the "
                   "remote shell runs it)", "give the host's Python by its path, with no "
                   "spaces or shell characters: python = \"/opt/proofdiff/bin/python\"")
    if runtime == "process" and "docker_socket" in raw:
        raise fail("docker_socket", f"{name!r} runs daemons as processes but names a "
                   "docker_socket", "drop docker_socket, or set runtime = \"docker\"")
    if runtime == "docker" and "bin_dir" in raw:
        raise fail("bin_dir", f"{name!r} runs daemons in Docker but names a bin_dir",
                   "drop bin_dir, or set runtime = \"process\"")
    return Host(name=name, ssh=raw["ssh"], labels=tuple(labels),
                gpus=len(uuids) if uuids else gpus, gpu_uuids=tuple(uuids), slots=slots,
                runtime=runtime, bin_dir=raw.get("bin_dir", ""),
                docker_socket=(raw.get("docker_socket", DEFAULT_SOCKET)
                               if runtime == "docker" else ""),
                python=raw.get("python", "python3"), ssh_key=raw.get("ssh_key", ""),
                known_hosts=raw.get("known_hosts", known_hosts))


def parse_hosts(text: str, where: str = "<hosts>") -> Hosts:
    """A hosts file's text, validated (module docstring).

    Args:
        text: the TOML. where: the file's name, for the messages.

    Raises:
        HostsError: malformed TOML (its line), an unknown key, a missing or ill-typed value,
            a duplicate name, both ``gpus`` and ``gpu_uuids``, no host (``file:line``, the
            valid keys, the fix).
    """
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None) or re.search(r"line (\d+)", str(exc))
        n = line if isinstance(line, int) else int(line.group(1)) if line else 1
        raise HostsError(f"{where}:{n}: not valid TOML: {exc}",
                         fix="fix the syntax (docs/guide/fleet.md, 'The hosts file', shows one)"
                         ) from None
    for key in doc:
        if key not in TOP_KEYS:
            raise _fail(where, text, None, key, f"unknown key {key!r} at the top",
                        _valid_keys())
    raw_hosts = doc.get("host", [])
    if not isinstance(raw_hosts, list) or not raw_hosts:
        raise HostsError(f"{where}:1: no [[host]] table", fix="add one [[host]] per machine: "
                         + _valid_keys())
    known = doc.get("known_hosts", "")
    if not isinstance(known, str):
        raise _fail(where, text, None, "known_hosts", f"known_hosts = {known!r} is not a path",
                    "known_hosts = \"~/.ssh/known_hosts\"")
    hosts = [_host(h, i, text, where, known) for i, h in enumerate(raw_hosts)]
    seen: dict[str, int] = {}
    for i, h in enumerate(hosts):
        if h.name in seen:
            raise _fail(where, text, i, "name", f"duplicate host name {h.name!r} (host "
                        f"#{seen[h.name] + 1} and #{i + 1})", "give each host its own name")
        seen[h.name] = i
    sched = doc.get("scheduler", hosts[0].ssh)
    port = doc.get("scheduler_port", 8786)
    if not isinstance(sched, str) or not _SSH.match(sched):
        raise _fail(where, text, None, "scheduler", f"scheduler = {sched!r} is no SSH address",
                    "write [USER@]HOST[:PORT], e.g. scheduler = \"127.0.0.1\"")
    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port < 65536:
        raise _fail(where, text, None, "scheduler_port", f"scheduler_port = {port!r}",
                    "a TCP port, e.g. scheduler_port = 8786")
    return Hosts(hosts=tuple(hosts), scheduler=sched, scheduler_port=port, source=where,
                 known_hosts=known)


def accepting_unknown_keys(hosts: Hosts) -> Hosts:
    """``hosts`` with every host's ``accept_unknown_key`` set (``--accept-unknown-host-keys``):
    a host its known_hosts file does not name is let in unchecked."""
    return msgspec.structs.replace(hosts, hosts=tuple(
        msgspec.structs.replace(h, accept_unknown_key=True) for h in hosts.hosts),
        accept_unknown_keys=True)


def load_hosts(path: str | Path) -> Hosts:
    """:func:`parse_hosts` of the file at ``path``.

    Raises:
        HostsError: the file cannot be read, or what :func:`parse_hosts` raises.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise HostsError(f"hosts file {path}: {exc.strerror or exc}",
                         fix="give --hosts the path of a readable TOML file") from None
    return parse_hosts(text, str(path))
