"""What the tests share: a chapter's functions loaded from its notebook, and the two
assertions every exercise-check test makes.

Only cells tagged ``export`` are executed (imports and definitions, no heavy work), so
the code under test is exactly the code the reader sees on the page.
"""

from __future__ import annotations

import functools
import sys
import types

from bookkit.chapters import chapter as find_chapter
from bookkit.notebook import export_source


@functools.cache
def load_chapter(key: int | str) -> types.ModuleType:
    """Execute the ``export`` cells of a chapter (number or stem) as a module."""
    path = find_chapter(key).path
    module = types.ModuleType(f"chapter_{path.stem}")
    module.__file__ = str(path)
    # dataclasses and pickling look modules up by name
    sys.modules[module.__name__] = module
    code = compile(export_source(path), f"{path.name}[export cells]", "exec")
    exec(code, module.__dict__)  # noqa: S102 - the notebook is this repository's own code
    return module


def passes(check, candidate, count: int, capsys) -> None:
    """The exercise check accepts ``candidate`` and reports how many checks it ran."""
    check(candidate)
    assert capsys.readouterr().out.strip() == f"All {count} checks passed."


def fails(check, candidate, *needles: str) -> str:
    """The exercise check rejects ``candidate``, shows the failing input and says each
    of ``needles``; returns its message."""
    import pytest

    with pytest.raises(AssertionError) as info:
        check(candidate)
    message = str(info.value)
    assert "input:" in message, f"no input shown in:\n{message}"
    for needle in needles:
        assert needle in message, f"{needle!r} not in:\n{message}"
    return message


def check_source(key: int | str, name: str) -> str:
    """The source of one check function, as the chapter (and its student edition)
    shows it."""
    from bookkit.notebook import read

    for cell in read(find_chapter(key).path).cells:
        if f"def {name}(" in cell.source:
            text = cell.source[cell.source.index(f"def {name}(") :]
            end = text.find("\ndef ", 1)
            return text if end < 0 else text[:end]
    raise LookupError(f"no check function {name} in chapter {key}")


def assert_holds_values(key: int | str, name: str, forbidden: tuple[str, ...]) -> None:
    """A check holds expected values and recognises mistakes; it never computes the
    answer: none of ``forbidden`` (the solution's tools) appears in its source."""
    source = check_source(key, name)
    for text in forbidden:
        assert text not in source, f"{name} computes the answer with {text!r}"
