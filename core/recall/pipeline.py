"""Recall pipeline: four channels -> reciprocal rank fusion -> optional rerank -> token-budget packing."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from itertools import chain, islice
from typing import Any, TypeVar

from ..config import RecallSettings
from ..embedders import Embedder, embed_queries
from ..errors import InvalidInputError, StoreError, shown
from ..models import Memory, Network, Recall, RecallTrace, TimeRange, TraceItem, utcnow
from ..retain.supersede import plain_statement, subject_of
from ..stores.base import VectorIndex
from ..temporal import TemporalConstraint, parse_temporal, resolve_anchor
from ..text.inputs import clean_text, parse_timestamp
from ..validation import When, Window
from . import channels as ch
from .current import (
    CurrentNotes,
    as_believed,
    asked_first,
    asked_names,
    asks_about_past,
    asks_how_things_are,
    current_first,
    later_first,
    past_first,
    speaks_of,
)
from .deadline import Deadline, check_deadline_ms
from .fusion import reciprocal_rank_fusion
from .packing import distinct_evidence_first, pack
from .questions import QuestionNotes, questions_last, questions_paired
from .registry import CHANNELS, REGISTRY, ChannelQuery, Hits, needed, trusted
from .rerank import Reranker

T = TypeVar("T")

ANCHOR_MIN_SIMILARITY = 0.35  # below this the anchor event ("the trip") is not considered found
SEMANTIC_CLOSE = 10
"""The semantic channel's first hits, which ``current.asked_first`` counts as about the person asked of."""


class RecallPipeline:
    """Runs recall for any bank of one ``Hindsight`` instance."""

    def __init__(
        self,
        store: ch.RecallStore,
        index: VectorIndex,
        embedder: Embedder,
        settings: RecallSettings,
        count_tokens: Callable[[str], int],
        executor: ThreadPoolExecutor,
        reranker: Reranker | None = None,
    ) -> None:
        self.store = store
        self.index = index
        self.embedder = embedder
        self.settings = settings
        self.count_tokens = count_tokens
        self.executor = executor
        self.reranker = reranker
        self.weights = settings.weights_for(embedder.name)
        if settings.context_hits > 0 and not callable(getattr(store, "adjacent_units", None)):
            # A graph store written against the protocol before adjacent_units: say so at open, not as an
            # AttributeError in the middle of a recall.
            raise StoreError(f"{type(store).__name__} has no adjacent_units(), which neighbouring context "
                             "(RecallSettings.context_hits > 0) needs; set context_hits=0 or add the method")

    def time_constraint(
        self, bank_id: str, query: str, reference_time: datetime, query_vector: Any
    ) -> TemporalConstraint | None:
        """Parse the query's time expression; resolve event anchors ("before the trip") from memory."""
        constraint = parse_temporal(query, reference_time)
        if constraint is None or constraint.range is not None or not constraint.anchor:
            return constraint
        anchor_vec = embed_queries(self.embedder, [constraint.anchor])[0]
        hits = self.trusted(bank_id, self.index.query(bank_id, anchor_vec, 3))
        ids = [uid for uid, score in hits if score >= ANCHOR_MIN_SIMILARITY]
        by_id = {u.id: u for u in self.store.get_units(bank_id, ids)} if ids else {}
        for uid in ids:
            unit = by_id.get(uid)
            start = unit.occurred_start if unit is not None else None
            end = (unit.occurred_end if unit is not None else None) or start
            # A unit whose occurrence is only the instant it was said ("How was Porto?", said after the trip)
            # says nothing about when the event was: skip it for the next best match that states a time.
            if unit is None or start is None or (start == end == unit.mentioned_at):
                continue
            return constraint.model_copy(update={"range": resolve_anchor(constraint, TimeRange(start=start, end=end))})
        return constraint

    def recall(
        self,
        bank_id: str,
        query: str,
        *,
        budget: int = 2000,
        max_memories: int | None = None,
        networks: Sequence[Network | str] | None = None,
        time_range: Window = None,
        reference_time: When = None,
        trace: bool = False,
        channels: Sequence[str] | None = None,
        as_of: When = None,
        deadline_ms: int | None = None,
    ) -> Recall:
        """Recall synchronously; see ``Bank.recall``."""
        timings: dict[str, float] = {}
        t_all = time.perf_counter()
        deadline = Deadline(check_deadline_ms(deadline_ms), t_all)
        query, nets, window, ref, enabled = self._validate(
            query, budget, max_memories, networks, time_range, reference_time, channels
        )
        believed_at = parse_timestamp(as_of, "as_of")
        if believed_at is not None and reference_time is None:
            ref = believed_at  # "last week" as_of a day means the week before that day
        constraint, results = self._run_channels(bank_id, query, nets, window, ref, enabled, timings, deadline)
        ordered: dict[str, Hits] = {name: r for name in CHANNELS
                                    if name in enabled and (r := results.get(name)) is not None}

        t = time.perf_counter()
        fused, hits = reciprocal_rank_fusion(ordered, k=self.settings.rrf_k, weights=self.weights, with_hits=trace)
        fused = fused[: self.settings.max_candidates]
        timings["fusion_ms"] = _ms(t)

        notes = _Notes(as_of=believed_at, close={i for i, _ in ordered.get("semantic", [])[:SEMANTIC_CLOSE]})
        # Superseded memories follow what replaced them, unless the question is about the past or a time is given.
        notes.current_first = window is None and not asks_about_past(query, constraint, ref)
        if not notes.current_first and window is None and not asks_about_past(query, None, ref) \
                and constraint is not None and constraint.range is not None:
            notes.asked_time = constraint.range  # past only by the time it names: see current.speaks_of
        chosen, used = self._select(bank_id, query, fused, nets, window, budget, max_memories, notes, timings,
                                    deadline)
        scores = dict(fused)
        # A memory brought in by another (a message by its fact, a current memory by the one it superseded) ranks
        # where that one did: it carries the better of the two scores.
        out = [m.model_copy(update={"score": max(scores.get(m.id, 0.0), scores.get(notes.found_by.get(m.id, ""), 0.0),
                                                 scores.get(notes.current.brought_by.get(m.id, ""), 0.0))})
               for m, _ in chosen]
        if believed_at is not None:  # as the bank held them then: a change said later was not known yet
            out = [as_believed(m, believed_at) for m in out]
        timings["total_ms"] = _ms(t_all)
        rec_trace = None
        if trace:
            rec_trace = _trace(query, ref, constraint, ordered, fused, hits, chosen, notes, timings, budget)
            rec_trace.deadline_ms, rec_trace.cut = deadline.ms, list(deadline.cut)
        return Recall(query=query, memories=out, tokens=used, trace=rec_trace, cut=list(deadline.cut))

    def _run_channels(
        self, bank_id: str, query: str, nets: list[Network] | None, window: TimeRange | None, ref: datetime,
        enabled: tuple[str, ...], timings: dict[str, float], deadline: Deadline | None = None,
    ) -> tuple[TemporalConstraint | None, dict[str, Hits | None]]:
        """Every registered channel the enabled ones need: those without the query vector start at once, the
        vector is embedded meanwhile, then the rest run (in the pool, the ``inline`` one here), and channels that
        take others' rankings run last. With a deadline, every channel runs in the pool and one not done by then is
        left out (named in ``deadline.cut``); so are the vector channels when the embedding is not done in time."""
        deadline = deadline if deadline is not None else Deadline(None)
        names = needed(enabled)
        futures: dict[str, Future[tuple[Hits | None, float]]] = {}
        early = ChannelQuery(bank_id=bank_id, text=query, vector=None, networks=nets, window=window, constraint=None,
                             settings=self.settings, weights=self.weights, store=self.store, index=self.index,
                             earlier={})
        for name in (n for n in names if not REGISTRY[n].needs_vector and not REGISTRY[n].after):
            futures[name] = self.executor.submit(_timed, REGISTRY[name].run, early)
        vector_channels = [n for n in names if REGISTRY[n].needs_vector and not REGISTRY[n].after]
        embedded, found = deadline.run(self.executor, "embed", self._vector_and_time, bank_id, query, ref,
                                       "temporal" in names) if vector_channels or not deadline.set else (False, None)
        constraint: TemporalConstraint | None = None
        results: dict[str, Hits | None] = {}
        base = early
        if embedded and found is not None:
            qvec, constraint, timings["embed_ms"], timings["time_parse_ms"] = found
            base = direct = replace(early, vector=qvec, constraint=constraint)
            here = [] if deadline.set else [n for n in vector_channels if REGISTRY[n].inline]
            for name in (n for n in vector_channels if n not in here):
                futures[name] = self.executor.submit(_timed, REGISTRY[name].run, direct)
            for name in here:
                results[name], timings[f"{name}_ms"] = _timed(REGISTRY[name].run, direct)
        else:
            for name in vector_channels:
                deadline.skip(name)
        for name, fut in futures.items():
            timed = deadline.wait(name, fut)[1]  # without a deadline: as long as it takes
            if timed is not None:
                results[name], timings[f"{name}_ms"] = timed
        for name in (n for n in names if REGISTRY[n].after):
            earlier = {n: r for n in REGISTRY[name].after if (r := results.get(n)) is not None}
            after = deadline.run(self.executor, name, _timed, REGISTRY[name].run, replace(base, earlier=earlier))[1]
            if after is not None:
                results[name], timings[f"{name}_ms"] = after
        return constraint, results

    def _vector_and_time(
        self, bank_id: str, query: str, ref: datetime, with_time: bool,
    ) -> tuple[Any, TemporalConstraint | None, float, float]:
        """The query vector and, for the temporal channel, the query's time constraint, with the milliseconds
        each took."""
        t = time.perf_counter()
        qvec = embed_queries(self.embedder, [query])[0]
        embed_ms = _ms(t)
        t = time.perf_counter()
        constraint = self.time_constraint(bank_id, query, ref, qvec) if with_time else None
        return qvec, constraint, embed_ms, _ms(t)

    def _select(
        self, bank_id: str, query: str, fused: Hits, nets: list[Network] | None, window: TimeRange | None,
        budget: int, max_memories: int | None, notes: _Notes, timings: dict[str, float],
        deadline: Deadline | None = None,
    ) -> tuple[list[tuple[Memory, int]], int]:
        """The fused candidates loaded in rank order, reranked if a reranker is set, with neighbouring context and
        distinct evidence first, packed into the budget."""
        s = self.settings
        t = time.perf_counter()
        memories: Iterator[Memory] = self._iter_memories(bank_id, [i for i, _ in fused], nets, window, notes.as_of)
        if self.reranker is not None:
            head = list(islice(memories, 100))
            deadline = deadline if deadline is not None else Deadline(None)
            done, rescored = (deadline.run(self.executor, "rerank", self.reranker.score, query, [m.text for m in head])
                              if head else (True, []))
            # Past the deadline the fused order stands: a slow reranker is skipped, packing always runs.
            order = sorted(range(len(head)), key=lambda i: -rescored[i]) if done and rescored is not None \
                else list(range(len(head)))
            memories = chain((head[i] for i in order), memories)
            timings["rerank_ms"] = _ms(t)
            t = time.perf_counter()
        if s.fact_ranking == "keys":
            memories = self._facts_as_keys(bank_id, memories, nets, window, notes)
        elif s.fact_ranking == "below_sources":
            memories = _facts_below_sources(memories, notes)
        load = lambda ids: list(self._iter_memories(bank_id, list(ids), nets, window, notes.as_of))  # noqa: E731
        if notes.current_first:
            memories = current_first(memories, load, notes.as_of, notes.current)
            if s.asked_first_window > 0 and asks_how_things_are(query):
                memories = asked_first(memories, asked_names(query), notes.close, subject_of, notes.current,
                                       s.asked_first_window)
            if s.later_first_depth > 1 and asks_how_things_are(query):
                memories = later_first(memories, lambda ids: self.index.get_embeddings(bank_id, ids), plain_statement,
                                       subject_of, notes.current, s.later_first_depth, s.later_first_similarity)
        else:  # a question about the past: what was true before comes before what replaced it
            about = speaks_of(notes.asked_time) if notes.asked_time is not None else None
            memories = past_first(memories, lambda ids: self.store.superseded_by_ids(bank_id, ids), load,
                                  notes.current, unless=about)
            if about is not None:  # except where the newer memory tells of the asked time too: it corrects the older
                memories = current_first(memories, load, notes.as_of, notes.current, only=about)
        if s.question_rule == "demote":
            memories = questions_last(memories, notes.questions)
        elif s.question_rule == "pair":
            memories = questions_paired(memories, lambda ids: self.store.adjacent_units(bank_id, ids), load,
                                        notes.questions)
        memories = self._with_context(bank_id, memories, nets, window, notes.context_of, notes.as_of)
        if s.distinct_evidence:
            memories = distinct_evidence_first(memories, notes.covered_by)
        chosen, used = pack(((m, m.text) for m in _noting_cites(memories, notes.cites)), budget, self.count_tokens,
                            max_memories)
        timings["pack_ms"] = _ms(t)
        return chosen, used

    def trusted(self, bank_id: str, hits: Hits) -> Hits:
        """Vector hits whose unit exists (see ``registry.trusted``)."""
        return trusted(self.store, bank_id, hits)

    async def arecall(self, bank_id: str, query: str, **kwargs: Any) -> Recall:
        """Async twin: the whole recall runs in a worker thread so the event loop is never blocked."""
        return await asyncio.to_thread(self.recall, bank_id, query, **kwargs)

    def _facts_as_keys(
        self, bank_id: str, memories: Iterator[Memory], networks: Sequence[Network] | None,
        window: TimeRange | None, notes: _Notes,
    ) -> Iterator[Memory]:
        """The memories in rank order, each LLM fact preceded by the raw messages it cites that did not come
        earlier (recorded in ``notes.found_by``: message id -> fact id): a fact is a key that finds its evidence,
        and the messages, not the model's wording, take the fact's place. Lazy like the ranking it wraps."""
        seen: set[str] = set()
        for m in memories:
            if m.id in seen:
                continue
            if m.cites is not None:
                notes.cites[m.id] = m.cites
            wanted = [c for c in (m.cites or ()) if c not in seen]
            if wanted:
                for raw in self._iter_memories(bank_id, wanted, networks, window, notes.as_of):
                    seen.add(raw.id)
                    notes.found_by[raw.id] = m.id
                    yield raw
            seen.add(m.id)
            yield m

    def _with_context(
        self, bank_id: str, memories: Iterator[Memory], networks: Sequence[Network] | None,
        window: TimeRange | None, context_of: dict[str, str], as_of: datetime | None = None,
    ) -> Iterator[Memory]:
        """The first ``context_after`` memories as ranked, then the memories just before and after each of the
        best ``context_hits`` in their documents (recorded in ``context_of``: added id -> hit id), then the rest.

        Lazy like the ranking it wraps: a budget spent within the first memories never looks the neighbours up.
        """
        s = self.settings
        if s.context_hits <= 0:
            yield from memories
            return
        head = list(islice(memories, s.context_after))
        yield from head
        seen = {m.id for m in head}
        hits = [m.id for m in head[: s.context_hits]]
        adjacent = self.store.adjacent_units(bank_id, hits) if hits else {}
        beside: dict[str, str] = {}  # neighbour id -> the hit it is added for, in the order they are packed
        for hit in hits:
            for neighbour in adjacent.get(hit, (None, None)):
                if neighbour is not None and neighbour not in seen:
                    seen.add(neighbour)
                    beside[neighbour] = hit
        for m in self._iter_memories(bank_id, list(beside), networks, window, as_of):
            context_of[m.id] = beside[m.id]
            yield m
        yield from (m for m in memories if m.id not in seen)

    def _iter_memories(
        self, bank_id: str, ids: list[str], networks: Sequence[Network] | None, window: TimeRange | None,
        as_of: datetime | None = None,
    ) -> Iterator[Memory]:
        """Load fused candidates lazily in rank order (packing usually stops early), dropping any that
        fail the caller's filters (graph hits are not pre-filtered); with ``as_of``, memories said after it."""
        for chunk in _chunks(ids, 40):
            for m in self.store.get_units(bank_id, chunk):
                if networks and m.network not in networks:
                    continue
                if window is not None and not _overlaps(m, window):
                    continue
                if as_of is not None and (m.mentioned_at or m.created_at) > as_of:
                    continue
                yield m

    @staticmethod
    def _validate(
        query: str,
        budget: int,
        max_memories: int | None,
        networks: Sequence[Network | str] | None,
        time_range: Window,
        reference_time: When,
        channels: Sequence[str] | None,
    ) -> tuple[str, list[Network] | None, TimeRange | None, datetime, tuple[str, ...]]:
        if not isinstance(query, str):
            raise InvalidInputError(f"query must be a string, not {type(query).__name__}")
        query = " ".join(clean_text(query, [], "query").split())
        if not query:
            raise InvalidInputError("query is empty")
        if len(query) > 10_000:
            query = query[:10_000]
        if not isinstance(budget, int) or isinstance(budget, bool) or budget <= 0:
            raise InvalidInputError(f"budget must be a positive number of tokens, not {budget!r}")
        if max_memories is not None and max_memories <= 0:
            raise InvalidInputError(f"max_memories must be positive, not {max_memories!r}")
        try:
            nets = [Network(n) for n in networks] if networks else None
        except ValueError as exc:
            raise InvalidInputError(f"unknown network in {networks!r}; use {[n.value for n in Network]}") from exc
        window: TimeRange | None
        if time_range is None or isinstance(time_range, TimeRange):
            window = time_range
        else:
            try:
                start, end = time_range
                window = TimeRange(start=parse_timestamp(start, "time_range start"),
                                   end=parse_timestamp(end, "time_range end"))
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(f"invalid time_range {shown(time_range)}: {exc}") from exc
        ref = parse_timestamp(reference_time, "reference_time") or utcnow()
        enabled = tuple(channels) if channels is not None else CHANNELS
        unknown = set(enabled) - set(CHANNELS)
        if unknown or not enabled:
            raise InvalidInputError(f"channels must be a non-empty subset of {CHANNELS}, got {channels!r}")
        return query, nets, window, ref, enabled


@dataclass
class _Notes:
    """What packing learned about the selected memories, for the trace: context added beside a hit (added id ->
    hit id), evidence covered by a fact already chosen, and the raw messages each chosen fact cites."""

    context_of: dict[str, str] = field(default_factory=dict)
    covered_by: dict[str, str] = field(default_factory=dict)
    found_by: dict[str, str] = field(default_factory=dict)
    cites: dict[str, list[str]] = field(default_factory=dict)
    # ``recall(as_of=...)``: only what had been said by then, current as of then.
    as_of: datetime | None = None
    current_first: bool = True
    asked_time: TimeRange | None = None
    """The past time a question names, when that alone makes it a question about the past."""
    current: CurrentNotes = field(default_factory=CurrentNotes)
    questions: QuestionNotes = field(default_factory=QuestionNotes)
    close: set[str] = field(default_factory=set)
    """The semantic channel's first ``SEMANTIC_CLOSE`` hits."""


def _trace(
    query: str, ref: datetime, constraint: TemporalConstraint | None, ordered: Mapping[str, Hits], fused: Hits,
    hits: Mapping[str, dict[str, Any]], chosen: list[tuple[Memory, int]], notes: _Notes, timings: dict[str, float],
    budget: int,
) -> RecallTrace:
    """Every candidate's rank per channel and whether (and why) it was selected, with the stage timings."""
    selected = {m.id: tokens for m, tokens in chosen}
    superseded = {m.id: m.superseded_by for m, _ in chosen if m.superseded_by is not None}
    scores = dict(fused)
    earlier = {old: new for new, old in notes.current.later_first.items()}
    unranked = list(dict.fromkeys(i for i in chain(notes.found_by, notes.context_of, notes.current.brought_by,
                                                   notes.questions.paired) if i not in scores))
    return RecallTrace(
        query=query,
        reference_time=ref,
        time_range=constraint.range if constraint is not None else None,
        channel_sizes={name: len(r) for name, r in ordered.items()},
        items=[
            TraceItem(
                memory_id=i, fused_score=score, fused_rank=rank, channels=hits.get(i, {}),
                tokens=selected.get(i, 0), selected=i in selected,
                context_of=notes.context_of.get(i) or notes.questions.paired.get(i),
                cites=notes.cites.get(i), covered_by=notes.covered_by.get(i), found_by=notes.found_by.get(i),
                superseded_by=superseded.get(i),
                demoted=i in notes.current.demoted,
                demoted_as=notes.questions.demoted.get(i) or ("superseded" if i in notes.current.demoted else None)
                or ("said_earlier" if i in earlier else None)
                or ("not_of_asked" if i in notes.current.not_of_asked else None),
                brought_by=notes.current.brought_by.get(i), later_statement=earlier.get(i),
            )
            for rank, (i, score) in enumerate(chain(fused, ((i, 0.0) for i in unranked)), start=1)
        ],
        timings_ms=timings,
        budget=budget,
    )


def _facts_below_sources(memories: Iterator[Memory], notes: _Notes) -> Iterator[Memory]:
    """The memories in rank order, except that an LLM fact never comes before the first of the messages it cites: it
    waits for it (and comes after every other memory if none of them is ranked). A fact can then add a reading of
    its message, never take a place the evidence had."""
    waiting: dict[str, list[Memory]] = {}  # a cited message's id -> the facts waiting for it
    unplaced: list[Memory] = []
    shown: set[str] = set()
    released: set[str] = set()
    for m in memories:
        if m.cites:
            notes.cites[m.id] = m.cites
            if any(c in shown for c in m.cites):
                released.add(m.id)
                yield m
            else:
                for c in m.cites:
                    waiting.setdefault(c, []).append(m)
                unplaced.append(m)
            continue
        shown.add(m.id)
        yield m
        for fact in waiting.pop(m.id, []):
            if fact.id not in released:
                released.add(fact.id)
                yield fact
    yield from (f for f in unplaced if f.id not in released)


def _noting_cites(memories: Iterator[Memory], cites: dict[str, list[str]]) -> Iterator[Memory]:
    """The memories unchanged; the raw messages each fact among them cites go into ``cites`` (for the trace)."""
    for m in memories:
        if m.cites is not None:
            cites[m.id] = m.cites
        yield m


def _overlaps(m: Memory, window: TimeRange) -> bool:
    start = m.occurred_start or m.mentioned_at
    end = m.occurred_end or start
    if start is None or end is None:
        return False
    if window.end is not None and start > window.end:
        return False
    return not (window.start is not None and end < window.start)


def _timed(fn: Callable[..., T], *args: Any) -> tuple[T, float]:
    """``fn(*args)`` and the milliseconds it took (recorded by the caller: a channel cut by a deadline may finish
    after recall returned, and must not write into its timings then)."""
    t = time.perf_counter()
    return fn(*args), _ms(t)


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)
