"""Sphinx extension: ship only the Font Awesome icons the site uses.

The theme (pydata-sphinx-theme) loads ``_static/scripts/fontawesome.js``: Font Awesome's
whole icon set, 1.5 MB raw (0.54 MB gzip) on every page, for a handful of icons. When
the build has finished, this rewrites that file in the output with every icon map cut
down to the icons named in the site's HTML and the theme's scripts (``fa-NAME``
classes, aliases included). The code of the file is left as it is.

The theme's CSS also loads Font Awesome's webfonts (0.27 MB for solid and brands) for
icons drawn by CSS (admonition titles, external links, breadcrumbs) and for the ``<i>``
icons before the script replaces them. This writes subsets of the fonts, holding only
those glyphs, as WOFF (fontTools, with matplotlib; zlib, no brotli needed) and a style
sheet ``fontawesome-subset.css``, linked after the theme's, whose ``@font-face`` rules
take precedence over the theme's (the last rule for a face wins).

tests/test_site.py checks in Chromium that every icon on every page was drawn.
"""

from __future__ import annotations

import re
from pathlib import Path

SCRIPT = Path("_static") / "scripts" / "fontawesome.js"
WEBFONTS = Path("_static") / "vendor" / "fontawesome" / "webfonts"
SUBSET_CSS = "fontawesome-subset.css"
FACES = [  # (font-family, font-weight, the theme's font file)
    ("Font Awesome 6 Free", 900, "fa-solid-900"),
    ("Font Awesome 6 Free", 400, "fa-regular-400"),
    ("Font Awesome 6 Brands", 400, "fa-brands-400"),
]
THEME_CSS = "pydata-sphinx-theme.css"  # holds all of Font Awesome's CSS: codes not used
ESCAPE = re.compile(r"\\([ef][0-9a-fA-F]{3})")
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


def unicode_of(script: str, keep: set[str]) -> set[str]:
    """The private-use characters of the icons named in ``keep`` (from the maps)."""
    chars = set()
    for match in ICON_MAP.finditer(script):
        body = script[match.end() : script.index("}", match.end())]
        for name, text in split_entries(body):
            if name in keep:
                code = re.match(r'[^\[]*\[\d+,\d+,\[[^\]]*\],"([0-9a-f]+)"', text)
                if code:
                    chars.add(chr(int(code.group(1), 16)))
    return chars


def css_icon_chars(static: Path) -> set[str]:
    """Icon characters the style sheets draw (private-use code points, literal or
    escaped), leaving out Font Awesome's own per-icon rules in the theme's CSS."""
    chars = set()
    for path in static.rglob("*.css"):
        text = path.read_text(errors="replace")
        chars.update(c for c in text if 0xE000 <= ord(c) <= 0xF8FF)
        if path.name != THEME_CSS:
            chars.update(chr(int(h, 16)) for h in ESCAPE.findall(text))
    return chars


def subset_fonts(outdir: Path, chars: set[str]) -> None:
    """Write WOFF subsets of the theme's webfonts and the CSS that uses them."""
    from fontTools import subset as ft_subset

    rules = []
    for family, weight, stem in FACES:
        source = outdir / WEBFONTS / f"{stem}.ttf"
        if not source.is_file():
            continue
        options = ft_subset.Options()
        options.flavor = "woff"
        font = ft_subset.load_font(str(source), options)
        subsetter = ft_subset.Subsetter(options)
        subsetter.populate(unicodes=[ord(c) for c in chars])
        subsetter.subset(font)
        target = outdir / WEBFONTS / f"{stem}-subset.woff"
        ft_subset.save_font(font, str(target), options)
        url = f"vendor/fontawesome/webfonts/{stem}-subset.woff"
        rules.append(
            f'@font-face{{font-display:block;font-family:"{family}";font-style:normal;'
            f'font-weight:{weight};src:url({url}) format("woff")}}'
        )
    (outdir / "_static" / SUBSET_CSS).write_text("\n".join(rules) + "\n")


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
    names = used_icon_names(outdir)
    chars = css_icon_chars(outdir / "_static") | unicode_of(script, names)
    subset_fonts(outdir, chars)
    smaller, kept, total = subset(script, names)
    if kept == 0 or total < 100:
        raise ValueError(f"{target}: no icon maps recognised; update {__file__}")
    target.write_text(
        f"/* icons subset by bookkit/sphinx: {kept} of {total} */\n{smaller}"
    )


def setup(app):
    app.add_css_file(SUBSET_CSS, priority=900)  # after the theme's style sheets
    app.connect("build-finished", shrink_fontawesome)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
