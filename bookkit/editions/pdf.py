"""The printable edition: one PDF per chapter and one for the whole book, from the site.

    python -m bookkit.editions.pdf [--site DIR] [--out DIR] [--pages PAGE.html ...]

(``make pdf``, after ``make book``.) Debian's Chromium prints the built site through
Playwright's ``page.pdf`` (bookkit/site/browser.py; no browser is downloaded) into
``_build/html/pdf/``: ``NN_topic.pdf`` for every chapter and ``book.pdf`` with every
page of the table of contents, which the site links (bookkit/sphinx/print_edition.py).

Each page is printed as a reader sees it, with the print style sheet
(book/assets/print.css: A4, page numbers, no navigation, folded content left folded
with a note) after three steps in the page:

1. wait until MathJax has typeset every formula (no raw TeX reaches the paper);
2. replace every interactive plotly figure by a static SVG image of its first view,
   as wide as the printed column (``Plotly.toImage``);
3. point every link that leaves the page at the published website (``html.baseurl``),
   so the PDF's links work anywhere.

A chapter's PDF opens with the chapter's own linked contents (the theme's print
header). ``book.pdf`` gathers the pages' prepared articles into one document, with a
title page and a linked table of contents (parts, chapters and their sections);
cross-references between pages become links inside the PDF, and every chapter starts
on a new page. Chromium also writes the PDF outline (bookmarks) and tags.

``--pages`` prints only some pages (the test prints two chapters and the
introduction); the book PDF then holds just those.
"""

from __future__ import annotations

import argparse
import html
import sys
import time
from pathlib import Path

from bookkit.config import book_config, site_url, toc
from bookkit.paths import SITE
from bookkit.site.browser import browser, serve, wait_for_math

BOOK_PDF = "book.pdf"
CHAPTER_DIR = "notebooks/"

# (2) and the chapter header: run in the page, after MathJax, before printing.
PREPARE = """async (width) => {
  const figures = Array.from(document.querySelectorAll('.plotly-graph-div'));
  for (const gd of figures) {
    const box = gd.parentElement || gd;
    const height = Math.round(gd.getBoundingClientRect().height || 450);
    const url = await window.Plotly.toImage(gd, {format: 'svg', width: width,
                                                  height: height});
    const img = document.createElement('img');
    img.src = url;
    img.className = 'print-figure';
    img.width = width;
    img.height = height;
    const text = document.getElementById(gd.getAttribute('aria-describedby') || '');
    img.alt = text ? text.textContent.replace(/^Text alternative:\\s*/, '')
                   : 'Interactive figure (see the website)';
    box.replaceWith(img);
  }
  // The print header's title gets the chapter number of the article's heading.
  const title = document.querySelector('#jb-print-docs-body > h1');
  const heading = document.querySelector('article.bd-article h1');
  if (title && heading) {
    title.textContent = heading.textContent.replace(/#$/, '').trim();
  }
  return document.querySelectorAll('.plotly-graph-div').length;
}"""

# (3) for a chapter's own PDF: links that leave the page go to the website.
LINKS_TO_WEBSITE = """(site) => {
  for (const a of document.querySelectorAll('a[href]')) {
    const url = new URL(a.getAttribute('href'), location.href);
    if (url.origin !== location.origin) continue;
    if (url.pathname === location.pathname && url.hash) {
      a.setAttribute('href', url.hash);
    } else {
      a.setAttribute('href', site + url.pathname.replace(/^\\//, '') + url.hash);
    }
  }
}"""

# The article of a prepared page for book.pdf: ids prefixed with the page's key, links
# to pages of the book turned into links inside the book, others to the website.
EXTRACT = """({key, pages, site}) => {
  const article = document.querySelector('article.bd-article').cloneNode(true);
  article.querySelectorAll('script, .headerlink').forEach((e) => e.remove());
  for (const e of article.querySelectorAll('[id]')) e.id = key + e.id;
  for (const e of article.querySelectorAll('[aria-describedby], label[for]')) {
    for (const name of ['aria-describedby', 'for']) {
      if (e.hasAttribute(name)) e.setAttribute(name, key + e.getAttribute(name));
    }
  }
  for (const a of article.querySelectorAll('a[href]')) {
    const url = new URL(a.getAttribute('href'), location.href);
    if (url.origin !== location.origin) continue;
    const rel = url.pathname.replace(/^\\//, '');
    const fragment = decodeURIComponent(url.hash.slice(1));
    if (rel in pages) {
      a.setAttribute('href', '#' + pages[rel] + (fragment || 'page'));
    } else {
      a.setAttribute('href', site + rel + url.hash);
    }
  }
  for (const img of article.querySelectorAll('img[src]')) {
    img.setAttribute('src', img.src);
  }
  const headings = Array.from(article.querySelectorAll('h1, h2')).map((h) => ({
    level: Number(h.tagName[1]), id: (h.closest('section') || h).id,
    text: h.textContent.replace(/#$/, '').trim()}));
  const mathStyle = document.getElementById('MJX-CHTML-styles');
  const sheets = Array.from(document.querySelectorAll('link[rel="stylesheet"]'))
    .map((l) => l.href);
  return {html: article.innerHTML, headings, sheets,
          math: mathStyle ? mathStyle.textContent : ''};
}"""

BOOK_CSS = """
.book-page { break-before: page; }
.book-page h1:first-of-type, .book-title h1, .book-toc h1 { display: block !important; }
.book-title { text-align: center; margin-top: 30vh; break-after: page; }
.book-title h1 { font-size: 2.4rem; }
.book-toc h2 { margin-top: 1.2rem; font-size: 1.2rem; }
.book-toc ul { list-style: none; padding-left: 1.2rem; margin: 0.2rem 0; }
.book-toc li.section { font-size: 0.9rem; }
.book-toc { break-after: page; }
"""


def book_pages() -> list[tuple[str | None, str]]:
    """(part caption, page.html) in the order of _toc.yml, the root page first."""
    pages = [(None, f"{toc()['root']}.html")]
    for part in toc().get("parts", []):
        for chapter in part.get("chapters", []):
            pages.append((part.get("caption"), f"{chapter['file']}.html"))
    return pages


def pdf_options(path: Path) -> dict:
    """Playwright's page.pdf options: the page size, margins and page numbers come from
    the print style sheet (@page); outline = bookmarks, tagged = structure."""
    return {
        "path": str(path),
        "prefer_css_page_size": True,
        "print_background": True,
        "outline": True,
        "tagged": True,
    }


def open_page(chromium, url: str):
    """A fresh tab with the page loaded, math typeset, fonts ready, in print media."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(url, wait_until="load", timeout=120_000)
    wait_for_math(page)
    page.emulate_media(media="print")
    page.evaluate("() => document.fonts.ready.then(() => true)")
    return context, page


def column_width(page) -> int:
    """The printed column's width in CSS pixels (the article, in print media)."""
    return int(page.evaluate(
        "() => document.querySelector('article.bd-article').getBoundingClientRect()"
        ".width"
    ))


def book_html(base: str, parts: list[dict], title: str, author: str) -> str:
    """One document: title page, linked contents, every page's prepared article."""
    sheets = dict.fromkeys(s for p in parts for s in p["sheets"])
    math = "\n".join(dict.fromkeys(p["math"] for p in parts if p["math"]))
    toc, body, caption = [], [], object()
    for part in parts:
        if part["caption"] != caption:
            caption = part["caption"]
            if caption:
                toc.append(f"<h2>{html.escape(caption)}</h2>")
        entries = []
        for h in part["headings"]:
            link = f'<a href="#{h["id"]}">{html.escape(h["text"])}</a>'
            kind = "page" if h["level"] == 1 else "section"
            entries.append(f'<li class="{kind}">{link}</li>')
        toc.append("<ul>" + "".join(entries) + "</ul>")
        section = f'<section class="book-page" id="{part["key"]}page">'
        body.append(f"{section}{part['html']}</section>")
    links = "".join(f'<link rel="stylesheet" href="{s}">' for s in sheets)
    return (
        '<!DOCTYPE html><html lang="en" data-theme="light" data-mode="light"><head>'
        f'<meta charset="utf-8"><title>{html.escape(title)}</title>'
        f'<base href="{base}">{links}'
        f"<style>{math}</style><style>{BOOK_CSS}</style></head>"
        '<body><div class="bd-main"><div class="bd-content">'
        '<div class="bd-article-container"><article class="bd-article">'
        f'<div class="book-title"><h1>{html.escape(title)}</h1>'
        f"<p>{html.escape(author)}</p></div>"
        '<nav class="book-toc" aria-label="Contents"><h1>Contents</h1>'
        f'{"".join(toc)}</nav>{"".join(body)}'
        "</article></div></div></div></body></html>"
    )


def make_pdfs(site: Path, out: Path, only: list[str] | None = None) -> list[Path]:
    """Print the chapters' PDFs and the book's; return the files written."""
    config = book_config()
    pages = [(c, p) for c, p in book_pages() if not only or p in only]
    missing = [p for _, p in pages if not (site / p).is_file()]
    if missing or not pages:
        raise FileNotFoundError(f"not in {site}: {missing or only}; run `make book`")
    keys = {page: f"p{k}-" for k, (_, page) in enumerate(pages)}
    out.mkdir(parents=True, exist_ok=True)
    written, parts = [], []
    with serve(site) as base, browser() as chromium:
        for caption, rel in pages:
            context, page = open_page(chromium, base + rel)
            if page.evaluate(PREPARE, column_width(page)):
                raise RuntimeError(f"{rel}: an interactive figure is left unprinted")
            part = page.evaluate(
                EXTRACT, {"key": keys[rel], "pages": keys, "site": site_url()}
            )
            parts.append({**part, "caption": caption, "key": keys[rel]})
            if rel.startswith(CHAPTER_DIR):
                page.evaluate(LINKS_TO_WEBSITE, site_url())
                target = out / Path(rel).with_suffix(".pdf").name
                page.pdf(**pdf_options(target))
                written.append(target)
            context.close()
        (site / "_book_print.html").write_text(
            book_html(base, parts, config["title"], config["author"]),
            encoding="utf-8",
        )
        try:
            context, page = open_page(chromium, base + "_book_print.html")
            page.pdf(**pdf_options(out / BOOK_PDF))
            written.append(out / BOOK_PDF)
            context.close()
        finally:
            (site / "_book_print.html").unlink()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=SITE, help="the built site")
    parser.add_argument("--out", type=Path, help="default: SITE/pdf")
    parser.add_argument("--pages", nargs="*", help="only these pages (PAGE.html)")
    args = parser.parse_args(argv)
    start = time.monotonic()
    written = make_pdfs(args.site, args.out or args.site / "pdf", args.pages)
    for path in written:
        print(f"pdf: {path} ({path.stat().st_size / 1e6:.2f} MB)")
    total = sum(p.stat().st_size for p in written) / 1e6
    print(f"{len(written)} PDFs, {total:.1f} MB, {time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
