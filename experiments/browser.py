"""Headless Debian Chromium driven by selenium, for the replay viewer's tests and benchmark.

``headless_chromium()`` starts ``/usr/bin/chromium`` through ``/usr/bin/chromedriver`` (Debian's
``chromium`` and ``chromium-driver`` packages, installed by ``make browser``). The driver path
is always given to selenium, so Selenium Manager (which would download a browser or a driver)
is never asked. The browser starts with a fresh profile and with background networking,
component updates, sync and QUIC off, so that it contacts nothing on its own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["CHROMEDRIVER", "CHROMIUM", "INSTALL_HINT", "browser_missing", "console_errors",
           "headless_chromium", "requested_urls"]

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
INSTALL_HINT = ("run `make browser` (it installs Debian's chromium and chromium-driver with "
                "apt-get; `make test` runs it first)")

_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
          "--disable-quic", "--no-first-run", "--no-default-browser-check",
          "--disable-background-networking", "--disable-component-update", "--disable-sync",
          "--disable-extensions", "--disable-default-apps", "--disable-domain-reliability",
          "--disable-client-side-phishing-detection", "--metrics-recording-only",
          "--safebrowsing-disable-auto-update", "--password-store=basic",
          "--disable-features=OptimizationHints,MediaRouter,Translate,AutofillServerCommunication")


def browser_missing() -> str | None:
    """Why the browser tests cannot run here (``None`` when they can)."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    if missing:
        return f"{' and '.join(missing)} not found: {INSTALL_HINT}"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed: pip install -e '.[dev]' (or `make test`)"
    return None


@contextmanager
def headless_chromium(width: int = 1400, height: int = 1000) -> Iterator[Any]:
    """A selenium ``WebDriver`` on headless Chromium (quit and profile removed on exit).
    Raises ``RuntimeError`` naming the make target when the browser is missing."""
    why = browser_missing()
    if why is not None:
        raise RuntimeError(why)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")  # belt and braces: no Selenium Manager fetch
    profile = tempfile.mkdtemp(prefix="traveller-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in _FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={width},{height}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    service = Service(executable_path=str(CHROMEDRIVER), log_output=subprocess.DEVNULL)
    driver = webdriver.Chrome(service=service, options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def console_errors(driver: Any) -> list[dict[str, Any]]:
    """Browser console entries of level SEVERE since the last call (errors, failed loads)."""
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def requested_urls(driver: Any, document: str | None = None) -> list[str]:
    """Every URL asked of the network stack since the last call (from the DevTools
    ``Network.requestWillBeSent`` log), ``file:`` and ``data:`` ones included; with
    ``document``, only the requests made for that page (its own load and anything it asks
    for), not those of the browser's start page."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") != "Network.requestWillBeSent":
            continue
        params = message["params"]
        if document is None or params.get("documentURL") == document:
            urls.append(params["request"]["url"])
    return urls
