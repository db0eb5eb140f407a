"""The per-bank profile resource: ``hindsight://banks/{bank_id}/profile``, the bank's name, background and
disposition as JSON.

One URI template serves every bank; ``profile_resources`` lists one concrete resource per bank visible now (banks
are created at run time, so the list is computed on each request rather than registered once).
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.mcpserver.resources import ResourceSecurity
from mcp.shared.uri_template import UriTemplate
from mcp_types import Resource

from hindsight_core import BankNotFoundError, Hindsight, InvalidInputError
from hindsight_core.cli.run import one_line

from .scope import BankScope, unknown_bank_message

PROFILE_TEMPLATE = "hindsight://banks/{bank_id}/profile"
"""The profile resource's URI template; the bank id is percent-encoded in it."""
PROFILE_MIME = "application/json"
_TEMPLATE = UriTemplate.parse(PROFILE_TEMPLATE)


def profile_uri(bank_id: str) -> str:
    """The profile resource's URI for ``bank_id`` (any character of the id is percent-encoded)."""
    return _TEMPLATE.expand({"bank_id": bank_id})


def read_profile(hs: Hindsight, scope: BankScope, bank_id: str) -> str:
    """A bank's profile as JSON; ``ResourceNotFoundError`` for a bank that does not exist or is out of scope."""
    if not scope.allows(bank_id):
        raise ResourceNotFoundError(f"unknown bank: {scope.refusal(bank_id)}")
    if not scope.readable(bank_id):  # outside the token's banks: worded as a bank that does not exist
        raise ResourceNotFoundError(f"unknown bank: {unknown_bank_message(bank_id)}")
    try:
        profile = hs.bank(bank_id, create=False).profile
    except (BankNotFoundError, InvalidInputError) as exc:
        # The library's message lists the store's banks; a server fixed to one shows no other.
        shown = f"bank {bank_id!r} does not exist" if scope.fixed is not None else one_line(exc)
        raise ResourceNotFoundError(f"unknown bank: {shown}") from exc
    return profile.model_dump_json(indent=2)


def profile_resources(hs: Hindsight, scope: BankScope) -> list[Resource]:
    """One profile resource per bank the running request can reach."""
    return [
        Resource(uri=profile_uri(p.id), name=f"{p.id} profile", title=f"Profile of bank {p.name}",
                 description="the bank's name, first-person background and default disposition",
                 mime_type=PROFILE_MIME)
        for p in scope.visible(hs.banks())
    ]


def register_profile_resource(server: MCPServer[Any], hs: Hindsight, scope: BankScope) -> None:
    """Serve ``PROFILE_TEMPLATE`` on ``server``."""

    async def bank_profile(bank_id: str) -> str:
        """A memory bank's profile: name, first-person background and default disposition (JSON)."""
        return await asyncio.to_thread(read_profile, hs, scope, bank_id)

    # The SDK's default policy rejects template values that look like paths ('..', '/x'); a bank id is no path
    # (it only ever reaches the store as a query parameter), and any string is a valid bank id.
    server.resource(PROFILE_TEMPLATE, name="bank_profile", title="Bank profile", mime_type=PROFILE_MIME,
                    security=ResourceSecurity(exempt_params={"bank_id"}))(bank_profile)
