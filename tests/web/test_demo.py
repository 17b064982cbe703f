"""What `memory-portal demo` (and so `make run`) shows the demo person: their memories, and one app of
their organisation that was given some of them in a named conversation (issue 38: following the
README, Connected apps and Recent conversations were empty, and nothing said how an app fills them).
The demo is run as the command line runs it; the pages are read signed in as the demo person."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from portal.app import create_app
from portal.bootstrap import build_runtime
from portal.cli import DEMO_EMAIL, DEMO_PASSWORD
from portal.config import load_config

from ..cli.runner import run
from .conftest import page_text, sign_in

APP = "Support bot"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    return {**base, "MEMORY_INSTANCE_PATH": str(tmp_path / "instance"), "MEMORY_EMBEDDER": "none",
            "MEMORY_SECRET_KEY": "s" * 40}


@pytest.fixture
def demo_person(env: dict[str, str]) -> Iterator[FlaskClient]:
    for _ in range(2):  # `make run` runs it at every start
        made = run(["demo"], env)
        assert made.returncode == 0, made.stderr
    runtime = build_runtime(load_config(env), embedder=None)
    try:
        client = create_app({"TESTING": True, "WTF_CSRF_ENABLED": False}, runtime=runtime).test_client()
        sign_in(client, DEMO_EMAIL, DEMO_PASSWORD)
        yield client
    finally:
        runtime.dispose()


def test_the_demo_person_sees_an_app_that_was_given_memories_in_a_conversation(demo_person: FlaskClient) -> None:
    apps = page_text(demo_person.get("/account/apps"))
    assert APP in apps
    talks = demo_person.get("/memories/conversations").get_data(as_text=True)
    assert talks.count('data-testid="conversation"') == 1, "one conversation, however often the demo ran"
    assert APP in page_text(demo_person.get("/memories/conversations"))
    given = re.findall(r'data-testid="conversation-memory" data-id="([^"]+)"', talks)
    assert given, "the conversation names the memories it was given"
    page = demo_person.get(f"/memories/{given[0]}/history")
    assert page.status_code == 200
    assert f"Used in 1 conversation by {APP}" in page_text(page)


def test_the_demo_says_what_it_made(env: dict[str, str]) -> None:
    made = run(["demo"], env)
    assert made.returncode == 0, made.stderr
    assert re.search(rf"app {APP} was given \d memories in a conversation", made.stdout), made.stdout


def test_the_demo_app_is_one_key_of_the_demo_tenant_made_once(env: dict[str, str], demo_person: FlaskClient) -> None:
    listed = run(["api-key", "list", "--tenant", "Demo"], env)
    assert listed.returncode == 0, listed.stderr
    rows = [line.split("\t") for line in listed.stdout.splitlines()]
    assert [(r[2], r[4], r[6]) for r in rows] == [(APP, "memories:read", "active")]  # it only reads
