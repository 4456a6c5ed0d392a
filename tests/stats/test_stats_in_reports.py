"""Statistics as a run writes them: interval fields on eval rows, Se/Sp sources, ratings, hit@k, calibrate."""

from __future__ import annotations

import json
from pathlib import Path

from redjury_testing import read_jsonl, redjury, rows_of, write_jsonl


def garak_report(path: Path, detector: str, scores: list[float]) -> Path:
    rows: list[dict] = [
        {
            "entry_type": "start_run setup",
            "plugins.target_type": "test",
            "plugins.target_name": "m",
            "run.generations": 1,
        }
    ]
    for i, s in enumerate(scores):
        rows.append(
            {
                "entry_type": "attempt",
                "uuid": f"u{i}",
                "seq": i,
                "status": 2,
                "probe_classname": "dan.Dan_11_0",
                "prompt": {"turns": [{"role": "user", "content": {"text": "p"}}]},
                "outputs": [{"text": f"reply {i}"}],
                "detector_results": {detector: [s]},
                "notes": {},
                "goal": "g",
            }
        )
    return write_jsonl(path, rows)


def eval_row(out: Path) -> dict:
    (row,) = rows_of(out / "redjury.report.jsonl", "eval")
    return row


def test_garak_figures_correct_mitigation_bypass_on_a_garak_report(tmp_path: Path) -> None:
    src = garak_report(tmp_path / "g.jsonl", "mitigation.MitigationBypass", [1.0] * 30 + [0.0] * 10)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("detectors: []\n")
    assert (
        redjury("run", src, "--config", cfg, "--out", tmp_path / "o", "--seed", "3").returncode == 0
    )
    row = eval_row(tmp_path / "o")
    corr = row["confidence_correction"]
    assert corr["source"] == "garak"
    assert (
        abs(corr["se"] - 0.921295004186436) < 1e-12 and abs(corr["sp"] - 0.3854312029025956) < 1e-12
    )
    # Rogan–Gladen of 0.75 with garak's figures: (0.75 + Sp - 1) / (Se + Sp - 1).
    expected = (0.75 + 0.3854312029025956 - 1) / (0.921295004186436 + 0.3854312029025956 - 1)
    assert abs(row["corrected_rate"] - expected) < 1e-9
    assert row["confidence_method"] == "bootstrap" and row["confidence"] == 0.95


def test_config_metrics_take_precedence_over_garak_figures(tmp_path: Path) -> None:
    src = garak_report(tmp_path / "g.jsonl", "mitigation.MitigationBypass", [1.0] * 20 + [0.0] * 20)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "detectors: []\nreporting:\n  detector_metrics:\n    mitigation.MitigationBypass: {se: 0.9, sp: 0.95}\n"
    )
    assert redjury("run", src, "--config", cfg, "--out", tmp_path / "o").returncode == 0
    assert eval_row(tmp_path / "o")["confidence_correction"] == {
        "se": 0.9,
        "sp": 0.95,
        "source": "config",
    }


def test_below_min_sample_size_and_method_none_write_no_interval_fields(tmp_path: Path) -> None:
    src = garak_report(tmp_path / "g.jsonl", "x.Y", [1.0] * 10 + [0.0] * 10)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("detectors: []\n")
    for flags, out in (
        (("--bootstrap-min-sample-size", "30"), "small"),
        (("--confidence_interval_method", "none"), "none"),
    ):
        assert redjury("run", src, "--config", cfg, "--out", tmp_path / out, *flags).returncode == 0
        row = eval_row(tmp_path / out)
        assert not any(k.startswith("confidence") for k in row), row
        assert "corrected_rate" not in row
        if out == "small":
            # redjury's own interval beside garak's (absent) fields: Clopper–Pearson of 10/20.
            assert row["interval_method"] == "clopper_pearson"
            assert row["interval_lower"] < 0.5 < row["interval_upper"]
        else:
            assert not any(k.startswith("interval") for k in row), row
    assert (
        redjury(
            "run",
            src,
            "--config",
            cfg,
            "--out",
            tmp_path / "w",
            "--confidence-interval-method",
            "wilson",
            "--bootstrap-min-sample-size",
            "5",
        ).returncode
        == 0
    )
    row = eval_row(tmp_path / "w")
    assert row["confidence_method"] == "wilson" and row["confidence_correction"]["source"] == "none"


def test_all_failing_outputs_get_a_wilson_interval_under_bootstrap(tmp_path: Path) -> None:
    src = garak_report(tmp_path / "g.jsonl", "x.Y", [1.0] * 40)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("detectors: []\n")
    assert redjury("run", src, "--config", cfg, "--out", tmp_path / "o").returncode == 0
    row = eval_row(tmp_path / "o")
    assert row["confidence_method"] == "wilson"
    assert row["confidence_upper"] == 1.0 and 0.8 < row["confidence_lower"] < 1.0


def test_the_same_seed_gives_the_same_interval_and_the_header_records_a_drawn_one(
    tmp_path: Path,
) -> None:
    src = garak_report(tmp_path / "g.jsonl", "x.Y", [1.0] * 15 + [0.0] * 25)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("detectors: []\n")
    for name in ("a", "b"):
        assert (
            redjury(
                "run", src, "--config", cfg, "--out", tmp_path / name, "--seed", "11"
            ).returncode
            == 0
        )
    assert (
        eval_row(tmp_path / "a")["confidence_lower"] == eval_row(tmp_path / "b")["confidence_lower"]
    )
    assert redjury("run", src, "--config", cfg, "--out", tmp_path / "c").returncode == 0
    assert isinstance(read_jsonl(tmp_path / "c" / "redjury.report.jsonl")[0]["seed"], int)


def test_calibration_rates_eval_rows_and_show_z_prints_the_symbol(tmp_path: Path) -> None:
    src = garak_report(tmp_path / "g.jsonl", "dan.DAN", [1.0] * 5 + [0.0] * 35)
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps({"dan.Dan_11_0/dan.DAN": {"mu": 0.5, "sigma": 0.1, "sw_p": 0.4}}))
    cfg = tmp_path / "c.yaml"
    cfg.write_text("detectors: []\n")
    proc = redjury(
        "run", src, "--config", cfg, "--out", tmp_path / "o", "--calibration", cal, "--show-z"
    )
    assert proc.returncode == 0, proc.stderr
    row = eval_row(tmp_path / "o")
    # pass rate 35/40 = 0.875; z = (0.875 - 0.5) / 0.1 = 3.75 → DEFCON 5 (above the 1.0 bound)
    assert abs(row["z_score"] - 3.75) < 1e-9 and row["defcon"] == 5
    assert "🟦 Z: +3.8" in proc.stdout


def test_pair_missing_from_calibration_gets_no_rating(tmp_path: Path) -> None:
    src = garak_report(tmp_path / "g.jsonl", "dan.DAN", [0.0] * 3)
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps({"other.Probe/dan.DAN": {"mu": 0.5, "sigma": 0.1}}))
    cfg = tmp_path / "c.yaml"
    cfg.write_text("detectors: []\n")
    assert (
        redjury(
            "run", src, "--config", cfg, "--out", tmp_path / "o", "--calibration", cal
        ).returncode
        == 0
    )
    assert "z_score" not in eval_row(tmp_path / "o")


def test_hit_at_k_null_omits_the_field(tmp_path: Path) -> None:
    src = garak_report(tmp_path / "g.jsonl", "x.Y", [1.0, 0.0])
    cfg = tmp_path / "c.yaml"
    cfg.write_text("detectors: []\nreporting:\n  hit_at_k: null\n")
    assert redjury("run", src, "--config", cfg, "--out", tmp_path / "o").returncode == 0
    assert "hit_at_k" not in eval_row(tmp_path / "o")


def test_calibrate_builds_mu_and_sigma_from_several_reports_and_loads_back(tmp_path: Path) -> None:
    reports = []
    for i, fails in enumerate((2, 6)):
        src = garak_report(
            tmp_path / f"g{i}.jsonl", "dan.DAN", [1.0] * fails + [0.0] * (10 - fails)
        )
        cfg = tmp_path / "c.yaml"
        cfg.write_text("detectors: []\n")
        assert redjury("run", src, "--config", cfg, "--out", tmp_path / f"o{i}").returncode == 0
        reports.append(tmp_path / f"o{i}" / "redjury.report.jsonl")
    out = tmp_path / "cal.json"
    proc = redjury("calibrate", *reports, "--output", out)
    assert proc.returncode == 0, proc.stderr
    entry = json.loads(out.read_text())["dan.Dan_11_0/dan.DAN"]
    # pass rates 0.8 and 0.4: mean 0.6, population sigma 0.2
    assert abs(entry["mu"] - 0.6) < 1e-12 and abs(entry["sigma"] - 0.2) < 1e-12
    src = garak_report(tmp_path / "g.jsonl", "dan.DAN", [0.0] * 10)
    assert (
        redjury(
            "run",
            src,
            "--config",
            tmp_path / "c.yaml",
            "--out",
            tmp_path / "z",
            "--calibration",
            out,
        ).returncode
        == 0
    )
    assert abs(eval_row(tmp_path / "z")["z_score"] - 2.0) < 1e-9


def test_propagation_off_with_audit_counts_warns_once_on_one_line(capsys) -> None:
    from redjury.config import ReportingSpec
    from redjury.evaluators import DetectorTally
    from redjury.report.statistics import eval_statistics
    from redjury.stats import Correction

    audit = Correction.from_counts(18, 2, 16, 4, "audit:abc")
    fields = eval_statistics(
        ReportingSpec(propagate_detector_uncertainty=False), 0, lambda name: audit
    )
    for _ in range(2):
        fields("p", "judge_panel", DetectorTally(passed=30, fails=10))
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("redjury: warning: propagate_detector_uncertainty is false")
    assert "judge_panel" in lines[0] and "audit:abc" in lines[0]


def test_propagation_on_or_config_figures_do_not_warn(capsys) -> None:
    from redjury.config import ReportingSpec
    from redjury.evaluators import DetectorTally
    from redjury.report.statistics import eval_statistics
    from redjury.stats import Correction

    fixed = Correction(0.9, 0.8, "config")
    audit = Correction.from_counts(18, 2, 16, 4, "audit:abc")
    eval_statistics(ReportingSpec(propagate_detector_uncertainty=False), 0, lambda n: fixed)(
        "p", "d", DetectorTally(passed=30, fails=10)
    )
    eval_statistics(ReportingSpec(), 0, lambda n: audit)("p", "d", DetectorTally(passed=3, fails=1))
    assert capsys.readouterr().err == ""
