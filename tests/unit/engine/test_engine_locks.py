"""LocalLock: mutual exclusion per run, a timeout that yields False, no leak of lock objects."""

from __future__ import annotations

import threading

from lunora_jobs.engine.locks import LocalLock


def test_second_holder_times_out_and_carries_on() -> None:
    lock = LocalLock()
    entered = threading.Event()
    release = threading.Event()
    results: list[bool] = []

    def holder() -> None:
        with lock.hold("r", ttl_ms=1000, wait_s=1.0) as held:
            results.append(held)
            entered.set()
            release.wait(5)

    t = threading.Thread(target=holder)
    t.start()
    assert entered.wait(5)
    with lock.hold("r", ttl_ms=1000, wait_s=0.05) as held:
        results.append(held)
    with lock.hold("other-run", ttl_ms=1000, wait_s=0.05) as held:
        results.append(held)
    release.set()
    t.join(5)
    assert results == [True, False, True]
    assert lock._locks == {}  # nothing left behind once nobody holds or waits
