"""The glossary sends each term to where the book defines it."""

from __future__ import annotations

import re

from bookkit.paths import BOOK

LINK = re.compile(r"\{(?:doc|ref|prf:ref|numref)\}`[^`]+`")


def entries() -> dict[str, str]:
    body = (BOOK / "glossary.md").read_text().split("```{glossary}", 1)[1]
    found = {}
    for chunk in re.split(r"(?m)^(?=\S)", body):
        name = chunk.split("\n", 1)[0].strip()
        if name and not name.startswith((":", "```")):
            found[name] = chunk
    return found


def test_every_entry_links_to_where_it_is_defined() -> None:
    unlinked = [name for name, text in entries().items() if not LINK.search(text)]
    assert len(entries()) > 40, "the glossary was not read"
    assert not unlinked, f"entries without a link to their definition: {unlinked}"


def test_configuration_keys_and_gqa_have_entries() -> None:
    names = set(entries())
    for key in ("rope_parameters", "rope_scaling", "rope_theta", "inv_freq",
                "partial_rotary_factor", "original_max_position_embeddings",
                "mrope_section", "Grouped-query attention (GQA)"):
        assert key in names, f"no glossary entry for {key}"
