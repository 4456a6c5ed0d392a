"""The comparison's fast reader and vectorised sums against a plain reference: every attempt of
two random runs counted one by one in Python dicts, paired by id (else prompt and goal), and
every cell's sums added up in a loop."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import redjury.comparison as comparison
from redjury.comparison import CompareError, Vocabulary, gather_cells, read_run

INIT = {"entry_type": "init", "evaluator": {"type": "threshold", "threshold": 0.5}}
SCORES = st.sampled_from([None, 0.0, 0.3, 0.5, 0.7, 1.0])
TEXTS = st.one_of(st.sampled_from(["p1", "p2", "p3", ""]), st.just({"turns": ["hi"]}))


@st.composite
def attempts(draw: Any, shared_ids: list[str]) -> dict[str, Any]:
    row: dict[str, Any] = {"entry_type": "attempt"}
    # Ids from a pool both runs draw from (pairs, repeats), or none.
    row["id"] = draw(st.one_of(st.none(), st.sampled_from(shared_ids), st.integers(0, 3)))
    row["probe"] = draw(st.sampled_from(["A", "B", None, 7]))
    intent = draw(st.sampled_from(["fraud", "hate", "", None, "skip"]))
    if intent != "skip":
        row["intent"] = intent
    row["prompt"] = draw(TEXTS)
    row["goal"] = draw(st.sampled_from(["g1", "g2", None]))
    detectors = draw(st.lists(st.sampled_from(["d1", "d2", "d3"]), max_size=3, unique=True))
    if detectors or draw(st.booleans()):
        row["detector_results"] = {
            d: draw(st.lists(SCORES, max_size=3)) for d in detectors
        }  # fmt: skip
    return row


RUNS = st.lists(st.sampled_from([f"a{i}" for i in range(12)]), min_size=1, max_size=12).flatmap(
    lambda ids: st.tuples(
        st.lists(attempts(ids), min_size=1, max_size=40),
        st.lists(attempts(ids), min_size=1, max_size=40),
    )
)


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in [INIT, *rows]))
    return path


def _name(value: Any, default: str) -> str:
    return default if value is None else value if isinstance(value, str) else str(value)


def _hashable(value: Any) -> Any:
    return json.dumps(value, sort_keys=True) if isinstance(value, dict | list) else value


def _counts(row: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """Per detector the attempt's (failing, scored) outputs under threshold 0.5."""
    results = row.get("detector_results") or {}
    return {
        d: (sum(s is not None and s >= 0.5 for s in scores), sum(s is not None for s in scores))
        for d, scores in results.items()
    }


def _pairs(base: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[tuple[int, int]]:
    def id_key(r: dict[str, Any]) -> Any:
        return None if r["id"] is None else (_name(r["probe"], "default"), str(r["id"]))

    def text_key(r: dict[str, Any]) -> Any:
        return (_name(r["probe"], "default"), _hashable(r["prompt"]), _hashable(r["goal"]))

    for key in (id_key, text_key):
        once = []
        for rows in (base, new):
            keys = [key(r) for r in rows]
            seen = Counter(k for k in keys if k is not None)
            once.append({k: i for i, k in enumerate(keys) if k is not None and seen[k] == 1})
        pairs = [(i, once[1][k]) for k, i in once[0].items() if k in once[1]]
        if pairs:
            return pairs
    return []


def _group(row: dict[str, Any], scope: str) -> str | None:
    if scope == "probe":
        return _name(row["probe"], "default")
    if scope == "intent":
        return _name(row.get("intent"), "") or None
    return ""


def reference_cells(
    base: list[dict[str, Any]], new: list[dict[str, Any]]
) -> dict[tuple[str, str, str], dict[str, float]]:
    """Every cell's sums, attempt by attempt."""
    pairs = _pairs(base, new)
    cells = {}
    detectors = {d for r in base + new for d in (r.get("detector_results") or {})}
    for detector in detectors:
        for scope in ("probe", "intent", "overall"):
            groups = {_group(r, scope) for r in base + new} - {None}
            for group in groups:
                cell: dict[str, float] = {}
                residual = []
                looked = 0
                for side, rows in (("base", base), ("new", new)):
                    mine = [
                        _counts(r).get(detector, (0, 0)) if _group(r, scope) == group else None
                        for r in rows
                    ]
                    looked += sum(
                        _group(r, scope) == group and detector in (r.get("detector_results") or {})
                        for r in rows
                    )
                    fails = sum(c[0] for c in mine if c)
                    outputs = sum(c[1] for c in mine if c)
                    rate = fails / outputs if outputs else 0.0
                    e = [None if c is None else c[0] - rate * c[1] for c in mine]
                    residual.append((e, mine))
                    cell[f"{side}_fails"] = fails
                    cell[f"{side}_outputs"] = outputs
                    cell[f"{side}_attempts"] = sum(1 for c in mine if c and c[1] > 0)
                    cell[f"{side}_squares"] = sum(x * x for x in e if x is not None)
                (eb, cb), (en, cn) = residual
                both = [
                    (i, j) for i, j in pairs
                    if cb[i] and cn[j] and cb[i][1] > 0 and cn[j][1] > 0
                ]  # fmt: skip
                cell["cross"] = sum(eb[i] * en[j] for i, j in both)  # type: ignore[operator]
                cell["pairs"] = len(both)
                if looked:
                    cells[(scope, group, detector)] = cell
    return cells


def fast_cells(base: Path, new: Path) -> dict[tuple[str, str, str], dict[str, float]]:
    vocabulary = Vocabulary()
    found = gather_cells(read_run(base, vocabulary), read_run(new, vocabulary))
    return {
        label: {key: values[i] for key, values in found.columns.items()}
        for i, label in enumerate(found.labels)
    }


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(runs=RUNS, chunk=st.sampled_from([64, 300, 1 << 20]))
def test_the_fast_path_counts_as_the_reference_does(
    runs: tuple[list[dict[str, Any]], list[dict[str, Any]]],
    chunk: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base_rows, new_rows = runs
    monkeypatch.setattr(comparison, "CHUNK_BYTES", chunk)  # rows split across reads
    base = _write(tmp_path / "base.jsonl", base_rows)
    new = _write(tmp_path / "new.jsonl", new_rows)
    expected = reference_cells(base_rows, new_rows)
    found = fast_cells(base, new)
    assert found.keys() == expected.keys()
    for label, cell in expected.items():
        for key, value in cell.items():
            assert math.isclose(found[label][key], value, rel_tol=1e-9, abs_tol=1e-9), (
                label,
                key,
            )


def test_the_rows_of_a_file_and_of_its_rows_in_memory_agree(tmp_path: Path) -> None:
    import redjury

    rows = [
        {"entry_type": "attempt", "id": f"a{i}", "probe": "AB"[i % 2], "intent": "fraud",
         "detector_results": {"d": [float(i % 3 == 0), None]}}
        for i in range(300)
    ]  # fmt: skip
    flipped = [
        {**r, "detector_results": {"d": [float(i % 4 == 0), 1.0]}} for i, r in enumerate(rows)
    ]
    base, new = _write(tmp_path / "b.jsonl", rows), _write(tmp_path / "n.jsonl", flipped)
    from_files = redjury.compare(base, new).rows
    assert redjury.compare([INIT, *rows], [INIT, *flipped]).rows == from_files
    assert {r["pairing"] for r in from_files} == {"id"}


def test_a_bad_row_after_blank_lines_is_named_by_its_own_line(tmp_path: Path) -> None:
    good = {"entry_type": "attempt", "id": "1", "probe": "A", "detector_results": {"d": [1.0]}}
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps(INIT) + "\n\n" + json.dumps(good) + "\n  \n"
        + '{"entry_type": "attempt", "probe": "A", "detector_results": {"d": ["x"]}}\n'
    )  # fmt: skip
    with pytest.raises(
        CompareError, match=r"bad.jsonl:5: field detector_results\[...\]\[0\]: Expected"
    ):
        read_run(bad, Vocabulary())
