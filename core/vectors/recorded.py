"""Which embedder a store opened without one should use: the built-in model its banks recorded, if they agree.

A store keeps the embedder its banks were built with (issue 40): the default for new stores became ``mpnet-int8``,
and a store of MiniLM banks opened the usual way keeps MiniLM rather than failing with ``EmbedderMismatchError``;
``factory.default_for_recorded`` decides and warns once, naming ``hindsight reembed``.
"""

from __future__ import annotations

from ..embedders.factory import default_for_recorded
from ..stores.base import GraphStore, VectorIndex


def recorded_embedders(store: GraphStore, index: VectorIndex) -> set[str]:
    """The embedder names the banks' vector collections record (empty for a new store or an index that does not
    say: only indexes with ``collection_embedder``, the rebuildable ones, do)."""
    read = getattr(index, "collection_embedder", None)
    if read is None:
        return set()
    names: set[str] = set()
    for profile in store.list_banks():
        got = read(profile.id)
        if got is not None and got[0] and got[0] != "None":
            names.add(got[0])
    return names


def recorded_choice(store: GraphStore, index: VectorIndex, *, where: str = "this store") -> str | None:
    """The embedder name to open ``store`` with when none is named (None: the default)."""
    return default_for_recorded(recorded_embedders(store, index), where=where)
