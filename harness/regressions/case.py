"""A regression case: ``regressions/<case-id>/case.toml``, a production bug as a replayable test.

    [case]      id, title, incident (text), link, date, status ("open": the bug is present
                where the case replays, so the replay is a strict xfail; "fixed": it must hold)
    [image]     tag, digest (sha256:..., required, checked before a replay); reference = true:
                the reference image the build makes (its digest follows the build, so it is
                not checked)
    [binaries]  instead of [image], for a case on a daemon run as a host process: digests =
                {program name: "sha256:..."} of the programs its profiles run (found in
                --bin-dir, then on PATH, checked before a replay), and build: how a user builds
                them (nothing of the daemon's source ships with the case). [[binaries.builds]]
                (optional): other builds of the same source that the case replays on, each a
                name and its digests table (a Rust build is not byte-reproducible across
                toolchains, hosts and features: a CPU and a CUDA build of one commit differ)
    [workload]  name (a built workload, e.g. wpost-2k) or file (inputs shipped in the case
                folder, in the workload format; a path that resolves outside the folder, a
                link included, is refused)
    [expect]    profile, oracle (suite/oracle), and match: the bug's signature in the failing
                record (message = a regex searched in its message; evidence = a table of
                values the record's evidence must hold). What must hold: the oracle passes.
    [fix]       overrides: ``--set`` overrides that make the case hold (the fix, when known;
                the self-test replays the case with them), note
    [bisect]    change (path, good, bad per item), probes, wall_s: the minimal change, if known
    [profiles.NAME]  every profile as resolved, every key explicit: pinned, with no reference
                to a profile file that could change

Errors name the file and, where a key is at fault, its line: a key of the wrong type (a table
written as a value, a workload file that is no string) included, so that one bad case is
that case's ERROR, never the end of a replay of every case.
"""

from __future__ import annotations

import re
import tomllib
from datetime import date
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import tomli_w

from proofdiff.model.errors import ProofdiffError
from proofdiff.model.image import ImageInfo
from proofdiff.model.profile import Profile
from proofdiff.model.profile_file import ProfileError, build_profiles, toml_error_where

__all__ = ["CASE_FILE", "BinaryBuild", "RegressionCase", "CaseError", "discover", "load_case",
           "write_case"]

CASE_FILE = "case.toml"
STATUSES = ("open", "fixed")
#: The keys of ``[expect.match]`` that pin a bug's signature (proofdiff.core.failure_signature):
#: a case needs one of them.
SIGNATURE_KEYS = ("message", "names", "evidence")


class CaseError(ProofdiffError):
    """A malformed or incomplete case.toml; the message names the file and line."""


class BinaryBuild(msgspec.Struct, frozen=True, kw_only=True):
    """One build of a case's programs: ``name`` (what it is: features, toolchain, host) and
    ``digests`` ({program name: "sha256:<64 hex>"})."""

    name: str
    digests: dict[str, str]


class RegressionCase(msgspec.Struct, frozen=True, kw_only=True):
    """One case as read from its folder (module docstring for the fields' meaning).

    Attributes:
        dir: the case folder. id, title, incident, link, date, status: ``[case]``.
        image: ``[image]`` tag and digest; reference: the reference image the build makes
            (its digest is not checked). binaries, binaries_build: ``[binaries] digests`` and
            ``build`` (a case on host processes; {} when it runs an image); other_builds:
            ``[[binaries.builds]]``, further builds the case replays on (:attr:`builds`).
            workload: a workload name; workload_file: a file in
            the folder (absolute path), '' when a name is used.
        profile, oracle, match: ``[expect]``. fix: ``[fix] overrides``; fix_note.
        bisect: ``[bisect]`` as read ({} when unknown). profiles: the pinned tables.
    """

    dir: str
    id: str
    title: str
    status: str
    profile: str
    oracle: str
    profiles: dict[str, dict[str, Any]]
    incident: str = ""
    link: str = ""
    date: str = ""
    image: ImageInfo = msgspec.field(default_factory=lambda: ImageInfo(tag=""))
    reference: bool = False
    binaries: dict[str, str] = msgspec.field(default_factory=dict)
    binaries_build: str = ""
    other_builds: tuple[BinaryBuild, ...] = ()
    workload: str = ""
    workload_file: str = ""
    match: dict[str, Any] = msgspec.field(default_factory=dict)
    fix: tuple[str, ...] = ()
    fix_note: str = ""
    bisect: dict[str, Any] = msgspec.field(default_factory=dict)

    @property
    def builds(self) -> tuple[BinaryBuild, ...]:
        """Every build the case replays on: the recorded one (``[binaries] digests``, named
        ``recorded``) first, then ``[[binaries.builds]]``; () for a case on an image."""
        first = (BinaryBuild(name="recorded", digests=self.binaries),) if self.binaries else ()
        return first + self.other_builds

    @property
    def path(self) -> Path:
        """The case.toml."""
        return Path(self.dir) / CASE_FILE

    def resolved(self, *, fixed: bool = False, overrides: Sequence[str] = ()) -> dict[str, Profile]:
        """The pinned profiles (``fixed``: with ``[fix] overrides`` applied), then the user's
        ``overrides`` (``--set``, as for a run: e.g. a program's path on this host).

        Raises:
            CaseError: a pinned table is not a valid profile, or an override does not apply.
        """
        try:
            return build_profiles(self.profiles, str(self.path),
                                  (*(self.fix if fixed else ()), *overrides))
        except ProfileError as exc:
            raise CaseError(exc.cause, fix=exc.fix) from None


def _line(text: str, table: str, key: str | None = None) -> int | None:
    lines = text.splitlines()
    head = next((i for i, ln in enumerate(lines) if ln.strip() == f"[{table}]"), None)
    if head is None or key is None:
        return None if head is None else head + 1
    for i in range(head + 1, len(lines)):
        if lines[i].lstrip().startswith("["):
            break
        if re.match(rf"\s*{re.escape(key)}\s*=", lines[i]):
            return i + 1
    return head + 1


def load_case(folder: str | Path) -> RegressionCase:
    """Read ``folder/case.toml``.

    Raises:
        CaseError: it is missing, not TOML (file:line from the parser), or a required key is
            missing or of the wrong kind (file:line of the key or its table).
    """
    path = Path(folder) / CASE_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CaseError(f"{path}: cannot be read ({exc.strerror})",
                        fix=f"pass a case folder: it holds a {CASE_FILE} (proofdiff repro writes "
                            "one)") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CaseError(f"{toml_error_where(path, exc)}: malformed TOML: {exc}",
                        fix="fix the file and rerun") from None

    def need(table: str, key: str, kind: type | tuple[type, ...] = str) -> Any:
        t = doc.get(table)
        line = _line(text, table, key)
        where = f"{path}:{line}" if line else str(path)
        if not isinstance(t, dict) or key not in t:
            raise CaseError(f"{where}: [{table}] {key} is missing",
                            fix=f"add {key} = ... to the [{table}] table")
        if not isinstance(t[key], kind) or (kind is str and not t[key].strip()):
            raise CaseError(f"{where}: [{table}] {key} must be a non-empty "
                            f"{getattr(kind, '__name__', kind)}, got {t[key]!r}",
                            fix=f"correct [{table}] {key} in the file")
        return t[key]

    def table(name: str) -> dict[str, Any]:
        """``[name]`` (``{}`` when absent): a table, else the error with its line."""
        t = doc.get(name, {})
        if not isinstance(t, dict):
            line = next((i + 1 for i, ln in enumerate(text.splitlines())
                         if re.match(rf"\s*{re.escape(name)}\s*=", ln)), None)
            raise CaseError(f"{path}:{line or '?'}: {name} must be a table ([{name}] with its "
                            f"keys), got {t!r}",
                            fix=f"write it as a [{name}] table (the module docstring of "
                                "harness/regressions/case.py lists its keys)")
        return t

    for name in ("case", "image", "binaries", "workload", "expect", "fix", "bisect"):
        table(name)
    status = need("case", "status")
    if status not in STATUSES:
        raise CaseError(f"{path}:{_line(text, 'case', 'status')}: [case] status must be one of "
                        f"{STATUSES}, got {status!r}",
                        fix=f"write status = {STATUSES[0]!r} or {STATUSES[1]!r}")
    wl = table("workload")
    if not (wl.get("name") or wl.get("file")):
        raise CaseError(f"{path}:{_line(text, 'workload') or '?'}: [workload] has neither name "
                        "nor file", fix="set name (a built workload such as wpost-2k) or file "
                        "(inputs in the case folder)")
    for key in ("name", "file"):
        if key in wl:
            need("workload", key)  # a non-empty string, else the error with its line
    profiles = doc.get("profiles")
    if not isinstance(profiles, dict) or not profiles:
        raise CaseError(f"{path}: no [profiles.NAME] tables",
                        fix="a case pins its profiles: add a [profiles.NAME] table for each "
                            "(proofdiff repro writes them)")
    expect_profile = need("expect", "profile")
    if expect_profile not in profiles:
        raise CaseError(f"{path}:{_line(text, 'expect', 'profile')}: [expect] profile "
                        f"{expect_profile!r} is not one of the case's profiles {list(profiles)}",
                        fix="name one of them, or pin that profile as a [profiles.NAME] table")
    match = doc["expect"].get("match", {})
    if not isinstance(match, dict) or not any(match.get(k) for k in SIGNATURE_KEYS):
        where = _line(text, "expect.match") or _line(text, "expect")
        raise CaseError(f"{path}:{where}: [expect.match] gives no signature, so the case would "
                        f"hold on any failure of {doc['expect'].get('oracle')!r} on "
                        f"{expect_profile!r}, another bug's included",
                        fix="give the bug's signature in [expect.match]: message (a regex of "
                            "its failing record's message; `proofdiff repro` writes one), names "
                            "(the delta paths it names) or evidence")
    image, bins = table("image"), table("binaries")
    digests = bins.get("digests", {})
    if not isinstance(digests, dict) or not all(
            isinstance(v, str) and re.fullmatch(r"sha256:[0-9a-f]{64}", v) for v in digests.values()):
        raise CaseError(f"{path}:{_line(text, 'binaries.digests') or _line(text, 'binaries') or '?'}"
                        ": [binaries] digests must map program names to \"sha256:<64 hex>\"",
                        fix="write each program's digest as sha256sum prints it, prefixed "
                            "sha256:")
    if not bins and not image.get("reference", False):
        # an image case is replayed on its image by digest: without one it would run whatever
        # the tag names on the host, unchecked
        need("image", "tag")
        found = str(image.get("digest", ""))
        if not re.fullmatch(r"sha256:[0-9a-f]{64}", found):
            raise CaseError(f"{path}:{_line(text, 'image', 'digest') or '?'}: [image] digest "
                            f"{'is missing' if not found else f'{found!r} is no image id'}: the "
                            "case would replay whatever the tag names here, unpinned",
                            fix=f"add digest = \"sha256:...\" as `docker image inspect --format "
                                f"'{{{{.Id}}}}' {image.get('tag', 'TAG')}` prints it on the host "
                                "that reproduced the bug (or reference = true for the image the "
                                "build makes)")
    builds = _builds(path, text, bins.get("builds", []) if isinstance(bins, dict) else [])
    fix = table("fix")
    overrides = fix.get("overrides", [])
    if not (isinstance(overrides, list) and all(isinstance(o, str) for o in overrides)):
        raise CaseError(f"{path}:{_line(text, 'fix', 'overrides') or '?'}: [fix] overrides must "
                        f"be a list of --set strings, got {overrides!r}",
                        fix='write overrides = ["prod.KEY=VALUE", ...]')
    d = need("case", "date", (str, date))
    return RegressionCase(
        dir=str(Path(folder).resolve()), id=need("case", "id"), title=need("case", "title"),
        status=status, incident=str(doc["case"].get("incident", "")),
        link=str(doc["case"].get("link", "")), date=str(d),
        image=ImageInfo(tag=str(image.get("tag", "")), digest=str(image.get("digest", ""))),
        reference=bool(image.get("reference", False)),
        binaries={str(k): str(v) for k, v in digests.items()},
        binaries_build=str(bins.get("build", "")) if isinstance(bins, dict) else "",
        other_builds=builds, workload=str(wl.get("name", "")),
        workload_file=_own_file(path, text, wl["file"]) if wl.get("file") else "",
        profile=expect_profile, oracle=need("expect", "oracle"),
        match=dict(match), fix=tuple(overrides),
        fix_note=str(fix.get("note", "")), bisect=dict(table("bisect")),
        profiles=profiles)


def _digests_ok(digests: Any) -> bool:
    return isinstance(digests, dict) and bool(digests) and all(
        isinstance(v, str) and re.fullmatch(r"sha256:[0-9a-f]{64}", v) for v in digests.values())


def _builds(path: Path, text: str, raw: Any) -> tuple[BinaryBuild, ...]:
    """``[[binaries.builds]]`` as read; each needs a name and a digests table."""
    line = next((i + 1 for i, ln in enumerate(text.splitlines())
                 if ln.strip() == "[[binaries.builds]]"), None)
    where = f"{path}:{line}" if line else str(path)
    if not isinstance(raw, list) or not all(isinstance(b, dict) for b in raw):
        raise CaseError(f"{where}: [binaries] builds must be an array of tables",
                        fix="write each build as a [[binaries.builds]] table with name and "
                            "digests")
    out = []
    for n, b in enumerate(raw, 1):
        name = b.get("name")
        if not isinstance(name, str) or not name.strip() or not _digests_ok(b.get("digests")):
            raise CaseError(f"{where}: [[binaries.builds]] #{n} needs a name and digests = "
                            "{program = \"sha256:<64 hex>\"}",
                            fix="name the build (features, toolchain) and give each program's "
                                "digest as sha256sum prints it, prefixed sha256:")
        out.append(BinaryBuild(name=name.strip(),
                               digests={str(k): str(v) for k, v in b["digests"].items()}))
    return tuple(out)


def _own_file(path: Path, text: str, name: Any) -> str:
    """The absolute path of ``[workload] file = name`` in the folder of ``path`` (the
    case.toml).

    Raises:
        CaseError: it is not a string, or it resolves (``..``, an absolute path, a symbolic
            link) outside the case folder: a case's inputs are its own files, which a fleet
            ships with it and a replay reads.
    """
    where = f"{path}:{_line(text, 'workload', 'file') or '?'}"
    if not isinstance(name, str):
        raise CaseError(f"{where}: [workload] file must be a path in the case folder, got "
                        f"{name!r}", fix="write file = \"inputs.json\" (a file in the folder)")
    folder = path.parent.resolve()
    got = (folder / name).resolve()
    if not got.is_relative_to(folder):
        raise CaseError(f"{where}: [workload] file = {name!r} is outside the case folder "
                        f"{folder} (it resolves to {got})",
                        fix=f"copy the inputs into {folder} and name the copy, e.g. file = "
                            f"\"{Path(name).name}\"")
    return str(got)


def write_case(folder: str | Path, doc: dict[str, Any]) -> Path:
    """Write ``doc`` (the tables of the module docstring) as ``folder/case.toml``, then read
    it back (so that what is written is a valid case).

    Raises:
        CaseError: the written case does not read back.
    """
    path = Path(folder) / CASE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    head = ("# A regression case (harness/regressions/case.py). Replay: pytest "
            "suites/test_regressions.py\n# or proofdiff run --suite regressions.\n")
    path.write_text(head + tomli_w.dumps(doc), encoding="utf-8")
    load_case(folder)
    return path


def discover(root: str | Path) -> list[Path]:
    """The case folders under ``root`` (each with a case.toml), sorted by name."""
    base = Path(root)
    return sorted(p.parent for p in base.glob(f"*/{CASE_FILE}")) if base.is_dir() else []
