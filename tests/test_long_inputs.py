"""Long inputs: a long text is cut into passage units with character offsets, recall returns passages, links stay
bounded per unit, a message list has a cap, and a long retain that fails or is killed half way leaves the stores
consistent. Real SQLite, Chroma and embedder; a scripted model only where the facts job's prompts are checked."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scripted_llm import ScriptedLLM

from hindsight_bench.long_inputs import load_needles, long_text
from hindsight_core import Hindsight, TooManyMessagesError
from hindsight_core.config import LinkSettings, Settings
from hindsight_core.errors import ExtractionError
from hindsight_core.models import DocumentStatus, Link, LinkType, Memory, Message
from hindsight_core.retain.links import cap_links
from hindsight_core.runtime.integrity import check
from hindsight_core.text.passages import Passage, passage_spans, split_long_messages

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
SPAN = re.compile(r"^chars:(\d+)-(\d+)$")


def chars_span(memory: Memory) -> tuple[int, int]:
    (found,) = [m for s in memory.sources if (m := SPAN.match(s))]
    return int(found.group(1)), int(found.group(2))


def assert_clean(hs: Hindsight) -> None:
    report = check(hs)
    assert report.ok, report


# --- cutting ------------------------------------------------------------------------------------------------------


def test_passages_cover_the_text_in_order_within_the_size_and_end_at_paragraphs_or_sentences() -> None:
    text, _ = long_text(20_000)
    text = "  \n" + text + "\n\n  "
    spans = passage_spans(text, 1200)
    assert len(spans) > 15
    assert all(0 < end - start <= 1200 for start, end in spans)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in pairwise(spans))
    # Nothing but whitespace falls between passages, and no passage starts or ends with whitespace.
    assert " ".join(text[s:e] for s, e in spans).split() == text.split()
    assert all(not text[s].isspace() and not text[e - 1].isspace() for s, e in spans)
    # Every passage but the last ends a sentence (the filler has them every ~100 characters).
    assert all(text[e - 1] in ".!?" for _, e in spans[:-1])


def test_a_run_without_spaces_is_cut_at_the_size_and_short_text_is_one_passage() -> None:
    assert passage_spans("x" * 2500, 1000) == [(0, 1000), (1000, 2000), (2000, 2500)]
    assert passage_spans("  Short note.  ", 1000) == [(2, 13)]
    assert passage_spans(" \n\n ", 1000) == []
    # A paragraph end in the second half of the room wins over a later sentence end.
    one = "The first paragraph has sentences. " * 12  # 420 characters
    two = one.strip() + "\n\n" + "The second one goes on for a while. " * 12
    (_, end), (start, _), *_ = passage_spans(two, 700)
    assert (end, start) == (len(one) - 1, len(one) + 1)


def test_long_messages_become_passages_that_keep_their_id_short_ones_stay() -> None:
    long_one = "Maya wrote a long letter. " * 100
    out = split_long_messages([Message(text="hi", id="m1", speaker="Ana"),
                               Message(text=long_one, id="m2", speaker="Maya")], 1000)
    assert out[0] == Message(text="hi", id="m1", speaker="Ana")
    passages = out[1:]
    assert len(passages) == 3 and all(isinstance(p, Passage) and p.speaker == "Maya" for p in passages)
    first = passages[0]
    assert isinstance(first, Passage) and first.sources == ["m2", f"chars:0-{first.end}"]
    assert long_one[first.start:first.end] == first.text and len({p.id for p in passages}) == 3


# --- a long text retained -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Hindsight, str, list[Any], list[tuple[int, int]]]]:
    """A 100 kB text holding the labelled facts, retained raw once for the tests below."""
    needles = load_needles()
    text, spans = long_text(100_000, [n.fact for n in needles])
    with Hindsight.open(tmp_path_factory.mktemp("book") / "m") as hs:
        hs.bank("b").retain([{"text": "Keiko mentioned a boathouse once.", "id": "older"}], timestamp=T0,
                            extract=False)
        hs.bank("b").retain(text, timestamp=T0, document_id="book", extract=False)
        yield hs, text, needles, spans


def test_a_long_text_becomes_passages_with_offsets_into_the_stored_text(book: Any) -> None:
    hs, text, _, _ = book
    units = hs.store.get_units("b", hs.store.units_of_document("b", "book"))
    limit = hs.settings.passage_chars
    assert len(units) >= len(text) // limit
    stored = hs.bank("b").document("book").content
    for unit in units:
        start, end = chars_span(unit)
        assert end - start <= limit and unit.document_id == "book"
        assert unit.text == " ".join(stored[start:end].split())
    # The passages cover the whole text, in document order.
    assert [chars_span(u) for u in units] == passage_spans(stored, limit)
    assert_clean(hs)


def test_recall_returns_the_passage_holding_the_fact_not_the_book(book: Any) -> None:
    hs, _, needles, spans = book
    bank = hs.bank("b")
    found = 0
    for needle, (start, end) in zip(needles, spans, strict=True):
        memories = bank.recall(needle.question, budget=1000).memories
        assert memories and all(len(m.text) <= hs.settings.passage_chars for m in memories)
        passages = [chars_span(m) for m in memories if m.document_id == "book"]
        found += any(a <= start and end <= b for a, b in passages)
    # Keyword and semantic search find most facts in a 100 kB text; a miss is a ranking question, not a cut one.
    assert found >= 0.8 * len(needles)


def out_links(hs: Hindsight, bank_id: str) -> dict[str, int]:
    """Stored links leaving each unit (entity hops aside)."""
    edges = hs.store.neighbors(bank_id, sorted(hs.store.unit_ids(bank_id)), link_types=list(LinkType), entity_fanout=0)
    counts: dict[str, int] = {}
    for edge in edges:
        counts[edge.source_id] = counts.get(edge.source_id, 0) + 1
    return counts


def test_links_a_long_text_adds_stay_bounded_at_every_unit(tmp_path: Path) -> None:
    # No dates in the words: every passage happens at the retain's time, as do three earlier notes, which are
    # therefore time-nearest to every passage. Without the cap each note took a link from all 60 passages.
    colours = ["red", "green", "blue", "amber", "violet", "teal", "ochre"]
    text = "\n\n".join(" ".join(f"Note {i}.{j} describes a {colours[(i + j) % 7]} kite over the harbour wall."
                                for j in range(6)) for i in range(60))
    cap = 12
    settings = Settings(passage_chars=600, links=LinkSettings(max_links_per_unit=cap))
    with Hindsight.open(tmp_path / "m", settings=settings) as hs:
        bank = hs.bank("b")
        bank.retain([{"text": f"Earlier note {i} about a kite.", "id": f"e{i}"} for i in range(3)], timestamp=T0,
                    extract=False)
        before = out_links(hs, "b")
        result = bank.retain(text, timestamp=T0, document_id="book", extract=False)
        after = out_links(hs, "b")
        assert len(result.memories) >= 30
        added = {unit: n - before.get(unit, 0) for unit, n in after.items()}
        assert max(added.values()) <= cap
        assert all(added.get(m.id, 0) >= 1 for m in result.memories)  # every passage keeps its neighbours
        assert all(added[unit] == cap for unit in before)  # the earlier notes filled up, no further
        assert_clean(hs)


def test_cap_links_keeps_the_first_groups_and_strongest_pairs_both_directions_together() -> None:
    def pair(a: str, b: str, weight: float, kind: LinkType = LinkType.SEMANTIC) -> list[Link]:
        return [Link(source_id=a, target_id=b, type=kind, weight=weight),
                Link(source_id=b, target_id=a, type=kind, weight=weight)]

    hub = [link for i in range(10) for link in pair("hub", f"u{i}", 0.5 + i / 100, LinkType.TEMPORAL)]
    adjacent = pair("u0", "u1", 0.2)
    kept = cap_links([adjacent, hub], cap=3)
    at_hub = {(lk.source_id, lk.target_id) for lk in kept if "hub" in (lk.source_id, lk.target_id)}
    assert {("u0", "u1"), ("u1", "u0")} <= {(lk.source_id, lk.target_id) for lk in kept}
    # The hub keeps its three strongest pairs, each in both directions.
    assert at_hub == {(a, b) for i in (7, 8, 9) for a, b in (("hub", f"u{i}"), (f"u{i}", "hub"))}
    assert LinkSettings().max_links_per_unit >= 1


# --- limits and failures ------------------------------------------------------------------------------------------


def test_too_many_messages_in_one_call_is_a_clear_error_and_stores_nothing(tmp_path: Path) -> None:
    with Hindsight.open(tmp_path / "m", settings=Settings(max_messages_per_retain=50)) as hs:
        bank = hs.bank("b")
        messages = [{"text": f"message {i}", "id": f"m{i}"} for i in range(51)]
        with pytest.raises(TooManyMessagesError, match="max_messages_per_retain=50") as info:
            bank.retain(messages, extract=False)
        assert (info.value.count, info.value.limit) == (51, 50)
        with pytest.raises(TooManyMessagesError):
            bank.retain(messages, extract=False, defer=True)
        assert bank.stats()["units"] == 0 and bank.stats()["documents"] == {}
        assert len(bank.retain(messages[:50], extract=False).memories) == 50
    assert Settings().max_messages_per_retain == 2000


class HalfThenFail:
    """The real embedder, failing half way through a large batch (a disk or model error mid-retain)."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.name, self.dimension = real.name, real.dimension

    def embed(self, texts: Any) -> np.ndarray:
        if len(texts) > 8:
            self.real.embed(texts[: len(texts) // 2])
            raise RuntimeError("the embedder's device went away")
        return np.asarray(self.real.embed(texts))


def test_a_long_text_failing_half_way_leaves_nothing_half_stored_and_can_be_retained_again(tmp_path: Path) -> None:
    text, _ = long_text(15_000)
    with Hindsight.open(tmp_path / "m") as hs:
        real = hs.embedder
        hs.bank("b").retain("Warm-up note about Lisbon.", extract=False)
        hs.engine.retainer.embedder = HalfThenFail(real)
        with pytest.raises(ExtractionError, match="went away"):
            hs.bank("b").retain(text, document_id="book", extract=False)
        assert hs.bank("b").document("book").status == DocumentStatus.FAILED
        assert hs.store.units_of_document("b", "book") == []
        assert_clean(hs)
        hs.engine.retainer.embedder = real
        result = hs.bank("b").reprocess("book", extract=False)
        assert len(result.memories) == len(passage_spans(text, hs.settings.passage_chars))
        assert_clean(hs)


CHILD = textwrap.dedent("""
    import os, signal, sys
    import numpy as np
    from hindsight_core import Hindsight
    from hindsight_bench.long_inputs import long_text

    class KillHalfWay:
        def __init__(self, real):
            self.real, self.name, self.dimension = real, real.name, real.dimension
        def embed(self, texts):
            if len(texts) > 8:
                self.real.embed(texts[: len(texts) // 2])
                os.kill(os.getpid(), signal.SIGKILL)
            return np.asarray(self.real.embed(texts))

    with Hindsight.open(sys.argv[1]) as hs:
        hs.bank("b").retain("Warm-up note about Lisbon.", extract=False)
        hs.engine.retainer.embedder = KillHalfWay(hs.embedder)
        hs.bank("b").retain(long_text(15_000)[0], document_id="book", extract=False)
""")


def test_a_long_text_retain_killed_half_way_is_resumed_whole_by_the_next_process(tmp_path: Path) -> None:
    path = tmp_path / "m"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    child = subprocess.run([sys.executable, "-c", CHILD, str(path)], env=env, capture_output=True, timeout=300)
    assert child.returncode == -9, child.stderr.decode()[-2000:]
    with Hindsight.open(path) as hs:  # the dead writer's document is resumed by this process's worker
        assert hs.bank("b").wait_idle(240)
        units = hs.store.get_units("b", hs.store.units_of_document("b", "book"))
        expected = passage_spans(long_text(15_000)[0], hs.settings.passage_chars)
        assert sorted(chars_span(u) for u in units) == expected
        assert hs.bank("b").document("book").status == DocumentStatus.DONE
        assert_clean(hs)


# --- the facts job on a long text ----------------------------------------------------------------------------------


def first_sentence_facts(messages: list[dict[str, str]], schema: Any) -> dict[str, Any]:
    """One fact per passage shown: its first sentence, citing the label the window shows."""
    body = messages[-1]["content"].split("Messages:\n", 1)[1]
    facts = []
    for label, text in re.findall(r"^\[([^\]]+)\] (?:\([^)]*\) )?\w+: (.*)$", body, flags=re.MULTILINE):
        facts.append({"text": text.split(". ")[0].rstrip(".") + ".", "src": [label], "start": "", "end": ""})
    return {"facts": facts}


def test_the_facts_job_sends_a_long_text_in_windows_of_passages_and_facts_cite_them(tmp_path: Path) -> None:
    text, _ = long_text(12_000)
    llm = ScriptedLLM([first_sentence_facts] * 200)
    with Hindsight.open(tmp_path / "m", llm=llm, start_worker=False) as hs:
        result = hs.bank("b").retain(text, timestamp=T0, document_id="book", background=False)
        raw = {m.id: m for m in result.memories}
        while hs.worker.run_once():
            pass
        assert len(llm.calls) >= 3
        # No prompt carries the book: each holds a few passages, and every passage is in one.
        shown = [re.findall(r"^\[(chars:\d+-\d+)\]", call.user, flags=re.MULTILINE) for call in llm.calls]
        assert all(1 <= len(labels) <= 8 for labels in shown)
        assert sorted({label for labels in shown for label in labels}) == sorted(s for m in raw.values()
                                                                                  for s in m.sources)
        units = hs.store.get_units("b", hs.store.units_of_document("b", "book"))
        facts = [u for u in units if u.cites is not None]
        assert facts
        for fact in facts:
            (cited,) = fact.cites or []
            assert fact.sources == raw[cited].sources and SPAN.match(fact.sources[0])
        assert_clean(hs)
