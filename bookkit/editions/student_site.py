"""The student edition of the website: the book without solutions, built without
executing anything again.

    python -m bookkit.editions.student_site [--executed DIR] [--out DIR]
    (``make book-no-solutions`` runs it; it needs ``make book`` first)

A course that publishes the book before the answers needs a site in which no answer
can be found: not on a page, not in ``_sources/`` (what the download button serves),
not in the search index, not in the slides. Removing solutions while Sphinx reads the
pages is not enough (Sphinx copies each original ``.ipynb`` into ``_sources/``), so
this builds the student edition from its own source tree, in ``OUT/src/``:

- ``notebooks/``: the full build's *executed* notebooks (``_build/jupyter_execute``)
  with every ``solution`` cell removed, the outputs of the ``exercise-check`` cells
  cleared (they report on the removed solutions) and the Colab badge pointed at
  ``colab/student/``. They are checked against ``notebooks/`` first: a stale build is
  refused;
- ``book/`` without the instructor page (``book/course/instructor.md``), and a table of
  contents without it; links to it become plain text (``book/course/_ext``); links to
  the full Colab editions (``colab/``, with solutions) open the student editions
  (``bookkit.sphinx.hide_solutions``, switched on by ``book_student_edition``);
- ``_config.yml`` with ``execute_notebooks: "off"``: the pages show the full build's
  outputs, so the student edition costs a Sphinx run, not the notebooks' execution
  again; no repository button (the repository's ``notebooks/`` hold the solutions).

Then ``jupyter-book build OUT/src --path-output OUT -W -n --keep-going`` writes
``OUT/_build/html``; each chapter's ``_sources/notebooks/NN_topic.ipynb`` (the
download) is replaced by its student notebook (``make student``'s, without outputs);
and the slides are made from the solution-free notebooks into
``OUT/_build/html/slides``.
``tests/test_student_site.py`` builds it and searches every file for the solutions.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import yaml

from bookkit.chapters import page_paths
from bookkit.config import book_config, student_site_url, toc
from bookkit.editions import slides
from bookkit.notebook import (
    EDITION_LINK,
    NOTEBOOK_NAME,
    WITHHELD_PAGES,
    clear_outputs,
    is_check,
    link_edition,
    notebook_bytes,
    read,
    student_notebook,
    title_cell,
    without_solutions,
)
from bookkit.paths import (
    BOOK,
    CONFIG_FILE,
    EXECUTED_NOTEBOOKS,
    NO_SOLUTIONS,
    ROOT,
    TOC_FILE,
)

LABEL = re.compile(r"^\s*\(([\w:.-]+)\)=\s*$", re.M)


class StaleBuild(ValueError):
    """The executed notebooks do not match notebooks/ (run `make book` again)."""


def code_sources(nb: nbformat.NotebookNode) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "code"]


def student_page(
    executed: nbformat.NotebookNode, source: nbformat.NotebookNode, name: str
) -> nbformat.NotebookNode:
    """The executed chapter without solutions, for the student edition's page."""
    if [c.source for c in executed.cells] != [c.source for c in source.cells]:
        raise StaleBuild(
            f"{name}: the executed notebook of the last build differs from "
            f"notebooks/{name}; run `make book` again"
        )
    failed = [k for k, c in enumerate(executed.cells) if c.cell_type == "code"
              and any(o.output_type == "error" for o in c.outputs)]
    if failed:
        raise StaleBuild(f"{name}: cells {failed} of the last build's executed "
                         "notebook failed; run `make book` until it builds cleanly")
    out = without_solutions(executed)
    for cell in out.cells:
        if is_check(cell):  # their outputs report on the removed solutions
            clear_outputs(cell)
    title = title_cell(out)
    title.source = link_edition(title.source, "student")
    return out


def withheld_labels() -> list[str]:
    """The ``(label)=`` targets of the withheld pages (links to them become text)."""
    return sorted(
        {m for page in WITHHELD_PAGES for m in LABEL.findall((ROOT / page).read_text())}
    )


def toc_without(toc: dict, files: set[str]) -> dict:
    """The table of contents with the given files (no suffix) removed."""
    def keep(entries: list[dict]) -> list[dict]:
        kept = []
        for entry in entries:
            if entry.get("file") in files:
                continue
            entry = dict(entry)
            for key in ("chapters", "sections"):
                if key in entry:
                    entry[key] = keep(entry[key])
            kept.append(entry)
        return kept

    toc = dict(toc)
    toc["parts"] = [
        dict(part, chapters=keep(part["chapters"])) for part in toc["parts"]
    ]
    return toc


def student_config(config: dict) -> dict:
    """_config.yml for the student edition: nothing executed, the notes excluded."""
    config = yaml.safe_load(yaml.safe_dump(config))  # a deep copy
    config["execute"]["execute_notebooks"] = "off"
    config["html"]["baseurl"] = student_site_url()  # where this edition is published
    # The repository holds the solutions (notebooks/): no button leading there.
    config["html"]["use_repository_button"] = False
    config["exclude_patterns"] = [*config["exclude_patterns"], *WITHHELD_PAGES]
    sphinx = config["sphinx"]
    sphinx["config"]["book_student_edition"] = True
    # The PDFs of `make pdf` are printed from the full site: no links to them.
    sphinx["config"]["print_edition_pdfs"] = False
    sphinx["config"]["hide_solutions_withheld"] = {
        "docs": [page.removesuffix(".md") for page in WITHHELD_PAGES],
        "labels": withheld_labels(),
    }
    return config


def stage(src: Path, executed: Path) -> list[Path]:
    """Write the student edition's source tree into ``src``; return the chapters."""
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    withheld = {ROOT / page for page in WITHHELD_PAGES}
    shutil.copytree(
        BOOK,
        src / "book",
        ignore=lambda folder, names: [
            n for n in names if Path(folder) / n in withheld or n == "__pycache__"
        ],
    )
    for page in (src / "book").rglob("*.md"):  # e.g. the running page's Colab table
        text = page.read_text()
        if EDITION_LINK.search(text):
            page.write_text(link_edition(text, "student"))
    config = student_config(book_config())
    (src / CONFIG_FILE.name).write_text(yaml.safe_dump(config))
    files = {page.removesuffix(".md") for page in WITHHELD_PAGES}
    (src / TOC_FILE.name).write_text(yaml.safe_dump(toc_without(toc(), files)))
    chapters = page_paths()  # the guides too: they are pages of the site
    (src / "notebooks").mkdir()
    for path in chapters:
        done = executed / path.name
        if not done.is_file():
            raise StaleBuild(f"no executed notebook {done}: run `make book` first")
        page = student_page(read(done), read(path), path.name)
        nbformat.write(page, src / "notebooks" / path.name)
    return chapters


def build(src: Path, out: Path) -> None:
    """jupyter-book on the staged tree, zero warnings (as `make book`)."""
    command = [
        str(Path(sys.executable).with_name("jupyter-book")),
        "build",
        str(src),
        "--path-output",
        str(out),
        "-W",
        "-n",
        "--keep-going",
    ]
    subprocess.run(command, check=True)


def finish(out: Path, src: Path, chapters: list[Path]) -> Path:
    """Downloads without outputs or solutions; slides without solutions."""
    html = out / "_build" / "html"
    for path in chapters:
        download = html / "_sources" / "notebooks" / path.name
        if download.is_file() and NOTEBOOK_NAME.match(path.name):
            download.write_bytes(notebook_bytes(student_notebook(read(path))))
    if slides.main([str(html / "slides"), "--executed", str(src / "notebooks")]):
        raise RuntimeError("the slides of the student edition failed")
    return html


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executed", type=Path, default=EXECUTED_NOTEBOOKS,
                        help="the full build's executed notebooks")
    parser.add_argument("--out", type=Path, default=NO_SOLUTIONS,
                        help="output folder (the site goes to OUT/_build/html)")
    args = parser.parse_args(argv)
    start = time.monotonic()
    out = args.out.resolve()
    shutil.rmtree(out / "_build", ignore_errors=True)
    try:
        chapters = stage(out / "src", args.executed)
    except StaleBuild as error:
        print(error, file=sys.stderr)
        return 1
    build(out / "src", out)
    html = finish(out, out / "src", chapters)
    print(f"student edition: {html}/index.html "
          f"({time.monotonic() - start:.0f} s, nothing executed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
