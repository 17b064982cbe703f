"""The erasure janitor (portal.adapters.sql.janitor): a task asked for again while it ran less than
its spacing ago runs once, when the spacing is over; a task without spacing runs at once."""

from __future__ import annotations

import threading
import time

from portal.adapters.sql.janitor import Janitor


def test_a_spaced_task_asked_for_in_a_burst_runs_once_more_after_its_spacing() -> None:
    runs: list[tuple[str, float]] = []
    lock = threading.Lock()

    def task(name: str):  # type: ignore[no-untyped-def]
        def run() -> bool:
            with lock:
                runs.append((name, time.monotonic()))
            return True
        return run

    janitor = Janitor({"vacuum:t": task("vacuum:t"), "checkpoint": task("checkpoint")}, spacing={"vacuum:t": 0.4})
    started = time.monotonic()
    janitor.ask("vacuum:t")
    assert janitor.settle(5)
    for _ in range(20):  # a burst of erasures
        janitor.ask("vacuum:t")
    janitor.ask("checkpoint")
    assert janitor.settle(5)
    vacuums = [at for name, at in runs if name == "vacuum:t"]
    assert len(vacuums) == 2  # the first, then one for the whole burst
    assert vacuums[1] - vacuums[0] >= 0.39
    checkpoint = next(at for name, at in runs if name == "checkpoint")
    assert checkpoint - started < 0.3  # not held back by another task's spacing
