"""The served verifier (``verify --serve``, one process per run) after an answer that is not
its batch's verdicts: the batch fails and the server is replaced, so no later batch
reads the rest of that answer as its own; each batch's item ids are its own, so an answer to
another batch is refused. The server here is a stand-in process speaking the tool's line
protocol (refprover README, 'Verifier input and output') that misbehaves on purpose: the real
tool cannot be made to, as ``/bin/false`` stands in for one that dies
(tests/host/test_flows_host.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from proofdiff.runtime.runner import Runner
from proofdiff.verify.served_verifier import ServedVerifier
from proofdiff.verify.tool_verifier import VerifyError

pytestmark = pytest.mark.unit

#: A server whose first process says a stray line before its first answer, and which answers
#: every batch of its life with the batch's ids, valid from its second batch on (its first
#: batch's verdicts are invalid: a stale answer is seen as such).
SERVER = """\
import json, os, sys, time
marker = {marker!r}
first_life = not os.path.exists(marker)
open(marker, "a").close()
for n, line in enumerate(sys.stdin):
    ids = [item["id"] for item in json.loads(line)["items"]]
    if first_life and n == 0:
        sys.stdout.write("warning: the parameter cache is on a slow disk\\n")
        sys.stdout.flush()  # a line of its own: the answer follows it a moment later
        time.sleep(0.2)
    results = [{{"id": i, "valid": n > 0, "partitions": [n > 0]}} for i in ids]
    sys.stdout.write(json.dumps({{"results": results}}) + "\\n")
    sys.stdout.flush()
"""


def test_an_unreadable_answer_fails_its_batch_and_the_next_gets_its_own_verdicts(
        tmp_path: Path) -> None:
    tool = tmp_path / "verify"
    tool.write_text(f"#!{sys.executable}\n" + SERVER.format(marker=str(tmp_path / "ran")),
                    encoding="utf-8")
    tool.chmod(0o755)
    runner = Runner("t-served")
    served = ServedVerifier(runner, str(tool), tmp_path, profile="p", timeout_s=30.0)
    items = [{"id": "0|wpost-0", "proof": "00"}, {"id": "1|wpost-1", "proof": "00"}]
    try:
        with pytest.raises(VerifyError, match="not batch 1's verdicts, so it was stopped"):
            served.verify(items)
        got = served.verify(items)  # the same ids, as every flow of a run has
        assert {k: v.valid for k, v in got.items()} == {"0|wpost-0": False, "1|wpost-1": False}
        assert served.starts == 2  # the server that misspoke was replaced
        # a later batch of the same server: its own verdicts, the ids given back as asked
        again = served.verify(items[:1])
        assert list(again) == ["0|wpost-0"] and again["0|wpost-0"].valid
        assert served.starts == 2
    finally:
        served.close()
        runner.close()
