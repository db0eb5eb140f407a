"""Shared fixtures: real stores on temporary paths, the real embedder (loaded once per process)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
# The suite runs on MiniLM: the default mpnet-int8 embeds about five times slower, and most tests are about what a
# bank does with its vectors, not which model made them. tests/test_default_embedder.py lifts the pin and checks
# the default (new stores get mpnet-int8, a store keeps the embedder it was built with); the mpnet tests name it.
os.environ.setdefault("HINDSIGHT_EMBEDDER", "minilm")

from hypothesis import settings
from support.conversation import CONVERSATION

from hindsight_core import Hindsight
from hindsight_core.llm import LocalLLM, shutdown_local_servers

# Model and tokenizer loading make first calls slow; timing belongs in benchmarks, not in tests.
settings.register_profile("hindsight", deadline=None, max_examples=100)
settings.load_profile("hindsight")



@pytest.fixture()
def hs(tmp_path: Path) -> Iterator[Hindsight]:
    """A fresh embedded Hindsight (SQLite + persistent Chroma) in a temporary folder."""
    with Hindsight.open(tmp_path / "memory") as h:
        yield h


@pytest.fixture(scope="session")
def qwen() -> Iterator[LocalLLM]:
    """The bundled Qwen2.5-1.5B for the real-model tests: one llama.cpp server per test process (per worker under
    pytest-xdist), loaded on first use and shared by every test file instead of reloaded by each."""
    llm = LocalLLM("qwen2.5-1.5b")
    yield llm
    shutdown_local_servers()


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
    # processes killed and raced on both backends; the explorer's pages in a real browser
    "test_correct_failures.py", "test_forget_failures.py", "test_explorer_timeline.py",
    "test_explorer_timeline_bench.py", "test_explorer_overview.py", "test_explorer_entity.py",
    "test_explorer_opinion.py",
}
SLOW_TESTS = {"test_every_page_loads_without_console_errors", "test_documents_and_jobs_pages_list_and_filter_by_status",
              "test_graph_renders_and_shows_an_observation", "test_recall_playground_returns_the_expected_memory",
              "test_forget_asks_for_confirmation_and_the_token",  # the explorer's pages in a real browser
              "test_shipped_thresholds_hold_on_the_labelled_test_half", "test_forget_across_stores",
              "test_retain_with_the_llm_waits_for_the_facts_unless_told_not_to",
              "test_a_header_nested_a_million_deep_is_one_line_under_json",
              "test_bench_scale_writes_latencies_and_the_bare_chroma_floor"}


# ``scripts/test.sh`` runs two pytest-xdist workers (``-n 2 --dist loadfile --no-loadscope-reorder``): each test file
# runs whole on one worker, so a module's fixtures are built once (one model per worker: ``qwen``), and each worker's
# conformance suite wipes a Bolt database of its own (conformance/conftest.py). The costliest files (measured with
# ``--durations``) are sent first, so that the workers finish together.
HEAVY_FIRST = ("test_cara_llm.py", "test_notebooks.py", "conformance/", "torture/test_kill_torture.py",
               "test_bench.py", "test_raw_first_llm.py", "test_langchain_llm.py", "test_opinions_bad_news.py",
               "test_llm_retain.py", "test_llamaindex_llm.py", "test_correct_failures.py", "test_forget_failures.py")


def _send_order(where: str, slow: bool) -> int:
    """Heavy files in ``HEAVY_FIRST`` order, then the rest of the slow tier, then the fast one."""
    for rank, prefix in enumerate(HEAVY_FIRST):
        if where.startswith(prefix):
            return rank
    return len(HEAVY_FIRST) + (0 if slow else 1)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the slow tier (see ``SLOW_FILES``) and collect the costliest files first (see ``HEAVY_FIRST``)."""
    root = Path(__file__).parent
    order: dict[str, int] = {}
    for item in items:
        where = Path(str(item.fspath)).relative_to(root).as_posix()
        slow = bool(item.get_closest_marker("llm") or where in SLOW_FILES or item.originalname in SLOW_TESTS)
        if slow:
            item.add_marker(pytest.mark.slow)
        order[where] = min(order.get(where, len(HEAVY_FIRST) + 1), _send_order(where, slow))
    # By file (a file's tests stay together and in their order: its module fixtures are built once).
    items.sort(key=lambda item: order[Path(str(item.fspath)).relative_to(root).as_posix()])
