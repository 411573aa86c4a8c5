"""The editions of the book, each a thin writer on the notebook model
(``bookkit.notebook``):

========================  =======================================  ===================
edition                   module                                   made by
========================  =======================================  ===================
Colab, Colab student      ``bookkit.editions.colab``               ``make sync``
student notebooks         ``bookkit.editions.student``             ``make student``
student site              ``bookkit.editions.student_site``        ``make
                                                                   book-no-solutions``
nbgrader hand-outs        ``bookkit.editions.handouts``            ``make assignments``
slides                    ``bookkit.editions.slides``              ``make book``
PDF                       ``bookkit.editions.pdf``                 ``make pdf``
========================  =======================================  ===================

``python -m bookkit.editions [--check]`` writes (or checks) the committed editions: the
Colab editions of every page in ``colab/``, and of every chapter in ``colab/student/``.
"""

from __future__ import annotations

import argparse

from bookkit.chapters import page_paths
from bookkit.notebook import read


def main(argv: list[str] | None = None) -> int:
    from bookkit.editions.colab import write_editions

    parser = argparse.ArgumentParser(description="Write the committed editions.")
    parser.add_argument(
        "--check", action="store_true", help="report stale editions, change nothing"
    )
    args = parser.parse_args(argv)
    stale = write_editions({p: read(p) for p in page_paths()}, check=args.check)
    if stale and args.check:
        print("Editions are stale; run `make sync`:")
        print("\n".join("  " + s for s in stale))
        return 1
    print("\n".join(stale) if stale else "editions up to date")
    return 0
