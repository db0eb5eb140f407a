"""``SearchStore`` on SQLite: FTS5 keyword search ranked on the bank's own statistics, and the occurrence-time
index."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ...models import Network, TimeRange
from ..common import from_epoch as _dt
from ..common import to_epoch as _ts
from ..fts5_bm25 import K1, BankTermStats, Phrase, idf, query_terms, rank, shared_tokenizer
from .connection import SQLiteConnection


def fts_query(text: str) -> str | None:
    """Build a safe FTS5 OR-query from free text: words only, each quoted, stopwords dropped.

    Quoting every term means no user text can reach FTS5's query syntax (NEAR, column filters, ``*``).
    """
    terms = query_terms(text)
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


LONGEST_TTL = 30.0
"""Seconds a bank's longest occurrence interval is reused by ``temporal_search`` without a write to the bank."""


class SQLiteSearch(SQLiteConnection):
    """Keyword and temporal retrieval (``base.SearchStore``)."""

    keyword_candidates: int = 200
    """Most FTS5 hits rescored per keyword search (in FTS5's own order; see ``keyword_search``)."""
    keyword_exact_rows: int = 3000
    """A one-bank keyword search expected to match at most this many rows scores them all with FTS5's bm25()
    (about 3 ms); above, only the rows holding two or more of the query's words (``_keyword_top``)."""
    keyword_max_groups: int = 8
    """More distinct query words than this: ``_keyword_top`` steps aside (one FTS5 query per word)."""

    @staticmethod
    def _filters(networks: Sequence[Network] | None, time_range: TimeRange | None) -> tuple[str, list[Any]]:
        sql, args = "", list[Any]()
        if networks:
            sql += f" AND u.network IN ({','.join('?' * len(networks))})"
            args.extend(Network(n).value for n in networks)
        if time_range is not None:
            if time_range.end is not None:
                sql += " AND coalesce(u.occurred_start, u.mentioned_at) <= ?"
                args.append(_ts(time_range.end))
            if time_range.start is not None:
                sql += " AND coalesce(u.occurred_end, u.occurred_start, u.mentioned_at) >= ?"
                args.append(_ts(time_range.start))
        return sql, args

    def keyword_search(
        self,
        bank_id: str,
        query: str,
        limit: int,
        networks: Sequence[Network] | None = None,
        time_range: TimeRange | None = None,
        context_weight: float = 0.5,
    ) -> list[tuple[str, float]]:
        """FTS5's bm25 over unit text and, down-weighted, its search context, with the bank's own statistics.

        FTS5's ``bm25()`` takes its unit count, mean length and term frequencies from the whole file, so one
        bank's ranking would shift with every other bank's content. Its order picks the candidates (the top
        ``keyword_candidates`` of the bank); they are rescored with the same formula (``fts5_bm25``) on the
        bank's statistics, which ``keyword_terms`` / ``keyword_totals`` keep exact in the same transactions
        as the units. The server store ranks the same way. (id, score) best first.
        """
        match = fts_query(query)
        if match is None or limit <= 0:
            return []
        extra, args = self._filters(networks, time_range)
        con = self._con()
        totals = con.execute(
            "SELECT units, (SELECT sum(units) FROM keyword_totals) FROM keyword_totals WHERE bank_id = ?", (bank_id,)
        ).fetchone()
        if totals is not None and totals[0] == totals[1]:
            # Only this bank has units: FTS5's file-wide statistics are the bank's, so bm25() is already exact.
            top = self._keyword_top(con, bank_id, query, limit, float(context_weight), int(totals[0]), extra, args)
            if top is not None:
                return top
            if extra:
                sql = ("SELECT u.id, bm25(units_fts, 1.0, ?) AS score FROM units_fts JOIN units u "
                       f"ON u.seq = units_fts.rowid WHERE units_fts MATCH ? AND u.bank_id = ?{extra} "
                       "ORDER BY score, u.seq LIMIT ?")
                params = [float(context_weight), match, bank_id, *args, limit]
            else:
                # Without filters the full-text table alone picks the top, and the join reads `limit` units instead
                # of every match (4.8 -> 3.2 ms per query at 10k units, the same rows in the same order). The bank
                # test stays: never another bank's unit, even if the totals were ever off.
                sql = ("SELECT u.id, f.score FROM (SELECT rowid, bm25(units_fts, 1.0, ?) AS score FROM units_fts "
                       "WHERE units_fts MATCH ? ORDER BY score, rowid LIMIT ?) f JOIN units u ON u.seq = f.rowid "
                       "WHERE u.bank_id = ? ORDER BY f.score, f.rowid")
                params = [float(context_weight), match, limit, bank_id]
            return [(r[0], -float(r[1])) for r in con.execute(sql, params).fetchall()]
        # Tokenised only here: the one-bank path above lets FTS5 tokenise the query itself.
        phrases = shared_tokenizer().phrases(query_terms(query))
        if not phrases:
            return []
        cap = max(self.keyword_candidates, limit)
        rows = con.execute(
            "SELECT u.id, u.kw_text, u.kw_context, u.seq FROM units_fts JOIN units u ON u.seq = units_fts.rowid "
            f"WHERE units_fts MATCH ? AND u.bank_id = ?{extra} ORDER BY bm25(units_fts, 1.0, ?) LIMIT ?",
            [match, bank_id, *args, float(context_weight), cap],
        ).fetchall()
        docs = [(r[0], (r[1] or "", r[2] or ""), r[3]) for r in rows]
        return rank(docs, phrases, self._keyword_stats(con, bank_id, phrases), (1.0, float(context_weight)), limit)

    def _keyword_top(
        self, con: sqlite3.Connection, bank_id: str, query: str, limit: int, context_weight: float, units: int,
        extra: str = "", args: Sequence[Any] = (),
    ) -> list[tuple[str, float]] | None:
        """The top ``limit`` of a one-bank file's keyword search, scoring only the rows that hold at least two of
        the query's words; None where that does not pay (few matches, one or many words): every match is scored.

        FTS5's ``bm25()`` costs about a microsecond per matched row (each phrase's positions, the row's length),
        and an OR of a few common words matches a third of a large bank (43k rows at 100k units for "What is
        Luis planning with Gustav?": 50 ms). Its best rows hold several of the words: with a row's own text
        weighing twice its neighbours' (the context), one word alone rarely outscores two. The rows with two or
        more of the m words are split by the rarest word they hold, one FTS5 query each (``w_i AND (w_i+1 OR
        ...) NOT w_1 ... NOT w_i-1``): each word occurs once in each query, and a word under NOT is absent from
        the rows returned, so FTS5's ``bm25()`` there is exactly the OR query's. Each query's top ``limit``
        merged give the top of those rows with their exact scores. A row holding one word only scores at most
        ``idf * (k1 + 1)``: a rare word's (at most ``keyword_exact_rows`` rows) that could still rank are ranked
        too; a common word's are left out, the price of not scoring every match (on a 100k-unit bank: the same
        top 100 as scoring every match for 200 of 200 queries; ``tests/test_recall_topk_keyword.py``).
        ``extra``/``args``: the search's filters on the units (``u``), from ``_filters``.
        """
        if extra:
            # Filters read each matched row's unit: only rows passing them are scored.
            sql = ("SELECT units_fts.rowid, bm25(units_fts, 1.0, ?) AS s FROM units_fts JOIN units u "
                   f"ON u.seq = units_fts.rowid WHERE units_fts MATCH ? AND u.bank_id = ?{extra} "
                   "ORDER BY s, units_fts.rowid LIMIT ?")
        else:
            sql = ("SELECT rowid, bm25(units_fts, 1.0, ?) AS s FROM units_fts WHERE units_fts MATCH ? "
                   "ORDER BY s, rowid LIMIT ?")

        def best(match: str) -> list[tuple[int, float]]:
            params = [context_weight, match, bank_id, *args, limit] if extra else [context_weight, match, limit]
            return [(r[0], float(r[1])) for r in con.execute(sql, params)]

        terms = query_terms(query)
        if len(terms) < 2 or units < self.keyword_exact_rows:
            return None
        phrases = shared_tokenizer().phrases(terms)
        if len(phrases) != len(terms):
            return None  # a word FTS5 tokenises to nothing: the plain query keeps FTS5's exact semantics
        stats = self._keyword_stats(con, bank_id, phrases)
        if stats.rows <= 0:
            return None
        # One group per distinct phrase (words with one stem always occur together), rarest first.
        groups: dict[Phrase, list[str]] = {}
        for term, phrase in zip(terms, phrases, strict=True):
            groups.setdefault(phrase, []).append(term)
        # A word in half the bank or more has FTS5's floored idf (1e-6): it adds at most 2.2e-6 to a score, so
        # it is left out here (as the keyword channel drops what such words alone matched); a word in no row
        # matches nothing and scores nothing.
        for p in [p for p in groups if not stats.hits.get(p) or idf(stats.rows, stats.hits[p]) < 1e-3]:
            del groups[p]
        if not 2 <= len(groups) <= self.keyword_max_groups:
            return None
        order = sorted(groups, key=lambda p: (stats.hits.get(p, 0), p))
        share = [min(1.0, stats.hits.get(p, 0) / stats.rows) for p in order]
        at_least = _at_least(share)
        # Worth it when the rows with two or more words are much fewer than the matches (estimated from the
        # bank's word counts as if independent) and the matches are many.
        if at_least[1] * stats.rows <= self.keyword_exact_rows or at_least[2] > 0.5 * at_least[1]:
            return None
        quoted = ["(" + " OR ".join('"' + t.replace('"', '""') + '"' for t in groups[p]) + ")" for p in order]
        merged: dict[int, float] = {}
        for i in range(len(quoted) - 1):
            match = quoted[i] + " AND (" + " OR ".join(quoted[i + 1 :]) + ")"
            if i:
                match = "(" + match + ") NOT (" + " OR ".join(quoted[:i]) + ")"
            merged.update(best(match))
        if len(merged) < limit:
            return None  # fewer rows hold two of the words than were asked for: rank every match
        # A row holding one word scores at most idf * (k1 + 1). A word that could still outscore the k-th row
        # found, and is rare enough to be cheap, has its one-word rows ranked too; a common one cannot, in
        # practice (its idf is low), and is not (that is the saving).
        kth = -sorted(merged.values())[limit - 1]
        for i, p in enumerate(order):
            hits = stats.hits.get(p, 0)
            if hits > self.keyword_exact_rows or idf(stats.rows, hits) * (K1 + 1.0) * len(groups[p]) <= kth:
                continue
            others = [q for j, q in enumerate(quoted) if j != i]
            merged.update(best(f"{quoted[i]} NOT ({' OR '.join(others)})"))
        top = sorted(merged.items(), key=lambda kv: (kv[1], kv[0]))[:limit]
        ids: dict[int, str] = {}
        for chunk in range(0, len(top), 500):
            part = [seq for seq, _ in top[chunk : chunk + 500]]
            ids.update(con.execute(f"SELECT seq, id FROM units WHERE seq IN ({','.join('?' * len(part))}) "
                                   "AND bank_id = ?", [*part, bank_id]).fetchall())
        return [(ids[seq], -score) for seq, score in top if seq in ids]

    @staticmethod
    def _keyword_stats(con: sqlite3.Connection, bank_id: str, phrases: Sequence[Phrase]) -> BankTermStats:
        """The bank's unit count, token total and per-phrase unit counts, from the maintained tables."""
        row = con.execute("SELECT units, tokens FROM keyword_totals WHERE bank_id = ?", (bank_id,)).fetchone()
        stats = BankTermStats(at=0.0, rows=int(row[0]) if row else 0, tokens=int(row[1]) if row else 0)
        terms = list(dict.fromkeys(p[0] for p in phrases if len(p) == 1))
        if terms:
            found = dict(con.execute(
                f"SELECT term, units FROM keyword_terms WHERE bank_id = ? AND term IN ({','.join('?' * len(terms))})",
                [bank_id, *terms],
            ).fetchall())
            stats.hits.update({(t,): int(found.get(t, 0)) for t in terms})
        for phrase in phrases:
            if len(phrase) > 1 and phrase not in stats.hits:  # a phrase query word: counted by FTS5 itself
                quoted = '"' + " ".join(phrase).replace('"', '""') + '"'
                stats.hits[phrase] = int(con.execute(
                    "SELECT count(*) FROM units_fts JOIN units u ON u.seq = units_fts.rowid "
                    "WHERE units_fts MATCH ? AND u.bank_id = ?", (quoted, bank_id),
                ).fetchone()[0])
        return stats

    def temporal_search(
        self, bank_id: str, time_range: TimeRange, limit: int, networks: Sequence[Network] | None = None
    ) -> list[tuple[str, datetime | None]]:
        """Units whose occurrence interval overlaps ``time_range``, most recent first (see ``temporal_ids``)."""
        return [(i, _dt(t)) for i, t in self._temporal_rows(bank_id, time_range, limit, networks)]

    def temporal_ids(
        self, bank_id: str, time_range: TimeRange, limit: int, networks: Sequence[Network] | None = None,
        *, ordered: bool = True,
    ) -> list[str]:
        """``temporal_search``'s ids alone (no timestamps made: 20k of them cost several ms).

        Units whose occurrence interval overlaps ``time_range``, most recent first (equal times by id); with
        ``ordered=False`` in no particular order, unless there are more than ``limit`` (then the ``limit`` most
        recent, ordered): a caller that wants the whole window skips the sort.
        Read through the (bank, occurrence start) index: a unit overlapping the range starts at most the bank's
        longest occurrence interval before it (``_longest_occurrence``), so only that stretch of the index is
        read, not the whole bank (a month's window of a 100k-unit bank: 40 ms -> about 1 ms). Units without an
        occurrence time are matched on when they were said, as before.
        """
        if not ordered:
            rows = self._temporal_rows(bank_id, time_range, limit + 1, networks, ordered=False)
            if len(rows) <= limit:
                return [i for i, _ in rows]
        return [i for i, _ in self._temporal_rows(bank_id, time_range, limit, networks)]

    def _temporal_rows(
        self, bank_id: str, time_range: TimeRange, limit: int, networks: Sequence[Network] | None,
        ordered: bool = True,
    ) -> list[tuple[str, float]]:
        start, end = _ts(time_range.start), _ts(time_range.end)
        nets, net_args = "", list[Any]()
        if networks:
            nets = f" AND network IN ({','.join('?' * len(networks))})"
            net_args = [Network(n).value for n in networks]
        con = self._con()
        timed, timed_args = "occurred_start IS NOT NULL", list[Any]()
        if end is not None:
            timed += " AND occurred_start <= ?"
            timed_args.append(end)
        if start is not None:
            timed += " AND occurred_start >= ? AND coalesce(occurred_end, occurred_start) >= ?"
            timed_args += [start - self._longest_occurrence(con, bank_id), start]
        untimed, untimed_args = "occurred_start IS NULL", list[Any]()
        if end is not None:
            untimed += " AND mentioned_at <= ?"
            untimed_args.append(end)
        if start is not None:
            untimed += " AND coalesce(occurred_end, mentioned_at) >= ?"
            untimed_args.append(start)
        rows = con.execute(
            f"SELECT id, t FROM (SELECT id, occurred_start AS t FROM units WHERE bank_id = ? AND {timed}{nets} "
            f"UNION ALL SELECT id, mentioned_at AS t FROM units WHERE bank_id = ? AND {untimed}{nets}) "
            + ("ORDER BY t DESC, id " if ordered else "") + "LIMIT ?",
            [bank_id, *timed_args, *net_args, bank_id, *untimed_args, *net_args, limit],
        ).fetchall()
        return [(r[0], r[1]) for r in rows]

    def _longest_occurrence(self, con: sqlite3.Connection, bank_id: str) -> float:
        """The bank's longest occurrence interval in seconds (0 when none), kept until the bank's unit count or
        the file's last unit changes, or ``LONGEST_TTL`` seconds pass (an edited interval shows by then)."""
        key = (con.execute("SELECT units FROM keyword_totals WHERE bank_id = ?", (bank_id,)).fetchone(),
               con.execute("SELECT max(seq) FROM units").fetchone())
        cache: dict[str, tuple[Any, float, float]] = self.__dict__.setdefault("_longest_cache", {})
        now = time.monotonic()
        hit = cache.get(bank_id)
        if hit is not None and hit[0] == key and now - hit[1] < LONGEST_TTL:
            return hit[2]
        longest = con.execute(
            "SELECT max(coalesce(occurred_end, occurred_start) - occurred_start) FROM units "
            "WHERE bank_id = ? AND occurred_start IS NOT NULL", (bank_id,),
        ).fetchone()[0]
        value = max(0.0, float(longest or 0.0))
        cache[bank_id] = (key, now, value)
        return value

def _at_least(shares: Sequence[float]) -> list[float]:
    """For independent words found in the given shares of rows: ``out[n]`` is the expected share of rows holding
    at least ``n`` of them (``out[0]`` = 1)."""
    exactly = [1.0]  # exactly[j]: share holding exactly j of the words seen so far
    for p in shares:
        nxt = [0.0] * (len(exactly) + 1)
        for j, v in enumerate(exactly):
            nxt[j] += v * (1.0 - p)
            nxt[j + 1] += v * p
        exactly = nxt
    out = [0.0] * (len(exactly) + 1)
    for n in range(len(exactly) - 1, -1, -1):
        out[n] = out[n + 1] + exactly[n]
    return out[: len(exactly)]
