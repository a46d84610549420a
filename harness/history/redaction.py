"""A history URL as people see it: every password in it masked, before anything can print it.

A ``--history`` URL may carry a password in two places (libpq's connection URI, PostgreSQL's
documentation, "Connection URIs"): the userinfo (``postgresql://USER:PASSWORD@HOST/DB``) and the
``password`` / ``sslpassword`` query parameters. :func:`shown_url` masks both, whether or not
the URL parses (a URL with a non-numeric port does not, and its error still names it);
:func:`without_secrets` masks them in any text (a driver's message that quotes its DSN). Every
message, report field and log line of the history is built from these, so a password never
reaches summary.json, the page, Allure's files, the log or the console, which CI uploads.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

__all__ = ["MASK", "shown_url", "without_secrets"]

#: What a password is shown as (SQLAlchemy's ``render_as_string(hide_password=True)`` too).
MASK = "***"
#: ``scheme://user:PASSWORD@``: the userinfo's password (up to the last ``@`` of the authority).
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/?#@:\s]*:)(?P<pw>[^/?#\s]*)@")
#: libpq's query parameters that hold a secret.
_QUERY = re.compile(r"(?i)(?P<head>[?&](?:ssl)?password=)(?P<pw>[^&#\s]*)")


def _secrets(url: str) -> list[str]:
    """The passwords ``url`` carries, as written and percent-decoded (longest first)."""
    found = [m["pw"] for rx in (_USERINFO, _QUERY) for m in rx.finditer(url) if m["pw"]]
    return sorted({*found, *(unquote(p) for p in found)} - {"", MASK}, key=len, reverse=True)


def shown_url(url: str) -> str:
    """``url`` with each password replaced by :data:`MASK` (the rest as given).

    >>> shown_url("postgresql://u:pw@h:5432/db?sslpassword=k&sslmode=require")
    'postgresql://u:***@h:5432/db?sslpassword=***&sslmode=require'
    """
    masked = _USERINFO.sub(lambda m: f"{m['head']}{MASK}@", url)
    return _QUERY.sub(lambda m: f"{m['head']}{MASK}", masked)


def without_secrets(text: str, url: str) -> str:
    """``text`` with every password of ``url`` (as written or percent-decoded) masked, and any
    URL in it shown by :func:`shown_url`."""
    for secret in _secrets(url):
        text = text.replace(secret, MASK)
    return shown_url(text)
