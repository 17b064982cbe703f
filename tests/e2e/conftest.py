"""A live portal and a real Chromium for the browser tests.

The server is the real app (`create_app`) on a temporary SQLite database migrated by Alembic, with
MEMORY_EMBEDDER=none, served by werkzeug on 127.0.0.1 on a free port in a background thread. Each
test gets a tenant of its own holding a person with memories (Ada) and a second person (Bruno), so
tests never see each other's changes. Chromium is Debian's (/usr/bin/chromium, or $CHROMIUM): a
missing browser fails the suite, it is never skipped. The server, Playwright and the browser live
for this package only (package scope), so other browser suites can start their own afterwards.

Elements are located by role, label or data-testid only, as a person or a screen reader finds them.
"""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from argon2 import PasswordHasher
from playwright.sync_api import Browser, BrowserContext, Locator, Page, Playwright, ViewportSize, expect, sync_playwright

from portal.adapters import passwords as passwords_module
from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.migrate import upgrade
from portal.bootstrap import Runtime, build_runtime
from portal.cli import DEMO_LEARNT, DEMO_MEMORIES
from portal.config import load_config
from portal.domain.types import Place, Saved, Source

from ..status import StatusRecorder, served

VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]
PASSWORD = "correct horse battery"  # noqa: S105 - a test account's password
OTHER_NAME = "Bruno"
OTHER_TEXT = "Plays the cello in an amateur orchestra"
XSS_TEXT = "<img src=x onerror=alert(1)>"
CAT = "Has a cat called Miso"  # two of the demo memories the tests change
TEA = "Likes green tea, not coffee"




@dataclass
class LiveServer:
    url: str
    runtime: Runtime
    recorder: StatusRecorder


@dataclass
class Person:
    """A signed-up person of a fresh tenant, with memories, and the other person of that tenant."""

    email: str
    name: str
    place: Place
    other_place: Place
    other_memory_id: str
    memory_ids: dict[str, str] = field(default_factory=dict)  # text -> id

    @property
    def password(self) -> str:
        return PASSWORD


@pytest.fixture(scope="package")
def cheap_password_hashes() -> Iterator[None]:
    """Argon2id with the lowest cost for this suite: every test signs up two people and signs in,
    and the production cost (tens of MiB, several passes) would take most of the suite's time.
    Hashes still go through argon2 and carry their parameters, so sign-in is checked for real.
    The hash an unknown e-mail is checked against is made at that cost too (the walk of every
    page tries some twenty of them to be told "too many tries": ~2.5 s each time otherwise)."""
    cheap = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(passwords_module, "_hasher", cheap)
        patch.setattr(passwords_module, "_DUMMY", cheap.hash("no such account, no such password"))
        yield


@pytest.fixture(scope="package")
def live_server(tmp_path_factory: pytest.TempPathFactory, cheap_password_hashes: None) -> Iterator[LiveServer]:
    folder = tmp_path_factory.mktemp("e2e")
    config = load_config({
        "MEMORY_INSTANCE_PATH": str(folder), "MEMORY_DATABASE_URL": f"sqlite:///{folder / 'memory.db'}",
        "MEMORY_EMBEDDER": "none", "MEMORY_SECRET_KEY": "e2e-" + "k" * 40,
    })
    engine = make_engine(config.database_url)
    upgrade(engine)
    runtime = build_runtime(config, engine=engine, llm=None)
    try:
        with served(runtime, "e2e-server") as (url, recorder):
            yield LiveServer(url, runtime, recorder)
    finally:
        runtime.dispose()


@pytest.fixture(autouse=True)
def no_server_errors(request: pytest.FixtureRequest) -> Iterator[None]:
    """Any 5xx the live server answered during a test fails that test."""
    if "live_server" not in request.fixturenames:
        yield
        return
    server: LiveServer = request.getfixturevalue("live_server")
    start = len(server.recorder.seen)
    yield
    errors = [s for s in server.recorder.seen[start:] if s[2] >= 500]
    assert not errors, f"the server answered errors: {errors}"


_numbers = itertools.count(1)


def make_person(runtime: Runtime, ai_enabled: bool = True, language: str | None = "en") -> Person:
    n = next(_numbers)
    tenant = runtime.tenants.create(f"e2e-{n}", ai_enabled=ai_enabled)
    ada = runtime.accounts.create(f"ada{n}@e2e.example", "Ada", tenant.id, "member", PASSWORD, language=language)
    bruno = runtime.accounts.create(f"bruno{n}@e2e.example", OTHER_NAME, tenant.id, "member", PASSWORD)
    ids: dict[str, str] = {}
    # Oldest first, so the list (newest first) reads like the demo's.
    for text, kind, importance in reversed(DEMO_MEMORIES):
        outcome = runtime.service.remember(ada.place, text, kind=kind, importance=importance)
        assert isinstance(outcome, Saved), outcome
        ids[text] = outcome.memory.id
    for text, kind, importance in DEMO_LEARNT:
        outcome = runtime.service.remember(
            ada.place, text, kind=kind, importance=importance, origin="inferred", channel="background",
            sources=(Source("consolidation", "e2e-conversation"),),
        )
        assert isinstance(outcome, Saved), outcome
        ids[text] = outcome.memory.id
    other = runtime.service.remember(bruno.place, OTHER_TEXT, kind="fact")
    assert isinstance(other, Saved), other
    return Person(ada.email, ada.name, ada.place, bruno.place, other.memory.id, ids)


@pytest.fixture
def person(live_server: LiveServer) -> Person:
    """Ada, with the demo's memories, and Bruno in the same tenant (AI on)."""
    return make_person(live_server.runtime)


@pytest.fixture
def person_ai_off(live_server: LiveServer) -> Person:
    """Like `person`, in a tenant created with the AI switched off (no switch cache to wait for)."""
    return make_person(live_server.runtime, ai_enabled=False)


@pytest.fixture
def french_person(live_server: LiveServer) -> Person:
    """Like `person`, for someone whose account speaks French."""
    return make_person(live_server.runtime, language="fr")


def chromium_path() -> str:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).is_file() or not os.access(path, os.X_OK):
        pytest.fail(
            f"Chromium is missing ({path}): install Debian's `chromium` (scripts/ensure-packages.sh, run by `make test`)"
            " or point $CHROMIUM at one. The browser tests are never skipped."
        )
    return path


@pytest.fixture(scope="package")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="package")
def browser(playwright: Playwright) -> Iterator[Browser]:
    browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
    try:
        yield browser
    finally:
        browser.close()


@pytest.fixture
def new_context(browser: Browser) -> Iterator[Callable[..., BrowserContext]]:
    """Makes browser contexts (1280x800, downloads on), all closed after the test."""
    made: list[BrowserContext] = []

    def make(**options: Any) -> BrowserContext:
        options = {"viewport": VIEWPORT, "accept_downloads": True, "locale": "en-GB", **options}
        context = browser.new_context(**options)
        context.set_default_timeout(5000)
        made.append(context)
        return context

    yield make
    for context in made:
        context.close()


@pytest.fixture
def page(new_context: Callable[..., BrowserContext]) -> Page:
    return new_context().new_page()


def sign_in(page: Page, base_url: str, who: Person, password: str | None = None) -> None:
    """Sign in through the form, as a person does. With the right password, wait until their
    memories have loaded with their scripts: a click before htmx is ready is a plain link."""
    page.goto(f"{base_url}/login")
    page.get_by_label("Email").fill(who.email)
    page.get_by_label("Password").fill(password or who.password)
    page.get_by_role("button", name="Sign in").click()
    if password is None:
        page.wait_for_url(f"{base_url}/memories", wait_until="load")


@pytest.fixture
def signed_in(page: Page, live_server: LiveServer, person: Person) -> Page:
    """A page signed in as `person`, on their memories."""
    sign_in(page, live_server.url, person)
    expect(page).to_have_url(f"{live_server.url}/memories")
    return page


def row(page: Page, text: str) -> Locator:
    return page.get_by_test_id("memory").filter(has_text=text)


def editing_row(page: Page) -> Locator:
    return page.get_by_test_id("memory").filter(has=page.get_by_role("textbox"))


def open_editor(page: Page, text: str) -> Locator:
    """Click the row's Edit and wait until the form has put the cursor in the text, as a person
    waits to see it before typing (typing earlier races htmx's settle, which moves the cursor)."""
    row(page, text).get_by_role("link", name="Edit").click()
    field = editing_row(page).get_by_label("Memory")
    expect(field).to_be_focused()
    return field
