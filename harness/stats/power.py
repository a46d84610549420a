"""False-alarm rate and power of the paired gate (proofdiff.stats.paired), by simulation.

``python -m proofdiff.stats.power [--trials N] [--seed S] [--cv 0.02 0.03 0.05] [--spikes 0 0.05]``
prints one row per (CV, spike rate, true ratio): how often :func:`sequential_compare` (default
schedule: 6 pairs, then +2, budget 11 pairs with 1 warmup) says DIFFERENT (the false-alarm rate
at ratio 1.00, the power when the candidate is slower), SAME, INCONCLUSIVE, and the pairs it
drew; then the same for the unpaired :func:`proofdiff.stats.unpaired.adaptive_compare` (floor 25 %,
the same alpha, the same samples less the warmup pair) for contrast.

Noise model of sample j (0, 1, 2, ... in drawing order: baseline, candidate, baseline, ...):
``median * ratio[candidate] * exp(drift_j + e_j) * spike_j * warm_j`` with

* ``e_j ~ N(0, s)``, ``s = sqrt(log(1 + cv^2))``: lognormal noise with coefficient of variation
  ``cv`` (default 3 %, what a quiet 2-core host measured);
* ``drift_j``: slow machine drift, larger than the effects looked for: a wave of +/-5 % over 20
  pairs with a random phase, shared by the two samples of a pair (what the pairing cancels),
  plus a random walk of 0.3 % a sample (which leaves each pair a little unshared drift);
* ``spike_j = 1.30`` with probability ``--spikes`` (a sample hit by a neighbour or a GC), else 1;
* ``warm_j``: the first baseline sample +25 % and the first candidate +10 % (cold caches), what
  the warmup pair absorbs.

Every cell of one (CV, spike rate) uses the same noise for every ratio (common random numbers),
from a fixed seed; the rates come with their 95 % (Wilson) intervals: with 2000 trials a rate
near 1 % is known to about +/-0.45 points.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats  # type: ignore[import-untyped]

from proofdiff.stats.unpaired import DIFFERENT, INCONCLUSIVE, SAME, adaptive_compare
from proofdiff.stats.paired import sequential_compare

__all__ = ["main", "simulate"]

Draw = Callable[[int], tuple[list[float], list[float]]]


def simulate(rng: np.random.Generator, trials: int, pairs: int, cv: float, spikes: float,
             median_ms: float = 1000.0) -> tuple[np.ndarray, np.ndarray]:
    """``(baseline, candidate)`` samples (ms), each of shape ``(trials, pairs)``, at ratio 1.00
    (multiply the candidate by the true ratio); the noise model of the module docstring."""
    m = 2 * pairs
    s = math.sqrt(math.log1p(cv * cv))
    walk = np.cumsum(rng.normal(0.0, 0.003, (trials, m)), axis=1)
    wave = np.repeat(0.05 * np.sin(2 * math.pi * (np.arange(pairs)[None, :] / 20.0
                                                   + rng.uniform(0.0, 1.0, (trials, 1)))), 2, 1)
    x = median_ms * np.exp(walk + wave + rng.normal(0.0, s, (trials, m)))
    x *= np.where(rng.uniform(size=(trials, m)) < spikes, 1.30, 1.0)
    x[:, 0] *= 1.25
    x[:, 1] *= 1.10
    return x[:, 0::2], x[:, 1::2]


def _drawer(b: np.ndarray, c: np.ndarray, start: int = 0) -> Draw:
    pos = start

    def draw(n: int) -> tuple[list[float], list[float]]:
        nonlocal pos
        out = b[pos:pos + n].tolist(), c[pos:pos + n].tolist()
        pos += n
        return out
    return draw


def _cell(b: np.ndarray, c: np.ndarray, ratio: float, *, paired: bool, budget: int,
          floor_rel: float, alpha: float) -> dict[str, int]:
    """Counts of ``slower``, ``faster`` (DIFFERENT), ``same``, ``unsure`` (INCONCLUSIVE) and
    the ``pairs`` drawn over the rows of ``b``, ``c`` (the candidate times ``ratio``)."""
    n = dict(slower=0, faster=0, same=0, unsure=0, pairs=0)
    for bi, ci in zip(b, c * ratio):
        if paired:
            v = sequential_compare(_drawer(bi, ci), budget=budget, floor_rel=floor_rel,
                                   alpha=alpha)
            verdict, up, used = v.verdict, v.direction == "slower", v.n_pairs + v.warmup_pairs
        else:  # the unpaired gate sees the same samples less the warmup pair
            u = adaptive_compare(_drawer(bi, ci, 1), initial=5, step=2, budget=budget - 1,
                                 floor_rel=floor_rel, alpha=alpha)
            verdict, up, used = u.verdict, (u.ratio or 1.0) > 1.0, u.left_summary.n
        key = {DIFFERENT: "slower" if up else "faster", SAME: "same", INCONCLUSIVE: "unsure"}
        n[key[verdict]] += 1
        n["pairs"] += used
    return n


def _pct(k: int, n: int, ci: bool = True) -> str:
    """``k`` of ``n`` in %, with its 95 % Wilson interval."""
    if not ci:
        return f"{100.0 * k / n:.1f}"
    lo, hi = stats.binomtest(k, n).proportion_ci(0.95, method="wilson")
    return f"{100.0 * k / n:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"


def _print(title: str, header: Sequence[str], rows: list[list[str]], note: str) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # plain text
        print(f"\n{title}")
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
        for r in [list(header), *rows]:
            print("  ".join(v.rjust(w) for v, w in zip(r, widths)))
        print(note)
        return
    table = Table(title=title, caption=note)
    for h in header:
        table.add_column(h, justify="right")
    for r in rows:
        table.add_row(*r)
    Console(width=120).print(table)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the tables; returns 0. See the module docstring for the options."""
    ap = argparse.ArgumentParser(prog="python -m proofdiff.stats.power", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=2000, help="trials per cell (default 2000)")
    ap.add_argument("--seed", type=int, default=20240601, help="random seed")
    ap.add_argument("--cv", type=float, nargs="+", default=[0.02, 0.03, 0.05],
                    help="coefficients of variation of one sample (default 0.02 0.03 0.05)")
    ap.add_argument("--spikes", type=float, nargs="+", default=[0.0, 0.05],
                    help="chance that a sample is +30 %% slower (default 0 0.05)")
    ap.add_argument("--ratios", type=float, nargs="+", default=[1.0, 1.05, 1.10],
                    help="true candidate/baseline ratios (default 1.00 1.05 1.10)")
    ap.add_argument("--alpha", type=float, default=0.01, help="family-wise alpha (0.01)")
    ap.add_argument("--floor", type=float, default=0.05, help="floor of the paired gate (0.05)")
    ap.add_argument("--budget", type=int, default=11, help="pairs incl. 1 warmup (default 11)")
    ap.add_argument("--unpaired-trials", type=int, default=None,
                    help="trials per cell of the unpaired contrast (default trials / 4)")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    header = ["CV", "spikes", "ratio", "false alarm %", "power %", "SAME %", "INCONCL. %",
              "mean pairs"]
    unpaired_n = args.unpaired_trials or max(1, args.trials // 4)
    tables: dict[bool, list[list[str]]] = {True: [], False: []}
    wrong = {True: 0, False: 0}
    for cv in args.cv:
        for spikes in args.spikes:
            rng = np.random.default_rng([args.seed, round(cv * 1e4), round(spikes * 1e4)])
            b, c = simulate(rng, args.trials, args.budget, cv, spikes)
            for ratio in args.ratios:
                for paired in (True, False):
                    n = args.trials if paired else unpaired_n
                    floor = args.floor if paired else 0.25
                    k = _cell(b[:n], c[:n], ratio, paired=paired, budget=args.budget,
                              floor_rel=floor, alpha=args.alpha)
                    aa = ratio == 1.0
                    wrong[paired] += 0 if aa else k["faster"]
                    tables[paired].append(
                        [f"{cv:.0%}", f"{spikes:.0%}", f"{ratio:.2f}",
                         _pct(k["slower"] + k["faster"], n) if aa else "-",
                         "-" if aa else _pct(k["slower"], n), _pct(k["same"], n, False),
                         _pct(k["unsure"], n, False), f"{k['pairs'] / n:.2f}"])
    s = args.budget - 1
    _print(f"Paired gate: sequential_compare, floor {args.floor:.0%}, alpha {args.alpha}, "
           f"budget {args.budget} pairs (1 warmup + {s}), {args.trials} trials per row",
           header, tables[True],
           f"false alarm: A/A DIFFERENT either way; power: DIFFERENT slower; [95 % interval]; "
           f"DIFFERENT faster at ratio > 1: {wrong[True]} trials; mean pairs: warmup included")
    _print(f"Unpaired contrast: adaptive_compare (Mann-Whitney), floor 25 %, alpha {args.alpha}, "
           f"{s} samples per side, {unpaired_n} trials per row", header, tables[False],
           f"same samples less the warmup pair; mean pairs = samples per side; DIFFERENT faster "
           f"at ratio > 1: {wrong[False]} trials")
    print(f"({time.monotonic() - t0:.1f} s, seed {args.seed})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
