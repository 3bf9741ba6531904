"""What only the ranks together show, from the facts each wrote at its end (``ranks.py``):

- ``ranks_same_samples``: every rank of a DDP job read the same first batches;
- ``ranks_params_differ``: a parameter's numbers differ across the ranks at a backward (DDP's
  lockstep), named at the statement some ranks ran since the ranks last agreed and the others
  did not (a step, a clear, a load, a mode change), else at the step where they first differ;
- ``ranks_modes_differ``: the ranks' DDP forwards ran in different modes, named at the
  ``eval()`` (or ``train()``) some ranks ran alone;
- ``ranks_running_stats_differ``: a rank saved or evaluated BatchNorm statistics that differ
  from the other ranks' at that moment.
"""

from __future__ import annotations

from typing import Any

from loop_stepper.doctor.bugs import message

Facts = dict[int, dict[str, Any]]
APART = {"step", "zero_grad", "load_state_dict", "train", "eval"}  # statements a rank can skip


def across(facts: Facts, world: int, told: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The findings across the ranks' ``facts``; ``told``, the ranks' own diagnoses."""
    if len(facts) < 2:
        return []
    found = (
        _same_samples(facts, world),
        _params_differ(facts, told),
        _modes_differ(facts),
        _stats_differ(facts),
    )
    return [d for d in found if d is not None]


def explained(diagnoses: list[dict[str, Any]], found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ranks' own diagnoses but those a finding across them explains: a clear of gradients
    no step used on ranks that did not run a step the others ran (``step()`` under ``if rank ==
    0``: the other ranks only clear)."""
    stepped = [
        set(d["ranks"])
        for d in found
        if d["bug"] == "ranks_params_differ" and ": step at line" in d["evidence"].get("why", "")
    ]
    modes = [set(d["ranks"]) for d in found if d["bug"] == "ranks_modes_differ"]
    return [
        d
        for d in diagnoses
        if not (d["bug"] == "accumulation_reset" and any(not s & set(d["ranks"]) for s in stepped))
        and not (d["bug"] == "eval_while_training" and any(set(d["ranks"]) <= m for m in modes))
    ]


def apart(diagnoses: list[dict[str, Any]], facts: Facts) -> list[dict[str, Any]]:
    """The ranks' own diagnoses, each shown on some ranks only told the statement those ranks
    ran apart from the others (a ``zero_grad()`` under ``if rank == 0``), when there is one."""
    if len(facts) < 2:
        return diagnoses
    ran = _ran_apart({r: f.get("records", []) for r, f in facts.items()}, APART)
    if ran is None:
        return diagnoses
    what, at, ranks = ran
    said = f"{what} at line {at[1]} ran on rank{'s' * (len(ranks) > 1)} {_listed(ranks)} only"
    return [
        {**d, "evidence": {**d["evidence"], "apart": said}, "message": f"{d['message']} ({said})"}
        if set(d["ranks"]) < set(facts)
        else d
        for d in diagnoses
    ]


def diagnosis(
    bug: str, at: list[Any], ranks: list[int], iteration: int, evidence: dict[str, Any]
) -> dict[str, Any]:
    return {
        "bug": bug,
        "file": at[0],
        "line": at[1],
        "iteration": iteration,
        "message": message(bug, evidence),
        "evidence": evidence,
        "ranks": ranks,
    }


def _same_samples(facts: Facts, world: int) -> dict[str, Any] | None:
    if not all(f.get("ddp") for f in facts.values()):
        return None
    batches = [f.get("batches", []) for f in facts.values()]
    n = min(len(b) for b in batches)
    if n == 0 or any(len({b[i][0] for b in batches}) != 1 for i in range(n)):
        return None
    ranks = sorted(facts)
    evidence = {"ranks": ", ".join(map(str, ranks)), "batches": n, "world": world}
    return diagnosis("ranks_same_samples", batches[0][0][1:], ranks, 1, evidence)


def _params_differ(facts: Facts, told: list[dict[str, Any]]) -> dict[str, Any] | None:
    records = _records(facts)
    apart = _first_apart(records, "params")
    if apart is None:
        return None
    agreed, n, seen = apart
    param = next(
        name for name in seen[min(seen)] if len({str(s.get(name)) for s in seen.values()}) > 1
    )
    values = ", ".join(f"rank {r}: {seen[r].get(param, ['?', '?'])[1]}" for r in sorted(seen))
    evidence: dict[str, Any] = {"param": param, "backward": n + 1, "values": values}
    ran = _ran_apart(_spans(records, agreed, n))
    if ran is not None:
        what, at, ranks = ran
        evidence["why"] = (
            f": {what} at line {at[1]} ran on rank{'s' * (len(ranks) > 1)} {_listed(ranks)} only"
        )
        return diagnosis("ranks_params_differ", at, ranks, n, evidence)
    if any(d["bug"] == "step_after_no_sync" for d in told):
        return None  # said already: each rank stepped its own gradient
    step = _last(records[min(records)][n]["events"], "step")
    evidence["why"] = ": every rank ran the same statements, so their gradients differed"
    return diagnosis("ranks_params_differ", step, sorted(records), n, evidence)


def _modes_differ(facts: Facts) -> dict[str, Any] | None:
    """The ranks' DDP forwards ran in different modes (parts whose numbers the mode changes in
    eval mode on some ranks only), named at the ``eval()``/``train()`` some ranks ran alone."""
    records = _records(facts)
    apart = _first_apart(records, "modes")
    if apart is None:
        return None
    agreed, n, modes = apart
    evals = sorted(r for r, m in modes.items() if m)
    parts = modes[evals[0]]
    evidence = {
        "parts": ", ".join(parts[:3]) + (", …" if len(parts) > 3 else ""),
        "evals": _listed(evals),
        "trains": _listed([r for r in sorted(modes) if r not in evals]),
        "backward": n + 1,
    }
    ran = _ran_apart(_spans(records, agreed, n), {"train", "eval"})
    if ran is not None:
        return diagnosis("ranks_modes_differ", ran[1], ran[2], n, evidence)
    at = _last(records[evals[0]][n]["events"], "backward")
    return diagnosis("ranks_modes_differ", at, evals, n, evidence)


def _stats_differ(facts: Facts) -> dict[str, Any] | None:
    """A rank saved or evaluated running statistics that differ from the other ranks' at that
    moment (``broadcast_buffers=False`` and no SyncBatchNorm: each rank keeps its own)."""
    stats = {r: {x["backward"]: x["stats"] for x in f.get("records", []) if "stats" in x}
             for r, f in facts.items()}  # fmt: skip
    uses = sorted((u[3], r, u) for r, f in facts.items() for u in f.get("uses", []))
    for b, r, (what, file, line, _, mine) in uses:
        others = {}
        for q in stats:
            same = [u[4] for _, p, u in uses if p == q and u[1:4] == [file, line, b]]
            seen = same[0] if same else stats[q].get(b - 1, stats[q].get(b))
            if q != r and seen is not None:
                others[q] = seen
        if not others or all(v[0] == mine[0] for v in others.values()):
            continue
        values = {r: mine[2], **{q: v[2] for q, v in others.items()}}
        evidence = {
            "what": what,
            "layer": mine[1],
            "values": ", ".join(f"rank {q}: {values[q]}" for q in sorted(values)),
        }
        ranks = sorted({p for _, p, u in uses if u[1:3] == [file, line]})
        return diagnosis("ranks_running_stats_differ", [file, line], ranks, b, evidence)
    return None


Records = dict[int, dict[int, dict[str, Any]]]  # rank -> backward -> its record


def _records(facts: Facts) -> Records:
    return {r: {x["backward"]: x for x in f.get("records", [])} for r, f in facts.items()}


def _first_apart(records: Records, key: str) -> tuple[int, int, dict[int, Any]] | None:
    """The first backward at which every rank recorded ``key`` and not all alike: the last one
    before it at which they were alike (-1: none), that backward, each rank's value there."""
    agreed = -1
    for n in sorted(set.intersection(*(set(x) for x in records.values()))):
        seen = {r: records[r][n].get(key) for r in sorted(records)}
        if any(v is None for v in seen.values()):
            continue
        if len({repr(v) for v in seen.values()}) > 1:
            return agreed, n, seen
        agreed = n
    return None


def _spans(records: Records, agreed: int, n: int) -> dict[int, list[dict[str, Any]]]:
    """Each rank's records after the backward the ranks agreed at, up to ``n``."""
    return {
        r: [x for m, x in sorted(kept.items()) if agreed < m <= n] for r, kept in records.items()
    }


def _ran_apart(
    spans: dict[int, list[dict[str, Any]]], only: set[str] | None = None
) -> tuple[str, list[Any], list[int]] | None:
    """The first statement (of the kinds ``only`` names) some ranks ran in their spans of
    records and the others did not."""
    ran: dict[int, list[tuple[str, Any, Any]]] = {
        r: [tuple(e) for x in span for e in x["events"] if only is None or e[0] in only]
        for r, span in spans.items()
    }
    for r in sorted(ran):
        for event in ran[r]:
            counts = {q: ran[q].count(event) for q in ran}
            if len(set(counts.values())) > 1:
                most = max(counts.values())
                ranks = sorted(q for q, c in counts.items() if c == most)
                return str(event[0]), [event[1], event[2]], ranks
    return None


def _last(events: list[list[Any]], what: str) -> list[Any]:
    for e in reversed(events):
        if e[0] == what:
            return list(e[1:])
    return list(events[-1][1:]) if events else [None, None]


def _listed(ranks: list[int]) -> str:
    return ", ".join(map(str, ranks))
