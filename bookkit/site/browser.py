"""Serve the built site on 127.0.0.1 and open it in Debian's Chromium through
Playwright.

Used by tests/test_site.py and, for a look as a reader would, from the command line:

    python -m bookkit.site.browser screenshot _build/html book/intro.html /tmp/intro.png
    [--dark]

Playwright never downloads a browser here: it drives /usr/bin/chromium (apt package
`chromium`).
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import shutil
import sys
import threading
from pathlib import Path
from typing import Iterator

CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
]


def chromium_path() -> str:
    """The system Chromium; a clear error if it is missing."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    raise FileNotFoundError(
        "Chromium not found: install Debian's package with "
        "`apt-get install -y chromium` (.ci/run does this)"
    )


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """A static file handler that does not log every request to stderr."""

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - stdlib signature
        pass


@contextlib.contextmanager
def serve(root: Path) -> Iterator[str]:
    """Serve `root` on an ephemeral port of 127.0.0.1; yield the base URL."""
    handler = functools.partial(QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def browser() -> Iterator[object]:
    """A headless Chromium driven by Playwright."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield chromium
        finally:
            chromium.close()


def wait_for_math(page) -> None:
    """Wait until MathJax (if the page loads it) has typeset everything."""
    page.wait_for_function(
        "() => !window.MathJax || (window.MathJax.startup"
        " && window.MathJax.startup.promise && (window.__mjxDone"
        " || window.MathJax.startup.promise.then(() => {window.__mjxDone = true})"
        " && false))",
        timeout=30000,
    )


AXE_OPTIONS = {"resultTypes": ["violations"]}  # axe's default rules, violations only
AXE_REPORT = """(found) => found.violations.map((v) => ({id: v.id, impact: v.impact,
  help: v.help, nodes: v.nodes.map((n) => n.target.join(' '))}))"""


def start_axe(page) -> None:
    """Start axe-core (bookkit/site/vendor.py) on a loaded page without waiting for it:
    the audit runs in the page's renderer while Python goes on (see axe_results)."""
    from bookkit.site.vendor import axe_source

    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(axe_source())
    page.evaluate(
        f"(options) => {{ window.__axeResults = axe.run(document, options)"
        f".then({AXE_REPORT}); }}",
        AXE_OPTIONS,
    )


def axe_results(page) -> list[dict]:
    """The violations of the audit start_axe began: rule id, impact, help text and the
    CSS targets of the offending nodes."""
    return page.evaluate("() => window.__axeResults")


def axe_audit(page) -> list[dict]:
    """Audit a loaded page with axe-core and wait for its violations."""
    start_axe(page)
    return axe_results(page)


def screenshot(
    site: Path, page_path: str, out: Path, dark: bool = False, full: bool = True
) -> None:
    """Save a PNG of one page of the built site, as a reader would see it."""
    with serve(site) as base, browser() as chromium:
        context = chromium.new_context(
            viewport={"width": 1280, "height": 900},
            color_scheme="dark" if dark else "light",
        )
        page = context.new_page()
        if dark:
            page.add_init_script(
                "localStorage.setItem('mode', 'dark');"
                " localStorage.setItem('theme', 'dark');"
            )
        page.goto(base + page_path, wait_until="load")
        wait_for_math(page)
        page.wait_for_timeout(500)
        page.screenshot(path=str(out), full_page=full)


if __name__ == "__main__":
    if len(sys.argv) < 5 or sys.argv[1] != "screenshot":
        sys.exit(
            "usage: python -m bookkit.site.browser screenshot SITE_DIR PAGE.html "
            "OUT.png [--dark] [--viewport]"
        )
    screenshot(
        Path(sys.argv[2]),
        sys.argv[3],
        Path(sys.argv[4]),
        dark="--dark" in sys.argv,
        full="--viewport" not in sys.argv,
    )
    print(f"wrote {sys.argv[4]}")
