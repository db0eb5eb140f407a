"""An ``Embedder`` over any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, vLLM, llama.cpp, Ollama, TEI).

Plain ``urllib`` (no client package): texts go in batches of ``batch_size``; a 429 or 5xx answer, a timeout or a
refused connection is retried with exponential backoff (``Retry-After`` honoured, capped); any other error status
fails at once. Every error message is scrubbed (``llm.redact``): the key, URL userinfo and anything shaped like a
credential are masked, since an upstream may echo the Authorization header in its error body.

Spec form for ``make_embedder``/``HINDSIGHT_EMBEDDER``: ``openai:URL#MODEL`` (``openai:http://localhost:8000/v1#bge-m3``);
the key comes from ``HINDSIGHT_EMBED_API_KEY``, else ``OPENAI_API_KEY`` (none is sent when neither is set).
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import EmbeddingError, InvalidInputError
from ..llm.redact import display_url, scrub, url_secrets
from .checks import ProbedDimension, as_vectors

ENV_EMBED_API_KEY = "HINDSIGHT_EMBED_API_KEY"
"""Environment variable holding the embeddings endpoint's key (falls back to ``OPENAI_API_KEY``)."""

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
_MAX_BACKOFF_S = 30.0
_ERROR_PREVIEW = 300


def api_key_from_env(environ: Mapping[str, str] | None = None) -> str | None:
    """``HINDSIGHT_EMBED_API_KEY``, else ``OPENAI_API_KEY``, else None."""
    env = os.environ if environ is None else environ
    for var in (ENV_EMBED_API_KEY, "OPENAI_API_KEY"):
        value = (env.get(var) or "").strip()
        if value:
            return value
    return None


class OpenAICompatibleEmbedder(ProbedDimension):
    """Batched, retried embeddings from an OpenAI-compatible endpoint; recorded as ``openai:MODEL``.

    The recorded name leaves the URL out on purpose: the same model served elsewhere gives the same vectors.
    Pass ``name=`` when two endpoints serve different models under one model name.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        name: str | None = None,
        dimension: int | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        max_retries: int = 4,
        backoff_s: float = 0.5,
    ) -> None:
        """``base_url`` like ``http://host:8000/v1`` (a trailing ``/embeddings`` is accepted); ``api_key``
        defaults to the environment (``api_key_from_env``)."""
        if not base_url.startswith(("http://", "https://")):
            raise InvalidInputError(f"embeddings endpoint must be an http(s) URL, not {display_url(base_url)!r}")
        if not model.strip():
            raise InvalidInputError("an OpenAI-compatible embedder needs a model name (openai:URL#MODEL)")
        if batch_size < 1 or max_retries < 0 or timeout <= 0:
            raise InvalidInputError("batch_size must be >= 1, max_retries >= 0 and timeout > 0")
        url = base_url.rstrip("/")
        self.url = url if url.endswith("/embeddings") else f"{url}/embeddings"
        self.model = model.strip()
        self._api_key = api_key if api_key is not None else api_key_from_env()
        self._secrets = [s for s in (self._api_key, *url_secrets(self.url)) if s]
        super().__init__(name or f"openai:{self.model}", dimension)
        self.batch_size = batch_size
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_s = backoff_s

    @classmethod
    def from_spec(cls, spec: str, **kwargs: Any) -> OpenAICompatibleEmbedder:
        """From ``URL#MODEL`` (the part after ``openai:``)."""
        url, _, model = spec.partition("#")
        if not model:
            raise InvalidInputError(f"openai embedder spec needs a model: openai:URL#MODEL, not openai:"
                                    f"{display_url(spec)!r}")
        return cls(url, model, **kwargs)

    def __repr__(self) -> str:
        return f"OpenAICompatibleEmbedder({display_url(self.url)!r}, model={self.model!r})"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` in batches of ``batch_size``; unit float32 rows in input order."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vecs = self._probe_embed(texts)
        return as_vectors(vecs, len(texts), f"embedder {self._name}", self.dimension)

    def _probe_embed(self, texts: Sequence[str]) -> np.ndarray:
        """Every text in batches, checked for count and finiteness (not yet the dimension)."""
        parts = [self._batch(list(texts[i : i + self.batch_size])) for i in range(0, len(texts), self.batch_size)]
        return as_vectors([row for part in parts for row in part], len(texts), f"embedder {self._name}")

    def _batch(self, texts: list[str]) -> list[list[float]]:
        body = self._post({"model": self.model, "input": texts})
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or len(data) != len(texts):
            raise EmbeddingError(f"embedder {self._name}: expected {len(texts)} embeddings in 'data', got "
                                 f"{len(data) if isinstance(data, list) else type(data).__name__}")
        try:
            ordered = sorted(data, key=lambda item: int(item.get("index", 0)))
            return [list(item["embedding"]) for item in ordered]
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise EmbeddingError(f"embedder {self._name}: malformed 'data' item: {type(exc).__name__}") from exc

    def _post(self, payload: dict[str, Any]) -> Any:
        data = json.dumps(payload).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        attempt = 0
        while True:
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return json.loads(response.read().decode("utf-8"))
            except urllib.error.HTTPError as exc:
                detail = _read_body(exc)
                if exc.code not in RETRY_STATUSES or attempt >= self.max_retries:
                    raise self._error(f"HTTP {exc.code}: {detail}", attempt) from None
                wait = _retry_after(exc.headers.get("Retry-After")) if exc.headers else None
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                if attempt >= self.max_retries:
                    reason = getattr(exc, "reason", exc)
                    raise self._error(f"unreachable: {type(exc).__name__}: {reason}", attempt) from None
                wait = None
            except (ValueError, UnicodeDecodeError) as exc:  # a 200 whose body is not JSON
                raise self._error(f"answer is not JSON: {exc}", attempt) from None
            time.sleep(min(_MAX_BACKOFF_S, wait if wait is not None else self.backoff_s * 2**attempt))
            attempt += 1

    def _error(self, what: str, attempt: int) -> EmbeddingError:
        tries = f" after {attempt + 1} attempts" if attempt else ""
        message = f"embedder {self._name} at {display_url(self.url)}{tries}: {what}"
        return EmbeddingError(scrub(message, self._secrets))


def _read_body(exc: urllib.error.HTTPError) -> str:
    try:
        text = exc.read().decode("utf-8", errors="replace")
    except OSError:
        return "<no body>"
    text = " ".join(text.split())
    return text if len(text) <= _ERROR_PREVIEW else text[:_ERROR_PREVIEW] + "..."


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:  # an HTTP date: fall back to the backoff
        return None
