"""A CSV file as a Table (issue 28): what is read, the numbers exactly, and each refusal naming
its row and column. Random files (hypothesis): a table written by the csv module reads back as
written; any bytes at all give a Table or a CsvError, nothing else."""

from __future__ import annotations

import csv
import hashlib
import io

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.spec.tables import CsvError, dataset_id, parse_csv

LIMITS = {"max_rows": 10_000, "max_columns": 1_024}


def refusal(body: bytes, **limits: int) -> CsvError:
    with pytest.raises(CsvError) as caught:
        parse_csv(body, **{**LIMITS, **limits})
    return caught.value


def test_a_file_reads_as_numeric_and_text_columns() -> None:
    body = b'\xef\xbb\xbfx, y ,label\r\n1,2,a\r\n1.0,3e0,b\r\n\r\n-2, .5 ,"a"\r\n'
    table = parse_csv(body, **LIMITS)
    assert table.rows == 3
    assert table.summary() == {
        "rows": 3,
        "columns": [
            {"name": "x", "numeric": True, "distinct": 2},  # 1 and 1.0 are one number
            {"name": "y", "numeric": True, "distinct": 3},
            {"name": "label", "numeric": False, "distinct": 2},
        ],
    }
    x = table.numbers("x")
    assert x.dtype == np.float64 and x.tolist() == [1.0, 1.0, -2.0]
    assert table.numbers("y").tolist() == [2.0, 3.0, 0.5]
    assert not x.flags.writeable  # shared: nobody changes the file
    assert table.texts("label") == ["a", "b", "a"]
    assert table.texts("x") == ["1", "1.0", "-2"]
    with pytest.raises(ValueError, match="'label' is not numeric \\(it holds 'a'\\)"):
        table.numbers("label")
    with pytest.raises(KeyError, match="no column 'z'"):
        table.numbers("z")
    with pytest.raises(KeyError):
        table.texts("z")


def test_numbers_are_decimal_numbers_only() -> None:
    for text in ["nan", "inf", "-Infinity", "1_000", "0x10", "1e999", "١٢", "1,5", "--1", "1e"]:
        table = parse_csv(f'a,b\n"{text}",1\n'.encode(), **LIMITS)
        assert not table.column("a").numeric, text
    for text, value in [("+3", 3.0), ("-.5", -0.5), ("1E-3", 0.001), ("7.", 7.0), ("0", 0.0)]:
        assert parse_csv(f"a\n{text}\n".encode(), **LIMITS).numbers("a").tolist() == [value]
    # bit for bit what float() reads (the spec's data is float64 NumPy)
    values = ["0.1", "2.718281828459045", "-1e-310", "123456789.123456789"]
    table = parse_csv(("v\n" + "\n".join(values)).encode(), **LIMITS)
    assert table.numbers("v").tolist() == [float(v) for v in values]


@pytest.mark.parametrize(
    ("body", "limits", "row", "column", "words"),
    [
        (b"", {}, 1, None, "no header row: the file is empty"),
        (b"\n\n", {}, 1, None, "no header row"),
        (b"1,2\n3,4\n", {}, 1, None, "no header row: the first row is all numbers"),
        (b"a,b,a\n1,2,3\n", {}, 1, "a", "'a' is given twice (columns 1 and 3)"),
        (b"a,,c\n1,2,3\n", {}, 1, None, "column 2 has no name"),
        (b"a, \n1,2\n", {}, 1, None, "column 2 has no name"),
        (b"a,b\n", {}, 2, None, "no rows"),
        (b"a,b\n1,2\n3\n", {}, 3, "b", "row 3 has 1 value and the header 2 columns"),
        (b"a,b\n1,2,9\n", {}, 2, None, "value 3 ('9') has no column"),
        (b"a,b\n1,2\n\n3, \n", {}, 4, "b", "row 4, column 'b': a missing value"),
        (b'a,b\n1,"2\n', {}, 2, None, "row 2: not valid CSV"),
        (b'a,b\n1,"2"x\n', {}, 2, None, "row 2: not valid CSV"),
        (b"a,b\n1,2\n\xff,3\n", {}, 3, None, "row 3: not UTF-8 text (byte 9 is 0xff)"),
        (b"a,b,c\n1,2,3\n", {"max_columns": 2}, 1, None, "too many columns: 3, at most 2"),
        (b"a\n1\n2\n3\n", {"max_rows": 2}, 4, None, "too many rows: at most 2"),
    ],
)
def test_a_refusal_names_its_row_and_column(
    body: bytes, limits: dict[str, int], row: int, column: str | None, words: str
) -> None:
    error = refusal(body, **limits)
    assert (error.row, error.column) == (row, column)
    assert words in error.message


def test_a_huge_field_is_refused_in_words() -> None:
    error = refusal(b"a\n" + b"x" * 200_000 + b"\n")
    assert error.row == 2 and "field larger than field limit" in error.message


def test_the_id_is_the_sha256_of_the_bytes() -> None:
    body = b"a,b\n1,2\n"
    assert dataset_id(body) == hashlib.sha256(body).hexdigest() == dataset_id(bytes(body))
    assert len(dataset_id(body)) == 64
    assert dataset_id(body) != dataset_id(b"a,b\n1,2")  # the bytes, not what they mean


names = st.text(st.characters(codec="utf-8"), min_size=1, max_size=8).filter(
    lambda s: s.strip() == s and s != "" and not s.replace(".", "").isdigit()
)
cells = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers(-(10**6), 10**6).map(str),
    st.text(st.characters(codec="utf-8"), min_size=1, max_size=8).map(str.strip).filter(bool),
)


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[str], list[list[str]]]:
    header = draw(st.lists(names, min_size=1, max_size=5, unique=True))
    rows = draw(
        st.lists(
            st.lists(cells, min_size=len(header), max_size=len(header)), min_size=1, max_size=8
        )
    )
    return header, rows


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.sampled_from(["\n", "\r\n"]), st.booleans())
def test_a_written_table_reads_back_as_written(
    table: tuple[list[str], list[list[str]]], ending: str, bom: bool
) -> None:
    header, rows = table
    if all(plain_number(h) for h in header):
        return  # a header of numbers is no header
    out = io.StringIO()
    # the writer quotes a value holding a line break only if its lineterminator has that
    # character: with "\n" alone, quote everything
    if ending == "\r\n":
        writer = csv.writer(out, lineterminator=ending)
    else:
        writer = csv.writer(out, lineterminator=ending, quoting=csv.QUOTE_ALL)
    writer.writerow(header)
    writer.writerows(rows)
    body = ("\ufeff" if bom else "").encode() + out.getvalue().encode()
    try:
        parsed = parse_csv(body, **LIMITS)
    except CsvError as error:
        # a value with a line break in it may make a whole row blank-looking: never here
        pytest.fail(f"refused a well-formed file: {error.message}")
    assert parsed.names == header and parsed.rows == len(rows)
    for n, name in enumerate(header):
        column = [row[n] for row in rows]
        assert parsed.texts(name) == column
        if parsed.column(name).numeric:
            assert all(plain_number(v) for v in column)
            assert parsed.numbers(name).tolist() == [float(v) for v in column]
            assert parsed.column(name).distinct == len({float(v) for v in column})
        else:
            assert not all(plain_number(v) for v in column)
            assert parsed.column(name).distinct == len(set(column))


def plain_number(text: str) -> bool:
    """A finite number written with ASCII digits, a sign, a point and an exponent only."""
    try:
        value = float(text)
    except ValueError:
        return False
    return np.isfinite(value) and set(text) <= set("0123456789+-.eE")


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=300),
        st.text(alphabet=st.sampled_from('ab1.,"\r\n \t\ufeff\x00é-e'), max_size=200).map(
            str.encode
        ),
    )
)
def test_any_bytes_give_a_table_or_a_csv_error(body: bytes) -> None:
    try:
        table = parse_csv(body, max_rows=5, max_columns=4)
    except CsvError as error:
        assert error.message and (error.row is None or error.row >= 1)
        return
    assert 1 <= table.rows <= 5 and 1 <= len(table.columns) <= 4
    for column in table.columns:
        if column.numeric:
            assert np.isfinite(table.numbers(column.name)).all()
        assert 1 <= column.distinct <= table.rows
