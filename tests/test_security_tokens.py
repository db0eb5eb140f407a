"""Token file changes that cannot race, and a token file that another user could have written is refused (issue 39,
must have 2).

Changes run in real parallel processes (``multiprocessing``, and the ``hindsight token`` command itself): every add
lands and a removed token stays removed, however the changes interleave. Ownership and folder checks use real file
modes and owners (as root the file is given to another uid; otherwise this process's effective uid is made to
differ from the owner's).
"""

from __future__ import annotations

import multiprocessing
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from hindsight_core.access import Access, TokenFile, TokenFileError, access_from

ROUNDS = 8


def _changer(path: str, start: multiprocessing.synchronize.Event, who: int, kind: str) -> None:
    """Child process: once ``start`` is set, add (or remove) ``ROUNDS`` tokens of its own, as fast as it can."""
    file = TokenFile(path)
    start.wait(30)
    for n in range(ROUNDS):
        if kind == "add":
            file.add(f"add-{who}-{n}", banks=["a"])
        else:
            file.remove(f"old-{who}-{n}")


def test_parallel_adds_and_removes_all_land(tmp_path: Path) -> None:
    path = tmp_path / "conf" / "tokens.json"
    seed = TokenFile(path)
    removers, adders = 3, 3
    kept = seed.add("keeper")
    for who in range(removers):
        for n in range(ROUNDS):
            seed.add(f"old-{who}-{n}")
    context = multiprocessing.get_context("fork")
    start = context.Event()
    children = [context.Process(target=_changer, args=(str(path), start, who, kind))
                for who in range(max(removers, adders)) for kind in ("add", "remove")]
    for child in children:
        child.start()
    start.set()
    for child in children:
        child.join(120)
        assert child.exitcode == 0
    ids = {e.id for e in TokenFile(path).entries()}
    assert ids == {"keeper", *(f"add-{who}-{n}" for who in range(adders) for n in range(ROUNDS))}
    assert Access(TokenFile(path)).authenticate(kept) is not None
    assert sorted(p.name for p in path.parent.iterdir()) == ["tokens.json"]  # no temporary or lock file left


def test_the_token_command_racing_itself(tmp_path: Path) -> None:
    """``token remove X`` beside ``token add Y``, as separate ``hindsight`` processes: X stays removed, Y is
    there, every time."""
    path = tmp_path / "tokens.json"
    file = TokenFile(path)
    for n in range(6):
        file.add(f"x{n}")
    command = [sys.executable, "-m", "hindsight_core.cli"]
    running = []
    for n in range(6):
        running.append(subprocess.Popen([*command, "token", "remove", f"x{n}", "--file", str(path)],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        running.append(subprocess.Popen([*command, "token", "add", f"y{n}", "--all-banks", "--file", str(path)],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for proc in running:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    assert {e.id for e in TokenFile(path).entries()} == {f"y{n}" for n in range(6)}


def test_created_folders_are_private(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "c" / "tokens.json"
    TokenFile(path).add("alice")
    for folder in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "c"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def _as_another_user(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``path`` belong to a user other than this process's effective one."""
    if os.geteuid() == 0:
        os.chown(path, 54321, -1)
    else:
        owner = path.stat().st_uid
        monkeypatch.setattr(os, "geteuid", lambda: owner + 1)


def test_a_file_of_another_user_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "conf"
    file = TokenFile(folder / "tokens.json")
    token = file.add("alice")
    _as_another_user(file.path, monkeypatch)
    with pytest.raises(TokenFileError, match="belongs to another user"):
        access_from(file.path, None)
    # A running server's reader refuses every token of it (fail closed).
    assert Access(TokenFile(file.path)).authenticate(token) is None
    with pytest.raises(TokenFileError, match="belongs to another user"):
        file.add("bob")


def test_a_folder_of_another_user_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "conf"
    file = TokenFile(folder / "tokens.json")
    file.add("alice")
    _as_another_user(folder, monkeypatch)  # the folder is checked before the file
    with pytest.raises(TokenFileError, match=r"folder .* belongs to another user"):
        access_from(file.path, None)


def test_a_folder_others_can_write_is_refused_unless_sticky(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    file = TokenFile(folder / "tokens.json")
    token = file.add("alice")
    os.chmod(folder, 0o777)  # anyone could rename a file of their own over tokens.json
    with pytest.raises(TokenFileError, match=r"folder .* is writable by other users"):
        access_from(file.path, None)
    assert Access(TokenFile(file.path)).authenticate(token) is None
    os.chmod(folder, 0o1777)  # sticky, like /tmp: only the file's owner may rename or delete it
    assert access_from(file.path, None).authenticate(token) is not None
    os.chmod(folder, 0o700)
