"""The run plan: every choice of a differential run resolved once, before anything starts.

Images are pinned here (a docker profile without one gets the reference image the build made,
by its content tag), artifacts are found or built here (without Docker when no profile runs in
a container), and the plan is frozen: nothing re-pins an image or re-reads an option later.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import msgspec

from proofdiff.model.choices import Runtime
from proofdiff.model.profile import Profile
from proofdiff.model.result import ImageInfo
from proofdiff.oracles.suite_table import select_suites

__all__ = ["Plan", "new_run_id", "plan_runs"]


def new_run_id() -> str:
    """A fresh run id: ``YYYYmmdd-HHMMSS-<6 hex>`` (sortable, safe in names and labels)."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


class Plan(msgspec.Struct, frozen=True, kw_only=True):
    """One session's plan: the profiles on one image slot.

    Attributes:
        run_id: the run id. profiles: the selected profiles, images pinned (the first is the
            baseline). workloads, suites: what to run, in order.
        report_dir: where ``<run id>/`` goes. param_cache: host dir of ``.params``/``.vk``.
        workload_files: workload name -> its file. verifier_image: whose ``verify`` checks every
            proof. image_slot: '' when each profile runs its own image, else the image compared.
        reference: the reference image the build made (``None`` when nothing was built).
        verify_timeout_s: deadline of one verifier container, seconds (default 300).
        params_manifest: a parameters.json to check the params against ('' = the one in the
            param cache).
        bin_dir: refprover's host binaries (process and attach runtimes find their programs,
            the verifier and paramgen there by name; '' = none).
    """

    run_id: str
    profiles: dict[str, Profile]
    workloads: tuple[str, ...]
    suites: tuple[str, ...]
    report_dir: str
    param_cache: str
    workload_files: dict[str, str]
    verifier_image: str = ""
    image_slot: str = ""
    reference: ImageInfo | None = None
    verify_timeout_s: float = 300.0
    params_manifest: str = ""
    bin_dir: str = ""

    @property
    def baseline(self) -> str:
        """The baseline profile's name."""
        return next(iter(self.profiles))

    @property
    def run_dir(self) -> Path:
        """``<report dir>/<run id>``."""
        return Path(self.report_dir) / self.run_id


def plan_runs(profiles: Mapping[str, Profile], *, workloads: Sequence[str] = (),
              suites: Sequence[str] = (), images: Sequence[str] = (), run_id: str | None = None,
              report_dir: str | Path = "reports", param_cache: str | Path | None = None,
              workload_files: Mapping[str, str | Path] | None = None,
              verifier_image: str | None = None, verify_timeout_s: float = 300.0,
              params_manifest: str | Path | None = None, crate_dir: Path | None = None,
              bin_dir: str | Path | None = None,
              log: Callable[[str], None] = print) -> list[Plan]:
    """Resolve a differential run into one :class:`Plan` per image slot.

    Args:
        profiles: the selected profiles (the first is the baseline).
        workloads: workload names; none = each profile's ``workload``.
        suites: suite names (``all`` = every suite); none = the default suites.
        images: run every profile on each of these images (one plan per image); none = each
            profile's own image.
        param_cache, workload_files, verifier_image: prebuilt artifacts; what is not given is
            found or built (proofdiff.artifacts.resolve_artifacts, cached by content).
        verify_timeout_s: deadline of one verifier container, seconds.
        params_manifest: a parameters.json for the params (default: the param cache's own).
        crate_dir: the refprover crate to build from (default: proofdiff.artifacts.locate_crate).
        bin_dir: refprover's host binaries for process and attach runtimes (default: the
            build's; given, cargo is not needed).

    Raises:
        ValueError: no profile, or an unknown suite name.
        proofdiff.artifacts.BuildError: artifacts were needed and could not be built or found.
    """
    if not profiles:
        raise ValueError("no profile selected; a profile file has at least one [profiles.NAME]")
    chosen = select_suites(suites)
    wls = tuple(dict.fromkeys(workloads or [p.workload for p in profiles.values()]))
    files = {n: str(p) for n, p in (workload_files or {}).items()}
    reference = None
    in_docker = [p for p in profiles.values() if p.runtime is Runtime.DOCKER]
    needs_build = (param_cache is None or not set(wls) <= set(files)
                   or (bool(in_docker) and verifier_image is None)
                   or (not images and any(p.image is None for p in in_docker))
                   or (len(in_docker) < len(profiles) and bin_dir is None))
    if needs_build:
        from proofdiff.artifacts import resolve_artifacts  # heavy: only when something is missing

        art = resolve_artifacts(list(wls), log=log, crate_dir=crate_dir,
                                docker=bool(in_docker),
                                bin_dir=Path(bin_dir) if bin_dir is not None else None)
        if art.image_tag:
            reference = ImageInfo(tag=art.image_tag, digest=art.image_id)
        param_cache = param_cache or art.param_cache
        files = {**{n: str(p) for n, p in art.workloads.items()}, **files}
        verifier_image = verifier_image or art.verifier_image
        bin_dir = bin_dir or art.bin_dir
    assert param_cache is not None
    rid = run_id or new_run_id()
    ref_tag = reference.tag if reference else None

    def pinned(image: str | None) -> dict[str, Profile]:
        return {n: msgspec.structs.replace(p, image=image or p.image or ref_tag)
                if p.runtime is Runtime.DOCKER else p for n, p in profiles.items()}

    slots = list(images) or [""]
    return [Plan(run_id=rid, profiles=pinned(slot or None), workloads=wls, suites=chosen,
                 report_dir=str(Path(report_dir).absolute()), param_cache=str(param_cache),
                 workload_files=files, verifier_image=verifier_image or "", image_slot=slot,
                 reference=reference, verify_timeout_s=verify_timeout_s,
                 params_manifest=str(params_manifest or ""), bin_dir=str(bin_dir or ""))
            for slot in slots]
