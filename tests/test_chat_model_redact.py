"""The LangChain backend (``ChatModelLLM``) keeps credentials out of its errors as the OpenAI-compatible one does:
a real ``ChatOpenAI`` against an endpoint that answers 401 with a body echoing the Authorization header, the key,
the URL's password and an unrelated ``sk-`` key. Neither the error, nor its cause chain, nor what a failed facts
job stores may carry any of them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_openai import ChatOpenAI
from pydantic import BaseModel
from support.echo_server import EchoServer

from hindsight_core import Hindsight
from hindsight_core.errors import LLMError
from hindsight_core.llm import ChatModelLLM

KEY = "my-configured-key-7c1e9a55"  # not shaped like a key: only the configured value can mask it
PASSWORD = "hunter2-pass"
OTHER_KEY = "sk-proj-ZZZ9876543210abcdef"


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    server = EchoServer(lambda auth: {
        "message": f"bad credentials: {auth} for http://bob:{PASSWORD}@upstream/v1; try {OTHER_KEY}",
        "type": "auth", "seen": KEY,
    })
    yield server
    server.close()


def _llm(echo: EchoServer, userinfo: bool = True) -> ChatModelLLM:
    # With userinfo, httpx sends it as Basic auth; without, the key goes as "Bearer KEY" and is echoed.
    where = f"bob:{PASSWORD}@" if userinfo else ""
    model = ChatOpenAI(model="stub", api_key=KEY, base_url=f"http://{where}127.0.0.1:{echo.port}/v1",
                       max_retries=0, timeout=30)
    return ChatModelLLM(model)


def _assert_clean(text: str) -> None:
    for secret in (KEY, PASSWORD, OTHER_KEY, "Bearer my-"):
        assert secret not in text, (secret, text)


def _chain(exc: BaseException | None) -> str:
    """Every message along an exception's cause and context chain (what a logged traceback would show)."""
    parts = []
    while exc is not None:
        parts.append(f"{type(exc).__name__}: {exc}")
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    return "\n".join(parts)


class _City(BaseModel):
    city: str


@pytest.mark.parametrize("userinfo", [True, False])
def test_an_echoing_upstream_leaks_nothing_through_the_chat_model(echo: EchoServer, userinfo: bool) -> None:
    llm = _llm(echo, userinfo)
    with pytest.raises(LLMError) as raised:
        llm.generate([{"role": "user", "content": "hi"}], _City)
    message = str(raised.value)
    _assert_clean(_chain(raised.value))
    assert "401" in message and "AuthenticationError" in message and "***" in message  # still says what happened


async def test_the_async_twin_leaks_nothing_either(echo: EchoServer) -> None:
    with pytest.raises(LLMError) as raised:
        await _llm(echo).agenerate([{"role": "user", "content": "hi"}], _City)
    _assert_clean(_chain(raised.value))
    assert "401" in str(raised.value)


def test_a_failed_facts_job_through_the_chat_model_stores_no_credential(tmp_path: Path, echo: EchoServer) -> None:
    with Hindsight.open(tmp_path / "m", llm=_llm(echo), start_worker=False) as hs:
        bank = hs.bank("b")
        result = bank.retain([{"speaker": "Ana", "text": "I moved to Porto last spring.", "id": "m1"}])
        assert result.memories  # raw first: the message is kept whatever the model does
        for _ in range(10):  # the job retries with backoff; run it until it ends
            if not hs.worker.run_once():
                break
        job = next(j for j in bank.jobs() if j.id == result.job_id)
        assert job.error
        _assert_clean(json.dumps(job.model_dump(mode="json")))
        _assert_clean(json.dumps([d.model_dump(mode="json") for d in bank.documents()]))
