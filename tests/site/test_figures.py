"""Numbered, captioned figures with text alternatives, on a small fixture book.

A figure cell carries ``"mystnb": {"figure": {"caption", "name"}, "image": {"alt"}}``
(CONTRIBUTING.md). This builds a one-chapter book with the project's own configuration
(its extensions, ``numfig_format``) from a notebook that already has its outputs (a PNG
and two plotly figures), and checks what the site makes of it: "Figure 1.k" numbers and
captions, ``{numref}`` links that read "Figure 1.k", the image's alt text, and the text
alternative under the interactive figure (bookkit/sphinx/figure_text.py). The built
site's own figures are checked by tests/test_site.py; the Colab editions' numbering by
tests/test_colab.py.
"""

from __future__ import annotations

import base64
import io
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from bookkit.paths import ROOT

pytestmark = pytest.mark.site  # builds a (small) book: `make test`, not `make check`

ALT_LINE = "Line plot of y = x for x from 0 to 1, a straight line."
ALT_PLOT = "Interactive plot of y = a x for a from 1 to 3, chosen with a slider."


def png() -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), "white").save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def plotly_bundle(div_id: str) -> dict:
    """What the build's plotly renderer (bookkit/ipython) puts in a cell's output."""
    import plotly.graph_objects as go
    import plotly.io as pio

    fig = go.Figure([go.Scatter(y=[0, a], visible=a == 1) for a in (1, 2, 3)])
    steps = [
        {"method": "update", "label": str(a),
         "args": [{"visible": [b == a for b in (1, 2, 3)]}]}
        for a in (1, 2, 3)
    ]
    fig.update_layout(sliders=[{"steps": steps, "currentvalue": {"prefix": "a = "}}])
    return {
        "application/vnd.plotly.v1+json": fig.to_plotly_json(),
        "text/html": pio.to_html(
            fig, full_html=False, include_plotlyjs=False, div_id=div_id
        ),
    }


def fixture_notebook() -> nbformat.NotebookNode:
    md, code, out = (
        nbformat.v4.new_markdown_cell,
        nbformat.v4.new_code_cell,
        nbformat.v4.new_output,
    )

    def meta(name: str, caption: str, alt: str) -> dict:
        return {"mystnb": {"figure": {"caption": caption, "name": name},
                           "image": {"alt": alt}}}

    return nbformat.v4.new_notebook(
        cells=[
            md("# Fixture chapter"),
            md("{numref}`fig-01-line` is static, {numref}`fig-01-plot` interactive."),
            code("line()", execution_count=1, metadata=meta(
                "fig-01-line", "A straight line.", ALT_LINE), outputs=[
                out("display_data", data={"image/png": png(), "text/plain": "<F>"})]),
            code("plot()", execution_count=2, metadata=meta(
                "fig-01-plot", "Move the slider.", ALT_PLOT), outputs=[
                out("display_data", data=plotly_bundle("plot-fixture-a"))]),
            code("bare()", execution_count=3, outputs=[
                out("display_data", data=plotly_bundle("plot-fixture-b"))]),
        ],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                 "language": "python"},
                  "language_info": {"name": "python"}},
    )


def fixture_config() -> dict:
    """The project's _config.yml, without execution, pointed at the project's files."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["execute"]["execute_notebooks"] = "off"
    config["bibtex_bibfiles"] = [str(ROOT / "book" / "references.bib")]
    config["logo"] = str(ROOT / "book" / "assets" / "logo.svg")
    config["html"]["favicon"] = str(ROOT / "book" / "assets" / "favicon.png")
    sphinx = config["sphinx"]
    sphinx["local_extensions"] = {
        name: str(ROOT / path) for name, path in sphinx["local_extensions"].items()
    }
    sphinx["config"]["html_static_path"] = [
        str(ROOT / p) for p in sphinx["config"]["html_static_path"]
    ]
    return config


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The fixture book, built like the real one (-W -n: any warning fails)."""
    source = tmp_path_factory.mktemp("figures")
    (source / "notebooks").mkdir()
    nbformat.write(fixture_notebook(), source / "notebooks" / "01_fixture.ipynb")
    (source / "intro.md").write_text("# Fixture book\n\nA book of one chapter.\n")
    (source / "_config.yml").write_text(yaml.safe_dump(fixture_config()))
    toc = {"format": "jb-book", "root": "intro", "parts": [
        {"caption": "Part", "numbered": True,
         "chapters": [{"file": "notebooks/01_fixture"}]}]}
    (source / "_toc.yml").write_text(yaml.safe_dump(toc))
    build = subprocess.run(
        [str(Path(sys.executable).parent / "jupyter-book"), "build", str(source),
         "--path-output", str(source), "-W", "-n", "--keep-going"],
        capture_output=True, text=True,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    return source / "_build" / "html" / "notebooks" / "01_fixture.html"


def test_figures_have_numbers_and_captions(built: Path) -> None:
    html = built.read_text()
    numbers = re.findall(r'class="caption-number">([^<]*)<', html)
    assert [n.strip() for n in numbers] == ["Figure 1.1", "Figure 1.2"]
    for caption in ("A straight line.", "Move the slider."):
        assert f'class="caption-text">{caption}<' in html


def test_numref_reads_figure_n_k(built: Path) -> None:
    html = built.read_text()
    for name, number in (("fig-01-line", "1.1"), ("fig-01-plot", "1.2")):
        pattern = rf'<a class="reference internal" href="#{name}">(.*?)</a>'
        link = re.search(pattern, html)
        assert link, f"no link to {name}"
        assert re.sub(r"<[^>]+>", "", link[1]) == f"Figure {number}"


def test_static_image_has_its_alt_text(built: Path) -> None:
    assert f'alt="{ALT_LINE}"' in built.read_text()


def test_interactive_figure_shows_its_text_alternative(built: Path) -> None:
    html = built.read_text()
    assert 'id="plot-fixture-a" class="plotly-graph-div" ' \
        'aria-describedby="plot-fixture-a-text"' in html
    found = re.search(
        r'<p class="figure-text-alternative" id="plot-fixture-a-text">(.*?)</p>', html
    )
    assert found and ALT_PLOT in found[1]
    assert "Text alternative:" in found[1]
    # under the figure: after its caption, before the next cell
    assert html.index("Move the slider.") < html.index('id="plot-fixture-a-text"')
    # a figure whose cell has no alt text gets nothing invented
    assert "plot-fixture-b-text" not in html
    assert "plotly-keyboard.js" in html, "the keyboard controls are loaded"
