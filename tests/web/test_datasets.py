"""CSV datasets over HTTP (issue 28): POST /api/datasets and GET /api/datasets/{id} on a real
server, on SQLite and on PostgreSQL. The summary's numbers exactly; the same file is the same
id; every refusal a 422 naming its row and column (or a 413/415 in words), with nothing kept;
the upload's own body limit beside the JSON bodies' one; and fuzzed bodies never a 5xx."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from app.db import Database
from app.main import create_app
from app.settings import Settings
from app.spec.tables import TABLES, dataset_id
from support.serve import schema_url, serve_app

CSV = {"content-type": "text/csv"}
IRIS = (
    b"sepal length,sepal width,species\r\n"
    b"5.1,3.5,setosa\r\n"
    b"4.9,3.0,setosa\r\n"
    b"7.0,3.2,versicolor\r\n"
    b"6.4,3.2,versicolor\r\n"
)
IRIS_SUMMARY = {
    "rows": 4,
    "columns": [
        {"name": "sepal length", "numeric": True, "distinct": 4},
        {"name": "sepal width", "numeric": True, "distinct": 3},
        {"name": "species", "numeric": False, "distinct": 2},
    ],
}


class Server:
    def __init__(self, app: FastAPI, url: str) -> None:
        self.app, self.url = app, url
        self.db: Database = app.state.sessions.db
        self.http = httpx.Client(base_url=url, timeout=60)

    def upload(self, body: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
        return self.http.post("/api/datasets", content=body, headers=headers or CSV)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request: pytest.FixtureRequest) -> Iterator[Server]:
    data = tempfile.mkdtemp(prefix="loop-stepper-datasets-")
    url = ""
    if request.param == "postgres":
        url = schema_url(request.getfixturevalue("postgres_url"), f"datasets_{os.getpid()}")
    app = create_app(Settings(data=data, database_url=url))
    with serve_app(app) as base:
        server = Server(app, base)
        yield server
        server.http.close()


@pytest.fixture(scope="module")
def small() -> Iterator[Server]:
    """A server with small limits: 200 bytes, 3 rows, 2 columns."""
    settings = Settings(
        data=":memory:", dataset_max_bytes=200, dataset_max_rows=3, dataset_max_columns=2
    )
    app = create_app(settings)
    with serve_app(app) as base:
        server = Server(app, base)
        yield server
        server.http.close()


def test_an_upload_answers_its_summary_and_is_kept(server: Server) -> None:
    r = server.upload(IRIS)
    assert r.status_code == 201, r.text
    key = dataset_id(IRIS)
    assert r.json() == {"id": key, **IRIS_SUMMARY}
    assert server.db.dataset(key) == IRIS  # the bytes as sent
    again = server.upload(IRIS, {"content-type": "text/csv; charset=utf-8"})
    assert again.status_code == 201 and again.json() == r.json()  # the same file, the same id
    got = server.http.get(f"/api/datasets/{key}")
    assert got.status_code == 200 and got.json() == r.json()
    other = IRIS.replace(b"6.4", b"6.5")
    assert server.upload(other).json()["id"] == dataset_id(other) != key


def test_an_unknown_dataset_is_404(server: Server) -> None:
    for key in ["0" * 64, dataset_id(b"never uploaded"), "nope", "A" * 64, "0" * 65]:
        r = server.http.get(f"/api/datasets/{key}")
        assert (r.status_code, r.json()) == (404, {"detail": "no such dataset"})


REFUSED = [
    (b"", [1], "no header row: the file is empty"),
    (b"1,2\n3,4\n", [1], "no header row: the first row is all numbers"),
    (b"x,y,x\n1,2,3\n", [1, "x"], "'x' is given twice"),
    (b"x,,z\n1,2,3\n", [1], "column 2 has no name"),
    (b"x,y\n", [2], "no rows"),
    (b"x,y\n1,2\n3\n", [3, "y"], "row 3 has 1 value and the header 2 columns"),
    (b"x,y\n1,2\n3,4,5\n", [3], "value 3 ('5') has no column"),
    (b"x,y\n1,2\n3,\n", [3, "y"], "row 3, column 'y': a missing value"),
    (b'x,y\n1,"2\n', [2], "not valid CSV"),
    (b"x,y\n\xe9,1\n", [2], "not UTF-8 text"),
]


@pytest.mark.parametrize(("body", "where", "words"), REFUSED)
def test_a_refused_file_names_its_row_and_column_and_is_not_kept(
    server: Server, body: bytes, where: list[Any], words: str
) -> None:
    r = server.upload(body)
    assert r.status_code == 422, r.text
    (error,) = r.json()["detail"]
    assert error["loc"] == ["body", *where] and error["type"] == "csv"
    assert words in error["msg"]
    assert server.db.dataset(dataset_id(body)) is None
    assert server.http.get(f"/api/datasets/{dataset_id(body)}").status_code == 404


def test_the_body_is_text_csv(server: Server) -> None:
    for headers in [{"content-type": "application/json"}, {"content-type": "text/plain"}, {}]:
        r = server.http.post("/api/datasets", content=IRIS, headers=headers)
        assert r.status_code == 415, headers
        assert "a dataset is sent as text/csv" in r.json()["detail"]


def test_the_upload_has_its_own_body_limit(server: Server) -> None:
    limit = Settings().dataset_max_bytes
    assert limit == 1024**2
    # a file of 1 MB exactly is taken (and read: it is refused on its rows)
    body = b"n\n" + b"".join(b"%09d\n" % n for n in range(104_857)) + b"123\n"
    assert len(body) == limit
    r = server.upload(body)
    assert r.status_code == 422  # past 10,000 rows: read, and refused on its rows
    assert r.json()["detail"][0]["loc"] == ["body", 10_002]
    rows = b"".join(b"%d.5,%d\n" % (n, n % 7) for n in range(10_000))
    body = b"a,b\n" + rows
    r = server.upload(body)
    assert r.status_code == 201, r.text
    assert r.json()["rows"] == 10_000
    assert r.json()["columns"] == [
        {"name": "a", "numeric": True, "distinct": 10_000},
        {"name": "b", "numeric": True, "distinct": 7},
    ]
    # past the limit: 413 in a dataset's words, declared or chunked
    over = b"a\n" + b"1\n" * (limit // 2)
    assert len(over) == limit + 2
    words = f"a CSV dataset is at most {limit} bytes (LOOP_STEPPER_DATASET_MAX_BYTES)"
    r = server.upload(over)
    assert (r.status_code, r.json()) == (413, {"detail": words})
    r = server.http.post("/api/datasets", content=iter([over[:1000], over[1000:]]), headers=CSV)
    assert (r.status_code, r.json()) == (413, {"detail": words})
    assert server.db.dataset(dataset_id(over)) is None
    # every other body keeps its 16 KB: the exception is this one path
    big_json = b'{"iterations": 1, "x": "' + b"y" * 20_000 + b'"}'
    r = server.http.post(
        "/api/sessions/none/run", content=big_json, headers={"content-type": "application/json"}
    )
    assert r.status_code == 413 and "request body too large" in r.json()["detail"]


def test_each_limit_is_a_setting(small: Server) -> None:
    assert small.upload(b"a,b\n1,2\n3,4\n5,6\n").status_code == 201  # 3 rows, 2 columns
    r = small.upload(b"a,b\n1,2\n3,4\n5,6\n7,8\n")
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", 5]
    assert "too many rows: at most 3" in r.json()["detail"][0]["msg"]
    r = small.upload(b"a,b,c\n1,2,3\n")
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", 1]
    assert "too many columns: 3, at most 2" in r.json()["detail"][0]["msg"]
    body = b"a\n" + b"1\n" * 99  # 200 bytes
    assert len(body) == 200
    assert small.upload(b"a\n" + b"1\n" * 3).status_code == 201
    r = small.upload(body + b"\n")
    assert r.status_code == 413
    assert (
        r.json()["detail"] == "a CSV dataset is at most 200 bytes (LOOP_STEPPER_DATASET_MAX_BYTES)"
    )


# -- fuzzed bodies: never a 5xx --------------------------------------------------------------

cell = st.one_of(
    st.sampled_from(["", " ", "1", "-2.5", "1e3", "nan", "x", '"', '""', '"a,b"', "\r", "\n"]),
    st.text(max_size=6),
    st.floats().map(repr),
    st.integers(-5, 5).map(str),
)
csvish = st.lists(st.lists(cell, max_size=5).map(lambda cells: ",".join(cells)), max_size=6).map(
    lambda rows: "\n".join(rows)
)


@st.composite
def nearly_right(draw: st.DrawFn) -> bytes:
    """A well-formed file, often spoilt in one place (a BOM, CRLF, a cell, a row)."""
    names = draw(
        st.lists(st.sampled_from(["a", "b", "c", "label"]), min_size=1, max_size=4, unique=True)
    )
    numbers = st.one_of(st.integers(-9, 9).map(str), st.floats(-1e3, 1e3).map(repr))
    rows = draw(
        st.lists(
            st.lists(numbers, min_size=len(names), max_size=len(names)), min_size=1, max_size=6
        )
    )
    lines = [",".join(names), *(",".join(row) for row in rows)]
    if draw(st.booleans()):
        at = draw(st.integers(0, len(lines) - 1))
        lines[at] = draw(
            st.sampled_from([lines[at] + ",", "", '"', lines[at][:-1], "x," + lines[at]])
        )
    text = draw(st.sampled_from(["\n", "\r\n", "\r"])).join(lines)
    bom = draw(st.sampled_from(["", "\ufeff"]))
    return (bom + text + draw(st.sampled_from(["", "\n", "\n\n"]))).encode()


bodies = st.one_of(
    nearly_right(),
    st.binary(max_size=400),
    csvish.map(lambda s: s.encode("utf-8", "surrogatepass")),
    st.tuples(st.sampled_from([b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b""]), csvish).map(
        lambda bom_text: bom_text[0] + bom_text[1].encode("utf-8", "surrogatepass")
    ),
    st.tuples(csvish, st.binary(max_size=20)).map(lambda t: t[0].encode("utf-8", "replace") + t[1]),
    # huge fields: past the csv module's own limit (131,072 characters), quoted or not, and
    # past the server's body limit
    st.sampled_from([131_072, 131_073, 150_000, 250_000]).flatmap(
        lambda n: st.sampled_from(
            [b"a\n" + b"z" * n, b'a,b\n1,"' + b"z" * n + b'"\n', b"z" * n + b",a\n1,2\n"]
        )
    ),
)


@settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "15")) * 8,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
@given(body=bodies)
def test_no_body_is_ever_a_5xx(small_fuzz: Server, body: bytes) -> None:
    r = small_fuzz.upload(body)
    assert r.status_code in (201, 413, 422), (r.status_code, r.text)
    event(f"answered {r.status_code}")  # --hypothesis-show-statistics: each kind is reached
    kept = small_fuzz.db.dataset(dataset_id(body))
    if r.status_code == 201:
        assert kept == body and r.json()["id"] == dataset_id(body)
        assert small_fuzz.http.get(f"/api/datasets/{dataset_id(body)}").json() == r.json()
    else:
        assert kept is None and isinstance(r.json()["detail"], (str, list))


@pytest.mark.parametrize("size", [131_072, 131_073, 199_990, 200_001])
@pytest.mark.parametrize("where", ["value", "quoted", "header"])
def test_a_huge_field_is_a_422_or_a_413(small_fuzz: Server, size: int, where: str) -> None:
    body = {
        "value": b"a\n" + b"7" * size,
        "quoted": b'a,b\n1,"' + b"z" * size + b'"\n',
        "header": b"z" * size + b",a\n1,2\n",
    }[where]
    r = small_fuzz.upload(body)
    if len(body) > 200_000:
        assert r.status_code == 413
    elif size > 131_072:  # the csv module's own field limit, which is not raised
        assert r.status_code == 422
        assert "field larger than field limit (131072)" in r.json()["detail"][0]["msg"]
    else:
        assert r.status_code == 201, r.text  # at the limit: taken
    assert small_fuzz.db.dataset(dataset_id(body)) == (body if r.status_code == 201 else None)


@pytest.fixture(scope="module")
def small_fuzz() -> Iterator[Server]:
    """The default row and column limits, and a body limit the fuzzer reaches (200 KB)."""
    app = create_app(Settings(data=":memory:", dataset_max_bytes=200_000))
    with serve_app(app) as base:
        server = Server(app, base)
        yield server
        server.http.close()


# -- a session on a dataset (your own model and data) -------------------------------------


def test_a_session_on_a_dataset_replays_from_the_db_and_a_refusal_keeps_nothing(
    server: Server,
) -> None:
    dataset = server.upload(IRIS).json()["id"]
    data = {"kind": "csv", "dataset": dataset, "target": "species"}
    spec: dict[str, Any] = {
        "model": [{"type": "Linear", "out_features": 2}],
        "data": data,
        "validation": 0,
    }
    r = server.http.post("/api/sessions", json=spec)
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    for entry in ("forward", "loss", "backward", "step"):
        done = server.http.post(f"/api/sessions/{sid}/{entry}").json()
    # out of memory, and the file out of the engine's cache: read back from the db
    server.app.state.sessions.forget(sid)
    TABLES.clear()
    again = server.http.get(f"/api/sessions/{sid}").json()
    assert again["params"] == done["params"] and again["loss"] == done["loss"]
    logs = server.db.count()
    for bad in (
        {**spec, "model": [{"type": "Linear", "out_features": 3}]},  # 2 classes, 3 outputs
        {**spec, "data": {**data, "target": "petal"}},
        {**spec, "batch_size": 5000},
    ):
        assert server.http.post("/api/sessions", json=bad).status_code == 422
    assert server.db.count() == logs  # nothing kept for a refused spec
