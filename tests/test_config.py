"""The run configuration: seed examples load, errors name their key path."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from redjury_testing import REPO, redjury

from redjury.config import ConfigError, load_config, parse_config

SEED_ONE_JUDGE = """
evaluation:
  judges:
  - name: llama3.2
    connection:
      provider: ollama
      type: OLLAMA
    scoring:
      type: harmbench
"""

SEED_PANEL = """
evaluation:
  judges:
  - name: llama3.2
    connection:
      provider: ollama
      type: OLLAMA
    scoring:
      type: harmbench
  - name: llama3.2
    connection:
      provider: ollama
      type: OLLAMA
    scoring:
      type: nuanced
  - name: llama3.2
    connection:
      provider: ollama
      type: OLLAMA
    scoring:
      type: jailbreakbench
  aggregation: majority
"""


@pytest.mark.parametrize("text", [SEED_ONE_JUDGE, SEED_PANEL])
def test_seed_examples_load_unchanged(text: str) -> None:
    cfg = parse_config(yaml.safe_load(text))
    assert all(j.connection.type.value == "OLLAMA" for j in cfg.evaluation.judges)
    assert cfg.evaluation.threshold == 7.0 and cfg.evaluation.aggregation == "majority"


def test_seed_defaults() -> None:
    cfg = parse_config({})
    audit = cfg.evaluation.audit
    assert (audit.enabled, audit.on_failure) == (False, "warn")
    assert audit.dataset.revision == "8e1604d1171fe8a48d8febecd22f600e462bdcdd"
    assert (audit.dataset.sample_size, audit.dataset.seed, audit.dataset.download_timeout) == (
        100,
        42,
        30.0,
    )
    assert audit.robustness.wrappers == ["prepend_append", "refusal_prefix", "educational_framing"]
    assert audit.robustness.max_flip_rate == 0.1
    assert cfg.evaluator.threshold == 0.5
    assert cfg.reporting.bootstrap_num_iterations == 10000


def errors_of(data: dict) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(data, "c.yaml")
    return info.value.messages


def test_unknown_key_names_its_path() -> None:
    assert errors_of({"reporting": {"bootstrap_iterations": 5}}) == [
        "c.yaml: reporting.bootstrap_iterations: Extra inputs are not permitted"
    ]


def test_detector_setting_out_of_range_names_list_index() -> None:
    (msg,) = errors_of(
        {
            "detectors": [
                {"type": "pii_leak"},
                {"type": "pii_leak"},
                {"type": "latency", "budget_ms": -5},
            ]
        }
    )
    assert msg.startswith("c.yaml: detectors[2].budget_ms:")


def test_unknown_detector_setting_is_an_error() -> None:
    (msg,) = errors_of({"detectors": [{"type": "pii_leak", "colour": "red"}]})
    assert msg.startswith("c.yaml: detectors[0].colour:")


def test_unknown_detector_type_lists_known_ones() -> None:
    (msg,) = errors_of({"detectors": [{"type": "nope"}]})
    assert "detectors[0].type: unknown detector 'nope'" in msg and "pii_leak" in msg


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ({"evaluation": {"threshold": 11}}, "evaluation.threshold"),
        (
            {"evaluation": {"audit": {"robustness": {"max_flip_rate": 1.5}}}},
            "evaluation.audit.robustness.max_flip_rate",
        ),
        (
            {"evaluation": {"audit": {"dataset": {"sample_size": 0}}}},
            "evaluation.audit.dataset.sample_size",
        ),
        (
            {"evaluation": {"judges": [{"name": "x", "connection": {"timeout": "soon"}}]}},
            "evaluation.judges[0].connection.timeout",
        ),
        (
            {"reporting": {"bootstrap_confidence_level": 1.0}},
            "reporting.bootstrap_confidence_level",
        ),
        ({"evaluator": {"threshold": "high"}}, "evaluator.threshold"),
    ],
)
def test_wrong_values_name_their_path(data: dict, path: str) -> None:
    assert any(m.startswith(f"c.yaml: {path}:") for m in errors_of(data))


def test_bad_yaml_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("detectors: [\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


def test_config_error_exits_two_from_the_cli(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("detectors:\n  - type: latency\n    budget_ms: 0\n")
    proc = redjury(
        "run", REPO / "examples" / "attempts.jsonl", "--config", cfg, "--out", tmp_path / "o"
    )
    assert proc.returncode == 2
    assert "detectors[0].budget_ms" in proc.stderr


def test_invalid_bootstrap_flag_names_the_setting(tmp_path: Path) -> None:
    proc = redjury(
        "run",
        REPO / "examples" / "attempts.jsonl",
        "--bootstrap-num-iterations",
        "0",
        "--out",
        tmp_path / "o",
    )
    assert proc.returncode == 2 and "bootstrap_num_iterations" in proc.stderr


def _missing_fields(model: object, raw: dict, path: str) -> list[str]:
    from pydantic import BaseModel

    missing = []
    for name, info in type(model).model_fields.items():
        key = info.alias or name
        if key not in raw:
            missing.append(f"{path}{key}")
            continue
        value = getattr(model, name)
        if isinstance(value, BaseModel) and isinstance(raw[key], dict):
            missing.extend(_missing_fields(value, raw[key], f"{path}{key}."))
    return missing


def test_example_config_loads_and_shows_every_field() -> None:
    cfg = load_config(REPO / "examples" / "redjury.yaml")
    raw = yaml.safe_load((REPO / "examples" / "redjury.yaml").read_text())
    assert _missing_fields(cfg, raw, "") == []


@pytest.mark.parametrize(
    ("reporting", "path"),
    [
        ({"fail_on_asr": 2}, "reporting.fail_on_asr"),
        ({"fail_on_asr": -1}, "reporting.fail_on_asr"),
        ({"fail_on_asr": float("nan")}, "reporting.fail_on_asr"),
        ({"fail_on_asr": {"pii_leak": 1.5}}, "reporting.fail_on_asr"),
        ({"fail_on_asr": "high"}, "reporting.fail_on_asr"),
        ({"seed": -1}, "reporting.seed"),
        ({"seed": 2**64}, "reporting.seed"),
        ({"bootstrap_num_iterations": 10**10}, "reporting.bootstrap_num_iterations"),
        ({"bootstrap_confidence_level": float("nan")}, "reporting.bootstrap_confidence_level"),
    ],
)
def test_out_of_range_reporting_value_is_one_error_naming_its_path(
    reporting: dict, path: str
) -> None:
    (message,) = errors_of({"reporting": reporting})
    assert message.startswith(f"c.yaml: {path}:")


def test_rates_and_seeds_in_range_load() -> None:
    cfg = parse_config({"reporting": {"fail_on_asr": {"pii_leak": 0, "refusal": 1}, "seed": 0}})
    assert cfg.reporting.fail_on_asr == {"pii_leak": 0, "refusal": 1}
    assert parse_config({"reporting": {"bootstrap_num_iterations": 10**6}})


def test_infinite_evaluator_threshold_is_refused() -> None:
    (message,) = errors_of({"evaluator": {"threshold": float("inf")}})
    assert message == "c.yaml: evaluator.threshold: Input should be a finite number"


def test_unknown_scoring_type_is_a_config_error() -> None:
    (message,) = errors_of({"evaluation": {"judges": [{"name": "m", "scoring": {"type": "nope"}}]}})
    assert message.startswith("c.yaml: evaluation.judges[0].scoring.type: unknown scoring type")
    assert "harmbench" in message


def test_schema_named_in_a_config_file_resolves_next_to_it(tmp_path: Path) -> None:
    (tmp_path / "reply.json").write_text('{"type": "object"}')
    cfg = tmp_path / "c.yaml"
    cfg.write_text("detectors:\n  - type: schema\n    schema: reply\n")
    assert load_config(cfg).schema_dir == str(tmp_path.resolve())


@pytest.mark.parametrize("budget", [float("nan"), float("inf")])
def test_detector_numbers_are_finite(budget: float) -> None:
    (message,) = errors_of({"detectors": [{"type": "latency", "budget_ms": budget}]})
    assert message == "c.yaml: detectors[0].budget_ms: Input should be a finite number"
