"""``file_lock``: one holder at a time across open files (processes), bounded wait."""

from __future__ import annotations

import threading
import time

from tracking_core.kit.filelock import file_lock


def test_a_second_holder_waits_for_the_first(tmp_path):
    path = tmp_path / "sub" / ".store.lock"
    order: list[str] = []
    with file_lock(path):
        waiter = threading.Thread(target=lambda: _hold(path, order))
        waiter.start()
        time.sleep(0.3)
        order.append("first done")
    waiter.join(5)
    assert order == ["first done", "second in"]


def test_a_held_lock_is_given_up_after_the_timeout(tmp_path):
    path = tmp_path / ".store.lock"
    with file_lock(path):
        started = time.monotonic()
        with file_lock(path, timeout=0.2):
            waited = time.monotonic() - started
    assert 0.2 <= waited < 2.0


def _hold(path, order):
    with file_lock(path):
        order.append("second in")
