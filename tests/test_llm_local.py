"""Real local models via llama.cpp (xllamacpp); marked ``llm``. The test command installs runtime and weights,
so a missing one is a failure here, not a skip.

SmolLM2-135M (fast, nonsense content, valid JSON) covers the plumbing; a Qwen model covers one content check.
Generation budgets are kept tiny so the module runs in well under a minute on 2 CPU cores.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Literal

import pytest
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, Field

from hindsight_core.llm import (
    LLM,
    LOCAL_MODELS,
    ChatModelLLM,
    LocalLLM,
    LocalLLMServer,
    MalformedOutputError,
    OpenAICompatibleLLM,
    default_llm,
    ensure_gguf,
    get_local_server,
    shutdown_local_servers,
)

pytestmark = pytest.mark.llm



def _require_model(name: str) -> None:
    """Assemble (once) and verify the model's GGUF; raises LLMError naming the pip command if absent."""
    ensure_gguf(LOCAL_MODELS[name])


@pytest.fixture(scope="module", autouse=True)
def _stop_servers_after_module() -> Iterator[None]:
    yield
    shutdown_local_servers()  # free the models' memory for the rest of the test session


@pytest.fixture(scope="module")
def smol() -> LocalLLM:
    _require_model("smollm2-135m")
    return LocalLLM("smollm2-135m", max_tokens=96).start()


class Fruits(BaseModel):
    """A bounded list: small models loop forever on unbounded ones."""

    fruits: list[str] = Field(max_length=3)


class Person(BaseModel):
    """One team member."""

    name: str
    role: Literal["engineer", "doctor", "teacher", "other"]


class Team(BaseModel):
    """Nested model: exercises ``$defs``/``$ref`` and ``enum`` in the grammar."""

    members: list[Person] = Field(min_length=1, max_length=2)


class Place(BaseModel):
    """Where someone lives."""

    city: str = Field(description="the city the person lives in now")


FRUIT_PROMPT = [
    {"role": "system", "content": "Answer with JSON only."},
    {"role": "user", "content": "List ten fruits."},
]


def _get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return resp.status, resp.read()


def test_server_runs_on_loopback_free_port(smol: LocalLLM) -> None:
    server = smol.server
    assert server.running
    assert server.base_url.startswith("http://127.0.0.1:")
    assert 0 < server.port < 65536
    assert _get(server.base_url + "/health")[0] == 200
    models = json.loads(_get(server.openai_base_url + "/models")[1])
    assert [m["id"] for m in models["data"]] == ["smollm2-135m"]


def test_structured_output_respects_max_items(smol: LocalLLM) -> None:
    assert isinstance(smol, LLM)
    out = smol.generate(FRUIT_PROMPT, Fruits)
    assert isinstance(out, Fruits)
    assert len(out.fruits) <= 3  # the grammar honours maxItems, so validation passes


def test_nested_schema_with_refs_and_enums(smol: LocalLLM) -> None:
    messages = [
        {"role": "user", "content": "Ann is an engineer and Bo is a doctor. Return the team as JSON."}
    ]
    team = smol.generate(messages, Team)
    assert 1 <= len(team.members) <= 2
    assert all(m.role in {"engineer", "doctor", "teacher", "other"} for m in team.members)


def test_truncated_output_is_malformed_with_raw(smol: LocalLLM) -> None:
    with pytest.raises(MalformedOutputError, match="max_tokens") as info:
        smol.generate(FRUIT_PROMPT, Fruits, max_tokens=3)
    assert info.value.raw  # what the model did say is kept


async def test_async_generate_concurrently(smol: LocalLLM) -> None:
    outs = await asyncio.gather(smol.agenerate(FRUIT_PROMPT, Fruits), smol.agenerate(FRUIT_PROMPT, Fruits))
    assert all(isinstance(o, Fruits) and len(o.fruits) <= 3 for o in outs)


def test_instances_share_one_server(smol: LocalLLM) -> None:
    other = LocalLLM("smollm2-135m")
    assert other.server is smol.server
    assert get_local_server("smollm2-135m") is smol.server
    assert other.generate(FRUIT_PROMPT, Fruits, max_tokens=64).fruits is not None


def test_standalone_server_context_manager(smol: LocalLLM) -> None:
    path = ensure_gguf(LOCAL_MODELS["smollm2-135m"])
    with LocalLLMServer(path, alias="tmp-smol", n_ctx=1024, n_parallel=1) as server:
        assert server.port != smol.server.port
        url = server.base_url
        assert _get(url + "/health")[0] == 200
        llm = OpenAICompatibleLLM(server.openai_base_url, "tmp-smol", max_retries=0)
        assert isinstance(llm.generate(FRUIT_PROMPT, Fruits, max_tokens=64), Fruits)
    assert not server.running
    with pytest.raises(urllib.error.URLError):
        _get(url + "/health")


def test_default_llm_against_local_endpoint(smol: LocalLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_LLM_BASE_URL", smol.server.openai_base_url)
    monkeypatch.setenv("HINDSIGHT_LLM_MODEL", "smollm2-135m")
    llm = default_llm()
    assert isinstance(llm, OpenAICompatibleLLM)
    assert len(llm.generate(FRUIT_PROMPT, Fruits, max_tokens=64).fruits) <= 3


def test_langchain_chat_openai_adapter(smol: LocalLLM) -> None:
    chat = ChatOpenAI(base_url=smol.server.openai_base_url, api_key="x", model="smollm2-135m", max_retries=0)
    llm = ChatModelLLM(chat)
    out = llm.generate(FRUIT_PROMPT, Fruits, max_tokens=64)
    assert isinstance(out, Fruits) and len(out.fruits) <= 3
    # max_tokens reaches the server through the copied model: 3 tokens cannot close the JSON.
    with pytest.raises(MalformedOutputError) as info:
        llm.generate(FRUIT_PROMPT, Fruits, max_tokens=3)
    assert info.value.raw


async def test_langchain_chat_openai_adapter_async(smol: LocalLLM) -> None:
    chat = ChatOpenAI(base_url=smol.server.openai_base_url, api_key="x", model="smollm2-135m", max_retries=0)
    out = await ChatModelLLM(chat).agenerate(FRUIT_PROMPT, Fruits, max_tokens=64)
    assert len(out.fruits) <= 3


@pytest.mark.parametrize("model", ["qwen2.5-0.5b", "qwen2.5-1.5b"])
def test_qwen_extracts_city(model: str) -> None:
    _require_model(model)
    llm = LocalLLM(model)
    messages = [
        {"role": "system", "content": "Extract where the person lives now. Answer in JSON."},
        {
            "role": "user",
            "content": "I grew up in Porto, but since last spring I have lived in Lisbon with my sister.",
        },
    ]
    place = llm.generate(messages, Place, max_tokens=24)
    assert place.city.strip().lower().startswith("lisbo")  # Lisbon, or Lisboa in Portuguese


class Story(BaseModel):
    text: str


def test_stopping_the_server_waits_for_an_answer_in_flight(smol: LocalLLM) -> None:
    """A background job's model call that ``Hindsight.close`` abandoned is still in flight when the process exits:
    releasing llama.cpp's server in the middle of an answer never returned, so the process could not exit. Stopping
    it now waits for the answer (bounded by its ``max_tokens``), then the next call starts a fresh server."""
    import threading
    import time

    outcome: list[object] = []
    done = threading.Event()

    def call() -> None:
        try:
            outcome.append(smol.generate([{"role": "user", "content": "Write a long story about a dragon."}], Story,
                                         max_tokens=200))
        except Exception as exc:  # cut off by max_tokens is fine: the call ended
            outcome.append(exc)
        done.set()

    server = smol.server
    threading.Thread(target=call, daemon=True).start()
    deadline = time.monotonic() + 30
    while server._in_flight == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server._in_flight == 1
    stopper = threading.Thread(target=shutdown_local_servers, daemon=True)
    stopper.start()
    stopper.join(120)
    assert not stopper.is_alive() and done.is_set() and outcome and not server.running
    assert isinstance(smol.generate(FRUIT_PROMPT, Fruits, max_tokens=64), Fruits)
