"""The ids a run has seen (`IdStore`): exact answers in bounded memory, whatever the count."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from redjury_testing import redjury

from redjury.idstore import SPILL_AT, IdStore
from redjury.inputs import InputSet, check_inputs
from redjury.pipeline import InputGate

IDS = st.text("abcdef", min_size=1, max_size=3)
OPS = st.lists(
    st.tuples(st.sampled_from(["add", "find", "add_new", "isdisjoint"]), st.lists(IDS, max_size=4)),
    max_size=60,
)


class Colliding(IdStore):
    """Every id has one of two hashes: the table must tell ids apart by more than it."""

    hash_of = staticmethod(lambda key: len(key) % 2)


def _small(cls: type[IdStore]) -> IdStore:
    return cls(spill_at=3, bloom_bits=64)


@settings(max_examples=300, deadline=None)
@given(OPS, st.booleans())
def test_a_store_that_spills_answers_as_a_dict_does(
    ops: list[tuple[str, list[str]]], collide: bool
) -> None:
    store, model = _small(Colliding if collide else IdStore), {}
    for n, (op, keys) in enumerate(ops):
        if op == "add":
            for k in keys:
                assert store.add(k, f"v{n}") == (k not in model)
                model.setdefault(k, f"v{n}")
        elif op == "add_new":
            fresh = len(set(keys)) == len(keys) and not any(k in model for k in keys)
            assert store.add_new(keys) == fresh
            if fresh:
                model.update(dict.fromkeys(keys))
        elif op == "isdisjoint":
            assert store.isdisjoint(keys) == (not any(k in model for k in keys))
        for k in keys:
            assert store.find(k) == ((True, model[k]) if k in model else (False, None))
        assert len(store) == len(model)
    store.close()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), IDS), max_size=60), st.booleans())
def test_stores_side_by_side_answer_as_two_dicts_do(
    adds: list[tuple[bool, str]], collide: bool
) -> None:
    """Two stores sharing a filter and a table file (`beside`) never see each other's ids."""
    first = _small(Colliding if collide else IdStore)
    stores, models = (first, first.beside()), ({}, {})
    for n, (which, key) in enumerate(adds):
        store, model = stores[which], models[which]
        assert store.add(key, f"v{n}") == (key not in model)
        model.setdefault(key, f"v{n}")
        for s, m in zip(stores, models, strict=True):
            assert s.find(key) == ((True, m[key]) if key in m else (False, None))
            assert len(s) == len(m)
    stores[1].close()
    assert all(first.find(k) == (True, v) for k, v in models[0].items())
    first.close()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.one_of(IDS, st.none())), max_size=80))
def test_a_store_made_beside_after_another_closed_takes_no_open_stores_table(
    steps: list[tuple[int, str | None]],
) -> None:
    """Three stores on one spill, as a run's passes come and go: a step without an id
    closes one and makes a new one beside another in its place. The new store's table
    and salt are never an open store's, and every answer of every store stays exact."""
    first = _small(IdStore)
    stores, models = [first, first.beside(), first.beside()], [{}, {}, {}]
    for n, (which, key) in enumerate(steps):
        if key is None:
            stores[which].close()
            stores[which], models[which] = stores[which - 1].beside(), {}
        else:
            assert stores[which].add(key, f"v{n}") == (key not in models[which])
            models[which].setdefault(key, f"v{n}")
        assert len({s._table for s in stores}) == 3
        assert all(s._shared is stores[0]._shared for s in stores)
        for s, m in zip(stores, models, strict=True):
            assert len(s) == len(m)
            for k in set().union(*models):
                assert s.find(k) == ((True, m[k]) if k in m else (False, None))
    for s in stores:
        s.close()


def test_a_resumes_gate_holds_one_filter_and_one_table_file_for_both_id_sets() -> None:
    """Issue 45: a resume reads its kept ids into `done`, then every id again into the
    gate's own set. Each store with its own 16 MiB filter and page cache made a resume's
    memory grow at its end (1M attempts: 97 -> 124 MB in the process); beside `done`, the
    gate's set adds no second filter or table file, whatever the number of ids."""
    done = IdStore()
    ids = [f"attempt-{i}" for i in range(2 * SPILL_AT + 7)]
    for i in ids:
        done.add(i, "hash")
    gate = InputGate(False, done=done)
    for n, i in enumerate(ids):
        assert gate.admit("in.jsonl", n + 1, i, None, lambda err: None) is False
    assert gate.matched == len(ids) and gate.bad == 0
    seen = gate._seen
    assert len(seen) == len(ids) and seen._spilled > 0
    assert seen._bloom is done._bloom and seen._db is done._db
    tables = done._db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'")
    assert tables.fetchone() == (2,)
    assert not gate.admit("in.jsonl", 1, ids[0], None, lambda err: None) and gate.bad == 1


def test_memory_holds_only_the_recent_ids_the_rest_are_in_the_table() -> None:
    store = IdStore()
    for i in range(3 * SPILL_AT + 5):
        assert store.add(f"attempt-{i}")
    assert len(store._recent) < SPILL_AT and len(store) == 3 * SPILL_AT + 5
    assert store._db is not None
    (in_table,) = store._db.execute("SELECT count(*) FROM ids").fetchone()
    assert in_table + len(store._recent) == len(store)
    assert not store.add("attempt-0") and "attempt-17" in store and "attempt-x" not in store
    store.close()
    assert len(store) == 0 and "attempt-17" not in store


def _attempts(path: Path, n: int, duplicate_at: int, of: int) -> Path:
    with path.open("w") as fh:
        for i in range(n):
            number = of if i == duplicate_at else i
            fh.write(json.dumps({"id": f"a{number}", "outputs": ["no"]}) + "\n")
    return path


def test_a_duplicate_of_an_id_long_moved_to_disk_names_its_file_line_and_id(
    tmp_path: Path,
) -> None:
    n = SPILL_AT + 4000
    src = _attempts(tmp_path / "in.jsonl", n, duplicate_at=n - 2, of=3)
    good, errors, total = check_inputs(InputSet([src]))
    assert (good, total) == (n - 1, 1)
    assert str(errors[0]) == f"{src}:{n - 1}: id: duplicate id 'a3'"
    proc = redjury("run", src, "--out", tmp_path / "out")
    assert proc.returncode == 2
    assert f"{src}:{n - 1}: id: duplicate id 'a3'" in proc.stderr
