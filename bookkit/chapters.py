"""The chapter registry: every chapter of the book, derived from ``_toc.yml``.

A chapter is a notebook ``notebooks/NN_topic.ipynb`` listed in ``_toc.yml``. Its number
is its ``NN`` (and must be its place in the table of contents), its part is the caption
of the ``_toc.yml`` part that lists it, its title is its notebook's first heading.
Two settings come from the notebook's own metadata, so that a chapter carries them:

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
from bookkit.notebook import NOTEBOOK_NAME, read
from bookkit.paths import CHAPTER_TESTS, NOTEBOOKS, ROOT

DEFAULT_BUDGET = 60  # seconds, alone on two cores (the guide's rule)


@dataclass(frozen=True)
class Chapter:
    number: int
    stem: str  # NN_topic, e.g. 06_rope_in_code
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
        return self.stem[3:]

    @property
    def lane(self) -> str:
        """``"priority"`` for a chapter granted more than the default budget."""
        return "priority" if self.budget > DEFAULT_BUDGET else "background"

    @property
    def test_file(self) -> Path:
        """Where the chapter's tests live."""
        return CHAPTER_TESTS / f"test_{self.stem}.py"


def _toc_chapters() -> list[tuple[str, str]]:
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


@functools.cache
def chapters() -> tuple[Chapter, ...]:
    """Every chapter, in the order of the table of contents (= by number)."""
    out = []
    for k, (file, part) in enumerate(_toc_chapters(), start=1):
        path = ROOT / f"{file}.ipynb"
        if not NOTEBOOK_NAME.match(path.name):
            raise ValueError(
                f"_toc.yml lists {file}: chapters are notebooks/NN_topic.ipynb"
            )
        if int(path.name[:2]) != k:
            raise ValueError(
                f"_toc.yml lists {file} as chapter {k}: renumber the file or the "
                "table of contents so that NN is the chapter's place"
            )
        if not path.is_file():
            raise ValueError(f"_toc.yml lists {file}, but {path} does not exist")
        nb = read(path)
        settings = nb.metadata.get("book", {})
        heading = nb.cells[0].source.split("\n", 1)[0] if nb.cells else ""
        out.append(
            Chapter(
                number=k,
                stem=path.stem,
                part=part,
                title=heading.removeprefix("# ").strip(),
                budget=int(settings.get("budget_seconds", DEFAULT_BUDGET)),
                session=bool(settings.get("session", False)),
            )
        )
    unlisted = sorted(
        p.name for p in NOTEBOOKS.glob("*.ipynb") if p.stem not in {c.stem for c in out}
    )
    if unlisted:
        raise ValueError(
            f"notebooks/ holds {unlisted}, which _toc.yml does not list: add them to "
            "_toc.yml or move them out of notebooks/"
        )
    return tuple(out)


def notebook_paths() -> list[Path]:
    """The chapter notebooks, in chapter order."""
    return [c.path for c in chapters()]


def chapter(key: int | str) -> Chapter:
    """One chapter, by number (6), two-digit string ("06") or stem."""
    for c in chapters():
        if key in (c.number, c.stem, f"{c.number:02d}", c.name):
            return c
    raise KeyError(f"no chapter {key!r}; chapters: {[c.stem for c in chapters()]}")


def by_name() -> dict[str, Chapter]:
    """Chapters by notebook file name (``NN_topic.ipynb``)."""
    return {c.name: c for c in chapters()}
