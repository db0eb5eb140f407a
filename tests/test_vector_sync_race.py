"""A unit forgotten while its vector is being re-embedded leaves no vector behind (``VectorSync._follow_graph``
reads the graph again after writing), on the embedded backend with the real embedder."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hindsight_core import Hindsight


class ForgetDuringEmbed:
    """The store's embedder, with a forget of ``memory_id`` run (once) in the middle of the next batch."""

    def __init__(self, inner: Any, forget: Any) -> None:
        self.inner, self.forget, self.fired = inner, forget, False
        self.name, self.dimension = inner.name, inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not self.fired:
            self.fired = True
            self.forget()
        return np.asarray(self.inner.embed(texts))

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.inner.embed_query(texts))


def test_a_forget_racing_a_reembed_leaves_no_orphan_vector(tmp_path: Path) -> None:
    with Hindsight.open(tmp_path / "memory") as hs:
        bank = hs.bank("ana")
        bank.retain([{"speaker": "Ana", "text": "I moved to Porto last month.", "id": "m1"},
                     {"speaker": "Ana", "text": "Our cat Miso is twelve now.", "id": "m2"}], extract=False)
        ids = sorted(m.id for m in bank.recall("Porto cat Miso", budget=500).memories)
        assert len(ids) == 2 and hs.index.count("ana") == 2
        victim = ids[0]
        sync = hs.engine.vectors
        sync.embedder = ForgetDuringEmbed(sync.embedder, lambda: bank.forget(memory_id=victim))  # type: ignore[assignment]
        assert sync.reindex("ana", ids)
        assert hs.index.count("ana") == 1  # before the fix: 2, the forgotten unit's vector written back
        assert [m.id for m in bank.recall("Where did Ana move?", budget=500).memories] == [ids[1]]
        assert victim not in {unit for _, unit in hs.store.vector_marks(sync.owner, 100)}  # nothing left to sync
