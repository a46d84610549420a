"""A report page as people see it: opened in a real headless browser (Debian's chromium, driven
by selenium through Debian's chromedriver; `make sysdeps` installs both), and read as text for
what it must not hold (an external URL: the page works offline).

:func:`open_page` skips the calling test, with the reason, only where chromium or chromedriver
is absent; selenium is never let to download a driver (the path is given).
"""

from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

__all__ = ["PageFacts", "external_urls", "open_page"]

#: The window the fold is judged at.
WIDTH, HEIGHT = 1280, 800
#: Deadline for the browser to start and load a page, s.
LOAD_TIMEOUT_S = 60


def external_urls(html: str) -> list[str]:
    """Every ``http(s)://`` or protocol-relative ``//host`` URL in ``html``, XML namespace
    declarations (``xmlns="http://www.w3.org/2000/svg"``, identifiers that nothing loads) left
    out; [] for a page that works offline."""
    text = re.sub(r'\sxmlns(?::\w+)?="[^"]*"', "", html)
    return re.findall(r"""(?:https?:)?//[\w.-]+\.[a-z]{2,}[^\s"'<>)]*""", text, re.I)


@dataclass(frozen=True)
class PageFacts:
    """What the browser saw: its console's SEVERE entries, the window's inner height, the
    top of ``#divergences`` (``None`` when the page has none), the resources it loaded, the
    screenshot's path and the wall time to start, load and shoot, s."""

    severe: list[dict[str, Any]]
    inner_height: int
    divergence_top: float | None
    resources: list[str]
    screenshot: Path
    wall_s: float


def open_page(page: Path, screenshot: str = "screenshot.png") -> PageFacts:
    """Open ``page`` (an index.html) in headless chromium at :data:`WIDTH` x :data:`HEIGHT`,
    read :class:`PageFacts` and save the first screen as PNG beside the page
    (``screenshot``)."""
    chromium, driver_bin = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver_bin):
        pytest.skip("Debian's chromium and chromium-driver are not installed "
                    "(`make sysdeps` installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    t0 = time.monotonic()
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={WIDTH},{HEIGHT}", "--hide-scrollbars"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=opts, service=Service(executable_path=driver_bin))
    try:
        driver.set_page_load_timeout(LOAD_TIMEOUT_S)
        driver.get(page.resolve().as_uri())
        inner = int(driver.execute_script("return window.innerHeight"))
        top = driver.execute_script(
            "const d = document.getElementById('divergences');"
            "return d ? d.getBoundingClientRect().top : null")
        resources = list(driver.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)"))
        severe = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        shot = page.parent / screenshot
        assert driver.save_screenshot(str(shot)), f"chromium wrote no screenshot of {page}"
    finally:
        driver.quit()
    return PageFacts(severe=severe, inner_height=inner,
                     divergence_top=None if top is None else float(top),
                     resources=resources, screenshot=shot, wall_s=time.monotonic() - t0)
