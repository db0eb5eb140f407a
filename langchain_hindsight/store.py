"""``HindsightStore``: a LangGraph ``BaseStore`` whose namespaces are Hindsight banks.

- namespace ``("memories", "alice")`` <-> bank ``"memories.alice"`` (labels percent-escaped, joined by
  ``.``; LangGraph forbids ``.`` in labels, so the mapping is reversible and collision-free);
- key <-> document id; the value is kept exactly in the document's metadata and also retained as text
  (raw ingest by default), so ``search(..., query=...)`` is a semantic recall over it;
- re-putting a key replaces the document and its memories (``created_at`` kept); delete forgets them.

langmem's ``create_manage_memory_tool`` / ``create_search_memory_tool`` run on it unchanged.
"""

from __future__ import annotations

import asyncio
import json
import operator
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC
from typing import Any, Literal
from urllib.parse import quote, unquote

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    get_text_at_path,
    validate_op_namespace,
)

from hindsight_core import Bank, BankNotFoundError, Hindsight, Memory
from hindsight_core.models import Document

VALUE_KEY = "langgraph_value"
"""Document metadata key holding the stored value (its presence marks a store document)."""
_SAFE = "-_~!$&'()*+,;=:@/ "  # kept readable in bank ids; '%' and '.' are always escaped


def namespace_to_bank_id(namespace: Sequence[str], prefix: str = "") -> str:
    """Encode a namespace as a bank id: each label percent-escaped (``%``, ``.``, control characters), joined
    by ``.``, after ``prefix``."""
    if not namespace:
        raise InvalidNamespaceError("namespace cannot be empty")
    labels = []
    for label in namespace:
        if not isinstance(label, str) or not label:
            raise InvalidNamespaceError(f"namespace labels must be non-empty strings: {namespace!r}")
        if any(0xD800 <= ord(c) <= 0xDFFF for c in label):
            raise InvalidNamespaceError(f"namespace label {label!r} contains invalid unicode")
        # quote() never escapes '.', the separator: do it by hand ('%' is already escaped, so this reverses)
        labels.append(quote(label, safe=_SAFE).replace(".", "%2E"))
    return prefix + ".".join(labels)


def bank_id_to_namespace(bank_id: str, prefix: str = "") -> tuple[str, ...] | None:
    """Decode a bank id made by ``namespace_to_bank_id``; None for a bank that is not a store namespace."""
    if not bank_id.startswith(prefix) or len(bank_id) == len(prefix):
        return None
    try:
        namespace = tuple(unquote(label, errors="strict") for label in bank_id[len(prefix):].split("."))
        if namespace_to_bank_id(namespace, prefix) != bank_id:
            return None  # not canonical: some other bank that merely looks similar
    except (InvalidNamespaceError, UnicodeDecodeError):
        return None
    return namespace


def _matches(value: Any, expected: Any) -> bool:
    """JSON-like filter matching (exact values, nested dicts, and $eq/$ne/$gt/$gte/$lt/$lte)."""
    if isinstance(expected, Mapping):
        if any(str(k).startswith("$") for k in expected):
            return all(_compare(value, op, operand) for op, operand in expected.items())
        return isinstance(value, Mapping) and all(_matches(value.get(k), v) for k, v in expected.items())
    if isinstance(expected, list | tuple):
        return (isinstance(value, list | tuple) and len(value) == len(expected)
                and all(_matches(a, b) for a, b in zip(value, expected, strict=True)))
    return bool(value == expected)


_ORDER = {"$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le}


def _compare(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(value == operand)
    if op == "$ne":
        return bool(value != operand)
    if op not in _ORDER:
        raise ValueError(f"unsupported filter operator {op!r}")
    try:
        return bool(_ORDER[op](float(value), float(operand)))
    except (TypeError, ValueError):
        return False


def _passes(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    return not filter or all(_matches(value.get(k), v) for k, v in filter.items())


class HindsightStore(BaseStore):
    """A LangGraph store backed by Hindsight: one bank per namespace, one document per key.

    ``extract=False`` (default) retains values as raw text (no model call); ``True`` runs LLM extraction.
    ``index_fields`` picks the value fields whose text is retained (default: the whole value; a put's
    ``index=[...]`` overrides it, ``index=False`` stores the value without making it searchable).
    ``bank_prefix`` keeps the store's banks apart from other banks (default: none, so the namespace
    ``("memories", "alice")`` is the bank ``"memories.alice"`` that nodes and retrievers can use too).

    Example:
        ```python
        store = HindsightStore(Hindsight.open("./memory"))
        graph = builder.compile(store=store)
        ```
    """

    def __init__(
        self,
        hindsight: Hindsight,
        *,
        extract: bool = False,
        index_fields: list[str] | None = None,
        bank_prefix: str = "",
        budget: int = 4000,
    ) -> None:
        """Wrap ``hindsight``; see the class docstring for the options."""
        self.hindsight = hindsight
        self.extract = extract
        self.index_fields = index_fields
        self.bank_prefix = bank_prefix
        self.budget = budget

    # banks -----------------------------------------------------------------------------------------
    def bank_id(self, namespace: Sequence[str]) -> str:
        """The bank id of a namespace."""
        return namespace_to_bank_id(namespace, self.bank_prefix)

    def _bank(self, namespace: Sequence[str], create: bool) -> Bank | None:
        try:
            return self.hindsight.bank(self.bank_id(namespace), create=create)
        except BankNotFoundError:
            return None

    def _namespaces(self) -> list[tuple[str, ...]]:
        out = []
        for profile in self.hindsight.banks():
            namespace = bank_id_to_namespace(profile.id, self.bank_prefix)
            if namespace is not None:
                out.append(namespace)
        return out

    # items -----------------------------------------------------------------------------------------
    @staticmethod
    def _item(namespace: tuple[str, ...], doc: Document) -> Item:
        return Item(namespace=namespace, key=doc.id, value=doc.metadata[VALUE_KEY],
                    created_at=doc.created_at.astimezone(UTC), updated_at=doc.updated_at.astimezone(UTC))

    @staticmethod
    def _search_item(namespace: tuple[str, ...], doc: Document, score: float | None) -> SearchItem:
        return SearchItem(namespace=namespace, key=doc.id, value=doc.metadata[VALUE_KEY],
                          created_at=doc.created_at.astimezone(UTC), updated_at=doc.updated_at.astimezone(UTC),
                          score=score)

    @staticmethod
    def _document(bank: Bank, key: str) -> Document | None:
        try:
            doc = bank.document(key)
        except KeyError:
            return None
        return doc if VALUE_KEY in doc.metadata else None

    def _get(self, op: GetOp) -> Item | None:
        bank = self._bank(op.namespace, create=False)
        doc = self._document(bank, op.key) if bank is not None else None
        return self._item(tuple(op.namespace), doc) if doc is not None else None

    def _text(self, value: Mapping[str, Any], index: Literal[False] | list[str] | None) -> str:
        fields = self.index_fields if index is None else index
        if fields is False:
            return ""
        if fields:
            return "\n".join(t for path in fields for t in get_text_at_path(dict(value), path) if t.strip())
        if len(value) == 1:  # {"content": "..."} (langmem): the content alone reads best
            (only,) = value.values()
            return only if isinstance(only, str) else json.dumps(only, ensure_ascii=False)
        return "\n".join(f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
                         for k, v in value.items())

    def _put_args(self, op: PutOp) -> dict[str, Any]:
        return {"document_id": op.key, "extract": self.extract, "document_metadata": {VALUE_KEY: dict(op.value or {})}}

    def _store_unindexed(self, bank: Bank, op: PutOp) -> None:
        """Keep a value that has no text to retain (``index=False`` or empty): the document only."""
        # Drops memories of an earlier, indexed version; keeps created_at.
        bank.put_document(op.key, "", metadata={VALUE_KEY: dict(op.value or {})})

    def _put(self, op: PutOp) -> None:
        if op.value is None:
            bank = self._bank(op.namespace, create=False)
            if bank is not None and self._document(bank, op.key) is not None:  # only the store's own documents
                bank.forget(document_id=op.key)
            return
        bank = self._bank(op.namespace, create=True)
        assert bank is not None
        text = self._text(op.value, op.index)
        if not text.strip():
            self._store_unindexed(bank, op)
            return
        bank.retain(text, **self._put_args(op))

    async def _aput(self, op: PutOp) -> None:
        text = self._text(op.value, op.index) if op.value is not None else ""
        if op.value is None or not text.strip():
            await asyncio.to_thread(self._put, op)
            return
        bank = await asyncio.to_thread(self._bank, op.namespace, True)
        assert bank is not None
        await bank.aretain(text, **self._put_args(op))

    # search ----------------------------------------------------------------------------------------
    def _search_banks(self, prefix: tuple[str, ...]) -> list[tuple[tuple[str, ...], Bank]]:
        out = []
        for namespace in self._namespaces():
            if namespace[: len(prefix)] == prefix:
                bank = self._bank(namespace, create=False)
                if bank is not None:
                    out.append((namespace, bank))
        return out

    def _recall_size(self, op: SearchOp) -> int:
        # Several memories can come from one document and the filter drops some: ask for more than needed.
        return max(20, 4 * (op.offset + op.limit))

    def _ranked(
        self, op: SearchOp, hits: list[tuple[tuple[str, ...], Bank, list[Memory]]]
    ) -> list[SearchItem]:
        best: dict[tuple[tuple[str, ...], str], tuple[float, Bank]] = {}
        for namespace, bank, memories in hits:
            for memory in memories:
                if memory.document_id is None:
                    continue
                key = (namespace, memory.document_id)
                score = memory.score or 0.0
                if key not in best or score > best[key][0]:
                    best[key] = (score, bank)
        items: list[SearchItem] = []
        for (namespace, doc_id), (score, bank) in sorted(best.items(), key=lambda kv: -kv[1][0]):
            doc = self._document(bank, doc_id)  # memories of chat transcripts etc. have no store value
            if doc is not None and _passes(doc.metadata[VALUE_KEY], op.filter):
                items.append(self._search_item(namespace, doc, score))
        return items[op.offset: op.offset + op.limit]

    def _listed(self, op: SearchOp, banks: list[tuple[tuple[str, ...], Bank]]) -> list[SearchItem]:
        docs = [(ns, d) for ns, bank in banks for d in bank.documents() if VALUE_KEY in d.metadata]
        docs = [(ns, d) for ns, d in docs if _passes(d.metadata[VALUE_KEY], op.filter)]
        docs.sort(key=lambda nd: nd[1].updated_at, reverse=True)  # newest first, like LangGraph's stores
        return [self._search_item(ns, d, None)
                for ns, d in docs[op.offset: op.offset + op.limit]]

    def _search(self, op: SearchOp) -> list[SearchItem]:
        banks = self._search_banks(tuple(op.namespace_prefix))
        if not op.query:
            return self._listed(op, banks)
        hits = [(ns, bank, bank.recall(op.query, budget=self.budget, max_memories=self._recall_size(op)).memories)
                for ns, bank in banks]
        return self._ranked(op, hits)

    async def _asearch(self, op: SearchOp) -> list[SearchItem]:
        banks = await asyncio.to_thread(self._search_banks, tuple(op.namespace_prefix))
        if not op.query:
            return await asyncio.to_thread(self._listed, op, banks)
        recalls = await asyncio.gather(*(bank.arecall(op.query, budget=self.budget,
                                                      max_memories=self._recall_size(op)) for _, bank in banks))
        hits = [(ns, bank, r.memories) for (ns, bank), r in zip(banks, recalls, strict=True)]
        return await asyncio.to_thread(self._ranked, op, hits)

    # namespaces ------------------------------------------------------------------------------------
    def _has_items(self, namespace: tuple[str, ...]) -> bool:
        bank = self._bank(namespace, create=False)
        return bank is not None and any(VALUE_KEY in d.metadata for d in bank.documents())

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found: set[tuple[str, ...]] = set()
        for namespace in self._namespaces():
            if not all(_condition(c.match_type, c.path, namespace) for c in op.match_conditions or ()):
                continue
            if not self._has_items(namespace):
                continue  # like LangGraph's stores: a namespace exists while it holds items
            found.add(namespace[: op.max_depth] if op.max_depth is not None else namespace)
        return sorted(found)[op.offset: op.offset + op.limit]

    # BaseStore -------------------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Execute Get/Put/Search/ListNamespaces operations in order."""
        results: list[Result] = []
        for op in ops:
            validate_op_namespace(op)
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise TypeError(f"unknown store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async twin of ``batch``: retain and recall use the core's async calls."""
        results: list[Result] = []
        for op in ops:
            validate_op_namespace(op)
            if isinstance(op, PutOp):
                await self._aput(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(await self._asearch(op))
            else:
                results.extend(await asyncio.to_thread(self.batch, [op]))
        return results


def _condition(match_type: str, path: Sequence[str], namespace: tuple[str, ...]) -> bool:
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path, strict=False) if match_type == "prefix" else zip(
        reversed(namespace), reversed(path), strict=False)
    return all(p == "*" or n == p for n, p in pairs)
