"""IPython configuration of the book build's kernels (see bookkit/ipython/README.md)."""

c = get_config()  # noqa: F821 - provided by IPython when it loads this file

c.HistoryManager.hist_file = ":memory:"  # write no history database into the repository
c.InlineBackend.figure_formats = {"png"}
# Applied when the inline backend starts: figures readable on the site in light and dark
# mode.
c.InlineBackend.rc = {
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "axes.facecolor": "white",
    "figure.dpi": 100,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "figure.figsize": (7, 4),
}
