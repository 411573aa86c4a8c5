"""Reading times per section (bookkit/measure/prose_stats.py) and the pure functions of
the reading paths and chapter cards (bookkit/sphinx/reading_paths.py); then the paths
the introduction shows, timed by the rule: the evening path fits in 60 minutes.

The rendering on a built book is tested in tests/site/test_reading_paths_site.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from docutils import nodes
from docutils.core import publish_doctree
from hypothesis import given
from hypothesis import strategies as st
from myst_parser.parsers.docutils_ import Parser

from bookkit.chapters import DEFAULT_BUDGET, page_paths
from bookkit.measure import prose_stats
from bookkit.paths import BOOK, NOTEBOOKS, ROOT
from bookkit.sphinx import reading_paths as rp

EXTENSIONS = prose_stats.myst_extensions()
INTRO = BOOK / "intro.md"


def notebook_file(tmp_path: Path, cells: list[tuple[str, str, dict]],
                  name: str = "99_sample.ipynb") -> Path:
    make = {"md": nbformat.v4.new_markdown_cell, "code": nbformat.v4.new_code_cell}
    nb = nbformat.v4.new_notebook()
    for kind, source, metadata in cells:
        nb.cells.append(make[kind](source, metadata=metadata))
    path = tmp_path / name
    nbformat.write(nb, path)
    return path


FIGURE = {"mystnb": {"figure": {"caption": "c", "name": "fig-99-a"}}}


def sample(tmp_path: Path) -> Path:
    """Counts known by construction; headings in a fence and a directive are text."""
    return notebook_file(tmp_path, [
        ("md", "# Title\n\n" + "word " * 100, {}),
        ("md", "## First part\n\n" + "word " * 200 + "\n\n$$\na\n$$\n", {}),
        ("code", "\n".join(["x = 1"] * 24), FIGURE),
        ("md", "### A detail\n\n```python\n# not a heading\n```\n\n" + "word " * 50
         + "\n\n:::{note}\n## not one either\n:::\n", {}),
        ("code", "\n".join(["y = 2"] * 48), {"tags": ["hide-input"]}),
        ("md", "(sec-99-second)=\n## Second part: $R_m$ and `inv_freq`\n\n"
         + "word " * 300 + "\n\n## Summary\n\n" + "word " * 100, {}),
        ("code", "\n".join(["z = 3"] * 12), {}),
        ("md", "## Exercises\n\n" + "word " * 400, {}),
        ("md", "## Summary\n\nA second heading with a repeated title.", {}),
    ])


def test_sections_cover_their_subsections_and_skip_fenced_hashes(tmp_path) -> None:
    sections = prose_stats.section_stats(sample(tmp_path), EXTENSIONS)
    titles = [(s.level, s.title) for s in sections]
    assert titles == [
        (1, "Title"), (2, "First part"), (3, "A detail"),
        (2, "Second part: $R_m$ and `inv_freq`"), (2, "Summary"), (2, "Exercises"),
        (2, "Summary"),
    ]
    first, detail = sections[1], sections[2]
    # prose words count the heading's words too: "A detail" (2), 50 words, and the
    # note's 5 tokens (":::{note}", "not", "one", "either", ":::"); the fenced line
    # is code, not prose
    assert detail.stats["prose"] == 2 + 50 + 5
    # First part: its 202 words, 1 equation, 24 lines and 1 figure, plus A detail's
    assert (first.stats["prose"], first.stats["lines"], first.stats["figures"],
            first.stats["equations"]) == (202 + 57, 24, 1, 1)
    # 259 / 100 + 24 / 24 + 1 + 1 = 5.59, rounded
    assert rp.section_minutes(first) == 6
    second = sections[3]
    assert second.labels == ("sec-99-second",)  # the target itself is not a word
    assert (second.stats["prose"], second.stats["lines"]) == (5 + 300, 0)
    assert sections[4].stats["lines"] == 12  # the code after "## Summary" is its own
    # the title section counts everything, its main text stops at the exercises
    whole = sections[0].stats
    assert whole["prose"] == 101 + 259 + 305 + 101 + 401 + 8
    assert whole["prose_main"] == 101 + 259 + 305 + 101
    assert whole["lines"] == 24 + 12  # the hide-input cell is folded


def test_anchors_are_the_ids_the_site_gives(tmp_path) -> None:
    """Independent reference: MyST's own docutils parser builds the sections."""
    sections = prose_stats.section_stats(sample(tmp_path), EXTENSIONS)
    anchors = [s.anchor for s in sections]
    assert anchors == ["title", "first-part", "a-detail",
                       "second-part-r-m-and-inv-freq", "summary", "exercises", None]
    titles = ["Many planes: the RoPE matrix $R_m$", "Why `inv_freq` *really* matters",
              "Poincaré's bound, and $O(1/\\Delta)$", "A cos/sin cache", "bfloat16"]
    text = "# T\n\n" + "".join(f"## {t}\n\nText.\n\n" for t in titles)
    doctree = publish_doctree(text, parser=Parser(), settings_overrides={
        "myst_enable_extensions": sorted(EXTENSIONS), "report_level": 5})
    expected = [s["ids"][0] for s in doctree.findall(nodes.section)]
    for title, want in zip(titles, expected, strict=True):
        (heading, _), = [p for p in prose_stats.split_markdown(f"## {title}\n")
                         if p[0]]
        assert heading[2] == want, title


@given(st.lists(st.sampled_from(["# A\n", "## B c\n", "text\n", "```\n# x\n```\n",
                                 "(lab)=\n", "$$\n# y\n$$\n", "\n"]), max_size=12))
def test_split_markdown_keeps_every_line(parts: list[str]) -> None:
    text = "".join(parts)
    pieces = prose_stats.split_markdown(text, EXTENSIONS)
    assert "".join(chunk for _, chunk in pieces) == text
    assert pieces[0][0] is None and all(h is not None for h, _ in pieces[1:])


def test_find_section_by_anchor_or_label(tmp_path) -> None:
    sections = prose_stats.section_stats(sample(tmp_path), EXTENSIONS)
    labelled = prose_stats.find_section(sections, "sec-99-second")
    assert labelled.title.startswith("Second")
    assert prose_stats.find_section(sections, "a-detail").level == 3
    with pytest.raises(KeyError, match="no heading with the anchor or label 'nowhere'"):
        prose_stats.find_section(sections, "nowhere")
    with pytest.raises(TypeError):
        prose_stats.split_markdown(None)


def test_find_label_across_notebooks(tmp_path) -> None:
    path = sample(tmp_path)
    other = notebook_file(tmp_path, [("md", "# Other\n\n## Plain\n", {})],
                          "other.ipynb")
    doc, section = rp.find_label("sec-99-second", {"notebooks/a": path,
                                                   "notebooks/b": other})
    assert doc == "notebooks/a" and section.anchor == "second-part-r-m-and-inv-freq"
    with pytest.raises(KeyError, match="no heading"):
        rp.find_label("sec-missing", {"notebooks/b": other})


@pytest.mark.parametrize("line, target", [
    ("notebooks/05_deriving_rope", rp.Target("notebooks/05_deriving_rope", None, None)),
    ("/notebooks/05_deriving_rope.ipynb#summary | the end",
     rp.Target("notebooks/05_deriving_rope", "summary", None, "the end")),
    ("book/notation.md", rp.Target("book/notation", None, None)),
    ("sec-05-complex-form |  with  a {term}`note` ",
     rp.Target(None, None, "sec-05-complex-form", "with a {term}`note`")),
])
def test_parse_target(line: str, target: rp.Target) -> None:
    assert rp.parse_target(line) == target


@pytest.mark.parametrize("line", ["two words", "#summary", "a#b", "notebooks/x#a b",
                                  "| only a note", ""])
def test_parse_target_rejects_what_is_not_a_target(line: str) -> None:
    with pytest.raises(ValueError, match="is not a target"):
        rp.parse_target(line)


def test_prerequisites_link_pages_and_keep_words() -> None:
    assert rp.prerequisite_target("notebooks/03_deriving_sinusoidal") == rp.Target(
        "notebooks/03_deriving_sinusoidal", None, None)
    assert rp.prerequisite_target("book/notation#complex-numbers").anchor == (
        "complex-numbers")
    for words in ("Euler's formula", "matrix products", "Python", "a/b testing"):
        assert rp.prerequisite_target(words) is None


@pytest.mark.parametrize("minutes, text", [
    (0, "under 1 min"), (1, "1 min"), (59, "59 min"), (60, "1 h 00 min"),
    (185, "3 h 05 min")])
def test_duration_text(minutes: int, text: str) -> None:
    assert rp.duration_text(minutes) == text


@pytest.mark.parametrize("budget, text", [
    (DEFAULT_BUDGET, "runs in under a minute on two CPU cores"),
    (30, "runs in under a minute on two CPU cores"),
    (61, "runs in under 2 minutes on two CPU cores"),
    (180, "runs in under 3 minutes on two CPU cores"),
    (300, "runs in under 5 minutes on two CPU cores")])
def test_run_time_text(budget: int, text: str) -> None:
    assert rp.run_time_text(budget) == text


@pytest.mark.parametrize("bad", [0, -5, 1.5, True, "60"])
def test_wordings_reject_bad_numbers(bad) -> None:
    with pytest.raises(ValueError):
        rp.run_time_text(bad)
    if bad != 0:
        with pytest.raises(ValueError):
            rp.duration_text(bad)


def test_item_label() -> None:
    assert rp.item_label("RoPE in code", (6,), None, None) == "Chapter 6: RoPE in code"
    assert rp.item_label("RoPE in code", (6,), "Partial rotary", (6, 5, 2)) == (
        "Chapter 6, §6.5.2 Partial rotary")
    assert rp.item_label("A guide", None, None, None) == "A guide"
    assert rp.item_label("A guide", None, "Turning", None) == "A guide: Turning"


# The introduction's paths, timed by the rule -------------------------------------


def intro_paths() -> list[tuple[dict[str, str], list[str]]]:
    """(options, target lines) of every {reading-path} of the introduction."""
    found = []
    for block in re.findall(r"^```\{reading-path\}\n(.*?)^```", INTRO.read_text(),
                            re.M | re.S):
        lines = block.splitlines()
        options = dict(re.match(r":([\w-]+):\s*(.*)", x).groups()
                       for x in lines if x.startswith(":"))
        targets = [x for x in lines if x.strip() and not x.startswith(":")]
        found.append((options, targets))
    return found


def notebook_docs() -> dict[str, Path]:
    return {f"notebooks/{p.stem}": p for p in page_paths()}


def timed(lines: list[str]) -> list[tuple[str, dict[str, int], int]]:
    """(page, counts, minutes) of each target, as the directive times it."""
    docs, out = notebook_docs(), []
    for line in lines:
        target = rp.parse_target(line)
        if target.label:
            doc, section = rp.find_label(target.label, docs)
        else:
            doc = target.doc
            assert doc in docs, f"intro.md: {doc} is not a page of the book"
            if target.anchor is None:
                stats = prose_stats.chapter_stats(docs[doc])
                out.append((doc, {k.removesuffix("_main"): v for k, v in stats.items()
                                  if k.endswith("_main")}, rp.page_minutes(docs[doc])))
                continue
            section = prose_stats.find_section(list(rp.sections(docs[doc])),
                                               target.anchor)
        assert section.anchor, f"{line}: a repeated heading, use a label"
        out.append((doc, section.stats, rp.section_minutes(section)))
    return out


def test_the_introduction_shows_three_paths_with_budgets() -> None:
    paths = intro_paths()
    assert len(paths) == 3, "the evening, the afternoon and the whole book"
    assert [options.get("budget") for options, _ in paths] == ["60", "180", None]
    assert "all-pages" in paths[2][0] and not paths[2][1], (
        "the whole-book path lists every page itself (:all-pages:)")


def test_the_evening_path_takes_at_most_an_hour() -> None:
    """Done when: the beginner's path takes <= 60 minutes by the book's rule, both as
    the sum of the minutes shown and as the rule applied to the whole assignment."""
    _, lines = intro_paths()[0]
    items = timed(lines)
    shown = sum(minutes for *_, minutes in items)
    together = {k: sum(counts[k] for _, counts, _ in items)
                for k in ("prose", "lines", "figures", "equations")}
    by_rule = prose_stats.reading_minutes(together, main=False)
    assert shown <= 60 and by_rule <= 60, (shown, by_rule)
    pages_on_path = {doc for doc, *_ in items}
    assert "notebooks/rope_in_one_evening" in pages_on_path
    assert len(items) >= 4, "the evening path is a handful of sections, not one page"


def test_the_afternoon_path_takes_two_to_three_hours() -> None:
    _, lines = intro_paths()[1]
    total = sum(minutes for *_, minutes in timed(lines))
    assert 120 <= total <= 180, total


def test_every_prerequisite_link_resolves() -> None:
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        entries = nbformat.read(path, as_version=4).metadata.get("book", {}).get(
            "prerequisites", [])
        for entry in entries:
            target = rp.prerequisite_target(entry)
            if target is None:
                continue
            source = [ROOT / f"{target.doc}{s}" for s in (".ipynb", ".md")]
            assert any(p.is_file() for p in source), f"{path.name}: {entry}"
            if target.anchor and source[0].is_file():
                prose_stats.find_section(list(rp.sections(source[0])), target.anchor)
