from __future__ import annotations

import pytest

from app.engine import Lab
from app.sessions import SessionStore, StoreFull, UnknownSession


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def neuron() -> Lab:
    return Lab("neuron", 0.05, 0)


def test_ids_are_long_and_distinct() -> None:
    store = SessionStore(100, 60)
    ids = {store.create(neuron).id for _ in range(50)}
    assert len(ids) == 50
    assert all(len(i) >= 22 for i in ids)  # 16 random bytes, url-safe base64


def test_cap_then_idle_eviction() -> None:
    clock = Clock()
    store = SessionStore(2, idle_timeout=60, clock=clock)
    a = store.create(neuron)
    clock.now = 30
    b = store.create(neuron)
    with pytest.raises(StoreFull):
        store.create(neuron)
    clock.now = 80  # a idle for 80 s, b for 50 s
    c = store.create(neuron)
    with pytest.raises(UnknownSession):
        store.get(a.id)
    assert store.get(b.id) is b and store.get(c.id) is c and len(store) == 2


def test_use_refreshes_and_expired_is_gone() -> None:
    clock = Clock()
    store = SessionStore(5, idle_timeout=60, clock=clock)
    a = store.create(neuron)
    clock.now = 50
    store.get(a.id)
    clock.now = 100
    assert store.get(a.id) is a
    clock.now = 161
    with pytest.raises(UnknownSession):
        store.get(a.id)
    store.delete(store.create(neuron).id)
    with pytest.raises(UnknownSession):
        store.delete("nope")
