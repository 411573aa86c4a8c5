"""Copy the JavaScript the site needs into book/vendor/, so no page loads anything from
the internet.

- MathJax 3.2.2 (the `tex-mml-chtml` component with its fonts and lazily loaded
  extensions), taken from the pinned PyPI wheel `django-static-mathjax`.
- plotly.js, so interactive figures render on the static site without a kernel or a CDN:
  the *cartesian* partial bundle (npm `plotly.js-cartesian-dist-min`, the same plotly.js
  version as the pinned `plotly` package ships; 0.5 MB gzip instead of 1.5 MB). It draws
  the trace types in `PLOTLY_TRACES`; tests/test_site.py checks that every figure of the
  book uses only those. The tarball is fetched once from the npm registry (checked
  against a pinned sha256) and cached in ~/.cache/pe-book/; without network, the full
  bundle from the `plotly` package is used instead (heavier pages: the page-weight test
  then fails).

- axe-core (npm `axe-core`, MPL-2.0), the accessibility engine the browser test runs
  on every page (tests/test_site.py). It is a test tool, not part of the site: it stays
  in the cache (~/.cache/pe-book/, checked against a pinned sha256), and
  `axe_source()` hands it to the test.

Sphinx copies book/vendor/ into _build/html/_static/ (see `html_static_path` in
_config.yml).
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import sys
import tarfile
import urllib.request
from pathlib import Path

import mathjax
import plotly
import sphinx

from bookkit.paths import ROOT, VENDOR

PLOTLY_PARTIAL = "plotly.js-cartesian-dist-min"
PLOTLY_PARTIAL_VERSION = "4.1.1"  # = the plotly.js inside the pinned plotly package
PLOTLY_PARTIAL_SHA256 = (
    "c5f9a84666b97e571a04de689e09319869e60900e265c89eac2f71d0b5a0de88"
)
PLOTLY_PARTIAL_FILE = "package/plotly-cartesian.min.js"
# The trace types the cartesian bundle draws (its README).
PLOTLY_TRACES = {
    "bar",
    "box",
    "contour",
    "heatmap",
    "histogram",
    "histogram2d",
    "histogram2dcontour",
    "image",
    "pie",
    "scatter",
    "scatterternary",
    "violin",
}
AXE = "axe-core"
AXE_VERSION = "4.14.1"
AXE_SHA256 = "e6b0ce02b84d892e2e33e403485e7f3d6c29e2be6df65daf44d89ba564139745"
AXE_FILE = "package/axe.min.js"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pe-book"
MATHJAX_PARTS = [
    "tex-mml-chtml.js",
    "input",
    "ui",
    "a11y",
    "adaptors",
    "sre",
    "output/chtml.js",
    "output/chtml",
    "output/chtml/fonts/woff-v2",
]


def mathjax_source() -> Path:
    """The es5/ folder of the MathJax that django-static-mathjax installs."""
    es5 = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    if not (es5 / "tex-mml-chtml.js").is_file():
        raise FileNotFoundError(
            f"MathJax es5 build not found under {es5}; "
            "run `make setup` to install django-static-mathjax."
        )
    return es5


def copy_mathjax(dest: Path) -> None:
    """Copy the MathJax subset that `tex-mml-chtml.js` loads at run time."""
    src = mathjax_source()
    for part in MATHJAX_PARTS:
        source = src / part
        if not source.exists():
            continue
        target = dest / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            shutil.copy2(source, target)


def full_plotly() -> Path:
    """plotly.min.js shipped inside the plotly Python package (every trace type)."""
    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def plotly_js_version(text: str) -> str:
    """The version in a plotly.js bundle's banner ("plotly.js v4.1.1")."""
    match = re.search(r"plotly\.js v(\d+\.\d+\.\d+)", text[:500])
    return match.group(1) if match else "unknown"


def npm_file(package: str, version: str, sha256: str, member: str) -> bytes:
    """One file of an npm package's tarball, fetched from the npm registry once and
    cached, after checking the tarball's sha256."""
    name = f"{package}-{version}.tgz"
    cached = CACHE / name
    if not cached.is_file():
        url = f"https://registry.npmjs.org/{package}/-/{name}"
        with urllib.request.urlopen(url, timeout=60) as response:
            data = response.read()
        CACHE.mkdir(parents=True, exist_ok=True)
        cached.write_bytes(data)
    data = cached.read_bytes()
    if hashlib.sha256(data).hexdigest() != sha256:
        cached.unlink()
        raise ValueError(f"{name}: sha256 mismatch; refusing to use it")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return tar.extractfile(member).read()


def partial_plotly() -> bytes:
    """The cartesian bundle from the npm registry (cached), checked by its sha256."""
    version, sha256 = PLOTLY_PARTIAL_VERSION, PLOTLY_PARTIAL_SHA256
    return npm_file(PLOTLY_PARTIAL, version, sha256, PLOTLY_PARTIAL_FILE)


def axe_source() -> str:
    """axe-core's ``axe.min.js`` (cached from the npm registry, sha256 checked)."""
    return npm_file(AXE, AXE_VERSION, AXE_SHA256, AXE_FILE).decode()


def copy_plotly(dest: Path) -> None:
    """Vendor the cartesian plotly.js bundle, or the full one if it cannot be had."""
    dest.mkdir(parents=True, exist_ok=True)
    full = full_plotly()
    wanted = plotly_js_version(full.read_text(errors="replace"))
    if wanted != PLOTLY_PARTIAL_VERSION:
        raise ValueError(
            f"the plotly package ships plotly.js {wanted}: set "
            f"PLOTLY_PARTIAL_VERSION and its sha256 in {__file__}"
        )
    try:
        (dest / "plotly.min.js").write_bytes(partial_plotly())
    except OSError as error:
        print(
            f"could not fetch {PLOTLY_PARTIAL} ({error}); vendoring the full "
            "plotly.js instead",
            file=sys.stderr,
        )
        shutil.copy2(full, dest / "plotly.min.js")


# Sphinx's search drops every query term made of digits only; the book's readers search
# for numbers (8192, 10000). The site serves Sphinx's own searchtools.js without that
# rule (html_static_path overrides the theme's file of the same name).
NUMERIC_RULE = (
    "stopwords.indexOf(queryTermLower) !== -1 ||\n        queryTerm.match(/^\\d+$/)"
)


def searchtools_with_numbers() -> str:
    """Sphinx's searchtools.js (BSD licence), searching numbers too."""
    source = Path(sphinx.__file__).parent / "themes" / "basic" / "static"
    text = (source / "searchtools.js").read_text()
    if NUMERIC_RULE not in text:
        raise ValueError(
            "Sphinx's searchtools.js changed: update NUMERIC_RULE in "
            f"{__file__} (the rule that drops numeric query terms)"
        )
    return text.replace(NUMERIC_RULE, "stopwords.indexOf(queryTermLower) !== -1")


def main() -> None:
    shutil.rmtree(VENDOR, ignore_errors=True)
    copy_mathjax(VENDOR / "mathjax")
    copy_plotly(VENDOR)
    (VENDOR / "searchtools.js").write_text(searchtools_with_numbers())
    try:  # the browser test's accessibility engine, fetched now so tests run offline
        axe_source()
    except OSError as error:
        print(f"could not fetch {AXE} ({error}): the browser test needs it",
              file=sys.stderr)
    (VENDOR / ".stamp").write_text("vendored by bookkit/site/vendor.py\n")
    size = sum(p.stat().st_size for p in VENDOR.rglob("*") if p.is_file())
    rel = VENDOR.relative_to(ROOT)
    print(f"vendored MathJax and plotly.js into {rel} ({size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
