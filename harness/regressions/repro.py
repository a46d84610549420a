"""``proofdiff repro``: make a regression case from a failing run or from production artifacts.

Two sources:

* a report of a failing run (``--from-report reports/<run>``): the failing profile and check
  (the first divergence, else the first failure), the baseline profile as the good one, the
  image and workload the run used;
* production artifacts: the daemon config file as deployed, an env file, the command line, the
  mounts and the user's inputs (a workload file: cuzk C1 envelopes or WindowPoSt vanilla proofs
  with their public inputs), laid over a profile of the set (``--like prod``) for the client
  side (concurrency, job ids, driver).

Every input is validated first (TOML with file:line, the env file line by line, the workload
and whether a vk covers it). The case's own pinned profiles then run once: the case is written
only when that run fails, and the failing record becomes its ``[expect]`` (oracle and
signature). ``bisect`` adds the minimal change (``[bisect]``) and its revert as ``[fix]``.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import time
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import msgspec
import tomli_w

from proofdiff.bisect import BisectResult, bisect_profiles
from proofdiff.bisect.probe import judge, suites_for
from proofdiff.artifacts.build_errors import BuildError
from proofdiff.core.profile_delta import profile_view
from proofdiff.core.differential import run_differential
from proofdiff.core.failure_signature import signature
from proofdiff.core.plan import pin_artifacts
from proofdiff.model import serde
from proofdiff.model.config_delta import ABSENT
from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.profile import Profile
from proofdiff.model.profile_file import (ProfileError, build_profiles, load_profiles,
                                        profile_table, select_profiles)
from proofdiff.model.result import DifferentialResult
from proofdiff.model.run_options import RunOptions
from proofdiff.model.status import Outcome
from proofdiff.model.workload import WorkloadError, load_workload
from proofdiff.model.choices import Runtime
from proofdiff.runtime.identity import file_sha256
from proofdiff.runtime.spec import ContainerError
from proofdiff.runtime.runner import Runner

from proofdiff.regressions.case import CaseError, load_case, write_case
from proofdiff.regressions.deployed_files import ReproError, read_config, read_env_file
from proofdiff.regressions.replay import build_for

__all__ = ["ProductionArtifacts", "ReproError", "ReproResult", "host_programs", "read_env_file",
           "repro", "revert", "signature"]


class ProductionArtifacts(msgspec.Struct, frozen=True, kw_only=True):
    """What production has: ``config`` (the deployed daemon config file), ``env_file``,
    ``command`` (the daemon's args, one shell-quoted string), ``mounts`` (NAME=PATH),
    ``inputs`` (the user's inputs in the workload format) or ``workload`` (a built one),
    ``image`` (default the reference), and the client side when it differs from the ``like``
    profile: ``concurrency``, ``job_ids``."""

    config: str = ""
    env_file: str = ""
    command: str | None = None
    mounts: tuple[str, ...] = ()
    inputs: str = ""
    workload: str = ""
    image: str = ""
    concurrency: int | None = None
    job_ids: str | None = None


class ReproResult(msgspec.Struct, frozen=True, kw_only=True):
    """What repro did: the case folder (written only when it reproduced), whether it did, the
    failing check and its first line, the confirming run's report, the bisection (if asked),
    wall time (s)."""

    case_dir: str
    reproduced: bool
    check: str = ""
    message: str = ""
    report: str = ""
    bisect: BisectResult | None = None
    wall_s: float = 0.0


def _failing(result: DifferentialResult, profile: str,
             oracle: str | None) -> OracleRecord | None:
    outcome, _checks, _why, rec = judge(result, profile, oracle)
    return rec if outcome == "FAIL" else None


def _from_report(report: Path) -> tuple[dict[str, Profile], str, str, str, str]:
    """``(profiles, good, bad, oracle, '')`` of a failing run's report (the profiles run the
    failing record's workload, a built one: no inputs to ship)."""
    try:
        res = serde.read(report / "summary.json", DifferentialResult)
    except serde.SerdeError as exc:
        raise ReproError(f"{report}/summary.json: not a proofdiff run report ({exc.cause})",
                         fix="pass reports/<run id> of `proofdiff run`") from None
    names = list(res.profiles)
    div = res.divergences[0] if res.divergences else None
    rec = (next((r for r in res.records if (r.suite, r.oracle, r.profile) ==
                 (div.suite, div.oracle, div.profile)), None) if div else
           next((r for r in res.records if r.outcome is Outcome.FAIL), None))
    if rec is None:
        raise ReproError(f"{report}: the run has no failing check (verdict {res.verdict.value}):"
                         " nothing to reproduce", fix="pass the report of a run that failed")
    profiles: dict[str, Profile] = {}
    for name, view in res.profiles.items():
        source, overrides = view.get("source", ""), view.get("overrides", [])
        try:
            p = load_profiles(source, overrides)[name]
        except ProfileError as exc:
            raise ReproError(f"{report}: profile {name!r} came from {source}, which cannot be "
                             f"read back ({exc.cause})",
                             fix="; ".join(f for f in (exc.fix, "or repro from the production "
                                                       "artifacts instead (--config ...)") if f)
                             ) from None
        mine = {k: v for k, v in view.items() if k not in ("source", "overrides", "image")}
        now = {k: v for k, v in profile_view(p).items() if k != "image"}
        if serde.encode(mine) != serde.encode(now):
            raise ReproError(f"{report}: profile {name!r} in {source} has changed since the run",
                             fix="repro from the production artifacts instead (--config ...)")
        run = next((r for r in res.runs if r.profile == name), None)
        image = view.get("image") or (run.image.tag if run else None)
        profiles[name] = msgspec.structs.replace(p, image=image, workload=rec.workload)
    good = names[0]
    bad = rec.profile if rec.profile != good else (names[1] if len(names) > 1 else good)
    return profiles, good, bad, rec.check, ""


def _from_artifacts(a: ProductionArtifacts, opts: RunOptions, like: str,
                    good: str) -> tuple[dict[str, Profile], str, str, str, str]:
    chosen = select_profiles(load_profiles(opts.profiles, opts.overrides), [good, like])
    base = chosen[like]
    raw = profile_table(base)
    if a.config:
        raw["config"] = read_config(a.config)
    if a.env_file:
        raw["env"] = read_env_file(a.env_file)
    if a.command is not None:
        raw["command"] = shlex.split(a.command)
    if a.mounts:
        raw["mounts"] = dict(m.split("=", 1) for m in a.mounts if "=" in m)
        if len(raw["mounts"]) != len(a.mounts):
            raise ReproError(f"--mount {list(a.mounts)}: not each NAME=CONTAINER_PATH",
                             fix="write each as NAME=CONTAINER_PATH, e.g. "
                                 "params=/var/tmp/filecoin-proof-parameters")
    elif a.config:
        raw.pop("mounts", None)  # params mounted where the deployed config reads them
    for key in ("concurrency", "job_ids"):
        if getattr(a, key) is not None:
            raw[key] = getattr(a, key)
    wl_name = a.workload or base.workload
    if a.inputs:
        try:
            w = load_workload(a.inputs)
            build_for(w, opts.param_cache)
        except WorkloadError as exc:
            raise ReproError(f"the inputs: {exc.cause}", fix=exc.fix) from None
        wl_name = w.name
    raw["workload"] = wl_name
    if a.image:
        raw["image"] = a.image
    g = profile_table(chosen[good])
    g["workload"] = wl_name
    if a.image:
        g["image"] = a.image
    try:
        built = build_profiles({good: g, "production": raw}, "production artifacts")
    except ProfileError as exc:
        raise ReproError(exc.cause, fix=exc.fix) from None
    return built, good, "production", "", a.inputs


def _plain(value: Any) -> Any:
    """A delta value as TOML holds it: itself when TOML can (bool, number, string, list,
    table without None), else its repr."""
    try:
        tomli_w.dumps({"v": value})
    except (TypeError, ValueError):
        return repr(value)
    return value


def revert(profile: str, result: BisectResult) -> list[str]:
    """``--set`` overrides that put the bisected change back to the good values (items the
    good profile lacks cannot be unset by an override and are left out)."""
    out = []
    for c in result.change:
        if c.good == ABSENT or isinstance(c.good, dict):
            continue
        literal = tomli_w.dumps({"v": c.good}).split("=", 1)[1].strip()
        out.append(f"{profile}.{c.path}={literal}")
    return out


def host_programs(profiles: dict[str, Profile], bin_dir: str) -> dict[str, str]:
    """``{program name: "sha256:..."}`` of what the profiles run as host processes: each
    process profile's daemon and, for a bench-cli profile, its bench tool, found as a run
    finds them (``bin_dir``, then ``PATH``).

    Raises:
        ReproError: a program is not found.
    """
    path = os.pathsep.join([*([bin_dir] if bin_dir else []), os.environ.get("PATH", "")])
    names: dict[str, str] = {}
    for q in profiles.values():
        if q.runtime is not Runtime.PROCESS:
            continue
        names[q.binary or "refprover"] = q.name
        if q.driver == "bench-cli":
            names[q.bench_tool] = q.name
    out = {}
    for name, profile in names.items():
        found = shutil.which(name, path=path)
        if found is None:
            raise ReproError(f"profile {profile!r} runs {name!r}, which is not in --bin-dir "
                             f"{bin_dir or '(none given)'} or on PATH",
                             fix="pass --bin-dir with the programs the incident ran")
        out[Path(name).name] = file_sha256(found)
    return out


def _reference(tag: str) -> bool:
    try:
        labels = Runner("repro").image(tag).attrs.get("Config", {}).get("Labels") or {}
    except ContainerError:
        return False
    return tag.startswith("proofdiff/refprover:") and "proofdiff.content-key" in labels


def repro(options: RunOptions | None = None, *, case_id: str, title: str,
          out_dir: str | Path = "regressions", report: str | Path | None = None,
          production: ProductionArtifacts | None = None, like: str = "prod",
          good: str = "bench", oracle: str | None = None, incident: str = "", link: str = "",
          fix: Sequence[str] = (), do_bisect: bool = False, binaries_build: str = "",
          log: Callable[[str], None] = lambda _l: None) -> ReproResult:
    """Create ``<out_dir>/<case_id>/`` (module docstring).

    Args:
        options: the profile set and overrides (of ``like`` and ``good``), the artifacts (what
            is given wins over the build's: a cuzk image's official params and verifier), the
            report dir.
        report or production: the source (exactly one). like, good: the profile the
            production artifacts are laid over, and the good profile. oracle: the check
            expected to fail (default: the first failing one). fix: ``--set`` overrides that
            make it hold, when known. binaries_build: for profiles run as host processes, how a
            user builds their programs (the case's ``[binaries] build``); the programs are
            pinned by digest as found in ``options.bin_dir``, then on ``PATH``.

    Returns:
        The :class:`ReproResult`; ``reproduced`` false (and no case written) when every check
        passed on the failing profile.

    Raises:
        ReproError: bad input, named with its file and line and the fix.
    """
    t0 = time.monotonic()
    opts = (options or RunOptions()).with_env()
    if (report is None) == (production is None):
        raise ReproError("repro takes exactly one source, got "
                         + ("none" if report is None else "both a report and production artifacts"),
                         fix="give one: --from-report DIR, or production artifacts (--config, "
                             "--env-file, --inputs ...)")
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", case_id):
        raise ReproError(f"--id {case_id!r}: not a case id (it names the folder)",
                         fix="a case id is lower-case letters, digits, '.', '_' and '-'")
    folder = Path(out_dir) / case_id
    if report is not None:
        resolved, g, bad, expect, wl_file = _from_report(Path(report))
        oracle = oracle or expect
    else:
        assert production is not None
        resolved, g, bad, expect, wl_file = _from_artifacts(production, opts, like, good)
    p = resolved[bad]
    # a daemon run as a host process (cuzk-host): the case pins its programs by digest, not
    # an image; nothing of Docker is built or looked up
    programs = host_programs(resolved, opts.bin_dir) if p.runtime is Runtime.PROCESS else {}
    inputs = load_workload(wl_file) if wl_file else None
    files = {inputs.name: wl_file} if inputs else {}
    try:
        opts, reference_image = pin_artifacts(
            msgspec.structs.replace(opts, workload_files={**opts.workload_files, **files}),
            [build_for(inputs, opts.param_cache) if inputs else p.workload],
            docker=not programs, reference=not p.image and not programs, log=log)
    except (BuildError, WorkloadError) as exc:
        what = (f"build step {exc.step!r} failed: {exc.cause}" if isinstance(exc, BuildError)
                else exc.cause)
        raise ReproError(f"the reference artifacts: {what}", fix=exc.fix) from None
    image = "" if programs else p.image or (reference_image.tag if reference_image else "")
    try:
        digest = "" if programs else str(Runner("repro").image(image).id)
    except ContainerError as exc:
        raise ReproError(exc.headline, fix=exc.fix) from None
    rid = f"repro-{case_id}-{int(time.time())}"
    run = run_differential(msgspec.structs.replace(
        opts, workloads=(p.workload,), suites=suites_for(oracle), run_id=rid, select=(),
        images=()), profiles={bad: msgspec.structs.replace(p, image=image)}, log=log)
    rec = _failing(run, bad, oracle)
    where = str(opts.report_root / rid)
    if rec is None:
        return ReproResult(case_dir="", reproduced=False, report=where,
                           message=(f"does not reproduce: {oracle or 'every check'} passed on "
                                    f"{bad} ({run.verdict_line}); no case written"),
                           wall_s=round(time.monotonic() - t0, 1))
    # replays on whatever reference image the build makes
    reference = bool(image) and _reference(image)
    tables = {n: profile_table(msgspec.structs.replace(
        q, image=None if reference else image or None)) for n, q in resolved.items()}
    doc: dict[str, Any] = {
        "case": {"id": case_id, "title": title, "incident": incident, "link": link,
                 "date": date.today(), "status": "open"},
        **({"binaries": {"build": binaries_build or "the programs found in --bin-dir when the "
                                  f"case was made ({', '.join(sorted(programs))}): say how to "
                                  "build them", "digests": programs}} if programs else
           {"image": {"tag": image, "digest": digest, "reference": reference}}),
        "workload": ({"file": "inputs/" + Path(wl_file).name} if wl_file
                     else {"name": p.workload}),
        "expect": {"profile": bad, "oracle": rec.check, "match": signature(rec)},
        "fix": {"overrides": list(fix),
                "note": "given to repro (--fix): what makes the case hold" if fix else
                "unknown yet: add the overrides that make the case hold"},
        "profiles": tables,
    }
    bis = None
    if do_bisect:
        bis = bisect_profiles(msgspec.structs.replace(opts, run_id="", workloads=(p.workload,)),
                              resolved={n: msgspec.structs.replace(q, image=image)
                                        for n, q in resolved.items()},
                              good=g, bad=bad, oracle=rec.check, log=log)
        if bis.status == "found":
            doc["bisect"] = {"change": [{"path": c.path, "good": _plain(c.good),
                                         "bad": _plain(c.bad)} for c in bis.change],
                             "probes": bis.n_probes, "wall_s": bis.wall_s, "run": bis.run_id}
            if not fix:
                doc["fix"] = {"overrides": revert(bad, bis),
                              "note": "the minimal change reverted (from bisect)"}
    if wl_file:
        (folder / "inputs").mkdir(parents=True, exist_ok=True)
        shutil.copy2(wl_file, folder / "inputs" / Path(wl_file).name)
    try:
        write_case(folder, doc)
        load_case(folder)
    except CaseError as exc:
        raise ReproError(f"the case did not write back: {exc.cause}", fix=exc.fix) from None
    return ReproResult(case_dir=str(folder), reproduced=True, check=rec.check,
                       message=rec.message.splitlines()[0][:400], report=where, bisect=bis,
                       wall_s=round(time.monotonic() - t0, 1))
