"""The run plan: every choice of a differential run resolved once, before anything starts.

Images are pinned here (a docker profile without one gets the reference image the build made,
by its content tag), artifacts are found or built here (without Docker when no profile runs in
a container), and the plan is frozen: nothing re-pins an image or re-reads an option later.
Every workflow (run, gate, bisect, repro, the regression replay) starts from a
:class:`~proofdiff.model.run_options.RunOptions` and these functions.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from proofdiff.model.choices import Runtime
from proofdiff.model.errors import ProofdiffError
from proofdiff.model.image import ImageInfo
from proofdiff.model.profile import Profile
from proofdiff.model.profile_file import load_profiles, select_profiles
from proofdiff.model.run_options import RunOptions
from proofdiff.oracles.suite_table import select_suites

if TYPE_CHECKING:  # the artifacts package is imported only when something must be built
    from proofdiff.artifacts import BuiltArtifacts

__all__ = ["Plan", "load_selected", "new_run_id", "pin_artifacts", "plan_runs", "run_artifacts"]


def new_run_id() -> str:
    """A fresh run id: ``YYYYmmdd-HHMMSS-<6 hex>`` (sortable, safe in names and labels)."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def load_selected(options: RunOptions) -> dict[str, Profile]:
    """The profiles the options select: ``profiles`` loaded with ``overrides``, kept by
    ``select`` (in that order; the first is the baseline).

    Raises:
        ProfileError: the profile set does not load, an override or a name is unknown.
    """
    return select_profiles(load_profiles(options.profiles, options.overrides), options.select)


class Plan(msgspec.Struct, frozen=True, kw_only=True):
    """One session's plan: the profiles on one image slot.

    Attributes:
        run_id: the run id. profiles: the selected profiles, images pinned (the first is the
            baseline). workloads, suites: what to run, in order.
        param_cache: host dir of ``.params``/``.vk``. workload_files: workload name -> its file.
        verifier_image: whose ``verify`` checks every proof of a docker runtime.
        params_manifest: a parameters.json to check the params against ('' = the one in the
            param cache). bin_dir: refprover's host binaries ('' = none).
        image_slot: '' when each profile runs its own image, else the image compared.
        reference: the reference image the build made (``None`` when nothing was built).
        options: what the run was asked (report dir, deadlines, the cache root).
    """

    run_id: str
    profiles: dict[str, Profile]
    workloads: tuple[str, ...]
    suites: tuple[str, ...]
    param_cache: str
    workload_files: dict[str, str]
    options: RunOptions
    verifier_image: str = ""
    params_manifest: str = ""
    bin_dir: str = ""
    image_slot: str = ""
    reference: ImageInfo | None = None

    @property
    def baseline(self) -> str:
        """The baseline profile's name."""
        return next(iter(self.profiles))

    @property
    def run_dir(self) -> Path:
        """``<report dir>/<run id>``."""
        return self.options.report_root / self.run_id

    @property
    def verify_timeout_s(self) -> float:
        """Deadline of one verifier run, seconds."""
        return self.options.verify_timeout_s


def run_artifacts(options: RunOptions, workloads: Sequence[str], *, docker: bool,
                  log: Callable[[str], None]) -> BuiltArtifacts:
    """The build's artifacts for ``workloads`` (built or reused, cached by content under
    ``options.cache_root``; from ``options.crate_dir``, else the last build's).

    Raises:
        proofdiff.artifacts.build_errors.BuildError: they could not be built or found.
    """
    from proofdiff.artifacts import resolve_artifacts  # heavy: only when something is missing

    opts = options.with_env()
    return resolve_artifacts(list(workloads), log, cache_root=Path(opts.cache_root),
                             crate_dir=Path(opts.crate_dir) if opts.crate_dir else None,
                             docker=docker, bin_dir=Path(opts.bin_dir) if opts.bin_dir else None)


def pin_artifacts(options: RunOptions, workloads: Sequence[str], *, docker: bool = True,
                  reference: bool = False,
                  log: Callable[[str], None]) -> tuple[RunOptions, ImageInfo | None]:
    """``options`` with every artifact the caller did not give filled in from the build (so
    that the runs a workflow makes from them build nothing again), and the reference image
    (``reference``: always find it, for a profile without an image; else ``None`` when nothing
    had to be built). What the caller gave wins: a cuzk image's official params, its own
    verifier.

    Raises:
        proofdiff.artifacts.build_errors.BuildError: something had to be built and could not be.
    """
    opts = options.with_env()
    given_files = set(opts.workload_files)
    if (not reference and opts.param_cache and set(workloads) <= given_files
            and (opts.verifier_image or not docker) and opts.bin_dir):
        return opts, None  # all given (processes verify with bin_dir's verify, no image)
    art = run_artifacts(opts, workloads, docker=docker, log=log)
    ref = ImageInfo(tag=art.image_tag, digest=art.image_id) if art.image_tag else None
    return msgspec.structs.replace(
        opts, param_cache=opts.param_cache or str(art.param_cache),
        workload_files={**{n: str(p) for n, p in art.workloads.items()}, **opts.workload_files},
        verifier_image=opts.verifier_image or art.verifier_image,
        bin_dir=opts.bin_dir or str(art.bin_dir or "")), ref


def plan_runs(profiles: Mapping[str, Profile], options: RunOptions, *,
              log: Callable[[str], None] = print) -> list[Plan]:
    """Resolve a differential run into one :class:`Plan` per image slot.

    Args:
        profiles: the selected profiles (the first is the baseline).
        options: workloads (none = each profile's), suites (``all`` = every suite; none = the
            defaults), images (one plan per image; none = each profile's own), artifacts
            (what is not given is found or built, cached by content), the run id.

    Raises:
        ProofdiffError: no profile, or an unknown suite name.
        proofdiff.artifacts.build_errors.BuildError: artifacts were needed and could not be built.
    """
    if not profiles:
        raise ProofdiffError("no profile selected",
                             fix="a profile file has at least one [profiles.NAME] table")
    try:
        chosen = select_suites(options.suites)
    except ValueError as exc:  # a library caller's suite name (the CLI's choices list them)
        raise ProofdiffError(str(exc), fix="name one of those suites (or 'all')") from None
    wls = tuple(dict.fromkeys(options.workloads or [p.workload for p in profiles.values()]))
    in_docker = [p for p in profiles.values() if p.runtime is Runtime.DOCKER]
    needs_image = not options.images and any(p.image is None for p in in_docker)
    opts, reference = options.with_env(), None
    if (not opts.param_cache or not set(wls) <= set(opts.workload_files)
            or (in_docker and not opts.verifier_image) or needs_image
            or (len(in_docker) < len(profiles) and not opts.bin_dir)):
        opts, reference = pin_artifacts(opts, wls, docker=bool(in_docker), reference=needs_image,
                                        log=log)
    rid = opts.run_id or new_run_id()
    opts = msgspec.structs.replace(opts, run_id=rid)
    ref_tag = reference.tag if reference else None

    def pinned(image: str | None) -> dict[str, Profile]:
        return {n: msgspec.structs.replace(p, image=image or p.image or ref_tag)
                if p.runtime is Runtime.DOCKER else p for n, p in profiles.items()}

    slots = list(opts.images) or [""]
    return [Plan(run_id=rid, profiles=pinned(slot or None), workloads=wls, suites=chosen,
                 param_cache=opts.param_cache, workload_files=dict(opts.workload_files),
                 verifier_image=opts.verifier_image, params_manifest=opts.params_manifest,
                 bin_dir=opts.bin_dir, image_slot=slot, reference=reference, options=opts)
            for slot in slots]
