"""The chapter registry: every executable page of the book, derived from ``_toc.yml``.

A **chapter** is a notebook ``notebooks/NN_topic.ipynb`` listed in ``_toc.yml``. Its
number is its ``NN`` (and must be its place among the chapters of the table of
contents), its part is the caption of the ``_toc.yml`` part that lists it, its title is
its notebook's first heading. A **guide** is an unnumbered notebook page,
``notebooks/topic.ipynb`` (no number: the reading paths, the practitioner's pages): it
is executed, synced and given a Colab edition like a chapter, but has no exercises,
student edition, hand-out or slides. Two settings come from the notebook's own
metadata, so that a page carries them:

``"book": {"budget_seconds": 300}``
    how long the chapter may take to execute alone on two cores (default
    :data:`DEFAULT_BUDGET`, the guide's 60 s); a chapter granted more runs in the
    build's priority lane (``bookkit.execute``), longest budget first.
``"book": {"session": true}``
    the chapter has a module of its own in ``book/course/schedule.md``, whose prompts
    become slides of its deck (``bookkit.editions.slides``).

Nothing else in the machinery lists chapters: adding Chapter 13 means a notebook, a
``_toc.yml`` line and a test file ``tests/chapters/test_13_<topic>.py``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from bookkit.config import toc
from bookkit.notebook import GUIDE_NAME, NOTEBOOK_NAME, read
from bookkit.paths import CHAPTER_TESTS, NOTEBOOKS, ROOT

DEFAULT_BUDGET = 60  # seconds, alone on two cores (the guide's rule)


@dataclass(frozen=True)
class Chapter:
    number: int | None  # None for a guide
    stem: str  # NN_topic, e.g. 06_rope_in_code; a guide's is its topic
    part: str  # the _toc.yml caption, "Part III: Rotary position embedding"
    title: str  # the notebook's first heading
    budget: int  # seconds, alone on two cores
    session: bool  # has a module of its own in the course schedule

    @property
    def path(self) -> Path:
        return NOTEBOOKS / f"{self.stem}.ipynb"

    @property
    def name(self) -> str:
        """The notebook's file name, ``NN_topic.ipynb``."""
        return f"{self.stem}.ipynb"

    @property
    def topic(self) -> str:
        """The stem without its number, ``rope_in_code``."""
        return self.stem[3:] if self.is_chapter else self.stem

    @property
    def is_chapter(self) -> bool:
        return self.number is not None

    @property
    def lane(self) -> str:
        """``"priority"`` for a chapter granted more than the default budget."""
        return "priority" if self.budget > DEFAULT_BUDGET else "background"

    @property
    def test_file(self) -> Path:
        """Where the chapter's tests live."""
        return CHAPTER_TESTS / f"test_{self.stem}.py"


def _toc_notebooks() -> list[tuple[str, str]]:
    """(file, part caption) of every notebooks/ entry of _toc.yml, in order."""
    found = []

    def walk(entries: list[dict], caption: str) -> None:
        for entry in entries:
            file = str(entry.get("file", ""))
            if file.startswith("notebooks/"):
                found.append((file, caption))
            for key in ("chapters", "sections"):
                walk(entry.get(key, []), caption)

    for part in toc().get("parts", []):
        walk(part.get("chapters", []), part.get("caption", ""))
    return found


def _page(path: Path, number: int | None, part: str) -> Chapter:
    nb = read(path)
    settings = nb.metadata.get("book", {})
    heading = nb.cells[0].source.split("\n", 1)[0] if nb.cells else ""
    return Chapter(
        number=number,
        stem=path.stem,
        part=part,
        title=heading.removeprefix("# ").strip(),
        budget=int(settings.get("budget_seconds", DEFAULT_BUDGET)),
        session=bool(settings.get("session", False)),
    )


@functools.cache
def pages() -> tuple[Chapter, ...]:
    """Every executable page, chapters and guides, in the order of the table of
    contents."""
    out, number = [], 0
    for file, part in _toc_notebooks():
        path = ROOT / f"{file}.ipynb"
        if not path.is_file():
            raise ValueError(f"_toc.yml lists {file}, but {path} does not exist")
        if NOTEBOOK_NAME.match(path.name):
            number += 1
            if int(path.name[:2]) != number:
                raise ValueError(
                    f"_toc.yml lists {file} as chapter {number}: renumber the file or "
                    "the table of contents so that NN is the chapter's place"
                )
            out.append(_page(path, number, part))
        elif GUIDE_NAME.match(path.name):
            out.append(_page(path, None, part))
        else:
            raise ValueError(
                f"_toc.yml lists {file}: chapters are notebooks/NN_topic.ipynb, "
                "guides notebooks/topic.ipynb (lower case, digits, underscores)"
            )
    listed = {c.stem for c in out}
    unlisted = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb") if p.stem not in listed)
    if unlisted:
        raise ValueError(
            f"notebooks/ holds {unlisted}, which _toc.yml does not list: add them to "
            "_toc.yml or move them out of notebooks/"
        )
    return tuple(out)


def chapters() -> tuple[Chapter, ...]:
    """Every chapter, by number."""
    return tuple(c for c in pages() if c.is_chapter)


def guides() -> tuple[Chapter, ...]:
    """Every guide (unnumbered notebook page), in the order of the table of contents."""
    return tuple(c for c in pages() if not c.is_chapter)


def page_paths() -> list[Path]:
    """Every executable page's notebook: chapters and guides."""
    return [c.path for c in pages()]


def notebook_paths() -> list[Path]:
    """The chapter notebooks, in chapter order."""
    return [c.path for c in chapters()]


def chapter(key: int | str) -> Chapter:
    """One page: a chapter by number (6), two-digit string ("06") or stem; a guide by
    stem."""
    for c in pages():
        names = {c.stem, c.name} | (
            {c.number, f"{c.number:02d}"} if c.is_chapter else set()
        )
        if key in names:
            return c
    raise KeyError(f"no chapter {key!r}; pages: {[c.stem for c in pages()]}")
