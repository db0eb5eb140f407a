"""The explorer's JSON API: one endpoint per thing a view shows, each a thin wrapper around ``queries``.

Ids a caller chose (bank, document) travel in the query string or the JSON body, never in the path: they may
hold ``/`` or ``%``. Reads are ``GET``; the writes are ``POST /api/forget`` and ``POST /api/correct`` (a token that
may write the bank required, see ``auth``).
Every bank named is checked against the token's grant: outside it, a bank reads as one that does not exist.
``POST /api/recall`` is a read with a body. Endpoints are plain functions: Starlette runs them in its thread
pool, where the stores' blocking calls belong.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import StrEnum
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .. import __version__
from ..access import Grant, bearer
from ..actor import acting_as
from ..errors import BankNotFoundError, InvalidInputError
from ..models import DocumentStatus, JobStatus, Network
from ..validation import check_bank_id
from .auth import TOKEN_HEADER, Guard
from .queries import Explorer

E = TypeVar("E", bound=StrEnum)
MAX_BODY = 64 * 1024
MAX_PAGE_NUMBER = 10**9
"""The largest ``limit`` or ``offset`` a page takes: past it a store's integer columns could overflow."""


class ForbiddenError(Exception):
    """A request without the explorer's token where one is needed (HTTP 403)."""


class ReadOnlyError(ForbiddenError):
    """A write with a token that may only read this bank (HTTP 403; the page keeps the token, unlike a wrong one)."""


class UnsupportedMediaError(Exception):
    """A write whose body is not JSON (HTTP 415): only JSON requests need a CORS preflight."""


def _explorer(request: Request) -> Explorer:
    explorer: Explorer = request.app.state.explorer
    return explorer


def _guard(request: Request, *, write: bool) -> Grant:
    """The request's grant (kept on ``request.state`` for ``_bank``); ``ForbiddenError`` without a valid token
    where one is needed."""
    guard: Guard = request.app.state.guard
    presented = request.headers.get(TOKEN_HEADER) or bearer(request.headers.get("authorization"))
    grant = guard.grant_for(presented, write=write)
    if grant is None:
        raise ForbiddenError("this needs an explorer token (printed when 'hindsight ui' started, or one of its "
                             f"--tokens file; sent as the {TOKEN_HEADER} header)")
    request.state.grant = grant
    return grant


def _readable(request: Request, bank_id: str) -> str:
    """``bank_id`` if the request's token may read it; a bank outside its scope is reported exactly as a bank
    that does not exist (``Explorer.bank``'s words), so its existence is not revealed."""
    grant: Grant = request.state.grant
    if not grant.can_read(bank_id):
        raise BankNotFoundError(f"no bank {bank_id!r}")
    return bank_id


def _writable(request: Request, bank_id: str) -> str:
    """``bank_id`` if the request's token may change it (``ReadOnlyError`` for a read-only token)."""
    grant: Grant = request.state.grant
    _readable(request, bank_id)
    if not grant.can_write(bank_id):
        raise ReadOnlyError(f"this token ({grant.token_id}) may read bank {bank_id!r} but not change it: its "
                             f"scope is {grant.scope}")
    return bank_id


def _str(request: Request, name: str, *, required: bool = False) -> str | None:
    value = request.query_params.get(name)
    if value is None or value == "":
        if required:
            raise InvalidInputError(f"missing query parameter {name!r}")
        return None
    return value


def _bank(request: Request) -> str:
    value = _str(request, "bank", required=True)
    try:
        return _readable(request, check_bank_id(value))
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from None


def _int(request: Request, name: str, default: int) -> int:
    value = request.query_params.get(name)
    if value is None or value == "":
        return default
    if len(value) > 12 or not value.lstrip("-").isdigit():
        raise InvalidInputError(f"{name} must be a whole number of at most 12 digits, not {value[:20]!r}")
    number = int(value)
    if not 0 <= number <= MAX_PAGE_NUMBER:
        raise InvalidInputError(f"{name} must be between 0 and {MAX_PAGE_NUMBER:,}, not {number}")
    return number


def _enum(kind: type[E], value: str | None, name: str) -> E | None:
    if value is None or value == "":
        return None
    try:
        return kind(value)
    except ValueError:
        raise InvalidInputError(f"unknown {name} {value!r}; use one of {[k.value for k in kind]}") from None


def _page(request: Request, default: int = 50) -> dict[str, int]:
    return {"limit": _int(request, "limit", default), "offset": _int(request, "offset", 0)}


async def _body(request: Request) -> dict[str, Any]:
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        raise UnsupportedMediaError("send the request body as JSON (Content-Type: application/json)")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise InvalidInputError(f"request body over {MAX_BODY} bytes")
    raw = bytearray()
    async for chunk in request.stream():  # read up to the limit and no further (a body may not declare its size)
        raw += chunk
        if len(raw) > MAX_BODY:
            raise InvalidInputError(f"request body over {MAX_BODY} bytes")
    try:
        data = json.loads(bytes(raw) or b"{}")
    except ValueError as exc:
        raise InvalidInputError(f"the request body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidInputError("the request body must be a JSON object")
    return data


def _opt_str(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string")
    return value


def _read(handler: Callable[[Explorer, Request], Any]) -> Callable[[Request], JSONResponse]:
    """A GET endpoint: token check (when reads need it), then ``handler``'s result as JSON."""
    def endpoint(request: Request) -> JSONResponse:
        _guard(request, write=False)
        return JSONResponse(handler(_explorer(request), request))

    endpoint.__name__ = handler.__name__
    endpoint.__doc__ = handler.__doc__
    return endpoint


# reads ---------------------------------------------------------------------------------------------------------
def health(request: Request) -> JSONResponse:
    """Liveness and the token policy (never guarded: the page asks it before it has a token)."""
    guard: Guard = request.app.state.guard
    return JSONResponse({"ok": True, "version": __version__, "reads_need_token": guard.reads_need_token,
                         "token_header": TOKEN_HEADER})


def banks(ex: Explorer, request: Request) -> Any:
    """Every bank the token may read, with its number of memories."""
    grant: Grant = request.state.grant
    return {"banks": grant.visible(ex.banks(), lambda b: str(b["id"]))}


def bank(ex: Explorer, request: Request) -> Any:
    """A bank's profile and number of memories."""
    return ex.summary(_bank(request))


def counts(ex: Explorer, request: Request) -> Any:
    """A bank's memory counts per network."""
    return ex.counts(_bank(request))


def stats(ex: Explorer, request: Request) -> Any:
    """A bank's full counts (``Bank.stats``)."""
    return ex.stats(_bank(request))


def overview(ex: Explorer, request: Request) -> Any:
    """What the overview draws: growth, jobs, rejected facts, observations' freshness."""
    return ex.overview(_bank(request))


def memories(ex: Explorer, request: Request) -> Any:
    """A page of memories: ``network``, ``entity`` (id), ``document``, ``limit``, ``offset``."""
    return ex.memories(_bank(request), network=_enum(Network, _str(request, "network"), "network"),
                       entity_id=_str(request, "entity"), document_id=_str(request, "document"), **_page(request))


def memory(ex: Explorer, request: Request) -> Any:
    """One memory with its provenance (``id``)."""
    return ex.memory(_bank(request), _str(request, "id", required=True) or "")


def timeline(ex: Explorer, request: Request) -> Any:
    """The memories on a time axis and the forgets as gaps: ``network``, ``entity`` (name or id), ``q`` (text),
    ``limit`` (10,000 by default)."""
    return ex.timeline(_bank(request), network=_enum(Network, _str(request, "network"), "network"),
                       entity=_str(request, "entity"), query=_str(request, "q"), limit=_int(request, "limit", 10_000))


def audit(ex: Explorer, request: Request) -> Any:
    """A page of the bank's audit trail, newest first (``id``: that entry too)."""
    return ex.audit(_bank(request), entry_id=_str(request, "id"), **_page(request))


def entities(ex: Explorer, request: Request) -> Any:
    """A page of entities, most mentioned first (``q`` filters by name)."""
    return ex.entities(_bank(request), query=_str(request, "q"), **_page(request))


def entity(ex: Explorer, request: Request) -> Any:
    """One entity (``id`` or ``name``) with its observation and related entities."""
    entity_id, name = _str(request, "id"), _str(request, "name")
    if not entity_id and not name:
        raise InvalidInputError("give the entity's id or name")
    return ex.entity(_bank(request), entity_id=entity_id, name=name)


def entity_history(ex: Explorer, request: Request) -> Any:
    """An entity's memories per day, its superseded values and its observation's supported sentences (``id``)."""
    return ex.entity_history(_bank(request), _str(request, "id", required=True) or "")


def graph(ex: Explorer, request: Request) -> Any:
    """The top-``limit`` entities by mentions and their co-occurrence edges."""
    return ex.graph(_bank(request), limit=_int(request, "limit", 60))


def expand(ex: Explorer, request: Request) -> Any:
    """The entities most often mentioned with ``entity`` (``visible``: ids already drawn, repeatable)."""
    return ex.expand(_bank(request), _str(request, "entity", required=True) or "", limit=_int(request, "limit", 15),
                     visible=request.query_params.getlist("visible"))


def opinions(ex: Explorer, request: Request) -> Any:
    """A page of opinions with their histories."""
    return ex.opinions(_bank(request), **_page(request))


def opinion(ex: Explorer, request: Request) -> Any:
    """One opinion with its history and each step's evidence (``id``)."""
    return ex.opinion(_bank(request), _str(request, "id", required=True) or "")


def documents(ex: Explorer, request: Request) -> Any:
    """A page of documents (``status`` filters)."""
    return ex.documents(_bank(request), status=_enum(DocumentStatus, _str(request, "status"), "status"),
                        **_page(request))


def document(ex: Explorer, request: Request) -> Any:
    """One document in full (``id``)."""
    return ex.document(_bank(request), _str(request, "id", required=True) or "")


def jobs(ex: Explorer, request: Request) -> Any:
    """A page of background jobs (``status`` filters)."""
    return ex.jobs(_bank(request), status=_enum(JobStatus, _str(request, "status"), "status"), **_page(request))


# recall (a read with a body), forget and correct (the writes) ---------------------------------------------------
async def recall(request: Request) -> JSONResponse:
    """``{bank, query, budget?, max_memories?, networks?, reference_time?, as_of?}`` -> memories and the full
    trace."""
    from starlette.concurrency import run_in_threadpool

    _guard(request, write=False)
    body = await _body(request)
    bank_id = _opt_str(body, "bank") or ""
    query = _opt_str(body, "query")
    if not query or not query.strip():
        raise InvalidInputError("recall needs a query")
    budget = body.get("budget", 2000)
    max_memories = body.get("max_memories")
    networks = body.get("networks") or None
    for name, value in (("budget", budget), ("max_memories", max_memories)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
            raise InvalidInputError(f"{name} must be a positive whole number")
    if networks is not None and (not isinstance(networks, list) or not all(isinstance(n, str) for n in networks)):
        raise InvalidInputError("networks must be a list of network names")
    for n in networks or []:
        _enum(Network, n, "network")
    if bank_id:
        _readable(request, bank_id)
    result = await run_in_threadpool(
        _explorer(request).recall, bank_id, query, budget=budget, max_memories=max_memories, networks=networks,
        reference_time=_opt_str(body, "reference_time"), as_of=_opt_str(body, "as_of"),
    )
    return JSONResponse(result)


async def forget(request: Request) -> JSONResponse:
    """``{bank, memory_id | document_id | entity}`` -> ``{deleted}``; needs the token."""
    from starlette.concurrency import run_in_threadpool

    grant = _guard(request, write=True)
    body = await _body(request)
    bank_id = _opt_str(body, "bank") or ""
    targets = {k: _opt_str(body, k) for k in ("memory_id", "document_id", "entity")}
    if sum(v is not None for v in targets.values()) != 1:
        raise InvalidInputError("forget takes exactly one of memory_id, document_id, entity")
    if bank_id:
        _writable(request, bank_id)
    explorer = _explorer(request)

    def forget_as() -> Any:
        # Inside the worker thread, so the audit trail sees this surface and token whatever the pool does.
        with acting_as("explorer", grant.token_id):
            return explorer.forget(bank_id, **targets)

    result = await run_in_threadpool(forget_as)
    return JSONResponse(result)


async def correct(request: Request) -> JSONResponse:
    """``{bank, memory_id, text}`` -> ``{memory, corrected}``: ``text`` stored as the memory that supersedes
    ``memory_id`` (``Bank.correct``); needs a token that may write the bank. Who corrected it is the token's id (as
    over MCP): a caller cannot name someone else, so a ``by`` in the body is refused rather than silently dropped."""
    from starlette.concurrency import run_in_threadpool

    grant = _guard(request, write=True)
    body = await _body(request)
    bank_id = _opt_str(body, "bank") or ""
    memory_id = _opt_str(body, "memory_id")
    text = _opt_str(body, "text")
    if "by" in body:
        raise InvalidInputError("correct records the token's id as who corrected the memory: leave out 'by'")
    if memory_id is None:
        raise InvalidInputError("correct needs the memory_id of the memory to correct")
    if text is None or not text.strip():
        raise InvalidInputError("correct needs the text that is true instead")
    if bank_id:
        _writable(request, bank_id)
    explorer = _explorer(request)

    def correct_as() -> Any:
        # Inside the worker thread, so the audit trail sees this surface and token whatever the pool does.
        with acting_as("explorer", grant.token_id):
            return explorer.correct(bank_id, memory_id, text, by=grant.token_id)

    return JSONResponse(await run_in_threadpool(correct_as))


def api_routes() -> list[Route]:
    """Every API route, under ``/api``."""
    reads = {"banks": banks, "bank": bank, "counts": counts, "stats": stats, "overview": overview,
             "memories": memories, "memory": memory, "timeline": timeline, "audit": audit, "entities": entities,
             "entity": entity, "entity/history": entity_history, "graph": graph,
             "graph/expand": expand,
             "opinions": opinions, "opinion": opinion, "documents": documents, "document": document, "jobs": jobs}
    return [
        Route("/api/health", health, methods=["GET"]),
        *(Route(f"/api/{path}", _read(handler), methods=["GET"]) for path, handler in reads.items()),
        Route("/api/recall", recall, methods=["POST"]),
        Route("/api/forget", forget, methods=["POST"]),
        Route("/api/correct", correct, methods=["POST"]),
    ]
