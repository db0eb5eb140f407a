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
from support.conversation import CONVERSATION

from hindsight_core import Hindsight

# Model and tokenizer loading make first calls slow; timing belongs in benchmarks, not in tests.
settings.register_profile("hindsight", deadline=None, max_examples=100)
settings.load_profile("hindsight")



@pytest.fixture()
def hs(tmp_path: Path) -> Iterator[Hindsight]:
    """A fresh embedded Hindsight (SQLite + persistent Chroma) in a temporary folder."""
    with Hindsight.open(tmp_path / "memory") as h:
        yield h


@pytest.fixture()
def conversation() -> list[dict[str, str]]:
    """A short two-speaker conversation with message ids."""
    return [dict(m) for m in CONVERSATION]
