"""Question answering benchmark: answers by ``reflect``, scored correct/wrong by a separate judge model.

Datasets: LoCoMo (each conversation in its own bank; adversarial category 5 skipped, as mem0's harness
does) and LongMemEval (one bank per question; every turn retained, abstention questions included). The
judge prompts are the published ones: for LoCoMo mem0's LLM-judge prompt (``evaluation/metrics/
llm_judge.py``, Apache-2.0), for LongMemEval the per-type prompts of ``src/evaluation/evaluate_qa.py``
(MIT). Our models give structured output, so the judge answers in a one-field JSON object instead of
free text; the prompts themselves are unchanged.

Both models are OpenAI-compatible endpoints (``endpoint_llm``), the bundled local model by default. Tokens
are the endpoint's own usage counts (prompt + completion) per question, for the answer and the judge.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from hindsight_core.llm.base import LLM_SCHEMA_CONFIG, ChatMessage, T
from hindsight_core.llm.openai_compat import OpenAICompatibleLLM

from .backends import OpenHindsight, open_embedded
from .longmemeval import is_abstention, parse_lme_date, question_time, turn_id
from .metrics import latency_stats, mean_percent
from .report import bar_plot, md_table, run_info, write_json, write_text

DEFAULT_LOCAL_MODEL = "qwen2.5-1.5b"
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}

# mem0 evaluation/metrics/llm_judge.py, ACCURACY_PROMPT (LoCoMo), unchanged.
LOCOMO_JUDGE_PROMPT = "\n".join([
    "",
    "Your task is to label an answer to a question as ’CORRECT’ or ’WRONG’. You will be given the following data:",
    "    (1) a question (posed by one user to another user), ",
    "    (2) a ’gold’ (ground truth) answer, ",
    "    (3) a generated answer",
    "which you will score as CORRECT/WRONG.",
    "",
    "The point of the question is to ask about something one user should know about the other user "
    "based on their prior conversations.",
    "The gold answer will usually be a concise and short answer that includes the referenced topic, for example:",
    "Question: Do you remember what I got the last time I went to Hawaii?",
    "Gold answer: A shell necklace",
    "The generated answer might be much longer, but you should be generous with your grading - as "
    "long as it touches on the same topic as the gold answer, it should be counted as CORRECT. ",
    "",
    "For time related questions, the gold answer will be a specific date, month, year, etc. The "
    'generated answer might be much longer or use relative time references (like "last Tuesday" or '
    '"next month"), but you should be generous with your grading - as long as it refers to the same '
    "date or time period as the gold answer, it should be counted as CORRECT. Even if the format "
    'differs (e.g., "May 7th" vs "7 May"), consider it CORRECT if it\'s the same date.',
    "",
    "Now it’s time for the real question:",
    "Question: {question}",
    "Gold answer: {gold_answer}",
    "Generated answer: {generated_answer}",
    "",
    "First, provide a short (one sentence) explanation of your reasoning, then finish with CORRECT or WRONG. ",
    "Do NOT include both CORRECT and WRONG in your response, or it will break the evaluation script.",
    "",
    'Just return the label CORRECT or WRONG in a json format with the key as "label".',
    "",
])

# LongMemEval src/evaluation/evaluate_qa.py, get_anscheck_prompt, unchanged.
_LME_STANDARD = ("I will give you a question, a correct answer, and a response from a model. Please answer yes if "
                 "the response contains the correct answer. Otherwise, answer no. If the response is equivalent to "
                 "the correct answer or contains all the intermediate steps to get the correct answer, you should "
                 "also answer yes. If the response only contains a subset of the information required by the "
                 "answer, answer no. ")
LME_JUDGE_PROMPTS = {
    "standard": _LME_STANDARD + "\n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\nIs the model "
                                "response correct? Answer yes or no only.",
    "temporal-reasoning": _LME_STANDARD + "In addition, do not penalize off-by-one errors for the number of days. "
                          "If the question asks for the number of days/weeks/months, etc., and the model makes "
                          "off-by-one errors (e.g., predicting 19 days when the answer is 18), the model's response "
                          "is still correct. \n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\nIs the "
                          "model response correct? Answer yes or no only.",
    "knowledge-update": "I will give you a question, a correct answer, and a response from a model. Please answer "
                        "yes if the response contains the correct answer. Otherwise, answer no. If the response "
                        "contains some previous information along with an updated answer, the response should be "
                        "considered as correct as long as the updated answer is the required answer.\n\nQuestion: "
                        "{}\n\nCorrect Answer: {}\n\nModel Response: {}\n\nIs the model response correct? Answer "
                        "yes or no only.",
    "single-session-preference": "I will give you a question, a rubric for desired personalized response, and a "
                                 "response from a model. Please answer yes if the response satisfies the desired "
                                 "response. Otherwise, answer no. The model does not need to reflect all the points "
                                 "in the rubric. The response is correct as long as it recalls and utilizes the "
                                 "user's personal information correctly.\n\nQuestion: {}\n\nRubric: {}\n\nModel "
                                 "Response: {}\n\nIs the model response correct? Answer yes or no only.",
    "abstention": "I will give you an unanswerable question, an explanation, and a response from a model. Please "
                  "answer yes if the model correctly identifies the question as unanswerable. The model could say "
                  "that the information is incomplete, or some other information is given but the asked "
                  "information is not.\n\nQuestion: {}\n\nExplanation: {}\n\nModel Response: {}\n\nDoes the model "
                  "correctly identify the question as unanswerable? Answer yes or no only.",
}


class LocomoVerdict(BaseModel):
    """The LoCoMo judge's output: a one-sentence reason, then the label."""

    model_config = LLM_SCHEMA_CONFIG
    reasoning: str
    label: Literal["CORRECT", "WRONG"]


class YesNoVerdict(BaseModel):
    """The LongMemEval judge's output."""

    model_config = LLM_SCHEMA_CONFIG
    answer: Literal["yes", "no"]


def lme_judge_prompt(question_type: str, question: str, answer: str, response: str, abstention: bool) -> str:
    """LongMemEval's judge prompt for a question type (``abstention`` picks the unanswerable prompt)."""
    if abstention:
        key = "abstention"
    elif question_type in ("single-session-user", "single-session-assistant", "multi-session"):
        key = "standard"
    elif question_type in LME_JUDGE_PROMPTS:
        key = question_type
    else:
        raise ValueError(f"no LongMemEval judge prompt for question type {question_type!r}")
    return LME_JUDGE_PROMPTS[key].format(question, answer, response)


def locomo_judge_prompt(question: str, gold: str, answer: str) -> str:
    """mem0's LoCoMo judge prompt filled in."""
    return LOCOMO_JUDGE_PROMPT.format(question=question, gold_answer=gold, generated_answer=answer)


# ---------------------------------------------------------------------------------------------------
# models with token accounting
# ---------------------------------------------------------------------------------------------------
class UsageMeter:
    """Thread-safe running totals of tokens reported by an endpoint."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.prompt = 0
        self.completion = 0
        self.calls = 0

    def record(self, usage: Any) -> None:
        """Add one completion's ``usage`` (missing counts are taken as 0)."""
        with self._lock:
            self.calls += 1
            self.prompt += int(getattr(usage, "prompt_tokens", 0) or 0) if usage is not None else 0
            self.completion += int(getattr(usage, "completion_tokens", 0) or 0) if usage is not None else 0

    def snapshot(self) -> tuple[int, int, int]:
        """(prompt, completion, calls) so far."""
        with self._lock:
            return self.prompt, self.completion, self.calls


class MeteredLLM(OpenAICompatibleLLM):
    """An ``OpenAICompatibleLLM`` that records each completion's token usage in ``meter``."""

    def __init__(self, *args: Any, meter: UsageMeter | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.meter = meter or UsageMeter()

    def _parse_completion(self, completion: Any, schema: type[T]) -> T:
        self.meter.record(getattr(completion, "usage", None))  # counted even if the output fails to parse
        return super()._parse_completion(completion, schema)


class LocalMeteredLLM:
    """The bundled local model (``LocalLLM``'s shared llama.cpp server) with token accounting."""

    def __init__(self, model: str = DEFAULT_LOCAL_MODEL, *, timeout: float = 600.0, max_tokens: int = 1024) -> None:
        from hindsight_core.llm.local import LocalLLM

        self.local = LocalLLM(model, timeout=timeout, max_tokens=max_tokens)
        self.meter = UsageMeter()
        self.timeout = timeout
        self.max_tokens = max_tokens
        self._client: MeteredLLM | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """``local/<model>``."""
        return self.local.name

    def client(self) -> MeteredLLM:
        """The metered client of the running server (started on first use)."""
        server = self.local.server
        with self._lock:
            if self._client is None or self._client.base_url != server.openai_base_url:
                self._client = MeteredLLM(server.openai_base_url, self.local.spec.name, timeout=self.timeout,
                                          max_tokens=self.max_tokens, max_retries=0, name=self.name,
                                          meter=self.meter)
            return self._client

    def generate(self, messages: Sequence[ChatMessage], schema: type[T], *, max_tokens: int | None = None,
                 temperature: float = 0.0) -> T:
        """Structured output from the local model."""
        return self.client().generate(messages, schema, max_tokens=max_tokens, temperature=temperature)

    async def agenerate(self, messages: Sequence[ChatMessage], schema: type[T], *, max_tokens: int | None = None,
                        temperature: float = 0.0) -> T:
        """Async twin of ``generate`` (the first-use server start runs in a worker thread)."""
        import asyncio

        client = await asyncio.to_thread(self.client)
        return await client.agenerate(messages, schema, max_tokens=max_tokens, temperature=temperature)


def endpoint_llm(url: str | None, model: str | None, api_key: str | None = None) -> MeteredLLM | LocalMeteredLLM:
    """An answer or judge model: an OpenAI-compatible endpoint when ``url`` is given (``model`` required),
    else the local model named ``model`` (default qwen2.5-1.5b). Both count tokens in ``.meter``."""
    if url:
        if not model:
            from hindsight_core.errors import LLMError

            raise LLMError(f"an endpoint URL ({url}) needs a model name")
        key = api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
        return MeteredLLM(url, model, key, timeout=600.0)
    return LocalMeteredLLM(model or DEFAULT_LOCAL_MODEL)


# ---------------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------------
def _delta(meter: UsageMeter, before: tuple[int, int, int]) -> dict[str, int]:
    p, c, n = meter.snapshot()
    return {"prompt": p - before[0], "completion": c - before[1], "calls": n - before[2],
            "total": p - before[0] + c - before[1]}


def judge_answer(judge: Any, dataset: str, item: Mapping[str, Any], answer: str) -> tuple[bool, str]:
    """Ask the judge; returns (correct, its reasoning or raw verdict)."""
    if dataset == "locomo":
        prompt = locomo_judge_prompt(item["question"], item["gold"], answer)
        verdict = judge.generate([{"role": "user", "content": prompt}], LocomoVerdict, max_tokens=256)
        return verdict.label == "CORRECT", verdict.reasoning
    prompt = lme_judge_prompt(item["category"], item["question"], item["gold"], answer, item["abstention"])
    yes_no = judge.generate([{"role": "user", "content": prompt}], YesNoVerdict, max_tokens=32)
    return yes_no.answer == "yes", yes_no.answer


def locomo_items(data: Sequence[Mapping[str, Any]], limit_conversations: int | None,
                 limit_questions: int | None) -> list[tuple[Mapping[str, Any], list[dict[str, Any]]]]:
    """(sample, questions) pairs: category 5 and answerless questions skipped, the question budget spread
    evenly over the conversations."""
    samples = list(data[:limit_conversations] if limit_conversations else data)
    per = math.ceil(limit_questions / len(samples)) if limit_questions and samples else None
    out = []
    left = limit_questions
    for sample in samples:
        items = []
        for qa in sample.get("qa", []):
            category = int(qa.get("category", 0))
            if category == 5 or "answer" not in qa:
                continue
            items.append({"id": f"{sample['sample_id']}:{len(items)}", "question": str(qa["question"]),
                          "gold": str(qa["answer"]), "category": LOCOMO_CATEGORIES.get(category, "other"),
                          "abstention": False})
            if (per is not None and len(items) >= per) or (left is not None and len(items) >= left):
                break
        if left is not None:
            left -= len(items)
        out.append((sample, items))
        if left is not None and left <= 0:
            break
    return out


def run_qa(
    dataset: Literal["locomo", "longmemeval"] | str,
    data_path: str | Path,
    *,
    answer_llm: Any,
    judge_llm: Any,
    open_hindsight: OpenHindsight = open_embedded,
    backend: str = "embedded",
    workdir: str | Path | None = None,
    limit_conversations: int | None = None,
    limit_questions: int | None = None,
    budget: int = 2000,
    extract: bool = False,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Retain, answer every question with ``reflect`` (``answer_llm``), judge it with ``judge_llm``.

    ``extract=True`` retains with the LLM extractor (slow on CPU) instead of raw messages. Reflect runs with
    the bank's default disposition and may store opinions, as in normal use.
    """
    from tqdm import tqdm

    from hindsight_core.cli.formats import locomo_sessions

    if dataset not in ("locomo", "longmemeval"):
        raise ValueError(f"unknown dataset {dataset!r}")
    data = json.loads(Path(data_path).read_text(encoding="utf-8"))
    # Models without a meter (e.g. a scripted test model) report zero tokens.
    answer_meter: UsageMeter = getattr(answer_llm, "meter", None) or UsageMeter()
    judge_meter: UsageMeter = getattr(judge_llm, "meter", None) or UsageMeter()
    records: list[dict[str, Any]] = []
    tmp = tempfile.TemporaryDirectory(prefix="hindsight-qa-") if workdir is None else None
    root = Path(workdir or tmp.name)  # type: ignore[union-attr]
    started = time.perf_counter()
    if dataset == "locomo":
        groups = locomo_items(data, limit_conversations, limit_questions)
    else:
        entries = data[:limit_questions] if limit_questions else data
        groups = [(e, [{"id": e["question_id"], "question": str(e["question"]), "gold": str(e["answer"]),
                        "category": str(e.get("question_type", "other")), "abstention": is_abstention(e)}])
                  for e in entries]
    total = sum(len(items) for _, items in groups)
    try:
        # Reflect answers questions of fact here, in prose: its one call, not the per-memory judgement of opinions.
        from hindsight_core.config import CaraSettings, Settings

        with open_hindsight(root, llm=answer_llm,
                            settings=Settings(cara=CaraSettings(reflect_judgement="in_call"))) as hs:
            bar = tqdm(total=total, desc=f"qa {dataset} [{backend}]", unit="q", disable=not progress)
            for source, items in groups:
                if not items:
                    continue
                bank_id = f"qa-{source.get('sample_id') or source.get('question_id')}"
                if bank_id in {b.id for b in hs.banks()}:
                    hs.delete_bank(bank_id)
                bank = hs.bank(bank_id)
                t = time.perf_counter()
                if dataset == "locomo":
                    sessions = locomo_sessions(source)
                    for s in sessions:
                        bank.retain(s.messages, timestamp=s.timestamp, document_id=s.document_id, extract=extract,
                                    background=False)
                    reference: Any = max(s.timestamp for s in sessions if s.timestamp is not None)
                else:
                    for sid, date, session in zip(source["haystack_session_ids"], source["haystack_dates"],
                                                  source["haystack_sessions"], strict=True):
                        msgs = [{"role": turn.get("role", "user"), "content": str(turn.get("content", "")),
                                 "id": turn_id(str(sid), n)} for n, turn in enumerate(session, start=1)]
                        if msgs:
                            bank.retain(msgs, timestamp=parse_lme_date(date), document_id=str(sid), extract=extract,
                                        background=False)
                    reference = question_time(source)
                retain_s = time.perf_counter() - t
                for item in items:
                    before = answer_meter.snapshot()
                    t = time.perf_counter()
                    reflection = bank.reflect(item["question"], budget=budget, reference_time=reference)
                    answer_s = time.perf_counter() - t
                    answer_tokens = _delta(answer_meter, before)
                    before = judge_meter.snapshot()
                    t = time.perf_counter()
                    correct, why = judge_answer(judge_llm, dataset, item, reflection.answer)
                    judge_s = time.perf_counter() - t
                    records.append({
                        **item, "answer": reflection.answer, "known": reflection.known, "correct": correct,
                        "judge_says": why, "memories": len(reflection.memories),
                        "answer_tokens": answer_tokens, "judge_tokens": _delta(judge_meter, before),
                        "answer_seconds": answer_s, "judge_seconds": judge_s, "bank_retain_seconds": retain_s,
                    })
                    bar.update(1)
                if workdir is None:  # a throwaway store: free the space (LongMemEval has one bank per question)
                    hs.delete_bank(bank_id)
            bar.close()
    finally:
        if tmp is not None:
            tmp.cleanup()
    result = summarize_qa(records)
    result.update({"benchmark": "qa", "dataset": dataset, "data": str(data_path), "backend": backend,
                   "answer_model": answer_llm.name, "judge_model": judge_llm.name, "budget": budget,
                   "extract": extract, "seconds": time.perf_counter() - started, "run": run_info(),
                   "per_question": records})
    log(format_qa(result))
    return result


def summarize_qa(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Accuracy (%), questions, mean tokens and answer latency per category and overall."""
    by: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        by[str(r["category"])].append(r)
        by["all"].append(r)
    out: dict[str, Any] = {"questions": len(records), "categories": {}}
    for cat, rs in by.items():
        out["categories"][cat] = {
            "n": len(rs),
            "accuracy": mean_percent([1.0 if r["correct"] else 0.0 for r in rs]),
            "answer_tokens_mean": sum(r["answer_tokens"]["total"] for r in rs) / len(rs),
            "judge_tokens_mean": sum(r["judge_tokens"]["total"] for r in rs) / len(rs),
            "answer_seconds": latency_stats([r["answer_seconds"] for r in rs]),
        }
    return out


def format_qa(result: Mapping[str, Any]) -> str:
    """Markdown table: accuracy, tokens per question and answer latency per category."""
    cats = result["categories"]
    order = [c for c in cats if c != "all"] + (["all"] if "all" in cats else [])
    rows = [[c, cats[c]["n"], cats[c]["accuracy"], cats[c]["answer_tokens_mean"], cats[c]["judge_tokens_mean"],
             cats[c]["answer_seconds"].get("median"), cats[c]["answer_seconds"].get("p95")] for c in order]
    head = (f"QA on {result.get('dataset')} ({result.get('backend')} backend): {result['questions']} questions, "
            f"answers by reflect with {result.get('answer_model')}, judged by {result.get('judge_model')}")
    return "\n".join([head, "", *md_table(["category", "n", "accuracy %", "answer tokens/q", "judge tokens/q",
                                           "answer median s", "answer p95 s"], rows)])


def write_qa(out_dir: str | Path, result: Mapping[str, Any]) -> list[Path]:
    """Write ``qa.json``, ``qa.md`` and ``qa_accuracy.png`` / ``qa_tokens.png``; a ``{backend: result}``
    mapping writes each backend under ``<out>/<backend>/``."""
    out = Path(out_dir)
    if "benchmark" not in result:
        return [p for name, run in result.items() for p in write_qa(out / name, run)]
    paths = [write_json(out / "qa.json", result),
             write_text(out / "qa.md", "# Question answering\n\n" + format_qa(result)
                        + "\n\nPlots: qa_accuracy.png, qa_tokens.png\n")]
    cats = result["categories"]
    order = [c for c in cats if c != "all"] + (["all"] if "all" in cats else [])
    if order:
        paths.append(bar_plot(out / "qa_accuracy.png", order, {"accuracy": [cats[c]["accuracy"] for c in order]},
                              title=f"QA accuracy ({result.get('answer_model')}, judge {result.get('judge_model')})",
                              ylabel="judged correct (%)"))
        paths.append(bar_plot(out / "qa_tokens.png", order,
                              {"answer": [cats[c]["answer_tokens_mean"] for c in order],
                               "judge": [cats[c]["judge_tokens_mean"] for c in order]},
                              title="Tokens per question", ylabel="tokens (prompt + completion)"))
    return paths
