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


# The fast tier (``bash scripts/test.sh -m "not slow"``) leaves out what costs minutes: the real local LLM (the
# ``llm`` marker), other processes and servers started per test, browsers, notebooks and wheel builds. Listed by
# file so that a new slow test in one of them joins the tier by itself; measured with ``--durations``.
SLOW_FILES = {
    "torture/test_kill_torture.py", "conformance/test_concurrency.py", "conformance/test_servers.py",
    "test_mcp_server.py", "test_packaging.py", "test_bench.py", "test_bench_cara.py", "test_notebooks.py",
    "test_process_guard.py", "test_public_api_errors.py", "test_raw_first.py", "test_migrate.py",
    "test_long_inputs.py", "test_embedders_mpnet.py", "test_embedders_bench.py", "test_repeatable_recall.py",
}
SLOW_TESTS = {"test_every_page_loads_without_console_errors", "test_documents_and_jobs_pages_list_and_filter_by_status",
              "test_graph_renders_and_shows_an_observation", "test_recall_playground_returns_the_expected_memory",
              "test_forget_asks_for_confirmation_and_the_token",  # the explorer's pages in a real browser
              "test_shipped_thresholds_hold_on_the_labelled_test_half", "test_forget_across_stores",
              "test_retain_with_the_llm_waits_for_the_facts_unless_told_not_to",
              "test_a_header_nested_a_million_deep_is_one_line_under_json",
              "test_bench_scale_writes_latencies_and_the_bare_chroma_floor"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the slow tier (see ``SLOW_FILES``)."""
    root = Path(__file__).parent
    for item in items:
        where = Path(str(item.fspath)).relative_to(root).as_posix()
        if item.get_closest_marker("llm") or where in SLOW_FILES or item.originalname in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
