"""Child process of the killed-reembed test: re-embeds a bank in batches of 8 with ``TruncatedMiniLM`` and stops
for good (until killed) once ``STALL_AT`` vectors are written, printing each progress step on stdout.

Usage: python reembed_child.py STORE_DIR BANK STALL_AT
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/, for ``support``

from hindsight_core.config import Settings
from hindsight_core.stores.locate import open_graph, open_index
from hindsight_core.vectors.reembed import reembed_bank
from support.small_embedder import TruncatedMiniLM


def main() -> None:
    """Run the re-embed until it stalls (the parent kills this process there)."""
    root, bank_id, stall_at = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    index = open_index(None, root)
    store = open_graph(None, root)

    def progress(done: int, total: int) -> None:
        print(f"{done} {total}", flush=True)
        if done >= stall_at:
            print("stalled", flush=True)
            time.sleep(600)

    reembed_bank(store, index, TruncatedMiniLM(), Settings(), bank_id, batch_size=8, progress=progress)
    print("finished", flush=True)


if __name__ == "__main__":
    main()
