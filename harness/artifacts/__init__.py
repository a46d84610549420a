"""Build everything a proofdiff run needs, locally and without a registry, cached by content.

    from proofdiff.artifacts import ensure_artifacts
    art = ensure_artifacts(["wpost-2k"], print, cache_root=Path("~/.cache/proofdiff"),
                           crate_dir=Path("targets/refprover"))
    art.image_tag, art.param_cache, art.workloads

Steps (each cached under the cache root, ``$PROOFDIFF_CACHE`` or ``~/.cache/proofdiff``, keyed by
content, see content_keys.py): ``binaries`` (cargo build of targets/refprover), ``rootfs`` (debootstrap +
docker import -> proofdiff/base), ``image`` (proofdiff/refprover:<version>-<key12>; no shared tag
such as ``:latest`` is ever re-pointed), ``verifier`` (the pinned verifier image, verifier.py),
``params`` (paramgen), ``workloads`` (seal). Cold: minutes (a cold cargo build takes tens of
minutes on a small machine); warm: seconds. Safe to call from several processes at once (file locks).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from proofdiff.artifacts.cache_dir import cache_root as _cache_root
from proofdiff.artifacts.cache_dir import write_json
from proofdiff.artifacts.binaries import build_binaries as _build_binaries
from proofdiff.artifacts.build_errors import BuildError, StepReport
from proofdiff.artifacts.params import ensure_params as _ensure_params
from proofdiff.artifacts.sealed_workloads import WORKLOADS
from proofdiff.artifacts.sealed_workloads import ensure_workload as _ensure_workload
from proofdiff.artifacts.sealed_workloads import resolve as _resolve

__all__ = [
    "BuiltArtifacts",
    "BuildError",
    "StepReport",
    "WORKLOADS",
    "ensure_artifacts",
    "resolve_artifacts",
]


@dataclass(frozen=True)
class BuiltArtifacts:
    """What a run needs, all present on this host.

    Attributes:
        image_tag: ``proofdiff/refprover:<version>-<key12>``.
        param_cache: host directory with the ``.params``/``.vk``/``.meta`` files of every
            requested workload's circuits; mount it read-only.
        workloads: workload name -> workload JSON file on the host.
        image_id: the image's id (``sha256:...``).
        cache_root: the cache root everything lies under.
        steps: what each step did and how long it took (seconds).
        bin_dir: the dir of refprover's host binaries (``refprover``, ``verify``, ``bench``,
            ``paramgen``, ``seal``): what a process or attach runtime runs.
        verifier_tag, verifier_id, verifier_tree: the pinned verifier's image tag, image id
            and the git tree it was built from (harness/artifacts/pinned_verifier.py); what judges every
            proof of a docker runtime.
    """

    image_tag: str
    param_cache: Path
    workloads: dict[str, Path]
    image_id: str = ""
    cache_root: Path | None = None
    steps: tuple[StepReport, ...] = field(default=())
    bin_dir: Path | None = None
    verifier_tag: str = ""
    verifier_id: str = ""
    verifier_tree: str = ""

    @property
    def verifier_image(self) -> str:
        """The image whose ``verify`` judges proofs: the pinned verifier, or the reference
        image when no pin was built (an older manifest)."""
        return self.verifier_tag or self.image_tag


def _given_binaries(bin_dir: Path) -> tuple[dict[str, Path], StepReport]:
    """The refprover binaries in ``bin_dir``, checked (a build made elsewhere).

    Raises:
        BuildError: one is missing or not executable.
    """
    from proofdiff.artifacts.binaries import BINARIES

    bins = {n: Path(bin_dir).resolve() / n for n in BINARIES}
    bad = [n for n, p in bins.items() if not (p.is_file() and os.access(p, os.X_OK))]
    if bad:
        raise BuildError("binaries", f"{bin_dir} lacks the executable(s) {bad}",
                         f"copy every one of {list(BINARIES)} from a build "
                         "(<cache>/cargo-target/release) into it, or leave out --bin-dir")
    return bins, StepReport("binaries", "given", 0.0, f"{len(bins)} binaries in {bin_dir}")


def _manifest(root: Path, workloads: Sequence[str]) -> Path:
    return root / "artifacts" / ("+".join(sorted(set(workloads))) + ".json")


def _write_manifest(root: Path, art: BuiltArtifacts) -> None:
    path = _manifest(root, list(art.workloads))
    try:  # a build without Docker keeps the image an earlier build recorded
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        old = {}
    write_json(path, {
        "image_tag": art.image_tag or old.get("image_tag", ""),
        "image_id": art.image_id or old.get("image_id", ""), "param_cache": str(art.param_cache),
        "workloads": {n: str(p) for n, p in art.workloads.items()},
        "bin_dir": str(art.bin_dir or old.get("bin_dir", "")),
        **{k: getattr(art, k) or old.get(k, "")
           for k in ("verifier_tag", "verifier_id", "verifier_tree")}})


def resolve_artifacts(workloads: Sequence[str], log: Callable[[str], None], *, cache_root: Path,
                      crate_dir: Path | None, docker: bool = True,
                      bin_dir: Path | None = None) -> BuiltArtifacts:
    """The artifacts of ``workloads``: built (or reused) from ``crate_dir`` when there is one,
    else the last build's, recorded in ``cache_root`` by :func:`ensure_artifacts`. ``docker``
    and ``bin_dir``: as for :func:`ensure_artifacts`.

    Raises:
        BuildError: no crate and no earlier build of these workloads, or the build failed.
    """
    if crate_dir is not None:
        return ensure_artifacts(workloads, log, cache_root=cache_root, crate_dir=crate_dir,
                                docker=docker, bin_dir=bin_dir)
    root = _cache_root(cache_root)
    path = _manifest(root, workloads)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise BuildError("artifacts", f"no refprover crate here (targets/refprover, "
                         f"$PROOFDIFF_CRATE) and no earlier build of {sorted(workloads)} in "
                         f"{root}", "build once from a checkout (`make image`, or `proofdiff "
                         "build --workload W` in the checkout), or set PROOFDIFF_CRATE") from None
    files = {n: Path(p) for n, p in doc["workloads"].items()}
    gone = [str(p) for p in [Path(doc["param_cache"]), *files.values()] if not p.exists()]
    if gone:
        raise BuildError("artifacts", f"the last build's artifacts are gone: {gone}",
                         "rebuild from a checkout (`make image`)")
    bin_dir = Path(doc["bin_dir"]) if doc.get("bin_dir") else None
    return BuiltArtifacts(image_tag=doc["image_tag"], image_id=doc["image_id"],
                     param_cache=Path(doc["param_cache"]), workloads=files, cache_root=root,
                     bin_dir=bin_dir, verifier_tag=doc.get("verifier_tag", ""),
                     verifier_id=doc.get("verifier_id", ""),
                     verifier_tree=doc.get("verifier_tree", ""))


def ensure_artifacts(
    workloads: Sequence[str],
    log: Callable[[str], None],
    *,
    cache_root: Path,
    crate_dir: Path,
    docker: bool = True,
    bin_dir: Path | None = None,
) -> BuiltArtifacts:
    """Build or reuse the binaries, images, params and workload files; idempotent.

    Args:
        workloads: workload names (see WORKLOADS). Default: ``("wpost-2k",)``.
        log: called with one line of progress at a time.
        cache_root: where everything is cached (``RunOptions.cache_root``).
        crate_dir: the refprover crate (``RunOptions.crate_dir``).
        docker: build the base and refprover images (default); ``False`` for a host without
            Docker (process and attach runtimes): params and workloads only.
        bin_dir: refprover binaries built elsewhere (a GPU host without cargo); default: cargo
            builds them from the crate.

    Raises:
        BuildError: no crate was found, or a step failed; ``step``, ``cause`` and ``fix`` say
            which, why and what to do.
    """
    specs = _resolve(list(workloads))
    root = _cache_root(cache_root)
    crate = Path(crate_dir).resolve()
    if not (crate / "Cargo.toml").is_file():
        raise BuildError("binaries", f"no refprover crate at {crate} (no Cargo.toml there)",
                         "run from the proofdiff checkout, pass --crate DIR or set "
                         "PROOFDIFF_CRATE=<path>")
    steps: list[StepReport] = []

    def done(report: StepReport) -> None:
        steps.append(report)
        log(f"{report.step:<10} {report.action:<7} {report.elapsed_s:7.1f} s  {report.detail}")

    if bin_dir is not None:
        bins, report = _given_binaries(bin_dir)
    else:
        bins, report = _build_binaries(crate, root, log=log)
    done(report)
    tag, image_id, pinned = "", "", None
    if docker:
        # the docker SDK only where images are built: a process-only host needs none of it
        from proofdiff.artifacts.base_image import ensure_base_image as _ensure_base
        from proofdiff.artifacts.engine import connect as _connect
        from proofdiff.artifacts.pinned_verifier import ensure_pinned_verifier as _ensure_verifier
        from proofdiff.artifacts.refprover_image import ensure_refprover_image as _ensure_image

        client = _connect()
        try:
            base, report = _ensure_base(client, root, log=log)
            done(report)
            tag, image, report = _ensure_image(client, root, base, bins, log=log, crate_dir=crate)
            image_id = str(image.id)
            done(report)
            # binaries given from elsewhere are not known to come from the pinned tree, unless
            # they are this cache's own build (a caller passing the build's bin dir back)
            own = root / "cargo-target" / "release"
            main_verify = (bins["verify"] if bin_dir is None or Path(bin_dir).resolve()
                           == own.resolve() else root / "absent")
            pinned, report = _ensure_verifier(client, root, base, crate, main_verify, log=log)
            done(report)
        finally:
            client.close()
    circuits = sorted({c for spec in specs for c in spec.circuits})
    param_cache, params_key, report = _ensure_params(
        root, bins["paramgen"], circuits, log=log, crate_dir=crate
    )
    done(report)
    start = time.monotonic()
    files: dict[str, Path] = {}
    sealed: list[str] = []
    for spec in specs:
        files[spec.name], seal_s = _ensure_workload(
            root, bins["seal"], spec, param_cache, params_key, log=log, crate_dir=crate
        )
        if seal_s is not None:
            sealed.append(spec.name)
    detail = ", ".join(f"{n}={p}" for n, p in files.items())
    done(StepReport("workloads", "built" if sealed else "reused", time.monotonic() - start, detail))
    art = BuiltArtifacts(
        image_tag=tag,
        param_cache=param_cache,
        workloads=files,
        image_id=image_id,
        cache_root=root,
        steps=tuple(steps),
        bin_dir=bins["refprover"].parent,
        verifier_tag=pinned.tag if pinned else "",
        verifier_id=pinned.image_id if pinned else "",
        verifier_tree=pinned.tree if pinned else "",
    )
    _write_manifest(root, art)
    return art
