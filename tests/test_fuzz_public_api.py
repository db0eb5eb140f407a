"""Property-based fuzzing of the public API (hypothesis): random sequences of retains, re-retains, recalls,
forgets, documents and opinions with hostile values (huge, empty, control characters, broken surrogates,
Cypher/FTS syntax, wrong types, NaN, far dates). Every step either succeeds or raises a ``HindsightError``,
and the store's invariants (``hindsight check``) hold after every step."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from hindsight_core import Hindsight
from hindsight_core.embedders import SentenceTransformerEmbedder
from hindsight_core.errors import HindsightError, InvalidInputError
from hindsight_core.runtime.integrity import check

EMBEDDER = SentenceTransformerEmbedder()

SYNTAX = ['"; MATCH (n) DETACH DELETE n //', 'a" OR "b" NEAR(c d) *', "col:term^3 AND ~x", "') OR 1=1 --",
          "{{bank_id}}", "%s%n", "\\u0000", "*", "NEAR", "-", ":", '"']
# Every code point, lone surrogates and control characters included.
hostile_text = st.one_of(
    st.text(st.characters(blacklist_categories=()), max_size=200),
    st.sampled_from(SYNTAX),
    st.just(""), st.just("   "), st.integers(2_000_001, 2_000_100).map(lambda n: "x" * n),
    st.builds(lambda a, b: a + b, st.sampled_from(SYNTAX), st.text(max_size=30)),
)
wrong = st.one_of(st.none(), st.integers(), st.floats(), st.booleans(), st.lists(st.integers(), max_size=3),
                  st.dictionaries(st.text(max_size=3), st.integers(), max_size=2), st.binary(max_size=5))
when = st.one_of(st.none(), st.datetimes(timezones=st.just(UTC)), st.floats(), st.integers(),
                 st.sampled_from(["9999-99-99", "yesterday", "", "3000-01-01", "0001-01-01T00:00:00"]))
message = st.fixed_dictionaries(
    {"text": st.one_of(hostile_text, wrong)},
    optional={"speaker": st.one_of(hostile_text, wrong), "id": st.one_of(hostile_text, wrong),
              "timestamp": when},
)
content = st.one_of(hostile_text, st.lists(message, max_size=4), wrong, message)
doc_ids = st.one_of(st.sampled_from(["a", "b", "c", "a b", "ö/ü"]), st.none(), hostile_text, wrong)
confidence = st.one_of(st.floats(), st.integers(-3, 300), wrong)


class PublicAPIMachine(RuleBasedStateMachine):
    """One embedded store per run; each rule calls the public API with generated values."""

    def __init__(self) -> None:
        super().__init__()
        import tempfile

        self._tmp = tempfile.TemporaryDirectory()
        self.hs = Hindsight.open(Path(self._tmp.name) / "memory", embedder=EMBEDDER, start_worker=False)
        self.bank = self.hs.bank("fuzz")
        self.memory_ids: list[str] = []

    def teardown(self) -> None:
        self.hs.close()
        self._tmp.cleanup()

    def call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except HindsightError:
            return None

    @rule(value=content, doc=doc_ids, ts=when, context=st.one_of(st.none(), hostile_text, wrong))
    def retain(self, value: Any, doc: Any, ts: Any, context: Any) -> None:
        result = self.call(self.bank.retain, value, document_id=doc, timestamp=ts, context=context, extract=False,
                           background=False)
        if result is not None:
            assert result.memories  # never success for work that produced nothing
            self.memory_ids += result.memory_ids

    @rule(value=content, doc=doc_ids)
    def deferred_retain(self, value: Any, doc: Any) -> None:
        result = self.call(self.bank.retain, value, document_id=doc, extract=False, defer=True)
        if result is not None:
            assert result.queued and result.job_id
            assert self.hs.worker.run_once()

    @rule(query=st.one_of(hostile_text, wrong), budget=st.one_of(st.integers(-5, 3000), wrong),
          limit=st.one_of(st.none(), st.integers(-2, 50), wrong), ref=when,
          window=st.one_of(st.none(), st.tuples(when, when), wrong))
    def recall(self, query: Any, budget: Any, limit: Any, ref: Any, window: Any) -> None:
        result = self.call(self.bank.recall, query, budget=budget, max_memories=limit, reference_time=ref,
                           time_range=window)
        if result is not None:
            assert result.tokens <= budget
            assert all(m.bank_id == "fuzz" for m in result.memories)

    @rule(doc=doc_ids, pick=st.integers(0, 10_000), entity=st.one_of(hostile_text, wrong),
          which=st.sampled_from(["memory", "document", "entity"]))
    def forget(self, doc: Any, pick: int, entity: Any, which: str) -> None:
        if which == "memory" and self.memory_ids:
            self.call(self.bank.forget, memory_id=self.memory_ids[pick % len(self.memory_ids)])
        elif which == "document":
            self.call(self.bank.forget, document_id=doc)
        else:
            self.call(self.bank.forget, entity=entity)

    @rule(doc=doc_ids, value=st.one_of(hostile_text, wrong), meta=st.one_of(st.none(), wrong))
    def put_and_delete_document(self, doc: Any, value: Any, meta: Any) -> None:
        if self.call(self.bank.put_document, doc, value, metadata=meta) is not None:
            # Stored as given, broken unicode replaced by U+FFFD.
            assert self.bank.document(doc).content == re.sub("[\ud800-\udfff]", "\ufffd", value)
        self.call(self.bank.delete_document, doc)

    @rule(doc=doc_ids)
    def reprocess(self, doc: Any) -> None:
        self.call(self.bank.reprocess, doc, extract=False)

    @rule(text=st.one_of(hostile_text, wrong), conf=confidence,
          entities=st.one_of(st.lists(hostile_text, max_size=3), wrong))
    def add_opinion(self, text: Any, conf: Any, entities: Any) -> None:
        made = self.call(self.bank.add_opinion, text, conf, entities=entities)
        if made is not None:
            assert isinstance(conf, int | float) and not math.isnan(conf) and 0 <= conf <= 1
            assert made.confidence == conf

    @rule(value=st.one_of(hostile_text, wrong))
    def set_background(self, value: Any) -> None:
        self.call(self.bank.set_background, value)

    @invariant()
    def store_is_sound(self) -> None:
        report = check(self.hs)
        assert report.ok, report.model_dump()


PublicAPIMachine.TestCase.settings = settings(
    max_examples=30, stateful_step_count=10, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TestPublicAPI = PublicAPIMachine.TestCase


def test_far_dates_are_typed_errors_or_stored(tmp_path: Path) -> None:
    """Dates at the ends of the calendar either work or are refused as invalid input, never half stored."""
    with Hindsight.open(tmp_path / "m", embedder=EMBEDDER, start_worker=False) as hs:
        bank = hs.bank("dates")
        outcomes = {}
        for ts in (datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, tzinfo=UTC), 1e15, -1e15, float("nan")):
            try:
                outcomes[repr(ts)] = len(bank.retain("A dated note.", timestamp=ts, extract=False,
                                                     background=False).memories)
            except InvalidInputError:
                outcomes[repr(ts)] = "invalid"
        assert outcomes["nan"] == "invalid" and outcomes["1000000000000000.0"] == "invalid", outcomes
        assert all(v in (1, "invalid") for v in outcomes.values()), outcomes
        assert check(hs).ok
