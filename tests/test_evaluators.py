"""The verdict policies and the eval / probe_summary / hitlog records they produce (seed 002)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from redjury.evaluators import (
    Evaluator,
    RunTally,
    ThresholdEvaluator,
    ZeroToleranceEvaluator,
    hitlog_row,
    load_evaluator,
)


def attempt_row(
    probe: str,
    results: dict[str, list[float | None]],
    outputs: list[str | None] | None = None,
    intent: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    n = len(next(iter(results.values()))) if results else 0
    row = {
        "entry_type": "attempt",
        "id": extra.pop("id", "a"),
        "probe": probe,
        "outputs": outputs or [f"out{i}" for i in range(n)],
        "detector_results": results,
        **extra,
    }
    if intent is not None:
        row["intent"] = intent
    return row


def evals(tally: RunTally) -> list[dict[str, Any]]:
    return [r for r in tally.eval_rows() if r["entry_type"] == "eval"]


def test_threshold_score_at_threshold_fails() -> None:
    ev = ThresholdEvaluator(0.5)
    assert ev.test(0.49) is True
    assert ev.test(0.5) is False
    assert ev.test(0.51) is False


def test_zero_tolerance_passes_only_exact_zero() -> None:
    ev = ZeroToleranceEvaluator()
    assert [ev.test(v) for v in (0.0, 0.001, 0.5, 1.0)] == [True, False, False, False]


def test_base_evaluator_fails_everything() -> None:
    assert Evaluator().test(0.0) is False


def test_custom_evaluator_by_import_path() -> None:
    ev = load_evaluator("tests_support_evaluators:Lenient")
    assert ev.test(0.7) is True and ev.test(0.9) is False


def test_unknown_evaluator_path_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="evaluator.type"):
        load_evaluator("no_such_module:Thing")


def test_nones_are_counted_apart() -> None:
    tally = RunTally(ThresholdEvaluator())
    tally.add(attempt_row("p", {"d": [0.0, 1.0, None, 0.2]}))
    (row,) = evals(tally)
    assert (row["passed"], row["fails"], row["nones"]) == (2, 1, 1)
    assert row["total_evaluated"] == 3 and row["total_processed"] == 4


def test_intents_omitted_when_no_attempt_has_one() -> None:
    tally = RunTally(ThresholdEvaluator())
    tally.add(attempt_row("p", {"d": [1.0]}))
    assert "intents" not in evals(tally)[0]


def test_intents_breakdown_buckets_nones() -> None:
    tally = RunTally(ThresholdEvaluator())
    tally.add(attempt_row("p", {"d": [1.0, None]}, intent="fraud", id="a"))
    tally.add(attempt_row("p", {"d": [0.0]}, intent="hate", id="b"))
    tally.add(attempt_row("p", {"d": [0.0, 0.0]}, intent="fraud", id="c"))
    (row,) = evals(tally)
    assert row["intents"] == {
        "fraud": {"passed": 2, "total_evaluated": 3, "nones": 1},
        "hate": {"passed": 1, "total_evaluated": 1, "nones": 0},
    }


def test_intents_scoped_per_detector() -> None:
    tally = RunTally(ThresholdEvaluator())
    tally.add(attempt_row("p", {"d1": [1.0]}, intent="fraud", id="a"))
    tally.add(attempt_row("p", {"d2": [0.0]}, intent="hate", id="b"))
    rows = {r["detector"]: r for r in evals(tally)}
    assert set(rows["d1"]["intents"]) == {"fraud"}
    assert set(rows["d2"]["intents"]) == {"hate"}
    assert rows["d2"]["total_evaluated"] == 1


def test_eval_rows_sorted_by_probe_then_detector_with_summary_after_each_probe() -> None:
    tally = RunTally(ThresholdEvaluator())
    tally.add(attempt_row("zeta", {"b": [0.0], "a": [1.0]}, id="1"))
    tally.add(attempt_row("alpha", {"c": [0.0]}, id="2"))
    kinds = [(r["entry_type"], r["probe"], r.get("detector")) for r in tally.eval_rows()]
    assert kinds == [
        ("eval", "alpha", "c"),
        ("probe_summary", "alpha", None),
        ("eval", "zeta", "a"),
        ("eval", "zeta", "b"),
        ("probe_summary", "zeta", None),
    ]


def test_probe_summary_counts_outputs_and_detections() -> None:
    tally = RunTally(ThresholdEvaluator())
    tally.add(
        attempt_row("p", {"d1": [1.0, None, 0.0], "d2": [0.0, None, 0.0]}, outputs=["x", None, "y"])
    )
    summary = [r for r in tally.eval_rows() if r["entry_type"] == "probe_summary"][0]
    assert summary == {
        "entry_type": "probe_summary",
        "probe": "p",
        "inference_counts": {"total_evaluated": 3, "nones": 1},
        "detection_counts": {"detectors": ["d1", "d2"], "passed": 3, "fails": 1, "nones": 2},
    }


def test_hits_callback_receives_each_failing_output_once_per_detector() -> None:
    tally = RunTally(ThresholdEvaluator(0.5))
    calls: list[tuple[str, list[tuple[int, float]]]] = []
    tally.add(
        attempt_row("p", {"d": [0.5, 0.1, 0.9], "e": [0.0, None, 0.2], "f": [None, 1]}),
        lambda row, det, failed: calls.append((det, failed)),
    )
    assert calls == [("d", [(0, 0.5), (2, 0.9)]), ("f", [(1, 1.0)])]
    assert type(calls[1][1][0][1]) is float


def test_hitlog_lines_are_each_hits_line_in_order() -> None:
    from redjury.report.hitlog import HitlogLines

    build = HitlogLines("g", None)
    row = attempt_row("p", {"d": [0.5, 0.1, 0.9]}, outputs=["a", "b", "c"], seq=2**70)
    normal = attempt_row("p", {"d": [0.5, 0.1, 0.9]}, outputs=["a", "b", "c"])
    for one in (normal, row):  # a seq beyond 64 bits takes the dict's serialisation
        failed = [(0, 0.5), (2, 0.9)]
        assert build.lines(one, "d", failed) == b"".join(
            build.line(one, "d", i, s) for i, s in failed
        )
        assert build.lines(one, "d", failed).count(b"\n") == 2


def test_hitlog_entry_has_garaks_fields() -> None:
    row = attempt_row(
        "p",
        {"d": [1.0]},
        outputs=["bad"],
        goal="g",
        prompt="pr",
        run_id="r",
        seq=3,
        notes={"triggers": ["T1"]},
    )
    entry = hitlog_row(row, "d", 0, 1.0, "openai gpt", None)
    assert set(entry) == {
        "goal",
        "prompt",
        "output",
        "triggers",
        "score",
        "run_id",
        "attempt_id",
        "attempt_seq",
        "attempt_idx",
        "generator",
        "probe",
        "detector",
        "generations_per_prompt",
    }
    assert entry["output"] == {"text": "bad"}
    assert entry["triggers"] == ["T1"]
    assert entry["attempt_seq"] == 3 and entry["generations_per_prompt"] == 1
    assert entry["generator"] == "openai gpt"


def test_hitlog_line_is_byte_for_byte_the_written_entry(tmp_path) -> None:
    import orjson

    from redjury.report.hitlog import HitlogLines as HitlogBuilder

    build = HitlogBuilder("openai gpt-4o-mini", None)
    rows = [
        {
            "id": "u1",
            "probe": "dan.Dan",
            "goal": 'say "hi" ☃',
            "prompt": "p\n\u2028",
            "outputs": ["a", None, "b\x1b"],
            "notes": {"triggers": ["t1"]},
            "run_id": "r",
            "seq": 3,
            "generator": "g2",
        },
        {"id": "u2", "outputs": ["only"], "notes": "not a dict"},
        {  # a garak report's attempt: its prompt and Message fields as written
            "id": "u3",
            "prompt": "p",
            "outputs": ["a", None, "c"],
            "source_record": {
                "prompt": {"turns": [{"role": "user", "content": {"text": "p", "lang": "en"}}]},
                "outputs": [{"lang": "en", "notes": {}}, {}, None],
            },
        },
    ]
    for row in rows:
        for detector in ("d.A", "d.B"):
            for idx, score in ((0, 1.0), (1, 0.5), (2, 0.75), (7, 1e-05)):
                entry = build(row, detector, idx, score)
                want = orjson.dumps(entry, option=orjson.OPT_APPEND_NEWLINE)
                assert build.line(row, detector, idx, score) == want


def test_jsonl_writer_batches_lines_but_a_flush_makes_them_all_durable(tmp_path) -> None:
    from redjury.report.jsonl import JsonlWriter

    path = tmp_path / "h.jsonl"
    writer = JsonlWriter(path, "w", flush_every=0)
    for i in range(600):
        writer.write_line(b'{"i":%d}\n' % i)
    writer.write({"i": 600})
    writer.flush()
    lines = path.read_bytes().splitlines()
    assert len(lines) == 601 and lines[-1] == b'{"i":600}' and lines[300] == b'{"i":300}'
    writer.write_line(b'{"i":601}\n')
    writer.close()
    assert path.read_bytes().endswith(b'{"i":601}\n')


def test_jsonl_writer_syncs_early_and_close_still_writes_and_syncs_the_rest(
    tmp_path, monkeypatch
) -> None:
    """`sync_soon` fsyncs what is written so far in a thread; rows written after it are
    kept, and `close` waits for that thread before its own fsync of the whole file."""
    import os
    import threading
    import time

    from redjury.report import jsonl
    from redjury.report.jsonl import JsonlWriter

    synced: list[tuple[str, int]] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append((threading.current_thread().name, os.fstat(fd).st_size))
        real_fsync(fd)

    monkeypatch.setattr(jsonl.os, "fsync", fsync)
    path = tmp_path / "r.jsonl"
    writer = JsonlWriter(path, "w", flush_every=0)
    for i in range(300):
        writer.write_line(b'{"i":%d}\n' % i)
    size_before = len(b"".join(b'{"i":%d}\n' % i for i in range(300)))
    writer.sync_soon()
    writer.sync_soon()  # a second call while the first is out starts nothing
    # The thread's fsync is seen before the next row is written (on a busy machine the
    # thread can start after `close` has flushed that row, which proves nothing).
    deadline = time.monotonic() + 10
    while not synced and time.monotonic() < deadline:
        time.sleep(0.001)
    writer.write({"i": 300})
    writer.close()
    assert path.read_bytes().splitlines()[-1] == b'{"i":300}'
    assert synced[0] == ("redjury-fsync", size_before)
    assert synced[1] == (threading.current_thread().name, path.stat().st_size)
    assert len(synced) == 2


def test_jsonl_writer_syncs_behind_every_so_many_bytes_and_close_syncs_the_whole_file(
    tmp_path, monkeypatch
) -> None:
    """With `sync_every`, an fsync of the file so far starts in a thread each time that
    many more bytes were written, never a second while one is out; `close` waits for it
    and then syncs the whole file itself."""
    import os
    import threading
    import time

    from redjury.report import jsonl
    from redjury.report.jsonl import JsonlWriter

    synced: list[tuple[str, int]] = []
    release = threading.Event()
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append((threading.current_thread().name, os.fstat(fd).st_size))
        if threading.current_thread().name == "redjury-fsync-behind":
            release.wait(10)
        real_fsync(fd)

    def behind() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name == "redjury-fsync-behind"]

    def wait_for_syncs(n: int) -> None:
        deadline = time.monotonic() + 10
        while len(synced) < n and time.monotonic() < deadline:
            time.sleep(0.001)

    monkeypatch.setattr(jsonl.os, "fsync", fsync)
    path = tmp_path / "r.jsonl"
    writer = JsonlWriter(path, "w", flush_every=0, sync_every=1000)
    block = memoryview(b'{"pad":"' + b"x" * 589 + b'"}\n')  # 600 bytes
    writer.write_block(block)
    assert not behind()  # 600 bytes: under the threshold
    writer.write_block(block)
    wait_for_syncs(1)
    assert synced == [("redjury-fsync-behind", 1200)]
    [first] = behind()
    writer.write_block(block)
    writer.write_block(block)  # 1,200 more bytes while the first sync is out: none starts
    assert len(behind()) == 1 and len(synced) == 1
    release.set()
    first.join(10)
    writer.write_block(block)  # the first has ended: the next write starts another
    wait_for_syncs(2)  # its size is read before the next line can reach the file
    writer.write_line(b'{"i":1}\n')  # batched: reaches the file at close
    writer.close()
    assert not behind()
    assert synced == [
        ("redjury-fsync-behind", 1200),
        ("redjury-fsync-behind", 3000),
        (threading.current_thread().name, 3008),
    ]
    assert path.read_bytes().endswith(b'{"i":1}\n')


def test_hitlog_line_falls_back_to_the_dict_for_values_orjson_rejects() -> None:
    from redjury.report.hitlog import HitlogLines as HitlogBuilder
    from redjury.report.jsonl import dumps_line

    build = HitlogBuilder(None, 1)
    row = {"id": "big", "outputs": ["x"], "seq": 2**70}
    assert build.line(row, "d", 0, 1.0) == dumps_line(build(row, "d", 0, 1.0))


@pytest.mark.parametrize(
    "fields", [["a string"], [7], "not a list", {"0": {"lang": "en"}}, [["nested"]]]
)
def test_hitlog_reads_a_hand_made_source_record_outputs_as_garak_strings(fields: Any) -> None:
    from redjury.report.hitlog import HitlogLines as HitlogBuilder

    build = HitlogBuilder("g", 1)
    row = {"id": "a", "outputs": ["reply"], "source_record": {"outputs": fields}}
    line = json.loads(build.line(row, "d.X", 0, 1.0))
    assert line["output"] == "reply"
    assert line["attempt_idx"] == 0 and line["detector"] == "d.X"


# A garak Message without its text, as `source_record` keeps it (None where garak wrote a
# string); a "text" key too, as a hand-made row could have.
_MESSAGE = st.one_of(
    st.none(),
    st.dictionaries(
        st.sampled_from(["lang", "data_path", "notes", "text", "é"]),
        st.none() | st.text(max_size=3) | st.dictionaries(st.text(max_size=2), st.none()),
        max_size=4,
    ),
)


@st.composite
def _hit_rows(draw: st.DrawFn) -> dict[str, Any]:
    """Attempt rows as the run builds them: redjury's own, and a garak report's with its
    prompt and Message fields in `source_record` (or rows read back from a report)."""
    n = draw(st.integers(min_value=1, max_value=3))
    row: dict[str, Any] = {
        "id": draw(st.text(min_size=1, max_size=3)),
        "probe": draw(st.none() | st.text(max_size=3)),
        "goal": draw(st.none() | st.text(max_size=4)),
        "prompt": draw(st.none() | st.text(max_size=4) | st.integers()),
        "outputs": draw(st.lists(st.none() | st.text(max_size=4), min_size=n, max_size=n)),
        "notes": draw(st.just({}) | st.fixed_dictionaries({"triggers": st.lists(st.text())})),
        "run_id": draw(st.none() | st.text(max_size=3)),
        "seq": draw(st.none() | st.integers(min_value=-(2**63), max_value=2**63 - 1)),
    }
    if draw(st.booleans()):
        source: dict[str, Any] = {}
        if draw(st.booleans()):
            source["prompt"] = draw(
                st.none() | st.text(max_size=3) | st.fixed_dictionaries({"turns": st.just([])})
            )
        if draw(st.booleans()):
            source["outputs"] = draw(st.none() | st.lists(_MESSAGE, max_size=4))
        if draw(st.booleans()):
            source["uuid"] = draw(st.text(max_size=3))
        row["source_record"] = source
    return row


@settings(max_examples=400, deadline=None)
@given(
    _hit_rows(),
    st.sampled_from(["d.A", "d.B"]),
    st.integers(0, 4) | st.integers(60, 70),  # indices past the table made once too
    st.floats(0, 1),
)
def test_hitlog_line_is_the_entry_orjson_writes_for_any_row(
    row: dict[str, Any], detector: str, idx: int, score: float
) -> None:
    from redjury.report.hitlog import HitlogLines as HitlogBuilder
    from redjury.report.jsonl import dumps_line

    build = HitlogBuilder("openai gpt", None)
    want = dumps_line(build(row, detector, idx, score))
    assert build.line(row, detector, idx, score) == want
    # Again for the same row (its shared fields kept), and for a second hit of it.
    assert build.line(row, detector, idx, score) == want
    assert build.line(row, "d.C", 0, 1.0) == dumps_line(build(row, "d.C", 0, 1.0))
