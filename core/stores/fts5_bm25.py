"""SQLite FTS5's ``bm25()`` reproduced outside SQLite, so every graph store ranks keyword hits alike.

The embedded store ranks the keyword channel with FTS5's ``bm25(units_fts, 1.0, context_weight)``. A server
store has a Lucene index instead, whose analyzer and BM25 differ (per-field scores, its own stemmer), and
that moved LoCoMo recall by about two points. So the server store keeps, per unit, the very tokens FTS5
would index (the same tokenizer, run by an in-memory SQLite) and uses its full-text index only to find
candidates, then scores them here with FTS5's formula (``fts5_aux.c``)::

    idf(p)   = log((N - hits(p) + 0.5) / (hits(p) + 0.5)), at least 1e-6
    f(p)     = sum over columns c of weight(c) * occurrences of phrase p in c
    score    = sum over phrases p of idf(p) * f(p) * (k1 + 1) / (f(p) + k1 * (1 - b + b * D / avgdl))

with k1 = 1.2, b = 0.75, D the unit's token count over all columns and avgdl its mean over the corpus.
"""

from __future__ import annotations

import functools
import math
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

# The SQLite store's FTS5 tokenizer; the server store must tokenise with exactly this.
TOKENIZER = "porter unicode61 remove_diacritics 2"
K1 = 1.2
B = 0.75

# Words too common to help the keyword channel; FTS5 has no stopword list of its own.
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has
    have having he her here hers herself him himself his how i if in into is it its itself just me
    more most my myself no nor not now of off on once only or other our ours ourselves out over own
    same she should so some such than that the their theirs them themselves then there these they
    this those through to too under until up very was we were what when where which while who whom
    why will with would you your yours yourself yourselves s t don did does doing ever also get got
    like really much many kind thing things still currently nowadays anymore
    """.split()
)
# "still", "currently", "nowadays", "anymore" say, like "now", only that a question asks about the present. As
# keywords they matched every "I'm still ..." of a bank ahead of the answer ("Does Marcio still smoke?"): the
# update set's dev split, raw path, current memory first 0.855 -> 0.875 (docs/BENCHMARKS.md, "Beliefs that change").
_WORD = re.compile(r"\w+", re.UNICODE)
MAX_TERMS = 64

Phrase = tuple[str, ...]


def query_terms(text: str) -> list[str]:
    """The words of a keyword query: lower-cased, stopwords and one-letter words dropped, at most 64.

    When nothing is left (a query of stopwords only) every word is kept, so "who is it" still searches.
    """
    words = [w.lower() for w in _WORD.findall(text)]
    terms = list(dict.fromkeys(w for w in words if w not in STOPWORDS and len(w) > 1))
    if not terms:
        terms = list(dict.fromkeys(w for w in words if w))
    return terms[:MAX_TERMS]


class Fts5Tokenizer:
    """Tokenises text exactly as an FTS5 table with :data:`TOKENIZER` does, using an in-memory SQLite.

    ``fts5vocab``'s ``instance`` table lists each token with its column and offset, which gives the token
    sequence of every column. Thread-safe (one lock around the private connection).
    """

    def __init__(self, columns: int = 2) -> None:
        """Prepare an in-memory FTS5 table of ``columns`` text columns."""
        self.columns = columns
        self._names = [f"c{i}" for i in range(columns)]
        self._lock = threading.Lock()
        self._con = sqlite3.connect(":memory:", check_same_thread=False)
        cols = ", ".join(self._names)
        self._con.execute(f"CREATE VIRTUAL TABLE t USING fts5({cols}, tokenize='{TOKENIZER}')")
        self._con.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")

    def tokenize(self, rows: Sequence[Sequence[str]]) -> list[tuple[Phrase, ...]]:
        """Per row, the token sequence of each column (stemmed, lower-cased, diacritics removed)."""
        if not rows:
            return []
        for row in rows:
            if len(row) != self.columns:
                raise ValueError(f"expected {self.columns} columns per row, got {len(row)}")
        out: list[list[list[tuple[int, str]]]] = [[[] for _ in range(self.columns)] for _ in rows]
        index = {name: i for i, name in enumerate(self._names)}
        with self._lock, self._con:
            self._con.executemany(
                f"INSERT INTO t (rowid, {', '.join(self._names)}) VALUES (?{', ?' * self.columns})",
                [(i + 1, *row) for i, row in enumerate(rows)],
            )
            try:
                for term, doc, col, offset in self._con.execute("SELECT term, doc, col, offset FROM v"):
                    out[doc - 1][index[col]].append((offset, term))
            finally:
                self._con.execute("DELETE FROM t")
        return [tuple(tuple(term for _, term in sorted(col)) for col in row) for row in out]

    def phrases(self, terms: Sequence[str]) -> list[Phrase]:
        """Each query term tokenised as FTS5 tokenises a quoted string (usually one stem; empty ones dropped)."""
        return [p for (p, *_) in self.tokenize([(t, *[""] * (self.columns - 1)) for t in terms]) if p]


def occurrences(tokens: Phrase, phrase: Phrase) -> int:
    """How many times ``phrase`` occurs in ``tokens`` (overlapping starts count, as FTS5's instances do)."""
    n = len(phrase)
    if n == 1:
        return tokens.count(phrase[0])
    return sum(1 for i in range(len(tokens) - n + 1) if tokens[i : i + n] == phrase)


def _padded(column: str) -> str:
    # " a  b  a ": every token between its own two spaces, so str.count(" a ") counts each occurrence.
    return " " + column.replace(" ", "  ") + " " if column else ""


def _count(column: str, padded: str, phrase: Phrase) -> int:
    if len(phrase) == 1:
        return padded.count(" " + phrase[0] + " ") if padded else 0
    return occurrences(split_tokens(column), phrase)  # rare: a query word FTS5 splits into several tokens


def matches(columns: Sequence[str], phrase: Phrase) -> bool:
    """Whether ``phrase`` occurs in any column (columns are stored token strings, space-joined)."""
    return any(_count(col, _padded(col), phrase) for col in columns)


def idf(rows: int, hits: int) -> float:
    """FTS5's IDF: log((N - n + 0.5) / (n + 0.5)), never below 1e-6."""
    value = math.log((rows - hits + 0.5) / (hits + 0.5)) if rows > 0 else 0.0
    return value if value > 0.0 else 1e-6


def bm25(
    columns: Sequence[str],
    phrases: Sequence[Phrase],
    idfs: Sequence[float],
    weights: Sequence[float],
    avgdl: float,
) -> float:
    """FTS5's bm25 of one row (positive: higher is better; FTS5 itself returns the negation).

    ``columns`` are the row's token strings (space-joined tokens, as the stores keep them).
    """
    return score_rows([columns], phrases, idfs, weights, avgdl)[0] or 0.0


def score_rows(
    rows: Sequence[Sequence[str]],
    phrases: Sequence[Phrase],
    idfs: Sequence[float],
    weights: Sequence[float],
    avgdl: float,
) -> list[float | None]:
    """FTS5's bm25 of each row of token strings; None for a row where no phrase occurs (FTS5 would not
    return it). A row matching only in a column of weight 0 scores 0.0 but is still a match, as in FTS5.

    Works on the strings (``str.count`` over padded tokens), not token lists: it runs on every candidate
    of every keyword search.
    """
    k1_plus_1 = K1 + 1.0
    pairs = list(zip(phrases, idfs, strict=True))
    out: list[float | None] = []
    if len(weights) == 2 and all(len(p) == 1 for p in phrases):
        # The common case (two columns, one token per query word), inlined: it runs for every candidate,
        # and measured 1.0 ms per 300 rows against 2.2 ms through the general loop below.
        pats = [(" " + p[0] + " ", phrase_idf) for p, phrase_idf in pairs]
        w_text, w_context = weights
        for text, context in rows:
            p_text = " " + text.replace(" ", "  ") + " " if text else ""
            p_context = " " + context.replace(" ", "  ") + " " if context else ""
            length = (text.count(" ") + 1 if text else 0) + (context.count(" ") + 1 if context else 0)
            norm = K1 * (1.0 - B + B * length / avgdl) if avgdl > 0 else K1
            score = 0.0
            hit = False
            for pat, phrase_idf in pats:
                n_text = p_text.count(pat)
                n_context = p_context.count(pat)
                if n_text or n_context:
                    hit = True
                    freq = w_text * n_text + w_context * n_context
                    score += phrase_idf * (freq * k1_plus_1) / (freq + norm)
            out.append(score if hit else None)
        return out
    for columns in rows:
        padded = [_padded(c) for c in columns]
        length = sum(c.count(" ") + 1 for c in columns if c)
        norm = K1 * (1.0 - B + B * length / avgdl) if avgdl > 0 else K1
        score = 0.0
        hit = False
        for phrase, phrase_idf in pairs:
            freq = 0.0
            found = False
            for col, pad, weight in zip(columns, padded, weights, strict=False):
                n = _count(col, pad, phrase)
                if n:
                    found = True
                    freq += weight * n
            if found:
                hit = True
                score += phrase_idf * (freq * k1_plus_1) / (freq + norm)
        out.append(score if hit else None)
    return out


def split_tokens(tokens: str | None) -> Phrase:
    """A stored space-joined token string back as a token tuple."""
    return tuple(tokens.split(" ")) if tokens else ()


def keyword_columns(texts: Sequence[tuple[str, str]]) -> list[tuple[str, str, int]]:
    """(text tokens, context tokens, token count) to store with units of these (text, context) pairs."""
    return [(" ".join(t), " ".join(c), len(t) + len(c)) for t, c in shared_tokenizer().tokenize(texts)]


@functools.cache
def shared_tokenizer() -> Fts5Tokenizer:
    """The process's two-column tokenizer (created on first use; thread-safe)."""
    return Fts5Tokenizer(columns=2)


@dataclass
class BankTermStats:
    """Keyword statistics of one bank: unit count, total tokens and phrase hit counts, with their age."""

    at: float
    rows: int
    tokens: int
    hits: dict[Phrase, int] = field(default_factory=dict)


class TermStatsCache:
    """Per-bank keyword statistics, kept until the store writes to the bank or ``ttl`` seconds pass.

    Statistics are per bank, not per store file or server: a bank's ranking never depends on other banks.
    Another process's writes show after at most ``ttl`` seconds; until then only scores move slightly:
    which units match is always read fresh.
    """

    def __init__(self, ttl: float = 30.0) -> None:
        """Keep each bank's statistics up to ``ttl`` seconds."""
        self.ttl = ttl
        self._stats: dict[str, BankTermStats] = {}
        self._lock = threading.Lock()

    def invalidate(self, bank_id: str | None = None) -> None:
        """Forget one bank's statistics (after a write to it), or every bank's."""
        with self._lock:
            if bank_id is None:
                self._stats.clear()
            else:
                self._stats.pop(bank_id, None)

    def get(
        self,
        bank_id: str,
        phrases: Sequence[Phrase],
        totals: Callable[[], tuple[int, int]],
        count_hits: Callable[[Phrase], int],
        every_match: Sequence[Sequence[str]] | None = None,
    ) -> BankTermStats:
        """The bank's statistics with a hit count for every phrase.

        ``totals()`` gives (units, tokens) of the bank; ``count_hits(p)`` the units holding phrase ``p``.
        ``every_match``, when the caller has read every unit of the bank matching any phrase, gives the hit
        counts without a query.
        """
        now = time.monotonic()
        with self._lock:
            stats = self._stats.get(bank_id)
        if stats is None or now - stats.at > self.ttl:
            rows, tokens = totals()
            stats = BankTermStats(at=now, rows=rows, tokens=tokens)
        for p in dict.fromkeys(phrases):
            if p not in stats.hits:
                stats.hits[p] = (sum(1 for cols in every_match if matches(cols, p)) if every_match is not None
                                 else count_hits(p))
        with self._lock:
            self._stats[bank_id] = stats
        return stats


def rank(
    candidates: Sequence[tuple[str, Sequence[str], int]],
    phrases: Sequence[Phrase],
    stats: BankTermStats,
    weights: Sequence[float],
    limit: int,
) -> list[tuple[str, float]]:
    """Candidates ``(id, columns, order key)`` scored with FTS5's bm25 on ``stats``; best ``limit`` first.

    A candidate in which no phrase occurs (in order) is dropped; ties keep the order key's order.
    """
    idfs = [idf(stats.rows, stats.hits[p]) for p in phrases]
    avgdl = stats.tokens / stats.rows if stats.rows else 0.0
    scores = score_rows([cols for _, cols, _ in candidates], phrases, idfs, weights, avgdl)
    scored = [(s, key, uid) for (uid, _, key), s in zip(candidates, scores, strict=True) if s is not None]
    scored.sort(key=lambda x: (-x[0], x[1]))
    return [(uid, s) for s, _, uid in scored[:limit]]
