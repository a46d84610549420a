"""Where one ``proofdiff run`` spends its time, call by call: pyinstrument around the CLI's
``main`` in this process (threads included), printed as a call tree.

    python benchmarks/profile_run.py [--out FILE] [-- PROOFDIFF RUN ARGS...]

The complement of ``overhead_breakdown.py`` (phases, medians over repeats): this names the
functions inside "other" and "report". ``--outside-proving FILE`` writes what the main thread did
while no flow was in flight (the overhead: wall less the union of every ``prove_many``), as
seconds per proofdiff function (the deepest one on the stack of each sample), per leaf call, and
as the serial stretches in time order. Needs pyinstrument (``pip install pyinstrument``; not a
dependency of proofdiff). The caches must be warm (``make demo`` once first).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _timed(fn: Callable[..., Any], spans: list[tuple[float, float]]) -> Callable[..., Any]:
    """``fn``, appending each call's (start, end) to ``spans``, epoch seconds (any thread)."""
    def wrapper(*a: Any, **k: Any) -> Any:
        t0 = time.time()
        try:
            return fn(*a, **k)
        finally:
            spans.append((t0, time.time()))
    return wrapper


def _union(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _path(stack: list[str]) -> tuple[list[str], str]:
    """One sample's stack as ``module:function`` names: (its proofdiff frames, its leaf); a
    frame id is ``function\\x00path\\x00line[\\x01attributes]``."""
    names = []
    for frame in stack:
        func, path, *_ = frame.split("\x01")[0].split("\x00") + ["", ""]
        names.append((f"{Path(path).stem}:{func}", "/proofdiff/" in path or "/harness/" in path))
    return [n for n, ours in names if ours] or ["?"], names[-1][0] if names else "?"


def outside_proving(session: Any, flows: list[tuple[float, float]], top: int = 30) -> str:
    """The main thread's sampled time outside the union of ``flows`` (epoch s; of a sample
    that straddles a flow's edge, only its part outside), in seconds: by the deepest proofdiff
    function, by leaf, and the serial stretches over 20 ms in time order."""
    proving = _union(flows)
    tree: dict[str, Any] = {}
    by_ours: Counter[str] = Counter()
    by_leaf: Counter[str] = Counter()
    stretches: list[list[Any]] = []  # [start, seconds, Counter of ours]
    t, last_out = session.start_time, False
    for stack, sample_s in session.frame_records:
        t += sample_s
        # pyinstrument samples on Python's call events, so a wait in C (a lock, a join) is one
        # sample as long as the wait, stamped at its end: count only its part outside the flows
        dt = sample_s - sum(max(0.0, min(b, t) - max(a, t - sample_s)) for a, b in proving)
        if dt <= 1e-9:
            last_out = False
            continue
        path, leaf = _path(stack)
        ours = path[-1]
        node = tree
        for name in path + ([leaf] if leaf != ours else []):
            node = node.setdefault(name, {"": 0.0})
            node[""] += dt
        by_ours[ours] += dt
        by_leaf[leaf] += dt
        if not last_out:
            stretches.append([t - session.start_time, 0.0, Counter()])
        stretches[-1][1] += dt
        stretches[-1][2][ours] += dt
        last_out = True
    total = sum(by_ours.values())
    lines = [f"outside every flow: {total:.3f} s of {session.duration:.3f} s "
             f"(proving, the union of {len(flows)} flows: {sum(b - a for a, b in proving):.3f} s)",
             "", "by the deepest proofdiff function:"]
    lines += [f"  {s:7.3f}  {k}" for k, s in by_ours.most_common(top)]
    lines += ["", "by leaf:"] + [f"  {s:7.3f}  {k}" for k, s in by_leaf.most_common(top)]
    lines += ["", "as a tree (proofdiff frames, then the leaf; 10 ms and over):"]

    def walk(node: dict[str, Any], depth: int) -> None:
        for name, kid in sorted(((k, v) for k, v in node.items() if k),
                                key=lambda kv: -kv[1][""]):
            if kid[""] >= 0.01:
                lines.append(f"  {kid['']:7.3f}  {'  ' * depth}{name}")
                walk(kid, depth + 1)
    walk(tree, 0)
    lines += ["", "serial stretches over 20 ms (start s, length s, mostly in):"]
    lines += [f"  {a:7.3f}  {n:6.3f}  " + ", ".join(f"{k} {v:.3f}" for k, v in c.most_common(3))
              for a, n, c in stretches if n > 0.02]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="also write the call tree here")
    ap.add_argument("--session", type=Path,
                    help="also save pyinstrument's raw session here (read it again with "
                         "`pyinstrument --load FILE`, at any threshold or as a timeline)")
    ap.add_argument("--outside-proving", type=Path,
                    help="also write the main thread's time outside every flow here, by function")
    ap.add_argument("--interval-s", type=float, default=0.001,
                    help="sampling interval, seconds. Default: 0.001")
    ap.add_argument("rest", nargs=argparse.REMAINDER, help="-- then proofdiff run arguments")
    args = ap.parse_args()
    extra = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    from pyinstrument import Profiler  # imported here: --help needs no profiler

    with tempfile.TemporaryDirectory(prefix="proofdiff-profile-") as tmp:
        profiler = Profiler(interval=args.interval_s, async_mode="disabled")
        profiler.start()
        import proofdiff.cli
        from proofdiff.core import session as S

        flows: list[tuple[float, float]] = []
        S.prove_many = _timed(S.prove_many, flows)
        code = proofdiff.cli.main(["run", "--report-dir", tmp, *extra])
        profiler.stop()
    text = profiler.output_text(unicode=True, color=False, show_all=False)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    if args.session and profiler.last_session is not None:
        profiler.last_session.save(str(args.session))
    if args.outside_proving and profiler.last_session is not None:
        args.outside_proving.write_text(outside_proving(profiler.last_session, flows),
                                        encoding="utf-8")
    print(text)
    print(f"exit code {code}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
