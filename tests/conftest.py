"""Shared fixtures: real stores on temporary paths, the real embedder (loaded once per process)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from hypothesis import settings

from hindsight_core import Hindsight

# Model and tokenizer loading make first calls slow; timing belongs in benchmarks, not in tests.
settings.register_profile("hindsight", deadline=None, max_examples=100)
settings.load_profile("hindsight")

CONVERSATION = [
    {"speaker": "Caroline", "text": "I went to a LGBTQ support group yesterday and it was so powerful.", "id": "D1:1"},
    {"speaker": "Melanie", "text": "That's great! I painted a sunrise by the lake last week.", "id": "D1:2"},
    {"speaker": "Caroline", "text": "I'm thinking of becoming a counselor in Boston next year.", "id": "D1:3"},
    {"speaker": "Melanie", "text": "My kids love the new puppy, we named him Oscar.", "id": "D1:4"},
    {"speaker": "Caroline", "text": "Oscar is a lovely name! Is he a golden retriever?", "id": "D1:5"},
    {"speaker": "Melanie", "text": "Yes, and he already chewed my favourite running shoes.", "id": "D1:6"},
]


@pytest.fixture()
def hs(tmp_path: Path) -> Iterator[Hindsight]:
    """A fresh embedded Hindsight (SQLite + persistent Chroma) in a temporary folder."""
    with Hindsight.open(tmp_path / "memory") as h:
        yield h


@pytest.fixture()
def conversation() -> list[dict[str, str]]:
    """A short two-speaker conversation with message ids."""
    return [dict(m) for m in CONVERSATION]
