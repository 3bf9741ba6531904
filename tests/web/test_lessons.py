"""Prepared lessons over HTTP (issue 29): write, read, edit with the token, check the claims
against live PyTorch, walk a lesson stop by stop, answer its questions, the score."""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

WORKED: dict[str, Any] = {
    "format": "loop-stepper-lesson/1",
    "title": "The worked example",
    "summary": "Five lines on the neuron.",
    "setup": {"scenario": "neuron", "lr": 0.05},
    "stops": [
        {"at": 2, "title": "The loss", "note": "The loss is **18.5**.", "expect": {"loss": 18.5}},
        {
            "at": 4,
            "title": "After backward",
            "note": "`.grad` is -23.5 and -8.",
            "question": {
                "prompt": "What did backward write?",
                "choices": [
                    {"id": "a", "text": "-23.5 and -8", "correct": True, "feedback": "Yes."},
                    {"id": "b", "text": "zeros", "correct": False, "feedback": "None is not 0."},
                ],
            },
            "expect": {"grad": {"weight": [[-23.5]], "bias": [-8]}},
        },
        {
            "at": 5,
            "title": "After step",
            "note": "(w, b) = (1.175, 0.4).",
            "question": "auto",
            "vote": True,
            "expect": {"params": {"weight": [[1.175]], "bias": [0.4]}},
        },
    ],
}


def test_write_read_edit_and_delete_a_lesson(client: httpx.Client) -> None:
    r = client.post("/api/lessons", json=WORKED)
    assert r.status_code == 201, r.text
    made = r.json()
    assert set(made) == {"id", "edit_token", "url"} and made["url"].endswith(made["id"])
    lesson = f"/api/lessons/{made['id']}"
    assert client.get(lesson).json() == WORKED
    changed = {**WORKED, "title": "Renamed"}
    assert client.put(lesson, json=changed).status_code == 403
    wrong = {"Authorization": "Bearer nope"}
    assert client.put(lesson, json=changed, headers=wrong).status_code == 403
    assert client.get(lesson).json()["title"] == "The worked example"
    mine = {"Authorization": f"Bearer {made['edit_token']}"}
    assert client.put(lesson, json=changed, headers=mine).status_code == 200
    assert client.get(lesson).json()["title"] == "Renamed"
    download = client.get(f"{lesson}/file")
    assert download.headers["content-disposition"] == 'attachment; filename="Renamed.lesson.json"'
    assert download.json() == changed  # round trip: the file is the document
    assert client.delete(lesson).status_code == 403
    assert client.delete(lesson, headers=mine).status_code == 204
    assert client.get(lesson).status_code == 404
    # the gallery lists the built-in lessons only
    gallery = client.get("/api/lessons").json()
    assert len(gallery) >= 14 and made["id"] not in {g["id"] for g in gallery}
    assert {"id", "title", "summary", "stops"} <= set(gallery[0])
    assert client.get("/api/lessons/schema").json()["$id"] == "loop-stepper-lesson/1"


@pytest.mark.parametrize(
    ("change", "pointer", "words"),
    [
        (lambda d: d["stops"][1].update(at=2), "/stops/1/at", "must be greater than 2"),
        (lambda d: d.update(format="x"), "/format", "loop-stepper-lesson/1"),
        (
            lambda d: d["stops"][1]["question"]["choices"][0].update(correct=False),
            "/stops/1/question/choices",
            "a correct choice",
        ),
        (
            lambda d: d["stops"][0].update(expect={"speed": 1}),
            "/stops/0/expect/speed",
            "not a claim",
        ),
        (lambda d: d["setup"].update(scenario="mars"), "/setup/scenario", "Input should be"),
        (
            lambda d: d["stops"][2].update(change={"colour": 1}),
            "/stops/2/change/colour",
            "not a change",
        ),
        (lambda d: d.pop("title"), "/title", "is required"),
    ],
)
def test_a_malformed_lesson_lists_each_error_with_its_pointer(
    client: httpx.Client, change: Any, pointer: str, words: str
) -> None:
    doc = copy.deepcopy(WORKED)
    change(doc)
    for path in ("/api/lessons", "/api/lessons/check"):
        r = client.post(path, json=doc)
        assert r.status_code == 422, r.text
        found = {d["pointer"]: d["msg"] for d in r.json()["detail"]}
        assert pointer in found and words in found[pointer], found


def test_check_reports_a_false_claim_with_the_actual_value(client: httpx.Client) -> None:
    r = client.post("/api/lessons/check", json=WORKED)
    assert r.status_code == 200, r.text
    assert [(s["at"], s["holds"]) for s in r.json()["stops"]] == [(2, True), (4, True), (5, True)]
    wrong = copy.deepcopy(WORKED)
    wrong["stops"][1]["expect"]["grad"]["weight"] = [[-47.0]]  # backward twice's, not once
    stops = client.post("/api/lessons/check", json=wrong).json()["stops"]
    assert stops[1]["holds"] is False
    assert stops[1]["failures"] == [
        {"claim": "grad.weight", "expected": [[-47.0]], "actual": [[-23.5]]}
    ]
    raises = copy.deepcopy(WORKED)
    raises["setup"]["program"] = ["forward", "loss", "backward", "backward", "step"]
    raises["stops"] = [{"at": 3, "title": "twice", "expect": {"raises": "RuntimeError"}}]
    assert client.post("/api/lessons/check", json=raises).json()["stops"][0]["holds"] is True


def test_walking_a_lesson_stop_by_stop(client: httpx.Client) -> None:
    made = client.post("/api/lessons", json=WORKED).json()
    r = client.post(f"/api/lessons/{made['id']}/sessions")
    assert r.status_code == 201, r.text
    session = r.json()
    sid = session["id"]
    assert session["lesson"]["stops"] == [
        {"at": 2, "title": "The loss"},
        {"at": 4, "title": "After backward"},
        {"at": 5, "title": "After step"},
    ]
    assert session["lesson"]["stop"] is None and session["moment"] == 0
    walk = [client.post(f"/api/sessions/{sid}/lesson/next-stop").json() for _ in range(3)]
    assert [s["moment"] for s in walk] == [2, 4, 5]
    assert [s["lesson"]["stop"] for s in walk] == [0, 1, 2]
    assert walk[0]["lesson"]["note"] == "The loss is **18.5**." and walk[0]["loss"] == 18.5
    asked = walk[1]["lesson"]["question"]
    assert asked["choices"] == [{"id": "a", "text": "-23.5 and -8"}, {"id": "b", "text": "zeros"}]
    assert walk[2]["lesson"]["question"] == "auto" and walk[2]["lesson"]["vote"] is True
    past = client.post(f"/api/sessions/{sid}/lesson/next-stop")
    assert past.status_code == 409 and "last stop" in past.json()["detail"]
    # a rewind behind a stop and forward again: the same note
    back = client.post(f"/api/sessions/{sid}/rewind", json={"to": 3}).json()
    assert back["lesson"]["stop"] is None and back["lesson"]["note"] is None
    again = client.post(f"/api/sessions/{sid}/lesson/next-stop").json()
    assert again["moment"] == 4 and again["lesson"]["note"] == walk[1]["lesson"]["note"]
    # a custom answer and an auto one, counted alike
    wrong = client.post(f"/api/sessions/{sid}/lesson/answer", json={"stop": 1, "choices": ["b"]})
    assert wrong.json()["correct"] is False and wrong.json()["feedback"] == {"b": "None is not 0."}
    right = client.post(f"/api/sessions/{sid}/lesson/answer", json={"stop": 1, "choices": ["a"]})
    assert right.json()["correct"] is True
    at_five = client.post(f"/api/sessions/{sid}/lesson/next-stop").json()
    assert at_five["moment"] == 5 and at_five["lesson"]["question"] == "auto"
    question = client.get(f"/api/sessions/{sid}/question").json()
    assert question["line"] == "forward"  # the auto question: about the line after the stop
    choice: Any = (
        [question["choices"][0]["id"]] if question["multiple"] else question["choices"][0]["id"]
    )
    said = client.post(f"/api/sessions/{sid}/predict", json={"choice": choice})
    assert said.status_code == 200, said.text
    score = client.get(f"/api/sessions/{sid}/lesson/score").json()
    assert score["asked"] == 2 and score["answered"] == 2
    assert [s["kind"] for s in score["by_stop"]] == ["custom", "auto"]
    assert score["by_stop"][0]["correct"] is True
    assert score["by_stop"][1]["correct"] is said.json()["correct"]
    assert score["correct"] == 1 + said.json()["correct"]


def test_a_lecture_on_a_lesson_moves_followers_and_a_vote_stop_asks_the_class(
    client: httpx.Client,
) -> None:
    made = client.post("/api/lessons", json=WORKED).json()
    sid = client.post(f"/api/lessons/{made['id']}/sessions").json()["id"]
    lecture = client.post(f"/api/sessions/{sid}/lecture")
    assert lecture.status_code == 201, lecture.text
    code = lecture.json()["code"]
    for at in (2, 4):
        moved = client.post(f"/api/sessions/{sid}/lesson/next-stop").json()
        assert moved["moment"] == at
        followed = client.get(f"/api/lectures/{code}").json()  # what a follower sees
        assert followed["moment"] == at and followed["lesson"]["note"] == moved["lesson"]["note"]
    assert client.get(f"/api/sessions/{sid}/lecture/question").status_code == 409  # no poll yet
    client.post(f"/api/sessions/{sid}/lesson/next-stop")  # at 5: a stop with vote
    tally = client.get(f"/api/sessions/{sid}/lecture/question")
    assert tally.status_code == 200, tally.text
    asked = tally.json()["question"]
    assert asked["line"] == "forward" and tally.json()["open"] is True  # the line after the stop
    report = client.get(f"/api/sessions/{sid}/lecture/report")
    rows = report.text.splitlines()
    assert rows[0].startswith("moment,stop,line,")
    assert rows[1].startswith("5,2,forward,")  # the poll at moment 5: the lesson's stop 2
