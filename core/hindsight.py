"""The ``Hindsight`` facade: opens the stores, owns the shared pipelines, hands out banks."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .bank import Bank
from .config import Settings
from .embedders import Embedder, make_embedder
from .engine import Lazy, wire
from .errors import BankNotFoundError, ClosedError, StoreError
from .extract.base import Extractor
from .llm.base import LLM
from .models import AuditEntry, BankProfile, Disposition, utcnow
from .recall.rerank import Reranker
from .runtime.gate import CommitGate, GatedLLM
from .runtime.leases import ProcessLease
from .stores import audit
from .stores.base import GraphStore, ResettableIndex, VectorIndex
from .stores.locate import StoreLocation, open_graph, open_index
from .stores.process_guard import VectorIndexDamagedError
from .text.tokens import count_tokens
from .validation import BankId, DispositionArg, Text, public
from .vectors.reconcile import reconcile_bank
from .vectors.recorded import recorded_choice

if TYPE_CHECKING:
    from .portability.importer import ImportReport
    from .vectors.reembed import ReembedReport

log = logging.getLogger(__name__)


def _default_llm() -> LLM:
    from .llm.factory import default_llm

    return default_llm()


class Hindsight:
    """Entry point: ``Hindsight.open("./memory")`` then ``.bank("name")``."""

    def __init__(
        self,
        store: GraphStore,
        index: VectorIndex,
        *,
        embedder: Embedder | str | Any | None = None,
        llm: LLM | Any | None = None,
        extractor: Extractor | None = None,
        settings: Settings | None = None,
        reranker: Reranker | None = None,
        token_counter: Callable[[str], int] | None = None,
        reconcile: bool = True,
        start_worker: bool = True,
        recover: bool = True,
    ) -> None:
        """Run over open stores; ``Hindsight.open`` opens them from paths or URLs and is the usual way in.

        ``embedder`` is an ``Embedder`` or a name: ``"mpnet-int8"`` (the default where its ONNX graph is built or
        can be built: all-mpnet-base-v2 with 8-bit weights on onnxruntime), ``"minilm"`` (all-MiniLM-L6-v2,
        documents in float32, queries with its int8 ONNX twin: the plain install's default), ``"minilm-fp32"``,
        ``"minilm-int8"`` or ``"mpnet"`` (all-mpnet-base-v2 on PyTorch; assembled into the cache on first use).
        It may also be any embedding model you bring (docs/MODELS.md): a LangChain ``Embeddings``, a LlamaIndex
        ``BaseEmbedding``, ``"st:FOLDER"`` (a sentence-transformers model on this machine), ``"openai:URL#MODEL"``
        (an OpenAI-compatible endpoint) or ``"module:attr"``; ``llm`` likewise takes a LangChain chat model or a
        LlamaIndex LLM. None takes ``$HINDSIGHT_EMBEDDER``, else the built-in model the store's banks recorded
        (a store keeps its embedder; a warning names ``hindsight reembed``), else the default. Each bank records the
        embedder that built it and refuses to open with another (``EmbedderMismatchError``); the MiniLM variants are
        one vector space.
        ``llm`` serves extraction, reflect and background work (default: the environment's endpoint or the
        bundled local model, loaded on first use); ``extractor`` replaces the LLM extractor used by
        ``retain(extract=True)`` (any ``Extractor``; e.g. an ``LLMExtractor`` with other tunables).
        """
        self.store = store
        self.index = index
        self.embedder: Embedder = make_embedder(embedder if embedder is not None else recorded_choice(store, index))
        self.settings = settings or Settings()
        if llm is not None:  # a LangChain chat model or a LlamaIndex LLM is wrapped (duck-typed)
            from .llm.factory import make_llm

            llm = make_llm(llm)
        self._llm = Lazy(lambda: llm if llm is not None else _default_llm())
        # Closing shuts this gate: nothing is committed after ``close``, and the pipelines' model calls (``GatedLLM``)
        # end at once, so that a job abandoned inside a call stores nothing and stops reading the closed stores.
        self._gate = CommitGate()
        self._gated_llm: Lazy[LLM] = Lazy(lambda: GatedLLM(self._llm(), self._gate))
        self._recover_lock = threading.Lock()
        self.count_tokens = token_counter or count_tokens
        self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="hindsight")
        leases = self.settings.leases
        self.lease = ProcessLease(store, heartbeat_s=leases.heartbeat_s, ttl_s=leases.ttl_s,
                                  on_beat=self._maintain, maintenance_every=leases.maintenance_every)
        self.engine = wire(
            store, index, self.embedder, self.settings, llm=self._gated_llm,
            extractor=Lazy(lambda: extractor if extractor is not None else self._llm_extractor()),
            count_tokens=self.count_tokens, executor=self._executor, owner=self.lease.id,
            notify=self.notify_worker, reranker=reranker, gate=self._gate,
        )
        # The background worker, for callers that run queued jobs themselves (``start_worker=False``).
        self.worker = self.engine.worker
        self._start_worker = start_worker
        self._closed = False
        self.reconciled: dict[str, dict[str, int]] = {}
        self._close_index = False  # set by ``open`` for an index it created
        self._warm_up_thread: threading.Thread | None = None
        self.lease.start()
        try:
            self._start_up(reconcile=reconcile, recover=recover)
        except BaseException:
            self.lease.stop()
            self._executor.shutdown(wait=False)
            raise
        if start_worker and store.pending_jobs() > 0:
            self.worker.start()  # finish what an earlier process queued

    def _start_up(self, *, reconcile: bool, recover: bool) -> None:
        """Check every bank's vector collection (rebuilding a damaged index), recover what dead processes left
        and reconcile the vectors with the graph."""
        # One list: a bank another process creates meanwhile is opened (and checked) on first use.
        banks = [profile.id for profile in self.store.list_banks()]
        try:
            for bank_id in banks:
                self.index.ensure_collection(bank_id, self.embedder.name, self.embedder.dimension)
        except VectorIndexDamagedError as exc:
            # Derived data: rebuilt from the graph store (reconcile re-embeds every unit below).
            if not isinstance(self.index, ResettableIndex):
                raise
            log.error("%s; rebuilding the vector index from the graph store", exc)
            self.index.reset()
            for bank_id in banks:
                self.index.ensure_collection(bank_id, self.embedder.name, self.embedder.dimension)
            reconcile = True
        # Off only for inspection (``hindsight check`` reports what a crash left before anything repairs it).
        self.recovered = self.recover() if recover else {}
        if not reconcile:
            return
        for bank_id in banks:
            try:
                self.reconciled[bank_id] = reconcile_bank(bank_id, self.store, self.index, self.embedder,
                                                          self.settings)
            except StoreError:
                if self.store.get_bank(bank_id) is not None:
                    raise  # a bank deleted by another process meanwhile is nothing to reconcile

    def recover(self) -> dict[str, int]:
        """Take over what dead processes left: their running jobs are queued again, documents they left pending
        or extracting are resumed (a retain job each), and vectors they, or failed writes of this process,
        left out of step with the graph follow it again. Runs at open and every few heartbeats; returns counts.
        """
        with self._recover_lock:
            released = self.store.release_owners(self.lease.dead_owners(), self.lease.id, utcnow())
            for bank_id, document_id in released.documents:
                job = self.engine.jobs.resume_document(bank_id, document_id)
                log.warning("document %r of bank %r was left unfinished by a process that died: resumed as job %s",
                            document_id, bank_id, job.id)
            synced = self.engine.vectors.sync()
        if released.documents:
            self.notify_worker()
        return {"jobs_requeued": released.jobs, "documents_resumed": len(released.documents),
                "owners_released": released.owners, **{f"vectors_{k}": v for k, v in synced.items()}}

    def _maintain(self) -> None:
        # From the lease's heartbeat thread: a long-lived process also takes over work of processes that died.
        if self._closed:
            return
        try:
            self.recover()
        except ClosedError:
            return  # closed meanwhile: what it found is the next process's to take over
        if self.store.pending_jobs() > 0:
            self.notify_worker()

    @classmethod
    @public
    def open(
        cls,
        path: str | Path | StoreLocation | None = "./memory",
        *,
        graph: GraphStore | str | None = None,
        vectors: VectorIndex | str | None = None,
        **kwargs: Any,
    ) -> Hindsight:
        """Open (or create) a memory store.

        The embedded default keeps a SQLite graph store (``graph.sqlite``) and a Chroma index
        (``vectors/``) under ``path``. ``graph`` may instead be a store object or a SQLite file path;
        ``vectors`` a ``VectorIndex``, ``"http://host:port"`` for a Chroma server, or ``"memory"`` for an
        in-process index. ``path=None`` with no stores keeps everything in memory (tests, notebooks). ``path``
        may also be a ``StoreLocation`` (``hindsight_core.stores.locate``: what the command line resolves from
        ``--path``, ``--graph``/``--vectors`` or the environment).

        Server mode: ``graph="bolt://host:7687"`` (or ``neo4j://``, ``neo4j+s://``, ``bolt+s://``) opens a
        ``Neo4jGraphStore``; credentials come from ``neo4j_user``/``neo4j_password``/``neo4j_database`` or
        ``NEO4J_USER``/``NEO4J_PASSWORD``/``NEO4J_DATABASE``. ``graph="env"`` takes the URI from ``NEO4J_URI``
        and ``vectors="env"`` the Chroma server from ``CHROMA_HOST``/``CHROMA_PORT``. An unreachable server or
        rejected credentials raise ``StoreError`` naming what was tried.
        Other keyword arguments go to the constructor (``embedder``, ``llm``, ``extractor``, ``settings``,
        ``reranker``, ``token_counter``, ``reconcile``, ``start_worker``, ``recover``); ``embedder="minilm"``
        selects the faster embedder for this store (or ``HINDSIGHT_EMBEDDER=minilm``), see the constructor.
        """
        # Before any store opens: an unknown name or a missing package fails with nothing left to close. Without a
        # name the stores are read first: a store keeps the built-in embedder its banks were built with.
        if kwargs.get("embedder") is not None:
            kwargs["embedder"] = make_embedder(kwargs["embedder"])
        if isinstance(path, StoreLocation):
            where = path
            graph, vectors = graph or where.graph, vectors or where.vectors
            root = where.path
        else:
            root = Path(path) if path is not None else None
        neo4j_options = {k: kwargs.pop(f"neo4j_{k}") for k in ("user", "password", "database")
                         if f"neo4j_{k}" in kwargs}
        # The vector index first: a Chroma server that cannot be reached then leaves no open Bolt driver.
        index = open_index(vectors, root)
        try:
            store = open_graph(graph, root, neo4j_options)
        except BaseException:
            if index is not vectors and hasattr(index, "close"):
                index.close()
            raise
        try:
            hs = cls(store, index, **kwargs)
        except BaseException:
            if store is not graph:  # a store opened here is closed here when the facade cannot start
                store.close()
            if index is not vectors and hasattr(index, "close"):
                index.close()
            raise
        hs._close_index = index is not vectors
        return hs

    # LLM -----------------------------------------------------------------------------------------
    @property
    def llm(self) -> LLM:
        """The LLM used for extraction (and reflect): given at open, else the environment's or local one."""
        return self._llm()

    def _llm_extractor(self) -> Extractor:
        from .extract.llm_extractor import LLMExtractor

        return LLMExtractor(self._gated_llm(), count_tokens=self.count_tokens)

    def notify_worker(self) -> None:
        """Wake the background worker for newly queued jobs (unless opened with ``start_worker=False``)."""
        if self._start_worker and not self._closed:
            self.worker.notify()

    def warm_up(self) -> None:
        """Load what the first recall would otherwise load on its own time: the embedder's query model (0.5-0.9 s
        for the bundled ones) and the reranker's, if one is set. Nothing is stored. Long-lived processes call it at
        start (``hindsight mcp`` and ``hindsight ui`` do, in the background); a short script need not."""
        from .embedders.base import embed_queries

        embed_queries(self.embedder, ["warm up"])
        reranker = self.engine.recaller.reranker
        if reranker is not None:
            reranker.score("warm up", ["warm up"])

    async def awarm_up(self) -> None:
        """Async twin of ``warm_up`` (the model loads in a worker thread)."""
        await asyncio.to_thread(self.warm_up)

    def warm_up_in_background(self) -> threading.Thread:
        """``warm_up`` in a thread (a failure there is logged, never raised: the first recall then loads what it
        needs as it would have without it). ``close`` and the process's exit wait for it: a native model load cut
        off by the interpreter's teardown aborts the process."""

        def run() -> None:
            try:
                self.warm_up()
            except Exception as exc:  # the first recall reports a real failure to its caller
                log.warning("warm-up failed (%s); the first recall loads the models instead", exc)

        thread = threading.Thread(target=run, name="hindsight-warm-up", daemon=False)
        self._warm_up_thread = thread
        thread.start()
        return thread

    # banks ---------------------------------------------------------------------------------------
    @public
    def bank(
        self,
        bank_id: BankId,
        *,
        create: bool = True,
        name: Text | None = None,
        background: Text | None = None,
        disposition: DispositionArg | None = None,
    ) -> Bank:
        """A bank by id, created on first use unless ``create=False`` (then ``BankNotFoundError``)."""
        profile = self.store.get_bank(bank_id)
        if profile is None:
            if not create:
                # Other banks' ids are not named: this message reaches the callers of shared servers (MCP).
                raise BankNotFoundError(f"no bank {bank_id!r} (hindsight stats lists the banks)")
            profile = self.store.create_bank(
                BankProfile(id=bank_id, name=name or bank_id, background=background or "",
                            disposition=Disposition.model_validate(disposition or {}))
            )
            audit.record(self.store, bank_id, "create_bank", summary=f"name {profile.name}")
        self.index.ensure_collection(bank_id, self.embedder.name, self.embedder.dimension)
        return Bank(self.engine, bank_id, owner=self)

    def banks(self) -> list[BankProfile]:
        """Profiles of every bank."""
        return self.store.list_banks()

    @public
    def delete_bank(self, bank_id: BankId) -> None:
        """Delete a bank from both stores (the graph first; a vector collection that cannot be dropped now is
        dropped by the next sync)."""
        if self.store.get_bank(bank_id) is None:
            raise BankNotFoundError(f"no bank {bank_id!r}")
        stats = self.store.stats(bank_id)
        self.engine.forgetter.delete_bank(bank_id)
        # The trail outlives the bank: its entries stay, and this one says where the data went.
        audit.record(self.store, bank_id, "delete_bank", counts={"memories": int(stats.get("units", 0))})

    @public
    def import_bank(
        self, path: str | Path, *, bank_id: BankId | None = None, replace: bool = False
    ) -> ImportReport:
        """Import a bank file written by ``Bank.export`` as a new bank (default id: the one it was exported from).

        The whole file is validated first (a damaged or truncated file is an ``ArchiveError`` naming the line) and
        the import is all or nothing. An existing bank is refused (``BankExistsError``) unless ``replace``. The
        file's vectors are used when it has them and this store's embedder is the same, else recomputed.
        """
        from .portability.importer import import_bank

        return import_bank(self.engine, path, bank_id=bank_id, replace=replace)

    @public
    async def aimport_bank(
        self, path: str | Path, *, bank_id: BankId | None = None, replace: bool = False
    ) -> ImportReport:
        """Async twin of ``import_bank``."""
        return await asyncio.to_thread(self.import_bank, path, bank_id=bank_id, replace=replace)

    @public
    def reembed(self, bank_id: BankId, embedder: Any, **kwargs: Any) -> ReembedReport:
        """Rebuild a bank's vectors with another embedder without retaining again (see ``Bank.reembed``; keyword
        arguments ``batch_size`` and ``progress`` go there). Then open the store with that embedder."""
        if self.store.get_bank(bank_id) is None:
            raise BankNotFoundError(f"no bank {bank_id!r}")
        return Bank(self.engine, bank_id, owner=self).reembed(embedder, **kwargs)

    @public
    async def areembed(self, bank_id: BankId, embedder: Any, **kwargs: Any) -> ReembedReport:
        """Async twin of ``reembed``."""
        return await asyncio.to_thread(self.reembed, bank_id, embedder, **kwargs)

    @public
    def audit(
        self, bank_id: BankId | None = None, *, limit: int = 50, offset: int = 0, oldest_first: bool = False
    ) -> list[AuditEntry]:
        """The audit trail of one bank, or of every bank (deleted ones included: deleting a bank keeps its
        trail): each write and forget with its time, surface (``api``, ``cli``, ``mcp``, ``explorer``), token id
        and what it changed; newest first, ``limit`` entries (at most 10,000) from ``offset``."""
        return audit.read(self.store, bank_id, limit=limit, offset=offset, oldest_first=oldest_first)

    @public
    async def aaudit(
        self, bank_id: BankId | None = None, *, limit: int = 50, offset: int = 0, oldest_first: bool = False
    ) -> list[AuditEntry]:
        """Async twin of ``audit``."""
        return await asyncio.to_thread(self.audit, bank_id, limit=limit, offset=offset, oldest_first=oldest_first)

    def close(self) -> None:
        """Release this process's lease and close the stores, at once: nothing waits for a background job.

        Queued jobs stay queued, and a job inside a model call is abandoned: its answer is dropped, nothing of it is
        committed after this call (a commit already in progress finishes first), and the lease hands it back to the
        queue, so the next ``Hindsight.open`` (or ``hindsight worker``) runs it again. ``bank.wait_idle()`` first
        to let queued work finish here. Closing twice is harmless. With the bundled local model, the process's exit
        still waits for an abandoned call's answer (bounded by its ``max_tokens``): llama.cpp's server cannot be
        stopped in the middle of one.
        """
        if self._closed:
            return
        self._closed = True
        warming = getattr(self, "_warm_up_thread", None)
        if warming is not None:
            warming.join(timeout=60)  # a model load: seconds
        self._gate.close()  # waits for a commit in progress only, never for a model call
        self.worker.stop(timeout=0)
        self.lease.stop()
        self._executor.shutdown(wait=True)
        self.store.close()
        if self._close_index and hasattr(self.index, "close"):
            self.index.close()

    def __enter__(self) -> Hindsight:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
