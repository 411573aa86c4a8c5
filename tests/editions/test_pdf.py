"""The printable edition (bookkit.editions.pdf): PDFs printed from the built site.

Printing the whole book takes minutes, so `make test` prints a sample (the introduction
and Chapter 1, and the book PDF of those two pages) into a temporary folder. After
`make pdf` (everything, into _build/html/pdf/), ``BOOK_PDF_ALL=1 pytest
tests/editions/test_pdf.py`` runs these tests on all of it.

The PDFs are read with poppler's ``pdfinfo`` and ``pdftotext`` (Debian's
``poppler-utils``, which .ci/run installs): page size and count, page numbers on every
page, each printed page's headings in the text layer, no raw TeX (``$$``, ``\\(``,
``\\[``), and links that point at the website or inside the PDF, never at the local
server the pages were printed from.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import unicodedata
from html.parser import HTMLParser
from pathlib import Path

import pytest

from bookkit.editions.pdf import BOOK_PDF, CHAPTER_DIR, book_pages, make_pdfs

pytestmark = [pytest.mark.site, pytest.mark.browser]

SAMPLE = ["book/intro.html", "notebooks/01_attention_cant_see_order.html"]
ALL = os.environ.get("BOOK_PDF_ALL") == "1"
A4 = (595, 842)  # points, rounded


def poppler(tool: str, *args: str) -> str:
    if not shutil.which(tool):
        pytest.fail(f"{tool} not found: `apt-get install poppler-utils` (.ci/run does)")
    return subprocess.run(
        [tool, *args], check=True, capture_output=True, text=True
    ).stdout


def info(pdf: Path) -> dict[str, str]:
    lines = poppler("pdfinfo", str(pdf)).splitlines()
    return {k.strip(): v.strip() for k, _, v in (ln.partition(":") for ln in lines)}


def pages_text(pdf: Path) -> list[str]:
    """The text layer, one string per page."""
    return poppler("pdftotext", "-layout", str(pdf), "-").split("\f")[:-1]


def squeeze(text: str) -> str:
    """Text compared without spacing, ligatures or typographic quotes."""
    text = unicodedata.normalize("NFKC", text).replace("’", "'").replace("‘", "'")
    return re.sub(r"\s+", "", text)


class Headings(HTMLParser):
    """The h1/h2 headings of a page's article, as runs of text between formulas."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.headings: list[list[str]] = []
        self.depth = 0  # inside <article>
        self.heading = False
        self.skip = 0  # inside math or a header link
        self.feed(text)

    def handle_starttag(self, tag, attrs) -> None:
        classes = dict(attrs).get("class") or ""
        if tag == "article":
            self.depth += 1
        elif self.depth and tag in ("h1", "h2"):
            self.heading = True
            self.headings.append([""])
        elif self.heading and ("math" in classes.split() or "headerlink" in classes):
            self.skip += 1
            self.headings[-1].append("")
        elif self.skip and tag == "span":
            self.skip += 1

    def handle_endtag(self, tag) -> None:
        if tag == "article":
            self.depth -= 1
        elif tag in ("h1", "h2"):
            self.heading = False
        elif self.skip and tag in ("span", "a"):
            self.skip -= 1

    def handle_data(self, data) -> None:
        if self.heading and not self.skip:
            self.headings[-1][-1] += data


def headings_of(page: Path) -> list[list[str]]:
    """Each heading's text runs (formulas left out: their glyphs are MathJax's)."""
    found = Headings(page.read_text()).headings
    return [[r for r in (squeeze(run) for run in h) if len(r) > 1] for h in found]


@pytest.fixture(scope="module")
def printed(site: Path, tmp_path_factory) -> tuple[list[str], Path]:
    """(pages printed, folder of their PDFs): everything after `make pdf`, else the
    sample, printed now."""
    if ALL:
        folder = site / "pdf"
        if not (folder / BOOK_PDF).is_file():
            pytest.fail(f"no {folder / BOOK_PDF}: run `make pdf`")
        return [p for _, p in book_pages()], folder
    folder = tmp_path_factory.mktemp("pdf")
    make_pdfs(site, folder, SAMPLE)
    return SAMPLE, folder


def chapters(pages: list[str]) -> list[str]:
    return [p for p in pages if p.startswith(CHAPTER_DIR)]


def pdf_of(folder: Path, page: str) -> Path:
    return folder / Path(page).with_suffix(".pdf").name


def test_one_pdf_per_chapter_and_one_for_the_book(printed) -> None:
    pages, folder = printed
    wanted = {pdf_of(folder, p).name for p in chapters(pages)} | {BOOK_PDF}
    assert {p.name for p in folder.glob("*.pdf")} == wanted
    if ALL:
        from bookkit.chapters import notebook_paths

        assert len(chapters(pages)) == len(notebook_paths())


def test_page_size_and_counts(printed) -> None:
    """A4; every chapter more than a page; the book at least all its chapters plus a
    title page and the contents (every page of the book starts on a new page)."""
    pages, folder = printed
    counts = {}
    for pdf in folder.glob("*.pdf"):
        meta = info(pdf)
        width, height = (round(float(x)) for x in meta["Page size"].split()[0:3:2])
        assert (width, height) == A4, f"{pdf.name}: {meta['Page size']}"
        counts[pdf.name] = int(meta["Pages"])
    chapter_pages = [counts[pdf_of(folder, p).name] for p in chapters(pages)]
    assert all(n >= 3 for n in chapter_pages), counts
    non_chapters = len(pages) - len(chapter_pages)
    assert counts[BOOK_PDF] >= sum(chapter_pages) + 2 + non_chapters, counts


def test_every_page_is_numbered(printed) -> None:
    _, folder = printed
    for pdf in folder.glob("*.pdf"):
        texts = pages_text(pdf)
        for k, text in enumerate(texts, start=1):
            assert re.search(rf"(?<![\d/]){k} / {len(texts)}(?!\d)", text), (
                f"{pdf.name} page {k} has no page number '{k} / {len(texts)}'"
            )


def test_text_layer_has_every_heading(printed, site: Path) -> None:
    """Each printed page's h1 and h2 (their words; formulas are MathJax glyphs) are in
    its chapter's PDF and in the book's."""
    pages, folder = printed
    book = squeeze("".join(pages_text(folder / BOOK_PDF)))
    for page in pages:
        targets = [book]
        if page.startswith(CHAPTER_DIR):
            targets.append(squeeze("".join(pages_text(pdf_of(folder, page)))))
        for heading in headings_of(site / page):
            for run in heading:
                for text in targets:
                    assert run in text, f"{page}: heading text {run!r} not in the PDF"


def test_no_raw_tex_in_the_text_layer(printed) -> None:
    _, folder = printed
    for pdf in folder.glob("*.pdf"):
        text = "".join(pages_text(pdf))
        for tex in ("$$", "\\(", "\\[", "\\begin{"):
            assert tex not in text, f"{pdf.name}: untypeset TeX {tex!r} in the text"


def test_links_leave_no_local_address(printed) -> None:
    """Links point at the website or inside the PDF; the book's contents are links."""
    pages, folder = printed
    for pdf in folder.glob("*.pdf"):
        data = pdf.read_bytes()
        uris = re.findall(rb"/URI\s*\(([^)]*)\)", data)
        local = [u for u in uris if b"127.0.0.1" in u or b"localhost" in u]
        assert not local, f"{pdf.name} links to the print server: {local[:3]}"
        internal = len(re.findall(rb"/Dest\b", data))
        assert internal >= (len(pages) if pdf.name == BOOK_PDF else 1), (
            f"{pdf.name}: {internal} links inside the PDF; the contents must be links"
        )
        assert b"/Outlines" in data, f"{pdf.name} has no outline (bookmarks)"


def test_folded_content_is_marked(printed) -> None:
    """What the website folds stays folded on paper, with a note (print.css)."""
    pages, folder = printed
    for page in chapters(pages):
        text = " ".join(pages_text(pdf_of(folder, page)))
        assert "folded on the website" in text, f"{page}: no note for folded content"


@pytest.mark.unit
def test_pages_link_only_the_pdfs_that_exist(tmp_path) -> None:
    """The site's side of the printable edition: no link to a PDF that is not in the
    output folder; when the printed set changes, every chapter page and every page
    with a {pdf-links} list is written again; with print_edition_pdfs off, none."""
    import types

    from bookkit.sphinx import print_edition

    def app(allowed: bool = True):
        return types.SimpleNamespace(
            outdir=str(tmp_path),
            config=types.SimpleNamespace(print_edition_pdfs=allowed),
        )

    env = types.SimpleNamespace(
        found_docs={"book/intro", "book/glossary", "notebooks/01_a", "notebooks/02_b"},
        print_edition_lists={"book/intro"},
    )
    assert print_edition.printed(app()) == []
    assert not print_edition.pdf_linked(app(), "notebooks/01_a")
    first = print_edition.outdated_by_pdfs(app(), env, set(), set(), set())
    assert first == ["book/intro", "notebooks/01_a", "notebooks/02_b"]
    assert print_edition.outdated_by_pdfs(app(), env, set(), set(), set()) == []
    (tmp_path / "pdf").mkdir()
    (tmp_path / "pdf" / "01_a.pdf").write_bytes(b"%PDF")
    assert print_edition.pdf_linked(app(), "notebooks/01_a")
    assert not print_edition.pdf_linked(app(), "notebooks/02_b")
    assert not print_edition.pdf_linked(app(allowed=False), "notebooks/01_a")
    again = print_edition.outdated_by_pdfs(app(), env, set(), set(), set())
    assert again == first  # the printed set changed: the same pages are rewritten
