"""Small helpers shared by several test files (not tests themselves)."""

from __future__ import annotations

import pytest
import torch


def passes(check, candidate, count: int, capsys) -> None:
    """The exercise check accepts `candidate` and reports how many checks it ran."""
    check(candidate)
    assert capsys.readouterr().out.strip() == f"All {count} checks passed."


def fails(check, candidate, *needles: str) -> str:
    """The exercise check rejects `candidate`, shows the failing input and says each of
    `needles`; returns its message."""
    with pytest.raises(AssertionError) as info:
        check(candidate)
    message = str(info.value)
    assert "input:" in message, f"no input shown in:\n{message}"
    for needle in needles:
        assert needle in message, f"{needle!r} not in:\n{message}"
    return message


class RecordingAdamW(torch.optim.AdamW):
    """AdamW that records the learning rate and weight decay of every step."""

    seen: list[tuple[float, float]] = []

    def step(self, closure=None):
        group = self.param_groups[0]
        RecordingAdamW.seen.append((group["lr"], group["weight_decay"]))
        return super().step(closure)
