"""The structure ``docs/ARCHITECTURE.md`` describes, checked: an acyclic import graph, the store protocols,
and seams that take any implementation (an extractor given at open, a store without optional capabilities).
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import pytest

from hindsight_core import Hindsight
from hindsight_core.extract.base import ExtractedEntity, ExtractedFact, Extractor, ExtractorWithWork
from hindsight_core.extract.raw_extractor import RawExtractor
from hindsight_core.models import EntityType, Message, Network
from hindsight_core.stores import base
from hindsight_core.stores.sqlite import SQLiteGraphStore

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"hindsight_core": ROOT / "core", "langchain_hindsight": ROOT / "langchain_hindsight",
            "llama_index_hindsight": ROOT / "llama_index_hindsight"}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = [package, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every module of ours that ``name`` imports anywhere: top level, in functions, under TYPE_CHECKING."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base_parts = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base_parts, *([node.module] if node.module else [])])
            candidates = [target, *(f"{target}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        else:
            continue
        out.update(c for c in candidates if c in modules and c != name)
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_import_graph_has_no_cycle() -> None:
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    # Packages import their submodules (re-exports); a submodule importing its own package would close a loop.
    assert _cycles(graph) == []
    # Only the surfaces use the facade; no pipeline reaches through it.
    users = {m for m in graph if "hindsight_core.hindsight" in graph[m] and m.startswith("hindsight_core")}
    assert {_component(m) for m in users} <= {None, "bank", "cli", "explorer", "mcp_server"}


LAYERS: list[set[str]] = [
    {"models", "errors", "config", "validation", "actor", "access"},
    {"text", "temporal", "assets"},
    {"llm", "embedders", "extract", "stores"},
    {"vectors"},
    {"retain", "recall", "reflect", "observations", "opinions"},
    {"runtime"},
    {"engine", "portability"},
    {"hindsight", "bank"},
    {"cli", "explorer", "mcp_server"},
]
"""The components of ``hindsight_core`` (a folder, or a top-level module) by layer, lowest first: the tree of
docs/ARCHITECTURE.md."""


def _component(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "hindsight_core" and len(parts) > 1 else None


def test_each_component_imports_only_its_layer_and_those_below() -> None:
    layer_of = {c: n for n, layer in enumerate(LAYERS) for c in layer}
    modules = _modules()
    wrong = []
    for name, path in modules.items():
        here = _component(name)
        if here is None:
            continue  # the package itself re-exports the facade
        assert here in layer_of, f"{name}: component {here!r} is in no layer of docs/ARCHITECTURE.md"
        for target in _imports(name, path, modules):
            there = _component(target)
            if there is not None and layer_of.get(there, -1) > layer_of[here]:
                wrong.append(f"{name} -> {target}")
    assert wrong == []


def test_architecture_tree_lists_exactly_the_folders() -> None:
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    tree = doc.split("```text", 1)[1].split("```", 1)[0]
    listed = {m.group(1).rstrip("/") for m in re.finditer(r"^ +([\w/]+/)(?=\s|$)", tree, re.MULTILINE)}
    folders = {str(p.parent.relative_to(ROOT / "core")) for p in (ROOT / "core").rglob("__init__.py")} - {"."}
    assert listed == folders | {"data"}
    for layer in LAYERS:
        for component in layer:
            assert f"{component}/" in tree or f"{component}.py" in tree, component


def test_every_folder_says_what_lives_there() -> None:
    for init in (ROOT / "core").rglob("__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and len(doc) > 40, init


# opinions: one home for the rule, stores that compute nothing ------------------------------------------------
_QUERY_ARITHMETIC = re.compile(
    r"confidence\s*[-+*/]|[-+*/]\s*[$:?]?\w*confidence|\b(?:coalesce|ifnull|min|max|round)\s*\([^)]*confidence",
    re.IGNORECASE,
)
_MATH_CALLS = {"min", "max", "round", "abs", "sum"}


def _confidence_arithmetic(source: str) -> list[str]:
    """What in a module computes a confidence: a query string doing arithmetic on a confidence property, and in a
    function that touches a confidence, a float literal (a default, a bound), ``min``/``max``/``round``, or
    ``+ - * /`` on a confidence, on a value read as ``float(...)`` or on a name assigned from either."""
    found: list[str] = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _QUERY_ARITHMETIC.search(node.value):
            found.append(f"line {node.lineno}: query arithmetic on a confidence")
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if "confidence" not in (ast.get_source_segment(source, fn) or ""):
            continue
        tainted = {"confidence"}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and re.search(r"confidence|float\(", ast.unparse(node.value)):
                tainted |= {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        for node in ast.walk(fn):
            what = None
            if isinstance(node, ast.Constant) and isinstance(node.value, float):
                what = f"the number {node.value!r}"
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _MATH_CALLS:
                what = f"{node.func.id}()"
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.Div):
                text = ast.unparse(node)
                if {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} & tainted or re.search(
                        r"confidence|float\(", text):
                    what = f"arithmetic {text}"
            if what:
                found.append(f"line {node.lineno} in {fn.name}: {what}")
    return found


def test_stores_hold_no_confidence_arithmetic() -> None:
    """The stores write the confidence ``hindsight_core.opinions.confidence`` computed; they compute none."""
    found = {str(path.relative_to(ROOT)): hits for path in sorted((ROOT / "core" / "stores").rglob("*.py"))
             if (hits := _confidence_arithmetic(path.read_text(encoding="utf-8")))}
    assert found == {}


@pytest.mark.parametrize("source", [
    # what both stores held before the rule had one home
    "def apply(con, update):\n    row = con.execute('SELECT confidence FROM units').fetchone()\n"
    "    old = float(row[0]) if row[0] is not None else 0.5\n"
    "    new = min(1.0, max(0.0, old + float(update.delta)))\n    return old, new\n",
    "def apply(tx, d):\n    tx.run('MATCH (u) SET u.confidence = u.confidence + $d', d=d)\n",
    "def apply(con, d):\n    con.execute('UPDATE units SET confidence = MIN(1, confidence + ?)', (d,))\n",
    "def apply(unit, step):\n    unit.confidence = unit.confidence - step\n",
])
def test_the_check_finds_confidence_arithmetic(source: str) -> None:
    assert _confidence_arithmetic(source)


def test_one_ceiling_and_one_default_in_one_file() -> None:
    """``CEILING`` and ``DEFAULT_CONFIDENCE`` are defined once, in ``opinions/confidence.py``, and the opinion
    modules that used to carry their own (the old reflect modules) are gone."""
    defined = sorted(
        str(path.relative_to(ROOT)) for path in (ROOT / "core").rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name) and target.id in {"CEILING", "DEFAULT_CONFIDENCE"}
    )
    assert defined == ["core/opinions/confidence.py", "core/opinions/confidence.py"]
    for old in ("opinions", "grounded_confidence", "disposition", "reinforce", "opinion_candidates"):
        assert not (ROOT / "core" / "reflect" / f"{old}.py").exists(), old


def test_observations_are_their_own_component() -> None:
    """The observation modules live in ``observations/`` (no longer in ``reflect/``), and reading an entity's
    current observation is one function, ``observations.job.observation_of``, that the facade and the explorer
    call."""
    for old in ("observations", "observation_job", "observation_support", "observation_extract"):
        assert not (ROOT / "core" / "reflect" / f"{old}.py").exists(), old
    for module in ("job", "support", "extract", "summary"):
        assert (ROOT / "core" / "observations" / f"{module}.py").exists(), module
    for caller in ("bank.py", "explorer/queries.py"):
        calls = {node.func.id for node in ast.walk(ast.parse((ROOT / "core" / caller).read_text(encoding="utf-8")))
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
        assert "observation_of" in calls, caller


def test_the_check_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("name", sorted(_modules()))
def test_every_module_imports(name: str) -> None:
    importlib.import_module(name)


# the store protocols ----------------------------------------------------------------------------------------
NARROW = (base.BankStore, base.DocumentStore, base.UnitStore, base.OpinionStore, base.EntityStore,
          base.SearchStore, base.JobQueue, base.Leases, base.VectorMarks, base.IntegrityChecks, base.AuditLog)


def _methods(protocol: type) -> set[str]:
    return {n for n, v in vars(protocol).items() if callable(v) and not n.startswith("_")}


def test_graph_store_is_the_union_of_disjoint_protocols() -> None:
    seen: set[str] = set()
    for protocol in NARROW:
        methods = _methods(protocol)
        assert methods and not methods & seen, protocol.__name__
        seen |= methods
    every = {n for n in dir(base.GraphStore) if not n.startswith("_") and callable(getattr(base.GraphStore, n))}
    assert every == seen | {"close"}


def test_sqlite_store_satisfies_every_protocol_and_declares_no_optional_capability() -> None:
    store = SQLiteGraphStore(":memory:")
    try:
        assert all(isinstance(store, p) for p in (*NARROW, base.GraphStore))
        # Spreading activation is optional: recall falls back to the reference walk over ``neighbors``.
        assert not isinstance(store, base.SpreadingActivation)
    finally:
        store.close()


def test_neo4j_store_declares_spreading_activation() -> None:
    from hindsight_core.stores.neo4j import Neo4jGraphStore

    assert all(callable(getattr(Neo4jGraphStore, m, None)) for p in NARROW for m in _methods(p))
    assert callable(getattr(Neo4jGraphStore, "spread_activation", None))
    assert _methods(base.SpreadingActivation) == {"spread_activation"}


# an extractor given at open ---------------------------------------------------------------------------------
class KeywordExtractor:
    """A deterministic extractor without a model: one fact per message, capitalised words as entities."""

    def __init__(self) -> None:
        self.calls = 0

    def extract(
        self, messages: Sequence[Message], *, document_time: datetime, context: str | None = None
    ) -> list[ExtractedFact]:
        self.calls += 1
        return [
            ExtractedFact(
                text=f"{m.speaker} said: {m.text}", network=Network.WORLD, mentioned_at=m.timestamp or document_time,
                entities=[ExtractedEntity(name=w.strip(".,!?"), type=EntityType.OTHER)
                          for w in m.text.split()[1:] if w[:1].isupper()],
                sources=[m.id] if m.id else [], position=i,
            )
            for i, m in enumerate(messages)
        ]

    async def aextract(
        self, messages: Sequence[Message], *, document_time: datetime, context: str | None = None
    ) -> list[ExtractedFact]:
        return self.extract(messages, document_time=document_time, context=context)


class NoLLM:
    """Fails the test if anything asks for a model."""

    name = "no-llm"

    def generate(self, *args: object, **kwargs: object) -> object:
        raise AssertionError("no model call expected")

    async def agenerate(self, *args: object, **kwargs: object) -> object:
        raise AssertionError("no model call expected")


def test_open_takes_any_extractor(tmp_path: Path) -> None:
    extractor = KeywordExtractor()
    assert isinstance(extractor, Extractor) and not isinstance(extractor, ExtractorWithWork)
    assert isinstance(RawExtractor(), ExtractorWithWork)
    with Hindsight.open(tmp_path / "m", extractor=extractor, llm=NoLLM(), start_worker=False) as hs:
        bank = hs.bank("b")
        result = bank.retain([{"speaker": "Ann", "text": "I moved to Lisbon with Pepper.", "id": "m1"}],
                             background=False)
        assert extractor.calls == 0  # the raw message is stored first; the extractor runs in the facts job
        assert [m.text for m in result.memories] == ["Ann: I moved to Lisbon with Pepper."]
        assert hs.worker.run_once() and extractor.calls == 1
        facts = [m for m in bank.memories(hs.store.units_of_document("b", result.document_id)) if m.cites is not None]
        assert [m.text for m in facts] == ["Ann said: I moved to Lisbon with Pepper."]
        assert {"Lisbon", "Pepper"} <= set(facts[0].entities) and facts[0].sources == ["m1"]
        assert facts[0].cites == [result.memories[0].id]
        assert bank.recall("Where did Ann move?", max_memories=1).memories[0].id in {facts[0].id, *facts[0].cites}


async def test_open_takes_any_extractor_async(tmp_path: Path) -> None:
    extractor = KeywordExtractor()
    with Hindsight.open(tmp_path / "m", extractor=extractor, llm=NoLLM(), start_worker=False) as hs:
        result = await hs.bank("b").aretain("Bo adopted a cat named Miso.", background=False)
        assert extractor.calls == 0 and result.job_id
        assert hs.worker.run_once() and extractor.calls == 1
        units = hs.bank("b").memories(hs.store.units_of_document("b", result.document_id))
        assert any(m.cites is not None and "Miso" in m.entities for m in units)


def test_every_type_ignore_says_why() -> None:
    """A ``type: ignore`` carries a reason: a comment after it, or a comment on the line above."""
    unexplained = []
    for name, path in _modules().items():
        lines = path.read_text(encoding="utf-8").splitlines()
        for n, line in enumerate(lines):
            if "type: ignore" not in line:
                continue
            after = line.split("type: ignore", 1)[1]
            reason_after = "#" in after
            reason_above = n > 0 and lines[n - 1].strip().startswith("#")
            if not (reason_after or reason_above):
                unexplained.append(f"{name}:{n + 1}")
    assert unexplained == []
