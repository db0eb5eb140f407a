"""Facts checked against the messages they cite, before they are stored (issue "grounded beliefs").

A small model writing facts about a chat hands one speaker's words to the other ("Kevin is a fan of Real Madrid"
from Paola's message), turns a question into a claim ("Muhammed works as a freelancer" from his own "do you work as
a freelancer?"), invents ("Kevin's dog is a picture"), writes junk ("... is not mentioned in the messages") and
cites a neighbour of the message that says it. The bank must never state what no message says, so every fact is
checked here against its cited messages, in code, with no model:

* **Junk.** Facts that say nothing ("not mentioned", "unknown"), copy a greeting or an acknowledgement ("Got it",
  "Nice! I'll remember that."), only report a dialogue move ("Kevin asks Paola about her day") or a reaction to the
  other speaker's news ("Jon is impressed by Gina's store"), quote a message with the speaker's name in front, keep
  another person's "I", or are about an unresolved "it" or "this". A copied tail of talk to "you" is cut off.
* **Who.** Every speaker a fact names must have said a cited message or be spoken of in one (being addressed,
  "Thanks, Maria!", is not being spoken of): a first-person statement belongs to its speaker, never to the
  listener, and words to the listener are not the speaker's news. A possession must be stated by its owner.
* **What.** Names and numbers in the fact must occur in the cited messages, and enough of its content words must
  (``min_coverage``; a fact about a speaker in one message of theirs), or its embedding must be close to a cited
  message's (``min_similarity``: a paraphrase). A question asserts nothing (unless the fact says someone asked).
* **When.** A time phrase of the fact must name a period its messages' own words (or the day they were said)
  place it in: no invented dates.
* **Citations.** A fact whose cited messages fail but a message near them passes is re-pointed to that message
  (the model often cites the question before an answer); otherwise it is rejected.

Rejected facts are returned with their reason, never silently lost: the facts job counts them per reason and keeps
a sample in its result, so a user can see why a fact was not stored. The thresholds were chosen on the dev part of
the labelled belief set (``hindsight bench beliefs``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from ..models import EntityType, Message
from ..temporal import statement_tense
from ..text.words import STOPWORDS, content_words, stem
from .base import ExtractedEntity, ExtractedFact
from .common_words import in_dictionary
from .dates import phrase_ranges

__all__ = [
    "MIN_COVERAGE",
    "MIN_SIMILARITY",
    "FactChecker",
    "GroundingReport",
    "RejectReason",
    "Rejection",
    "SourceLine",
    "source_lines",
]

MIN_COVERAGE = 0.6
"""Share of a fact's content words (names of the speakers aside) that its cited messages must contain. Chosen on the
dev part of the labelled belief set: 0.5 / 0.6 / 0.67 / 0.75 stored facts 85.4 / 89.1 / 88.9 / 88.6% true, keeping
91.1 / 91.1 / 88.9 / 84.4% of the true facts."""
MIN_SIMILARITY = 0.6
"""Cosine between a fact and one cited message that supports the fact's content as a paraphrase (on the dev part no
fact between 0.6 and 0.8 was decided by it: the model rarely paraphrases past the words it read)."""
NEIGHBOURS = 3
"""How far (in messages) from its cited ones a fact may be re-pointed to the message that says it."""
SAMPLE = 50
"""Rejected facts kept verbatim in a job's result (the counts cover all of them)."""

RejectReason = Literal["junk", "speaker", "content", "question", "date", "forgotten"]
"""Why a fact was not stored: ``junk`` (says nothing, a greeting, a dialogue move, a quote), ``speaker`` (about a
person who neither said nor is named in its messages), ``content`` (names, numbers or words its messages do not
hold), ``question`` (a claim made from questions), ``date`` (a time its messages do not state) or ``forgotten``
(a message it cites was forgotten after the retain, before the facts job ran)."""

Embed = Callable[[Sequence[str]], np.ndarray]

_ANNOTATION = re.compile(r"\s\((?:[^()]*?\b\d{4})\)")  # "yesterday (7 May 2023)": added by our own date code
_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")
_SAYS_NOTHING = re.compile(
    r"\b(?:not (?:mentioned|specified|stated|given|provided|known|clear|said|discussed)|no (?:information|mention|"
    r"details?|specific)|(?:is|are|was|remains?) unknown|unspecified|does(?:n't| not) (?:say|mention|specify|state)|"
    r"did(?:n't| not) (?:say|mention|specify)|in the messages?|in the conversation)\b", re.IGNORECASE)
_QUOTE = re.compile(r"^\s*[A-Z][\w'’.-]*(?: [A-Z][\w'’.-]*)?\s*:\s")
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|myself)\b")
# Case matters: "US" and "U.S." are a country, "u" and "ya" are chat for you.
_PLURAL_FIRST = re.compile(r"\b(?:[Ww]e|[Ww]e're|[Ww]e've|[Ww]e'll|[Ww]e'd|us|[Oo]ur|[Oo]urs|[Oo]urselves)\b")
_FIRST_PERSON_ANY = re.compile(rf"{_FIRST_PERSON.pattern}|{_PLURAL_FIRST.pattern}|\b(?:My|Me|Mine)\b")
_SECOND_PERSON = re.compile(r"\b(?:[Yy]ou|[Yy]our|[Yy]ours|[Yy]ourself|[Yy]ou're|[Yy]ou've|[Yy]ou'll|[Yy]ou'd|ya|u)\b")
_UNRESOLVED = re.compile(r"^\s*(?:it|this|that|they|these|those|he|she)\b(?!\s+(?:is|was)\s+[A-Z])", re.IGNORECASE)
_ASKING = re.compile(r"\b(?:ask(?:s|ed|ing)?|wonder(?:s|ed|ing)?|inquir(?:es|ed|ing)|question(?:s|ed)?|"
                     r"want(?:s|ed)? to know|curious)\b", re.IGNORECASE)
# "Kevin asks Paola about her favourite horror movie": a person asking states nothing about anyone.
_ASKS = re.compile(r"^\s*(?:[A-Z][\w'’.-]*\s){1,3}(?:also\s|then\s)?(?:asks|asked|wonders|wondered|inquires|inquired|"
                   r"wants to know|wanted to know|is curious|was curious)\b")
# "Jon is impressed by Gina's store", "Melanie is grateful for Caroline's kind words": a reaction to what the other
# speaker said tells nothing about the one reacting (the other's news is a fact of its own).
_REACTS = re.compile(r"^\s*(?:also\s|really\s|is\s|was\s|feels\s|felt\s|seems\s)*(?:very\s|so\s|really\s)?"
                     r"(?:impressed|proud|happy for|glad|thrilled|amazed|grateful|thankful|appreciat\w*|admires?|"
                     r"encourag\w*|congratulat\w*|compliment\w*|prais\w*|support\w*|cheers?|wish\w*|"
                     r"express\w* (?:her|his|their) (?:support|appreciation|gratitude|admiration|happiness|excitement)"
                     r"|excited for)\b", re.IGNORECASE)


# "Melanie expressed gratitude for the family moments together": a feeling shown in the talk, no news (none of
# 8 such facts on the dev labels was true; "expressed interest in ..." is a plan and is judged as one).
_EXPRESSED = re.compile(r"\b(?:express|expresses|expressed|expressing|showed|shows|show)\s+(?:her\s|his\s|their\s)?"
                        r"(?:gratitude|appreciation|admiration|support|happiness|joy|love|thanks|pride|sympathy|"
                        r"encouragement|agreement|approval|amazement|delight)\b", re.IGNORECASE)


def _leading_name(plain: str) -> str:
    """The name a fact opens with ("Fahim Khan", "Jon"), or ''."""
    match = re.match(r"^\s*(?:[A-Z][\w'’.-]*\s){0,2}[A-Z][\w'’.-]*(?='?s?\s)", plain)
    return match.group(0) if match else ""


# Verbs of a dialogue move: a fact made of one of these, the people and nothing else reports no content.
_MOVES = frozenset(content_words(
    "ask asks asked wonder wonders inquire inquires greet greets greeted thank thanks thanked congratulate "
    "congratulates congratulated agree agrees agreed respond responds responded reply replies replied say says "
    "tell tells told answer answers answered hello hi hey welcome welcomes bye goodbye introduce introduces "
    "chat chats chatted talk talks talked share shares shared mention mentions mentioned nice meet meeting "
    "glad happy pleased hope hopes hoping good great doing day question questions sure okay ok cool "
    "curious know knows want wants wanted plan plans favorite favourite name conversation"))
# Acknowledgements and greetings: a message made only of these tells nothing.
_ACK_WORDS = frozenset("""ok okay k kk got it nice great cool sure thanks thank you ty np noted will do remember
that i ll i'll sounds good perfect awesome alright all right yes yeah yep no problem hi hello hey bye see ya
lol haha good morning night welcome thx cheers done understood gotcha wow oh ah love it fine""".split())
_AGENT_ROLES = frozenset({"assistant", "ai", "bot", "agent"})
_ROLE_NAMES = frozenset({"user", "assistant", "system", "ai", "bot", "agent", "human", "unknown", "speaker"})


@dataclass(frozen=True)
class SourceLine:
    """A message as the check sees it: its label (the id a fact cites), speaker, text, position and time."""

    label: str
    speaker: str
    text: str
    index: int
    time: datetime | None = None

    @property
    def is_agent(self) -> bool:
        """Whether the agent itself said it (its words are the agent's experience)."""
        return self.speaker.strip().lower() in _AGENT_ROLES


class Rejection(BaseModel):
    """A fact that was not stored, and why."""

    text: str
    sources: list[str] = Field(default_factory=list)
    reason: RejectReason
    detail: str = ""


@dataclass
class GroundingReport:
    """What the check kept, what it rejected (with reasons) and how many citations it re-pointed."""

    kept: list[ExtractedFact] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    repointed: int = 0
    trimmed: dict[str, str] = field(default_factory=dict)
    """Kept text -> the model's text, for facts whose quoted tail was cut off (``_trim``)."""

    def counts(self) -> dict[str, int]:
        """Rejected facts per reason."""
        out: dict[str, int] = {}
        for r in self.rejected:
            out[r.reason] = out.get(r.reason, 0) + 1
        return out

    def summary(self) -> dict[str, object]:
        """The report as a job result: counts, re-pointed citations and a sample of the rejected facts."""
        return {"facts": len(self.kept), "rejected": len(self.rejected), "rejected_by_reason": self.counts(),
                "repointed": self.repointed,
                "rejections": [r.model_dump() for r in self.rejected[:SAMPLE]]}


@dataclass(frozen=True)
class _Verdict:
    ok: bool
    reason: RejectReason | None = None
    detail: str = ""


_OK = _Verdict(True)


class FactChecker:
    """Checks facts against the messages they cite (see the module docstring).

    Args:
        embed: texts -> L2-normalised vectors, for paraphrase support (None: words alone, stricter).
        min_coverage: share of a fact's content words its messages must hold.
        min_similarity: cosine to one cited message that supports the content as a paraphrase.
        neighbours: how far from its cited messages a fact may be re-pointed.
    """

    def __init__(self, embed: Embed | None = None, *, min_coverage: float = MIN_COVERAGE,
                 min_similarity: float = MIN_SIMILARITY, neighbours: int = NEIGHBOURS) -> None:
        self.embed = embed
        self.min_coverage = min_coverage
        self.min_similarity = min_similarity
        self.neighbours = neighbours

    def check(self, facts: Sequence[ExtractedFact], lines: Sequence[SourceLine]) -> GroundingReport:
        """Keep the facts their messages support (sources re-pointed where a neighbour says it), reject the rest.

        ``facts[i].sources`` are labels of ``lines``; a fact citing no known line is judged against none (rejected
        unless nothing can be checked: then it is kept as it is).
        """
        report = GroundingReport()
        by_label = {line.label: line for line in lines}
        speakers = {_norm(line.speaker) for line in lines if _norm(line.speaker) not in _ROLE_NAMES}
        similarity = self._similarities(facts, lines)
        for k, fact in enumerate(facts):
            cited = [by_label[s] for s in fact.sources if s in by_label]
            if not cited:
                report.kept.append(fact)  # nothing to check it against (a caller's own extractor without ids)
                continue
            original = fact.text
            trimmed = _trim(fact.text)
            if trimmed and trimmed != fact.text:
                report.trimmed[trimmed] = fact.text
                fact = fact.model_copy(update={"text": trimmed})
            verdict = self.judge(fact.text, cited, speakers, similarity.get(k))
            if verdict.ok:
                report.kept.append(fact)
                continue
            # Only a fact its own messages do not bear out is looked for nearby: one whose messages say it about
            # someone else is a misattribution ("Kevin is a fan of Real Madrid" citing Paola's "I'm a huge Real
            # Madrid fan"), and a neighbour that merely names the same club must not rescue it.
            moved = self._repoint(fact, k, cited, lines, speakers, similarity) \
                if verdict.reason != "junk" and not self._misattributed(verdict, fact.text, cited, speakers,
                                                                         similarity.get(k)) else None
            if moved is not None:
                report.kept.append(_repointed(fact, cited, moved))
                report.repointed += 1
                continue
            report.rejected.append(Rejection(text=original, sources=list(fact.sources),
                                             reason=verdict.reason or "junk", detail=verdict.detail))
        return report

    # ---- one fact against some messages -----------------------------------------------------------------

    def judge(self, text: str, cited: Sequence[SourceLine], speakers: set[str],
              similarity: dict[str, float] | None = None) -> _Verdict:
        """The verdict on one fact (``text`` as stored) against the messages ``cited``."""
        plain = _ANNOTATION.sub("", text).strip()
        junk = _junk(plain, cited, speakers)
        if junk:
            return _Verdict(False, "junk", junk)
        # A question asserts nothing: neither a fact made from questions alone nor one about a person made from
        # that person's own question ("Anything you're excited for?" -> "Melanie is excited for ...").
        subject = _subject(plain, speakers)
        best = _best_sentence(plain, cited, speakers)
        asked = all(_is_question(line.text) for line in cited) or (
            best is not None and _is_question(best[1]) and (subject is None or _norm(best[0].speaker) == subject))
        if asked and not _ASKING.search(plain):
            return _Verdict(False, "question", "made from a question")
        who = _who(plain, cited, speakers)
        if who:
            return _Verdict(False, "speaker", who)
        what = self._what(plain, cited, speakers, similarity or {}) or _negation_dropped(plain, best, speakers)
        if what:
            return _Verdict(False, "content", what)
        when = _when(plain, cited)
        if when:
            return _Verdict(False, "date", when)
        return _OK

    def _what(self, plain: str, cited: Sequence[SourceLine], speakers: set[str],
              similarity: dict[str, float]) -> str:
        source = " ".join(line.text for line in cited)
        source_lower = _fold(source)
        missing = [d for d in _details(plain, speakers) if not _occurs(d, source_lower)]
        if missing:
            return f"not in its messages: {', '.join(missing[:3])}"
        ignore = [*speakers, *(line.speaker for line in cited)]
        words = content_words(_DATE_WORDS.sub(" ", plain), ignore) - _MOVES  # dates are the date rule's to judge
        if not words:
            return ""
        coverage = max(len(words & content_words(" ".join(x.text for x in group), ignore)) / len(words)
                       for group in _evidence_groups(plain, cited, speakers))
        if coverage >= self.min_coverage:
            return ""
        best = max((similarity.get(line.label, 0.0) for line in cited), default=0.0)
        if best >= self.min_similarity:
            return ""
        return f"{coverage:.0%} of its words in its messages (similarity {best:.2f})"

    def _misattributed(self, verdict: _Verdict, text: str, cited: Sequence[SourceLine], speakers: set[str],
                       similarity: dict[str, float] | None) -> bool:
        """A fact about the wrong person whose messages do hold its content."""
        plain = _ANNOTATION.sub("", text).strip()
        return verdict.reason == "speaker" and not self._what(plain, cited, speakers, similarity or {})

    def _repoint(self, fact: ExtractedFact, k: int, cited: Sequence[SourceLine], lines: Sequence[SourceLine],
                 speakers: set[str], similarity: dict[int, dict[str, float]]) -> list[SourceLine] | None:
        """The messages that bear the fact out when its own do not: the nearest message around them that supports
        it alone, else the cited ones with the nearest message that completes them (a question and its answer)."""
        near = {line.index for line in cited}
        candidates = [line for line in lines if line not in cited
                      and min(abs(line.index - i) for i in near) <= self.neighbours]
        candidates.sort(key=lambda line: min(abs(line.index - i) for i in near))
        sims = similarity.get(k)
        for line in candidates:
            if self.judge(fact.text, [line], speakers, sims).ok:
                return [line]
        subject = _subject(_ANNOTATION.sub("", fact.text), speakers)
        for line in candidates:
            # The added message must be the subject's own (or name them): a question completed by its answer.
            named = subject is not None and any(_occurs(form, _fold(line.text)) for form in _forms(subject))
            if subject is not None and _norm(line.speaker) != subject and not named:
                continue
            if self.judge(fact.text, [*cited, line], speakers, sims).ok:
                return sorted([*cited, line], key=lambda x: x.index)
        return None

    def _similarities(self, facts: Sequence[ExtractedFact], lines: Sequence[SourceLine]) -> dict[int, dict[str, float]]:
        """Fact index -> cosine with each message near its citations (only with an embedder)."""
        if self.embed is None or not facts or not lines:
            return {}
        by_label = {line.label: line for line in lines}
        wanted: dict[int, list[SourceLine]] = {}
        for k, fact in enumerate(facts):
            near = {by_label[s].index for s in fact.sources if s in by_label}
            if near:
                wanted[k] = [line for line in lines if min(abs(line.index - i) for i in near) <= self.neighbours]
        used = sorted({line.index for group in wanted.values() for line in group})
        if not used:
            return {}
        texts = [_ANNOTATION.sub("", facts[k].text) for k in wanted] + [lines[i].text for i in used]
        vectors = np.asarray(self.embed(texts), dtype=np.float32)
        fact_vec = dict(zip(wanted, vectors[: len(wanted)], strict=True))
        line_vec = dict(zip(used, vectors[len(wanted):], strict=True))
        return {k: {line.label: float(fact_vec[k] @ line_vec[line.index]) for line in group}
                for k, group in wanted.items()}


def _trim(text: str) -> str:
    """The fact without the tail it copied from a message's talk to its listener: a small model often pastes a
    message whole ("Paola also has a parrot. ... What's your parrot's name?"). From the first sentence that asks, or
    speaks to or for "you" and "we", the rest goes (and a trailing "what do you think?"), but for that sentence's
    clauses before the talk (``_clauses_before_talk``); what is left is judged (empty: nothing left)."""
    text = _TAG_QUESTION.sub("", text.strip())
    kept: list[str] = []
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        if sentence.rstrip().endswith("?") or _SECOND_PERSON.search(sentence) or _PLURAL_FIRST.search(sentence):
            # the tail from here on is the message's talk, and a claim is never rebuilt from what follows; the
            # clauses before the talk stay ("John is looking into local politics, talking to community leaders,
            # and getting to know ... our neighborhood" keeps its first two)
            kept.append(_clauses_before_talk(sentence))
            break
        kept.append(sentence)
    return " ".join(k for k in kept if k).strip()


def _clauses_before_talk(sentence: str) -> str:
    """The clauses of ``sentence`` before its first "you"/"we" or question, ended with a full stop, when they make
    a statement of four words or more; else ""."""
    if sentence.rstrip().endswith("?"):
        return ""
    talk = [m.start() for m in (_SECOND_PERSON.search(sentence), _PLURAL_FIRST.search(sentence)) if m]
    head = sentence[: min(talk)] if talk else sentence
    cut = max(head.rfind(","), head.rfind(";"), head.rfind(" - "), head.rfind(" – "))
    if cut <= 0:
        return ""
    clause = head[:cut].strip().rstrip(",;:-– ")
    clause = re.sub(r"\s+(?:and|but|or|because|which|who|so)$", "", clause)
    return clause + "." if len(clause.split()) >= 4 else ""


_TAG_QUESTION = re.compile(r",?\s*(?:what|how) (?:do|about|would) (?:you|u)\b[^.!?]*\?$", re.IGNORECASE)


def _repointed(fact: ExtractedFact, cited: Sequence[SourceLine], lines: Sequence[SourceLine]) -> ExtractedFact:
    """``fact`` citing ``lines`` instead: its time of mention and, where they were the cited messages' speakers (the
    lean extractor's default), its participants follow the messages."""
    update: dict[str, object] = {"sources": [line.label for line in lines]}
    times = [line.time for line in lines if line.time is not None]
    if times:
        update["mentioned_at"] = min(times)
    old = {_norm(c.speaker) for c in cited}
    if fact.participants and {_norm(p) for p in fact.participants} <= old:
        people = list(dict.fromkeys(line.speaker.strip() for line in lines if _norm(line.speaker) not in _ROLE_NAMES))
        update["participants"] = people
        kept = [e for e in fact.entities if _norm(e.name) not in old]
        update["entities"] = [*(ExtractedEntity(name=p, type=EntityType.PERSON) for p in people), *kept]
    return fact.model_copy(update=update)


def _evidence_groups(plain: str, cited: Sequence[SourceLine], speakers: set[str]) -> list[list[SourceLine]]:
    """The messages that must bear a fact out together. A fact about a speaker rests on one message of theirs (or
    one speaking of them), with the questions put to them: "Kevin's dog is cute" may not take "dog" from his
    "here's a picture of my dog" and "cute" from his "what a cute cat!". Any other fact rests on all it cites."""
    subject = _subject(plain, speakers)
    opening = _OPENING_NAME.match(plain)
    if subject is None and opening is not None and not in_dictionary(_fold(opening.group(1))):
        subject = _fold(opening.group(1))  # a person who is no speaker ("Ricky", "Vanessa")
    if subject is None or len(cited) == 1:
        return [list(cited)]
    asked = [line for line in cited if _norm(line.speaker) != subject and _is_question(line.text)]
    own = [line for line in cited if _norm(line.speaker) == subject or _spoken_of(subject, line.text)]
    return [[line, *asked] for line in own] or [list(cited)]


def source_lines(messages: Sequence[Message], default_time: datetime | None = None) -> list[SourceLine]:
    """The messages as the check sees them, each under its id (the label a fact cites it by)."""
    return [SourceLine(label=str(m.id), speaker=(m.speaker or "unknown").strip() or "unknown", text=m.text, index=i,
                       time=m.timestamp or default_time)
            for i, m in enumerate(messages)]


# ---- the rules ----------------------------------------------------------------------------------------------


def _junk(plain: str, cited: Sequence[SourceLine], speakers: set[str]) -> str:
    if _SAYS_NOTHING.search(plain):
        return "says nothing"
    # "Kevin: I play basketball": the message again, not a fact (judged as Kevin's statement, the dev part's
    # stored facts fell from 85.7 to 83.8% true: most such copies are pleasantries).
    if _QUOTE.match(plain):
        return "a quote with the speaker's name in front"
    if all(_is_ack(line.text) for line in cited):
        return "an acknowledgement or greeting"
    if not _trim(plain):
        return "a message's own words to its listener (a quote): who is you or we?"
    if _FIRST_PERSON.search(plain) and not all(line.is_agent for line in cited):
        # "Caroline is keen on counseling - I'd love to support those ...": the speaker's own words kept in a fact
        # about the speaker still say who; in a fact about anyone else they are someone's words misplaced.
        subject = _subject(plain, speakers)
        if subject is None or not all(_norm(line.speaker) == subject for line in cited):
            return "a person's words in the first person"
    if _UNRESOLVED.match(plain) and not _named(plain, speakers):
        return "about an unresolved it/this"
    if _ASKS.search(plain):
        return "a question someone asked, which states nothing"
    subject = _subject(plain, speakers)
    if subject is not None and _REACTS.match(plain[len(_leading_name(plain)):]) and any(
            name != subject for name in _named_speakers(plain, speakers)):
        return "a reaction to the other speaker's news"
    if _EXPRESSED.search(plain):
        return "a feeling shown in the talk, no news"
    ignore = [*speakers, *(line.speaker for line in cited)]
    if not content_words(plain, ignore) - _MOVES and not _details(plain, speakers):
        return "a dialogue move without content"
    return ""


def _who(plain: str, cited: Sequence[SourceLine], speakers: set[str]) -> str:
    """Every person of the conversation the fact names must have said one of its messages or be spoken of in one
    (being addressed, "Thanks, Maria!", is not being spoken of: the listener of "I made pizza" made none); and a
    message's words to its listener ("You'll be an awesome mom") are not its speaker's news."""
    said_by = ", ".join(dict.fromkeys(line.speaker for line in cited))
    pair = _speaker_pair(plain, speakers)
    if pair:
        # "John and Tim have a strong team bond", "Kevin and Paola love cooking": the model merges the two people
        # of a chat into one subject, mostly for what one of them said (on the dev labels none of 32 was true).
        return f"{pair} as one subject: one of them said it"
    opening = _OPENING_NAME.match(plain)
    if opening is not None:
        # A person the fact opens with who is no speaker ("Vanessa is responding with a plan to play basketball")
        # must be spoken of, not only greeted ("Nice to meet you Vanessa").
        name = _fold(opening.group(1))
        if (name not in speakers and name not in _ROLE_NAMES and not in_dictionary(name)
                and any(_occurs(name, _fold(line.text)) for line in cited)
                and not any(_spoken_of(name, line.text) for line in cited)):
            return f"about {opening.group(1)}, who is only addressed in its messages"
    owned = _owned(plain, cited, speakers)
    if owned:
        return owned
    for name in _named_speakers(plain, speakers):
        if any(_norm(line.speaker) == name for line in cited):
            continue
        if any(_spoken_of(name, line.text) for line in cited):
            continue
        return f"about {name.title()}, said by {said_by}"
    subject = _subject(plain, speakers)
    best = _best_sentence(plain, cited, speakers)
    if subject is not None and best is not None:
        line, sentence = best
        if (_norm(line.speaker) == subject and _SECOND_PERSON.search(sentence)
                and not _FIRST_PERSON_ANY.search(sentence) and not _spoken_of(subject, sentence)):
            return f"about {subject.title()}, from {line.speaker}'s words to the listener: {sentence[:80]!r}"
    if subject is not None and len({_norm(line.speaker) for line in cited}) > 1:
        # Several people's messages: the subject's part must come from the subject's side of them (their own
        # messages, a question put to them, a message speaking of them), not from the other's news.
        own = [line for line in cited if _norm(line.speaker) == subject or _is_question(line.text)
               or _spoken_of(subject, line.text)]
        words = content_words(plain, [*speakers, *(line.speaker for line in cited)]) - _MOVES
        have = content_words(" ".join(line.text for line in own))
        if words and len(words & have) / len(words) < MIN_COVERAGE:
            return f"about {subject.title()}, mostly from another speaker's messages"
    return ""


_OPENING_NAME = re.compile(r"^\s*([A-Z][a-z]+)(?:'s|’s)?\s+(?![A-Z])")
# "Kevin has a cat" (not "Kevin's painting": "Painting's a fun way to express my feelings" is hers without a "my").
_POSSESSION = (r"(?:{name})\s+(?:has|had|owns|owned|got)\s+(?:an?|the|his|her|their|two|three|some|another)\s+"
               r"(\w+)(?:\s+(\w+))?")


def _owned(plain: str, cited: Sequence[SourceLine], speakers: set[str]) -> str:
    """A speaker's possession ("Kevin has a cat") must be stated as theirs: "my cat" or "I have a cat" in their own
    message, or "your cat" in a message to them; "What a cute cat!" owns nothing."""
    lowered = _fold(plain)
    for name in speakers:
        for match in re.finditer(_POSSESSION.format(name=re.escape(name)), lowered):
            # The thing owned: the first of the next two words that is no function word ("Kevin's new car").
            noun = next((w for w in match.groups() if w and w not in STOPWORDS), None)
            if not noun or len(noun) < 3:
                continue
            root = stem(noun)
            own = (r"\b(?:my|our|mine|i (?:have|had|own|got|adopted|bought|'ve got)|i've got|we have)\b"
                   rf"[^.!?]{{0,40}}?\b{re.escape(root)}")
            yours = rf"\byour\b[^.!?]{{0,30}}?\b{re.escape(root)}"
            for line in cited:
                text = _fold(line.text)
                if _norm(line.speaker) == name and re.search(own, text):
                    break
                if _norm(line.speaker) != name and (re.search(yours, text) or re.search(
                        rf"\b{re.escape(name)}(?:'s)\s+(?:\w+\s+)?{re.escape(root)}", text)):
                    break
            else:
                return f"{name.title()}'s {noun} is not stated as theirs in its messages"
    return ""


def _named_speakers(plain: str, speakers: set[str]) -> list[str]:
    return [name for _, name in _positions(plain, speakers)]


_GREETING = r"(?:hey|hi|hello|thanks|thank you|congrats|congratulations|yeah|yes|yep|wow|woah|whoa|oh|aw+|ok|okay|" \
            r"sure|definitely|haha|lol|omg|dear|morning|night|bye|totally|absolutely|great|nice|cool|sorry|so)"


def _spoken_of(name: str, text: str) -> bool:
    """Whether ``name`` (folded) occurs in ``text`` other than as the person addressed ("Thanks, Maria!")."""
    folded = _fold(text)
    forms = "|".join(re.escape(form) for form in _forms(name))
    for match in re.finditer(rf"(?<![a-z0-9])(?:{forms})(?:'s)?(?![a-z0-9])", folded):
        before = folded[: match.start()].rstrip()
        after = folded[match.end():].lstrip()
        opens = not before or before[-1] in ",.!?;:-(" or re.search(rf"(?:^|[\s,.!?])(?:{_GREETING}|you)$", before)
        closes = not after or after[0] in ",.!?;)"  # "Alice: I stopped ..." is her speaking, not addressed
        if not (opens and closes) or "'s" in match.group(0):
            return True
    return False


def _best_sentence(plain: str, cited: Sequence[SourceLine], speakers: set[str]) -> tuple[SourceLine, str] | None:
    """The sentence of the cited messages that shares the most content words with the fact."""
    words = content_words(plain, [*speakers, *(line.speaker for line in cited)]) - _MOVES
    best: tuple[int, SourceLine, str] | None = None
    for line in cited:
        for sentence in re.split(r"(?<=[.!?])\s+", line.text.strip()):
            shared = len(words & content_words(sentence))
            if shared and (best is None or shared > best[0]):
                best = (shared, line, sentence)
    return (best[1], best[2]) if best else None


def _forms(name: str) -> list[str]:
    """How a speaker is named in a fact or message: the whole name, or its first word ("Fahim" for "Fahim Khan")."""
    first = name.split()[0]
    return [name, first] if first != name and len(first) >= 3 else [name]


def _positions(plain: str, speakers: set[str]) -> list[tuple[int, str]]:
    """Where the fact names each speaker (by either form), first mention first: (position, speaker)."""
    lowered = _fold(plain)
    found: list[tuple[int, str]] = []
    for name in speakers:
        starts = [m.start() for form in _forms(name)
                  for m in re.finditer(rf"(?<![a-z0-9]){re.escape(form)}(?![a-z0-9])", lowered)]
        if starts:
            found.append((min(starts), name))
    return sorted(found)


def _speaker_pair(plain: str, speakers: set[str]) -> str:
    """"A and B" when the fact opens with two people of the conversation joined as one subject, else ""."""
    lowered = _fold(plain)
    for name in speakers:
        for form in _forms(name):
            head = re.match(rf"{re.escape(form)}\s+(?:and|&)\s+", lowered)
            if head is None:
                continue
            rest = lowered[head.end():]
            for other in speakers - {name}:
                if any(re.match(rf"{re.escape(f)}(?![a-z0-9])", rest) for f in _forms(other)):
                    return f"{name.title()} and {other.title()}"
    return ""


def _subject(plain: str, speakers: set[str]) -> str | None:
    """The first speaker the fact names (possessives included: "Kevin's dog")."""
    found = _positions(plain, speakers)
    return found[0][1] if found else None


def _named(plain: str, speakers: set[str]) -> bool:
    return _subject(plain, speakers) is not None or bool(_details(plain, speakers))


def _details(plain: str, speakers: set[str]) -> list[str]:
    """Names (capitalised words; at a sentence start only words that are no English word) and numbers the fact
    states, the conversation's speakers aside."""
    out: list[str] = []
    plain = _DATE_WORDS.sub(" ", plain)  # dates are the date rule's to judge
    for sentence in re.split(r"(?<=[.!?])\s+", plain):
        for i, match in enumerate(_WORD.finditer(sentence)):
            raw = match.group(0)
            word = _fold(raw).removesuffix("'s")
            if raw[0].isdigit():
                out.append(word)
                continue
            if (not raw[0].isupper() or word in speakers or word in _ROLE_NAMES or word in _COMMON_CAPITALS
                    or any(word in name.split() for name in speakers)):
                continue
            if i == 0 and in_dictionary(word):
                continue  # "Watching movies ...": a capital that only starts the sentence
            out.append(word)
    return list(dict.fromkeys(out))


_MONTH = (r"(?:January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|"
          r"Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec)\.?")
_DATE_WORDS = re.compile(rf"\b(?:\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?)?{_MONTH}(?:\s+\d{{1,2}}(?:st|nd|rd|th)?)?"
                         rf"(?:,?\s+\d{{4}})?\b|\b(?:19|20)\d{{2}}s?\b|\b\d{{1,2}}(?:st|nd|rd|th)\b")

# Capitalised words that are not names (sentence starters the regex cannot tell, days and months, which the date
# rule judges instead).
_COMMON_CAPITALS = frozenset("""monday tuesday wednesday thursday friday saturday sunday january february march april
may june july august september october november december the a an he she they it this that these those his her
their my our your we you english""".split())


def _when(plain: str, cited: Sequence[SourceLine]) -> str:
    """A time phrase of the fact must name a period its messages' words, or the day they were said, place it in."""
    times = [line.time for line in cited if line.time is not None]
    if not times:
        return ""
    said = min(times)
    own = phrase_ranges(plain, said, statement_tense(plain))
    if not own:
        return ""
    allowed = [(t.date(), t.date()) for t in times]
    for line in cited:
        if line.time is not None:
            allowed.extend(phrase_ranges(line.text, line.time, statement_tense(line.text)))
    for rng in own:
        if not any(rng[0] <= a[1] and a[0] <= rng[1] for a in allowed):
            return f"{rng[0]}..{rng[1]} is not a time its messages state"
    return ""


_NEGATION = re.compile(r"\b(?:not|never|no|n't|dont|didnt|doesnt|isnt|wasnt|cant|wont|havent|hasnt)\b|n't\b",
                       re.IGNORECASE)


def _negation_dropped(plain: str, best: tuple[SourceLine, str] | None, speakers: set[str]) -> str:
    """A fact that drops the negation its message put on what it says ("Fahim is a Pistons fan" from "I've never
    been a pistons fan"): a negation within three words before a content word the two share (up to a "but"), none in
    the fact."""
    if best is None or _NEGATION.search(plain):
        return ""
    shared = content_words(plain, list(speakers)) & content_words(best[1])
    tokens = [w.lower() for w in re.findall(r"[A-Za-z0-9']+", best[1].replace("’", "'"))]
    for i, token in enumerate(tokens):
        if _NEGATION.fullmatch(token) or token.endswith("n't"):
            after = tokens[i + 1 : i + 4]
            # "I don't surf but reading relaxes me": the negation ends at the turn.
            cut = next((k for k, w in enumerate(after) if w in ("but", "though", "although", "however", "yet")), None)
            window = content_words(" ".join(after[:cut]))
            if window & shared:
                return f"its message says not: {' '.join(tokens[i : i + 4])!r}"
    return ""


def _is_question(text: str) -> bool:
    """A message that only asks: every sentence of it is a question. "I was thinking about Pisa, what do you
    think?" states something before it asks."""
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if _WORD.search(s)]
    return bool(sentences) and all(s.rstrip().endswith("?") and not _states(s) for s in sentences)


def _states(sentence: str) -> bool:
    """A sentence ending in "?" that states something first: its speaker doing or being something, then a short tag
    ("I was thinking about Pisa, what do you think?"); "I know you like the gym, you think you'll go today?" asks."""
    head, _, tag = sentence.rpartition(",")
    return bool(head) and bool(_STATES.match(head)) and len(_WORD.findall(tag)) <= 5


_STATES = re.compile(r"^\W*(?:I|I'm|I've|I'd|I'll|Im|Ive|We|We're|We've|My|Our)\b(?!\s+(?:you|we|I)\b)")


def _is_ack(text: str) -> bool:
    words = [w.lower().replace("’", "'") for w in _WORD.findall(text)]
    return not words or (len(words) <= 8 and all(w in _ACK_WORDS for w in words))


def _occurs(word: str, folded_text: str) -> bool:
    """Whether ``word`` (folded) occurs in the text as a word, allowing a plural or possessive ending."""
    return re.search(rf"(?<![a-z0-9]){re.escape(word)}(?:s|es|'s)?(?![a-z0-9])", folded_text) is not None


def _fold(text: str) -> str:
    return text.lower().replace("’", "'")


def _norm(name: str) -> str:
    return " ".join(_fold(name).split())
