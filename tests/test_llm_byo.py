"""Bring your own LLM: structured output through each backend, against a scripted OpenAI-compatible server.

The server (``support/openai_server.py``) answers ``/v1/chat/completions`` from a script: malformed JSON once,
then a valid answer, which proves the corrective retry of ``structured_call`` for (a) the OpenAI-compatible
backend, (b) a LlamaIndex LLM (this project's ``OpenAILikeLLM``, which sends the JSON schema, and a minimal
``CustomLLM`` that can only be prompted); (c) the bundled local model through the LlamaIndex backend (slow).
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from pydantic import BaseModel, Field
from support.openai_server import Script, scripted_server

from hindsight_core import Hindsight
from hindsight_core.errors import InvalidInputError, LLMError
from hindsight_core.llm import ChatModelLLM, LlamaIndexLLM, OpenAICompatibleLLM, make_llm
from hindsight_core.llm.structured import astructured_call, structured_call
from llama_index_hindsight import OpenAILikeLLM

GOOD = json.dumps({"city": "Boston", "year": 2026})


class Plan(BaseModel):
    """What the scripted model is asked for."""

    city: str = Field(max_length=40)
    year: int


MESSAGES: list[Any] = [{"role": "system", "content": "You extract plans."},
                       {"role": "user", "content": "Caroline will move to Boston in 2026."}]


class ScriptedCustomLLM(CustomLLM):
    """A LlamaIndex ``CustomLLM`` that posts each prompt to the scripted server (no JSON mode: prompted only)."""

    api_base: str = ""
    temperature: float = 0.7
    max_tokens: int = 64
    seen: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted-custom", is_chat_model=False)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.seen.append({"prompt": prompt, "temperature": self.temperature, "max_tokens": self.max_tokens})
        body = json.dumps({"model": "scripted-custom", "messages": [{"role": "user", "content": prompt}]}).encode()
        request = urllib.request.Request(f"{self.api_base}/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            answer = json.loads(response.read())
        return CompletionResponse(text=answer["choices"][0]["message"]["content"])

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError


@pytest.fixture()
def server() -> Iterator[tuple[str, Script]]:
    with scripted_server(Script(chat_replies=["{'city': Boston", GOOD])) as served:
        yield served


def _assert_retried(script: Script) -> None:
    assert len(script.chat_requests) == 2
    last_user = [m for m in script.chat_requests[1]["messages"] if m["role"] == "user"][-1]["content"]
    assert "not valid" in last_user  # the corrective note


def test_openai_compatible_backend_retries_malformed_json(server: tuple[str, Script]) -> None:
    url, script = server
    llm = OpenAICompatibleLLM(url, "scripted", max_retries=0)
    plan = structured_call(llm, MESSAGES, Plan, what="plan", max_tokens=64)
    assert plan == Plan(city="Boston", year=2026)
    assert script.chat_requests[0]["response_format"]["type"] == "json_schema"
    _assert_retried(script)


async def test_llama_index_openai_like_sends_the_schema_and_retries(server: tuple[str, Script]) -> None:
    url, script = server
    llm = make_llm(OpenAILikeLLM(model="scripted", api_base=url))
    assert isinstance(llm, LlamaIndexLLM) and llm.json_schema and llm.name == "scripted"
    plan = await astructured_call(llm, MESSAGES, Plan, what="plan", max_tokens=64)
    assert plan.city == "Boston"
    first = script.chat_requests[0]
    assert first["response_format"]["json_schema"]["schema"]["required"] == ["city", "year"]
    assert first["temperature"] == 0.0 and first["max_tokens"] == 64  # per-call settings reach the request
    _assert_retried(script)


def test_a_prompted_custom_llm_gets_the_schema_in_the_prompt_and_retries(server: tuple[str, Script]) -> None:
    url, script = server
    custom = ScriptedCustomLLM(api_base=url)
    llm = make_llm(custom)
    assert isinstance(llm, LlamaIndexLLM) and not llm.json_schema and llm.name == "scripted-custom"
    assert structured_call(llm, MESSAGES, Plan, what="plan", max_tokens=50).year == 2026
    assert len(script.chat_requests) == 2
    first_prompt = script.chat_requests[0]["messages"][0]["content"]
    assert "matches this JSON schema" in first_prompt and '"city"' in first_prompt
    assert "not valid" in script.chat_requests[1]["messages"][0]["content"]
    # Copies with the per-call settings made the requests (0 first, then the retry's 0.2); the object keeps its own.
    assert [(c["temperature"], c["max_tokens"]) for c in custom.seen] == [(0.0, 50), (0.2, 50)]
    assert custom.temperature == 0.7 and custom.max_tokens == 64


def test_twice_malformed_is_an_llm_error_naming_the_model() -> None:
    with scripted_server(Script(chat_replies=["nope", "still nope"])) as (url, _):
        llm = make_llm(ScriptedCustomLLM(api_base=url))
        with pytest.raises(LLMError, match="scripted-custom returned malformed output twice"):
            structured_call(llm, MESSAGES, Plan, what="plan", max_tokens=50)


class LeakyLLM(ScriptedCustomLLM):
    """Fails the way a careless upstream does: with the credential in the message."""

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        raise RuntimeError("401 from upstream; you sent Authorization: Bearer sk-secret-abcdefgh123")


def test_failures_are_llm_errors_with_credentials_masked() -> None:
    llm = make_llm(LeakyLLM())
    with pytest.raises(LLMError) as caught:
        llm.generate(MESSAGES, Plan)
    message = str(caught.value)
    assert "sk-secret-abcdefgh123" not in message and "LlamaIndex LLM scripted-custom failed: RuntimeError" in message


def test_open_accepts_framework_llms(tmp_path: Path, server: tuple[str, Script]) -> None:
    from langchain_openai import ChatOpenAI

    url, _ = server
    with Hindsight.open(tmp_path / "a", llm=ScriptedCustomLLM(api_base=url), embedder="minilm-int8") as hs:
        assert isinstance(hs.llm, LlamaIndexLLM)
    with Hindsight.open(tmp_path / "b", llm=ChatOpenAI(base_url=url, api_key="x", model="scripted"),
                        embedder="minilm-int8") as hs:
        assert isinstance(hs.llm, ChatModelLLM)
    with pytest.raises(InvalidInputError, match="not an LLM"):
        Hindsight.open(tmp_path / "c", llm=object(), embedder="minilm-int8")


@pytest.mark.llm
def test_the_bundled_model_through_the_llama_index_backend() -> None:
    from hindsight_core.llm import LOCAL_MODELS, ensure_gguf, shutdown_local_servers
    from llama_index_hindsight import local_llm

    ensure_gguf(LOCAL_MODELS["smollm2-135m"])
    try:
        llm = make_llm(local_llm("smollm2-135m", max_tokens=64))
        plan = structured_call(llm, MESSAGES, Plan, what="plan", max_tokens=64)
        assert isinstance(plan, Plan) and isinstance(plan.year, int)  # a 135M model: shape, not content
    finally:
        shutdown_local_servers()


def test_a_hindsight_llm_is_taken_as_is() -> None:
    from scripted_llm import ScriptedLLM

    llm = ScriptedLLM([])
    assert make_llm(llm) is llm
