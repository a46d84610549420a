"""``proofdiff gate``: block an image push when the candidate is broken or slower."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from proofdiff.cli.cmd_run import console_log, notify_webhook
from proofdiff.cli.exit_codes import exit_help
from proofdiff.cli.history_append import exit_with_history
from proofdiff.cli.option_flags import add_run_options, run_options
from proofdiff.model.run_options import positive_seconds
from proofdiff.stats.looks import (DEFAULT_BUDGET, FIRST_ROUNDS, MAX_ROUNDS, max_slowdown,
                                  timing_rounds)

if TYPE_CHECKING:  # rich is imported when a command runs, not for --help
    from rich.console import Console

__all__ = ["EXIT_HELP", "add_arguments", "gate"]

EXIT_HELP = exit_help("gate")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``proofdiff gate``."""
    sides = p.add_argument_group("the two builds: two images, or two folders of host binaries")
    sides.add_argument("--candidate", metavar="IMAGE", help="the image to push")
    sides.add_argument("--baseline", metavar="IMAGE",
                       help="the image it replaces (the same digest twice is an A/A gate)")
    sides.add_argument("--candidate-bin-dir", metavar="DIR",
                       help="instead of images, on a host without Docker: the folder of the "
                            "candidate build's programs (the daemon, and the bench tool of "
                            "bench-cli profiles, by the names the profiles give); every profile "
                            "runs as a process, its proofs judged by verify from --bin-dir")
    sides.add_argument("--baseline-bin-dir", metavar="DIR",
                       help="the folder of the baseline build's programs (with "
                            "--candidate-bin-dir)")
    p.add_argument("--max-slowdown", metavar="FRACTION", type=max_slowdown, default=0.05,
                   help="the slowdown the push tolerates, per timing metric: a metric passes "
                        "when the candidate is shown less than this much slower (faster "
                        "included), fails when shown slower than a fifth of it (the practical "
                        "margin); 0.05 or 5%%. Default: 0.05")
    p.add_argument("--budget-s", metavar="SECONDS", type=positive_seconds, default=900.0,
                   help="time budget of the timing rounds over all profiles. Default: 900")
    p.add_argument("--rounds", metavar="N", type=timing_rounds, default=DEFAULT_BUDGET,
                   help="most timing rounds per profile, the warm-up round included: a "
                        "ceiling; each metric stops when decided or at the cap its noise calls "
                        "for, and one whose noise cannot decide --max-slowdown within N is "
                        f"INCONCLUSIVE at once ({FIRST_ROUNDS} to {MAX_ROUNDS}). "
                        f"Default: {DEFAULT_BUDGET}")
    p.add_argument("--no-timing", action="store_true",
                   help="gate on the candidate's checks alone, with no timing arm (the "
                        "decision line and the report say so). Default: time every profile")
    add_run_options(p, ("select", "select-profile", "artifacts", "report", "history",
                        "outcome", "deadlines", "fleet"))


def gate(args: argparse.Namespace, console: Console) -> int:
    """Run the gate, print its decision, return its exit code (:data:`EXIT_HELP`)."""
    from rich.text import Text
    from proofdiff.gate import run_gate

    from proofdiff.model.choices import Runtime

    images, dirs = (args.candidate, args.baseline), (args.candidate_bin_dir, args.baseline_bin_dir)
    if not (all(images) and not any(dirs)) and not (all(dirs) and not any(images)):
        console.print(Text("error: give --candidate and --baseline (two images), or "
                           "--candidate-bin-dir and --baseline-bin-dir (two folders of host "
                           "binaries), one pair", style="bold red"))
        return 3
    opts = run_options(args)
    host = all(dirs)
    result = run_gate(*(dirs if host else images), opts, budget_s=args.budget_s,
                      rounds=args.rounds, max_slowdown=args.max_slowdown,
                      no_timing=args.no_timing, log=console_log(console),
                      runtime=Runtime.PROCESS if host else Runtime.DOCKER)
    for t in result.timing:
        for m in t.metrics:
            console.print(Text(f"  {t.profile}/{t.workload} {m.metric}: {m.line()}"))
        if t.hosts:
            console.print(Text(f"  {t.profile}/{t.workload} rounds per host: " + ", ".join(
                f"{h} {k}" for h, k in sorted(t.hosts.items()))))
    for f in result.findings:
        head = f.message.splitlines()[0][:160] if f.message else ""
        state = f"accepted ({f.accepted_by})" if f.accepted else "BLOCKS"
        console.print(Text(f"  {state}: {f.check} on {f.profile}: {head}"))
    for tp in result.tamper:
        console.print(Text(f"  pinned verifier on a tampered proof of {tp.profile}/{tp.workload}: "
                           + (f"{tp.verdict} (rejected)" if tp.rejected else tp.verdict
                              or tp.note)))
    for why in result.undecided:
        console.print(Text(f"  not judged: {why}"))
    for e in result.stale:
        console.print(Text(f"  allowlist {e.status}: {e.message}"))
    style = {0: "green", 2: "yellow"}.get(result.exit_code, "red")
    console.print(Text(result.decision_line, style=f"bold {style}"))
    page = opts.report_root / result.run_id / "index.html"
    console.print(Text(f"report: {page}"))
    if opts.notify:
        from proofdiff.gate.gate_view import gate_view

        notify_webhook(console, opts.notify, gate_view(result), page)
    if result.history:
        console.print(Text(result.history, style="bold red" if result.history_error else ""),
                      soft_wrap=True)
    return exit_with_history(result.exit_code, not result.history_error)
