"""What the Chroma index stores with each vector and the ``where`` it filters on, from the typed records."""

from __future__ import annotations

from typing import Any

from ..models import Network
from .base import VectorFilter, VectorMeta


def chroma_metadata(meta: VectorMeta) -> dict[str, Any] | None:
    """A vector's Chroma metadata: ``network`` and the occurrence interval as epoch seconds ``t0``/``t1``.

    Chroma rejects an empty metadata dict: none is sent as None.
    """
    out: dict[str, Any] = {}
    if meta.network is not None:
        out["network"] = Network(meta.network).value
    if meta.start is not None:
        out["t0"] = meta.start.timestamp()
        out["t1"] = (meta.end or meta.start).timestamp()
    return out or None


def chroma_where(filter: VectorFilter | None) -> dict[str, Any] | None:
    """The Chroma ``where`` of a typed filter: networks, and overlap of [t0, t1] with the time range (ids are
    passed to Chroma separately)."""
    if filter is None:
        return None
    clauses: list[dict[str, Any]] = []
    if filter.networks:
        clauses.append({"network": {"$in": [Network(n).value for n in filter.networks]}})
    window = filter.time_range
    if window is not None:
        if window.end is not None:
            clauses.append({"t0": {"$lte": window.end.timestamp()}})
        if window.start is not None:
            clauses.append({"t1": {"$gte": window.start.timestamp()}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}
