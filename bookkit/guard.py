"""Grading in a state the submission cannot have changed.

An exercise check decides with library functions (``np.all``, ``torch.allclose``, the
built-in ``abs``), and a submission runs in the same kernel as the checks: one line such
as ``np.all = lambda *a, **k: True`` would make every check pass. So the kernels that
grade submissions (``bookkit.autograde``) start with :func:`snapshot`, run by the build
kernels' IPython profile when ``BOOK_GRADING=1``, before the first cell: it records the
attributes of every module the checks rely on. Each graded check cell then calls
:func:`restore` first (inside nbgrader's hidden-test block, which no hand-out contains):
every attribute the submission replaced or deleted is put back, and each one is printed
as a line ``BOOK-TAMPERING: numpy.all replaced``, which the grader reports in the
tampering column. The check's own definitions are re-run after it, so that the names the
checks use (``np``, ``torch``) are the real modules again.

A submission that patches a library inside the function it hands in (at call time) is
caught twice: the checks bind the functions they rely on when they are defined (after
:func:`restore`), and :func:`restore` runs again after the check, reporting anything
changed meanwhile.
"""

from __future__ import annotations

import importlib

# The modules whose functions the checks call. Submodules are looked up by name.
GUARDED = (
    "builtins",
    "copy",
    "math",
    "numpy",
    "numpy.linalg",
    "numpy.testing",
    "scipy.special",
    "torch",
    "torch.linalg",
    "torch.nn.functional",
    "torch.testing",
)
# Classes whose methods a check calls on the candidate's output.
GUARDED_CLASSES = (("torch", "Tensor"),)
# Modules that replace a guarded function when they are first imported: torch._dynamo
# wraps torch.manual_seed (and `transformers`, `torch.compile`, ... import it). They are
# imported before the snapshot, so that a library's own change is not reported as the
# submission's.
SELF_PATCHING = ("torch._dynamo",)
MARK = "BOOK-TAMPERING: "
# What the kernel itself replaces for every cell it runs (ipykernel forwards input()).
KERNEL_OWN = {"builtins.input", "getpass.getpass"}

_SNAPSHOT: dict[str, dict[str, object]] = {}


def _targets() -> dict[str, object]:
    """The guarded modules that can be imported here, and the guarded classes."""
    found: dict[str, object] = {}
    for name in GUARDED:
        try:
            found[name] = importlib.import_module(name)
        except ImportError:
            continue
    for module, cls in GUARDED_CLASSES:
        if module in found:
            found[f"{module}.{cls}"] = getattr(found[module], cls)
    return found


def snapshot() -> int:
    """Record every attribute of the guarded modules and classes (after importing the
    modules that patch them on import); return how many."""
    for name in SELF_PATCHING:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
    _SNAPSHOT.clear()
    for name, target in _targets().items():
        _SNAPSHOT[name] = dict(vars(target))
    return sum(len(v) for v in _SNAPSHOT.values())


def _shadowing(target: object, recorded: dict[str, object]) -> list[str]:
    """Attributes added to a guarded class that hide a method of its bases (setting
    ``torch.Tensor.allclose`` hides the C base class's ``allclose``)."""
    if not isinstance(target, type):
        return []
    bases = target.__mro__[1:]
    return [a for a in vars(target) if a not in recorded
            and any(a in vars(base) for base in bases)]


def changes() -> list[str]:
    """What differs from the snapshot: ``numpy.all replaced``, ``math.pi deleted``."""
    found = []
    targets = _targets()
    for name, recorded in _SNAPSHOT.items():
        target = targets.get(name)
        now = vars(target) if target is not None else {}
        for attribute, value in recorded.items():
            if f"{name}.{attribute}" in KERNEL_OWN:
                continue
            if attribute not in now:
                found.append(f"{name}.{attribute} deleted")
            elif now[attribute] is not value:
                found.append(f"{name}.{attribute} replaced")
        found += [f"{name}.{a} replaced" for a in _shadowing(target, recorded)]
    return found


def restore(report: bool = True) -> list[str]:
    """Put back every guarded attribute a submission replaced or deleted; print one
    ``BOOK-TAMPERING:`` line for each (the grader collects them); return them."""
    found = changes()
    targets = _targets()
    for name, recorded in _SNAPSHOT.items():
        target = targets.get(name)
        if target is None:
            continue
        for attribute, value in recorded.items():
            now = vars(target)
            if f"{name}.{attribute}" in KERNEL_OWN:
                continue
            if attribute not in now or now[attribute] is not value:
                try:
                    setattr(target, attribute, value)
                except (AttributeError, TypeError):  # read-only: cannot be patched
                    continue
        for attribute in _shadowing(target, recorded):
            delattr(target, attribute)
    if report:
        for line in found:
            print(MARK + line)
    return found


def taken() -> bool:
    """Whether a snapshot was taken (a grading kernel)."""
    return bool(_SNAPSHOT)
