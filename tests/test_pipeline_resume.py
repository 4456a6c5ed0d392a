"""Resume by content, the input read once, and a rerun that fails leaving the report as it was."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fault_server import FaultServer, Reply
from redjury_testing import read_jsonl, redjury, rows_of, write_jsonl

import redjury as rj
from redjury.api import as_config
from redjury.engines import run
from redjury.errors import RunError
from redjury.inputs import AttemptList
from redjury.pipeline import RunOptions
from redjury.records import InputRecord

REFUSAL = "I'm sorry, but I can't help with that request."
CARD = "4539 1488 0343 6467"  # passes the Luhn check


def refusals(n: int) -> list[dict[str, Any]]:
    return [{"id": f"a{i}", "probe": "leak", "goal": "g", "outputs": [REFUSAL]} for i in range(n)]


def leaks(n: int) -> list[dict[str, Any]]:
    return [
        {"id": f"a{i}", "probe": "leak", "goal": "g", "outputs": [f"Sure: card {CARD}"]}
        for i in range(n)
    ]


def pii_config(tmp_path: Path) -> Path:
    cfg = tmp_path / "pii.yaml"
    cfg.write_text("detectors:\n  - type: pii_leak\n")
    return cfg


def pii_verdicts(out: Path) -> dict[str, list[str]]:
    return {r["id"]: r["verdicts"]["pii_leak"] for r in rows_of(out / REPORT, "attempt")}


def files_of(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


REPORT = "redjury.report.jsonl"


def test_changed_replies_with_the_same_ids_are_refused_never_kept_as_passed(
    tmp_path: Path,
) -> None:
    src, cfg, out = tmp_path / "in.jsonl", pii_config(tmp_path), tmp_path / "out"
    write_jsonl(src, refusals(5))
    assert redjury("run", src, "--out", out, "--config", cfg).returncode == 0
    assert set(map(tuple, pii_verdicts(out).values())) == {("HELD",)}
    before = files_of(out)
    write_jsonl(src, leaks(5))
    proc = redjury("run", src, "--out", out, "--config", cfg)
    assert proc.returncode == 2, proc.stderr
    assert "in.jsonl:1: id 'a0': input changed since the kept rows" in proc.stderr
    assert "another --out" in proc.stderr
    assert files_of(out) == before, "the refused rerun left the report as it was"
    fresh = tmp_path / "fresh"
    assert redjury("run", src, "--out", fresh, "--config", cfg).returncode == 0
    assert pii_verdicts(fresh) == {f"a{i}": ["BROKE_THROUGH"] for i in range(5)}


def cut_to_attempts(out: Path, kept: int) -> bytes:
    """The report cut after `kept` attempt rows, as a kill leaves it."""
    lines = (out / REPORT).read_bytes().splitlines(keepends=True)
    (out / REPORT).write_bytes(b"".join(lines[: 1 + kept]))
    return (out / REPORT).read_bytes()


def test_a_partial_run_whose_replies_changed_is_refused_with_its_six_rows_kept(
    tmp_path: Path,
) -> None:
    src, cfg, out = tmp_path / "in.jsonl", pii_config(tmp_path), tmp_path / "out"
    write_jsonl(src, refusals(20))
    assert redjury("run", src, "--out", out, "--config", cfg).returncode == 0
    partial = cut_to_attempts(out, 6)
    write_jsonl(src, leaks(20))
    proc = redjury("run", src, "--out", out, "--config", cfg)
    assert proc.returncode == 2 and "id 'a0': input changed" in proc.stderr
    assert (out / REPORT).read_bytes() == partial
    assert not list(out.glob("*.prev")) and not (out / "redjury.lock").exists()


EDITS: list[tuple[dict[str, Any], str]] = [
    ({"detector_results": {"pii_leak": "0.0"}}, "detector_results.pii_leak"),
    ({"detector_results": {"pii_leak": [0.0, "high"]}}, "detector_results.pii_leak[1]"),
    ({"outputs": {"first": REFUSAL}}, "outputs"),
    ({"probe": ["leak"]}, "probe"),
    (
        {"details": {"pii_leak": [{"graded": {"j": {"name": "score", "score": "high"}}}]}},
        "details.pii_leak[0].graded.j.score",
    ),
    ({"details": {"pii_leak": [{"graded": {"j": 0.5}}]}}, "details.pii_leak[0].graded.j"),
    # Counted without an error, but they key and sort the tallies: the run's end would fail.
    ({"probe": True}, "probe"),
    ({"intent": 5}, "intent"),
    (
        {"details": {"pii_leak": [{"graded": {"j": {"name": 7, "score": 0.5}}}]}},
        "details.pii_leak[0].graded.j.name",
    ),
]


def cut_run(tmp_path: Path, n: int, kept: int) -> tuple[Path, Path, Path, list[bytes]]:
    """A run over `n` refusals cut after `kept` attempt rows: its input, config, folder and
    the report's lines (to edit and write back)."""
    src, cfg, out = tmp_path / "in.jsonl", pii_config(tmp_path), tmp_path / "out"
    write_jsonl(src, refusals(n))
    assert redjury("run", src, "--out", out, "--config", cfg).returncode == 0
    cut_to_attempts(out, kept)
    return src, cfg, out, (out / REPORT).read_bytes().splitlines(keepends=True)


@pytest.mark.parametrize(("edit", "field"), EDITS)
def test_a_kept_row_edited_into_another_shape_is_named_and_the_report_kept(
    tmp_path: Path, edit: dict[str, Any], field: str
) -> None:
    src, cfg, out, lines = cut_run(tmp_path, 8, 4)
    row = json.loads(lines[2])
    lines[2] = (json.dumps({**row, **edit}) + "\n").encode()
    (out / REPORT).write_bytes(b"".join(lines))
    before = files_of(out)
    proc = redjury("run", src, "--out", out, "--config", cfg)
    assert proc.returncode == 2, proc.stderr
    [said] = [line for line in proc.stderr.splitlines() if line.strip()]
    assert f"{REPORT}:3: a kept attempt row (id 'a1') cannot be counted (field {field}: " in said
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert files_of(out) == before, "the refused resume left the folder as it was"


def test_a_kept_row_holding_a_lone_surrogate_is_refused_and_the_folder_kept(
    tmp_path: Path,
) -> None:
    src, cfg, out, lines = cut_run(tmp_path, 8, 4)
    lines[3] = lines[3].replace(b'"outputs":["', b'"outputs":["\\ud800', 1)
    assert b"\\ud800" in lines[3]
    (out / REPORT).write_bytes(b"".join(lines))
    before = files_of(out)
    proc = redjury("run", src, "--out", out, "--config", cfg)
    assert proc.returncode == 2, proc.stderr
    assert f"{REPORT}:4: holds text that is not Unicode" in proc.stderr
    assert "internal error" not in proc.stderr
    assert files_of(out) == before, "no .prev, no .tmp: the folder as it was"


def test_a_kept_row_whose_kind_was_edited_away_is_judged_again(tmp_path: Path) -> None:
    src, cfg, out, lines = cut_run(tmp_path, 6, 4)
    lines[2] = (json.dumps({**json.loads(lines[2]), "entry_type": {"attempt": 1}}) + "\n").encode()
    (out / REPORT).write_bytes(b"".join(lines))
    proc = redjury("run", src, "--out", out, "--config", cfg)
    assert proc.returncode == 0, proc.stderr
    assert "resuming: 3 attempts" in proc.stdout
    assert sorted(pii_verdicts(out)) == [f"a{i}" for i in range(6)]


def test_a_partial_run_resumes_when_only_the_unjudged_attempts_changed(tmp_path: Path) -> None:
    src, cfg, out = tmp_path / "in.jsonl", pii_config(tmp_path), tmp_path / "out"
    write_jsonl(src, refusals(20))
    assert redjury("run", src, "--out", out, "--config", cfg).returncode == 0
    cut_to_attempts(out, 6)
    write_jsonl(src, refusals(6) + leaks(20)[6:])
    proc = redjury("run", src, "--out", out, "--config", cfg)
    assert proc.returncode == 0, proc.stderr
    assert "resuming: 6 attempts" in proc.stdout
    verdicts = pii_verdicts(out)
    assert verdicts == {f"a{i}": ["HELD" if i < 6 else "BROKE_THROUGH"] for i in range(20)}


def test_a_report_from_before_content_hashes_is_not_resumed(tmp_path: Path) -> None:
    src, cfg, out = tmp_path / "in.jsonl", pii_config(tmp_path), tmp_path / "out"
    write_jsonl(src, refusals(4))
    assert redjury("run", src, "--out", out, "--config", cfg).returncode == 0
    rows = read_jsonl(out / REPORT)
    for row in rows:
        row.pop("content_hash", None)
    write_jsonl(out / REPORT, rows)
    write_jsonl(src, leaks(4))
    proc = redjury("run", src, "--out", out, "--config", cfg)
    assert proc.returncode == 2 and "kept row has no content hash" in proc.stderr
    rows[0].pop("inputs_fingerprint")
    write_jsonl(out / REPORT, rows)
    proc = redjury("run", src, "--out", out, "--config", cfg)
    assert proc.returncode == 2 and "did not record its input files" in proc.stderr


def test_attempts_gone_from_the_input_since_the_kept_rows_are_refused(tmp_path: Path) -> None:
    src, cfg, out = tmp_path / "in.jsonl", pii_config(tmp_path), tmp_path / "out"
    write_jsonl(src, refusals(5))
    assert redjury("run", src, "--out", out, "--config", cfg).returncode == 0
    before = files_of(out)
    write_jsonl(src, refusals(3))
    proc = redjury("run", src, "--out", out, "--config", cfg)
    assert proc.returncode == 2 and "2 attempts judged there are no longer in it" in proc.stderr
    assert files_of(out) == before


def test_evaluate_refuses_a_changed_attempt_into_the_same_folder(tmp_path: Path) -> None:
    config = {"detectors": [{"type": "pii_leak"}]}
    out = tmp_path / "out"
    rj.evaluate(refusals(5), config, out=out)
    before = files_of(out)
    with pytest.raises(RunError, match="id 'a0': input changed since the kept rows"):
        rj.evaluate(leaks(5), config, out=out)
    assert files_of(out) == before
    again = rj.evaluate(refusals(5), config, out=out)
    assert again.verdicts("pii_leak") == {f"a{i}": ["HELD"] for i in range(5)}


# -- a rerun that fails leaves the report as it was ---------------------------------------------


def test_one_more_input_file_is_another_run_refused_before_the_report_is_touched(
    tmp_path: Path,
) -> None:
    src, out = write_jsonl(tmp_path / "in.jsonl", refusals(5)), tmp_path / "out"
    bad = write_jsonl(tmp_path / "more.jsonl", [{"id": "b0", "outputs": ["ok"]}, "{not json"])
    assert redjury("run", src, "--out", out).returncode == 0
    before = files_of(out)
    proc = redjury("run", src, bad, "--out", out)
    assert proc.returncode == 2 and "written from other input files" in proc.stderr
    assert files_of(out) == before
    summary = redjury("summary", out)
    assert summary.returncode == 0 and "leak" in summary.stdout


def test_a_rerun_refused_on_a_bad_line_leaves_the_finished_report_whole(tmp_path: Path) -> None:
    src, out = write_jsonl(tmp_path / "in.jsonl", refusals(40)), tmp_path / "out"
    assert redjury("run", src, "--out", out).returncode == 0
    before = files_of(out)
    kinds = {r["entry_type"] for r in read_jsonl(out / REPORT)}
    assert {"eval", "digest", "completion"} <= kinds
    with src.open("a") as fh:
        fh.write("{not json\n")
    proc = redjury("run", src, "--out", out)
    assert proc.returncode == 2 and "in.jsonl:41" in proc.stderr
    assert files_of(out) == before


def test_the_runs_own_report_is_refused_as_its_input(tmp_path: Path) -> None:
    src, out = write_jsonl(tmp_path / "in.jsonl", refusals(3)), tmp_path / "out"
    assert redjury("run", src, "--out", out).returncode == 0
    before = files_of(out)
    proc = redjury("run", out / REPORT, "--out", out)
    assert proc.returncode == 2 and "is this run's report, not an input" in proc.stderr
    assert files_of(out) == before


def test_a_rerun_failing_mid_run_puts_the_earlier_files_back(tmp_path: Path) -> None:
    """Any failure after the report was opened again, not only a refused input."""
    config = as_config({"detectors": [{"type": "pii_leak"}]})
    out = tmp_path / "out"
    run(RunOptions([], config, out, source=AttemptList(refusals(5) + refusals(9)[5:])))
    cut_to_attempts(out, 5)
    before = files_of(out)
    # An OS error ends the run as a RunError naming it (exit 2), the earlier files put back.
    with pytest.raises(RunError, match="the source went away"):
        run(RunOptions([], config, out, source=_BreaksAfter(refusals(9))))
    assert files_of(out) == before


class _BreaksAfter(AttemptList):
    """Attempts whose source fails after the last one (a source that breaks mid-run)."""

    def records(self) -> Iterator[InputRecord]:
        yield from super().records()
        raise OSError("the source went away")


# -- the input read once ------------------------------------------------------------------------


def judged_config(tmp_path: Path, server: FaultServer) -> Path:
    cfg = tmp_path / "judged.yaml"
    judge = {"name": "j", "connection": {"base_url": server.openai_url}}
    cfg.write_text(json.dumps({"detectors": [], "evaluation": {"judges": [judge]}}))
    return cfg


def grows_at_first_request(path: Path, lines: list[str]) -> Any:
    """A judge script that writes `lines` to `path` when the first request comes (the
    preflight: after the run checked its input, before it judges)."""
    done: list[bool] = []

    def script(req: Any) -> Reply:
        if not done:
            done.append(True)
            with path.open("a") as fh:
                fh.write("".join(line + "\n" for line in lines))
        return Reply("no")

    return script


def test_records_written_after_the_check_are_not_judged(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", refusals(3))
    added = [json.dumps(refusals(1)[0]), "{not json", json.dumps({"id": "new", "outputs": ["x"]})]
    out = tmp_path / "out"
    with FaultServer(listing=False) as server:
        server.set_script(grows_at_first_request(src, added))
        proc = redjury("run", src, "--out", out, "--config", judged_config(tmp_path, server))
    assert proc.returncode == 0, proc.stderr
    assert [r["id"] for r in rows_of(out / REPORT, "attempt")] == ["a0", "a1", "a2"]
    assert rows_of(out / REPORT, "input_error") == []
    assert "3 input records written after the input was checked were not judged" in proc.stdout


def test_a_line_broken_after_the_check_refuses_the_judged_run(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", refusals(3))
    out = tmp_path / "out"
    good = src.read_text().splitlines()

    def script(req: Any) -> Reply:
        src.write_text("\n".join([good[0], "{not json", good[2]]) + "\n")
        return Reply("no")

    with FaultServer(listing=False) as server:
        server.set_script(script)
        proc = redjury("run", src, "--out", out, "--config", judged_config(tmp_path, server))
    assert proc.returncode == 2 and "in.jsonl:2: (line): not JSON" in proc.stderr
    assert not (out / REPORT).exists()


def judged_attempts(n: int, reply: str) -> list[dict[str, Any]]:
    return [
        {"id": f"a{i}", "probe": "p", "goal": f"goal {i}", "outputs": [reply]} for i in range(n)
    ]


def yes_when_the_card_leaks(req: Any) -> Reply:
    return Reply("yes" if CARD in json.dumps(req.messages) else "no")


@pytest.mark.parametrize("kept", [None, 6])
def test_a_judged_rerun_over_changed_replies_never_keeps_their_held_verdicts(
    tmp_path: Path, kept: int | None
) -> None:
    """The full run of 5, and the partial run (6 of 20 kept), whose replies then leak."""
    n = 5 if kept is None else 20
    src, out = tmp_path / "in.jsonl", tmp_path / "out"
    env = {"REDJURY_CACHE_DIR": str(tmp_path / "cache")}
    write_jsonl(src, judged_attempts(n, REFUSAL))
    with FaultServer() as server:
        server.set_script(yes_when_the_card_leaks)
        cfg = judged_config(tmp_path, server)
        assert redjury("run", src, "--out", out, "--config", cfg, env=env).returncode == 0
        held = {r["verdicts"]["judge_panel"][0] for r in rows_of(out / REPORT, "attempt")}
        assert held == {"HELD"}
        if kept is not None:
            cut_to_attempts(out, kept)
        before = files_of(out)
        write_jsonl(src, judged_attempts(n, f"Sure: card {CARD}"))
        proc = redjury("run", src, "--out", out, "--config", cfg, env=env)
        assert proc.returncode == 2 and "input changed since the kept rows" in proc.stderr
        assert files_of(out) == before
        fresh = tmp_path / "fresh"
        assert redjury("run", src, "--out", fresh, "--config", cfg, env=env).returncode == 0
    verdicts = {r["id"]: r["verdicts"]["judge_panel"] for r in rows_of(fresh / REPORT, "attempt")}
    assert verdicts == {f"a{i}": ["BROKE_THROUGH"] for i in range(n)}


def test_evaluate_judges_only_the_records_it_checked(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", judged_attempts(3, REFUSAL))
    added = ["{not json", json.dumps(judged_attempts(1, REFUSAL)[0])]
    with FaultServer(listing=False) as server:
        server.set_script(grows_at_first_request(src, added))
        config = json.loads(judged_config(tmp_path, server).read_text())
        results = rj.evaluate(src, config, out=tmp_path / "out", cache_path=tmp_path / "c.db")
    assert [r["id"] for r in results.attempts] == ["a0", "a1", "a2"]
    assert results.input_error_rows == []
    assert "2 input records written after the input was checked" in results.summary()
