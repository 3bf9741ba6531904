"""Answers that carry only what changed (issue 38), over HTTP: a client that says what it holds
(``?held=``) and puts back what the answer left out has, after every action, exactly the
Session a client holding nothing gets (its twin session, driven the same way without
``held``), bit for bit; and the answers leave out what a line did not change."""

from __future__ import annotations

import gzip
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.digits import DIGITS, MLP
from support.held import Holder, restore

MOONS = {"scenario": "moons", "optimizer": {"kind": "sgd", "momentum": 0.9}, "batchnorm": True}
DIGITS_MLP = {"model": MLP, "data": DIGITS, "standardize": True, "batch_size": 64, "lr": 0.1}
SETUPS = {"moons": MOONS, "mlp": DIGITS_MLP, "neuron": {}}
LINES = ["forward", "loss", "zero_grad", "backward", "step"]


def create(client: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    r = client.post("/api/sessions", json=body)
    assert r.status_code == 201, r.text
    created: dict[str, Any] = r.json()
    return created


def comparable(session: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in session.items() if k not in ("id", "version")}


class Twins:
    """Two sessions of one setup: ``held`` driven as the page drives it, ``plain`` without."""

    def __init__(self, client: httpx.Client, body: dict[str, Any]) -> None:
        self.client = client
        first, second = create(client, body), create(client, body)
        self.held_id, self.plain_id = first["id"], second["id"]
        self.holder = Holder(first)
        assert comparable(first) == comparable(second)

    def act(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        """The action on both; the held one's answer (as sent, before it is made whole)."""
        answers = []
        for sid, query in ((self.held_id, self.holder.query()), (self.plain_id, {})):
            url = f"/api/sessions/{sid}{path}"
            r = self.client.request(method, url, params={"since": 0, **query}, json=body)
            answers.append(r)
        held, plain = answers
        assert held.status_code == plain.status_code, (path, held.text, plain.text)
        if held.status_code != 200:
            assert held.json() == plain.json()
            return {}
        sent = self.holder.newest
        answer: dict[str, Any] = held.json()
        whole = self.holder.take(answer, sent)
        assert "version" not in plain.json() and "unchanged" not in plain.json()
        assert comparable(whole) == comparable(plain.json()), path
        return answer


ACTIONS: list[tuple[str, str, Any]] = [
    *(("POST", f"/{line}", None) for line in LINES),
    ("POST", "/next", None),
    ("POST", "/back", None),
    ("POST", "/rewind", {"to": 2}),
    ("POST", "/run", {"iterations": 2}),
    ("POST", "/reset", None),
    ("POST", "/zero_grad", {"set_to_none": False}),
    ("PATCH", "", {"lr": 0.05}),
    ("PATCH", "", {"skip_zero_grad": True}),
    ("GET", "", None),
]


@pytest.mark.parametrize("setup", sorted(SETUPS))
def test_a_held_client_has_the_whole_session_after_every_action(
    client: httpx.Client, setup: str
) -> None:
    twins = Twins(client, SETUPS[setup])
    for method, path, body in ACTIONS + [("POST", "/next", None)] * 7 + ACTIONS[::-1]:
        twins.act(method, path, body)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(st.sampled_from(range(len(ACTIONS))), min_size=1, max_size=25))
def test_any_order_of_actions_leaves_a_held_client_whole(
    client: httpx.Client, steps: list[int]
) -> None:
    twins = Twins(client, MOONS)
    for k in steps:
        twins.act(*ACTIONS[k])


def test_each_line_carries_only_the_stores_it_changed(client: httpx.Client) -> None:
    """The digits MLP: a forward, loss or zero_grad sends no parameter and no .grad; backward
    sends the .grad alone, step the values alone; each answer far smaller than the whole."""
    twins = Twins(client, DIGITS_MLP)
    left_out = {
        "forward": ["params", "grad", "optimizer_state", "buffers", "spec"],
        "loss": ["params", "grad", "optimizer_state", "buffers", "spec"],
        "zero_grad": ["params", "optimizer_state", "buffers", "graph", "spec"],
        "backward": ["params", "optimizer_state", "buffers", "spec"],
        "step": ["grad", "optimizer_state", "buffers", "graph", "spec"],
    }
    for line in LINES * 2:
        answer = twins.act("POST", f"/{line}")
        unchanged = answer["unchanged"]
        if line == "zero_grad" and twins.holder.answers[answer["version"]]["iteration"] == 1:
            unchanged = [s for s in unchanged if s != "grad"]  # None before and after
        assert unchanged == left_out[line], line
        if "params" not in answer:
            continue
        # an entry leaves out a field only where it is an unchanged summary (the weights, past
        # 256 elements); the biases' few numbers are sent whole with their entry
        for p in answer["params"]:
            big = p["shape"] != [p["shape"][0]]
            for store, field in (("params", "value"), ("grad", "grad")):
                assert (field in p) == (not big or store not in answer["unchanged"]), (line, p)


def test_a_new_sessions_first_click_carries_only_its_change(client: httpx.Client) -> None:
    """``held=start``: the creation's answer. A class creating one setup shares that answer;
    each first click then sends what its line changed, not the whole Session."""
    created = create(client, DIGITS_MLP)
    again = create(client, DIGITS_MLP)  # the second of a setup: its log alone, built later
    for session in (created, again):
        sid = session["id"]
        r = client.post(f"/api/sessions/{sid}/forward", params={"held": "start"})
        assert r.status_code == 200, r.text
        answer = r.json()
        assert "params" not in answer and "spec" not in answer
        whole = restore(answer, session)
        plain = client.get(f"/api/sessions/{sid}").json()
        assert comparable(whole) == comparable(plain)
        # once the session has moved on, a client still holding the start gets the change
        # from the start, not from where the session stood before
        r = client.post(f"/api/sessions/{sid}/loss", params={"held": "start"})
        assert comparable(restore(r.json(), session)) == comparable(
            client.get(f"/api/sessions/{sid}").json()
        )


def test_a_version_not_kept_gets_the_whole_session_and_junk_a_422(client: httpx.Client) -> None:
    sid = create(client, MOONS)["id"]
    whole = client.get(f"/api/sessions/{sid}").json()
    for held in ("none", "0123abcd.7", "start"):  # start: not held here once nothing is kept
        r = client.post(f"/api/sessions/{sid}/forward", params={"held": held})
        assert r.status_code == 200 and "unchanged" not in r.json()
        assert r.json()["version"] and whole.keys() <= r.json().keys()
        client.post(f"/api/sessions/{sid}/back")
    # another session's version names nothing here
    other = create(client, MOONS)["id"]
    version = client.get(f"/api/sessions/{other}", params={"held": "none"}).json()["version"]
    r = client.post(f"/api/sessions/{sid}/forward", params={"held": version})
    assert r.status_code == 200 and "unchanged" not in r.json()
    for junk in ("", "x", "1.2.3", "ABCD.1", "start;", "a" * 17 + ".1"):
        r = client.post(f"/api/sessions/{sid}/forward", params={"held": junk})
        assert r.status_code == 422, junk
        assert r.json()["detail"][0]["loc"] == ["query", "held"]


def test_without_held_an_answer_is_the_whole_session_as_before(client: httpx.Client) -> None:
    sid = create(client, DIGITS_MLP)["id"]
    for line in LINES:
        answer = client.post(f"/api/sessions/{sid}/{line}").json()
        assert "version" not in answer and "unchanged" not in answer
        assert all("value" in p and "grad" in p for p in answer["params"])


def test_the_digits_mlps_answers_are_small(client: httpx.Client) -> None:
    """Wire sizes (gzip, as the server sends them) of a held client's lines on the digits
    MLP, against the whole Session: the targets are benchmark rows (bench/classload.py); here
    only that a line which changes no big store is a small fraction of the whole."""
    twins = Twins(client, DIGITS_MLP)
    sid = twins.held_id
    whole = client.get(f"/api/sessions/{sid}", headers={"accept-encoding": "gzip"})
    sizes = {}
    for line in LINES:
        query = twins.holder.query()
        r = client.post(f"/api/sessions/{sid}/{line}", params=query)
        twins.holder.take(r.json(), query["held"])
        sizes[line] = len(gzip.compress(r.content, 1))
    for line in ("forward", "loss", "zero_grad"):
        assert sizes[line] * 10 < len(gzip.compress(whole.content, 1)), sizes
