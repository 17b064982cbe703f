"""How far a request travels through the code (issue 15: measure before and after): a portal edit
and an API recall, each run once warm on a fresh SQLite database, traced with `sys.setprofile`.

For each it prints the portal functions called, the calls that cross from one layer to another
(web, api, services, domain, ports, adapters, the rest), how many times control went from the
service side to the adapters and back, and the SQL statements and transactions it took.

    .venv/bin/python scripts/hops.py [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PORTAL = str(ROOT / "portal")


def layer(filename: str) -> str | None:
    if not filename.startswith(PORTAL):
        return None
    parts = Path(filename).relative_to(PORTAL).parts
    head = parts[0].removesuffix(".py")
    if head in ("web", "api", "services", "domain", "adapters", "memory"):
        return head
    return "ports" if head == "ports" else "other"


class Tracer:
    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.crossings: Counter[str] = Counter()

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if event != "call":
            return
        here = layer(frame.f_code.co_filename)
        if here is None:
            return
        self.calls[f"{Path(frame.f_code.co_filename).relative_to(PORTAL)}:{frame.f_code.co_name}"] += 1
        caller = frame.f_back
        while caller is not None and layer(caller.f_code.co_filename) is None:
            caller = caller.f_back
        there = layer(caller.f_code.co_filename) if caller is not None else None
        if there is not None and there != here:
            self.crossings[f"{there}->{here}"] += 1


def measure(client: Any, engine: Any, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
    from sqlalchemy import event

    statements: list[str] = []
    begins: list[int] = []

    def on_sql(*args: Any) -> None:
        statements.append(args[2])

    def on_begin(*args: Any) -> None:
        begins.append(1)

    event.listen(engine, "before_cursor_execute", on_sql)
    event.listen(engine, "begin", on_begin)
    tracer = Tracer()
    sys.setprofile(tracer)
    try:
        answer = client.open(path, method=method, **kwargs)
    finally:
        sys.setprofile(None)
        event.remove(engine, "before_cursor_execute", on_sql)
        event.remove(engine, "begin", on_begin)
    to_adapters = sum(n for k, n in tracer.crossings.items() if k.endswith("->adapters") and not k.startswith("adapters"))
    from_adapters = sum(n for k, n in tracer.crossings.items() if k.startswith("adapters->") and k != "adapters->adapters")
    return {
        "status": answer.status_code, "portal_functions_called": sum(tracer.calls.values()),
        "distinct_functions": len(tracer.calls), "layer_crossings": sum(tracer.crossings.values()),
        "into_adapters": to_adapters, "back_out_of_adapters": from_adapters,
        "crossings": dict(sorted(tracer.crossings.items())), "sql_statements": len(statements),
        "transactions": len(begins),
        "memory_row_reads": sum(1 for s in statements if s.lstrip().upper().startswith("SELECT") and "FROM memories" in s
                                and "WHERE" in s and ".id =" in s),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="hops-"))
    os.environ.update(MEMORY_INSTANCE_PATH=str(folder), MEMORY_EMBEDDER="none", MEMORY_SECRET_KEY="h" * 40)
    from portal.adapters.sql.migrate import upgrade
    from portal.app import create_app
    from portal.bootstrap import build_runtime
    from portal.config import load_config
    from portal.domain.types import Place

    runtime = build_runtime(load_config(), embedder=None, llm=None)
    upgrade(runtime.engine)
    tenant = runtime.tenants.create("Hops")
    user = runtime.accounts.create("ada@hops.example", "Ada", tenant.id, "member", "correct horse battery")
    saved = runtime.service.remember(Place(user.owner_id, tenant.id), "Lives in Lyon")
    memory_id = saved.memory.id
    _key, token = runtime.api_keys.create(tenant.id, ["memories:read"], name="hops")
    app = create_app({"TESTING": True, "WTF_CSRF_ENABLED": False}, runtime=runtime)
    web = app.test_client()
    with web.session_transaction() as session:
        session["_user_id"], session["_fresh"] = user.get_id(), True
    api = app.test_client()
    auth = {"Authorization": f"Bearer {token}"}
    recall = f"/api/v1/people/{user.owner_id}/recall"
    for _ in range(2):  # warm: imports, caches, the first connection
        web.post(f"/memories/{memory_id}", data={"text": "Lives in Lyon, 3rd"})
        api.post(recall, json={"query": "Lyon"}, headers=auth)
    results = {
        "portal_edit": measure(web, runtime.engine, "POST", f"/memories/{memory_id}", data={"text": "Lives in Paris"}),
        "api_recall": measure(api, runtime.engine, "POST", recall, json={"query": "Lyon"}, headers=auth),
    }
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for name, found in results.items():
        print(f"{name}: status {found['status']}, {found['portal_functions_called']} portal calls "
              f"({found['distinct_functions']} functions), {found['layer_crossings']} layer crossings, "
              f"{found['into_adapters']} into the adapters and {found['back_out_of_adapters']} back out, "
              f"{found['sql_statements']} SQL statements in {found['transactions']} transactions, "
              f"{found['memory_row_reads']} reads of the memory's row")
        print("   ", found["crossings"])


if __name__ == "__main__":
    main()
