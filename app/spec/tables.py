"""A CSV dataset as a table of named columns (issue 28): parsed once, checked whole.

Pure: no database, no HTTP. ``parse_csv`` reads an uploaded file's bytes into a ``Table`` or
refuses it with a ``CsvError`` naming the row and the column, so a teacher can find the cell in
a spreadsheet. What a file must be (docs/api.md#datasets):

- UTF-8 text (a byte-order mark is allowed and dropped), comma-separated as RFC 4180 writes it
  (the stdlib ``csv`` module, strict quoting); ``\\n``, ``\\r\\n`` or ``\\r`` line ends;
- a header row naming every column: no name empty or given twice, not every name a number
  (that is a file without a header);
- then at least one row, each with exactly one value per column, none empty; blank lines are
  skipped; values and names lose their surrounding spaces;
- at most ``max_rows`` rows (the header not counted) and ``max_columns`` columns.

Rows are numbered as a spreadsheet numbers them: the header is row 1, the first values row 2
(a record whose quoted value spans several lines is one row).

A column is **numeric** when every value in it is a finite decimal number (``3``, ``-0.5``,
``1e-3``, ``.5``): ASCII digits only, so neither ``nan``, ``inf``, ``1_000`` nor ``1,5`` (which
Python's ``float`` would partly take) make one. Anything else is a text column; whether a text
column may be used (a class label, never a feature) is for whoever builds the data from it.

``TABLES`` holds the files sessions' specs name, parsed once, by id (the sessions layer fills
it from the db; ``app/spec/data.py`` reads it).
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import re
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypedDict

import numpy as np

# a decimal number as a CSV writes one (ASCII only: ``re``'s \d would take any script's digits)
NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
SHOWN = 40  # characters of a value quoted back in an error


class CsvError(ValueError):
    """A file refused: what is wrong, on which row (1 = the header) and in which column (its
    name, or None when the problem is the row's, or the file's, as a whole)."""

    def __init__(self, message: str, row: int | None = None, column: str | None = None) -> None:
        super().__init__(message)
        self.message, self.row, self.column = message, row, column


class ColumnJson(TypedDict):
    name: str
    numeric: bool
    distinct: int


class TableSummary(TypedDict):
    rows: int
    columns: list[ColumnJson]


@dataclass(frozen=True)
class Column:
    name: str
    numeric: bool
    distinct: int  # different values in it (numbers compared as numbers: 1 and 1.0 are one)

    def to_json(self) -> ColumnJson:
        return {"name": self.name, "numeric": self.numeric, "distinct": self.distinct}


class Table:
    """The parsed file: its columns in the file's order, and each column's values."""

    def __init__(
        self,
        columns: list[Column],
        rows: int,
        values: dict[str, list[str]],
        numbers: dict[str, np.ndarray],
    ) -> None:
        self.columns, self.rows = columns, rows
        self._values, self._numbers = values, numbers
        for array in numbers.values():
            array.flags.writeable = False  # shared by every caller: nobody changes the file

    def column(self, name: str) -> Column:
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(f"no column {name!r} (the columns: {', '.join(self.names)})")

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def numbers(self, name: str) -> np.ndarray:
        """The column as float64 (read-only): ``KeyError`` for an unknown column, ``ValueError``
        for a text one."""
        column = self.column(name)
        if not column.numeric:
            raise ValueError(f"column {name!r} is not numeric (it holds {self._first_text(name)})")
        return self._numbers[name]

    def texts(self, name: str) -> list[str]:
        """The column's values as written (spaces around them dropped); ``KeyError`` if none."""
        self.column(name)
        return list(self._values[name])

    def summary(self) -> TableSummary:
        return {"rows": self.rows, "columns": [c.to_json() for c in self.columns]}

    def _first_text(self, name: str) -> str:
        return next(_shown(v) for v in self._values[name] if not _is_number(v))


def dataset_id(body: bytes) -> str:
    """The dataset's id: the SHA-256 of its bytes, in hex. The same file is the same id."""
    return hashlib.sha256(body).hexdigest()


def parse_csv(body: bytes, *, max_rows: int, max_columns: int) -> Table:
    """``body`` as a Table, or a ``CsvError`` naming the row and column (module docstring)."""
    text = _decode(body)
    records = _records(text)
    header = next(records, None)
    if header is None:
        raise CsvError("no header row: the file is empty", 1)
    names = _header(header, max_columns)
    values: list[list[str]] = [[] for _ in names]
    rows = 0
    for row, record in records:
        rows += 1
        if rows > max_rows:
            raise CsvError(f"too many rows: at most {max_rows} (the header not counted)", row)
        if len(record) != len(names):
            _ragged(row, record, names)
        for n, value in enumerate(record):
            value = value.strip()
            if not value:
                raise CsvError(
                    f"row {row}, column {_shown(names[n])}: a missing value", row, names[n]
                )
            values[n].append(value)
    if rows == 0:
        raise CsvError("no rows: the file has a header and no values under it", header[0] + 1)
    columns: list[Column] = []
    numbers: dict[str, np.ndarray] = {}
    for name, column in zip(names, values, strict=True):
        array = _numbers(column)
        if array is None:
            columns.append(Column(name, False, len(set(column))))
        else:
            numbers[name] = array
            columns.append(Column(name, True, len(np.unique(array))))
    return Table(columns, rows, dict(zip(names, values, strict=True)), numbers)


def _decode(body: bytes) -> str:
    try:
        return body.decode("utf-8-sig")
    except UnicodeDecodeError as bad:
        row = body.count(b"\n", 0, bad.start) + 1
        raise CsvError(
            f"row {row}: not UTF-8 text (byte {bad.start + 1} is 0x{body[bad.start]:02x}); "
            "save the file as CSV UTF-8",
            row,
        ) from None


def _records(text: str) -> Iterator[tuple[int, list[str]]]:
    """The file's records but blank lines, each with its row number (blank lines count: a
    spreadsheet shows them as empty rows)."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    row = 0
    while True:
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as error:  # a stray quote, a field past csv's own size limit
            raise CsvError(f"row {row + 1}: not valid CSV ({error})", row + 1) from None
        row += 1
        if record:  # a blank line
            yield row, record


def _header(first: tuple[int, list[str]], max_columns: int) -> list[str]:
    row, record = first
    names = [name.strip() for name in record]
    if len(names) > max_columns:
        raise CsvError(f"too many columns: {len(names)}, at most {max_columns}", row)
    seen: dict[str, int] = {}
    for n, name in enumerate(names, start=1):
        if not name:
            raise CsvError(
                f"row {row}: column {n} has no name (the header names every column)", row
            )
        if name in seen:
            raise CsvError(
                f"row {row}: the column name {_shown(name)} is given twice (columns {seen[name]} "
                f"and {n})",
                row,
                name,
            )
        seen[name] = n
    if all(_is_number(name) for name in names):
        raise CsvError(
            f"no header row: the first row is all numbers ({_shown(', '.join(names))}); the "
            "first row names the columns",
            row,
        )
    return names


def _ragged(row: int, record: list[str], names: list[str]) -> None:
    if len(record) < len(names):
        missing = names[len(record)]
        raise CsvError(
            f"row {row} has {_values(len(record))} and the header {len(names)} columns: "
            f"no value for column {_shown(missing)}",
            row,
            missing,
        )
    raise CsvError(
        f"row {row} has {_values(len(record))} and the header {len(names)} columns: "
        f"value {len(names) + 1} ({_shown(record[len(names)].strip())}) has no column",
        row,
    )


def _values(n: int) -> str:
    return "1 value" if n == 1 else f"{n} values"


def _is_number(value: str) -> bool:
    return NUMBER.fullmatch(value) is not None and math.isfinite(float(value))


def _numbers(column: list[str]) -> np.ndarray | None:
    """The column as float64, or None if any value is not a number."""
    if not all(NUMBER.fullmatch(value) for value in column):
        return None
    array = np.array([float(value) for value in column], dtype=np.float64)
    if not np.isfinite(array).all():  # 1e999: a number CSV can write, float64 cannot hold
        return None
    return array


def _shown(value: str) -> str:
    """A value quoted back to the user, cut short if long."""
    short = value if len(value) <= SHOWN else value[: SHOWN - 1] + "…"
    return repr(short) if short else "''"


# -- the files a spec may name, parsed once -------------------------------------


class Tables:
    """Uploaded CSV files by id, parsed once: filled by whoever reads them from the db (the
    sessions layer, before it builds a Lab on a spec that names one). Content-addressed, so a
    table is the same wherever it came from; bounded (least recently used leave)."""

    def __init__(self, size: int = 16) -> None:
        self.size = size
        self._tables: OrderedDict[str, Table] = OrderedDict()
        self._texts: dict[str, str] = {}  # the files as text, for the export
        self._lock = threading.Lock()

    def remember(self, dataset_id: str, body: bytes) -> None:
        if hashlib.sha256(body).hexdigest() != dataset_id:
            raise ValueError("a dataset's id is the SHA-256 of its bytes")
        with self._lock:
            if dataset_id in self._tables:
                self._tables.move_to_end(dataset_id)
                return
        # read with no limits: the file passed those in force when it came
        table = parse_csv(body, max_rows=sys.maxsize, max_columns=sys.maxsize)
        with self._lock:
            self._tables[dataset_id] = table
            self._texts[dataset_id] = body.decode("utf-8-sig")  # parse_csv took it as UTF-8
            while len(self._tables) > self.size:
                gone, _ = self._tables.popitem(last=False)
                del self._texts[gone]

    def clear(self) -> None:
        """Forget every file (each is read from the db again when next needed)."""
        with self._lock:
            self._tables.clear()
            self._texts.clear()

    def knows(self, dataset_id: str) -> bool:
        with self._lock:
            return dataset_id in self._tables

    def text(self, dataset_id: str) -> str | None:
        with self._lock:
            return self._texts.get(dataset_id)

    def get(self, dataset_id: str) -> Table | None:
        with self._lock:
            return self._tables.get(dataset_id)


TABLES = Tables()
