"""Where one ``proofdiff run`` spends its time, call by call: pyinstrument around the CLI's
``main`` in this process (threads included), printed as a call tree.

    python benchmarks/profile_run.py [--out FILE] [-- PROOFDIFF RUN ARGS...]

The complement of ``overhead_breakdown.py`` (phases, medians over repeats): this names the
functions inside "other" and "report". Needs pyinstrument (``pip install pyinstrument``; not a
dependency of proofdiff). The caches must be warm (``make demo`` once first).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="also write the call tree here")
    ap.add_argument("--session", type=Path,
                    help="also save pyinstrument's raw session here (read it again with "
                         "`pyinstrument --load FILE`, at any threshold or as a timeline)")
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

        code = proofdiff.cli.main(["run", "--report-dir", tmp, *extra])
        profiler.stop()
    text = profiler.output_text(unicode=True, color=False, show_all=False)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    if args.session and profiler.last_session is not None:
        profiler.last_session.save(str(args.session))
    print(text)
    print(f"exit code {code}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
