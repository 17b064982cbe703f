"""The erasure world's ways in besides the JSON API and the portal's forms (erasure_world.py): the
portal's import and its "Forget everything about …", the command line (import, purge-owner), MCP (remember, forget) and background
consolidations (done with a summary no app has read, failed, queued at the erasure). Each is driven
as its users drive it: the portal's two-step import form, the app's own click commands, the MCP
SDK's client on the server `memory-portal mcp` builds, the JSON API's `"wait": false` and the
service's `run_job`, as a worker runs it."""

from __future__ import annotations

import io
import re
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
from mcp.client import Client

from portal.cli import register
from portal.domain.decisions import conversation_key
from portal.mcp.server import Caller, Context, build_server, caller_for
from portal.services.jobs import MAX_ATTEMPTS

from ..fakes.llm_server import FakeLLMServer, Reply

if TYPE_CHECKING:
    from .erasure_world import Person

JOB_REFS = {"done": "job-zk81-done", "failed": "job-zk81-failed", "queued": "job-zk81-queued"}


def portal_import(p: Person, line: str) -> None:
    """The portal's import: the file is previewed, then the same content confirmed."""
    preview = p.browser.post("/account/import", data={"file": (io.BytesIO(f"- {line}\n".encode()), "notes.txt")},
                             content_type="multipart/form-data")
    assert preview.status_code == 200, preview.status_code
    sealed = preview.get_data(as_text=True).split('name="content" value="', 1)[1].split('"', 1)[0]
    p.portal("/account/import", {"content": sealed, "confirmed": "1"})


def forget_about(p: Person, words: list[str]) -> None:
    """The portal's "Forget everything about …" as a person without JavaScript goes through it, a few
    of the words at a time (a subject is ranked by its first 32 terms): the subject's preview, then
    the confirmation of every memory it lists, each left ticked. Nothing is left afterwards."""
    for start in range(0, len(words), 8):
        preview = p.browser.post("/memories/forget-about/preview", data={"subject": " ".join(words[start:start + 8])})
        assert preview.status_code == 200, preview.status_code
        html = preview.get_data(as_text=True)
        ids = re.findall(r'<input type="checkbox" name="ids" value="([^"]+)"', html)
        if ids:
            token = html.split('name="preview" value="', 1)[1].split('"', 1)[0]
            done = p.browser.post("/memories/forget-about", data={"preview": token, "ids": ids})
            assert done.status_code == 303, (done.status_code, done.get_data(as_text=True)[:300])
    assert p.ids() == [], "a memory no subject of the words found"


def command(p: Person, *args: str) -> str:
    """A `memory-portal` command, run in the world's app (as `flask --app portal` runs it)."""
    app = p.world.app
    if "import" not in app.cli.commands:
        register(app)
    with app.app_context():  # the commands then use this app's runtime (portal.cli.common.current_runtime)
        done = app.test_cli_runner().invoke(args=list(args))
    assert done.exit_code == 0, (args, done.output[:300], done.exception)
    return str(done.output)


def cli_import(p: Person, line: str) -> None:
    path = p.world.runtime.config.instance_path / "cli-import.txt"
    path.write_text(f"{line}\n", encoding="utf-8")
    command(p, "import", str(path), "--owner", p.place.owner_id, "--tenant", p.place.scope)
    path.unlink()


def mcp_call(p: Person, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool called through the MCP SDK's client, as the person's assistant with tenant A's key."""
    runtime, token = p.world.runtime, p.world.keys["a"]

    async def resolve(ctx: Context) -> Caller:
        key = await anyio.to_thread.run_sync(runtime.api_keys.verify, token)
        assert key is not None
        return caller_for(key, p.place.owner_id)

    async def call() -> dict[str, Any]:
        async with Client(build_server(runtime, resolve)) as client:
            result = await client.call_tool(tool, arguments)
        assert not result.is_error, result
        found: dict[str, Any] = result.structured_content or {}
        return found

    return anyio.run(call)


def background(p: Person, w: dict[str, str], server: FakeLLMServer, facts: Any) -> None:
    """Three conversations sent to be learnt in the background: one done (its summary waiting for
    the app, unread), one whose model failed every time, one still queued at the erasure."""
    service = p.world.runtime.service

    def send(ref: str, said: str) -> str:
        sent = p.api("POST", "/consolidate", {"transcript": [{"role": "user", "text": said}], "ref": ref, "wait": False},
                     expect=202)
        return str(sent["id"])

    server.script(facts(f"Visited {w['job fact']}", summary=f"Chatted about {w['job done: summary']}"))
    done = send(JOB_REFS["done"], f"I visited {w['job fact']} and talked of {w['job done: transcript']}.")
    assert service.run_job(done) is None
    server.script(*[Reply(status=500)] * MAX_ATTEMPTS)
    failed = send(JOB_REFS["failed"], f"Remember {w['job failed: transcript']} for me.")
    for _ in range(MAX_ATTEMPTS):
        if service.run_job(failed) is None:
            break
    server.replies.clear()
    send(JOB_REFS["queued"], f"Tomorrow I will see {w['job queued: transcript']}.")
    states = {j["ref"]: j["state"] for j in service.export(p.place)["jobs"]}
    key = partial(conversation_key, secret=p.world.runtime.store.words_secret)  # what is kept of a ref
    assert states == {key(JOB_REFS["done"]): "done", key(JOB_REFS["failed"]): "failed",
                      key(JOB_REFS["queued"]): "queued"}, states
