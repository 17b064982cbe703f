"""Where the browser suites save their screens: `.tmp/screenshots` (ignored by git) unless
SCREENSHOTS names a folder, so `make test` leaves the checkout clean and
`SCREENSHOTS=docs/screenshots make test` refreshes the README's pictures on purpose."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / ".tmp" / "screenshots"


def screenshot_folder() -> Path:
    """The folder named by SCREENSHOTS (relative to the repository), else `.tmp/screenshots`."""
    given = os.environ.get("SCREENSHOTS", "").strip()
    if not given:
        return DEFAULT
    folder = Path(given)
    return folder if folder.is_absolute() else ROOT / folder


def screenshot(page: Any, name: str) -> None:
    """Save the page's screen as <folder>/<name>."""
    folder = screenshot_folder()
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / name))
