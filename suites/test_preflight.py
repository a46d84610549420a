"""Preflight, before any proof, per profile: the image and its digest, the params the workload
needs readable where the daemon will actually read them (checked inside the container), config
keys the daemon does not know, and a ``bench-cli`` profile's command line (dry parse).

Every failure says what was seen and the fix (``harness.preflight``). A failed ``image``,
``params`` or ``bench-cli`` check makes the proving suites skip that profile (suites/conftest.py),
so the root cause is reported once instead of as a pile of failed proofs.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fixtures.differential import preflight_of
from fixtures.session import ProofdiffSession

pytestmark = pytest.mark.proofdiff


def _check(session: ProofdiffSession, rec: Callable[..., None], name: str, profile: str,
           workload: str) -> None:
    pf = preflight_of(session, profile, workload)
    c = pf.check(name) or pf.check("daemon")
    if c is None:
        pytest.skip(f"check {name!r} does not apply to profile {profile!r}")
    text = c.render() if c.ok else f"{c.render()}\n\n{pf.explain()}"
    rec(name, profile, workload, "pass" if c.ok else "fail", text, data=c.data)


def test_image_and_digest_exist(proofdiff_session: ProofdiffSession, proofdiff_record: Callable[..., None],
                                proofdiff_profile_name: str, proofdiff_workload_name: str) -> None:
    _check(proofdiff_session, proofdiff_record, "image", proofdiff_profile_name,
           proofdiff_workload_name)


def test_params_readable_where_the_daemon_reads(proofdiff_session: ProofdiffSession,
                                                proofdiff_record: Callable[..., None],
                                                proofdiff_profile_name: str,
                                                proofdiff_workload_name: str) -> None:
    _check(proofdiff_session, proofdiff_record, "params", proofdiff_profile_name,
           proofdiff_workload_name)


def test_config_keys_known(proofdiff_session: ProofdiffSession, proofdiff_record: Callable[..., None],
                           proofdiff_profile_name: str, proofdiff_workload_name: str) -> None:
    _check(proofdiff_session, proofdiff_record, "config-keys", proofdiff_profile_name,
           proofdiff_workload_name)


def test_bench_command_line_accepted(proofdiff_session: ProofdiffSession,
                                     proofdiff_record: Callable[..., None],
                                     proofdiff_profile_name: str,
                                     proofdiff_workload_name: str) -> None:
    if proofdiff_session.profiles[proofdiff_profile_name].driver != "bench-cli":
        pytest.skip(f"profile {proofdiff_profile_name!r} does not use the bench-cli driver")
    _check(proofdiff_session, proofdiff_record, "bench-cli", proofdiff_profile_name,
           proofdiff_workload_name)


def test_workload_file_is_usable(proofdiff_session: ProofdiffSession,
                                 proofdiff_record: Callable[..., None],
                                 proofdiff_profile_name: str, proofdiff_workload_name: str) -> None:
    """The workload file parses and matches its schema (else nothing can be proved)."""
    pf = preflight_of(proofdiff_session, proofdiff_profile_name, proofdiff_workload_name)
    c = pf.check("workload")
    if c is None:
        proofdiff_record("workload", proofdiff_profile_name, proofdiff_workload_name, "pass",
                         f"workload {proofdiff_workload_name} loads")
        return
    proofdiff_record("workload", proofdiff_profile_name, proofdiff_workload_name, "fail",
                     f"{c.render()}\n\n{pf.explain()}", data=c.data)
