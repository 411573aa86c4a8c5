"""Find solution text in a built site (or any folder).

    python -m bookkit.leaks DIR [--executed DIR]   (exit status 1 on a leak)

What counts as secret: the source of every cell tagged ``solution`` in the chapters,
the body of every ``{solution}`` directive in the prose pages, and the withheld pages
(the instructor notes, ``bookkit.notebook.WITHHELD_PAGES``). Text is compared as
lower-case word sequences (letters, digits, underscores), so rendering (HTML tags and
entities, syntax highlighting, JSON escapes in notebooks) does not hide it. MyST roles
and Markdown links count by their text, as a page shows them. A *fingerprint* is a run
of ``N`` consecutive words of a secret that occurs nowhere in the public text (every
other cell of every chapter with its metadata and, given the executed notebooks, its
outputs; the other pages and the bibliography; the student notebooks' note) and has
three words with letters (a run of numbers proves nothing). A site leaks a secret when
any of its fingerprints occurs in any of its files. Runs of fewer than ``N`` words (a
very short solution) are
fingerprinted whole.

Each ``.ipynb`` (or ``.json``) file is read as JSON first (its strings are what a
reader sees), HTML twice (its text without tags, then as it is, entities decoded), every
other file as UTF-8 text; images, fonts, archives, source maps and third-party assets
copied verbatim (``_static/``, ``vendor/``, ``reveal.js/``) are skipped.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from bookkit.chapters import page_paths
from bookkit.notebook import WITHHELD_PAGES, is_solution, read, student_note
from bookkit.paths import BIBFILE, BOOK, EXECUTED_NOTEBOOKS, ROOT, SCHEDULE

N = 6
WORD = re.compile(r"[a-z0-9_]+")
SOLUTION_DIRECTIVE = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{solution\}[^\n]*\n(?P<body>.*?)^(?P=fence)\s*$",
    re.M | re.S,
)
TAG = re.compile(r"<[^>]*>")
BLOCK = re.compile(
    r"</?(?:p|div|li|ul|ol|td|th|tr|table|h[1-6]|figcaption|caption|pre|section|dt|dd"
    r"|blockquote|br|main|article|header|footer|nav|aside)\b[^>]*>",
    re.I,
)
BREAK = "zzblockzz"  # a word no secret has
# Directive markup (fences, options): not text a reader sees.
MARKUP = re.compile(r"^\s*(?:(?:`{3,}|:{3,})(?:\{[\w:+-]+\}.*)?|:[\w-]+:.*)$", re.M)
# Copied verbatim from the theme and vendored packages (MathJax, plotly.js, Font
# Awesome): nothing of the book is written into them.
THIRD_PARTY = {"_static", "vendor", "reveal.js"}
BINARY = {".png", ".jpg", ".jpeg", ".gif", ".svg", ".ico", ".woff", ".woff2", ".ttf",
          ".eot", ".otf", ".pdf", ".zip", ".gz", ".pickle", ".doctree", ".db"}


ROLE = re.compile(r"\{[\w:+-]+\}`([^`<]*?)\s*(?:<([^>`]*)>)?`")
LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def rendered(text: str) -> str:
    """Markdown roughly as a page shows it: roles and links by their text, no tags."""
    text = ROLE.sub(lambda m: m[1] or m[2] or "", text)
    return TAG.sub(" ", LINK.sub(r"\1", text))


def telling(gram: str) -> bool:
    """A fingerprint must say something: three words with letters, one of 4+."""
    lettered = [w for w in gram.split() if re.search("[a-z]", w)]
    return len(lettered) >= 3 and any(len(w) >= 4 for w in lettered)


def grams(tokens: list[str], n: int) -> set[str]:
    return {" ".join(tokens[k : k + n]) for k in range(len(tokens) - n + 1)}


@dataclass
class Secrets:
    """Fingerprints of every secret: {gram: where it comes from}."""

    by_length: dict[int, dict[str, str]] = field(default_factory=dict)
    unmatched: list[str] = field(default_factory=list)  # secrets with no fingerprint

    @property
    def count(self) -> int:
        return sum(len(g) for g in self.by_length.values())


def prose_pages(withheld: list[str]) -> dict[str, str]:
    pages = {}
    for path in sorted(BOOK.rglob("*.md")):
        rel = path.relative_to(ROOT).as_posix()
        if "vendor" not in rel:
            pages[rel] = path.read_text()
    return pages


def collect(withheld: list[str], executed: Path | None = None
            ) -> tuple[dict[str, str], list[str]]:
    """(secret texts by where they come from, public texts).

    Public: every other cell's source and metadata (slide texts, captions), its outputs
    in the executed notebooks of ``executed`` if given, the other pages, and the note
    that student notebooks carry."""
    secret, public = {}, [student_note()]
    for path in page_paths():
        done = executed / path.name if executed else None
        ran = read(done).cells if done and done.is_file() else []
        for k, cell in enumerate(read(path).cells):
            if is_solution(cell):
                secret[f"{path.name} cell {k}"] = cell.source
                continue
            public += [cell.source, *strings(dict(cell.metadata))]
            if k < len(ran) and ran[k].source == cell.source:
                public += strings(ran[k].get("outputs", []))
    for rel, text in prose_pages(withheld).items():
        if rel in withheld:
            secret[rel] = text
            continue
        for k, found in enumerate(SOLUTION_DIRECTIVE.finditer(text)):
            secret[f"{rel} solution {k + 1}"] = found["body"]
        public.append(SOLUTION_DIRECTIVE.sub(" ", text))
    public.append(BIBFILE.read_text())  # the bibliography
    public += session_slide_texts()
    return secret, public


def session_slide_texts() -> list[str]:
    """The texts the slides compose from public pages (an exercise's title from its
    chapter, its kind and minutes from the schedule): public in that composed form."""
    from bookkit.editions.slides import exercise_titles, session_slides

    slides = session_slides(SCHEDULE.read_text(), exercise_titles())
    return [spec["text"] for specs in slides.values() for spec in specs]


def has_text(secret: str) -> bool:
    """Whether a secret is more than directive markup (a solution's start or end)."""
    return bool(words(rendered(MARKUP.sub(" ", secret))))


def fingerprints(withheld: list[str], executed: Path | None = None) -> Secrets:
    secret, public = collect(withheld, executed)
    public_tokens = [words(t) for text in public for t in (text, rendered(text))]
    known: dict[int, set[str]] = {}

    def public_grams(n: int) -> set[str]:
        if n not in known:
            known[n] = set().union(*(grams(t, n) for t in public_tokens))
        return known[n]

    found = Secrets()
    for where, text in secret.items():
        if not has_text(text):
            continue  # markup only: the start or end of a solution
        tokens = words(rendered(MARKUP.sub(" ", text)))
        n = min(N, len(tokens))
        if n < 2:
            found.unmatched.append(where)
            continue
        own = {g for g in grams(tokens, n) - public_grams(n) if telling(g)}
        if not own:
            found.unmatched.append(where)
        for gram in own:
            found.by_length.setdefault(n, {})[gram] = where
    return found


def strings(value) -> list[str]:
    """Every string inside a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def file_text(path: Path) -> str:
    text = path.read_bytes().decode("utf-8", errors="replace")
    if path.suffix in (".ipynb", ".json"):
        try:
            return "\n".join(strings(json.loads(text)))
        except json.JSONDecodeError:
            pass
    if path.suffix in (".html", ".htm", ".xml"):
        # The text a reader sees, then the markup (attributes, scripts) as well.
        # Blocks (paragraphs, cells, captions) end a run of words: no run across two.
        seen = TAG.sub(" ", BLOCK.sub(f" {BREAK} ", text))
        return html.unescape(seen) + "\n" + html.unescape(text)
    return text


def scan(folder: Path, secrets: Secrets) -> dict[str, dict[str, list[str]]]:
    """{secret: {file: [fingerprints found]}} for every secret found in ``folder``."""
    leaks: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or path.suffix.lower() in BINARY:
            continue
        if THIRD_PARTY & set(path.relative_to(folder).parts) or path.suffix == ".map":
            continue
        tokens = words(file_text(path))
        for n, table in secrets.by_length.items():
            for k in range(len(tokens) - n + 1):
                gram = " ".join(tokens[k : k + n])
                if gram in table:
                    rel = path.relative_to(folder).as_posix()
                    leaks[table[gram]][rel].append(gram)
    return {s: dict(files) for s, files in leaks.items()}


def report(leaks: dict[str, dict[str, list[str]]]) -> str:
    lines = []
    for where, files in sorted(leaks.items()):
        for rel, found in sorted(files.items()):
            lines.append(f"{where} -> {rel}: {found[0]!r} (+{len(found) - 1} more)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--executed", type=Path, default=EXECUTED_NOTEBOOKS,
                        help="the executed notebooks (their outputs are public)")
    args = parser.parse_args(argv)
    executed = args.executed if args.executed.is_dir() else None
    secrets = fingerprints(WITHHELD_PAGES, executed)
    leaks = scan(args.folder, secrets)
    print(report(leaks) or f"no solution text in {args.folder} "
          f"({secrets.count} fingerprints)")
    return 1 if leaks else 0


if __name__ == "__main__":
    sys.exit(main())
