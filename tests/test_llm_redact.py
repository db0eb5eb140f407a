"""Credentials never leave the LLM seam: URL userinfo, the API key and echoed secrets are masked in errors, in
reprs and in what a failed facts job stores."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel
from support.echo_server import EchoServer

from hindsight_core import Hindsight
from hindsight_core.errors import LLMError
from hindsight_core.llm.openai_compat import OpenAICompatibleLLM
from hindsight_core.llm.redact import MASK, display_url, scrub, url_secrets
from hindsight_core.models import JobStatus

KEY = "sk-live-9f8e7d6c5b4a3210"
PASSWORD = "hunter2-pass"


def test_display_url_drops_userinfo_and_keeps_the_rest() -> None:
    assert display_url("http://bob:hunter2@host:8080/v1?x=1") == "http://host:8080/v1?x=1"
    assert display_url("https://[::1]:9000/v1") == "https://[::1]:9000/v1"
    assert display_url("http://tok@example.com/v1") == "http://example.com/v1"
    assert display_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"
    assert set(url_secrets("http://bob:p%40ss@host/v1")) == {"p%40ss", "p@ss", "bob"}


@pytest.mark.parametrize("text", [
    "Authorization: Bearer abcdef123456 was rejected",
    'upstream said {"api_key": "zz-abcdef-123"}',
    "bad token=abcd1234efgh",
    "key sk-abcdefghijklmnop is revoked",
    "see http://user:secretpw@10.0.0.1/v1",
])
def test_scrub_masks_credential_shapes(text: str) -> None:
    out = scrub(text)
    for leaked in ("abcdef123456", "zz-abcdef-123", "abcd1234efgh", "sk-abcdefghijklmnop", "secretpw"):
        assert leaked not in out
    assert MASK in out or "user:" not in out


def test_scrub_masks_configured_secrets_but_not_short_words() -> None:
    assert scrub(f"the key {KEY} and no", [KEY, "no"]) == f"the key {MASK} and no"


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    server = EchoServer(lambda auth: {
        "message": f"bad credentials: {auth}", "type": "auth", "key_seen": KEY, "password": PASSWORD,
    })
    yield server
    server.close()


def _llm(echo: EchoServer) -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM(f"http://bob:{PASSWORD}@127.0.0.1:{echo.port}/v1", "stub", KEY, max_retries=0)


def _assert_clean(text: str) -> None:
    assert KEY not in text and PASSWORD not in text and "Bearer sk-" not in text, text


class _City(BaseModel):
    city: str


def test_an_echoing_upstream_leaks_nothing_into_errors_or_reprs(echo: EchoServer) -> None:
    llm = _llm(echo)
    _assert_clean(repr(llm))
    with pytest.raises(LLMError) as raised:
        llm.generate([{"role": "user", "content": "hi"}], _City)
    _assert_clean(str(raised.value))
    assert "401" in str(raised.value) and f"127.0.0.1:{echo.port}" in str(raised.value)


def test_a_failed_facts_job_stores_no_credential(tmp_path: Path, echo: EchoServer) -> None:
    with Hindsight.open(tmp_path / "m", llm=_llm(echo), start_worker=False) as hs:
        bank = hs.bank("b")
        result = bank.retain([{"speaker": "Ana", "text": "I moved to Porto last spring.", "id": "m1"}])
        assert result.memories  # raw first: the message is kept whatever the model does
        for _ in range(10):  # the job retries with backoff; run it until it ends
            if not hs.worker.run_once():
                break
        job = next(j for j in bank.jobs() if j.id == result.job_id)
        stored = json.dumps(job.model_dump(mode="json"))
        _assert_clean(stored)
        assert job.status in (JobStatus.FAILED, JobStatus.QUEUED) and job.error
