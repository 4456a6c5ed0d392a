"""Reading NEW in a forked child while BASE is read here gives the same counts, keys, codes and
rows as reading both here, one after the other (the size threshold forced either way)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import redjury
import redjury.comparison_parallel as parallel
from redjury.comparison import CompareError, RunCounts, Vocabulary

INIT = {"entry_type": "init", "evaluator": {"type": "threshold", "threshold": 0.5}}


def _attempt(rng: random.Random, ids: list[Any], probes: list[Any]) -> dict[str, Any]:
    row: dict[str, Any] = {"entry_type": "attempt", "id": rng.choice([None, *ids])}
    row["probe"] = rng.choice(probes)
    intent = rng.choice(["fraud", "hate", "", None, "skip", "self-harm"])
    if intent != "skip":
        row["intent"] = intent
    row["prompt"] = rng.choice(["p1", "p2", "", {"turns": ["hi"]}])
    row["goal"] = rng.choice(["g1", None])
    detectors = rng.sample(["d1", "d2", "d3"], rng.randint(0, 3))
    row["detector_results"] = {
        d: [rng.choice([None, 0.0, 0.4, 0.5, 1.0]) for _ in range(rng.randint(0, 3))]
        for d in detectors
    }
    return row


def _runs(tmp_path: Path, seed: int) -> tuple[Path, Path]:
    """Two runs sharing some ids; NEW has probes and intents BASE never names, and its names
    first appear in another order."""
    rng = random.Random(seed)
    ids = [f"a{i}" for i in range(60)] + [3, 4]
    base = [_attempt(rng, ids, ["A", "B", None, 7]) for _ in range(300)]
    new = [_attempt(rng, ids, ["C", 7, "B", None, "A"]) for _ in range(300)]
    paths = tmp_path / "base.jsonl", tmp_path / "new.jsonl"
    for path, rows in zip(paths, (base, new), strict=True):
        path.write_text("".join(json.dumps(r) + "\n" for r in [INIT, *rows]))
    return paths


def _read(base: Path, new: Path) -> tuple[RunCounts, RunCounts, Vocabulary]:
    vocabulary = Vocabulary()
    base_run, new_run = parallel.read_runs(base, new, vocabulary, ("BASE", "NEW"))
    return base_run, new_run, vocabulary


def _same_counts(a: RunCounts, b: RunCounts) -> None:
    for name in ("probe_of", "intent_of", "id_keys", "text_keys"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.detectors.keys() == b.detectors.keys()
    for name, (fails, scored) in a.detectors.items():
        assert np.array_equal(fails, b.detectors[name][0])
        assert np.array_equal(scored, b.detectors[name][1])
        assert np.array_equal(a.present[name], b.present[name])
    assert (a.header, a.corrections, a.label) == (b.header, b.corrections, b.label)


@pytest.mark.parametrize("seed", range(4))
def test_the_two_process_path_reads_as_the_one_process_path(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, new = _runs(tmp_path, seed)
    monkeypatch.setattr(parallel, "PARALLEL_BYTES", 1 << 40)
    assert not parallel._worth_a_child(base, new)
    one = _read(base, new)
    rows_one = redjury.compare(base, new).rows
    monkeypatch.setattr(parallel, "PARALLEL_BYTES", 0)
    assert parallel._worth_a_child(base, new)
    two = _read(base, new)
    rows_two = redjury.compare(base, new).rows
    assert two[2] == one[2]  # the same names, numbered alike
    assert set(two[2].probes) == {"A", "B", "default", "7", "C"}
    assert list(two[2].probes)[-1] == "C"  # named by NEW only: after BASE's names
    _same_counts(one[0], two[0])
    _same_counts(one[1], two[1])
    assert two[1].vocabulary is two[2]
    assert rows_two == rows_one
    assert "id" in {r["pairing"] for r in rows_two}
    assert any(r["pairs"] for r in rows_two)


def test_the_child_forks_with_the_parents_string_hashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs paired by prompt and goal only (no ids): the child's text keys must match."""
    rows = [
        {"entry_type": "attempt", "probe": "P", "prompt": f"p{i}", "goal": "g",
         "detector_results": {"d": [float(i % 2)]}}
        for i in range(50)
    ]  # fmt: skip
    base, new = tmp_path / "b.jsonl", tmp_path / "n.jsonl"
    for path in (base, new):
        path.write_text("".join(json.dumps(r) + "\n" for r in [INIT, *rows]))
    monkeypatch.setattr(parallel, "PARALLEL_BYTES", 0)
    found = redjury.compare(base, new).rows
    assert {r["pairing"] for r in found} == {"prompt_goal"}
    assert {r["pairs"] for r in found} == {50}


@pytest.mark.parametrize("broken", ["base", "new", "both"])
def test_a_bad_report_is_named_by_either_path_alike(
    broken: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, new = _runs(tmp_path, 9)
    bad_row = '{"entry_type": "attempt", "probe": "A", "detector_results": {"d": ["x"]}}\n'
    for path in {"base": [base], "new": [new], "both": [base, new]}[broken]:
        path.write_text(path.read_text() + bad_row)
    messages = []
    for threshold in (1 << 40, 0):
        monkeypatch.setattr(parallel, "PARALLEL_BYTES", threshold)
        with pytest.raises(CompareError) as caught:
            redjury.compare(base, new)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert ("base.jsonl:302" if broken != "new" else "new.jsonl:302") in messages[0]


def test_rows_in_memory_are_read_in_this_process(tmp_path: Path) -> None:
    base, _ = _runs(tmp_path, 1)
    assert not parallel._worth_a_child([INIT], base)
    assert not parallel._worth_a_child(base, tmp_path / "missing.jsonl")


def test_a_run_with_no_attempts_comes_back_from_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, _ = _runs(tmp_path, 2)
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps(INIT) + "\n")
    found = []
    for threshold in (1 << 40, 0):
        monkeypatch.setattr(parallel, "PARALLEL_BYTES", threshold)
        found.append(_read(base, empty))
    _same_counts(found[0][1], found[1][1])
    assert found[1][1].attempts == 0
