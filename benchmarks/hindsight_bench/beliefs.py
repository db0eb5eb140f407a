"""What the bank believes: the bundled model's facts on real conversations, labelled by reading, against the checks.

``hindsight bench beliefs`` (data: ``data/beliefs.jsonl``, written for the project). The set holds, for sessions of
the dev data (LoCoMo's dev half and ``realtalk_dev.json``), every model answer the facts job got for each prompt
window (recorded with the bundled Qwen2.5-Coder-1.5B by ``bench llm-vs-raw``), and a label for each fact the
extractor made of them, given by reading the fact beside the conversation:

* ``true``: the conversation says it, of that person, at that time;
* ``wrong``: with the kind, ``speaker`` (one person's words given to another), ``content`` (invented, distorted, or
  a claim made from a question), ``date`` (a time no message states) or ``citation`` (true, but no message it cites
  says it; ``says`` lists the ones that do);
* ``trivial``: true but empty: a greeting, a dialogue move ("Kevin asks Paola about her day"), a quote with the
  speaker's name in front, a fact about an unresolved "it".

Replaying (the default, no model) feeds the recorded answers through today's extractor and today's checks
(``extract/grounding``), exactly as the facts job does, and prints for each split: the stored facts' precision (true
share), their wrong and trivial shares, the share of true facts the checks reject, and citation accuracy. ``--live``
asks the model again instead (facts the labels do not cover are counted apart). Conversations are split dev/test
(fixed before the labels were written); the checks' thresholds are chosen on dev; test is the headline.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hindsight_core.cli.formats import Session, locomo_sessions
from hindsight_core.extract.grounding import FactChecker, GroundingReport, source_lines
from hindsight_core.llm.base import LLM

from .report import md_table

DATA = Path(__file__).resolve().parent / "data" / "beliefs.jsonl"
LABELS = ("true", "wrong", "trivial")
WRONG_KINDS = ("speaker", "content", "date", "citation")
_ANNOTATION = re.compile(r"\s\((?:[^()]*?\b\d{4})\)")


@dataclass
class BeliefSet:
    """The labelled set: recorded model answers per session, and labels per fact (by the session and its text); the
    model's observations (the messages the check reads, by id, and the summary) and labels per sentence."""

    meta: dict[str, Any]
    sessions: list[dict[str, Any]]
    labels: dict[tuple[str, str], dict[str, Any]]
    observations: list[dict[str, Any]] = field(default_factory=list)
    sentence_labels: dict[tuple[str, str], bool] = field(default_factory=dict)


def load(path: Path = DATA) -> BeliefSet:
    """Read ``beliefs.jsonl`` (one ``_meta`` row, then ``session`` and ``fact`` rows)."""
    meta: dict[str, Any] = {}
    sessions: list[dict[str, Any]] = []
    labels: dict[tuple[str, str], dict[str, Any]] = {}
    observations: list[dict[str, Any]] = []
    sentence_labels: dict[tuple[str, str], bool] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if "_meta" in row:
            meta = row["_meta"]
        elif row.get("kind") == "session":
            sessions.append(row)
        elif row.get("kind") == "fact":
            labels[(row["session"], fact_key(row["text"]))] = row
        elif row.get("kind") == "observation":
            observations.append(row)
        elif row.get("kind") == "observation_sentence":
            sentence_labels[(row["key"], " ".join(row["text"].split()))] = bool(row["supported"])
    return BeliefSet(meta, sessions, labels, observations, sentence_labels)


def fact_key(text: str) -> str:
    """A fact's text as labels are keyed: our date annotations ("(7 May 2023)") off, spacing and case folded."""
    return " ".join(_ANNOTATION.sub("", text).split()).casefold()


def session_messages(data_file: Path, session_id: str) -> Session:
    """The messages of one session (``<sample_id>:session_<n>``) read from a LoCoMo-format data file."""
    sample_id = session_id.rsplit(":", 1)[0]
    samples = json.loads(data_file.read_text(encoding="utf-8"))
    sample = next((s for s in samples if s["sample_id"] == sample_id), None)
    if sample is None:
        raise ValueError(f"{data_file} has no conversation {sample_id!r}")
    found = next((s for s in locomo_sessions(sample) if s.document_id == session_id), None)
    if found is None:
        raise ValueError(f"{data_file} has no session {session_id!r}")
    return found


def session_row(session_id: str, dataset: str, split: str, call_log: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The ``session`` row of the set for one recorded session (``extraction.json``'s ``call_log``)."""
    return {"kind": "session", "session": session_id, "dataset": dataset, "split": split,
            "calls": [{"window": c["window"], "answer": c["answer"]} for c in call_log]}


def extract_session(row: dict[str, Any], session: Session, checker: FactChecker,
                    llm: LLM | None = None) -> tuple[GroundingReport, list[Any]]:
    """The facts today's extractor makes of the session's recorded answers (or of ``llm``'s), and the checks'
    verdicts on them: (report, every fact before the checks)."""
    from hindsight_core.extract.llm_extractor import LLMExtractor
    from hindsight_core.models import Message

    from .llm_vs_raw import ReplayLLM

    model = llm or ReplayLLM({row["session"]: {"llm": {"call_log": row["calls"]}}})
    messages = [Message.model_validate(m) for m in session.messages]
    when = session.timestamp
    if when is None:
        raise ValueError(f"session {row['session']} has no date")
    facts = LLMExtractor(model).extract(messages, document_time=when)
    return checker.check(facts, source_lines(messages, when)), facts


def score(sets: Sequence[tuple[dict[str, Any], GroundingReport, list[Any]]],
          labels: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    """Precision and losses of the checks over sessions: (session row, report, facts before the checks)."""
    stored: Counter[str] = Counter()
    before: Counter[str] = Counter()
    wrong_kinds: Counter[str] = Counter()
    true_rejected = 0
    cited_right = cited = unlabelled = 0
    rejected_examples: list[dict[str, Any]] = []
    kept_bad: list[dict[str, Any]] = []
    for row, report, facts in sets:
        for fact in facts:
            label = labels.get((row["session"], fact_key(fact.text)))
            if label is not None:
                before[label["label"]] += 1
        for fact in report.kept:
            label = labels.get((row["session"], fact_key(report.trimmed.get(fact.text, fact.text))))
            if label is None:
                unlabelled += 1
                continue
            kind = label["label"]
            if kind == "wrong" and label.get("wrong") == "citation" and set(fact.sources) & set(label.get("says", [])):
                kind = "true"  # the checks re-pointed it to a message that says it
            stored[kind] += 1
            if kind == "wrong":
                wrong_kinds[label.get("wrong") or "?"] += 1
            if kind != "true":
                kept_bad.append({"session": row["session"], "text": fact.text, "label": label["label"],
                                 "wrong": label.get("wrong"), "sources": fact.sources})
            if kind == "true" and label.get("says"):
                cited += 1
                cited_right += bool(set(fact.sources) & set(label["says"]))
        for rejection in report.rejected:
            label = labels.get((row["session"], fact_key(rejection.text)))
            if label is not None and label["label"] == "true":
                true_rejected += 1
                rejected_examples.append({"session": row["session"], "text": rejection.text,
                                          "reason": rejection.reason, "detail": rejection.detail})
    n = sum(stored.values())
    true_before = before["true"]
    return {
        "facts_labelled": sum(before.values()), "before_checks": dict(before), "stored": n,
        "unlabelled_stored": unlabelled,
        "precision": stored["true"] / n if n else None,
        "wrong_share": stored["wrong"] / n if n else None, "trivial_share": stored["trivial"] / n if n else None,
        "wrong_kinds": dict(wrong_kinds),
        "true_kept_share": 1 - true_rejected / true_before if true_before else None,
        "true_rejected": true_rejected, "citation_accuracy": cited_right / cited if cited else None,
        "true_rejected_examples": rejected_examples, "stored_not_true": kept_bad,
    }


def message_texts(data_file: Path) -> dict[tuple[str, str], str]:
    """(conversation, message id) -> the message as a raw memory holds it (``Speaker: text``)."""
    out: dict[tuple[str, str], str] = {}
    for sample in json.loads(data_file.read_text(encoding="utf-8")):
        for session in locomo_sessions(sample):
            for m in session.messages:
                # Whitespace runs are one space, as retain stores them.
                out[(str(sample["sample_id"]), str(m["id"]))] = " ".join(f"{m['speaker']}: {m['text']}".split())
    return out


def observation_lines(row: dict[str, Any], texts: dict[tuple[str, str], str]) -> tuple[list[tuple[str, str]], set[str]]:
    """The messages an observation's check read, rebuilt from the data file, and the ids of those about the entity."""
    conversation = row["key"].split("|", 1)[0]
    lines: list[tuple[str, str]] = []
    about: set[str] = set()
    for i, line in enumerate(row["lines"]):
        text = " ".join(texts[(conversation, s)] for s in line["sources"])
        lines.append((str(i), f"[{line['date']}] {text}"))
        if line["about"]:
            about.add(str(i))
    return lines, about


def score_observations(rows: Sequence[dict[str, Any]], labels: dict[tuple[str, str], bool],
                       texts: dict[tuple[str, str], str], embed: Callable[[Sequence[str]], Any] | None,
                       ) -> dict[str, Any]:
    """The model's observation sentences against their labels, before and after today's grounded check."""
    from hindsight_core.observations.support import check_grounded

    before: Counter[bool] = Counter()
    after: Counter[bool] = Counter()
    unlabelled = 0
    kept_unsupported: list[dict[str, Any]] = []
    for row in rows:
        lines, about = observation_lines(row, texts)
        check = check_grounded(row["summary"], lines, row["entity"], aliases=row.get("aliases", []),
                               about_ids=about, embed=embed, own_words=True)  # as the job checks
        for sentence in check.sentences:
            label = labels.get((row["key"], " ".join(sentence.text.split())))
            if label is None:
                unlabelled += 1
                continue
            before[label] += 1
            if sentence.supported:
                after[label] += 1
                if not label:
                    kept_unsupported.append({"key": row["key"], "text": sentence.text})
    n_before, n_after = sum(before.values()), sum(after.values())
    return {"observations": len(rows), "sentences": n_before, "unlabelled": unlabelled,
            "supported_before": before[True] / n_before if n_before else None, "kept": n_after,
            "supported_after": after[True] / n_after if n_after else None,
            "supported_kept_share": after[True] / before[True] if before[True] else None,
            "kept_unsupported": kept_unsupported}


def score_extractive(sets: Sequence[tuple[dict[str, Any], GroundingReport, list[Any]]], belief_set: BeliefSet,
                     data_files: dict[str, Path], embed: Callable[[Sequence[str]], Any] | None,
                     max_facts: int = 40) -> dict[str, Any]:
    """The default observations (``observation_mode="extractive"``) of the labelled observations' entities, made as
    the job makes them from the facts the checks stored on the labelled sessions of their conversation, each
    sentence scored by its fact's label: ``true`` and ``trivial`` are supported (trivial counted apart), ``wrong``
    is not."""
    from hindsight_core.observations.extract import extractive_check
    from hindsight_core.observations.support import grounded_facts, mentions

    facts_of: dict[str, list[tuple[str, str, dict[str, Any] | None, list[str], list[str]]]] = {}
    lines_of: dict[str, list[tuple[str, str]]] = {}
    for row, report, _ in sets:
        conversation = row["session"].rsplit(":", 1)[0]
        session = session_messages(data_files[row["dataset"]], row["session"])
        when = session.timestamp
        assert when is not None
        lines_of.setdefault(conversation, []).extend(
            (str(m["id"]), f"[{when.day} {when:%B %Y}] " + " ".join(f"{m['speaker']}: {m['text']}".split()))
            for m in session.messages)
        for fact in report.kept:
            label = belief_set.labels.get((row["session"], fact_key(report.trimmed.get(fact.text, fact.text))))
            if label is not None and label["label"] == "wrong" and label.get("wrong") == "citation" \
                    and set(fact.sources) & set(label.get("says", [])):
                label = {**label, "label": "true"}  # re-pointed to a message that says it
            facts_of.setdefault(conversation, []).append(
                (f"{row['session']}#{len(facts_of.get(conversation, []))}", fact.text, label,
                 [e.name for e in fact.entities], list(fact.sources)))
    counts: Counter[str] = Counter()
    entities = sentences = 0
    kept_wrong: list[dict[str, Any]] = []
    for obs in belief_set.observations:
        if obs["split"] not in {r["split"] for r, _, _ in sets}:
            continue
        conversation, name = obs["key"].split("|", 1)
        names = [name, *obs.get("aliases", [])]
        folded = {n.casefold() for n in names}
        # The entity's facts, newest first (later sessions, later in a session), at most max_facts, as the job reads.
        candidates = [f for f in reversed(facts_of.get(conversation, []))
                      if folded & {e.casefold() for e in f[3]} or mentions(f[1], names)][:max_facts]
        if not candidates:
            continue
        entities += 1
        lines = lines_of[conversation]
        mentioned = {i for i, text in lines if mentions(text, names)}
        cited = {c for f in candidates for c in f[4]}
        kept, _ = grounded_facts([(f[0], f[1]) for f in candidates], lines, name, aliases=names[1:],
                                 about_ids=mentioned | cited, embed=embed)
        by_id = {f[0]: f for f in candidates}
        shown = [by_id[i] for i, _ in kept]
        about = mentioned | {c for f in shown for c in f[4]}
        _, check = extractive_check([(f[0], f[1]) for f in shown], lines, name, aliases=names[1:], about_ids=about,
                                    embed=embed)
        for sentence in check.kept:
            sentences += 1
            text = sentence.text.rstrip(".")
            fact = next((f for f in shown if text and text in " ".join(f[1].split())), None)
            label = fact[2] if fact is not None else None
            kind = label["label"] if label is not None else "unlabelled"
            counts[kind] += 1
            if kind == "wrong":
                kept_wrong.append({"key": obs["key"], "text": sentence.text, "wrong": label and label.get("wrong")})
    labelled = counts["true"] + counts["trivial"] + counts["wrong"]
    return {"entities": entities, "sentences": sentences, "unlabelled": counts["unlabelled"],
            "supported": (counts["true"] + counts["trivial"]) / labelled if labelled else None,
            "trivial_share": counts["trivial"] / labelled if labelled else None,
            "wrong_share": counts["wrong"] / labelled if labelled else None, "kept_wrong": kept_wrong}


def run_beliefs(
    split: str = "all", *, data_files: dict[str, Path], path: Path = DATA, live: LLM | None = None,
    embed: Callable[[Sequence[str]], Any] | None = None, checker: FactChecker | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Replay (or with ``live``, re-ask) every session of ``split`` and score the checks against the labels.

    ``data_files`` maps a dataset name of the set (``locomo``, ``realtalk``) to its data file (read, never copied).
    """
    belief_set = load(path)
    checker = checker or FactChecker(embed)
    by_split: dict[str, list[tuple[dict[str, Any], GroundingReport, list[Any]]]] = {}
    for row in belief_set.sessions:
        if split != "all" and row["split"] != split:
            continue
        data_file = data_files.get(row["dataset"])
        if data_file is None:
            raise ValueError(f"no data file given for {row['dataset']!r}")
        report, facts = extract_session(row, session_messages(data_file, row["session"]), checker, live)
        by_split.setdefault(row["split"], []).append((row, report, facts))
    out: dict[str, Any] = {"benchmark": "beliefs", "mode": "live" if live is not None else "replay",
                           "splits": {name: score(rows, belief_set.labels) for name, rows in sorted(by_split.items())}}
    if belief_set.observations:
        texts: dict[tuple[str, str], str] = {}
        for dataset in {row["dataset"] for row in belief_set.observations}:
            texts.update(message_texts(data_files[dataset]))
        out["observations"] = {
            name: score_observations([r for r in belief_set.observations if r["split"] == name],
                                     belief_set.sentence_labels, texts, embed)
            for name in sorted({r["split"] for r in belief_set.observations}) if split in ("all", name)}
    if belief_set.observations:
        out["extractive"] = {name: score_extractive(rows, belief_set, data_files, embed)
                             for name, rows in sorted(by_split.items())}
    log(format_beliefs(out))
    return out


def export_sessions(workdir: Path, dataset: str, splits: dict[str, str],
                    sessions: Sequence[str]) -> list[dict[str, Any]]:
    """``session`` rows for the set from a ``bench llm-vs-raw --workdir`` recording: ``splits`` maps a conversation
    to its split of the set, ``sessions`` names the sessions taken."""
    rows = []
    for session_id in sessions:
        sample_id = session_id.rsplit(":", 1)[0]
        record = json.loads((workdir / sample_id / "extraction.json").read_text(encoding="utf-8"))
        rows.append(session_row(session_id, dataset, splits[sample_id], record[session_id]["llm"]["call_log"]))
    return rows


def to_label(row: dict[str, Any], session: Session, facts: Sequence[Any]) -> str:
    """One session as a labeller reads it: the messages with ids, speakers and time, then each fact the extractor
    made (before the checks) with the ids it cites."""
    lines = [f"## {row['session']} ({row['dataset']}, {row['split']}), said on {session.timestamp:%Y-%m-%d %H:%M}", ""]
    for m in session.messages:
        lines.append(f"[{m.get('id')}] {m.get('speaker')}: {m.get('text')}")
    lines += ["", "Facts:"]
    for fact in facts:
        occurred = "" if fact.occurred_start is None else f" [occurred {fact.occurred_start:%Y-%m-%d}" + (
            f"..{fact.occurred_end:%Y-%m-%d}]" if fact.occurred_end and fact.occurred_end.date()
            != fact.occurred_start.date() else "]")
        lines.append(f"- {json.dumps(fact.text)} cites {fact.sources}{occurred}")
    return "\n".join(lines)


def format_beliefs(result: dict[str, Any]) -> str:
    """Markdown: per split, what the checks kept and lost."""
    def pct(v: float | None) -> str:
        return "" if v is None else f"{100 * v:.1f}%"

    rows = [[name, s["facts_labelled"], s["stored"], pct(s["precision"]), pct(s["wrong_share"]),
             pct(s["trivial_share"]), pct(s["true_kept_share"]), pct(s["citation_accuracy"]), s["unlabelled_stored"]]
            for name, s in result["splits"].items()]
    lines = [f"Beliefs ({result['mode']}): the facts the checks store, against labels given by reading", "",
             *md_table(["split", "labelled", "stored", "true (precision)", "wrong", "trivial", "true facts kept",
                        "citations right", "stored unlabelled"], rows)]
    for name, s in result["splits"].items():
        lines += ["", f"{name}: before the checks {s['before_checks']}; stored wrong by kind {s['wrong_kinds']}"]
    if result.get("observations"):
        rows = [[name, o["observations"], o["sentences"], pct(o["supported_before"]), o["kept"],
                 pct(o["supported_after"]), pct(o["supported_kept_share"])]
                for name, o in result["observations"].items()]
        lines += ["", "Observation sentences the bundled model wrote, against labels given by reading:", "",
                  *md_table(["split", "observations", "sentences", "supported (all)", "kept by the check",
                             "supported (kept)", "supported sentences kept"], rows)]
    if result.get("extractive"):
        rows = [[name, e["entities"], e["sentences"], pct(e["supported"]), pct(e["wrong_share"]),
                 pct(e["trivial_share"]), e["unlabelled"]] for name, e in result["extractive"].items()]
        lines += ["", "Observations as the job writes them by default (observation_mode extractive: the entity's "
                  "checked facts), each sentence scored by its fact's label:", "",
                  *md_table(["split", "entities", "sentences", "supported", "wrong", "trivial (supported)",
                             "unlabelled"], rows)]
    return "\n".join(lines)
