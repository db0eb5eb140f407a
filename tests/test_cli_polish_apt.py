"""``scripts/test.sh`` waits for apt's locks instead of failing at once (exit 100) when another apt process holds one
(issue 41, the command line).

The test runs the script's own ``apt_get`` function on the real apt, with apt's real locks held by another process
for a few seconds: the install it runs is the one ``scripts/test.sh`` runs (chromium and its driver, installed by the
first run of the script, so nothing is downloaded or changed). It needs the rights ``scripts/test.sh`` needs there.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

TEST_SH = Path(__file__).resolve().parents[1] / "scripts" / "test.sh"
INSTALL = "apt_get install -y -qq chromium chromium-driver"
HOLD = textwrap.dedent("""
    import fcntl, os, sys, time
    # apt's locks are fcntl locks on these files, held for the given seconds.
    fd = os.open(sys.argv[2], os.O_RDWR | os.O_CREAT, 0o640)
    fcntl.lockf(fd, fcntl.LOCK_EX)
    print("held", flush=True)
    time.sleep(float(sys.argv[1]))
""")


def _apt_get_function() -> str:
    """The ``apt_get`` function (and the settings it reads) as scripts/test.sh defines it."""
    text = TEST_SH.read_text(encoding="utf-8")
    match = re.search(r'^APT_LOCK_WAIT_S=.*?^apt_get\(\) \{.*?^\}$', text, flags=re.MULTILINE | re.DOTALL)
    assert match, "scripts/test.sh defines apt_get"
    return match.group(0)


def _hold(lock: str, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(seconds), lock], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def _install(wait_s: int) -> tuple[int, str, float]:
    sudo = "" if os.geteuid() == 0 else "sudo"
    script = f'SUDO="{sudo}"\nAPT_LOCK_WAIT_S={wait_s}\n' + _apt_get_function().split("\n", 1)[1] + f"\n{INSTALL}\n"
    start = time.monotonic()
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120, check=False)
    return proc.returncode, proc.stderr, time.monotonic() - start


def test_the_script_installs_through_the_waiting_apt_get() -> None:
    text = TEST_SH.read_text(encoding="utf-8")
    assert "apt_get update -qq && apt_get install -y -qq chromium chromium-driver" in text
    assert re.search(r"^\s*\$SUDO apt-get (update|install)", text, flags=re.MULTILINE) is None  # no bare call left


def test_apt_get_waits_for_dpkgs_lock_and_the_archives_lock() -> None:
    # dpkg's lock first (apt waits for it itself, DPkg::Lock::Timeout), then the archives' lock (not covered by that
    # option: the function tries again).
    dpkg = _hold("/var/lib/dpkg/lock-frontend", 3)
    archives = _hold("/var/cache/apt/archives/lock", 7)
    try:
        rc, err, took = _install(60)
    finally:
        dpkg.kill()
        archives.kill()
        dpkg.wait()
        archives.wait()
    assert rc == 0, err
    assert took >= 6, took  # it waited for the locks to go
    assert "waiting" in err


def test_without_a_wait_a_held_lock_fails_at_once() -> None:
    # What the script did before: apt exits 100 at once. Shows that the test above can fail.
    archives = _hold("/var/cache/apt/archives/lock", 10)
    try:
        rc, err, took = _install(0)
    finally:
        archives.kill()
        archives.wait()
    assert rc == 100 and "Could not get lock" in err and took < 8, (rc, err, took)
