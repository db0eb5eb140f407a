"""Reflect (CARA, paper section 5): recall, then the model, shaped by the bank's disposition.

A yes/no question ("Should I trust Rafael to house-sit?"; :func:`hindsight_core.opinions.verdicts.is_yes_no_question`)
is judged memory by memory (the default, ``CaraSettings.reflect_judgement = "per_memory"``): one small model call per
recalled memory (at most ``verdicts.JUDGED``) says whether it points to yes, to no or to neither; the code computes
the stance and its confidence from the verdicts and the disposition (:mod:`hindsight_core.opinions.stance`), writes
the answer from them ("Probably not (confidence 0.31): against it, ...; for it, ...") and stores the opinion with
every verdict. With ``"in_call"``, and for every other question, the model sees the bank's name, background and
verbalised disposition and the recalled memories numbered [1]..[n] (in the order the empathy trait gives them:
:func:`hindsight_core.opinions.disposition.empathy_order`) in one structured call: it cites the numbers it relied on
and those that speak against its answer (mapped back to memory ids; invented numbers are dropped and counted), for a
yes/no question sorts them into ``points_yes`` / ``points_no``, states its stance, answers, and may form opinions.
Opinions are stored in the opinion network with their formation event and a confidence computed from the evidence
and the disposition (:mod:`hindsight_core.opinions.confidence`), not the model's number.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from ..errors import BankNotFoundError, InvalidInputError
from ..extract.base import ExtractedEntity, ExtractedFact
from ..llm.base import LLM, LLM_SCHEMA_CONFIG, ChatMessage
from ..llm.structured import astructured_call, structured_call
from ..models import (
    BankProfile,
    Disposition,
    Document,
    Memory,
    Network,
    OpinionEvent,
    Recall,
    Reflection,
    utcnow,
)
from ..opinions.coherence import coherent_answer, judged_answer, judged_opinion_text
from ..opinions.confidence import confidence_basis
from ..opinions.disposition import empathy_order, verbalize
from ..opinions.formed import FormedOpinion, whole_sentences
from ..opinions.stance import Judgement, Verdict, judge, names_in
from ..opinions.verdicts import ajudge_memories, is_yes_no_question, judge_memories
from ..recall.pipeline import RecallPipeline
from ..retain.pipeline import FactWriter
from ..stores.base import BankStore, UnitStore
from ..validation import When

log = logging.getLogger(__name__)

DispositionLike = Disposition | Mapping[str, Any] | None
"""A disposition, or its fields as a mapping (validated), or None for the bank's own."""

UNKNOWN_ANSWER = "I don't know: nothing in my memory answers that."
MAX_MEMORIES_IN_PROMPT = 24


class _Answer(BaseModel):
    # Every key required in the advertised schema: with optional keys the small model leaves out stance and
    # against. Citations come before the answer: a small model that first picks its evidence answers from it.
    model_config = LLM_SCHEMA_CONFIG

    known: bool = Field(description="true if some memories are relevant to the question")
    # Each memory's verdict on a yes/no question, asked before the answer: the code computes the stance from them
    # (opinions/stance.py). Two short lists cost a few tokens; a verdict object per memory cost ~10 each.
    points_yes: list[int] = Field(default_factory=list, max_length=8,
                                  description="yes/no question: numbers of the memories that point to yes; else []")
    points_no: list[int] = Field(default_factory=list, max_length=8,
                                 description="yes/no question: numbers of the memories that point to no; else []")
    # At least one citation: small models otherwise answer "from nowhere" (ignored when known is false).
    based_on: list[int] = Field(min_length=1, max_length=8, description="numbers of the memories your answer uses")
    # At most 3, "usually none": with room for 8 the small model filled it with as many numbers as based_on.
    against: list[int] = Field(default_factory=list, max_length=3,
                               description="numbers of memories that contradict your answer; usually []")
    stance: Literal["yes", "no", "unsure"] = Field(
        "unsure", description="for a yes/no question your judgment, else unsure")
    answer: str = Field(max_length=1200, description="1-3 sentences that give the reasoning")
    opinions: list[FormedOpinion] = Field(default_factory=list, max_length=3)


def system_message(profile: BankProfile, disposition: Disposition) -> str:
    """The reflect system message: identity, background and the verbalised disposition."""
    background = profile.background.strip() or "(no background yet)"
    # A bank named only by its id ("alice", a user's id) is no person: told "You are alice", the model spoke as the
    # user. The name is the agent's only when the profile gives one.
    identity = f"You are {profile.name}" if profile.name.strip() and profile.name != profile.id else \
        "You are an AI assistant answering from your long-term memory"
    return (
        f"{identity}. Your background: {background}\n"
        f"{verbalize(disposition)}\n"
        "Answer the question from the numbered memories you are given, reasoning and judging in line with "
        "your disposition. Cite in based_on the numbers of the memories you used. Set known to true when "
        "some memories are relevant; only if none is relevant, set known to false and say you do not know. "
        "Cite in against only memories that contradict your answer (usually none). "
        "For a yes/no question, first sort the memories that bear on it, each on its own: in points_yes those that "
        "make the answer yes more likely, in points_no those that make it no more likely; leave out memories about "
        "something else (example, for \"Is Sam a good cook?\": \"Lee: Every guest praised Sam's lasagne\" "
        "points to yes, \"Kim: Sam burned the rice again\" points to no, \"Lee: I bought a bicycle\" to neither). "
        "Never invent facts. If the question asks for a judgment (is, should, would, what do you think), "
        "add your judgment to opinions: one sentence in your own words, a confidence between 0 and 1 that "
        "reflects your disposition, and a short rationale."
    )


def user_message(query: str, memories: list[Memory], reference_time: datetime) -> str:
    """The question with the recalled memories numbered from 1, each with its date; a memory superseded by a later
    one says so and by which (it is history, not the present)."""
    lines = [f"Current time: {reference_time:%Y-%m-%d %H:%M} UTC", "Memories:"]
    number = {m.id: i for i, m in enumerate(memories, start=1)}
    for i, m in enumerate(memories, start=1):
        when = m.occurred_start or m.mentioned_at
        date = f"{when:%Y-%m-%d}" if when else "undated"
        extra = f" (confidence {m.confidence:.2f})" if m.confidence is not None else ""
        if m.superseded_by is not None and not m.current_at(reference_time):
            until = f" on {m.valid_until:%Y-%m-%d}" if m.valid_until else ""
            by = f" by [{number[m.superseded_by]}]" if m.superseded_by in number else " by a later memory"
            extra += f" (superseded{until}{by}: no longer current)"
        lines.append(f"[{i}] ({date}, {m.network.value}{extra}) {m.text}")
    lines.append(f"Question: {query}")
    return "\n".join(lines)


def _reference(recall: Recall) -> datetime | None:
    """The reference time recall resolved ("now" for the question), from its trace."""
    return recall.trace.reference_time if recall.trace is not None else None


def _current(memories: list[Memory], reference: datetime | None) -> list[Memory]:
    """The memories still current at the reference time: a superseded one ("I work as a nurse", before "I left
    nursing") is history, and judging the present by it would count what is no longer so."""
    return [m for m in memories if m.current_at(reference)]


def _relevant(recall: Recall) -> bool:
    """Whether recall found anything at all related: a keyword match or a reasonably close vector."""
    if not recall.memories:
        return False
    trace = recall.trace
    if trace is None:
        return True
    for item in trace.items[: len(recall.memories)]:
        if "keyword" in item.channels or "temporal" in item.channels:
            return True
        sem = item.channels.get("semantic")
        if sem is not None and sem.score >= 0.3:
            return True
    return False


def _opinion_facts(formed: list[FormedOpinion], evidence: list[Memory], now: datetime) -> list[ExtractedFact]:
    """The opinions as facts of the opinion network, each citing the messages of all the evidence."""
    sources = list(dict.fromkeys(s for m in evidence for s in m.sources))
    return [
        ExtractedFact(
            text=o.text.strip(), network=Network.OPINION, confidence=o.confidence, mentioned_at=now,
            entities=[ExtractedEntity(name=e) for e in o.entities if e.strip()], sources=sources, position=i,
        )
        for i, o in enumerate(formed)
    ]


def _opinion_metadata(
    based_on: list[str], against: list[str] | None, proposed: list[float], basis: Mapping[str, Any] | None,
    query: str | None,
) -> dict[str, Any]:
    """The metadata stored with opinions: their evidence, and with ``basis`` (grounded) the confidences the
    model proposed and why the stored one differs."""
    meta: dict[str, Any] = {"based_on": based_on}
    if against:
        meta["against"] = list(against)
    if basis is not None:
        meta["model_confidence"] = proposed
        meta["confidence_basis"] = basis["explanation"]
    if query:
        meta["query"] = query
    return meta


class ReflectStore(BankStore, UnitStore, Protocol):
    """What reflect reads: the bank's profile (name, background, disposition) and the evidence memories."""


class ReflectPipeline:
    """Runs reflect for any bank: recall, one structured model call, opinions written through ``write_facts``.

    ``llm`` is called when a model is needed (the default local model loads on first use, not at open).
    """

    def __init__(
        self, store: ReflectStore, recaller: RecallPipeline, write_facts: FactWriter, llm: Callable[[], LLM], *,
        judgement: Literal["per_memory", "in_call"] = "per_memory",
    ) -> None:
        self.store = store
        self.recaller = recaller
        self.write_facts = write_facts
        self._llm = llm
        self.judgement = judgement

    def _prepare(
        self, bank_id: str, query: str, disposition: DispositionLike, budget: int, reference_time: When
    ) -> tuple[BankProfile, Disposition, Recall, list[Memory], list[ChatMessage]]:
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError("reflect needs a non-empty question")
        profile = self.store.get_bank(bank_id)
        if profile is None:
            raise BankNotFoundError(f"no bank {bank_id!r}")
        disp = Disposition.model_validate(disposition) if disposition is not None else profile.disposition
        recall = self.recaller.recall(bank_id, query, budget=budget, reference_time=reference_time, trace=True)
        memories = empathy_order(recall.memories, disp)[:MAX_MEMORIES_IN_PROMPT]
        ref = recall.trace.reference_time if recall.trace is not None else utcnow()
        messages: list[ChatMessage] = [
            {"role": "system", "content": system_message(profile, disp)},
            {"role": "user", "content": user_message(query, memories, ref)},
        ]
        return profile, disp, recall, memories, messages

    def _finish(
        self, bank_id: str, query: str, disp: Disposition, memories: list[Memory], messages: list[ChatMessage],
        out: _Answer | None, opinion_document: str | None = None, reference: datetime | None = None,
    ) -> Reflection:
        system = messages[0]["content"]
        if out is not None and (out.points_yes or out.points_no):
            out = out.model_copy(update={"known": True})  # memories judged to bear on it are relevant ones
        if out is None or not out.known:
            answer = out.answer.strip() if out is not None and out.answer.strip() else UNKNOWN_ANSWER
            return Reflection(query=query, answer=answer, known=False, memories=memories, disposition=disp,
                              system_message=system)
        def cited(numbers: list[int]) -> list[str]:
            return list(dict.fromkeys(memories[n - 1].id for n in numbers if 1 <= n <= len(memories)))

        based_on = cited(out.based_on)
        against = [m for m in cited(out.against) if m not in based_on]  # cited both ways: it supports
        dropped = sum(1 for n in [*out.based_on, *out.against, *out.points_yes, *out.points_no]
                      if not 1 <= n <= len(memories))
        yes, no = cited(out.points_yes), cited(out.points_no)
        if yes or no:
            return self._finish_judged(bank_id, query, disp, memories, system, out, (based_on, yes, no), dropped,
                                       opinion_document, reference or utcnow())
        # The model's opinions stop at the schema's length limit mid-phrase: only their whole sentences are kept.
        formed = [o.model_copy(update={"text": whole_sentences(o.text)}) for o in out.opinions]
        opinions = self.store_opinions(bank_id, formed, based_on, query=query, document_id=opinion_document,
                                       grounded=(disp, reference or utcnow()), against=against)
        # The answer states the stance its evidence carries: a flat yes or no it does not carry is rewritten.
        said = coherent_answer(out.answer, out.stance, self._evidence(bank_id, based_on),
                               self._evidence(bank_id, against), disp, reference or utcnow())
        if said.rewritten:
            log.info("reflect: a flat %s at confidence %.2f rewritten as %s", out.stance, said.confidence or 0.0,
                     said.stance)
        return Reflection(query=query, answer=said.answer, known=True, based_on=based_on, against=against,
                          stance=said.stance, citations_dropped=dropped, opinions=opinions, memories=memories,
                          disposition=disp, system_message=system)

    def _per_memory(self, query: str) -> bool:
        return self.judgement == "per_memory" and is_yes_no_question(query)

    def _finish_verdicts(
        self, bank_id: str, query: str, disp: Disposition, memories: list[Memory], messages: list[ChatMessage],
        verdicts: Mapping[str, Verdict], opinion_document: str | None, reference: datetime | None,
    ) -> Reflection:
        """A yes/no question whose memories were judged one by one (``judge_memories``): the stance and its confidence
        are computed from the verdicts (``judge``), and the answer and the opinion are written from them."""
        system = messages[0]["content"]
        yes = [m for m in memories if verdicts.get(m.id) == "yes"]
        no = [m for m in memories if verdicts.get(m.id) == "no"]
        if not yes and not no:
            return Reflection(query=query, answer=UNKNOWN_ANSWER, known=False, verdicts=dict(verdicts),
                              memories=memories, disposition=disp, system_message=system)
        neither = [m for m in memories if verdicts.get(m.id) == "neither"]
        judgement = judge(yes, no, disp, reference or utcnow(), about=names_in(query), neither=neither)
        said = judged_answer("", judgement, query)
        opinions = self._store_judged(bank_id, [], judgement, query, opinion_document)
        return Reflection(query=query, answer=said.answer, known=True, based_on=[m.id for m in judgement.support],
                          against=[m.id for m in judgement.against], stance=said.stance,
                          verdicts=dict(judgement.verdicts), confidence=judgement.confidence, opinions=opinions,
                          memories=memories, disposition=disp, system_message=system)

    def _finish_judged(
        self, bank_id: str, query: str, disp: Disposition, memories: list[Memory], system: str, out: _Answer,
        cited: tuple[list[str], list[str], list[str]], dropped: int, opinion_document: str | None,
        reference: datetime,
    ) -> Reflection:
        """A yes/no question whose memories the model judged: the stance, its confidence, the answer and the opinion
        all come from the judged evidence (``judge``); the opinion records each memory's verdict."""
        based_on, yes, no = cited
        shown = {m.id: m for m in memories}
        neither = [shown[i] for i in based_on if i not in yes and i not in no]
        judgement = judge(self._evidence(bank_id, yes), self._evidence(bank_id, no), disp, reference,
                          about=names_in(query), neither=neither)
        said = judged_answer(out.answer, judgement, query)
        if said.rewritten:
            log.info("reflect: answer rewritten from the judged stance %s (confidence %.2f)", judgement.stance,
                     judgement.confidence)
        opinions = self._store_judged(bank_id, out.opinions, judgement, query, opinion_document)
        support = [m.id for m in judgement.support]
        return Reflection(query=query, answer=said.answer, known=True,
                          based_on=list(dict.fromkeys([*support, *based_on])),
                          against=[m.id for m in judgement.against], stance=said.stance,
                          citations_dropped=dropped, verdicts=dict(judgement.verdicts),
                          confidence=judgement.confidence, opinions=opinions, memories=memories, disposition=disp,
                          system_message=system)

    def _store_judged(
        self, bank_id: str, formed: list[FormedOpinion], judgement: Judgement, query: str, document_id: str | None,
    ) -> list[Memory]:
        """The opinion of a judged yes/no question: the model's first opinion when it takes the computed stance's
        side, else one written from the stance (:func:`judged_opinion_text`); stored with the stance's confidence,
        the evidence on each side and every verdict relative to it (for / against / neutral). None when nothing
        weighed on either side."""
        if judgement.stance == "unsure" or judgement.confidence <= 0.0:
            return []
        first = next((o for o in formed if o.text.strip()), None)
        text = judged_opinion_text(first.text if first is not None else "", judgement, query)
        opinion = FormedOpinion(text=text, rationale=first.rationale if first is not None else judgement.explanation,
                                confidence=judgement.confidence,
                                entities=first.entities if first is not None else sorted(names_in(query)))
        side = {"yes": "yes", "no": "no"}.get(judgement.stance) or (
            "yes" if judgement.weight_yes >= judgement.weight_no else "no")
        relative = {i: ("neutral" if v == "neither" else "for" if v == side else "against")
                    for i, v in judgement.verdicts.items()}
        extra = {"stance": judgement.stance, "verdicts": relative, "confidence_basis": judgement.explanation,
                 "model_confidence": [o.confidence for o in formed[:1]]}
        return self.store_opinions(bank_id, [opinion], [m.id for m in judgement.support], query=query,
                                   document_id=document_id, against=[m.id for m in judgement.against], extra=extra)

    def store_opinions(
        self, bank_id: str, formed: list[FormedOpinion], based_on: list[str], *, query: str | None = None,
        document_id: str | None = None, grounded: tuple[Disposition, datetime] | None = None,
        against: list[str] | None = None, extra: Mapping[str, Any] | None = None,
    ) -> list[Memory]:
        """Store opinions in the opinion network, each with its "formed" history event in the same transaction.

        ``based_on`` are memory ids of the bank; the opinion's sources are their message ids. ``document_id``
        names the synthetic document they are stored under (default: a new one); storing under the same id
        again replaces them, which makes a retried scheduled reflect store its opinions once. ``grounded``
        (the disposition and the reference time) replaces each opinion's confidence by the one its evidence
        supports (``grounded_confidence``, with ``against``: ids of memories cited against it; the proposed
        number is kept as ``model_confidence``); an opinion with no support left is not stored. ``extra``: more
        metadata stored with them (a judged opinion's stance and verdicts).
        """
        formed = [o for o in formed if o.text.strip()]
        if not formed:
            return []
        now = utcnow()
        evidence = self._evidence(bank_id, based_on)
        based_on = [m.id for m in evidence]  # ids of other banks or unknown ids are not evidence
        proposed = [o.confidence for o in formed]  # what the model (or the caller) said
        basis: dict[str, float | int | str] | None = None
        if grounded is not None:
            disposition, reference = grounded
            opposed = self.store.get_units(bank_id, against or [])
            basis = confidence_basis(evidence, opposed, disposition, reference)
            confidence = float(basis["confidence"])
            if confidence <= 0.0:
                log.info("reflect: %d opinion(s) without support under this disposition, not stored", len(formed))
                return []
            formed = [o.model_copy(update={"confidence": confidence}) for o in formed]
        facts = _opinion_facts(formed, evidence, now)
        doc = Document(id=document_id or f"opinion:{uuid.uuid4()}", bank_id=bank_id, content=query or "",
                       timestamp=now)
        meta = {**_opinion_metadata(based_on, against, proposed, basis, query), **(extra or {})}

        def formed_events(units: list[Memory]) -> list[OpinionEvent]:
            return [
                OpinionEvent(opinion_id=unit.id, at=now, label="formed", new_confidence=opinion.confidence,
                             evidence=based_on, new_text=unit.text, rationale=opinion.rationale)
                for unit, opinion in zip(units, formed, strict=True)
            ]

        result = self.write_facts(doc, facts, metadata=meta, opinion_events=formed_events)
        for unit, opinion, said in zip(result.memories, formed, proposed, strict=True):
            unit.metadata["rationale"] = opinion.rationale
            if basis is not None:
                unit.metadata["model_confidence"] = said
                unit.metadata["confidence_basis"] = basis["explanation"]
            unit.metadata.update(extra or {})
        return result.memories

    def _evidence(self, bank_id: str, based_on: list[str]) -> list[Memory]:
        """The memories ``based_on`` names that the bank holds, in the order the answer cited them."""
        evidence = self.store.get_units(bank_id, based_on)
        order = {memory_id: i for i, memory_id in enumerate(based_on)}
        evidence.sort(key=lambda m: order.get(m.id, len(order)))
        return evidence

    def reflect(
        self, bank_id: str, query: str, *, disposition: DispositionLike = None, budget: int = 2000,
        reference_time: When = None, opinion_document: str | None = None,
    ) -> Reflection:
        """See ``Bank.reflect``; ``opinion_document``: see ``store_opinions`` (scheduled reflects)."""
        _, disp, recall, memories, messages = self._prepare(bank_id, query, disposition, budget, reference_time)
        if self._per_memory(query):
            verdicts = judge_memories(self._llm(), query, _current(memories, _reference(recall))) \
                if _relevant(recall) else {}
            return self._finish_verdicts(bank_id, query, disp, memories, messages, verdicts, opinion_document,
                                         _reference(recall))
        out = None
        if _relevant(recall):
            out = structured_call(self._llm(), messages, _Answer, what="reflect", max_tokens=700)
        return self._finish(bank_id, query, disp, memories, messages, out, opinion_document, _reference(recall))

    async def areflect(
        self, bank_id: str, query: str, *, disposition: DispositionLike = None, budget: int = 2000,
        reference_time: When = None,
    ) -> Reflection:
        """Async twin: recall and storage in a worker thread, the model call natively async."""
        _, disp, recall, memories, messages = await asyncio.to_thread(
            self._prepare, bank_id, query, disposition, budget, reference_time
        )
        if self._per_memory(query):
            verdicts = await ajudge_memories(self._llm(), query, _current(memories, _reference(recall))) \
                if _relevant(recall) else {}
            return await asyncio.to_thread(self._finish_verdicts, bank_id, query, disp, memories, messages, verdicts,
                                           None, _reference(recall))
        out = (
            await astructured_call(self._llm(), messages, _Answer, what="reflect", max_tokens=700)
            if _relevant(recall)
            else None
        )
        return await asyncio.to_thread(self._finish, bank_id, query, disp, memories, messages, out, None,
                                       _reference(recall))
