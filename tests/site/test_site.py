"""The built site, served on 127.0.0.1 and read by Debian's Chromium, as a reader would
read it.

Every page must load with no console error, no page error, no failed request and no
HTTP error (a 404 fails); no request may leave the machine; math must be typeset by the
vendored MathJax; every image must have a size; interactive plotly figures must draw;
notebook pages must offer Colab and download buttons; internal links must resolve; and
no cell output may show a traceback or stderr.

Accessibility: axe-core (bookkit/site/vendor.py) audits every page and no serious or
critical violation may remain (the counts by impact go to _build/axe-report.json);
every figure is numbered and captioned, every interactive figure has a text
alternative, and its sliders and menus have native controls that the keyboard reaches
(Tab) and uses (arrow keys). Links to an exercise name it ("Exercise 4.2").
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

import pytest

from bookkit.notebook import read
from bookkit.paths import BUILD, EXECUTED_NOTEBOOKS, ROOT
from bookkit.site.browser import axe_results, browser, serve, start_axe, wait_for_math

pytestmark = [pytest.mark.site, pytest.mark.browser]

SKIP_DIRS = {"_static", "_sources", "_images", "slides", "_sphinx_design_static"}


@dataclass
class PageReport:
    """What the browser saw on one page."""

    path: str
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)
    bad_status: list[str] = field(default_factory=list)
    dom: dict = field(default_factory=dict)
    axe: list[dict] = field(default_factory=list)  # axe-core's violations
    figures: list[dict] = field(default_factory=list)  # plotly figures and controls
    keyboard: list[str] = field(default_factory=list)  # what the keyboard failed to do
    weight: dict[str, tuple[int, int]] = field(default_factory=dict)  # url: (raw, sent)

    @property
    def sent(self) -> int:
        """Bytes a gzip-compressing static host sends for this page, all included."""
        return sum(sent for _, sent in self.weight.values())

    @property
    def raw(self) -> int:
        return sum(raw for raw, _ in self.weight.values())


DOM_PROBE = """() => {
  const q = (s) => Array.from(document.querySelectorAll(s));
  return {
    math_nodes: q('.math, span.math, div.math').length,
    mjx: q('mjx-container').length,
    mjx_errors: q('mjx-merror').length,
    // The text of the typeset math (MathJax's assistive MathML): a backslash there is
    // TeX that MathJax printed instead of typesetting (an underscore escaped
    // inside a text group).
    math_backslashes: q('mjx-assistive-mml').map(m => m.textContent)
      .filter(t => t.includes(String.fromCharCode(92))).slice(0, 5),
    raw_tex: /\\\\\\(|\\\\\\[|\\$\\$/.test(
      q('article').map(a => a.innerText).join(' ')),
    images: q('article img').map(i => ({src: i.getAttribute('src').slice(0, 80),
      alt: i.getAttribute('alt'),
      ok: i.complete && i.naturalWidth > 0 && i.naturalHeight > 0})),
    plotly_divs: q('.plotly-graph-div').length,
    plotly_drawn: q('.plotly-graph-div .main-svg').length,
    plotly_empty: q('.plotly-graph-div')
      .filter(d => !d.querySelector('.main-svg')).length,
    colab: q('a[href^="https://colab.research.google.com/github/"]').map(a => a.href),
    download_ipynb: q('a[href$=".ipynb"]').length,
    output_stderr: q('.cell_output .stderr, .cell_output .output.stderr, '
                     + '.cell_output .traceback').length,
    output_text: q('.cell_output').map(o => o.innerText).join('\\n'),
    links: q('a[href]').map(a => a.href),
    icons_drawn: q('svg.svg-inline--fa').length,
    icons_missing: q('i[class*="fa-"]').map(i => i.className),
    figures: q('article .cell_output img, article .plotly-graph-div').map((e) => {
      const figure = e.closest('figure');
      const part = (s) => (figure && figure.querySelector(s)
        ? figure.querySelector(s).textContent.trim() : '');
      return {what: e.tagName === 'IMG' ? 'image ' + (e.getAttribute('src') || '')
                .slice(-40) : 'interactive figure ' + e.id,
              number: part('.caption-number'), caption: part('.caption-text')};
    }),
    exercise_links: q('a[href]').filter((a) => /^exercises?$/i.test(
      a.textContent.replace(/\\s+/g, ' ').trim())).map((a) => a.getAttribute('href')),
  };
}"""

# Each plotly figure: its text alternative, its sliders and menus, the native controls
# book/assets/plotly-keyboard.js added, and the modebar's buttons.
FIGURE_PROBE = r"""() => Array.from(
  document.querySelectorAll('.plotly-graph-div')).map((gd) => {
  const layout = gd.layout || {};
  const text = document.getElementById(gd.getAttribute('aria-describedby') || '');
  const box = (gd.parentElement || gd).nextElementSibling;
  const controls = box && box.classList.contains('plotly-keyboard')
    ? Array.from(box.querySelectorAll('input, select, button')) : [];
  const named = (c) => ((c.labels && c.labels.length ? c.labels[0].textContent : '')
    || c.getAttribute('aria-label') || (c.tagName === 'BUTTON' ? c.textContent : ''))
    .trim();
  return {
    id: gd.id,
    text: text ? text.textContent.replace(/^Text alternative:\s*/, '').trim() : '',
    sliders: (layout.sliders || []).length,
    menus: (layout.updatemenus || []).length,
    controls: controls.map((c) => ({id: c.id || c.parentElement.id,
      tag: c.tagName.toLowerCase(),
      type: c.type || '', name: named(c),
      tabbable: c.tabIndex >= 0 && !c.disabled && c.offsetParent !== null})),
    modebar: Array.from(gd.querySelectorAll('.modebar-btn')).map((b) => ({
      tag: b.tagName.toLowerCase(), tabbable: b.tabIndex >= 0,
      name: (b.getAttribute('aria-label') || b.getAttribute('data-title') || '')})),
  };
})"""

# The state a control should change: the figure's data and its sliders' and menus'
# active entries.
FIGURE_STATE = """(id) => {
  const gd = document.getElementById(id);
  const layout = gd.layout || {};
  return {data: JSON.stringify(gd.data),
    sliders: (layout.sliders || []).map((s) => s.active || 0),
    menus: (layout.updatemenus || []).map((m) => m.active || 0)};
}"""


def use_figure_controls(page, figure: dict) -> list[str]:
    """Drive each native control of a figure with the keyboard; what did not work."""
    problems = []
    for control in figure["controls"]:
        kind = "sliders" if control["type"] == "range" else "menus"
        if control["tag"] == "button":  # a button group: clicked, not keyed
            continue
        index = int(control["id"].rsplit("-", 1)[1])
        before = page.evaluate(FIGURE_STATE, figure["id"])
        page.focus(f"#{control['id']}")
        key = "ArrowRight" if kind == "sliders" else "ArrowDown"
        if page.evaluate(
            "(id) => { const c = document.getElementById(id);"
            " return c.type === 'range' ? Number(c.value) === Number(c.max)"
            " : c.selectedIndex === c.options.length - 1; }",
            control["id"],
        ):
            key = "ArrowLeft" if kind == "sliders" else "ArrowUp"
        page.keyboard.press(key)
        try:
            page.wait_for_function(
                "([id, kind, k, old]) => {"
                " const l = document.getElementById(id).layout;"
                " const key = kind === 'sliders' ? 'sliders' : 'updatemenus';"
                " return ((l[key] || [])[k] || {}).active !== undefined"
                " && (l[key][k].active || 0) !== old; }",
                arg=[figure["id"], kind, index, before[kind][index]],
                timeout=10000,
            )
        except Exception:  # noqa: BLE001 - reported below
            problems.append(f"{figure['id']}: {key} on {control['name']!r} did nothing")
            continue
        after = page.evaluate(FIGURE_STATE, figure["id"])
        if after["data"] == before["data"] and kind == "sliders":
            problems.append(
                f"{figure['id']}: {control['name']!r} moved, the figure did not change"
            )
    return problems


def transfer_sizes(responses) -> dict[str, tuple[int, int]]:
    """(raw bytes, bytes sent gzip-compressed) of every response a page received.

    A static host compresses text; for already compressed files (PNG, woff2) gzip gains
    nothing, so the smaller of the two sizes is what such a host sends."""
    sizes = {}
    for response in responses:
        if response.url.startswith("data:") or response.status != 200:
            continue
        try:
            body = response.body()
        except Exception:  # noqa: BLE001 - e.g. a redirect or an aborted request
            continue
        sizes[response.url] = (len(body), min(len(body), len(gzip.compress(body, 6))))
    return sizes


def site_pages(site: Path) -> list[str]:
    """Every HTML page of the site, relative to its root (search/genindex included)."""
    pages = []
    for path in sorted(site.rglob("*.html")):
        rel = path.relative_to(site)
        if rel.parts[0] in SKIP_DIRS:
            continue
        pages.append(rel.as_posix())
    return pages


@pytest.fixture(scope="module")
def reports(site: Path) -> dict[str, PageReport]:
    """Open every page once; record everything the tests below look at.

    axe-core's audit of a page runs in its renderer while the next page loads (two
    pages open at a time): on two cores that hides most of its cost."""
    results: dict[str, PageReport] = {}
    pending = None  # (report, context) whose axe audit is still running

    def finish(report: PageReport, context) -> None:
        report.axe = axe_results(context.pages[0])
        context.close()

    with serve(site) as base, browser() as chromium:
        host = urlparse(base).netloc
        for rel in site_pages(site):
            report = PageReport(rel)
            # a fresh context per page: a first-time visitor, nothing cached
            context = chromium.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            responses = []
            page.on("response", lambda s: responses.append(s))

            def route(route, report=report):
                url = route.request.url
                if (
                    urlparse(url).scheme in ("http", "https")
                    and urlparse(url).netloc != host
                ):
                    report.external_requests.append(url)
                    return route.abort()
                return route.continue_()

            page.route("**/*", route)
            page.on(
                "console",
                lambda m, r=report: (
                    r.console_errors.append(m.text) if m.type == "error" else None
                ),
            )
            page.on("pageerror", lambda e, r=report: r.page_errors.append(str(e)))
            page.on(
                "requestfailed", lambda q, r=report: r.failed_requests.append(q.url)
            )
            page.on(
                "response",
                lambda s, r=report: (
                    r.bad_status.append(f"{s.status} {s.url}")
                    if s.status >= 400
                    else None
                ),
            )
            page.goto(base + rel, wait_until="load")
            page.wait_for_load_state("networkidle")
            wait_for_math(page)
            page.wait_for_timeout(200)
            report.dom = page.evaluate(DOM_PROBE)
            report.weight = transfer_sizes(responses)
            report.figures = page.evaluate(FIGURE_PROBE)
            for figure in report.figures:
                report.keyboard += use_figure_controls(page, figure)
            start_axe(page)
            if pending:
                finish(*pending)
            pending = (report, context)
            results[rel] = report
        if pending:
            finish(*pending)
        results["__base__"] = base  # type: ignore[assignment]
    return results


def pages_of(reports: dict) -> list[PageReport]:
    return [r for k, r in reports.items() if k != "__base__"]


def test_site_has_every_chapter(site: Path) -> None:
    pages = site_pages(site)
    notebooks = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    for stem in notebooks:
        assert f"notebooks/{stem}.html" in pages, (
            f"chapter {stem} is missing from the site"
        )


def test_no_console_or_page_errors(reports) -> None:
    problems = {
        r.path: r.console_errors + r.page_errors
        for r in pages_of(reports)
        if r.console_errors or r.page_errors
    }
    assert not problems, f"pages with browser errors: {problems}"


def test_no_failed_requests(reports) -> None:
    problems = {
        r.path: r.failed_requests for r in pages_of(reports) if r.failed_requests
    }
    assert not problems, f"pages with failed requests: {problems}"


def test_no_http_errors(reports) -> None:
    """Every response is a success: a 404 (a file the page asks for and the site lacks)
    fails even when the browser logs no error for it."""
    problems = {r.path: r.bad_status for r in pages_of(reports) if r.bad_status}
    assert not problems, f"pages with HTTP errors (404: add the file): {problems}"


def test_no_request_leaves_the_machine(reports) -> None:
    problems = {
        r.path: r.external_requests for r in pages_of(reports) if r.external_requests
    }
    assert not problems, (
        f"pages requesting external resources (vendor them): {problems}"
    )


def test_math_renders(reports) -> None:
    with_math = [r for r in pages_of(reports) if r.dom["math_nodes"]]
    assert with_math, "no page contains math: the probe is broken"
    for r in with_math:
        assert r.dom["mjx"] > 0, f"{r.path}: math present but MathJax rendered nothing"
        assert not r.dom["math_backslashes"], (
            f"{r.path}: TeX printed literally in rendered math: "
            f"{r.dom['math_backslashes']} (e.g. \\_ inside \\text{{...}}: use \\mathtt)"
        )
        assert r.dom["mjx_errors"] == 0, (
            f"{r.path}: {r.dom['mjx_errors']} MathJax errors"
        )
        assert not r.dom["raw_tex"], f"{r.path}: untypeset TeX delimiters in the text"


def test_images_have_size(reports) -> None:
    broken = {
        r.path: [i["src"] for i in r.dom["images"] if not i["ok"]]
        for r in pages_of(reports)
    }
    broken = {k: v for k, v in broken.items() if v}
    assert not broken, f"images that did not load: {broken}"


def test_images_say_what_they_show(reports) -> None:
    """Alt text from a cell's mystnb.image.alt metadata: not empty, not a file name."""
    bad = {}
    for r in pages_of(reports):
        if r.path.startswith("notebooks/"):
            alts = [(i["alt"] or "").strip() for i in r.dom["images"]]
            file_name = r"\.(png|jpe?g|svg|gif)$"
            wrong = [a for a in alts if not a or re.search(file_name, a)]
            if wrong:
                bad[r.path] = wrong
    assert not bad, f"images without a real alt text: {bad}"


def test_interactive_figures_render(reports) -> None:
    chapters = [r for r in pages_of(reports) if r.path.startswith("notebooks/")]
    assert any(r.dom["plotly_divs"] for r in chapters), (
        "no interactive figure on any chapter"
    )
    for r in chapters:
        assert r.dom["plotly_empty"] == 0, (
            f"{r.path}: {r.dom['plotly_empty']} plotly figures not drawn"
        )


def test_notebook_pages_have_colab_and_download(reports) -> None:
    for r in pages_of(reports):
        if r.path.startswith("notebooks/"):
            stem = r.path.removeprefix("notebooks/").replace(".html", ".ipynb")
            assert r.dom["colab"], f"{r.path}: no Colab link"
            assert all(u.endswith(f"/colab/{stem}") for u in r.dom["colab"]), (
                f"{r.path}: Colab links must open colab/{stem}: {r.dom['colab']}"
            )
            assert r.dom["download_ipynb"] >= 1, f"{r.path}: no .ipynb download link"


def test_no_tracebacks_or_stderr_in_outputs(reports) -> None:
    for r in pages_of(reports):
        assert r.dom["output_stderr"] == 0, (
            f"{r.path}: stderr or traceback output shown"
        )
        text = r.dom["output_text"]
        for marker in ("Traceback (most recent call last)", "Warning:", "Error:"):
            assert marker not in text, f"{r.path}: cell output contains {marker!r}"


def test_internal_links_resolve(reports, site: Path) -> None:
    """Every link into the site reaches a file and anchor the build wrote, PDFs
    included: a page links a PDF only once `make pdf` has printed it."""
    base = reports["__base__"]
    ids_cache: dict[Path, set[str]] = {}
    broken = []
    for r in pages_of(reports):
        for href in r.dom["links"]:
            if not href.startswith(base):
                continue
            url, fragment = urldefrag(href)
            target = site / unquote(urlparse(url).path).lstrip("/")
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{r.path} -> {href}")
                continue
            if fragment and target.suffix == ".html":
                if target not in ids_cache:
                    ids_cache[target] = set(
                        re.findall(r'id="([^"]+)"', target.read_text())
                    )
                if unquote(fragment) not in ids_cache[target]:
                    broken.append(f"{r.path} -> {href} (no such anchor)")
    assert not broken, "broken internal links:\n" + "\n".join(sorted(set(broken)))


def test_figures_are_opaque(site: Path) -> None:
    """Figures must read in dark mode: PNGs have an opaque background."""
    from PIL import Image

    pngs = sorted((site / "_images").glob("*.png"))
    assert pngs, "no figure images found in the site"
    for png in pngs:
        with Image.open(png) as image:
            rgba = image.convert("RGBA")
            corners = [
                rgba.getpixel((x, y))[3]
                for x in (0, rgba.width - 1)
                for y in (0, rgba.height - 1)
            ]
        assert min(corners) == 255, (
            f"{png.name} has a transparent background (unreadable in dark mode)"
        )


# Page weight: what a first-time visitor downloads, as a gzip-compressing host sends it.
MAX_PAGE_BYTES = 1_200_000  # a page without an interactive (plotly) figure
MAX_CHAPTER_BYTES = 2_000_000  # a chapter page, plotly.js included


def test_page_weights(reports) -> None:
    """Report every page's weight (_build/page-weights.json) and hold the budgets."""
    rows = sorted(pages_of(reports), key=lambda r: r.path)
    table = {
        r.path: {
            "sent": r.sent,
            "raw": r.raw,
            "requests": len(r.weight),
            "plotly": bool(r.dom["plotly_divs"]),
        }
        for r in rows
    }
    (BUILD / "page-weights.json").write_text(json.dumps(table, indent=1))
    print(f"\n{'page':<44} {'sent (gzip)':>12} {'raw':>10} {'requests':>9}")
    for r in rows:
        print(
            f"{r.path:<44} {r.sent / 1e6:9.2f} MB {r.raw / 1e6:7.2f} MB "
            f"{len(r.weight):9d}"
        )
    too_heavy = []
    for r in rows:
        chapter = r.path.startswith("notebooks/")
        budget = MAX_CHAPTER_BYTES if chapter else MAX_PAGE_BYTES
        if r.dom["plotly_divs"] and not chapter:
            budget = MAX_CHAPTER_BYTES
        if r.sent > budget:
            biggest = sorted(r.weight.items(), key=lambda kv: -kv[1][1])[:4]
            largest = [(u.split("/")[-1], s) for u, (_, s) in biggest]
            too_heavy.append(
                f"{r.path}: {r.sent / 1e6:.2f} MB > {budget / 1e6:.1f} MB;"
                f" largest: {largest}"
            )
    assert not too_heavy, "pages over budget:\n" + "\n".join(too_heavy)


def test_every_icon_is_drawn(reports) -> None:
    """Font Awesome is cut down to the icons the site uses (bookkit/sphinx): each icon
    must still be replaced by its SVG."""
    assert any(r.dom["icons_drawn"] for r in pages_of(reports)), (
        "no icon drawn anywhere"
    )
    missing = {
        r.path: r.dom["icons_missing"]
        for r in pages_of(reports)
        if r.dom["icons_missing"]
    }
    assert not missing, f"icons not drawn (missing from the subset?): {missing}"


def test_plotly_loads_only_where_a_figure_is(reports) -> None:
    for r in pages_of(reports):
        loads = any(urlparse(u).path.endswith("/plotly.min.js") for u in r.weight)
        assert loads == bool(r.dom["plotly_divs"]), (
            f"{r.path}: plotly.js {'loaded' if loads else 'missing'} with "
            f"{r.dom['plotly_divs']} plotly figures"
        )


def test_figures_use_only_traces_the_vendored_plotly_draws() -> None:
    """The site ships plotly's cartesian bundle (bookkit/site/vendor.py): every trace of
    every executed figure must be of a type it draws."""
    from bookkit.site.vendor import PLOTLY_TRACES

    used: dict[str, set[str]] = {}
    for path in sorted(EXECUTED_NOTEBOOKS.glob("*.ipynb")):
        for cell in read(path).cells:
            for output in cell.get("outputs", []):
                figure = output.get("data", {}).get("application/vnd.plotly.v1+json")
                for trace in (figure or {}).get("data", []):
                    used.setdefault(trace.get("type", "scatter"), set()).add(path.stem)
    assert used, "no plotly figure in the executed notebooks: the probe is broken"
    missing = {t: sorted(p) for t, p in used.items() if t not in PLOTLY_TRACES}
    assert not missing, (
        f"trace types the vendored plotly.js cannot draw: {missing}; "
        "vendor a bigger bundle in bookkit/site/vendor.py"
    )


# ------------------------------------------------------------------ accessibility


def test_accessibility_no_serious_violations(reports) -> None:
    """axe-core's default rules on every page: no serious or critical violation.
    Every violation, by impact, goes to _build/axe-report.json."""
    table = {r.path: r.axe for r in sorted(pages_of(reports), key=lambda r: r.path)}
    counts: dict[str, int] = {}
    for violations in table.values():
        for v in violations:
            counts[v["impact"]] = counts.get(v["impact"], 0) + len(v["nodes"])
    (BUILD / "axe-report.json").write_text(
        json.dumps({"elements_by_impact": counts, "pages": table}, indent=1)
    )
    print(f"\naxe-core on {len(table)} pages, elements by impact: {counts}")
    serious = {
        path: [
            f"{v['id']} ({v['impact']}): {v['help']}: {v['nodes'][:3]}"
            for v in violations
            if v["impact"] in ("serious", "critical")
        ]
        for path, violations in table.items()
    }
    serious = {k: v for k, v in serious.items() if v}
    assert not serious, "axe-core violations:\n" + "\n".join(
        f"{path}: {found}" for path, found in serious.items()
    )


def test_every_figure_is_numbered_and_captioned(reports) -> None:
    """A figure cell carries mystnb.figure {caption, name}: the site shows "Figure N.k"
    and the caption under every image and interactive figure of a chapter; a guide's
    pages are not numbered, so its figures are "Figure k" (Sphinx counts them across
    the unnumbered pages)."""
    bad = {}
    for r in pages_of(reports):
        chapter = re.match(r"notebooks/\d\d_", r.path)
        number = r"Figure \d+\.\d+" if chapter else r"Figure \d+"
        wrong = [
            f["what"]
            for f in r.dom["figures"]
            if not re.fullmatch(number, f["number"]) or not f["caption"]
        ]
        if wrong:
            bad[r.path] = wrong
    assert not bad, f"figures without a number and caption (mystnb.figure): {bad}"


def test_interactive_figures_have_a_text_alternative(reports) -> None:
    """bookkit/sphinx/figure_text.py shows mystnb.image.alt under plotly figures."""
    chapters = [r for r in pages_of(reports) if r.dom["plotly_divs"]]
    assert chapters, "no interactive figure found: the probe is broken"
    bad = {
        r.path: [f["id"] for f in r.figures if len(f["text"]) < 20]
        for r in chapters
    }
    bad = {k: v for k, v in bad.items() if v}
    assert not bad, f"interactive figures without a text alternative: {bad}"


def test_figure_controls_work_from_the_keyboard(reports) -> None:
    """Every slider and menu of a plotly figure has a labelled native control in the tab
    order, and its keys move the figure; the modebar's buttons are buttons."""
    problems = []
    figures = [(r.path, f) for r in pages_of(reports) for f in r.figures]
    assert any(f["sliders"] for _, f in figures), "no slider anywhere: probe broken"
    for path, f in figures:
        kinds = [c["type"] for c in f["controls"]]
        if kinds.count("range") != f["sliders"]:
            problems.append(f"{path} {f['id']}: {f['sliders']} sliders, {kinds}")
        wanted_menus = f["menus"]
        menus = sum(c["tag"] == "select" for c in f["controls"])
        groups = len({c["id"] for c in f["controls"] if c["tag"] == "button"} - {""})
        if wanted_menus and not (menus or groups):
            problems.append(f"{path} {f['id']}: menus without a native control")
        for c in f["controls"]:
            if not (c["tabbable"] and c["name"]):
                problems.append(f"{path} {f['id']}: control {c} not tabbable or named")
        for b in f["modebar"]:
            if not (b["tag"] == "button" and b["tabbable"] and b["name"]):
                problems.append(f"{path} {f['id']}: modebar {b}")
            if "share" in b["name"].lower():
                problems.append(f"{path} {f['id']}: {b['name']!r} uploads the figure")
    problems += [p for r in pages_of(reports) for p in r.keyboard]
    assert not problems, "\n".join(problems)


def test_tab_reaches_a_figure_slider(reports, site: Path) -> None:
    """From the top of a chapter, the Tab key reaches a figure's slider; an arrow key
    then moves the figure."""
    path = next(
        (r.path for r in pages_of(reports) if any(f["sliders"] for f in r.figures)),
        None,
    )
    assert path, "no page with a slider"
    with serve(site) as base, browser() as chromium:
        page = chromium.new_page(viewport={"width": 1280, "height": 900})
        page.goto(base + path, wait_until="load")
        page.wait_for_load_state("networkidle")
        page.evaluate(
            "() => document.addEventListener('focusin', (event) => {"
            " const e = event.target; if (e.type === 'range'"
            " && e.closest('.plotly-keyboard')) window.__slider = e; })"
        )
        for _ in range(100):  # up to 2000 presses, 20 at a time
            for _ in range(20):
                page.keyboard.press("Tab")
            if page.evaluate("() => !!window.__slider"):
                break
        assert page.evaluate("() => !!window.__slider"), (
            f"{path}: Tab never reaches the figure's slider"
        )
        page.evaluate("() => window.__slider.focus()")  # back to it, as Shift+Tab would
        before = page.evaluate("() => document.activeElement.value")
        page.keyboard.press("End" if before == "0" else "Home")
        assert page.evaluate("() => document.activeElement.value") != before


def test_links_to_exercises_name_them(reports) -> None:
    """A link to an exercise reads "Exercise N.k", never a bare "Exercise"."""
    bare = {r.path: r.dom["exercise_links"] for r in pages_of(reports)}
    bare = {k: v for k, v in bare.items() if v}
    assert not bare, (
        "links whose text is only 'Exercise': write {ref}`Exercise N.k <label>`: "
        f"{bare}"
    )
