"""Raw turns, LLM facts, and the default of both (raw first, facts later) on the same LoCoMo questions.

For each chosen conversation (default: the dev-half conversations conv-26 and conv-30; ``--split`` takes a whole
half), the first ``sessions`` sessions are retained into three banks: ``raw`` (``extract=False``: one unit per
message), ``raw+facts`` (the default ``retain(extract=True)``: the raw units at once, then the facts job adds the
LLM's facts beside them, each citing its messages) and ``facts`` (the old behaviour, kept for the study: the same
facts alone, the raw units forgotten; its model answers are the ``raw+facts`` run's, replayed, so the two hold the
same facts). Every question whose evidence ids all lie in those sessions is recalled in each bank with the last
retained session's date as reference time and scored like ``locomo``: evidence recall (share of evidence dia_ids
covered by the returned memories' ``sources``) at R@5, R@10 and within 1,000 tokens, by category.
``raw+facts as ranked`` and ``raw+facts as keys`` are the same bank recalled with ``RecallSettings.fact_ranking``
``"as_ranked"`` (a fact in its own place) and ``"keys"`` (a fact brings the messages it cites in at its rank, and
follows them): the measurement behind that setting's default, ``"below_sources"``. (Reports before issue 36 had
``raw+facts as ranked`` for the bank packed without ``distinct_evidence``.)

Extraction is measured too: seconds per message of the facts job (and of the ``retain`` call, which returns after
the raw units), the load average around it, LLM calls and tokens per message (as the server reports them, with
the prompt tokens it reused from its cache; cl100k_base estimates of the messages and the parsed answer beside
them), facts, facts without sources, how many sources a fact lists, the share of messages some fact cites, and
facts whose occurrence dates disagree with the source message's date by more than its words imply.

Every evidence id the ``facts`` bank misses at R@10 is explained: *ranked low* (a fact cites it but is not in the
top 10), *merged* (no fact cites it, but a fact citing other messages of the same session shares at least two
content words and half of the message's or of the fact's), or *dropped* (nothing from it survived extraction).

With ``workdir`` the stores and each session's extraction record are kept there; a rerun skips sessions already
retained (their recorded time and tokens are reused), so an interrupted run resumes where it stopped. With
``replay_from`` (``--replay``) an earlier run's recorded model answers are fed through today's extractor code
instead of calling the model: a change to normalisation or dates is measured on the same model output, with the
recorded model time and tokens.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from hindsight_core.cli.formats import Session, evidence_ids, locomo_sessions
from hindsight_core.llm.base import LLM, ChatMessage, MalformedOutputError
from hindsight_core.text.tokens import count_tokens

from .locomo import CATEGORIES, SPLITS, ConfigResult, first_evidence_rank, question_metrics, split_samples
from .metrics import coverage
from .report import md_table, run_info, write_json, write_text

T = TypeVar("T", bound=BaseModel)

DEFAULT_CONVERSATIONS = ("conv-26", "conv-30")
"""Two dev-half conversations: nothing here may be decided on the test half."""
DEFAULT_SESSIONS = 3
MIN_QUESTIONS = 100
"""With ``--split``, the sessions retained are the first N of each conversation for the smallest N that gives at
least this many questions over the half (or ``MAX_MESSAGES``): a rule on counts, fixed before any result is seen."""
MAX_MESSAGES = 800
"""...or the smallest N that gives at least this many messages, whichever comes first: real chats spread their
questions thinly (realtalk_dev.json needs 9 sessions, 2,045 messages, for 100 questions; the model writes facts at
about 4 s a message on 2 cores), so the model's time is bounded too. LoCoMo's halves stop at 100 questions first."""
METRICS = ("R@5", "R@10", "R@1000tok", "R@10 1-src")
"""``R@10 1-src`` credits each memory with only the one source its text repeats most (a raw unit has one
source anyway): a fact citing four neighbouring messages counts for one."""
BANKS = ("raw", "facts", "raw+facts", "raw+facts as ranked", "raw+facts as keys")
BANK_SETTINGS: dict[str, dict[str, Any]] = {
    "raw+facts as ranked": {"fact_ranking": "as_ranked"},
    "raw+facts as keys": {"fact_ranking": "keys"},
}
"""Recall settings a bank is scored with beside the defaults: ``raw+facts`` is the default (a fact never before the
first message it cites), ``raw+facts as ranked`` each fact in its own place, ``raw+facts as keys`` facts as keys that
bring in the messages they cite."""
FACTS_BANK = "facts"
DATE_SLACK_DAYS = 1
"""A fact's occurrence may sit this many days off the range its source message implies before it counts as
wrong (time zones, "tonight" said after midnight)."""
_MERGE_SHARE = 0.5
"""A message counts as merged into a fact citing other ids when they share at least two content words and this
share of the message's or of the fact's content words."""
_STOPWORDS = frozenset("""the a an and or but of to in on at for with from by about as is are was were be been being
it its this that these those he she they them his her their i me my we our you your so very just really also too
have has had do did does not no yes what when where who how which would could should will can there then than
some any all one get got like well im ive thats dont its youre oh wow hey hi thanks thank great good""".split())


# ---------------------------------------------------------------------------------------------------
# Counting what the model is sent and says
# ---------------------------------------------------------------------------------------------------


@dataclass
class CallRecord:
    """One model call: estimated tokens each way, seconds, the window's prompt and the parsed answer."""

    prompt_tokens: int
    completion_tokens: int
    seconds: float
    user: str
    answer: dict[str, Any] | None
    malformed: bool = False
    usage: dict[str, Any] | None = None  # what the server reported (tokens, cached tokens, llama.cpp timings)

    def window_ids(self) -> list[str]:
        """The message ids shown in the window (the ``[id]`` lines after ``Messages:``)."""
        body = self.user.split("\nMessages:\n", 1)[-1]
        return re.findall(r"^\[([^\]]+)\] ", body, flags=re.MULTILINE)

    def previous_id(self) -> str | None:
        """The id of the earlier message shown for pronouns only (never a valid source), if any."""
        found = re.search(r"^Earlier message, for pronouns only: \[([^\]]+)\]", self.user, flags=re.MULTILINE)
        return found.group(1) if found else None


@dataclass
class CountingLLM:
    """An ``LLM`` wrapper that counts calls and (estimated cl100k) tokens and keeps every call's record."""

    inner: LLM
    counter: Callable[[str], int] = count_tokens
    calls: list[CallRecord] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return self.inner.name

    def generate(
        self, messages: Sequence[ChatMessage], schema: type[T], *, max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> T:
        """The wrapped ``generate``, counted."""
        began = time.perf_counter()
        try:
            out = self.inner.generate(messages, schema, max_tokens=max_tokens, temperature=temperature)
        except MalformedOutputError as exc:
            self._record(messages, None, exc.raw or "", began)
            raise
        self._record(messages, out, out.model_dump_json(), began)
        return out

    async def agenerate(
        self, messages: Sequence[ChatMessage], schema: type[T], *, max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> T:
        """The wrapped ``agenerate``, counted."""
        began = time.perf_counter()
        try:
            out = await self.inner.agenerate(messages, schema, max_tokens=max_tokens, temperature=temperature)
        except MalformedOutputError as exc:
            self._record(messages, None, exc.raw or "", began)
            raise
        self._record(messages, out, out.model_dump_json(), began)
        return out

    def _record(self, messages: Sequence[ChatMessage], out: BaseModel | None, raw: str, began: float) -> None:
        user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        usage = getattr(self.inner, "last_usage", None)
        self.calls.append(CallRecord(
            prompt_tokens=sum(self.counter(m["content"]) for m in messages),
            completion_tokens=self.counter(raw),
            seconds=time.perf_counter() - began,
            user=user,
            answer=out.model_dump() if out is not None else None,
            malformed=out is None,
            usage=dict(usage) if isinstance(usage, dict) else None,
        ))


class ReplayLLM:
    """An ``LLM`` that answers each window with the answers a recorded run got for it, in order.

    ``records`` is an ``extraction.json`` as this benchmark writes it. The k-th call for a window gets the
    k-th recorded answer (the last one once they run out; a recorded malformed answer raises
    ``MalformedOutputError`` again). Replaying re-runs everything after the model (normalisation, dates,
    entities, storage, recall) on the same model output, so a change there is measured without model time.
    """

    def __init__(self, records: dict[str, Any], name: str = "replay") -> None:
        self._answers: dict[tuple[str, ...], list[dict[str, Any] | None]] = {}
        for session in records.values():
            for call in session["llm"]["call_log"]:
                self._answers.setdefault(tuple(call["window"]), []).append(call["answer"])
        self._served: Counter[tuple[str, ...]] = Counter()
        self._name = name

    @property
    def name(self) -> str:
        """The recorded model's name."""
        return self._name

    def generate(
        self, messages: Sequence[ChatMessage], schema: type[T], *, max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> T:
        """The next recorded answer for the window shown in ``messages``."""
        from hindsight_core.errors import LLMError

        user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        window = tuple(CallRecord(0, 0, 0.0, user, None).window_ids())
        answers = self._answers.get(window)
        if not answers:
            raise LLMError(f"no recorded answer for the window {list(window)}")
        answer = answers[min(self._served[window], len(answers) - 1)]
        self._served[window] += 1
        if answer is None:
            raise MalformedOutputError("recorded answer was malformed", raw=None)
        return schema.model_validate(answer)

    async def agenerate(
        self, messages: Sequence[ChatMessage], schema: type[T], *, max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> T:
        """Async twin of ``generate``."""
        return self.generate(messages, schema, max_tokens=max_tokens, temperature=temperature)


# ---------------------------------------------------------------------------------------------------
# Retaining both ways
# ---------------------------------------------------------------------------------------------------


def _day(value: Any) -> date | None:
    if value is None:
        return None
    return (value if isinstance(value, datetime) else datetime.fromisoformat(str(value))).date()


def _fact_record(memory: Any) -> dict[str, Any]:
    return {"text": memory.text, "network": memory.network.value, "sources": list(memory.sources),
            "occurred": [memory.occurred_start, memory.occurred_end], "mentioned_at": memory.mentioned_at,
            "entities": list(memory.entities)}


def _call_dict(call: CallRecord) -> dict[str, Any]:
    return {"prompt_tokens": call.prompt_tokens, "completion_tokens": call.completion_tokens,
            "seconds": round(call.seconds, 3), "window": call.window_ids(), "previous": call.previous_id(),
            "malformed": call.malformed, "usage": call.usage,
            "answer": call.answer}


def _server_tokens(calls: Sequence[CallRecord], key: str) -> int | None:
    """The server's count of ``key`` over the calls, or None when a call did not report it."""
    values = [(c.usage or {}).get(key) for c in calls]
    return sum(values) if values and all(isinstance(v, int) for v in values) else None


def document_facts(bank: Any, document_id: str) -> list[Any]:
    """The LLM facts stored beside a document's raw units (``Memory.cites`` set), in document order."""
    units = bank.memories(bank.hindsight.store.units_of_document(bank.id, document_id))
    return [m for m in units if m.cites is not None]


def retain_session(bank_raw: Any, bank_default: Any, session: Session, llm: CountingLLM) -> dict[str, Any]:
    """Retain one session raw and by default (raw first, the facts job after); the record of both: time, units,
    the facts and the model's calls."""
    t = time.perf_counter()
    raw = bank_raw.retain(session.messages, timestamp=session.timestamp, document_id=session.document_id,
                          extract=False, background=False)
    raw_s = time.perf_counter() - t
    first_call = len(llm.calls)
    load_before = os.getloadavg()[0]
    t = time.perf_counter()
    returned = bank_default.retain(session.messages, timestamp=session.timestamp, document_id=session.document_id,
                                   extract=True, background=False)
    returned_s = time.perf_counter() - t
    t = time.perf_counter()
    if not bank_default.wait_idle(3600):
        raise RuntimeError(f"the facts job of {session.document_id} did not finish within an hour")
    facts_s = time.perf_counter() - t
    job = next((j for j in bank_default.jobs() if j.id == returned.job_id), None)
    if job is None or job.status != "done":
        raise RuntimeError(f"the facts job of {session.document_id} failed: {getattr(job, 'error', 'missing')}")
    checks = job.result or {}
    calls = llm.calls[first_call:]
    return {
        "session": session.document_id,
        "timestamp": session.timestamp,
        "messages": len(session.messages),
        "raw": {"seconds": raw_s, "units": len(raw.memories)},
        "default": {"returned_seconds": returned_s, "units": len(returned.memories)},
        "llm": {
            "seconds": facts_s,
            "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
            "model": llm.name,
            "calls": len(calls),
            "windows": len({tuple(c.window_ids()) for c in calls}),
            "prompt_tokens": sum(c.prompt_tokens for c in calls),
            "completion_tokens": sum(c.completion_tokens for c in calls),
            "server_prompt_tokens": _server_tokens(calls, "prompt_tokens"),
            "server_completion_tokens": _server_tokens(calls, "completion_tokens"),
            "server_cached_tokens": _server_tokens(calls, "cached_tokens"),
            "facts": [_fact_record(m) for m in document_facts(bank_default, session.document_id)],
            "checks": {k: checks.get(k) for k in ("rejected", "rejected_by_reason", "repointed", "rejections")},
            "call_log": [_call_dict(c) for c in calls],
        },
    }


def facts_only_bank(hs: Any, sample_id: str, chosen: Sequence[Session]) -> Any:
    """The old behaviour, for the study: each session retained with the facts job, then its raw units forgotten,
    so only the LLM's facts remain (``hs`` answers with the recorded model calls)."""
    bank = hs.bank(f"facts-{sample_id}")
    done = {d.id for d in bank.documents(status="done")}
    for s in chosen:
        if s.document_id in done:
            continue
        bank.retain(s.messages, timestamp=s.timestamp, document_id=s.document_id, extract=True, background=False)
    if not bank.wait_idle(3600):
        raise RuntimeError("the replayed facts jobs did not finish within an hour")
    for s in chosen:
        raw = [u.id for u in bank.memories(hs.store.units_of_document(bank.id, s.document_id)) if u.cites is None]
        # The raw units only: ``forget`` would take the facts citing them along (forgetting forgets), which is the
        # opposite of this study's old behaviour.
        hs.engine.forgetter.delete_units(bank.id, raw)
    return bank


# ---------------------------------------------------------------------------------------------------
# What the extraction kept, and what it lost
# ---------------------------------------------------------------------------------------------------


def content_words(text: str) -> set[str]:
    """Lower-case content words of ``text`` (no stop words, three letters or more, apostrophes dropped)."""
    words = re.findall(r"[a-z0-9]+", text.lower().replace("'", "").replace("’", ""))
    return {w for w in words if len(w) > 2 and w not in _STOPWORDS}


def implied_range(text: str, said: datetime) -> tuple[date, date] | None:
    """The days a text's own words place an event on ("yesterday", "last year") when said at ``said``."""
    from hindsight_core.extract.dates import phrase_range
    from hindsight_core.temporal import detect_tense

    return phrase_range(text, said, detect_tense(text))


def _text_ranges(text: str, said: datetime) -> list[tuple[date, date]]:
    """Every period a text names (its annotations included: "last Saturday (20 May 2023)")."""
    from hindsight_core.extract.dates import phrase_range
    from hindsight_core.temporal import detect_tense, find_temporal_expressions

    tense = detect_tense(text)
    found = [phrase_range(c.expression, said, tense) for c in find_temporal_expressions(text, said, tense=tense)]
    return [r for r in found if r is not None]


def _gap(a: tuple[date, date], b: tuple[date, date]) -> int:
    """Days between two day ranges (0 when they overlap)."""
    return max(0, (b[0] - a[1]).days, (a[0] - b[1]).days)


def date_check(fact: dict[str, Any], messages: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The fact's occurrence against its sources' date and words; None when they agree.

    *contradicts text*: the fact's own words name periods ("last Saturday") and the occurrence is more than
    ``DATE_SLACK_DAYS`` from all of them. *shifted*: the occurrence is that far from the day it was said and
    from every range that a source message's (or the fact's own) words imply. *missed*: a single-source fact
    sits on the day it was said although its source places the event elsewhere ("last year") and the fact's
    words do not.
    Facts without an occurrence or a known source are not judged.
    """
    start, end = (_day(v) for v in fact["occurred"])
    srcs = [messages[s] for s in fact["sources"] if s in messages]
    if start is None or end is None or not srcs:
        return None
    said = min(m["time"] for m in srcs)
    occurred, today = (start, end), (said.date(), said.date())
    implied = [r for r in (implied_range(m["text"], m["time"]) for m in srcs) if r is not None]
    own = implied_range(fact["text"], said)
    allowed = [today, *implied, *([own] if own else [])]
    record = {"text": fact["text"], "sources": fact["sources"], "occurred": [str(start), str(end)],
              "said": str(said.date()), "implied": [[str(a), str(b)] for a, b in implied]}
    named = _text_ranges(fact["text"], said)
    if named and min(_gap(occurred, r) for r in named) > DATE_SLACK_DAYS:
        return {**record, "kind": "contradicts text", "gap_days": min(_gap(occurred, r) for r in named)}
    gap = min(_gap(occurred, r) for r in allowed)
    if gap > DATE_SLACK_DAYS:
        return {**record, "kind": "shifted", "gap_days": gap}
    if (len(srcs) == 1 and implied and own is None and _gap(occurred, today) <= DATE_SLACK_DAYS
            and min(_gap(today, r) for r in implied) > DATE_SLACK_DAYS):
        return {**record, "kind": "missed", "gap_days": min(_gap(today, r) for r in implied)}
    return None


def model_source_stats(calls: Sequence[dict[str, Any]]) -> dict[str, int]:
    """How the model itself cited sources in each window's last parsed answer: facts, facts with no
    ``src``, with only ids outside the window, with some, citing the earlier context line, citing three or
    more ids; plus windows that needed a retry and malformed answers over all calls."""
    out = Counter(facts=0, no_src=0, only_invalid_src=0, some_invalid_src=0, cites_context_line=0,
                  three_or_more_src=0, retried_windows=0,
                  malformed_answers=sum(1 for c in calls if c["answer"] is None))
    last: dict[tuple[str, ...], dict[str, Any]] = {}
    attempts: Counter[tuple[str, ...]] = Counter()
    current: list[str] = []
    before: list[str] = []
    for call in calls:
        if call["window"] != current:
            before, current = current, call["window"]
        if "previous" not in call:  # records written before the field existed: the planner's rule
            same = before and current and before[-1].split(":")[0] == current[0].split(":")[0]
            call = {**call, "previous": before[-1] if same else None}
        if call["answer"] is not None or tuple(call["window"]) not in last:
            last[tuple(call["window"])] = call  # a malformed retry leaves the earlier answer in force
        attempts[tuple(call["window"])] += 1
    out["retried_windows"] = sum(1 for n in attempts.values() if n > 1)
    for call in last.values():
        window = {_norm(w) for w in call["window"]}
        previous = _norm(call.get("previous") or "")
        for fact in (call["answer"] or {}).get("facts", []):
            out["facts"] += 1
            src = [_norm(s) for s in fact.get("src", [])]
            valid = [s for s in src if s in window]
            if not src:
                out["no_src"] += 1
            elif not valid:
                out["only_invalid_src"] += 1
            elif len(valid) < len(src):
                out["some_invalid_src"] += 1
            out["cites_context_line"] += bool(previous) and previous in src
            out["three_or_more_src"] += len(src) >= 3
    return dict(out)


def _norm(value: str) -> str:
    return value.strip().strip("[]").strip().casefold()


def best_source(text: str, sources: Sequence[str], messages: dict[str, dict[str, Any]]) -> list[str]:
    """The one source whose message shares the most content words with ``text`` (the first on a tie)."""
    if len(sources) <= 1:
        return list(sources)
    words = content_words(text)
    return [max(sources, key=lambda s: len(words & content_words(messages.get(s, {}).get("text", ""))))]


def classify_miss(
    evidence_id: str, ranked: Sequence[Any], facts: Sequence[dict[str, Any]], messages: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """Why the LLM bank's top 10 lacks ``evidence_id``: ranked low, merged into another fact, or dropped."""
    message = messages.get(evidence_id, {"text": "", "session": None})
    citing = [f for f in facts if evidence_id in f["sources"]]
    out: dict[str, Any] = {"id": evidence_id, "message": message["text"]}
    if citing:
        rank = next((r for r, m in enumerate(ranked, start=1) if evidence_id in m.sources), None)
        out.update(kind="ranked low", rank=rank, facts=[f["text"] for f in citing])
        return out
    words = content_words(message["text"])
    best: tuple[float, dict[str, Any] | None] = (0.0, None)
    for fact in facts:
        if not any(messages.get(s, {}).get("session") == message["session"] for s in fact["sources"]):
            continue
        fact_words = content_words(fact["text"])
        shared = len(words & fact_words)
        share = shared / min(len(words), len(fact_words)) if words and fact_words else 0.0
        if shared >= 2 and share > best[0]:
            best = (share, fact)
    if best[1] is not None and best[0] >= _MERGE_SHARE:
        out.update(kind="merged", share=round(best[0], 2), fact=best[1]["text"], fact_sources=best[1]["sources"])
    else:
        out.update(kind="dropped", closest=best[1]["text"] if best[1] else None, share=round(best[0], 2))
    return out


# ---------------------------------------------------------------------------------------------------
# The benchmark
# ---------------------------------------------------------------------------------------------------


def _load_record(path: Path) -> dict[str, Any]:
    if path.is_file():
        loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return loaded
    return {}


def run_conversation(
    sample: dict[str, Any], *, sessions: int, root: Path, llm: LLM | None, log: Callable[[str], None],
    replay: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Retain one conversation's first ``sessions`` sessions into the three banks (resuming from ``root``) and
    score it.

    With ``replay`` (a recorded ``extraction.json``) the model's answers come from the record, and each session
    keeps the recorded model time and tokens."""
    from hindsight_core.hindsight import Hindsight
    from hindsight_core.llm.factory import default_llm

    sample_id = str(sample["sample_id"])
    chosen = locomo_sessions(sample)[:sessions]
    messages: dict[str, dict[str, Any]] = {}
    for s in chosen:
        for m in s.messages:
            if m.get("id"):
                messages[str(m["id"])] = {"text": str(m.get("text", "")), "speaker": m.get("speaker"),
                                          "time": m.get("timestamp") or s.timestamp, "session": s.document_id}
    record_path = root / sample_id / "extraction.json"
    record = _load_record(record_path)
    if replay is not None:
        model = next((r["llm"]["model"] for r in replay.values()), "replay")
        llm = ReplayLLM(replay, name=f"{model} (replayed)")
    counting = CountingLLM(llm if llm is not None else default_llm())
    began = time.perf_counter()
    starter = getattr(counting.inner, "start", None)
    if callable(starter) and any(s.document_id not in record for s in chosen):
        starter()  # load the local model before the clock runs: its start-up is not extraction time
    model_start_s = time.perf_counter() - began
    with Hindsight.open(root / sample_id / "store", llm=counting) as hs:
        bank_raw, bank_default = hs.bank(f"raw-{sample_id}"), hs.bank(f"default-{sample_id}")
        done = ({d.id for d in bank_default.documents(status="done")}
                & {d.id for d in bank_raw.documents(status="done")})
        first_retain_s = None
        if any(s.document_id not in record for s in chosen):
            # Load the embedder and NER before any clock runs (a bank of its own, deleted again): the time a first
            # retain of a fresh process waits for its models, reported apart.
            t = time.perf_counter()
            hs.bank("warm-up").retain("Warm-up.", extract=False, background=False)
            first_retain_s = time.perf_counter() - t
            hs.delete_bank("warm-up")
        for s in chosen:
            if s.document_id in record and s.document_id in done and bank_default.wait_idle(3600):
                log(f"{s.document_id}: already retained (resumed from {record_path})")
                continue
            log(f"{s.document_id}: {len(s.messages)} messages, raw then raw first + facts ...")
            record[s.document_id] = retain_session(bank_raw, bank_default, s, counting)
            if replay is not None and s.document_id in replay:  # the model's cost is the recorded one
                recorded = replay[s.document_id]["llm"]
                for call, old in zip(record[s.document_id]["llm"]["call_log"], recorded["call_log"], strict=False):
                    call["seconds"], call["usage"] = old["seconds"], old.get("usage")
                record[s.document_id]["llm"]["seconds"] = recorded["seconds"]
            write_json(record_path, record)  # partial results survive an interrupted run
            rec = record[s.document_id]
            log(f"  raw {rec['raw']['seconds']:.2f} s; retain returned in {rec['default']['returned_seconds']:.2f} s; "
                f"facts {rec['llm']['seconds']:.1f} s, {rec['llm']['calls']} calls, {len(rec['llm']['facts'])} facts "
                f"(load {rec['llm']['load_average']})")
        record = {s.document_id: record[s.document_id] for s in chosen}
        with Hindsight.open(root / sample_id / "facts-store", llm=ReplayLLM(record, name=counting.name)) as hs_facts:
            bank_facts = facts_only_bank(hs_facts, sample_id, chosen)
            scored = _score(sample, chosen, record, messages, {
                "raw": (hs, bank_raw), FACTS_BANK: (hs_facts, bank_facts),
                "raw+facts": (hs, bank_default), "raw+facts as ranked": (hs, bank_default),
                "raw+facts as keys": (hs, bank_default),
            })
        observations = _observation_cost(hs, bank_default.id)
    return {"sample_id": sample_id, "observations": observations, "sessions": record, "model_start_s": model_start_s,
            "first_retain_s": first_retain_s, **scored, "messages": messages}


def _observation_cost(hs: Any, bank_id: str) -> dict[str, Any]:
    """Every entity's observation written once by the observation job, after the questions are scored, timed: the
    default path's observation work (this benchmark retains with ``background=False``, so that the banks it scores
    hold the facts alone; the job policy writes an entity's observation at 5 memories about it and again after 25
    more, so once per entity is the order of a conversation's work)."""
    from hindsight_core.models import Job

    entities = [e.id for e in hs.store.list_entities(bank_id)]
    if not entities:
        return {"entities": 0, "written": 0, "calls": 0, "seconds": 0.0}
    job = Job(id=f"bench-observations-{bank_id}", bank_id=bank_id, kind="observations",
              payload={"entity_ids": entities, "rebuild": True})
    t = time.perf_counter()
    result = hs.engine.observations.run(job)
    return {"entities": len(entities), "written": result.get("written", 0), "calls": result.get("calls", 0),
            "seconds": time.perf_counter() - t}


def _score(
    sample: dict[str, Any], chosen: Sequence[Session], record: dict[str, Any], messages: dict[str, dict[str, Any]],
    banks: dict[str, tuple[Any, Any]],
) -> dict[str, Any]:
    """Every question whose evidence lies in the chosen sessions, recalled in each bank (name -> (Hindsight, bank),
    with the recall settings of ``BANK_SETTINGS``); the facts bank's misses at R@10 explained."""
    prefixes = {f"D{n}" for n in range(1, len(chosen) + 1)}
    reference = max(s.timestamp for s in chosen if s.timestamp is not None)
    facts = [f for s in chosen for f in record[s.document_id]["llm"]["facts"]]
    scores = {b: ConfigResult() for b in BANKS}
    per_question: list[dict[str, Any]] = []
    for qa in sample["qa"]:
        evidence = evidence_ids(qa.get("evidence", []))
        if not evidence or not all(e.split(":")[0] in prefixes for e in evidence):
            continue
        category = CATEGORIES.get(int(qa.get("category", 0)), "other")
        row: dict[str, Any] = {"question": str(qa["question"]), "category": category, "evidence": sorted(evidence)}
        for name, (hs, bank) in banks.items():
            settings = hs.engine.recaller.settings
            changes = BANK_SETTINGS.get(name, {})
            kept = {key: getattr(settings, key) for key in changes}
            try:
                for key, value in changes.items():
                    setattr(settings, key, value)
                mems = bank.recall(str(qa["question"]), budget=10**9, reference_time=reference).memories
            finally:
                for key, value in kept.items():
                    setattr(settings, key, value)
            metrics = question_metrics(mems, evidence, hs.count_tokens)
            metrics["R@10 1-src"] = coverage(evidence, (best_source(m.text, m.sources, messages) for m in mems[:10]))
            for metric in METRICS:
                scores[name].add(category, metric, metrics[metric])
            row[name] = {m: metrics[m] for m in METRICS}
            row[name]["first_evidence_rank"] = first_evidence_rank(mems, evidence)
            if name == FACTS_BANK:
                top = {s for m in mems[:10] for s in m.sources}
                row[name]["misses"] = [classify_miss(e, mems, facts, messages) for e in sorted(evidence - top)]
                row[name]["cited_anywhere"] = len({e for e in evidence
                                                   if any(e in f["sources"] for f in facts)}) / len(evidence)
        per_question.append(row)
    return {"reference_time": reference, "questions": per_question, "scores": {b: scores[b].table() for b in BANKS},
            "counts": scores["raw"].counts(), "facts": facts}


def summarise(conversations: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Totals over conversations: recall by bank and category, extraction cost and the loss analysis."""
    scores = {b: ConfigResult() for b in BANKS}
    misses: Counter[str] = Counter()
    cited = []
    for conv in conversations:
        for q in conv["questions"]:
            for b in BANKS:
                for m in METRICS:
                    scores[b].add(q["category"], m, q[b][m])
            misses.update(x["kind"] for x in q[FACTS_BANK]["misses"])
            cited.append(q[FACTS_BANK]["cited_anywhere"])
    sessions = [s for conv in conversations for s in conv["sessions"].values()]
    n_msgs = sum(s["messages"] for s in sessions)
    facts = [f for conv in conversations for f in conv["facts"]]
    calls = [c for s in sessions for c in s["llm"]["call_log"]]
    date_issues = [d for conv in conversations for f in conv["facts"]
                   if (d := date_check(f, conv["messages"])) is not None]
    windows = {frozenset(c["window"]) for c in calls}
    n_sources = Counter(len(f["sources"]) for f in facts)
    cited_msgs = {(conv["sample_id"], s) for conv in conversations for f in conv["facts"] for s in f["sources"]}
    prompt = sum(s["llm"]["prompt_tokens"] for s in sessions)
    completion = sum(s["llm"]["completion_tokens"] for s in sessions)
    llm_s = sum(s["llm"]["seconds"] for s in sessions)
    raw_s = sum(s["raw"]["seconds"] for s in sessions)
    returned_s = sum(s.get("default", {}).get("returned_seconds", 0.0) for s in sessions)
    observation_s = sum(c.get("observations", {}).get("seconds", 0.0) for c in conversations)
    observation_calls = sum(c.get("observations", {}).get("calls", 0) for c in conversations)
    server = {k: sum(v) if (v := [s["llm"].get(f"server_{k}") for s in sessions]) and all(isinstance(x, int) for x in v)
              else None for k in ("prompt_tokens", "completion_tokens", "cached_tokens")}
    loads = [x for s in sessions for x in s["llm"].get("load_average", [])]
    checks = [s["llm"].get("checks") or {} for s in sessions]
    by_reason: Counter[str] = Counter()
    for c in checks:
        by_reason.update(c.get("rejected_by_reason") or {})
    first = [c["first_retain_s"] for c in conversations if c.get("first_retain_s") is not None]
    return {
        "questions": sum(len(c["questions"]) for c in conversations),
        "recall": {b: scores[b].table() for b in BANKS},
        "questions_per_category": scores["raw"].counts(),
        "messages": n_msgs,
        "extraction": {
            "model": next((s["llm"]["model"] for s in sessions), None),
            "seconds": llm_s, "seconds_per_message": llm_s / n_msgs if n_msgs else None,
            "raw_seconds": raw_s, "raw_seconds_per_message": raw_s / n_msgs if n_msgs else None,
            "retain_returned_seconds_per_message": returned_s / n_msgs if n_msgs else None,
            # Not part of "seconds": every entity's observation written once, after scoring (_observation_cost).
            "observation_seconds_per_message": observation_s / n_msgs if n_msgs else None,
            "observation_calls_per_message": observation_calls / n_msgs if n_msgs else None,
            "load_average": [min(loads), max(loads)] if loads else None,
            "server_tokens": server,
            "server_prompt_tokens_per_message": server["prompt_tokens"] / n_msgs
            if n_msgs and server["prompt_tokens"] is not None else None,
            "server_completion_tokens_per_message": server["completion_tokens"] / n_msgs
            if n_msgs and server["completion_tokens"] is not None else None,
            "calls": len(calls), "windows": len(windows),
            "malformed_answers": sum(1 for c in calls if c["malformed"]),
            "prompt_tokens": prompt, "completion_tokens": completion,
            "tokens_per_message": (prompt + completion) / n_msgs if n_msgs else None,
            "prompt_tokens_per_message": prompt / n_msgs if n_msgs else None,
            "completion_tokens_per_message": completion / n_msgs if n_msgs else None,
            "tokens_note": "cl100k_base estimates of the chat messages sent and the parsed answer",
            "model_start_seconds": sum(c.get("model_start_s", 0.0) for c in conversations),
            "seconds_per_call": llm_s / len(calls) if calls else None,
        },
        "facts": {
            "count": len(facts), "per_message": len(facts) / n_msgs if n_msgs else None,
            "without_sources": sum(1 for f in facts if not f["sources"]),
            "sources_per_fact": dict(sorted(n_sources.items())),
            "citing_whole_window": sum(1 for f in facts
                                       if len(f["sources"]) > 1 and frozenset(f["sources"]) in windows),
            "messages_cited": len(cited_msgs), "messages_cited_share": len(cited_msgs) / n_msgs if n_msgs else None,
            "model_answers": model_source_stats(calls),
            "dates_contradict_text": sum(1 for d in date_issues if d["kind"] == "contradicts text"),
            "dates_shifted": sum(1 for d in date_issues if d["kind"] == "shifted"),
            "dates_missed": sum(1 for d in date_issues if d["kind"] == "missed"),
            "date_examples": date_issues[:30],
            "with_occurrence": sum(1 for f in facts if f["occurred"][0] is not None),
        },
        "checks": {"rejected": sum(c.get("rejected") or 0 for c in checks), "rejected_by_reason": dict(by_reason),
                   "repointed": sum(c.get("repointed") or 0 for c in checks)},
        "first_retain_seconds": max(first) if first else None,
        "evidence_cited_anywhere": 100 * sum(cited) / len(cited) if cited else None,
        "misses_at_10": dict(misses),
    }


def run_llm_vs_raw(
    data_path: str | Path,
    *,
    conversations: Sequence[str] | None = None,
    sessions: int | None = None,
    llm: LLM | None = None,
    workdir: str | Path | None = None,
    replay_from: str | Path | None = None,
    log: Callable[[str], None] = print,
    split: str | None = None,
) -> dict[str, Any]:
    """Run the comparison (see the module docstring) and return a JSON-able result (also logged).

    ``split`` (``dev`` or ``test``) takes that half's conversations and, unless ``sessions`` is given, the first N
    sessions of each for the smallest N giving ``MIN_QUESTIONS`` questions. ``replay_from`` is the workdir of an
    earlier run: its recorded model answers are replayed (``ReplayLLM``) instead of calling a model; ``workdir``
    must then be another folder (or None)."""
    samples = json.loads(Path(data_path).read_text(encoding="utf-8"))
    data = {s["sample_id"]: s for s in samples}
    if split is not None:
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; use {', '.join(SPLITS)}")
        if conversations:
            raise ValueError("give --split or --conversations, not both")
        conversations = [s["sample_id"] for s in split_samples(samples, split)]
    conversations = list(conversations or DEFAULT_CONVERSATIONS)
    if sessions is None:
        sessions = (sessions_for([data[c] for c in conversations if c in data], MIN_QUESTIONS, MAX_MESSAGES)
                    if split is not None else DEFAULT_SESSIONS)
    if sessions < 1:
        raise ValueError("sessions must be >= 1")
    unknown = [c for c in conversations if c not in data]
    if unknown:
        raise ValueError(f"unknown conversation(s) {unknown}; the data has {', '.join(data)}")
    if any(c in SPLITS["test"] for c in conversations):
        log("note: test-half conversations chosen; nothing may be tuned on them")
    if replay_from is not None and workdir is not None and Path(replay_from).resolve() == Path(workdir).resolve():
        raise ValueError("replay into another workdir than the one replayed")
    replays: dict[str, dict[str, Any] | None] = {c: None for c in conversations}
    if replay_from is not None:
        for c in conversations:
            path = Path(replay_from) / c / "extraction.json"
            if not path.is_file():
                raise ValueError(f"nothing recorded to replay for {c}: {path} is missing")
            replays[c] = _load_record(path)
    tmp = tempfile.TemporaryDirectory(prefix="hindsight-llm-vs-raw-") if workdir is None else None
    root = Path(workdir) if workdir is not None else Path(tmp.name)  # type: ignore[union-attr]
    started = time.perf_counter()
    try:
        convs = [run_conversation(data[c], sessions=sessions, root=root, llm=llm, log=log, replay=replays[c])
                 for c in conversations]
    finally:
        if tmp is not None:
            tmp.cleanup()
    out: dict[str, Any] = {
        "benchmark": "llm-vs-raw", "dataset": str(data_path), "conversations": list(conversations), "split": split,
        "replayed_from": str(replay_from) if replay_from is not None else None,
        "sessions": sessions, "seconds": time.perf_counter() - started, "run": run_info(),
        "summary": summarise(convs),
        "per_conversation": {c["sample_id"]: {"scores": c["scores"], "counts": c["counts"],
                                              "sessions": c["sessions"], "questions": c["questions"]}
                             for c in convs},
    }
    log(format_report(out))
    return out


def questions_within(sample: dict[str, Any], sessions: int) -> int:
    """Questions of a sample whose evidence lies entirely in its first ``sessions`` sessions."""
    prefixes = {f"D{n}" for n in range(1, sessions + 1)}
    return sum(1 for qa in sample["qa"]
               if (ev := evidence_ids(qa.get("evidence", []))) and all(e.split(":")[0] in prefixes for e in ev))


def sessions_for(samples: Sequence[dict[str, Any]], min_questions: int, max_messages: int | None = None) -> int:
    """The smallest N for which the first N sessions of the samples hold ``min_questions`` questions, or (when
    given) ``max_messages`` messages; all sessions when neither is reached."""
    most = max((len(locomo_sessions(s)) for s in samples), default=1)
    for n in range(1, most + 1):
        if sum(questions_within(s, n) for s in samples) >= min_questions:
            return n
        if max_messages is not None and sum(len(x.messages) for s in samples
                                            for x in locomo_sessions(s)[:n]) >= max_messages:
            return n
    return most


def format_report(result: dict[str, Any]) -> str:
    """Markdown: recall of each bank by category, extraction cost, facts, and why evidence was missed."""
    s = result["summary"]
    ex, facts = s["extraction"], s["facts"]
    lines = [f"LoCoMo {', '.join(result['conversations'])}, sessions 1-{result['sessions']}: {s['questions']} "
             f"questions with all evidence in those sessions, {s['messages']} messages; model {ex['model']}", ""]
    counts = s["questions_per_category"]
    cats = [c for c in (*CATEGORIES.values(), "other", "all") if c in counts]
    for metric in METRICS:
        rows = [[c, counts.get(c), *(s["recall"][b][metric].get(c) for b in BANKS)] for c in cats]
        lines += [f"{metric}:", "", *md_table(["category", "n", *BANKS], rows), ""]
    server = ex.get("server_tokens") or {}
    lines += ["Extraction cost:", ""]
    lines += md_table(["", "raw", "raw + facts (the facts job)"], [
        ["seconds per message", ex["raw_seconds_per_message"], ex["seconds_per_message"]],
        ["retain returned after (s per message)", ex["raw_seconds_per_message"],
         ex.get("retain_returned_seconds_per_message")],
        ["observation job, every entity once (s per message; model calls per message)", 0,
         f"{ex.get('observation_seconds_per_message') or 0:.3f} ({ex.get('observation_calls_per_message') or 0:.3f})"],
        ["load average during extraction (1 min, min-max)", "", ex.get("load_average")],
        ["model calls (windows)", 0, f"{ex['calls']} ({ex['windows']})"],
        ["tokens per message, server (prompt + completion)", 0,
         f"{ex.get('server_prompt_tokens_per_message') or 0:.0f} + "
         f"{ex.get('server_completion_tokens_per_message') or 0:.0f} "
         f"({server.get('cached_tokens') or 0} prompt tokens reused from the cache in all)"],
        ["tokens per message (prompt + completion, cl100k est.)", 0,
         f"{ex['tokens_per_message'] or 0:.0f} ({ex['prompt_tokens_per_message'] or 0:.0f} + "
         f"{ex['completion_tokens_per_message'] or 0:.0f})"],
        ["units", s["messages"], f"{s['messages']} + {facts['count']} facts"],
    ])
    model = facts["model_answers"]
    lines += ["", f"Facts: {facts['count']} ({facts['per_message'] or 0:.2f} per message); stored without sources: "
              f"{facts['without_sources']}; sources per fact {facts['sources_per_fact']}; citing a whole window: "
              f"{facts['citing_whole_window']}; messages cited by some fact: {facts['messages_cited']} of "
              f"{s['messages']} ({100 * (facts['messages_cited_share'] or 0):.0f}%). As the model answered (each "
              f"window's last parsed answer): "
              f"{model.get('facts', 0)} facts, {model.get('no_src', 0)} with no src, "
              f"{model.get('only_invalid_src', 0)} citing only ids outside the window, "
              f"{model.get('cites_context_line', 0)} citing the earlier context line, "
              f"{model.get('three_or_more_src', 0)} citing three or more ids; {model.get('retried_windows', 0)} "
              f"windows retried, {model.get('malformed_answers', 0)} malformed answers. "
              f"Of {facts['with_occurrence']} dated facts, "
              f"{facts['dates_contradict_text']} contradict a period their own text names, "
              f"{facts['dates_shifted']} sit more than {DATE_SLACK_DAYS} day from the day said and from what "
              f"their sources' words imply, and {facts['dates_missed']} single-source facts lost the date their "
              "source states.",
              "", f"Checks against the cited messages (extract/grounding): {s['checks']['rejected']} facts rejected "
              f"{s['checks']['rejected_by_reason']}, {s['checks']['repointed']} citations re-pointed. A first retain "
              f"in a fresh process waited {s['first_retain_seconds'] or 0:.1f} s for its models (NER, embedder; "
              "no LLM: the facts job runs after it returns).",
              "", "Evidence ids cited by any fact (the facts bank's ceiling): "
              f"{s['evidence_cited_anywhere'] or 0:.1f}%; "
              f"evidence missed at R@10 by the facts bank: {s['misses_at_10']}"]
    return "\n".join(lines)


def write_llm_vs_raw(out_dir: str | Path, result: dict[str, Any]) -> list[Path]:
    """Write ``llm-vs-raw.json`` and ``llm-vs-raw.md`` (the report plus every LLM miss explained)."""
    out = Path(out_dir)
    misses: list[str] = []
    for sample_id, conv in result["per_conversation"].items():
        for q in conv["questions"]:
            for miss in q[FACTS_BANK]["misses"]:
                detail = (f"rank {miss.get('rank')}" if miss["kind"] == "ranked low" else
                          f"into {miss.get('fact_sources')} ({miss.get('share')}): {miss.get('fact')}"
                          if miss["kind"] == "merged" else f"closest ({miss.get('share')}): {miss.get('closest')}")
                misses.append(f"- {sample_id} [{q['category']}] {q['question']} -- {miss['id']} {miss['kind']}, "
                              f"{detail}. Message: {miss['message']}")
    text = ("# Raw turns, LLM facts, and raw first with facts later\n\n" + format_report(result)
            + "\n\n## Evidence the facts bank missed at R@10\n\n" + ("\n".join(misses) or "none") + "\n")
    return [write_json(out / "llm-vs-raw.json", result), write_text(out / "llm-vs-raw.md", text)]
