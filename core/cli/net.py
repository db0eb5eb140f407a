"""Network helpers shared by the servers (the MCP HTTP transport and the memory explorer)."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """Whether binding to ``host`` keeps a server reachable from this machine only (``localhost``, any
    ``127.0.0.0/8`` address, ``::1``; case and IPv6 brackets ignored)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
