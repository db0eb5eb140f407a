"""An in-memory SQLite store (``Hindsight.open(None)``) used from several threads at once: its shared cache takes
table locks that SQLite's busy timeout does not wait for, so without serialising the store's calls a heartbeat
thread beside a retain failed with "database table is locked" (seen retaining a real chat)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

from hindsight_core.models import BankProfile
from hindsight_core.stores.records import Owner
from hindsight_core.stores.sqlite import SQLiteGraphStore


def test_writers_and_readers_on_threads_never_see_a_table_lock() -> None:
    store = SQLiteGraphStore(":memory:")
    now = datetime.now(UTC)
    store.register_owner(Owner(id="o", host="h", pid=1, started_at=now, heartbeat_at=now))
    errors: list[BaseException] = []

    def hammer(job: str) -> None:
        try:
            for i in range(1000):
                if job == "banks":
                    store.create_bank(BankProfile(id=f"b{i}", name=f"bank {i}"))
                    store.list_banks()
                else:
                    assert store.heartbeat("o", datetime.now(UTC))
                    store.list_owners()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(j,)) for j in ("banks", "beat", "beat")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    banks = len(store.list_banks())
    store.close()
    assert errors == []
    assert banks == 1000  # every write landed
