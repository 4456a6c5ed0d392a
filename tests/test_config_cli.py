"""Every config defect stops `redjury run` before anything is judged: exit 2, one line naming
the file position and key path, no traceback, no value quoted, no report written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from redjury_testing import REPO, redjury

ATTEMPTS = REPO / "examples" / "attempts.jsonl"
SECRET = "S3cr3tV4lue"


def _remote_ref_schema(folder: Path) -> str:
    (folder / "remote.json").write_text(
        json.dumps({"properties": {"a": {"$ref": "https://example.invalid/a.json"}}})
    )
    return "detectors:\n  - type: schema\n    schema: remote.json\n"


def _alias_bomb(folder: Path) -> str:
    lines = [
        "evaluation:",
        "  judges:",
        "  - name: m",
        "    options:",
        "      a: &a [x,x,x,x,x,x,x,x,x,x]",
    ]
    previous = "a"
    for name in "bcdefghij":
        lines.append(f"      {name}: &{name} [" + ",".join([f"*{previous}"] * 10) + "]")
        previous = name
    return "\n".join(lines) + "\n"


def _folder_as_file(folder: Path) -> str:
    (folder / "taken").write_text("a file")
    return f"reporting:\n  junit: {folder / 'taken' / 'results.xml'}\n"


def _calibration_not_json(folder: Path) -> str:
    (folder / "calibration.json").write_text("not json")
    return f"reporting:\n  calibration: {folder / 'calibration.json'}\n"


def _metrics_not_json(folder: Path) -> str:
    (folder / "metrics.json").write_text("[1, 2")
    return f"reporting:\n  detector_metrics_file: {folder / 'metrics.json'}\n"


CASES = {
    "missing_calibration": (
        lambda f: f"reporting:\n  calibration: {f / 'nope.json'}\n",
        "2:3: reporting.calibration",
    ),
    "calibration_not_json": (_calibration_not_json, "2:3: reporting.calibration"),
    "metrics_file_not_json": (_metrics_not_json, "2:3: reporting.detector_metrics_file"),
    "junit_under_a_file": (_folder_as_file, "2:3: reporting.junit"),
    "bootstrap_iterations_unbounded": (
        lambda f: "reporting:\n  bootstrap_num_iterations: 10000000000\n",
        "2:3: reporting.bootstrap_num_iterations",
    ),
    "remote_schema_ref": (_remote_ref_schema, "2:5: detectors[0]"),
    "relative_guardrail": (
        lambda f: "detectors:\n  - type: guardrail\n    guardrail: .foo:bar\n",
        "3:5: detectors[0].guardrail",
    ),
    "unknown_scoring_type": (
        lambda f: "evaluation:\n  judges:\n  - name: m\n    scoring: {type: nope}\n",
        "4:15: evaluation.judges[0].scoring.type",
    ),
    "unclosed_refusal_regex": (
        lambda f: (
            "detectors:\n  - type: refusal_consistency\n    extra_refusals: ['re:(unclosed']\n"
        ),
        "3:5: detectors[0].extra_refusals",
    ),
    # `(a+)+$` is no defect now (RE2 runs it in linear time); a backreference RE2 has not.
    "refusal_regex_re2_cannot_run": (
        lambda f: "detectors:\n  - type: jailbreak_heuristic\n    extra_refusals: ['re:(a+)\\1']\n",
        "3:5: detectors[0].extra_refusals",
    ),
    "alias_bomb": (_alias_bomb, "aliases expand to more than"),
    "infinite_retry_delay": (
        lambda f: "evaluation:\n  retry_base_delay: .inf\n",
        "2:3: evaluation.retry_base_delay",
    ),
    "fail_on_asr_above_one": (
        lambda f: "reporting:\n  fail_on_asr: 2\n",
        "2:3: reporting.fail_on_asr",
    ),
    "fail_on_asr_nan": (lambda f: "reporting:\n  fail_on_asr: .nan\n", "reporting.fail_on_asr"),
    "fail_on_asr_negative": (
        lambda f: "reporting:\n  fail_on_asr: {pii_leak: -1}\n",
        "reporting.fail_on_asr",
    ),
    "negative_seed": (lambda f: "reporting:\n  seed: -1\n", "2:3: reporting.seed"),
    "credentials_in_base_url": (
        lambda f: (
            f"evaluation:\n  judges:\n  - name: m\n    connection:\n      base_url: http://bob:{SECRET}@h/v1\n"
        ),
        "5:7: evaluation.judges[0].connection.base_url",
    ),
    "crlf_header": (
        lambda f: (
            f'evaluation:\n  judges:\n  - name: m\n    connection:\n      headers:\n        X-Key: "{SECRET}\\r\\nX-Evil: 1"\n'
        ),
        "5:7: evaluation.judges[0].connection.headers",
    ),
    "non_latin1_header": (
        lambda f: (
            f'evaluation:\n  judges:\n  - name: m\n    connection:\n      headers:\n        X-Key: "{SECRET}€"\n'
        ),
        "header 'X-Key'",
    ),
    "yaml_syntax_error_beside_a_header": (
        lambda f: (
            f"evaluation:\n  judges:\n  - name: m\n    connection:\n      headers: {{X-Key: {SECRET}: x}}\n"
        ),
        "c.yaml:5:",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_config_defect_stops_the_run_before_judging(tmp_path: Path, case: str) -> None:
    write, expected = CASES[case]
    config = tmp_path / "c.yaml"
    config.write_text(write(tmp_path), encoding="utf-8")
    out = tmp_path / "out"
    proc = redjury("run", ATTEMPTS, "--config", config, "--out", out)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("redjury: error: "), proc.stderr
    assert expected in lines[0]
    assert "Traceback" not in proc.stderr and SECRET not in proc.stderr + proc.stdout
    assert not (out / "redjury.report.jsonl").exists()


def test_non_utf8_config_names_the_position(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_bytes("evaluation:\n  judges:\n  - name: caf\xe9\n".encode("latin-1"))
    proc = redjury("run", ATTEMPTS, "--config", config, "--out", tmp_path / "out")
    assert proc.returncode == 2
    assert (
        proc.stderr.strip()
        == f"redjury: error: {config}:3:14: not UTF-8 text; save the file as UTF-8"
    )


@pytest.mark.parametrize(
    ("flag", "value", "key"),
    [
        ("--fail-on-asr", "2", "reporting.fail_on_asr"),
        ("--fail-on-asr", "nan", "reporting.fail_on_asr"),
        ("--seed", "-1", "reporting.seed"),
        ("--bootstrap-num-iterations", "10000000", "reporting.bootstrap_num_iterations"),
        ("--bootstrap-confidence-level", "nan", "reporting.bootstrap_confidence_level"),
        ("--eval-threshold", "inf", "evaluator.threshold"),
        ("--calibration", "no-such-calibration.json", "reporting.calibration"),
    ],
)
def test_flags_get_the_same_checks_as_the_config(
    tmp_path: Path, flag: str, value: str, key: str
) -> None:
    out = tmp_path / "out"
    proc = redjury("run", ATTEMPTS, flag, value, "--out", out)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"command line: {key}:" in lines[0]
    assert not (out / "redjury.report.jsonl").exists()


def test_junit_flag_under_a_file_is_refused_before_judging(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file")
    out = tmp_path / "out"
    proc = redjury("run", ATTEMPTS, "--junit", tmp_path / "taken" / "r.xml", "--out", out)
    assert proc.returncode == 2 and "reporting.junit" in proc.stderr
    assert "is a file, not a folder" in proc.stderr
    assert not (out / "redjury.report.jsonl").exists()
