"""Find solution text in a built site (or any folder).

    python tools/solution_leaks.py DIR         (exit status 1 if anything is found)

What counts as secret: the source of every cell tagged ``solution`` in the chapters,
the body of every ``{solution}`` directive in the prose pages, and the withheld pages
(the instructor notes, ``make_student_site.WITHHELD_PAGES``). Text is compared as
lower-case word sequences (letters, digits, underscores), so rendering (HTML tags and
entities, syntax highlighting, JSON escapes in notebooks) does not hide it: a
*fingerprint* is a run of ``N`` consecutive words of a secret that occurs nowhere in the
public text (every other cell of every chapter, the other pages). A site leaks a secret
when any of its fingerprints occurs in any file. Runs of fewer than ``N`` words (a
very short solution) are fingerprinted whole.

Each ``.ipynb`` (or ``.json``) file is read as JSON first (its strings are what a
reader sees), HTML twice (its text without tags, then as it is, entities decoded), every
other file as UTF-8 text; images, fonts and archives are skipped.
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

from nbtools import ROOT, notebook_paths, read, tags

N = 5
WORD = re.compile(r"[a-z0-9_]+")
SOLUTION_DIRECTIVE = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{solution\}[^\n]*\n(?P<body>.*?)^(?P=fence)\s*$",
    re.M | re.S,
)
TAG = re.compile(r"<[^>]*>")
# Directive markup (fences, options): not text a reader sees.
MARKUP = re.compile(r"^\s*(?:(?:`{3,}|:{3,})(?:\{[\w:+-]+\}.*)?|:[\w-]+:.*)$", re.M)
BINARY = {".png", ".jpg", ".jpeg", ".gif", ".svg", ".ico", ".woff", ".woff2", ".ttf",
          ".eot", ".otf", ".pdf", ".zip", ".gz", ".pickle", ".doctree", ".db"}


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


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
    for path in sorted((ROOT / "book").rglob("*.md")):
        rel = path.relative_to(ROOT).as_posix()
        if "vendor" not in rel:
            pages[rel] = path.read_text()
    return pages


def collect(withheld: list[str]) -> tuple[dict[str, str], list[str]]:
    """(secret texts by where they come from, public texts)."""
    secret, public = {}, []
    for path in notebook_paths():
        for k, cell in enumerate(read(path).cells):
            if "solution" in tags(cell):
                secret[f"{path.name} cell {k}"] = cell.source
            else:
                public.append(cell.source)
    for rel, text in prose_pages(withheld).items():
        if rel in withheld:
            secret[rel] = text
            continue
        for k, found in enumerate(SOLUTION_DIRECTIVE.finditer(text)):
            secret[f"{rel} solution {k + 1}"] = found["body"]
        public.append(SOLUTION_DIRECTIVE.sub(" ", text))
    return secret, public


def fingerprints(withheld: list[str]) -> Secrets:
    secret, public = collect(withheld)
    public_tokens = [words(text) for text in public]
    known: dict[int, set[str]] = {}

    def public_grams(n: int) -> set[str]:
        if n not in known:
            known[n] = set().union(*(grams(t, n) for t in public_tokens))
        return known[n]

    found = Secrets()
    for where, text in secret.items():
        tokens = words(MARKUP.sub(" ", text))
        if not tokens:
            continue  # markup only: the start or end of a solution
        n = min(N, len(tokens))
        if n < 2:
            found.unmatched.append(where)
            continue
        own = grams(tokens, n) - public_grams(n)
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
        return html.unescape(TAG.sub(" ", text)) + "\n" + html.unescape(text)
    return text


def scan(folder: Path, secrets: Secrets) -> dict[str, dict[str, list[str]]]:
    """{secret: {file: [fingerprints found]}} for every secret found in ``folder``."""
    leaks: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or path.suffix.lower() in BINARY:
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
    from make_student_site import WITHHELD_PAGES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    secrets = fingerprints(WITHHELD_PAGES)
    leaks = scan(args.folder, secrets)
    print(report(leaks) or f"no solution text in {args.folder} "
          f"({secrets.count} fingerprints)")
    return 1 if leaks else 0


if __name__ == "__main__":
    sys.exit(main())
