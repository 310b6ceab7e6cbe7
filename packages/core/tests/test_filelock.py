"""filelock.exclusive: one process at a time in the body, and a bounded wait."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest
from tracking_core.filelock import exclusive

pytest.importorskip("fcntl")

HOLDER = textwrap.dedent(
    """
    import sys, time
    from tracking_core.filelock import exclusive
    with exclusive(sys.argv[1]) as held:
        print("held" if held else "not held", flush=True)
        time.sleep(float(sys.argv[2]))
    """
)


def test_a_second_process_waits_for_the_first(tmp_path):
    lock = tmp_path / "store.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock), "1.5"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        with exclusive(lock) as held:
            waited = time.monotonic() - started
        assert held and waited >= 0.5, waited
    finally:
        holder.wait(30)


def test_a_holder_that_never_lets_go_costs_only_the_timeout(tmp_path):
    lock = tmp_path / "store.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock), "30"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        with exclusive(lock, timeout=0.5) as held:
            assert not held
        assert time.monotonic() - started < 5
    finally:
        holder.kill()
        holder.wait(30)
