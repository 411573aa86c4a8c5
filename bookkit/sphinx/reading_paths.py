"""Sphinx extension: reading paths and chapter cards, timed by the book's reading rule.

Every minute this extension shows is computed at build time from the notebooks, by
the rule of ``bookkit/measure/prose_stats.py`` (words / 100 + visible code lines / 24
+ 1 per figure + 1 per display equation, rounded), so the times never drift from the
text.

``{reading-path}`` (the introduction's reading guide)
    One target per line: a page (``notebooks/05_deriving_rope``: its main text, up to
    its exercises), a section of a page by its anchor on the site
    (``notebooks/05_deriving_rope#summary``; ``python -m bookkit.measure.prose_stats
    --sections`` lists them) or a section by its ``(label)=`` target
    (``sec-05-complex-form``), optionally followed by ``| a note`` (MyST inline
    markup). It renders a numbered list, each entry linked with its chapter and section
    number, title and minutes, then the total. ``:budget: 60`` makes a total above 60
    minutes a build warning (and so an error under ``-W``); ``:all-pages:`` lists every
    chapter and guide of the registry, in the order of the table of contents (the whole
    book, which then never misses a new page).

``{reading-times}`` (the schedule's table)
    A table of every chapter of the registry: its words of prose, visible code lines,
    figures, displayed equations and reading time by the rule (the main text, up to its
    exercises).

The chapter card (a transform on every notebook page)
    Under the title of every chapter and guide: its reading time (main text), its run
    time (the registry's budget, ``bookkit.chapters``: "runs in under a minute on two
    CPU cores" for the default 60 s, else the minutes it is granted) and its
    prerequisites, from the notebook's metadata ``"book": {"prerequisites": [...]}``:
    a page or ``page#anchor`` entry becomes a link, any other entry is shown as text.

Titles and numbers ("Chapter 5, §5.6") are those of the built site, looked up when the
pages are written; the minutes are computed when the page holding them is read, and the
notebooks they come from are recorded as its dependencies, so an edit to a chapter
re-times the introduction. The pure functions (parsing, timing, wording) are unit-tested
in ``tests/tools/test_reading_paths.py``, the rendering on a fixture book in
``tests/site/test_reading_paths_site.py``.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.transforms import SphinxTransform
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from bookkit.chapters import DEFAULT_BUDGET
from bookkit.chapters import pages as registry_pages
from bookkit.measure import prose_stats
from bookkit.notebook import BADGE_MARK, read

logger = logging.getLogger(__name__)

RULE_LABEL = "reading-rule"  # the section of the introduction that states the rule
CARD_CLASS = "chapter-card"
PATH_CLASS = "reading-path"
DOC = re.compile(r"^[A-Za-z0-9_][\w-]*(?:/[\w-]+)+$")  # notebooks/05_deriving_rope
LABEL = re.compile(r"^[\w][\w.:-]*$")
SUFFIXES = (".ipynb", ".md")
STATIC = Path(__file__).parent / "static"
CSS = "reading_paths.css"


# Pure functions ------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """One entry of a reading path: a page, a page's section, or a labelled section."""

    doc: str | None  # a page, such as notebooks/NN_topic; None for a bare label
    anchor: str | None  # a section's anchor (its id on the site) or label on that page
    label: str | None  # a (label)= target anywhere in the book
    note: str = ""


def parse_target(line: str) -> Target:
    """``page``, ``page#anchor`` or ``label``, optionally followed by ``| note``."""
    if not isinstance(line, str):
        raise TypeError(f"a target is a line of text, got {type(line).__name__}")
    text, _, note = line.partition("|")
    text, note = text.strip(), " ".join(note.split())
    doc, hash_, anchor = text.partition("#")
    doc = doc.lstrip("/")
    for suffix in SUFFIXES:
        doc = doc.removesuffix(suffix)
    if DOC.match(doc) and (not hash_ or LABEL.match(anchor)):
        return Target(doc, anchor or None, None, note)
    if not hash_ and LABEL.match(text):
        return Target(None, None, text, note)
    raise ValueError(
        f"{line.strip()!r} is not a target: write a page (notebooks/05_deriving_rope), "
        "a section (notebooks/05_deriving_rope#summary, the heading's anchor) or a "
        "label (sec-05-complex-form), optionally followed by '| a note'"
    )


def prerequisite_target(entry: str) -> Target | None:
    """A prerequisite that names a page or a page's section, else None (plain text)."""
    if not isinstance(entry, str):
        raise TypeError(f"a prerequisite is a string, got {type(entry).__name__}")
    text = entry.strip()
    if " " in text or "/" not in text or "|" in text:
        return None
    try:
        target = parse_target(text)
    except ValueError:
        return None
    return target if target.doc else None


@functools.lru_cache(maxsize=256)
def _sections(path: Path, mtime_ns: int) -> tuple[prose_stats.Section, ...]:
    return tuple(prose_stats.section_stats(path))


def sections(path: Path) -> tuple[prose_stats.Section, ...]:
    """The headings of a notebook with their counts (cached until the file changes)."""
    return _sections(path, path.stat().st_mtime_ns)


def page_minutes(path: Path) -> int:
    """Reading time of a page's main text (up to its exercises), by the rule."""
    return prose_stats.reading_minutes(prose_stats.chapter_stats(path))


def section_minutes(section: prose_stats.Section) -> int:
    """Reading time of one section, its subsections included, by the rule."""
    return prose_stats.reading_minutes(section.stats, main=False)


def find_label(label: str, paths: dict[str, Path]) -> tuple[str, prose_stats.Section]:
    """(page, section) of the heading that carries the ``(label)=`` target."""
    found = [
        (doc, section)
        for doc, path in sorted(paths.items())
        for section in sections(path)
        if label in section.labels
    ]
    if len(found) != 1:
        where = "no heading" if not found else f"{len(found)} headings"
        raise KeyError(f"{where} of the notebooks carry the label {label!r}")
    return found[0]


def duration_text(minutes: int) -> str:
    """"under 1 min", "57 min", "2 h 05 min"."""
    if isinstance(minutes, bool) or not isinstance(minutes, int) or minutes < 0:
        raise ValueError(f"minutes must be a non-negative integer, got {minutes!r}")
    if minutes == 0:
        return "under 1 min"
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def run_time_text(budget_seconds: int) -> str:
    """What the card says about a chapter's run time, from its budget in seconds."""
    if isinstance(budget_seconds, bool) or not isinstance(budget_seconds, int) or (
        budget_seconds <= 0
    ):
        raise ValueError(
            f"a budget is a positive number of seconds, got {budget_seconds!r}"
        )
    if budget_seconds <= 60:
        return "runs in under a minute on two CPU cores"
    return f"runs in under {math.ceil(budget_seconds / 60)} minutes on two CPU cores"


def item_label(
    doc_title: str, chapter: tuple[int, ...] | None, section_title: str | None,
    section: tuple[int, ...] | None,
) -> str:
    """How an entry names what it links to: "Chapter 5: Title", "Chapter 5, §5.6
    Section", a guide's "Title" or "Title: Section"."""
    if section_title is None:
        return f"Chapter {chapter[0]}: {doc_title}" if chapter else doc_title
    if section:
        number = ".".join(map(str, section))
        prefix = f"Chapter {section[0]}, " if len(section) > 1 else ""
        return f"{prefix}§{number} {section_title}"
    return f"{doc_title}: {section_title}"


# Nodes ---------------------------------------------------------------------------


class reading_path(nodes.General, nodes.Element):  # noqa: N801 - docutils naming
    """A reading path: ``reading_item`` children, then the total (``total`` minutes)."""


class reading_item(nodes.General, nodes.Element):  # noqa: N801
    """One entry: ``doc``, ``anchor`` (None for a page), ``minutes``; children are the
    note's inline nodes."""


class chapter_card(nodes.General, nodes.Element):  # noqa: N801
    """Reading time (``minutes``), run time (``run_time``) and ``prerequisites`` (a
    list of (doc, anchor) pairs and plain strings) of a notebook page."""


def notebook_docs(env) -> dict[str, Path]:
    """Every notebook document of the book and its source file."""
    out = {}
    for doc in env.found_docs:
        path = Path(env.doc2path(doc))
        if path.suffix == ".ipynb":
            out[doc] = path
    return out


class ReadingPath(SphinxDirective):
    has_content = True
    option_spec = {"budget": directives.positive_int, "all-pages": directives.flag}

    def lines(self) -> list[str]:
        """The targets: the directive's lines, or with ``:all-pages:`` every page."""
        if "all-pages" in self.options:
            return [f"notebooks/{page.stem}" for page in registry_pages()]
        return list(self.content)

    def run(self) -> list[nodes.Node]:
        notebooks = notebook_docs(self.env)
        path_node = reading_path(classes=[PATH_CLASS])
        total = 0
        for offset, line in enumerate(self.lines()):
            if not line.strip():
                continue
            lineno = self.content_offset + offset + 1
            try:
                target = parse_target(line)
                doc, anchor, minutes = self._time(target, notebooks)
            except (ValueError, KeyError) as error:
                logger.warning(f"reading-path: {error}", location=(self.env.docname,
                                                                   lineno))
                continue
            item = reading_item(doc=doc, anchor=anchor, minutes=minutes)
            if target.note:
                inline, messages = self.parse_inline(target.note, lineno=lineno)
                item.extend(inline + messages)
            path_node += item
            total += minutes
        path_node["total"] = total
        budget = self.options.get("budget")
        if budget is not None and total > budget:
            logger.warning(
                f"reading-path: {total} minutes by the reading rule, over its budget "
                f"of {budget}: drop or shorten an entry", location=self.get_location())
        return [path_node]

    def _time(self, target: Target, notebooks: dict[str, Path]
              ) -> tuple[str, str | None, int]:
        if target.label is not None:
            doc, section = find_label(target.label, notebooks)
        else:
            doc = target.doc
            if doc not in notebooks:
                raise KeyError(f"{doc!r} is not a notebook page of the book")
            if target.anchor is None:
                self.env.note_dependency(str(notebooks[doc]))
                return doc, None, page_minutes(notebooks[doc])
            section = prose_stats.find_section(list(sections(notebooks[doc])),
                                               target.anchor)
        if section.anchor is None:
            raise KeyError(f"the heading {section.title!r} repeats an earlier one, so "
                           "its anchor is not known: give it a (label)= and use that")
        self.env.note_dependency(str(notebooks[doc]))
        return doc, section.anchor, section_minutes(section)


def reading_time_rows() -> list[list[str]]:
    """One row per chapter: number and title, words, code lines, figures, equations,
    minutes (the rule's inputs and result, for the main text)."""
    rows = []
    for page in registry_pages():
        if not page.is_chapter:
            continue
        stats = prose_stats.chapter_stats(page.path)
        rows.append([f"{page.number}. {page.title}", f"{stats['prose_main']:,}",
                     f"{stats['lines_main']:,}", str(stats["figures_main"]),
                     str(stats["equations_main"]),
                     f"{prose_stats.reading_minutes(stats)} min"])
    return rows


READING_TIME_HEADER = ["chapter", "words", "code lines", "figures", "equations",
                       "reading time"]


class ReadingTimes(SphinxDirective):
    """The schedule's reading-time table, computed from the notebooks."""

    def run(self) -> list[nodes.Node]:
        for page in registry_pages():
            if page.is_chapter:
                self.env.note_dependency(str(page.path))
        rows = [READING_TIME_HEADER, *reading_time_rows()]
        table = nodes.table(classes=["reading-times"])
        group = nodes.tgroup(cols=len(READING_TIME_HEADER))
        table += group
        group += [nodes.colspec(colwidth=1) for _ in READING_TIME_HEADER]
        for part, body in ((nodes.thead(), rows[:1]), (nodes.tbody(), rows[1:])):
            for cells in body:
                row = nodes.row()
                for text in cells:
                    row += nodes.entry("", nodes.paragraph(text=text))
                part += row
            group += part
        return [table]


def _card_anchor(section: nodes.section) -> int:
    """Where the card goes in the page's top section: after the Colab badge, else
    after the title."""
    for k, child in enumerate(section.children):
        raws = [child] if isinstance(child, nodes.raw) else child.findall(nodes.raw)
        if any(BADGE_MARK in raw.astext() for raw in raws):
            return k + 1
    return 1


class ChapterCard(SphinxTransform):
    """Put a card under the title of every notebook page."""

    default_priority = 500

    def apply(self, **kwargs) -> None:
        docname = self.env.docname
        path = Path(self.env.doc2path(docname))
        if path.suffix != ".ipynb":
            return
        top = next(iter(self.document.findall(nodes.section)), None)
        if top is None:
            return
        # The page's own metadata, as the registry reads it (bookkit.chapters), so that
        # a book built from another folder (a test's fixture) gets its own cards.
        settings = read(path).metadata.get("book", {})
        budget = int(settings.get("budget_seconds", DEFAULT_BUDGET))
        entries = settings.get("prerequisites", [])
        prerequisites = []
        for entry in entries:
            target = prerequisite_target(str(entry))
            if target is None:
                prerequisites.append(str(entry))
            else:
                prerequisites.append((target.doc, target.anchor))
        card = chapter_card(
            classes=[CARD_CLASS], minutes=page_minutes(path),
            run_time=run_time_text(budget), prerequisites=prerequisites,
        )
        top.insert(_card_anchor(top), card)


# Resolution (when pages are written) ---------------------------------------------


def _title_nodes(env, doc: str, section_id: str | None) -> list[nodes.Node]:
    """A page's title, or a section's as the page's table of contents holds it."""
    if section_id is None:
        title = env.titles.get(doc)
        return [c.deepcopy() for c in title.children] if title else [nodes.Text(doc)]
    toc = env.tocs.get(doc)
    if toc is not None:
        for ref in toc.findall(nodes.reference):
            if ref.get("anchorname") == f"#{section_id}":
                return [c.deepcopy() for c in ref.children]
    return []


def entry_nodes(app, fromdoc: str, doc: str, anchor: str | None
                ) -> tuple[nodes.reference, str]:
    """A link to a page or a section, named as :func:`item_label` names it; and the
    name as plain text."""
    env = app.env
    if doc not in env.all_docs:
        raise KeyError(f"{doc!r} is not a page of the book")
    uri = app.builder.get_relative_uri(fromdoc, doc)
    numbers = env.toc_secnumbers.get(doc, {})
    doc_title = env.titles[doc].astext() if doc in env.titles else doc
    if anchor is None:
        text = item_label(doc_title, numbers.get(""), None, None)
        link = nodes.reference("", "", internal=True, refuri=uri)
        if numbers.get(""):
            link += nodes.Text(text.removesuffix(doc_title))
        link.extend(_title_nodes(env, doc, None))
        return link, text
    title = _title_nodes(env, doc, anchor)
    if not title:
        raise KeyError(
            f"{doc} has no section with the anchor {anchor!r} (prose_stats and the "
            "site disagree on a heading)"
        )
    section_title = "".join(t.astext() for t in title)
    text = item_label(doc_title, numbers.get(""), section_title,
                      numbers.get(f"#{anchor}"))
    link = nodes.reference("", "", internal=True, refuri=f"{uri}#{anchor}")
    link += nodes.Text(text.removesuffix(section_title))
    link.extend(title)
    return link, text


def _rule_link(app, fromdoc: str, text: str) -> nodes.Node:
    """``text`` linked to the introduction's statement of the reading rule."""
    label = app.env.domaindata["std"]["labels"].get(RULE_LABEL)
    if not label:
        return nodes.Text(text)
    doc, label_id, _ = label
    uri = app.builder.get_relative_uri(fromdoc, doc) + f"#{label_id}"
    return nodes.reference("", text, internal=True, refuri=uri)


def _path_list(app, fromdoc: str, node: reading_path) -> list[nodes.Node]:
    items = nodes.enumerated_list(classes=[PATH_CLASS])
    for item in node.findall(reading_item):
        try:
            link, _ = entry_nodes(app, fromdoc, item["doc"], item["anchor"])
        except KeyError as error:
            logger.warning(f"reading-path: {error}", location=fromdoc)
            continue
        para = nodes.paragraph("", "")
        para += link
        para += nodes.Text(f" ({duration_text(item['minutes'])})")
        if item.children:
            para += nodes.Text(": ")
            para.extend(child.deepcopy() for child in item.children)
        items += nodes.list_item("", para)
    total = nodes.paragraph("", "", classes=[f"{PATH_CLASS}-total"])
    total += nodes.strong("", f"Total: {duration_text(node['total'])}")
    total += nodes.Text(" by the book's ")
    total += _rule_link(app, fromdoc, "reading-time rule")
    total += nodes.Text(".")
    return [items, total]


def _card(app, fromdoc: str, node: chapter_card) -> nodes.Node:
    fields = nodes.field_list(classes=[CARD_CLASS])

    def field(name: str, *body: nodes.Node) -> None:
        para = nodes.paragraph("", "")
        para.extend(body)
        fields.append(nodes.field("", nodes.field_name("", name),
                                  nodes.field_body("", para)))

    field("Reading time", nodes.Text(f"{duration_text(node['minutes'])} ("),
          _rule_link(app, fromdoc, "the reading-time rule"), nodes.Text(")"))
    run = node["run_time"]
    field("Run time", nodes.Text(run[0].upper() + run[1:]))
    if node["prerequisites"]:
        body: list[nodes.Node] = []
        for k, entry in enumerate(node["prerequisites"]):
            if k:
                body.append(nodes.Text("; "))
            if isinstance(entry, str):
                body.append(nodes.Text(entry))
                continue
            try:
                body.append(entry_nodes(app, fromdoc, entry[0], entry[1])[0])
            except KeyError as error:
                logger.warning(f"chapter card: {error}", location=fromdoc)
                body.append(nodes.Text(entry[0]))
        field("Prerequisites", *body)
    return nodes.container("", fields, classes=[CARD_CLASS])


def resolve(app, doctree: nodes.document, docname: str) -> None:
    for node in list(doctree.findall(reading_path)):
        node.replace_self(_path_list(app, docname, node))
    for node in list(doctree.findall(chapter_card)):
        node.replace_self(_card(app, docname, node))


def add_static(app) -> None:
    """The card's and the paths' style sheet (``static/reading_paths.css``)."""
    app.config.html_static_path.append(str(STATIC))
    app.add_css_file(CSS)


def setup(app):
    app.connect("builder-inited", add_static)
    app.add_node(reading_path)
    app.add_node(reading_item)
    app.add_node(chapter_card)
    app.add_directive("reading-path", ReadingPath)
    app.add_directive("reading-times", ReadingTimes)
    app.add_transform(ChapterCard)
    app.connect("doctree-resolved", resolve)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
