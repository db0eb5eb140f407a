"""The adapters name their extra when its packages are missing (issue 41, the command line).

Each check runs in a child process whose import system refuses the framework's modules, as the plain install
(``pip install hindsight-memory`` without ``[langchain]`` or ``[llamaindex]``) would.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

BLOCKED_IMPORT = textwrap.dedent("""
    import importlib.abc, sys

    class Blocker(importlib.abc.MetaPathFinder):
        # Refuses the framework's top-level packages, as an environment without them would.
        def find_spec(self, fullname, path, target=None):
            if fullname.partition(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
            return None

    sys.meta_path.insert(0, Blocker())
    try:
        import ADAPTER
    except ImportError as exc:
        print(type(exc).__name__)
        print(exc)
    else:
        print("imported")
""")


def _import_without(adapter: str, blocked: tuple[str, ...]) -> list[str]:
    code = f"BLOCKED = {blocked!r}\n" + BLOCKED_IMPORT.replace("ADAPTER", adapter)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()


@pytest.mark.parametrize(("adapter", "blocked", "extra"), [
    ("langchain_hindsight", ("langchain_core",), "langchain"),
    ("langchain_hindsight", ("langgraph",), "langchain"),
    ("langchain_hindsight", ("langchain_openai",), "langchain"),
    ("llama_index_hindsight", ("llama_index",), "llamaindex"),
])
def test_an_adapter_without_its_framework_names_the_extra(adapter: str, blocked: tuple[str, ...], extra: str) -> None:
    kind, message = _import_without(adapter, blocked)
    assert kind == "ImportError"  # not the bare ModuleNotFoundError of a module deep inside the adapter
    assert f"pip install 'hindsight-memory[{extra}]'" in message
    assert blocked[0] in message  # and which package is missing
    assert "\n" not in message


def test_the_named_extras_exist_in_the_package_metadata() -> None:
    from importlib.metadata import metadata

    extras = metadata("hindsight-memory").get_all("Provides-Extra") or []
    assert {"langchain", "llamaindex"} <= set(extras)


def test_a_missing_module_outside_the_framework_is_not_disguised() -> None:
    # hindsight_core itself missing is not a matter of the adapter's extra: the original error stands.
    kind, message = _import_without("langchain_hindsight", ("hindsight_core",))
    assert kind == "ModuleNotFoundError" and "hindsight_core" in message and "pip install" not in message


def test_with_the_framework_installed_the_adapters_import() -> None:
    assert _import_without("langchain_hindsight", ("no_such_module",)) == ["imported"]
    assert _import_without("llama_index_hindsight", ("no_such_module",)) == ["imported"]
