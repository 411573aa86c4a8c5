"""The book's tooling: sync, student notebooks, slides, runner, benchmark, site helpers.

Importable as a package (``from tools.paths import ROOT``); pytest puts both the
repository root
and ``tools/`` on ``sys.path`` (pytest.ini ``pythonpath``), so the modules also import
by their
own names (``from nbtools import read``) as the scripts in this folder do.
"""

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:  # the modules import each other by name, as scripts do
    sys.path.append(_HERE)
