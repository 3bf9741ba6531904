"""Two app processes behind Debian's nginx (``deploy/nginx.conf`` as written), sharing one
PostgreSQL (Debian's, started by the tests): sessions spread over both, a lecture followed
from the process that does not hold it, and ``kill -9`` of one process under load.

Which process answered is read from ``X-Served-By`` (``LOOP_STEPPER_SERVED_BY``, set to "a"
and "b"). Bounded: a few client loops of at most 120 requests each, every wait with a deadline.
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

from app.engine.program import CORRECT
from support.classroom import shaped, truth, wrong
from support.oracle import Plain
from support.shards import Cluster, cluster, start_app, wait_up

SKIP = {"id", "moments"}
HIDDEN = {"program", "code", "preset", "toggles"}


@pytest.fixture(scope="module")
def database(postgres_url: str) -> str:
    """A database of this module's own on the test run's PostgreSQL."""
    name = f"shards_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return postgres_url.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(scope="module")
def shards(database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    where = tmp_path_factory.mktemp("shards")
    env = {
        "LOOP_STEPPER_DATABASE_URL": database,
        "LOOP_STEPPER_DATA": str(where / "unused"),
        "LOOP_STEPPER_LECTURE_KEEPALIVE": "1",
    }
    with cluster(["a", "b"], env, where) as c:
        yield c


def owner(c: httpx.Client, sid: str) -> str:
    r = c.get(f"/api/sessions/{sid}")
    assert r.status_code == 200, r.text
    return r.headers["x-served-by"]


def sessions_on_both(
    c: httpx.Client, scenario: str = "neuron", each: int = 2, created: dict[str, str] | None = None
) -> dict[str, str]:
    """New sessions through nginx until each process holds ``each`` and holds one that the
    other created: {id: the process holding it}. ``created`` gets the process that created
    each (creation goes to any process; the first request on the session moves it)."""
    held: dict[str, str] = {}
    created = {} if created is None else created
    for _ in range(80):
        r = c.post("/api/sessions", json={"scenario": scenario})
        sid = r.json()["id"]
        created[sid] = r.headers["x-served-by"]
        held[sid] = owner(c, sid)
        names = list(held.values())
        moved = {name for s, name in held.items() if created[s] != name}
        if all(names.count(name) >= each for name in ("a", "b")) and moved == {"a", "b"}:
            return held
    raise AssertionError(f"80 sessions, all on one process: {held}")


def test_sessions_spread_over_both_processes(shards: Cluster) -> None:
    with httpx.Client(base_url=shards.url, timeout=30) as c:
        held = sessions_on_both(c)
        for sid, name in held.items():
            # every request of a session reaches the process that holds it, whoever created it
            for _ in range(3):
                assert owner(c, sid) == name
            r = None
            for _ in CORRECT[:4]:  # forward, loss, zero_grad, backward: the worked example
                r = c.post(f"/api/sessions/{sid}/next")
                assert r.headers["x-served-by"] == name
            assert r is not None
            assert [p["grad"] for p in r.json()["params"]] == [[[-23.5]], [-8.0]]
        # requests without a session (here /healthz) go to either
        assert {c.get("/healthz").headers["x-served-by"] for _ in range(30)} == {"a", "b"}


class Follower(threading.Thread):
    """An SSE client reading a lecture's events until it has ``want`` of them (or 30 s)."""

    def __init__(self, base: str, code: str) -> None:
        super().__init__(daemon=True)
        self.base, self.code = base, code
        self.events: list[tuple[int, dict[str, Any]]] = []
        self.served_by = ""
        self.want = 10**9
        self.ready = threading.Event()
        self.ended = False  # the lecture's `end` came
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            deadline = time.monotonic() + 40
            with (
                httpx.Client(base_url=self.base, timeout=10) as c,
                c.stream("GET", f"/api/lectures/{self.code}/events") as r,
            ):
                assert r.status_code == 200
                self.served_by = r.headers["x-served-by"]
                fields: dict[str, str] = {}
                history: list[dict[str, Any]] = []
                for line in r.iter_lines():  # a keep-alive comment every second
                    if len(self.events) >= self.want or time.monotonic() > deadline:
                        return
                    if line.startswith(":"):
                        continue
                    if line:
                        key, _, value = line.partition(": ")
                        fields[key] = value
                        continue
                    if not fields:
                        continue
                    if fields["event"] == "end":
                        self.ended = True
                        return
                    assert fields["event"] == "session", fields
                    data = json.loads(fields["data"])
                    kept = [p for p in history if p["n"] < data["since"]]
                    history = data["session"]["history"] = kept + data["session"]["history"]
                    self.events.append((int(fields["id"]), data["session"]))
                    fields = {}
                    self.ready.set()
        except BaseException as error:
            self.error = error
            self.ready.set()


def code_elsewhere(c: httpx.Client, sid: str, instructor: str) -> str:
    """A lecture on ``sid`` whose join code nginx sends to the other process than the
    instructor's (codes are random: a few tries)."""
    for _ in range(30):
        code: str = c.post(f"/api/sessions/{sid}/lecture").json()["code"]
        if c.get(f"/api/lectures/{code}").headers["x-served-by"] != instructor:
            return code
        assert c.delete(f"/api/sessions/{sid}/lecture").status_code == 204
    raise AssertionError("30 codes, all routed to the instructor's process")


def test_a_lecture_reaches_followers_on_the_other_process(shards: Cluster) -> None:
    with httpx.Client(base_url=shards.url, timeout=30) as c:
        sid = c.post("/api/sessions", json={"scenario": "neuron"}).json()["id"]
        instructor = owner(c, sid)
        code = code_elsewhere(c, sid, instructor)
        other = "b" if instructor == "a" else "a"
        # three followers through nginx (on the other process), one on the instructor's own
        followers = [Follower(shards.url, code) for _ in range(3)]
        followers.append(Follower(shards.app(instructor).url, code))
        ender = Follower(shards.url, code)  # stays to the end of the lecture
        for f in [*followers, ender]:
            f.start()
        for f in [*followers, ender]:
            assert f.ready.wait(20) and f.error is None, f.error
        assert [f.served_by for f in followers] == [other, other, other, instructor]

        answers: list[dict[str, Any] | None] = []  # the instructor's Session after each change

        def act(path: str, body: dict[str, Any] | None = None) -> httpx.Response:
            r = c.post(f"/api/sessions/{sid}/{path}", json=body)
            assert r.status_code in (200, 201), r.text
            assert r.headers["x-served-by"] == instructor
            answers.append(r.json() if "params" in r.json() else None)
            return r

        for _ in range(5):
            act("next")
        act("run", {"iterations": 2})
        act("rewind", {"to": 3})
        act("reset")
        act("next")
        act("next")
        asked = act("quiz", {"choices": ["correct", "skip_zero_grad", "step_first"]})
        assert asked.json()["answers"] == 0
        # wait for every follower to see the question (their own process must know it)
        target = len(answers) + 1  # the first event: the whole Session as they connected
        deadline = time.monotonic() + 20
        while any(len(f.events) < target for f in followers) and time.monotonic() < deadline:
            time.sleep(0.02)
        votes = ["skip_zero_grad", "correct", "correct", "step_first", "correct"]
        for i, choice in enumerate(votes):  # answered through nginx: on the other process
            vote = {"choice": choice, "voter": f"voter-{i:03d}"}
            r = c.post(f"/api/lectures/{code}/answers", json=vote)
            assert r.status_code == 200, r.text
            assert r.headers["x-served-by"] == other
        tally = c.get(f"/api/sessions/{sid}/quiz")
        assert tally.headers["x-served-by"] == instructor
        assert tally.json()["choices"] == {"correct": 3, "skip_zero_grad": 1, "step_first": 1}
        assert tally.json()["answers"] == 5
        # followers on both processes counted (each announces its count within a second):
        # 4 on the other process, 1 on the instructor's
        deadline = time.monotonic() + 10
        while c.get(f"/api/sessions/{sid}/quiz").json()["followers"] != 5:
            assert time.monotonic() < deadline, c.get(f"/api/sessions/{sid}/quiz").json()
            time.sleep(0.1)
        revealed = act("quiz/reveal").json()
        assert revealed["answer"] == "correct" and revealed["choices"]["correct"] == 3
        act("next")

        target = len(answers) + 1
        for f in followers:
            f.want = target
        for f in followers:
            f.join(30)
            assert f.error is None, f.error
            assert [seq for seq, _ in f.events] == list(range(target)), f.served_by
        # every follower saw every change exactly as the instructor's answers say
        last: dict[str, Any] = {}
        for i, answer in enumerate(answers, start=1):
            seen = [f.events[i][1] for f in followers]
            assert all(s == seen[0] for s in seen)
            quiz = seen[0]["quiz"]
            if answer is None:  # the question and its reveal: the rest stays as it was
                answer = last
            last = answer
            hidden = HIDDEN if quiz is not None and not quiz["revealed"] else set()
            assert not hidden & set(seen[0])
            drop = SKIP | hidden | {"quiz", "prediction"}
            assert {k: v for k, v in seen[0].items() if k not in drop} == {
                k: v for k, v in answer.items() if k not in drop
            }, i
        quizzes = [f.events[i][1]["quiz"] for i in range(1, target) for f in followers[:1]]
        assert quizzes[-3]["revealed"] is False and quizzes[-3]["choices"][0] == "correct"
        assert quizzes[-2]["revealed"] is True and quizzes[-2]["answer"] == "correct"
        # the follower's own reads and fork work on the other process too
        view = c.get(f"/api/lectures/{code}")
        assert view.headers["x-served-by"] == other
        assert view.json()["params"] == answers[-1]["params"]  # type: ignore[index]
        fork = c.post(f"/api/lectures/{code}/fork")
        assert fork.status_code == 201 and fork.headers["x-served-by"] == other
        assert fork.json()["params"] == answers[-1]["params"]  # type: ignore[index]
        assert c.post(f"/api/sessions/{fork.json()['id']}/next").status_code == 200
        # the end reaches the other process's followers too
        assert c.delete(f"/api/sessions/{sid}/lecture").status_code == 204
        assert c.get(f"/api/lectures/{code}").status_code == 404
        ender.join(30)
        assert ender.ended and ender.error is None and ender.served_by == other
        assert [seq for seq, _ in ender.events] == list(range(target))


def same_moment(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return {k: v for k, v in a.items() if k not in SKIP} == {
        k: v for k, v in b.items() if k not in SKIP
    }


def student(
    base: str, sid: str, seed: int, acked: dict[str, Any], errors: list[tuple[str, int]]
) -> None:
    """One student's clicks through nginx: at most 120 requests."""
    rng = random.Random(seed)
    with httpx.Client(base_url=base, timeout=20) as c:
        for _ in range(120):
            roll = rng.random()
            try:
                if roll < 0.6:
                    r = c.post(f"/api/sessions/{sid}/next")
                elif roll < 0.7:
                    r = c.post(f"/api/sessions/{sid}/run", json={"iterations": 1})
                elif roll < 0.85:
                    to = rng.randint(0, acked[sid]["moments"])
                    r = c.post(f"/api/sessions/{sid}/rewind", json={"to": to})
                else:
                    r = c.post(f"/api/sessions/{sid}/back")
            except httpx.TransportError:
                # killed between its answer's headers and its body: nginx had passed the
                # headers on, so it can only cut the connection (no 502 any more)
                errors.append((sid, 0))
                acked[sid] = recovered(c, sid, acked[sid])
                continue
            if r.status_code == 200:
                acked[sid] = r.json()
            elif r.status_code >= 500:  # in flight at the kill: saved or not, never answered
                errors.append((sid, r.status_code))
                acked[sid] = recovered(c, sid, acked[sid])
            else:
                assert r.status_code in (409, 429), r.text


def recovered(c: httpx.Client, sid: str, last: dict[str, Any]) -> dict[str, Any]:
    """After an answer lost with its process, the session as the survivor has it: the lost
    request may have been saved (a rewind's bound must know its moments), and the moment
    acknowledged before it is still there, exactly."""
    for _ in range(40):  # nginx may try the dead process once more before it moves on
        r = c.get(f"/api/sessions/{sid}")
        if r.status_code == 200:
            break
        time.sleep(0.25)
    assert r.status_code == 200, r.text
    if r.json() == last:  # the lost request was not saved
        return last
    back = c.post(f"/api/sessions/{sid}/rewind", json={"to": last["moment"]})
    assert back.status_code == 200 and same_moment(back.json(), last), sid
    return dict(back.json())


def test_kill_9_of_one_process_under_load(shards: Cluster) -> None:
    acked: dict[str, Any] = {}
    created: dict[str, str] = {}
    with httpx.Client(base_url=shards.url, timeout=30) as c:
        held = sessions_on_both(c, "moons", each=4, created=created)
        for sid in held:
            acked[sid] = c.get(f"/api/sessions/{sid}").json()
        victim = held[next(iter(held))]
        survivor = "b" if victim == "a" else "a"
        # a moons graph built (forward, loss) on the process about to die
        graph = next(s for s, name in held.items() if name == victim)
        del acked[graph]
        c.post(f"/api/sessions/{graph}/run", json={"iterations": 2})
        c.post(f"/api/sessions/{graph}/next")
        built = c.post(f"/api/sessions/{graph}/next").json()
        assert built["graph"]["status"] == "built" and built["last"]["line"] == "loss"
    moved = [sid for sid in acked if held[sid] == victim]
    # the survivor created one of them, then let it go when the victim claimed it
    assert any(created[sid] == survivor for sid in [*moved, graph])

    errors: list[tuple[str, int]] = []
    loops = [
        threading.Thread(target=student, args=(shards.url, sid, i, acked, errors), daemon=True)
        for i, sid in enumerate(acked)
    ]
    for t in loops:
        t.start()
    time.sleep(1.0)
    victim_app = shards.app(victim)
    victim_app.kill()
    for t in loops:
        t.join(60)
        assert not t.is_alive()
    # a 5xx only for a request in flight at the kill: at most one per student of that process
    assert all(sid in moved for sid, _ in errors), errors
    assert len(errors) <= len(moved) and len({sid for sid, _ in errors}) == len(errors), errors
    with httpx.Client(base_url=shards.url, timeout=30) as c:
        assert sum(s["moments"] for s in acked.values()) > 40  # the load did run
        for sid, last in acked.items():
            r = c.get(f"/api/sessions/{sid}")
            assert r.status_code == 200 and r.headers["x-served-by"] == survivor
            now = r.json()
            if now != last:  # the request in flight at the kill was saved, never answered:
                # the acknowledged moment is still there, exactly
                back = c.post(f"/api/sessions/{sid}/rewind", json={"to": last["moment"]}).json()
                assert same_moment(back, last), sid
                acked[sid] = back
        # the graph built before the kill backpropagates to plain PyTorch's numbers
        r = c.post(f"/api/sessions/{graph}/backward")
        assert r.headers["x-served-by"] == survivor
        plain = Plain("moons", 0.3, 0)
        for line in [*CORRECT, *CORRECT, "forward", "loss", "backward"]:
            plain.line(line)
        expected = [p.grad.tolist() for p in plain.model.parameters() if p.grad is not None]
        assert [p["grad"] for p in r.json()["params"]] == expected
        acked[graph] = r.json()

        # the victim comes back on its port: once nginx tries it again (fail_timeout, 5 s),
        # its sessions move back, exactly as the survivor left them, and run on there
        port = int(victim_app.url.rsplit(":", 1)[1])
        back_app = start_app(victim, shards.env, shards.where, port)
        shards.apps[shards.apps.index(victim_app)] = back_app
        wait_up(back_app)
        deadline = time.monotonic() + 20
        while c.get(f"/api/sessions/{graph}").headers["x-served-by"] != victim:
            assert time.monotonic() < deadline
            time.sleep(0.5)
        for sid in [*moved, graph]:
            r = c.get(f"/api/sessions/{sid}")
            assert r.headers["x-served-by"] == victim and r.json() == acked[sid], sid
            r = c.post(f"/api/sessions/{sid}/next")
            assert r.status_code == 200 and r.headers["x-served-by"] == victim
            # the survivor let its copy go: asked directly, it replays the same moment
            direct = httpx.get(f"{shards.app(survivor).url}/api/sessions/{sid}", timeout=30)
            assert direct.json() == r.json(), sid


def test_the_class_predicts_with_votes_on_both_processes(shards: Cluster) -> None:
    """Issue 18 on two processes: followers on both vote, the instructor's counts (read on
    its own process) include both, the reveal reaches the other process's followers, and a
    late vote there is refused by the store even before that process hears of the reveal."""
    setup = {"scenario": "neuron"}
    with httpx.Client(base_url=shards.url, timeout=30) as c:
        sid = c.post("/api/sessions", json=setup).json()["id"]
        instructor = owner(c, sid)
        other = "b" if instructor == "a" else "a"
        code = code_elsewhere(c, sid, instructor)
        here = httpx.Client(base_url=shards.app(instructor).url, timeout=30)
        followers = [Follower(shards.url, code), Follower(here.base_url.__str__(), code)]
        for f in followers:
            f.start()
        for f in followers:
            assert f.ready.wait(20) and f.error is None, f.error
        assert [f.served_by for f in followers] == [other, instructor]
        for _ in range(3):
            assert c.post(f"/api/sessions/{sid}/next").status_code == 200
        asked = c.post(f"/api/sessions/{sid}/lecture/question")
        assert asked.status_code == 201 and asked.headers["x-served-by"] == instructor
        q = asked.json()["question"]
        right = truth(c, setup, 3, q)
        mine, theirs = shaped(q, right), wrong(q, right)
        # two votes on each process (the other process may not have heard of it yet: the
        # store has, and the vote reads it there)
        for i, (client, choice) in enumerate([(c, mine), (c, theirs), (here, mine), (here, mine)]):
            r = client.post(
                f"/api/lectures/{code}/predictions",
                json={"choice": choice, "voter": f"voter-{i:03d}"},
            )
            assert r.status_code == 200, r.text
            assert r.headers["x-served-by"] == (other if client is c else instructor)
        live = c.get(f"/api/sessions/{sid}/lecture/question")
        assert live.headers["x-served-by"] == instructor
        assert live.json()["rounds"][0]["answers"] == 4
        assert c.post(f"/api/sessions/{sid}/lecture/question/again").status_code == 200
        for i in range(4):  # round 2: everyone right, half of them through the other process
            client = c if i % 2 else here
            vote = {"choice": mine, "voter": f"voter-{i:03d}"}
            assert client.post(f"/api/lectures/{code}/predictions", json=vote).status_code == 200
        rounds = c.get(f"/api/sessions/{sid}/lecture/question").json()["rounds"]
        assert [r["answers"] for r in rounds] == [4, 4]
        assert c.post(f"/api/sessions/{sid}/next").status_code == 200  # reveals
        late = c.post(f"/api/lectures/{code}/predictions", json={"choice": mine})
        assert late.status_code == 409 and late.headers["x-served-by"] == other
        want = 3 + 1 + 1 + 1 + 1  # the whole, 3 lines, asked, again, the revealing line
        deadline = time.monotonic() + 20
        while any(len(f.events) < want for f in followers) and time.monotonic() < deadline:
            time.sleep(0.05)
        for f in followers:
            seen = f.events[want - 1][1]["prediction"]
            assert seen["open"] is False and seen["answer"] == right, f.served_by
            assert seen["rounds"] == [{"answers": 4, "correct": 3}, {"answers": 4, "correct": 4}]
            opened = [e["prediction"] for _, e in f.events[4:6]]
            assert all(p["open"] and "answer" not in p for p in opened)
        rows = c.get(f"/api/sessions/{sid}/lecture/report").text.splitlines()
        assert rows[1].endswith(",4,3,4,4") and rows[1].startswith("3,,backward,")  # no stop
        here.close()
        assert c.delete(f"/api/sessions/{sid}/lecture").status_code == 204
