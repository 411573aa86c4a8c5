"""Start-up of the book build's kernels: what only the static website needs.

Runs before a notebook's first cell when IPYTHONDIR points at bookkit/ipython (the
Makefile exports it for build, tests and bench). Colab and a learner's Jupyter never run
it.
"""

import hashlib
import os
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded from a model hub
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no progress bars on stderr
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
warnings.filterwarnings(
    "ignore", message="IProgress not found"
)  # tqdm without ipywidgets


def _register_book_renderer() -> None:
    """Figures carry plotly's JSON (for Jupyter) and HTML the site draws offline."""
    import plotly.io as pio
    from plotly.io.base_renderers import MimetypeRenderer, PlotlyRenderer

    # No plotly logo, and no "Share chart" button: it would upload the figure to
    # Plotly's cloud, and nothing on this site leaves the reader's machine.
    config = {"displaylogo": False, "modeBarButtonsToRemove": ["sendChartToCloud"]}

    class BookRenderer(MimetypeRenderer):
        def to_mimebundle(self, fig_dict):
            bundle = PlotlyRenderer(config=config).to_mimebundle(fig_dict)
            digest = hashlib.sha1(pio.to_json(fig_dict).encode()).hexdigest()[:12]
            bundle["text/html"] = pio.to_html(
                fig_dict,
                full_html=False,
                include_plotlyjs=False,
                div_id="plot-" + digest,
                config=config,
            )
            return bundle

    pio.renderers["book"] = BookRenderer()
    pio.renderers.default = "book"
    pio.templates.default = "plotly_white"


_register_book_renderer()
del _register_book_renderer


def _lower_priority() -> None:
    """BOOK_KERNEL_NICE=n (bookkit/execute.py's background lane): run this
    kernel's session at nice n too.

    The kernel inherits its process's nice value from the lane's worker. But Jupyter
    starts every kernel in a session of its own, and with Linux's autogroup scheduling
    the CPU is shared between sessions before a process's nice value counts (a kernel at
    nice 19 would still get a core of its own beside a two-thread kernel). Where the
    system has no autogroups, or does not let us set one, the priority is only an
    optimisation of the build's time, so nothing else changes."""
    nice = int(os.environ.get("BOOK_KERNEL_NICE", "0"))
    if nice <= 0:
        return
    try:
        with open("/proc/self/autogroup", "w") as autogroup:
            autogroup.write(str(nice))
    except OSError:
        pass


_lower_priority()
del _lower_priority
