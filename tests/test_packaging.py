"""What the wheels hold, and that building them prints no warning of our own packaging's making.

Both distributions are built from a copy of the working tree (build output never lands in the checkout, which
others may be using), without build isolation (offline: the environment's setuptools does the build).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# Not sources: what .gitignore lists, plus the repository's own metadata.
IGNORED = (".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".ruff_cache",
           ".mypy_cache", ".hypothesis", "results", "memory", "log", ".cache")
# Python warnings (SetuptoolsDeprecationWarning, BuildBackendWarning, ...) and deprecation notices; pip's own
# "WARNING:" lines about the environment (index locations and the like) are not ours.
WARNING = re.compile(r"\b\w*Warning\b|deprecat|is absent from the `packages` configuration", re.IGNORECASE)
# Source folder -> import name of the engine distribution's packages (``core/`` is mapped in pyproject.toml).
ENGINE_SOURCES = {"core": "hindsight_core", "langchain_hindsight": "langchain_hindsight",
                  "llama_index_hindsight": "llama_index_hindsight"}
Built = tuple[dict[str, zipfile.ZipFile], str, Path]


def _is_warning(line: str) -> bool:
    return bool(WARNING.search(line)) and not line.startswith("WARNING: ")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The engine's and the benchmarks' wheels by distribution name, pip's whole output, and the copied tree."""
    root = tmp_path_factory.mktemp("packaging")
    tree = root / "tree"
    shutil.copytree(REPO, tree, ignore=shutil.ignore_patterns(*IGNORED))
    out = root / "wheels"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-cache-dir",
         "-w", str(out), str(tree), str(tree / "benchmarks")],
        capture_output=True, text=True, timeout=300, check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    wheels = {w.name.split("-")[0]: zipfile.ZipFile(w) for w in out.glob("*.whl")}
    assert set(wheels) == {"hindsight_memory", "hindsight_memory_bench"}, output
    return wheels, output, tree


def _sources(tree: Path, folder: str, package: str) -> set[str]:
    """Every file under ``tree/folder`` as the wheel names it (``core/x.py`` -> ``hindsight_core/x.py``)."""
    return {f"{package}/{path.relative_to(tree / folder).as_posix()}" for path in (tree / folder).rglob("*")
            if path.is_file() and "__pycache__" not in path.parts}


def test_building_prints_no_packaging_warning(built: Built) -> None:
    _, output, _ = built
    warnings = [line for line in output.splitlines() if _is_warning(line)]
    assert not warnings, "\n".join(warnings)


def test_engine_wheel_holds_the_engine_its_data_and_the_adapters_only(built: Built) -> None:
    wheels, _, tree = built
    wheel = wheels["hindsight_memory"]
    names = wheel.namelist()
    packaged = {name for name in names if not name.split("/")[0].endswith(".dist-info")}
    # Every source and data file, so a new subpackage missing from pyproject.toml's list fails here.
    expected = set().union(*(_sources(tree, folder, package) for folder, package in ENGINE_SOURCES.items()))
    assert packaged == expected, {"missing": sorted(expected - packaged), "extra": sorted(packaged - expected)}
    for required in ("hindsight_core/__init__.py", "hindsight_core/cli/commands.py",
                     "hindsight_core/data/demo_conversation.json", "hindsight_core/data/nicknames_extra.json",
                     "langchain_hindsight/__init__.py", "llama_index_hindsight/__init__.py"):
        assert required in names
    strays = [n for n in names if re.search(r"bench|servers\.py|tests?/|conftest|longmemeval", n)]
    assert not strays, strays
    metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: Apache-2.0" in metadata
    assert "Provides-Extra: bench" not in metadata  # the benchmarks are their own distribution
    assert 'Requires-Dist: mypy==2.4.1; extra == "dev"' in metadata
    entry_points = wheel.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert "hindsight = hindsight_core.cli:main" in entry_points


def test_bench_wheel_holds_the_benchmarks_their_data_and_their_commands(built: Built) -> None:
    wheels, _, tree = built
    wheel = wheels["hindsight_memory_bench"]
    names = wheel.namelist()
    packaged = {name for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert packaged == _sources(tree / "benchmarks", "hindsight_bench", "hindsight_bench")
    for required in ("hindsight_bench/cli.py", "hindsight_bench/locomo.py", "hindsight_bench/data/entity_pairs.jsonl",
                     "hindsight_bench/data/longmemeval_tiny.json"):
        assert required in names
    metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "Requires-Dist: hindsight-memory==0.1.0" in metadata
    entry_points = wheel.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert "[hindsight.cli]\nbench = hindsight_bench.cli:main" in entry_points
    assert "hindsight-bench = hindsight_bench.cli:main" in entry_points
