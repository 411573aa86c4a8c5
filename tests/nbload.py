"""Load the functions a chapter defines straight from its notebook.

Only cells tagged ``export`` are executed (imports and definitions, no heavy work), so
the
code under test is exactly the code the reader sees on the page.
"""

from __future__ import annotations

import functools
import sys
import types

from nbtools import NOTEBOOKS, export_source


@functools.cache
def chapter(stem: str) -> types.ModuleType:
    """Execute the ``export`` cells of ``notebooks/<stem>.ipynb`` as a module."""
    path = NOTEBOOKS / f"{stem}.ipynb"
    if not path.is_file():
        raise FileNotFoundError(f"no notebook {path}")
    module = types.ModuleType(f"chapter_{stem}")
    module.__file__ = str(path)
    sys.modules[module.__name__] = (
        module  # dataclasses and pickling look modules up by name
    )
    code = compile(export_source(path), f"{path.name}[export cells]", "exec")
    exec(code, module.__dict__)  # noqa: S102 - the notebook is this repository's own code
    return module
