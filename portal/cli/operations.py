"""Operations commands of `memory-portal`: retention (`prune`), key rotation (`rotate-keys`) and
Registered on the main group by `portal.cli`; docs/operations.md says when to
run each. They print counts, never a person's words.
"""

from __future__ import annotations

import json
import re
import sys
from datetime import timedelta
from typing import Any

import click

DURATION = re.compile(r"(?P<amount>[1-9][0-9]{0,5})(?P<unit>[dhm])")
UNITS = {"d": "days", "h": "hours", "m": "minutes"}
LONGEST = timedelta(days=36_500)


class Duration(click.ParamType):
    """A period like 90d, 12h or 30m: a whole positive number and one unit (days, hours, minutes)."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> timedelta:
        if isinstance(value, timedelta):
            return value
        match = DURATION.fullmatch(str(value).strip())
        if match is None:
            self.fail(f"{value!r} is not a period: use a whole number and d, h or m, like 90d, 12h or 30m", param, ctx)
        period = timedelta(**{UNITS[match["unit"]]: int(match["amount"])})
        if period > LONGEST:
            self.fail(f"{value!r} is longer than 100 years", param, ctx)
        return period


@click.command()
@click.option("--history-older-than", "history", type=Duration(), default=None,
              help="Delete earlier wordings replaced longer ago than this (e.g. 90d).")
@click.option("--receipts-older-than", "receipts", type=Duration(), default=None,
              help="Delete completed idempotency receipts older than this (e.g. 30d).")
@click.option("--archived-older-than", "archived", type=Duration(), default=None,
              help="Erase archived memories neither written nor used for this long (e.g. 180d).")
def prune(history: timedelta | None, receipts: timedelta | None, archived: timedelta | None) -> None:
    """Apply retention periods in every tenant; prints what was deleted, as JSON.

    A memory's current text is never touched; the last change of a recently changed memory can
    still be undone. Safe to run from cron (e.g. daily) and to run again.
    """
    from tqdm import tqdm

    from portal.cli import _runtime

    if history is None and receipts is None and archived is None:
        raise click.UsageError(
            "nothing to prune: give --history-older-than, --receipts-older-than and/or --archived-older-than"
        )
    runtime = _runtime()
    with tqdm(unit="row", file=sys.stderr, disable=None) as bar:
        counts = runtime.service.prune(history, receipts, archived, progress=bar.update)
    runtime.store.settle(60)  # the cleaning up after what it erased, before the process ends
    click.echo(json.dumps(counts.to_json()))


@click.command("rotate-keys")
@click.option("--batch-size", type=click.IntRange(min=1), default=500, show_default=True,
              help="Rows per transaction.")
def rotate_keys(batch_size: int) -> None:
    """Re-encrypt stored text with the first key of MEMORY_ENCRYPTION_KEYS.

    Every memory text, revision text and stored idempotent answer that an older key wrote is
    re-encrypted, and duplicate keys are recomputed. Resumable: stop it and run it again. Drop the
    old key from MEMORY_ENCRYPTION_KEYS only after a run that finished.
    """
    from tqdm import tqdm

    from portal.adapters.cipher import FernetCipher
    from portal.adapters.sql.rotation import RotationError, rows_to_visit
    from portal.adapters.sql.rotation import rotate_keys as rotate
    from portal.cli import _runtime

    store = _runtime().store
    if not isinstance(store.cipher, FernetCipher):
        raise click.ClickException("MEMORY_ENCRYPTION_KEYS is not set: stored text is not encrypted, nothing to rotate")
    try:
        with tqdm(total=rows_to_visit(store), unit="row", file=sys.stderr, disable=None) as bar:
            counts = rotate(store, store.cipher, batch=batch_size, progress=bar.update)
    except RotationError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(json.dumps(counts.to_json()))
