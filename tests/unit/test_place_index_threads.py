"""A PlaceIndex is shared between a process's threads (the recall cache): many askers on one index
from many threads at once never make a recall fail (making room in its memo of what each asker
leaves out, and of its views, happens under the index's lock)."""
from __future__ import annotations

import sys
import threading
from datetime import UTC, datetime, timedelta

import numpy as np

from portal.domain.recall.index import Entry, PlaceIndex
from portal.domain.types import Embedding
from portal.ports import Filters

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def entries(n: int) -> list[Entry]:
    v = np.ones(4, dtype=np.float32)
    return [Entry(f"m{i:03}", "fact", T0, ("kayak",), Embedding("m", v),
                  expires_at=T0 + timedelta(seconds=i) if i % 2 else None,
                  withheld=(f"app-{i}",) if i % 3 == 0 else ()) for i in range(n)]


def test_many_askers_on_one_shared_index_from_many_threads_never_raise() -> None:
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    errors: list[BaseException] = []
    try:
        for _round in range(20):
            index = PlaceIndex("t", entries(60))
            start = threading.Barrier(8)

            def ask(t: int) -> None:
                start.wait()
                try:
                    for n in range(300):
                        index.view_for(Filters(app=f"app-{(n * 7 + t) % 90}",
                                               alive_at=T0 + timedelta(seconds=(n + t) % 60)))
                except BaseException as e:  # noqa: BLE001
                    errors.append(e)

            threads = [threading.Thread(target=ask, args=(t,)) for t in range(8)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            if errors:
                break
    finally:
        sys.setswitchinterval(old)
    assert not errors, f"{len(errors)} errors, first: {errors[0]!r}"
