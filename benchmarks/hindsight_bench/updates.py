"""Beliefs that change: does recall know what is current, and is supersession right? (``hindsight bench updates``)

Data: ``data/updates.jsonl``, written for the project (see its ``_meta`` row): multi-session chats of 3-4 people over
about a year, each with labelled cases. A case names an early message (``original``) and a later one (``later``):
for an ``update`` the later message changes the subject's attribute (home, job, partner, pet, diet, plans, ...), for
a ``lookalike`` it only looks like a change (a friend moved, a visit, a hypothetical, a question, a past story, an
addition, a repetition) and the original stays current. Conversations are split dev/test (tune on dev, report test).

Each conversation is retained into its own bank, one session at a time (message ids are the dataset's, timestamp
the session's date): raw (``extract=False``, no model) and, with ``default=True``, the default path (``extract=True``:
the facts job asks the model; slow). After ``wait_idle`` the bench scores, per path and split:

* **current outranks superseded**: for an update's present-tense question ("Where does Ana live now?"), the share
  where the later message ranks above the original; for a look-alike, the share where the original still ranks above
  the look-alike (repetitions and denials, which restate the current value, are left out of this share);
* **past found**: the share of an update's past-tense questions ("Where did Ana live before she moved?") that still
  find the original within the first 10;
* **supersession precision and recall**: a memory counts as superseded when ``getattr(memory, "superseded_by")`` is
  set (``Memory.superseded_by``, the id of the newer memory). A supersession is correct when the superseded memory
  comes from an update's original message and the newer one from its later message; precision is over every
  supersession made in the split's banks, recall over its updates;
* **look-alikes wrongly superseded**: look-alikes whose original message's memory was superseded (by anything);
* **as_of** (only when ``Bank.recall`` takes ``as_of``): the present-tense question asked as of the day before the
  update was said: the share where the original outranks the later message.

A message's rank is the best rank of the memories sourced from it (``Memory.sources``) or, for a fact of the default
path, citing a memory sourced from it (``Memory.cites``). Ranks come from one recall per question (budget and
``max_memories`` large enough to rank ``RANK_DEPTH`` memories), with "now" a day after the conversation's last session.
"""

from __future__ import annotations

import inspect
import json
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "updates.jsonl"
SPLITS = ("dev", "test")
RANK_DEPTH = 50
"""How many memories each recall ranks; a message outside them has no rank (it loses every comparison)."""
PAST_K = 10
"""A past-tense question finds the old memory when the original ranks within the first ``PAST_K``."""
RESTATING = ("repetition", "negation")
"""Look-alike types whose later message restates the current value: left out of the outranks share."""


@dataclass
class UpdateSet:
    """The labelled set: its ``_meta``, the conversations by id and the cases in file order."""

    meta: dict[str, Any]
    conversations: dict[str, dict[str, Any]]
    cases: list[dict[str, Any]]

    def select(self, split: str = "all", conversations: Sequence[str] | None = None) -> UpdateSet:
        """The part of the set in ``split`` (dev, test or all), optionally only the named conversations."""
        if split not in (*SPLITS, "all"):
            raise ValueError(f"unknown split {split!r}; use dev, test or all")
        unknown = sorted(set(conversations or ()) - set(self.conversations))
        if unknown:
            raise ValueError(f"unknown conversation(s) {unknown}; known: {', '.join(self.conversations)}")
        keep = {cid for cid, conv in self.conversations.items()
                if (split == "all" or conv["split"] == split) and (not conversations or cid in conversations)}
        return UpdateSet(self.meta, {c: v for c, v in self.conversations.items() if c in keep},
                         [case for case in self.cases if case["conversation"] in keep])


def load(path: str | Path = DATA) -> UpdateSet:
    """Read ``updates.jsonl``: a ``_meta`` row, conversation rows (with ``sessions``), case rows (with ``case``)."""
    meta: dict[str, Any] = {}
    conversations: dict[str, dict[str, Any]] = {}
    cases: list[dict[str, Any]] = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if "_meta" in row:
            meta = row["_meta"]
        elif "case" in row:
            cases.append(row)
        elif "sessions" in row:
            conversations[row["conversation"]] = row
        else:
            raise ValueError(f"unrecognised row in {path}: {sorted(row)}")
    return UpdateSet(meta, conversations, cases)


def session_dates(conversation: dict[str, Any]) -> dict[str, datetime]:
    """Each message id of a conversation -> the date of the session it was said in."""
    return {m["id"]: datetime.fromisoformat(s["date"]) for s in conversation["sessions"] for m in s["messages"]}


def now_of(conversation: dict[str, Any]) -> datetime:
    """The reference time of every question: a day after the conversation's last session."""
    return max(datetime.fromisoformat(s["date"]) for s in conversation["sessions"]) + timedelta(days=1)


def retain_conversation(bank: Any, conversation: dict[str, Any], *, extract: bool) -> None:
    """Retain a conversation one session at a time (document ``<conversation>:session_<n>``), as LoCoMo's sessions
    are retained: messages ``{speaker, text, id}`` at the session's date."""
    for session in conversation["sessions"]:
        messages = [{"speaker": m["speaker"], "text": m["text"], "id": m["id"]} for m in session["messages"]]
        bank.retain(messages, timestamp=datetime.fromisoformat(session["date"]),
                    document_id=f"{conversation['conversation']}:session_{session['session']}", extract=extract)


class MessageIndex:
    """Which messages each memory of a bank stands for: its ``sources``, and for a fact the sources of the message
    memories it cites."""

    def __init__(self, memories: Iterable[Any]) -> None:
        self.memories = {m.id: m for m in memories}
        self._messages: dict[str, set[str]] = {}

    def messages(self, memory: Any) -> set[str]:
        """Message ids ``memory`` is sourced from or cites."""
        found = self._messages.get(memory.id)
        if found is None:
            found = set(memory.sources)
            for cited in getattr(memory, "cites", None) or ():
                target = self.memories.get(cited)
                if target is not None:
                    found |= set(target.sources)
            self._messages[memory.id] = found
        return found

    def ranks(self, ranked: Sequence[Any]) -> dict[str, int]:
        """Message id -> best (1-based) rank over the ranked memories that stand for it."""
        out: dict[str, int] = {}
        for rank, memory in enumerate(ranked, start=1):
            for message in self.messages(self.memories.get(memory.id, memory)):
                out.setdefault(message, rank)
        return out

    def supersessions(self) -> list[tuple[Any, Any]]:
        """Every (superseded memory, newer memory) pair of the bank (the newer is None when it is not in the bank)."""
        pairs = []
        for memory in self.memories.values():
            newer = getattr(memory, "superseded_by", None)
            if newer:
                pairs.append((memory, self.memories.get(str(newer))))
        return pairs


def outranks(ranks: dict[str, int], first: str, second: str) -> bool:
    """True when message ``first`` ranks above ``second`` (an unranked message ranks below every ranked one; two
    unranked messages: False)."""
    a, b = ranks.get(first), ranks.get(second)
    return a is not None and (b is None or a < b)


def recall_ranks(bank: Any, index: MessageIndex, question: str, *, now: datetime,
                 time_range: Sequence[str] | None = None, as_of: datetime | None = None) -> dict[str, int]:
    """Rank messages for one question (see ``MessageIndex.ranks``)."""
    kwargs: dict[str, Any] = {"budget": 1_000_000, "max_memories": RANK_DEPTH, "reference_time": now}
    if time_range:
        kwargs["time_range"] = tuple(time_range)
    if as_of is not None:
        kwargs["as_of"] = as_of
    return index.ranks(bank.recall(question, **kwargs).memories)


def supports_as_of(bank: Any) -> bool:
    """Whether ``bank.recall`` takes ``as_of`` (what the bank believed at a time)."""
    try:
        return "as_of" in inspect.signature(bank.recall).parameters
    except (TypeError, ValueError):
        return False


def score_conversation(bank: Any, index: MessageIndex, conversation: dict[str, Any],
                       cases: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per-case results of one conversation's bank, and its supersessions judged against the cases."""
    now = now_of(conversation)
    dates = session_dates(conversation)
    with_as_of = supports_as_of(bank)
    rows = []
    for case in cases:
        original, later = case["original"], case["later"]
        present = case["questions"]["present"]
        ranks = recall_ranks(bank, index, present["question"], now=now)
        row: dict[str, Any] = {
            "case": case["case"], "kind": case["kind"], "attribute": case["attribute"],
            "lookalike": case.get("lookalike"), "original_rank": ranks.get(original), "later_rank": ranks.get(later),
        }
        if case["kind"] == "update":
            row["current_outranks"] = outranks(ranks, later, original)
            past = case["questions"].get("past")
            if past:
                past_ranks = recall_ranks(bank, index, past["question"], now=now, time_range=past.get("time_range"))
                row["past_rank"] = past_ranks.get(original)
                row["past_found"] = row["past_rank"] is not None and row["past_rank"] <= PAST_K
            if with_as_of:
                then = dates[later] - timedelta(days=1)
                then_ranks = recall_ranks(bank, index, present["question"], now=then, as_of=then)
                row["as_of_old_outranks"] = outranks(then_ranks, original, later)
        elif later not in present["expect"]:
            row["current_outranks"] = outranks(ranks, original, later)
        rows.append(row)
    return {"cases": rows, **judge_supersessions(index, cases)}


def judge_supersessions(index: MessageIndex, cases: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Every supersession of the bank labelled correct or wrong against the cases; which updates were found and
    which look-alikes' originals were superseded."""
    updates = [c for c in cases if c["kind"] == "update"]
    lookalike_originals = {c["original"]: c["case"] for c in cases if c["kind"] == "lookalike"}
    made, found, wrongly = [], set(), set()
    for old, new in index.supersessions():
        old_msgs = index.messages(old)
        new_msgs = index.messages(new) if new is not None else set()
        hits = [c["case"] for c in updates if c["original"] in old_msgs and c["later"] in new_msgs]
        found.update(hits)
        wrongly.update(lookalike_originals[m] for m in old_msgs if m in lookalike_originals)
        made.append({"old": old.text, "new": new.text if new is not None else None, "correct": bool(hits),
                     "old_messages": sorted(old_msgs), "new_messages": sorted(new_msgs)})
    return {"supersessions": made, "updates_found": sorted(found), "lookalikes_superseded": sorted(wrongly)}


def summarise(conversation_results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The metrics of a split from its conversations' results (shares in 0..1, with the counts behind them)."""
    rows = [r for conv in conversation_results for r in conv["cases"]]
    updates = [r for r in rows if r["kind"] == "update"]
    looks = [r for r in rows if r["kind"] == "lookalike"]
    made = [s for conv in conversation_results for s in conv["supersessions"]]
    correct = sum(1 for s in made if s["correct"])
    found = sum(len(conv["updates_found"]) for conv in conversation_results)
    wrongly = sum(len(conv["lookalikes_superseded"]) for conv in conversation_results)

    def share(values: Sequence[bool]) -> float:
        return sum(values) / len(values) if values else 0.0

    look_ranked = [r["current_outranks"] for r in looks if "current_outranks" in r]
    past = [r["past_found"] for r in updates if "past_found" in r]
    as_of = [r["as_of_old_outranks"] for r in updates if "as_of_old_outranks" in r]
    return {
        "updates": len(updates), "lookalikes": len(looks),
        "current_outranks": share([r["current_outranks"] for r in updates]),
        "lookalike_original_outranks": share(look_ranked), "lookalikes_ranked": len(look_ranked),
        "past_found": share(past), "past_questions": len(past),
        "supersessions_made": len(made), "supersessions_correct": correct,
        "supersession_precision": correct / len(made) if made else 0.0,
        "supersession_recall": found / len(updates) if updates else 0.0,
        "lookalikes_wrongly_superseded": wrongly,
        "lookalikes_wrongly_superseded_share": wrongly / len(looks) if looks else 0.0,
        "as_of_old_outranks": share(as_of) if as_of else None, "as_of_questions": len(as_of),
    }


def run_path(data: UpdateSet, *, extract: bool, root: Path, log: Callable[[str], None] = print,
             open_kwargs: dict[str, Any] | None = None, reuse: bool = False) -> dict[str, Any]:
    """Retain every conversation of ``data`` into its own bank under ``root`` (raw or default path), wait for the
    background work, and score it: {split: metrics}, the per-conversation results and the retain time.

    ``reuse``: a conversation whose bank already holds memories under ``root`` (a kept ``--workdir``) is scored as
    it is, not retained again, so recall changes can be compared without the model's minutes per conversation."""
    import time

    from hindsight_core.hindsight import Hindsight

    path = "default" if extract else "raw"
    results: dict[str, list[dict[str, Any]]] = {s: [] for s in SPLITS}
    started = time.perf_counter()
    with Hindsight.open(root / path, **(open_kwargs or {})) as hs:
        for cid, conversation in data.conversations.items():
            bank_id = f"updates-{cid}"
            kept = bank_id in {b.id for b in hs.banks()}
            reused = reuse and kept and bool(hs.store.unit_ids(bank_id))
            if kept and not reused:
                hs.delete_bank(bank_id)
            bank = hs.bank(bank_id)
            if not reused:
                retain_conversation(bank, conversation, extract=extract)
            if not bank.wait_idle(timeout=None if extract else 600.0):
                raise TimeoutError(f"bank {bank_id} did not become idle")
            index = MessageIndex(bank.memories(sorted(hs.store.unit_ids(bank.id))))
            cases = [c for c in data.cases if c["conversation"] == cid]
            result = score_conversation(bank, index, conversation, cases)
            result["conversation"] = cid
            results[conversation["split"]].append(result)
            log(f"updates [{path}] {cid}: {len(cases)} cases, {len(index.memories)} memories, "
                f"{len(result['supersessions'])} supersessions{' (kept bank reused)' if reused else ''}")
        # The recall settings this run used where they differ from the defaults (``--recall``).
        defaults = type(hs.settings.recall)().model_dump()
        changed = {k: v for k, v in hs.settings.recall.model_dump().items() if defaults.get(k) != v}
    return {"seconds": round(time.perf_counter() - started, 1), "recall_settings": changed,
            "splits": {s: summarise(r) for s, r in results.items() if r},
            "conversations": [r for s in SPLITS for r in results[s]]}


def run_updates(split: str = "all", *, data_path: str | Path = DATA, default: bool = False,
                conversations: Sequence[str] | None = None, workdir: str | Path | None = None,
                log: Callable[[str], None] = print, open_kwargs: dict[str, Any] | None = None,
                reuse: bool = False, recall: Sequence[str] = ()) -> dict[str, Any]:
    """Run the bench on the raw path (and the default path with ``default``); returns a JSON-able result.

    ``reuse`` scores the banks a kept ``workdir`` already holds instead of retaining again; ``recall`` sets recall
    settings for the run (``field=value`` of ``RecallSettings``: "later_first_depth=10")."""
    from .report import run_info

    data = load(data_path).select(split, conversations)
    if not data.conversations:
        raise ValueError("no conversation selected")
    if reuse and workdir is None:
        raise ValueError("reuse needs a workdir that holds the banks of an earlier run")
    if recall:
        from hindsight_core.config import Settings

        from .questions import variant

        settings = (open_kwargs or {}).get("settings") or Settings()
        tuned = settings.recall
        for item in recall:
            tuned = variant(tuned, item)
        open_kwargs = {**(open_kwargs or {}), "settings": settings.model_copy(update={"recall": tuned})}
    tmp = tempfile.TemporaryDirectory(prefix="hindsight-updates-") if workdir is None else None
    root = Path(workdir) if workdir is not None else Path(tmp.name)  # type: ignore[union-attr]
    try:
        paths = {"raw": run_path(data, extract=False, root=root, log=log, open_kwargs=open_kwargs, reuse=reuse)}
        if default:
            paths["default"] = run_path(data, extract=True, root=root, log=log, open_kwargs=open_kwargs, reuse=reuse)
    finally:
        if tmp is not None:
            tmp.cleanup()
    return {"benchmark": "updates", "split": split, "data": str(data_path), "counts": data.meta.get("counts", {}),
            "conversations": list(data.conversations), "run": run_info(), "recall": list(recall), "paths": paths}


def format_updates(result: dict[str, Any]) -> str:
    """A compact table per split: each path's metrics."""
    from .report import md_table

    lines = [f"Beliefs that change: {len(result['conversations'])} conversations ({result['split']})"]
    for split in SPLITS:
        rows = []
        for path, run in result["paths"].items():
            m = run["splits"].get(split)
            if m is None:
                continue
            as_of = "-" if m["as_of_old_outranks"] is None else f"{m['as_of_old_outranks']:.2f}"
            rows.append([path, f"{m['updates']}/{m['lookalikes']}", f"{m['current_outranks']:.2f}",
                         f"{m['lookalike_original_outranks']:.2f}", f"{m['past_found']:.2f}",
                         f"{m['supersession_precision']:.2f} ({m['supersessions_correct']}/{m['supersessions_made']})",
                         f"{m['supersession_recall']:.2f}",
                         f"{m['lookalikes_wrongly_superseded']} ({m['lookalikes_wrongly_superseded_share']:.2f})",
                         as_of])
        if rows:
            lines += ["", f"{split}:"]
            lines += md_table(["path", "updates/look-alikes", "current outranks", "look-alike original outranks",
                               f"past found@{PAST_K}", "supersession precision", "recall",
                               "look-alikes superseded", "as_of"], rows)
    return "\n".join(lines)


def format_misses(result: dict[str, Any], data: UpdateSet, path: str = "raw") -> str:
    """What to read when tuning (on dev): every wrong supersession, and every case that failed a share (an update not
    found, a current or look-alike original outranked, a past question that missed the original), with the two
    messages' text (``hindsight bench updates --show-misses``)."""
    text = {(cid, m["id"]): f"{m['speaker']}: {m['text']}" for cid, conv in data.conversations.items()
            for s in conv["sessions"] for m in s["messages"]}
    cases = {(c["conversation"], c["case"]): c for c in data.cases}
    lines: list[str] = []
    for conv in result["paths"][path]["conversations"]:
        cid = conv["conversation"]
        lines += [f"WRONG [{cid}] {s['old']!r} -> {s['new']!r}" for s in conv["supersessions"] if not s["correct"]]
        for row in conv["cases"]:
            case = cases[(cid, row["case"])]
            why = [w for w, failed in (
                ("not found", case["kind"] == "update" and row["case"] not in conv["updates_found"]),
                ("outranked", row.get("current_outranks") is False), ("past missed", row.get("past_found") is False),
            ) if failed]
            if why:
                lines += [f"MISS [{cid} {row['case']}] {case['kind']} {case['attribute']}: {', '.join(why)} "
                          f"(ranks: original {row['original_rank']}, later {row['later_rank']})",
                          f"  original: {text.get((cid, case['original']), '?')}",
                          f"  later:    {text.get((cid, case['later']), '?')}"]
    return "\n".join(lines)


def cmd_updates(args: Any) -> dict[str, Any] | None:
    """``updates``: the labelled update set on the raw path (and ``--default``); prints a table, or JSON."""
    from .commands import BenchError, stderr_print
    from .report import write_json, write_text

    data = Path(args.data) if args.data else DATA
    if not data.is_file():
        raise BenchError(f"update set not found: {data}")
    log = stderr_print if args.json else print
    try:
        result = run_updates(args.split, data_path=data, default=args.default, conversations=args.conversations,
                             workdir=args.workdir, log=log, reuse=getattr(args, "reuse", False),
                             recall=getattr(args, "recall", None) or ())
    except (ValueError, KeyError) as exc:
        raise BenchError(f"updates: {exc}") from None
    table = format_updates(result)
    if getattr(args, "real_chat", False):
        from .commands import find_locomo
        from .real_chat_supersessions import format_real_chat, run_real_chat

        locomo = Path(args.locomo) if getattr(args, "locomo", None) else find_locomo()
        files = {"realtalk": locomo.parent / "realtalk_dev.json", "locomo": locomo}
        for f in files.values():
            if not f.is_file():
                raise BenchError(f"data not found: {f}")
        result["real_chat"] = run_real_chat(files, log=log)
        table += "\n\n" + format_real_chat(result["real_chat"])
    if args.out:
        out = Path(args.out)
        written = [write_json(out / "updates.json", result), write_text(out / "updates.md", table)]
        log("wrote " + ", ".join(str(p) for p in written))
    if args.json:
        return result
    print(table)
    if getattr(args, "show_misses", False):
        chosen = load(data).select(args.split, args.conversations)
        for path in result["paths"]:
            print(f"\nmisses, {path} path:\n" + (format_misses(result, chosen, path) or "(none)"))
    return None
