"""TeX that MathJax would print literally instead of typesetting, found in the sources
(the browser test finds it in the rendered pages too, tests/site/test_site.py)."""

from __future__ import annotations

import re
from pathlib import Path

from bookkit.chapters import page_paths
from bookkit.notebook import read
from bookkit.paths import BOOK, ROOT

MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
# Text-mode groups, where MathJax (without its textmacros package) does not read
# macros: \text{head\_dim} shows "head\_dim".
TEXT_WITH_MACRO = re.compile(r"\\(?:text|textrm|textit|textbf|texttt|mbox)\{[^}]*\\")


def sources() -> list[tuple[str, str]]:
    found = []
    for path in page_paths():
        for k, cell in enumerate(read(path).cells):
            if cell.cell_type == "markdown":
                found.append((f"{path.name} cell {k}", cell.source))
    for path in sorted(BOOK.rglob("*.md")):
        if "vendor" not in path.parts:
            found.append((str(path.relative_to(ROOT)), path.read_text()))
    return found


def test_no_macro_inside_text_mode_math() -> None:
    bad = [
        f"{where}: {m.group(0)[:80]}"
        for where, text in sources()
        for m in MATH.finditer(text)
        if TEXT_WITH_MACRO.search(m.group(0))
    ]
    assert not bad, "a macro inside \\text{...} shows literally:\n" + "\n".join(bad)


def test_the_probe_finds_the_old_bug() -> None:
    old = r"$d = \lfloor \text{head\_dim} \cdot \text{partial\_rotary\_factor} \rfloor$"
    assert TEXT_WITH_MACRO.search(MATH.search(old).group(0))
    fixed = r"$d = \lfloor \mathtt{head\_dim} \rfloor$"
    assert not TEXT_WITH_MACRO.search(MATH.search(fixed).group(0))


def test_sources_exist() -> None:
    assert len(sources()) > 100 and Path(ROOT / "_toc.yml").is_file()
