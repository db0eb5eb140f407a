"""Process leases: which processes are alive, so that a dead one's work is taken over and a live one's never is.

Each open ``Hindsight`` registers an owner (a random id, its host and pid) in the graph store and renews it
from a heartbeat thread. Jobs it runs, documents it extracts and vector marks it holds name that owner. An
owner is dead when its heartbeat is older than the lease's ``ttl_s``, or at once when it ran on this host
and its pid is gone (a SIGKILLed process is noticed on the next open, not ``ttl_s`` later). Opening a store
therefore never steals a live process's job, while a dead process's jobs still run.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from datetime import timedelta
from functools import cache
from pathlib import Path

from ..models import utcnow
from ..stores.base import Leases, Owner

log = logging.getLogger(__name__)


@cache
def host_key() -> str:
    """This host as leases see it: hostname, kernel boot id and pid namespace (a pid means nothing elsewhere)."""
    parts = [socket.gethostname()]
    try:
        parts.append(Path("/proc/sys/kernel/random/boot_id").read_text().strip())
    except OSError:
        parts.append("-")
    try:
        parts.append(os.readlink("/proc/self/ns/pid"))
    except OSError:
        parts.append("-")
    return "|".join(parts)


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host (a zombie counts as dead)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


class ProcessLease:
    """This process's owner record in a store, renewed by a daemon heartbeat thread.

    ``on_beat`` (optional) runs in the heartbeat thread every ``maintenance_every`` beats: the facade uses it
    to take over dead processes' work while the process is otherwise idle.
    """

    def __init__(
        self,
        store: Leases,
        *,
        heartbeat_s: float = 5.0,
        ttl_s: float = 30.0,
        on_beat: Callable[[], object] | None = None,
        maintenance_every: int = 3,
    ) -> None:
        """A lease on ``store``; nothing is written until ``start``."""
        self.store = store
        self.id = uuid.uuid4().hex
        self.heartbeat_s = heartbeat_s
        self.ttl_s = ttl_s
        self.on_beat = on_beat
        self.maintenance_every = max(1, maintenance_every)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _record(self) -> Owner:
        now = utcnow()
        return Owner(id=self.id, host=host_key(), pid=os.getpid(), started_at=now, heartbeat_at=now)

    def start(self) -> None:
        """Register this process and start renewing the lease."""
        self.store.register_owner(self._record())
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="hindsight-lease", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop renewing and remove the owner record (what it still held goes back to nobody)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        try:
            self.store.remove_owner(self.id)
        except Exception as exc:  # closing must not fail because the server went away; the lease expires
            log.warning("could not remove lease %s: %s", self.id, exc)

    def _loop(self) -> None:
        beats = 0
        while not self._stop.wait(self.heartbeat_s):
            try:
                if not self.store.heartbeat(self.id, utcnow()):
                    # Declared dead (a pause longer than the ttl): register again. Work taken over meanwhile
                    # may run twice; every background effect is applied once per (target, evidence).
                    log.warning("lease %s had expired; registering again", self.id)
                    self.store.register_owner(self._record())
                beats += 1
                if self.on_beat is not None and beats % self.maintenance_every == 0:
                    self.on_beat()
            except Exception:  # a store hiccup must not kill the heartbeat
                log.exception("lease heartbeat failed")

    def is_dead(self, owner: Owner) -> bool:
        """Whether ``owner`` stopped: heartbeat older than the ttl, or its pid gone on this host."""
        if owner.id == self.id:
            return False
        if utcnow() - owner.heartbeat_at > timedelta(seconds=self.ttl_s):
            return True
        return owner.host == host_key() and not pid_alive(owner.pid)

    def dead_owners(self) -> list[str]:
        """Ids of registered owners that are dead."""
        return [o.id for o in self.store.list_owners() if self.is_dead(o)]
