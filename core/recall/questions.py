"""Questions are not answers: a raw message that only asks or only acknowledges never outranks the next memory
that says something.

A user's own question ("When is my flight to Porto, and what's the occasion?") shares the words of a later query
about the same thing, and an acknowledgement that follows a question ("Got it.") is embedded with the question it
replies to; both then rank above the message that holds the answer. ``is_pure_question`` /
``is_acknowledgement`` classify a raw message conservatively (a message that might carry information is never
called pure), and ``questions_last`` moves such a message below the next memory in the ranking that is not one
(``RecallSettings.question_rule``). The message keeps its place in every channel; only the packing order changes,
and the trace marks it ``demoted_as="question"`` (or ``"acknowledgement"``).

What the classifier calls *pure* (decided here, tested in ``tests/test_questions_rule.py``):
- every sentence of the message is a question (it ends with ``?`` and opens, after a greeting, interjection or name,
  with a question word or an auxiliary: "what", "how", "did", "are", ...) or an acknowledgement / greeting from a
  small lexicon ("Got it", "Nice!", "Thanks, Mel!", "That's amazing!", "Hey!"), and at least one is a question or
  the whole message is an acknowledgement;
- a question that *tells* something is not pure: "Did you know I moved to Porto?", "Guess what?", "Have I told
  you about ...?", a statement with a tag ("I moved, right?"), declarative word order ("You moved to Porto?"), a
  first-person clause after a comma ("How are you, I just got back from Porto?"), or more than 25 words;
- a message with an image or a shared item ("[shares ...]", "[image: ...]") is not pure; neither is "yes", "no",
  "me too" (they answer), nor anything without a ``?`` that the lexicon does not hold ("How am I gonna go" stays).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Literal

from ..models import Memory

QuestionKind = Literal["question", "acknowledgement"]

MAX_QUESTION_WORDS = 25
"""A question longer than this is taken to carry information (a story told as a question)."""

MAX_ACK_WORDS = 12
"""A message without a question mark longer than this is never an acknowledgement."""

MAX_HELD = 10
"""At most this many pure questions / acknowledgements wait for the next memory that says something; past it they
are released in rank order (a ranking made only of questions is left as it is)."""

# Speaker prefix of a raw unit's text ("Caroline: ..." / "user: ..."): short, no sentence punctuation.
_SPEAKER = re.compile(r"^[^:.!?\n]{1,40}:\s+")
_BRACKETED = re.compile(r"\[[^\]]*\]")
_SENTENCES = re.compile(r"[^.!?]+(?:[.!?]+|$)")
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")

# Opening words of a question (wh-words and auxiliaries, with their negative contractions).
_QUESTION_OPENERS = frozenset(
    "what what's whats when when's where where's who who's whom whose why why's how how's which "
    "whatre hows wheres whos whys whatcha "
    "do does did don't doesn't didn't is isn't are aren't was wasn't were weren't am "
    "can can't could couldn't will won't would wouldn't should shouldn't shall "
    "have haven't has hasn't had hadn't may might must "
    "any anything anyone anybody got wanna whatcha hbu wyd".split()
)
# Words that may precede the question itself: greetings, interjections, fillers ("Hey Mel, how are you?").
_LEAD_INS = frozenset(
    "hey hi hello hiya yo oh ooh ah aw aww wow whoa so and but well also btw anyway anyways by the way "
    "ok okay alright oh haha hahaha lol omg hmm um uh sorry man dude girl bro buddy friend".split()
)
# "Did you know I moved?", "Guess what?", "Have I told you ...": questions that tell.
_TELLING = re.compile(
    r"\b(?:know (?:that|how|what|where|when|if|about)?\s*(?:i|we|my|our|i'm|i've|we're|we've)\b|guess what|"
    r"(?:did|have|had) i (?:tell|told|mention|mentioned|say|said|show|shown|showed)|"
    r"remember (?:when|that|how|what)?\s*(?:i|we)\b|i (?:told|mentioned|said)|"
    r"(?:,|\b)\s*(?:right|you know|isn't it|aren't they|didn't i|don't you think|huh|eh)\s*\?)",
    re.IGNORECASE,
)
# A first-person clause after a comma, dash or semicolon inside a question ("How are you, I just got back?").
_CLAUSE = re.compile(r"[,;:\u2013\u2014-]\s*(?:and |but |so )?(?:i|i'm|i've|i'd|i'll|im|ive|we|we're|we've|my|our)\b",
                     re.IGNORECASE)

# Acknowledgements and greetings: a sentence of these words only, with at least one from _ACK_CORE.
_ACK_CORE = frozenset(
    "ok okay k kk alright got noted thanks thank thx ty cheers nice cool great awesome amazing wonderful "
    "fantastic lovely beautiful perfect brilliant neat sweet incredible impressive fun exciting interesting "
    "wow whoa yay congrats congratulations lol haha hahaha hahahaha lmao rofl hehe aww awesome good glad "
    "welcome problem worries hey hi hello hiya morning evening night afternoon bye goodbye later soon care "
    "luck enjoy agreed exactly indeed true sure absolutely definitely totally makes sense".split()
)
_ACK_FILLER = frozenset(
    "that that's thats this is so really very super such a an sounds sound looks look seems "
    "how what just totally you your for much lot of oh ah omg man dude girl bro buddy friend pal to hear "
    "the all too have day no and i'm im am glad happy see you're youre welcome ok okay".split()
)
# Words that answer rather than acknowledge: a message holding one is never an acknowledgement.
_ANSWERS = frozenset("yes yeah yep yup no nope nah me too same not never".split())


def message_text(text: str) -> str:
    """A raw unit's text without its speaker prefix ("Caroline: Got it!" -> "Got it!")."""
    return _SPEAKER.sub("", text, count=1).strip()


def _words(sentence: str) -> list[str]:
    return _WORD.findall(sentence.lower().replace("\u2019", "'"))


def _is_ack_sentence(sentence: str, names: frozenset[str]) -> bool:
    words = [w for w in _words(sentence) if w not in names]
    # "it" only as the object of an acknowledgement ("Got it", "Enjoy it!"): "It was great" answers.
    words = [w for i, w in enumerate(words) if not (w == "it" and i > 0 and words[i - 1] in ("got", "enjoy", "love"))]
    if not words or len(words) > 8:
        return False
    if any(w in _ANSWERS for w in words):
        return False
    if not any(w in _ACK_CORE for w in words):
        return False
    return all(w in _ACK_CORE or w in _ACK_FILLER for w in words)


def _is_question_sentence(sentence: str, names: frozenset[str]) -> bool:
    s = sentence.strip()
    if not s.endswith("?") or _TELLING.search(s) or _CLAUSE.search(s):
        return False
    words = [w for w in _words(s) if w not in names]
    if not words or len(words) > MAX_QUESTION_WORDS:
        return False
    i = 0
    while i < len(words) - 1 and words[i] in _LEAD_INS:
        i += 1
    return words[i] in _QUESTION_OPENERS or words[i:i + 2] in (["and", "you"], ["what", "about"], ["how", "about"])


_VOCATIVE = re.compile(
    r"(?:,\s*|\b(?:hi|hey|hello|hiya|bye|thanks|thank you|congrats|congratulations|wow|sorry|morning|night|later)\s+)"
    r"([A-Z][a-z]+)\b(?=\s*(?:[,.!?]|$))", re.IGNORECASE)


def _capitalised_names(text: str) -> frozenset[str]:
    """The names a message addresses ("Thanks, Mel!", "Hi Kevin!", "That's great, Jon! How ..."): a capitalised
    word after a comma or a greeting that ends its clause. A name said elsewhere ("Oh Germany sounds nice") is
    content, not a vocative."""
    out = {m.group(1).lower() for m in _VOCATIVE.finditer(text) if m.group(1)[0].isupper()}
    return frozenset(out - _QUESTION_OPENERS - _LEAD_INS - _ACK_CORE - _ACK_FILLER - {"i"})


@functools.lru_cache(maxsize=16384)  # recall classifies the same memories' texts again and again
def classify(text: str) -> QuestionKind | None:
    """``"question"`` for a message that only asks (with greetings or acknowledgements around it),
    ``"acknowledgement"`` for one that only acknowledges or greets, None for anything that might say something.
    ``text`` is a message's text or a raw unit's ``"Speaker: text"``."""
    body = message_text(text)
    if not body or _BRACKETED.search(body) or "http" in body.lower():
        return None
    if "?" not in body and len(body.split()) > MAX_ACK_WORDS:
        return None  # the common case, a statement, decided without the sentence rules
    names = _capitalised_names(body)
    sentences = [s.strip() for s in _SENTENCES.findall(body) if s.strip() and _words(s)]
    if not sentences:
        return None  # only emoji or punctuation: nothing to judge
    asks = False
    for sentence in sentences:
        if _is_question_sentence(sentence, names):
            asks = True
        elif not _is_ack_sentence(sentence, names):
            return None
    return "question" if asks else "acknowledgement"


def is_pure_question(text: str) -> bool:
    """Whether a message only asks (see ``classify``)."""
    return classify(text) == "question"


def is_acknowledgement(text: str) -> bool:
    """Whether a message only acknowledges or greets (see ``classify``)."""
    return classify(text) == "acknowledgement"


def memory_kind(memory: Memory) -> QuestionKind | None:
    """``classify`` for a raw message memory; None for an LLM fact, an opinion or an observation (they state)."""
    if memory.cites is not None or len(memory.sources) > 1:
        return None
    return classify(memory.text)


@dataclass
class QuestionNotes:
    """For the trace: memories packed below the next memory that says something (``demoted``: id -> question or
    acknowledgement) and messages brought in beside a question as its reply or what it acknowledges (``paired``:
    id -> the question's id)."""

    demoted: dict[str, QuestionKind] = field(default_factory=dict)
    paired: dict[str, str] = field(default_factory=dict)


def questions_last(memories: Iterator[Memory], notes: QuestionNotes, max_held: int = MAX_HELD) -> Iterator[Memory]:
    """The memories in rank order, except that a pure question or acknowledgement waits for the next memory that is
    neither and then follows it (several waiting follow it in their rank order). Lazy like the ranking it wraps."""
    held: list[Memory] = []
    kinds: dict[str, QuestionKind] = {}
    for m in memories:
        kind = memory_kind(m)
        if kind is not None:
            held.append(m)
            kinds[m.id] = kind
            if len(held) > max_held:  # nothing that says something is near: keep the order as ranked
                yield held.pop(0)
            continue
        yield m
        for h in held:
            notes.demoted[h.id] = kinds[h.id]
        yield from held
        held.clear()
    yield from held


def questions_paired(
    memories: Iterator[Memory], adjacent: Callable[[Sequence[str]], dict[str, tuple[str | None, str | None]]],
    load: Callable[[Sequence[str]], list[Memory]], notes: QuestionNotes, batch: int = 20,
) -> Iterator[Memory]:
    """The memories in rank order, except that a pure question brings in the message that follows it in its document
    (the reply) and an acknowledgement the message before it (what it acknowledges), at its own place and ahead of
    it (``notes.paired``: partner id -> the question's id). A question whose neighbour is itself a question or an
    acknowledgement, or was already shown, waits for the next memory that says something, as in ``questions_last``.
    Reads ahead ``batch`` memories at a time, one neighbour lookup and one load per batch."""
    shown: set[str] = set()
    held: list[Memory] = []
    kinds: dict[str, QuestionKind] = {}
    while True:
        head = list(islice(memories, batch))
        if not head:
            break
        asking = {m.id: k for m in head if m.id not in shown and (k := memory_kind(m)) is not None}
        kinds.update(asking)
        near = adjacent(list(asking)) if asking else {}
        wanted: dict[str, str] = {}
        for qid, kind in asking.items():
            before, after = near.get(qid, (None, None))
            partner_id = after if kind == "question" else before
            if partner_id is not None:
                wanted[qid] = partner_id
        found = {m.id: m for m in load(list(dict.fromkeys(wanted.values())))} if wanted else {}
        for m in head:
            if m.id in shown:
                continue
            if m.id not in asking:
                shown.add(m.id)
                yield m
                for h in held:
                    notes.demoted[h.id] = kinds[h.id]
                yield from held
                held.clear()
                continue
            partner = found.get(wanted.get(m.id, ""))
            if partner is not None and partner.id not in shown and memory_kind(partner) is None:
                shown.update((partner.id, m.id))
                notes.paired[partner.id] = m.id
                yield partner
                for h in held:
                    notes.demoted[h.id] = kinds[h.id]
                yield from held
                held.clear()
                notes.demoted[m.id] = kinds[m.id]
                yield m
                continue
            shown.add(m.id)
            held.append(m)
            if len(held) > MAX_HELD:
                yield held.pop(0)
    yield from held
