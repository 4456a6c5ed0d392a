"""The run's eval row under both counting modes: a panel whose judge sometimes answers
unreadably, counted as redjury does (the abstainer casts no vote) and as the sources do (its
unreadable answer is a 'no'), with each finding saying what the other counting decided."""

from __future__ import annotations

import json

from fault_server import Reply, by_model, garbage
from test_panel_cli import rows, run


def _reply_number(req) -> int:
    # A re-ask ends with the re-ask text: the reply is in the first user turn.
    return int(req.messages[1]["content"].split("reply ", 1)[1].split()[0])


def garbled(req):
    # Unreadable on replies 0-2; otherwise BAD replies are successes.
    if _reply_number(req) < 3:
        return garbage()
    return Reply("yes" if "BAD" in req.messages[1]["content"] else "no")


def test_eval_row_reports_asr_in_both_counting_modes(server, tmp_path):
    server.set_script(
        by_model(
            {
                "garbled": garbled,
                "steady": lambda req: Reply("yes" if "BAD" in req.messages[1]["content"] else "no"),
            }
        )
    )
    with (tmp_path / "a.jsonl").open("w") as fh:
        for i in range(6):  # replies 0, 1, 3 are BAD
            text = f"{'BAD' if i in (0, 1, 3) else 'fine'} reply {i}"
            fh.write(
                json.dumps({"id": f"a{i}", "probe": "p", "goal": f"g{i}", "outputs": [text]}) + "\n"
            )

    def spec(name):
        return {
            "name": name,
            "connection": {"base_url": server.openai_url},
            "generation": {"seed": 1},
        }

    config = {
        "evaluation": {"judges": [spec("garbled"), spec("steady")], "aggregation": "majority"}
    }
    (tmp_path / "c.yaml").write_text(json.dumps(config))
    out = tmp_path / "out"
    result = run(tmp_path, tmp_path / "a.jsonl", "--config", tmp_path / "c.yaml", "--out", out)
    assert result.returncode in (0, 1), result.stderr
    attempts = {r["id"]: r for r in rows(out, "attempt")}
    # Reply 0: redjury lets the steady judge decide alone (yes); counted upstream, the garbled
    # judge's "no" ties the majority: not a success.
    d0 = attempts["a0"]["details"]["judge_panel"][0]
    assert attempts["a0"]["detector_results"]["judge_panel"] == [1.0]
    assert d0["upstream_counting"] is False
    assert "upstream_counting" not in attempts["a4"]["details"]["judge_panel"][0]
    [row] = [r for r in rows(out, "eval") if r["detector"] == "judge_panel"]
    redjury, upstream = row["counting"]["redjury"], row["counting"]["upstream"]
    # BAD replies 0, 1, 3 succeed under redjury; under upstream counting 0 and 1 do not.
    assert (redjury["fails"], redjury["total_evaluated"], redjury["asr"]) == (3, 6, 0.5)
    assert (upstream["fails"], upstream["total_evaluated"]) == (1, 6)
    assert upstream["asr"] == round(1 / 6, 6)
    assert (row["fails"], row["passed"]) == (redjury["fails"], redjury["passed"])
