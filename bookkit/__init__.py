"""bookkit: the machinery of the book *Position Embeddings in Transformers*.

The chapters are notebooks; everything else (keeping them consistent, the editions a
course needs, executing and building the site, the checks) lives here, in five layers.
A module imports only from its own layer and the layers above it
(``tests/tools/test_architecture.py`` checks it):

1. **Foundations** — ``paths`` (every path), ``config`` (``_config.yml`` and
   ``_toc.yml``, read once), ``site`` (serving a folder and driving Chromium, the
   vendored JavaScript the site serves itself).
2. **The model** — ``notebook`` (the tag vocabulary, the Colab badge, the solution
   filter, output clearing, the student notebook), ``chapters`` (the registry, derived
   from ``_toc.yml``), ``licence``.
3. **The sources and their editions** — ``sync`` (normalise the notebooks, keep the
   ``copy:`` cells identical), ``editions`` (Colab, student notebooks, the student site,
   the nbgrader hand-outs, slides, PDF), ``leaks`` (find solution text in a folder).
4. **Running** — ``execute`` (the build's two-lane execution), ``run`` (one notebook
   alone, as a learner runs it), ``autograde`` (grading hand-ins).
5. **Checking and measuring** — ``testing`` (what the tests share), ``measure``
   (benchmarks, portability, mutation testing, reading times), ``sphinx`` (the site's
   Sphinx extensions), ``ipython`` (the build kernels' profile; data, not code).

Every tool is a module with a ``main``: ``python -m bookkit.<module>``; the Makefile
names them all. CONTRIBUTING.md explains the house in one page.
"""
