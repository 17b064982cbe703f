"""A live portal and a real Chromium for the support console's browser tests.

The real app (`create_app`) on a temporary SQLite database migrated by Alembic, no embedder and no
model, served by werkzeug on 127.0.0.1 on a free port in a background thread. Each test gets a
tenant of its own with one person (with memories) and one staff member. Chromium is Debian's
(/usr/bin/chromium, or $CHROMIUM): a missing browser fails the suite, it is never skipped.

Elements are located by role, label or data-testid, as a person or a screen reader finds them.
"""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, ViewportSize, expect, sync_playwright

from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.migrate import upgrade
from portal.bootstrap import Runtime, build_runtime
from portal.config import load_config
from portal.domain.people import User
from portal.domain.types import Saved, Source

from ..status import StatusRecorder, served

VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]
PASSWORD = "correct horse battery"
# The person's memories; their distinctive words must never show on a console page but the
# break-glass one, nor in the audit log.
MEMORIES = (
    ("Keeps bees on the allotment", "fact"),
    ("Prefers rooibos in the afternoon", "preference"),
    ("Training for the Lofoten half-marathon", "goal"),
)
WORDS = ("bees", "allotment", "rooibos", "Lofoten")




@dataclass
class LiveServer:
    url: str
    runtime: Runtime
    recorder: StatusRecorder


@dataclass
class Desk:
    """A fresh tenant with a person who has memories, and the staff member who serves it."""

    person: User
    staff: User


@pytest.fixture(scope="package")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    folder = tmp_path_factory.mktemp("e2e-staff")
    config = load_config({
        "MEMORY_INSTANCE_PATH": str(folder), "MEMORY_DATABASE_URL": f"sqlite:///{folder / 'memory.db'}",
        "MEMORY_EMBEDDER": "none", "MEMORY_SECRET_KEY": "e2e-staff-" + "k" * 40,
    })
    engine = make_engine(config.database_url)
    upgrade(engine)
    runtime = build_runtime(config, engine=engine, embedder=None, llm=None)
    try:
        with served(runtime, "e2e-staff-server") as (url, recorder):
            yield LiveServer(url, runtime, recorder)
    finally:
        runtime.dispose()


@pytest.fixture(autouse=True)
def no_server_errors(live_server: LiveServer) -> Iterator[None]:
    """Any 5xx the live server answered during a test fails that test."""
    start = len(live_server.recorder.seen)
    yield
    errors = [s for s in live_server.recorder.seen[start:] if s[2] >= 500]
    assert not errors, f"the server answered errors: {errors}"


_numbers = itertools.count(1)


@pytest.fixture
def desk(live_server: LiveServer) -> Desk:
    n = next(_numbers)
    runtime = live_server.runtime
    tenant = runtime.tenants.create(f"e2e-staff-{n}")
    person = runtime.accounts.create(f"greta{n}@e2e.example", "Greta Lind", tenant.id, "member", PASSWORD)
    staff = runtime.accounts.create(f"support{n}@e2e.example", "Sam Support", tenant.id, "staff", PASSWORD)
    for text, kind in MEMORIES:
        outcome = runtime.service.remember(person.place, text, kind=kind, sources=(Source("api"),))
        assert isinstance(outcome, Saved), outcome
    return Desk(person, staff)


def chromium_path() -> str:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).is_file() or not os.access(path, os.X_OK):
        pytest.fail(f"Chromium is missing ({path}): install Debian's `chromium` or point $CHROMIUM at one.")
    return path


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport=VIEWPORT, accept_downloads=True, locale="en-GB")
    context.set_default_timeout(5000)
    try:
        yield context.new_page()
    finally:
        context.close()


def sign_in(page: Page, base_url: str, who: User) -> None:
    """Sign in through the form; staff land on the console, admins on the administration."""
    page.goto(f"{base_url}/login")
    page.get_by_label("Email").fill(who.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    home = "Administration" if who.role == "admin" else "Find a person"
    expect(page.get_by_role("heading", name=home, exact=True)).to_be_visible()
