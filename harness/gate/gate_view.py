"""The gate's report directory: evidence tied to both image digests.

* ``summary.json``: the :class:`~proofdiff.gate.gate_result.GateResult` (versioned), and beside it
  ``gate.schema.json``, its JSON Schema (shipped with the package, :func:`schema`);
* ``index.html``: the decision first, then each profile's timing verdicts with a plot of both
  sides' samples (matplotlib, inline SVG), the findings, the allowlist's stale entries;
* ``junit.xml``: one test case per finding and per timing metric (junitparser);
* ``allure-results/``: the same, for Allure (:mod:`proofdiff.gate.gate_allure`);
* ``statement.intoto.json``: an in-toto Statement v1 (https://github.com/in-toto/attestation,
  ``spec/v1/statement.md``: ``_type``, ``subject`` with a ``sha256`` digest, ``predicateType``,
  ``predicate``) whose subject is the candidate image, so that an admission policy can check
  what was tested and decided;
* ``differential/``: the candidate's own bench vs prod report (written by the differential).
"""

from __future__ import annotations

import io
import json
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
import msgspec
from junitparser import Failure, JUnitXml, Skipped, TestCase, TestSuite

from proofdiff.model import serde

from proofdiff.gate.gate_allure import write_gate_allure
from proofdiff.gate.gate_result import GateResult, MetricVerdict, ProfileTiming

__all__ = ["PREDICATE_TYPE", "SCHEMA_FILE", "intoto_statement", "schema", "write_gate_report"]

#: The in-toto predicate type of a proofdiff gate decision.
PREDICATE_TYPE = "https://github.com/proofdiff/proofdiff/gate/v1"
SCHEMA_FILE = "gate.schema.json"
_STATEMENT = "https://in-toto.io/Statement/v1"


def schema() -> dict[str, Any]:
    """The JSON Schema of summary.json, as generated from :class:`GateResult` (msgspec)."""
    return msgspec.json.schema(GateResult)


def _shipped_schema() -> str:
    return resources.files("proofdiff.gate").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")


def intoto_statement(result: GateResult) -> dict[str, Any]:
    """The in-toto Statement of the decision (module docstring); the subject's digest is the
    candidate's image id (its config digest; registry digests, if any, in annotations)."""
    cand = result.candidate
    subject: dict[str, Any] = {"name": cand.image,
                               "digest": {"sha256": cand.digest.removeprefix("sha256:")}}
    if cand.repo_digests:
        subject["annotations"] = {"repo_digests": list(cand.repo_digests)}
    return {
        "_type": _STATEMENT,
        "subject": [subject],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "decision": result.decision.value, "decision_line": result.decision_line,
            "run_id": result.run_id, "created_unix_s": result.created_unix_s, "aa": result.aa,
            "baseline": msgspec.to_builtins(result.baseline),
            "verifier": msgspec.to_builtins(result.verifier) if result.verifier else None,
            "verifier_check": (msgspec.to_builtins(result.verifier_check)
                               if result.verifier_check else None),
            "profiles": sorted(result.profiles), "workloads": list(result.workloads),
            "findings": [{"check": f.check, "profile": f.profile, "workload": f.workload,
                          "kind": f.kind, "accepted": f.accepted, "accepted_by": f.accepted_by}
                         for f in result.findings],
            "timing": [{"profile": t.profile, "workload": t.workload, "metric": m.metric,
                        "verdict": m.verdict, "regression": m.regression, "ratio": m.ratio,
                        "ratio_ci": list(m.ratio_ci), "n_pairs": m.n_pairs}
                       for t in result.timing for m in t.metrics],
            "commit": result.commit.get("id", ""),
        },
    }


def plot_svg(t: ProfileTiming, m: MetricVerdict) -> str:
    """Both sides' samples of one metric by round (warmup rounds hollow), as inline SVG."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(5.0, 2.2), dpi=96)
    try:
        for samples, label, colour in ((m.baseline_samples, "baseline", "#1f77b4"),
                                       (m.candidate_samples, "candidate", "#d62728")):
            xs = list(range(len(samples)))
            warm = m.warmup_pairs
            ax.plot(xs[warm:], samples[warm:], "o-", color=colour, label=label, ms=4, lw=1)
            if warm:
                ax.plot(xs[:warm], samples[:warm], "o", mfc="none", color=colour, ms=4)
        ax.set_xlabel("round (hollow: warmup)")
        ax.set_ylabel(f"{m.metric} ({m.unit})")
        ax.set_title(f"{t.profile}/{t.workload} {m.metric}: {m.verdict}", fontsize=9)
        ax.legend(fontsize=7)
        fig.tight_layout()
        buf = io.StringIO()
        fig.savefig(buf, format="svg")
    finally:
        plt.close(fig)
    svg = buf.getvalue()
    return svg[svg.find("<svg"):]


def _junit(result: GateResult) -> JUnitXml:
    suite = TestSuite(f"proofdiff gate {result.run_id}")
    for f in result.findings:
        case = TestCase(f"{f.check}[{f.profile}/{f.workload}]", classname=f"gate.{f.kind}")
        if not f.accepted:
            case.result = [Failure(f.message[:2000])]
        else:
            case.system_out = f"accepted by {f.accepted_by}: {f.reason} ({f.link})"
        suite.add_testcase(case)
    for t in result.timing:
        for m in t.metrics:
            case = TestCase(f"timing/{m.metric}[{t.profile}/{t.workload}]", classname="gate.timing")
            if m.regression:
                case.result = [Failure(m.text)]
            elif m.verdict == "INCONCLUSIVE":
                case.result = [Skipped(m.text)]
            case.system_out = m.text
            suite.add_testcase(case)
    case = TestCase("decision", classname="gate")
    if result.exit_code != 0:
        case.result = [Failure(result.decision_line)]
    suite.add_testcase(case)
    xml = JUnitXml()
    xml.add_testsuite(suite)
    return xml


def render_html(result: GateResult) -> str:
    """index.html of the gate (template ``harness/report/templates/gate.html.j2``)."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("proofdiff.report", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]))
    plots = {(t.profile, t.workload, m.metric): plot_svg(t, m)
             for t in result.timing for m in t.metrics if m.baseline_samples}
    return env.get_template("gate.html.j2").render(r=result, plots=plots)


def write_gate_report(result: GateResult, run_dir: Path) -> Path:
    """Write every file of the module docstring into ``run_dir``; returns summary.json's path.
    Each file is written even when another fails to render (the error goes in its place)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    summary = run_dir / "summary.json"
    serde.write(summary, result)
    (run_dir / SCHEMA_FILE).write_text(_shipped_schema(), encoding="utf-8")
    (run_dir / "statement.intoto.json").write_text(
        json.dumps(intoto_statement(result), indent=2), encoding="utf-8")
    _junit(result).write(str(run_dir / "junit.xml"), pretty=True)
    write_gate_allure(result, run_dir)
    try:
        html = render_html(result)
    except (jinja2.TemplateError, ValueError, RuntimeError) as exc:
        html = f"<pre>{result.decision_line}\n\nthe report did not render: {exc}</pre>"
    (run_dir / "index.html").write_text(html, encoding="utf-8")
    return summary
