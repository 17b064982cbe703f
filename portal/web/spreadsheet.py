"""CSV downloads that a spreadsheet opens safely: one rule for every cell the portal writes.

A cell a spreadsheet would run as a formula (one starting with "=", "+", "-", "@", a tab or a
carriage return) gets a leading apostrophe, which spreadsheets show as text (CSV injection), and
every cell is quoted, whatever separator the spreadsheet expects.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence

from flask import Response

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: object) -> object:
    """The value, neutralised when a spreadsheet would read it as a formula."""
    if isinstance(value, str) and value[:1] in FORMULA_STARTS:
        return "'" + value
    return value


def csv_download(header: Sequence[str], rows: Iterable[Sequence[object]], filename: str) -> Response:
    """A CSV attachment: the header, then each row with every cell through `safe_cell`."""
    out = io.StringIO()
    # Every cell quoted: a spreadsheet set to ";" as its separator (French, say) would otherwise
    # split "x;=1+1" into a cell of its own that it runs as a formula.
    writer = csv.writer(out, quoting=csv.QUOTE_ALL)
    writer.writerow(header)
    for row in rows:
        writer.writerow([safe_cell(cell) for cell in row])
    return Response(out.getvalue(), mimetype="text/csv",
                    headers={"Content-Disposition": f'attachment; filename="{filename}"'})
