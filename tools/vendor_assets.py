"""Copy the JavaScript the site needs into book/vendor/, so no page loads anything from the internet.

- MathJax 3.2.2 (the `tex-mml-chtml` component with its fonts and lazily loaded extensions),
  taken from the pinned PyPI wheel `django-static-mathjax`.
- plotly.js, taken from the pinned `plotly` package, so interactive figures render on the
  static site without a kernel or a CDN.

Sphinx copies book/vendor/ into _build/html/_static/ (see `html_static_path` in _config.yml).
"""
from __future__ import annotations

import shutil
from pathlib import Path

import mathjax
import plotly

ROOT = Path(__file__).resolve().parents[1]
VENDOR = ROOT / "book" / "vendor"
MATHJAX_PARTS = ["tex-mml-chtml.js", "input", "ui", "a11y", "adaptors", "sre",
                 "output/chtml.js", "output/chtml", "output/chtml/fonts/woff-v2"]


def mathjax_source() -> Path:
    """Return the es5/ folder of the MathJax distribution installed by django-static-mathjax."""
    es5 = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    if not (es5 / "tex-mml-chtml.js").is_file():
        raise FileNotFoundError(f"MathJax es5 build not found under {es5}; "
                                "run `make setup` to install django-static-mathjax.")
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


def copy_plotly(dest: Path) -> None:
    """Copy plotly.min.js shipped inside the plotly Python package."""
    source = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, dest / "plotly.min.js")


def main() -> None:
    shutil.rmtree(VENDOR, ignore_errors=True)
    copy_mathjax(VENDOR / "mathjax")
    copy_plotly(VENDOR)
    (VENDOR / ".stamp").write_text("vendored by tools/vendor_assets.py\n")
    size = sum(p.stat().st_size for p in VENDOR.rglob("*") if p.is_file())
    print(f"vendored MathJax and plotly.js into {VENDOR.relative_to(ROOT)} ({size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
