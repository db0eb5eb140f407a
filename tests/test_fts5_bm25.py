"""FTS5's bm25 reproduced in Python (``fts5_bm25``) scores exactly what SQLite's ``bm25()`` scores.

The server store ranks its keyword channel with this module, so any drift here would make the two stores
rank differently; each case is checked against a real FTS5 table.
"""

from __future__ import annotations

import random
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hindsight_core.hindsight import Hindsight
from hindsight_core.stores.fts5_bm25 import (
    TOKENIZER,
    Fts5Tokenizer,
    bm25,
    idf,
    matches,
    occurrences,
    query_terms,
    score_rows,
)
from hindsight_core.stores.sqlite import fts_query

VOCAB = (
    "paint paints painted painting paintings run running runs runner café cafe Zoë zoe naïve résumé "
    "Lisbon lisbon marathon swim swimming_pool swimming pool support group LGBTQ 2023 May dog chew "
    "sunrise lake volcano mountain hike hiking hiked ÉCOLE école straße strasse 東京 tokyo"
).split()


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(n)) + rng.choice(["", ".", "!", "?"])


def _fts(rows: list[tuple[str, str]]) -> sqlite3.Connection:
    con = sqlite3.connect(":memory:")
    con.execute(f"CREATE VIRTUAL TABLE f USING fts5(text, context, tokenize='{TOKENIZER}')")
    con.executemany("INSERT INTO f (rowid, text, context) VALUES (?, ?, ?)",
                    [(i + 1, t, c) for i, (t, c) in enumerate(rows)])
    return con


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("weight", [0.0, 0.5, 1.0, 2.0])
def test_scores_equal_sqlite_bm25(seed: int, weight: float) -> None:
    rng = random.Random(seed)
    rows = [(_sentence(rng, rng.randint(1, 14)), _sentence(rng, rng.randint(0, 20)) if rng.random() < 0.8 else "")
            for _ in range(rng.randint(5, 120))]
    con = _fts(rows)
    tok = Fts5Tokenizer()
    tokens = tok.tokenize(rows)
    docs = [(" ".join(a), " ".join(b)) for a, b in tokens]  # stored form: space-joined token strings
    n = len(rows)
    avgdl = sum(len(a) + len(b) for a, b in tokens) / n
    checked = 0
    for _ in range(25):
        query = " ".join(rng.choice(VOCAB) for _ in range(rng.randint(1, 5)))
        match = fts_query(query)
        assert match is not None
        want = con.execute(f"SELECT rowid, bm25(f, 1.0, {weight}) FROM f WHERE f MATCH ?", (match,)).fetchall()
        phrases = tok.phrases(query_terms(query))
        idfs = [idf(n, sum(1 for d in docs if matches(d, p))) for p in phrases]
        got = {i + 1: bm25(d, phrases, idfs, (1.0, weight), avgdl)
               for i, d in enumerate(docs) if any(matches(d, p) for p in phrases)}
        assert set(got) == {r for r, _ in want}, query  # the same rows match
        for rowid, score in want:
            assert got[rowid] == pytest.approx(-score, rel=1e-9, abs=1e-12), (query, rowid)
        checked += len(want)
    assert checked > 0


def test_tokenizer_is_fts5s() -> None:
    tok = Fts5Tokenizer()
    (text, context), = tok.tokenize([("Paintings at the Café, naïve Zoë!", "swimming_pool ÉCOLE 東京")])
    assert text == ("paint", "at", "the", "cafe", "naiv", "zoe")  # porter stems, case and diacritics folded
    assert context == ("swim", "pool", "ecol", "東京")  # '_' separates tokens, as in unicode61
    assert tok.tokenize([]) == []
    with pytest.raises(ValueError, match="2 columns"):
        tok.tokenize([("only one",)])
    # a query word FTS5 splits is a phrase; one it drops entirely is no phrase at all
    assert tok.phrases(["swimming_pool", "__", "running"]) == [("swim", "pool"), ("run",)]


def test_phrase_occurrences() -> None:
    assert occurrences(("a", "b", "a", "b", "a"), ("a", "b")) == 2
    assert occurrences(("a", "a", "a"), ("a", "a")) == 2  # overlapping starts count
    assert occurrences((), ("a",)) == 0
    assert matches(("x", "b a"), ("b", "a")) and not matches(("a b",), ("b", "a"))
    assert matches(("aa a",), ("a",)) and not matches(("aa ab",), ("a",))  # whole tokens only
    assert score_rows([("a a a",), ("b",)], [("a",)], [1.0], [1.0], 2.0)[1] is None


def test_idf_floor_and_query_terms() -> None:
    assert idf(10, 9) == 1e-6 and idf(0, 0) == 1e-6  # FTS5 never lets a term count against a row
    assert idf(10, 1) > idf(10, 3) > 0
    assert query_terms("Where did Oscar go running?") == ["oscar", "go", "running"]
    assert query_terms("who is it") == ["who", "is", "it"]  # only stopwords: all kept
    assert len(query_terms(" ".join(f"w{i}" for i in range(100)))) == 64



def test_words_that_only_say_a_question_asks_of_the_present_are_not_keywords(tmp_path: Path) -> None:
    # "Does Marcio still smoke?": as a keyword, "still" matched every "I'm still ..." of a chat ahead of the answer.
    assert query_terms("Does Marcio still smoke these days?") == ["marcio", "smoke", "days"]
    assert query_terms("What is Jon currently reading nowadays, anymore?") == ["jon", "reading"]
    chat = [("Rosa", "I'm still a trainee at the agency, so mostly coffee runs."),
            ("Ana", "The ferry was late again this morning."), ("Rosa", "Did anyone see the match on Sunday?"),
            ("Ana", "We are painting the kitchen green."), ("Marcio", "Day sixty without a cigarette, I chew gum."),
            ("Ana", "The bakery on the corner closed."), ("Rosa", "Lunch on Friday at the usual place?"),
            ("Ana", "My sister is visiting in May."), ("Rosa", "My old car still starts on the first try."),
            ("Ana", "The library has a new reading room."), ("Rosa", "I booked the dentist for Monday.")]
    with Hindsight.open(tmp_path / "hs") as hs:
        bank = hs.bank("still")
        bank.retain([{"speaker": who, "text": text} for who, text in chat],
                    timestamp=datetime(2024, 3, 1, tzinfo=UTC), extract=False)
        hits = hs.store.keyword_search(bank.id, "Does Marcio still chew gum?", 10)
        texts = [m.text for m in bank.memories([i for i, _ in hits])]
    assert texts and "Marcio" in texts[0] and not any("still" in t for t in texts), texts
