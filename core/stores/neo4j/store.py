"""``Neo4jGraphStore``: the per-protocol mixins composed over one driver core, with the driver's errors raised
as ``StoreError``."""

from __future__ import annotations

from ..base import translate_errors
from .audit import Neo4jAudit
from .banks import Neo4jBanks
from .connection import _driver_errors
from .documents import Neo4jDocuments
from .entities import Neo4jEntities
from .integrity import Neo4jIntegrity
from .jobs import Neo4jJobQueue, Neo4jLeases
from .opinions import Neo4jOpinions
from .search import Neo4jSearch
from .units import Neo4jUnits
from .vector_marks import Neo4jVectorMarks


@translate_errors(_driver_errors, lambda self: f"Neo4j graph store at {self.uri}")
class Neo4jGraphStore(
    Neo4jBanks, Neo4jDocuments, Neo4jUnits, Neo4jOpinions, Neo4jEntities, Neo4jSearch, Neo4jJobQueue, Neo4jLeases,
    Neo4jVectorMarks, Neo4jIntegrity, Neo4jAudit,
):
    """Graph store on a Neo4j 5 server (or ArcadeDB's Neo4j-compatible Bolt endpoint)."""
