"""``preflight/libraries``: every program a profile starts (the daemon, and the bench tool of
a bench-cli profile) finds every shared library it needs where it runs, and a profile that
asks for GPUs sees the CUDA driver library (``libcuda.so.1``) there. A program that needs a
library its image leaves out exits at start ("error while loading shared libraries"), which
proofdiff would otherwise report late and indirectly as a daemon that did not start. Judged on
:mod:`proofdiff.core.library_probe`'s look, made before the daemon starts, so it is judged even
when the daemon cannot start. Blocking: proving on the profile is skipped with this reason.

Source: the seed incident of a curio-cuzk image missing ``libconfig++``, ``libaio``,
``libfuse3`` and ``libarchive`` at run time on the GPU host.
"""

from __future__ import annotations

from proofdiff.core.library_probe import CUDA_LIBRARY, LibraryLook
from proofdiff.model.choices import Runtime
from proofdiff.model.errors import ProofdiffError
from proofdiff.model.profile import Profile
from proofdiff.model.status import Outcome
from proofdiff.oracles.evidence import Evidence, Recorder

__all__ = ["judge", "problems"]


def problems(look: LibraryLook) -> list[str]:
    """One sentence per missing program, missing library or too-old library version, and the
    CUDA driver library when it was looked for and not found."""
    out = []
    for prog in look.programs:
        who = f"{prog.name} (the {prog.role})"
        if not prog.path:
            out.append(f"{who}: not found {look.at}")
        elif prog.ldd is not None:
            out += [f"{who} needs {lib}: not found {look.at}" for lib in prog.ldd.missing]
            out += [f"{who} needs version {v}: not {look.at}" for v in prog.ldd.versions]
    if look.cuda_checked and not look.cuda:
        out.append(f"{CUDA_LIBRARY} (the CUDA driver library) is not visible {look.at} "
                   f"(looked in LD_LIBRARY_PATH, {', '.join(look.cuda_dirs)} and ldconfig -p)")
    return out


def judge(ev: Evidence, rec: Recorder, p: Profile) -> None:
    """The ``libraries`` record of ``p`` (module docstring)."""
    if p.runtime is Runtime.ATTACH:
        rec.skip_attached("libraries", p.name, p.address, "the set of its programs")
        return
    try:
        look = ev.libraries(p.name)
    except ProofdiffError as exc:
        rec("libraries", p.name, Outcome.ERROR, f"profile {p.name!r}: the shared libraries of "
            f"its programs could not be looked at: {exc}")
        return
    checked = [prog for prog in look.programs if prog.ldd is not None]
    ev_ = {"where": look.where, "programs": [
        {"role": g.role, "name": g.name, "path": g.path,
         "missing": list(g.ldd.missing) if g.ldd else None,
         "versions": list(g.ldd.versions) if g.ldd else None,
         "found": dict(g.ldd.found) if g.ldd else None} for g in look.programs],
        "cuda_checked": look.cuda_checked, "cuda": list(look.cuda),
        "cuda_dirs": list(look.cuda_dirs)}
    bad = problems(look)
    if bad:
        rec("libraries", p.name, Outcome.FAIL, f"profile {p.name!r}: {len(bad)} problem(s) with "
            f"the shared libraries of the programs it starts, before any proof:\n  "
            + "\n  ".join(bad) + "\n  fix: install the packages that provide them in the "
            "image (or on the host, process runtime); a GPU profile needs the NVIDIA runtime "
            "(docker --gpus), which mounts the driver library", evidence=ev_,
            names=("image", "binary", "gpus"))
        return
    if not checked:
        rec("libraries", p.name, Outcome.ERROR, f"profile {p.name!r}: no program could be "
            f"checked {look.at} (no ldd nor loader there, or no program named)",
            evidence=ev_)
        return
    static = [g.name for g in checked if g.ldd is not None and not g.ldd.dynamic]
    cuda = f"; {CUDA_LIBRARY} at {look.cuda[0]}" if look.cuda else ""
    rec("libraries", p.name, Outcome.PASS, f"{len(checked)} program(s) find every shared "
        f"library {look.at} ({', '.join(g.path for g in checked)})"
        + (f"; not dynamic (static or a script): {', '.join(static)}" if static else "")
        + cuda, evidence=ev_)
