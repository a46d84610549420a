"""Artifacts go to each host once, keyed by content, through the Dask engine itself: no shared
file system, no registry, no scp of our own.

A folder or file the units need (refprover's binaries, the param cache, a workload file, a
profile file, a regression case) is a :class:`Bundle`: its files, each a :class:`Blob` named by
the sha256 of its bytes; a symbolic link in it is refused (:func:`bundle_of`), so nothing but
the files named is ever sent. Shipping a bundle to a worker (:func:`ship`):

1. asks the worker which blobs it lacks (a task of :func:`_missing` pinned to that worker;
   every step has a deadline, :data:`STEP_TIMEOUT_S`);
2. sends each missing blob in chunks of :data:`CHUNK_BYTES` (:func:`_put`), which the worker
   checks against its sha256 before it keeps it: ``<root>/blobs/<sha256>``;
3. has the worker lay the bundle out as a folder of hard links, ``<root>/dirs/<bundle key>/``
   (:func:`_assemble`), once.

``<root>`` is :func:`shipped_root` on the worker: ``$PROOFDIFF_SHIPPED``, else
``~/.cache/proofdiff/shipped``. Blobs stay there for the next run, so a host is sent each
artifact once, ever; a second run ships nothing (its :class:`ShipReport` says so).

In the units, a shipped path is written ``@shipped/<bundle key>[/<name>]`` (:data:`PREFIX`);
:func:`localize` turns it into the worker's own path before the unit runs.
"""

from __future__ import annotations

import hashlib
import os
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import msgspec

__all__ = ["CHUNK_BYTES", "PREFIX", "Blob", "Bundle", "ShipReport", "bundle_of", "localize",
           "ship", "shipped_root"]

#: How a unit names a shipped folder or file: ``@shipped/<bundle key>[/<name>]``.
PREFIX = "@shipped/"
#: Bytes per message of a blob's transfer (a Dask message of this size is routine).
CHUNK_BYTES = 32 << 20
#: Deadline of one step on a worker (a question, a chunk, a folder laid out), s.
STEP_TIMEOUT_S = 300.0

T = TypeVar("T")


class Blob(msgspec.Struct, frozen=True):
    """One file of a bundle: its path in the bundle (``/``-separated), sha256 (hex), size
    (bytes) and whether it is a program."""

    name: str
    sha256: str
    size: int
    executable: bool = False


class Bundle(msgspec.Struct, frozen=True):
    """Files shipped together and laid out as one folder on the host. ``what``: what they are,
    for the logs (``binaries``, ``params``, ``workload wpost-2k``); ``file``: the name a
    reference points at inside the folder ('' = the folder itself); ``base``: the caller's
    folder that the blobs' names are relative to (never read on the worker)."""

    what: str
    blobs: tuple[Blob, ...]
    file: str = ""
    base: str = ""

    @property
    def key(self) -> str:
        """16 hex digits over every (name, sha256, executable), in name order."""
        h = hashlib.sha256()
        for b in sorted(self.blobs, key=lambda x: x.name):
            h.update(f"{b.name}\0{b.sha256}\0{int(b.executable)}\n".encode())
        return h.hexdigest()[:16]

    @property
    def ref(self) -> str:
        """What a unit carries in place of the caller's path."""
        return f"{PREFIX}{self.key}" + (f"/{self.file}" if self.file else "")

    @property
    def size(self) -> int:
        """Bytes of every blob."""
        return sum(b.size for b in self.blobs)


class ShipReport(msgspec.Struct, frozen=True):
    """What one worker was sent: ``sent`` blobs of ``sent_bytes`` bytes; ``present`` it had
    already; ``seconds``: the wall of that worker's shipment (asking, sending, laying out)."""

    worker: str
    sent: int
    sent_bytes: int
    present: int
    seconds: float = 0.0

    def line(self) -> str:
        """``host-a: sent 7 file(s), 35.2 MB; 0 already there (1.4 s)``."""
        return (f"{self.worker}: sent {self.sent} file(s), {self.sent_bytes / 1e6:.1f} MB; "
                f"{self.present} already there ({self.seconds:.1f} s)")


def _sha256(path: Path) -> str:
    """The hex sha256 of ``path``'s bytes (remembered per path, size and mtime)."""
    from proofdiff.runtime.identity import file_sha256

    return file_sha256(str(path)).removeprefix("sha256:")


def _not_a_link(what: str, path: Path) -> None:
    """Refuse a symbolic link: shipped, it would send what it points at (a key, a password
    file, another user's files) to every host of the fleet.

    Raises:
        FleetError: ``path`` is a symbolic link (its target named, with the fix).
    """
    if path.is_symlink():
        from proofdiff.fleet.executor import FleetError

        raise FleetError(f"{what}: {path} is a symbolic link (to {os.readlink(path)}); "
                         "shipping does not follow links",
                         fix=f"copy the file itself into place (cp --remove-destination "
                             f"\"$(readlink -f {path})\" {path}), or name the link's target")


def _files(what: str, folder: Path) -> list[Path]:
    """Every regular file under ``folder`` (``__pycache__`` left out), in path order.

    Raises:
        FleetError: a symbolic link anywhere under it (:func:`_not_a_link`).
    """
    found: list[Path] = []
    for top, dirs, names in os.walk(folder, followlinks=False):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in (*dirs, *names):
            _not_a_link(what, Path(top) / name)
        found += [Path(top) / n for n in names if (Path(top) / n).is_file()]
    return sorted(found)


def bundle_of(what: str, path: str | Path, *, programs: bool = False,
              named: bool = False) -> Bundle:
    """The bundle of a file (the folder holds it alone; the reference names it) or of a folder
    (every regular file under it, ``__pycache__`` left out; ``programs``: only the executable
    files at its top, as a bin dir such as cargo's ``target/release`` holds its programs beside
    hundreds of MB of build files; ``named``: the folder keeps its name on the host, inside the
    bundle's, for a reader that goes by it, such as a regression case's). Symbolic links are
    refused, the named path itself included (the folders above it may be links).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        FleetError: ``path``, or a file or folder under it, is a symbolic link.
    """
    _not_a_link(what, Path(path))
    p = Path(path).resolve()
    if p.is_file():
        return Bundle(what=what, file=p.name, base=str(p.parent),
                      blobs=(Blob(p.name, _sha256(p), p.stat().st_size,
                                  os.access(p, os.X_OK)),))
    if not p.is_dir():
        raise FileNotFoundError(f"{what}: {path} does not exist")
    if programs:
        files = sorted(f for f in p.iterdir() if os.access(f, os.X_OK) and f.is_file())
        for f in files:
            _not_a_link(what, f)
    else:
        files = _files(what, p)
    base = p.parent if named else p
    return Bundle(what=what, file=p.name if named else "", base=str(base), blobs=tuple(
        Blob(f.relative_to(base).as_posix(), _sha256(f), f.stat().st_size,
             os.access(f, os.X_OK)) for f in files))


# -- on the worker ------------------------------------------------------------------------------

def shipped_root() -> Path:
    """Where this machine keeps shipped artifacts (module docstring)."""
    env = os.environ.get("PROOFDIFF_SHIPPED")
    return Path(env) if env else Path.home() / ".cache" / "proofdiff" / "shipped"


def _missing(shas: list[str]) -> list[str]:
    """The blobs of ``shas`` this machine does not have."""
    blobs = shipped_root() / "blobs"
    return [s for s in shas if not (blobs / s).is_file()]


def _put(sha: str, offset: int, data: bytes, last: bool, executable: bool) -> None:
    """Write ``data`` at ``offset`` of blob ``sha``'s partial file; the last chunk checks the
    whole file's sha256 and keeps it (read-only).

    Raises:
        ValueError: the bytes received do not hash to ``sha`` (the partial file is removed).
    """
    blobs = shipped_root() / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)
    part = blobs / f"{sha}.part"
    with open(part, "r+b" if offset else "wb") as fh:
        fh.seek(offset)
        fh.write(data)
    if not last:
        return
    got = _sha256(part)
    if got != sha:
        part.unlink()
        raise ValueError(f"shipped blob {sha[:12]} arrived as {got[:12]}: a transfer broke")
    part.chmod(0o555 if executable else 0o444)
    part.rename(blobs / sha)


def _assemble(bundle: Bundle) -> str:
    """Lay ``bundle`` out as ``dirs/<key>/`` of hard links to its blobs (once: an existing
    folder is kept); returns the folder.

    Raises:
        FileNotFoundError: a blob is missing (it was not shipped first).
    """
    root = shipped_root()
    final = root / "dirs" / bundle.key
    if final.is_dir():
        return str(final)
    tmp = root / "dirs" / f".{bundle.key}.{os.getpid()}"
    for b in bundle.blobs:
        dest = tmp / b.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.link(root / "blobs" / b.sha256, dest)
    tmp.mkdir(parents=True, exist_ok=True)  # a bundle of no file is an empty folder
    try:
        tmp.rename(final)
    except OSError:  # another unit laid it out first
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return str(final)


def localize(item: T) -> T:
    """``item`` with every ``@shipped/...`` string (in msgspec structs, tuples, lists and
    dicts, at any depth) replaced by the path on this machine."""
    root = shipped_root() / "dirs"

    def one(s: str) -> str:
        return str(root / s[len(PREFIX):]) if s.startswith(PREFIX) else s

    out: T = walk(item, one)
    return out


def walk(item: Any, on_str: Callable[[str], str],
         on_struct: Callable[[Any], Any] = lambda s: s) -> Any:
    """``item`` rebuilt with ``on_str`` applied to every string and ``on_struct`` to every
    msgspec struct (after its fields), at any depth."""
    if isinstance(item, str):
        return on_str(item)
    if isinstance(item, msgspec.Struct):
        changes = {f.name: walk(getattr(item, f.name), on_str, on_struct)
                   for f in msgspec.structs.fields(item)}
        changed = {k: v for k, v in changes.items() if v is not getattr(item, k)}
        return on_struct(msgspec.structs.replace(item, **changed) if changed else item)
    if isinstance(item, tuple):
        return tuple(walk(x, on_str, on_struct) for x in item)
    if isinstance(item, list):
        return [walk(x, on_str, on_struct) for x in item]
    if isinstance(item, dict):
        return {k: walk(v, on_str, on_struct) for k, v in item.items()}
    return item


# -- on the caller ------------------------------------------------------------------------------

def ship(client: Any, bundles: Iterable[Bundle], *, workers: Mapping[str, str] | None = None,
         log: Callable[[str], None] = lambda _l: None) -> list[ShipReport]:
    """Send ``bundles`` to every worker of ``client`` (``workers``: address -> name, default
    all), each blob once per machine, and lay each bundle out there.

    Returns:
        One :class:`ShipReport` per worker, in address order.

    Raises:
        OSError: a source file cannot be read. TimeoutError: a step ran past
            :data:`STEP_TIMEOUT_S`. Whatever a worker raises (a blob that arrives corrupt:
            ``ValueError``; a full disk: ``OSError``) comes back here.
    """
    bundles = list(bundles)
    if workers is None:
        info = client.scheduler_info(n_workers=-1)["workers"]
        workers = {addr: str(w.get("name", addr)) for addr, w in info.items()}
    by_sha: dict[str, tuple[Path, Blob]] = {}
    for bundle in bundles:
        for b in bundle.blobs:
            by_sha.setdefault(b.sha256, (Path(bundle.base) / b.name, b))
    def on(addr: str, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` on the worker at ``addr`` alone, within :data:`STEP_TIMEOUT_S`."""
        with warnings.catch_warnings():  # a blob's chunk is the payload, by design
            warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
            fut = client.submit(fn, *args, workers=[addr], allow_other_workers=False, pure=False)
        try:
            return fut.result(timeout=STEP_TIMEOUT_S)
        except TimeoutError:
            fut.cancel()
            raise TimeoutError(f"{fn.__name__} on worker {workers[addr]} did not finish within "
                               f"{STEP_TIMEOUT_S:.0f} s") from None

    reports = []
    for addr in sorted(workers):
        t0 = time.monotonic()
        lacking = on(addr, _missing, sorted(by_sha))
        sent_bytes = 0
        for sha in lacking:
            path, blob = by_sha[sha]
            with open(path, "rb") as fh:
                offset = 0
                while True:
                    chunk = fh.read(CHUNK_BYTES)
                    last = offset + len(chunk) >= blob.size
                    on(addr, _put, sha, offset, chunk, last, blob.executable)
                    offset += len(chunk)
                    if last:
                        break
            sent_bytes += blob.size
        for bundle in bundles:
            on(addr, _assemble, bundle)
        report = ShipReport(worker=workers[addr], sent=len(lacking), sent_bytes=sent_bytes,
                            present=len(by_sha) - len(lacking),
                            seconds=round(time.monotonic() - t0, 2))
        log(f"artifacts: {report.line()}")
        reports.append(report)
    return reports
