"""Sphinx extension: ship only the Font Awesome icons the site uses.

The theme (pydata-sphinx-theme) loads ``_static/scripts/fontawesome.js``: Font Awesome's
whole icon set, 1.5 MB raw (0.54 MB gzip) on every page, for a handful of icons. When
the build has finished, this rewrites that file in the output with every icon map cut
down to the icons named in the site's HTML and the theme's scripts (``fa-NAME``
classes, aliases included). The code of the file is left as it is.

tests/test_site.py checks in Chromium that every icon on every page was drawn.
"""

from __future__ import annotations

import re
from pathlib import Path

SCRIPT = Path("_static") / "scripts" / "fontawesome.js"
ICON_MAP = re.compile(r'var [A-Za-z_$][\w$]*=\{(?=(?:"[^"]+"|[\w$]+):\[\d+,\d+,\[)')
ENTRY_KEY = re.compile(r'(?:"([^"]+)"|([\w$]+)):\[')
FA_NAME = re.compile(r"\bfa-([a-z0-9][a-z0-9-]*)")


def used_icon_names(outdir: Path) -> set[str]:
    """Every ``fa-NAME`` in the site's pages and scripts (prefix classes included)."""
    names: set[str] = set()
    for path in outdir.rglob("*"):
        if (
            path.suffix in (".html", ".js")
            and path.is_file()
            and path.name != SCRIPT.name
        ):
            names.update(FA_NAME.findall(path.read_text(errors="replace")))
    return names


def split_entries(body: str) -> list[tuple[str, str]]:
    """The ``name:[...]`` entries of one icon map's body, as (name, entry text)."""
    entries, pos = [], 0
    while pos < len(body):
        match = ENTRY_KEY.match(body, pos)
        if not match:
            raise ValueError(f"unexpected icon map syntax at {body[pos : pos + 60]!r}")
        depth, end = 0, match.end() - 1
        while True:  # the value: an array, possibly nested, of numbers and strings
            char = body[end]
            if char == '"':
                end = body.index('"', end + 1)
            elif char == "[":
                depth += 1
            elif char == "]":
                depth -= 1
                if depth == 0:
                    break
            end += 1
        entries.append((match.group(1) or match.group(2), body[pos : end + 1]))
        pos = end + 1
        if pos < len(body) and body[pos] == ",":
            pos += 1
    return entries


def subset(script: str, keep: set[str]) -> tuple[str, int, int]:
    """The script with every icon map reduced to ``keep`` (names or aliases)."""
    out, pos, kept, total = [], 0, 0, 0
    for match in ICON_MAP.finditer(script):
        start = match.end()
        end = script.index("}", start)  # icon maps hold no nested braces
        entries = split_entries(script[start:end])
        chosen = []
        for name, text in entries:
            aliases = set(re.findall(r'"([a-z0-9-]+)"', text.split("[", 2)[-1]))
            if name in keep or aliases & keep:
                chosen.append(text)
        out.append(script[pos:start] + ",".join(chosen))
        pos = end
        kept, total = kept + len(chosen), total + len(entries)
    out.append(script[pos:])
    return "".join(out), kept, total


def shrink_fontawesome(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    target = outdir / SCRIPT
    if not target.is_file():
        return
    script = target.read_text()
    if "/* icons subset" in script[:200]:
        return
    smaller, kept, total = subset(script, used_icon_names(outdir))
    if kept == 0 or total < 100:
        raise ValueError(f"{target}: no icon maps recognised; update {__file__}")
    target.write_text(
        f"/* icons subset by tools/sphinx_ext: {kept} of {total} */\n{smaller}"
    )


def setup(app):
    app.connect("build-finished", shrink_fontawesome)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
