"""Switching a bank to another embedder without retaining again (``Bank.reembed``, ``hindsight reembed``): the new
vectors equal a fresh retain's, the swap is all or nothing, a killed run leaves the old vectors in use and resumes,
and retains made meanwhile are not lost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.small_embedder import NAME, TruncatedMiniLM

from hindsight_core import EmbedderMismatchError, Hindsight
from hindsight_core.cli.commands import main as cli_main
from hindsight_core.cli.demo import load_conversation
from hindsight_core.cli.formats import Session, locomo_sessions
from hindsight_core.runtime.integrity import check
from hindsight_core.stores.chroma import collection_name
from hindsight_core.stores.chroma_generations import REGISTRY, read_generation

SESSIONS = locomo_sessions(load_conversation())  # 4 sessions of 15 turns


@pytest.fixture(scope="module")
def small() -> TruncatedMiniLM:
    """The second vector space, loaded once."""
    return TruncatedMiniLM()


def _retain(hs: Hindsight, bank_id: str, sessions: list[Session]) -> None:
    bank = hs.bank(bank_id)
    for s in sessions:
        bank.retain(s.messages, timestamp=s.timestamp, document_id=s.document_id, extract=False)


def _vectors_by_source(hs: Hindsight, bank_id: str) -> dict[str, np.ndarray]:
    """Each raw unit's vector, keyed by the message it came from (unit ids differ between banks)."""
    units = hs.bank(bank_id).memories(sorted(hs.store.unit_ids(bank_id)))
    vectors = hs.index.get_embeddings(bank_id, [u.id for u in units])
    return {u.sources[0]: vectors[u.id] for u in units}


def _collections(hs: Hindsight) -> set[str]:
    return {c.name for c in hs.index.client.list_collections()}  # type: ignore[attr-defined]


def test_reembed_equals_a_fresh_retain_and_swaps_the_collection(tmp_path: Path) -> None:
    """minilm -> minilm-int8: every vector is what a retain with the int8 model stores, in a new collection that
    replaced the old one (deleted), with the store's invariants intact and the audit trail told."""
    with Hindsight.open(tmp_path / "m", start_worker=False) as hs:
        _retain(hs, "maya", SESSIONS[:2])
        before = _vectors_by_source(hs, "maya")
        old = read_generation(hs.index.client, collection_name("maya")).active  # type: ignore[attr-defined]
        steps: list[tuple[int, int]] = []
        report = hs.bank("maya").reembed("minilm-int8", batch_size=16, progress=lambda d, n: steps.append((d, n)))
        assert (report.units, report.embedded, report.resumed, report.dropped) == (30, 30, 0, 0)
        assert steps[-1] == (30, 30) and len(steps) >= 3
        new = read_generation(hs.index.client, collection_name("maya")).active  # type: ignore[attr-defined]
        assert new != old and _collections(hs) == {new, REGISTRY}
        assert check(hs).ok
        after = _vectors_by_source(hs, "maya")
        assert [e.operation for e in hs.bank("maya").audit(limit=1)] == ["reembed"]
    with Hindsight.open(tmp_path / "m", embedder="minilm-int8", start_worker=False) as hs:
        _retain(hs, "fresh", SESSIONS[:2])
        fresh = _vectors_by_source(hs, "fresh")
        assert hs.reconciled["maya"] == {"reindexed": 0, "dropped": 0}
    assert set(after) == set(fresh) == set(before)
    for source, vector in after.items():
        np.testing.assert_allclose(vector, fresh[source], atol=2e-3)
    # the int8 model differs from the default's float32 documents: the vectors really were recomputed
    assert max(float(np.abs(after[s] - before[s]).max()) for s in after) > 1e-3


def test_a_bank_switched_to_another_space_opens_with_it_only(tmp_path: Path, small: TruncatedMiniLM) -> None:
    with Hindsight.open(tmp_path / "m", start_worker=False) as hs:
        _retain(hs, "maya", SESSIONS)
        report = hs.reembed("maya", small)
        assert (report.previous_embedder, report.previous_dimension) == ("all-MiniLM-L6-v2", 384)
        assert (report.embedder, report.dimension) == (NAME, 192)
        with pytest.raises(EmbedderMismatchError):
            hs.bank("maya")  # this Hindsight keeps MiniLM, which the bank no longer has
    with pytest.raises(EmbedderMismatchError, match=f"{NAME}.*all-MiniLM-L6-v2"):
        Hindsight.open(tmp_path / "m", start_worker=False)
    with Hindsight.open(tmp_path / "m", embedder=small, start_worker=False) as hs:
        assert check(hs).ok and hs.index.count("maya") == 60
        recall = hs.bank("maya").recall("What did Maya name her dog?", budget=300)
        assert any("Pepper" in m.text for m in recall.memories[:3])


def test_cli_reembed_json_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "m")
    with Hindsight.open(path, start_worker=False) as hs:
        _retain(hs, "maya", SESSIONS[:1])
        _retain(hs, "jonah", SESSIONS[1:2])
    capsys.readouterr()
    assert cli_main(["--path", path, "reembed", "--all", "--embedder", "minilm-int8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(b["bank_id"], b["units"], b["embedded"]) for b in out["banks"]] == [("jonah", 15, 15), ("maya", 15, 15)]
    assert cli_main(["--path", path, "reembed", "nobody", "--embedder", "minilm-int8"]) == 2
    assert "no bank 'nobody'" in capsys.readouterr().err
    assert cli_main(["--path", path, "reembed", "--embedder", "minilm-int8"]) == 2
    assert cli_main(["--path", path, "reembed", "maya", "--embedder", "no-such-model"]) == 2
    assert "unknown embedder" in capsys.readouterr().err
    assert cli_main(["--path", str(tmp_path / "none"), "reembed", "maya", "--embedder", "minilm"]) == 2
    assert not (tmp_path / "none").exists()


def test_retains_made_during_a_reembed_are_caught_up_before_the_swap(tmp_path: Path, small: TruncatedMiniLM) -> None:
    """Another writer keeps retaining with the old embedder while the re-embed runs: its units get new vectors
    before the swap, its forgotten ones are dropped, and nothing needs reconciling afterwards."""
    with Hindsight.open(tmp_path / "m", start_worker=False) as hs:
        _retain(hs, "maya", SESSIONS[:3])
        bank = hs.bank("maya")
        victim = bank.memories(sorted(hs.store.unit_ids("maya")))[0].id
        writes: list[int] = []

        def meanwhile(done: int, total: int) -> None:
            if done >= 8 and not writes:  # once, after the first batch is written
                writes.append(done)
                _retain(hs, "maya", SESSIONS[3:])
                bank.forget(memory_id=victim)

        report = bank.reembed(small, batch_size=8, progress=meanwhile)
        assert writes and report.units == 59 and report.embedded == 60 and report.dropped == 1
    with Hindsight.open(tmp_path / "m", embedder=small, start_worker=False) as hs:
        assert hs.reconciled["maya"] == {"reindexed": 0, "dropped": 0}
        assert check(hs).ok and hs.index.count("maya") == 59


def test_a_killed_reembed_leaves_the_old_vectors_in_use_and_resumes(tmp_path: Path, small: TruncatedMiniLM) -> None:
    """SIGKILL half way: the bank still opens (and recalls) with MiniLM, ``check`` is clean, the pending collection
    holds what was written; the rerun embeds only the rest, swaps, and the old collection is gone."""
    root = tmp_path / "m"
    with Hindsight.open(root, start_worker=False) as hs:
        _retain(hs, "maya", SESSIONS)
        old = read_generation(hs.index.client, collection_name("maya")).active  # type: ignore[attr-defined]
    child = Path(__file__).parent / "support" / "reembed_child.py"
    proc = subprocess.Popen([sys.executable, str(child), str(root), "maya", "24"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.strip())
            if line.strip() == "stalled":
                break
    finally:
        proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
    assert lines[-1] == "stalled", (lines, err[-2000:])
    assert lines[-2] == "24 60"
    with Hindsight.open(root, start_worker=False) as hs:  # MiniLM still opens the bank: nothing was swapped
        generation = read_generation(hs.index.client, collection_name("maya"))  # type: ignore[attr-defined]
        assert generation.active == old and generation.pending
        assert hs.reconciled["maya"] == {"reindexed": 0, "dropped": 0}
        assert check(hs).ok and hs.index.count("maya") == 60
        assert any("Pepper" in m.text for m in hs.bank("maya").recall("What did Maya name her dog?").memories[:3])
        texts_before = small.texts
        report = hs.reembed("maya", small, batch_size=8)
        assert (report.resumed, report.embedded, report.units) == (24, 36, 60)
        assert small.texts - texts_before == 36  # fewer embeddings than units: resumed, not redone
        assert _collections(hs) == {generation.pending, REGISTRY}
    with Hindsight.open(root, embedder=small, start_worker=False) as hs:
        assert check(hs).ok and hs.index.count("maya") == 60
        recall = hs.bank("maya").recall("What did Maya name her dog?")
        assert any("Pepper" in m.text for m in recall.memories[:3])


def test_a_rerun_with_another_embedder_starts_over_and_a_dead_swap_is_finished(tmp_path: Path,
                                                                                small: TruncatedMiniLM) -> None:
    """A pending collection of another embedder is dropped, not mixed in; a swap whose process died before the old
    collection was deleted leaves it recorded as retired, and the next re-embed deletes it."""
    from hindsight_core.stores.chroma_generations import Generation, write_generation

    with Hindsight.open(tmp_path / "m", start_worker=False) as hs:
        _retain(hs, "maya", SESSIONS[:1])
        client: Any = hs.index.client  # type: ignore[attr-defined]
        assert hs.index.begin_rebuild("maya", "other-model", 192) == set()  # type: ignore[attr-defined]
        abandoned = read_generation(client, collection_name("maya")).pending
        report = hs.reembed("maya", small)
        assert (report.resumed, report.embedded) == (0, 15)
        assert abandoned not in _collections(hs)
        # as if the process died between the swap and deleting the replaced collection:
        current = read_generation(client, collection_name("maya")).active
        stale = client.create_collection("hs_stale_test", embedding_function=None)
        write_generation(client, collection_name("maya"), Generation(active=current, retired=stale.name))
    with Hindsight.open(tmp_path / "m", embedder=small, start_worker=False) as hs:
        assert check(hs).ok
        hs.reembed("maya", small)
        assert "hs_stale_test" not in _collections(hs)
        hs.delete_bank("maya")
        assert _collections(hs) == {REGISTRY}


def test_bad_arguments_are_typed_errors() -> None:
    from hindsight_core.errors import BankNotFoundError, InvalidInputError

    with Hindsight.open(None, start_worker=False) as hs:
        bank = hs.bank("maya")
        bank.retain("Maya adopted a dog named Pepper.", extract=False)
        for bad in (42, object(), "no-such-model"):
            with pytest.raises(InvalidInputError):
                bank.reembed(bad)
        with pytest.raises(BankNotFoundError):
            hs.reembed("nobody", "minilm-int8")
        assert check(hs).ok and hs.index.count("maya") == 1


@pytest.mark.slow
def test_minilm_bank_switched_to_mpnet_equals_an_mpnet_retain(tmp_path: Path) -> None:
    """The acceptance case at suite size (30 turns; ``hindsight bench reembed`` runs a whole LoCoMo conversation):
    a MiniLM bank re-embedded with mpnet holds the vectors an mpnet retain stores, within mpnet's bf16 batch noise,
    and only opens with mpnet."""
    with Hindsight.open(tmp_path / "m", start_worker=False) as hs:
        _retain(hs, "maya", SESSIONS[:2])
        report = hs.reembed("maya", "mpnet")
        assert (report.embedder, report.dimension, report.units) == ("all-mpnet-base-v2", 768, 30)
    with pytest.raises(EmbedderMismatchError, match="all-mpnet-base-v2"):
        Hindsight.open(tmp_path / "m", start_worker=False)
    with Hindsight.open(tmp_path / "m", embedder="mpnet", start_worker=False) as hs:
        _retain(hs, "fresh", SESSIONS[:2])
        switched, fresh = _vectors_by_source(hs, "maya"), _vectors_by_source(hs, "fresh")
        assert set(switched) == set(fresh) and len(fresh) == 30
        for source, vector in switched.items():
            assert float(vector @ fresh[source]) > 0.999
        for bank_id in ("maya", "fresh"):
            assert any("Pepper" in m.text for m in hs.bank(bank_id).recall("What is Maya's dog called?").memories[:3])
        assert check(hs).ok


def test_a_process_still_on_the_old_embedder_is_refused_after_another_switched_the_bank(
    tmp_path: Path, small: TruncatedMiniLM
) -> None:
    """This process keeps the store open with MiniLM while another process re-embeds the bank: afterwards its recall
    and retain raise ``EmbedderMismatchError`` instead of mixing two vector spaces, and the store stays sound."""
    root = tmp_path / "m"
    child = Path(__file__).parent / "support" / "reembed_child.py"
    with Hindsight.open(root, start_worker=False) as hs:
        _retain(hs, "maya", SESSIONS[:1])
        bank = hs.bank("maya")
        assert bank.recall("dog").memories
        done = subprocess.run([sys.executable, str(child), str(root), "maya", str(10**9)], capture_output=True,
                              text=True, timeout=600)
        assert done.stdout.strip().endswith("finished"), done.stderr[-2000:]
        with pytest.raises(EmbedderMismatchError, match=NAME):
            bank.recall("dog")
        with pytest.raises(EmbedderMismatchError):
            bank.retain("Maya bought a new leash.", extract=False)
    with Hindsight.open(root, embedder=small, start_worker=False) as hs:
        assert check(hs).ok and hs.index.count("maya") == 15 == len(hs.store.unit_ids("maya"))


def test_bench_reembed_compares_a_switched_bank_with_a_fresh_retain(tmp_path: Path) -> None:
    """``hindsight bench reembed`` at toy size (the demo conversation, minilm -> minilm-int8): both banks score the
    same and their vectors agree."""
    from hindsight_bench.reembed import format_reembed, run_reembed

    sample = dict(load_conversation())
    conversation = {k: v for k, v in sample["conversation"].items() if not k.startswith(("session_3", "session_4"))}
    sample.update(sample_id="conv-26", conversation=conversation,
                  qa=[{"question": "What is the name of Maya's dog?", "evidence": ["D1:3"], "category": 4},
                      {"question": "Where did Maya adopt her dog?", "evidence": ["D1:3"], "category": 4}])
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([sample]), encoding="utf-8")
    result = run_reembed(data, source="minilm", target="minilm-int8", workdir=tmp_path)
    (row,) = result["conversations"]
    assert row["units"] == 30 and row["questions"] == 2 and row["same_turns"]
    assert row["r10_reembedded"] == row["r10_fresh"] == 100.0
    assert row["max_vector_diff"] < 2e-3
    assert "R@10 re-embedded" in format_reembed(result)
