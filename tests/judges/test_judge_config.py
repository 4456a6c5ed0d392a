"""Judge config (R11, R15): the seed's examples, connection types, keys and fingerprints."""

from __future__ import annotations

import pytest
import yaml
from judge_specs import judge

from redjury.judges.config import ConnectionType, EvaluationSpec, JudgeSpec
from redjury.judges.providers import PLACEHOLDER_API_KEY, OpenAIProvider, provider_for

ONE_JUDGE = """
evaluation:
  judges:
  - name: llama3.2
    connection:
      provider: ollama
      type: OLLAMA
    scoring:
      type: harmbench
"""

PANEL_OF_THREE = """
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


@pytest.mark.parametrize("text", [ONE_JUDGE, PANEL_OF_THREE])
def test_seed_examples_load_unchanged(text):
    spec = EvaluationSpec.model_validate(yaml.safe_load(text)["evaluation"])
    assert spec.judges[0].connection.type is ConnectionType.OLLAMA
    assert spec.aggregation == "majority" and spec.threshold == 7.0
    assert spec.require_all_judges is False
    assert spec.max_concurrency == 64 and spec.per_endpoint_concurrency == 64
    assert spec.judges[0].connection.timeout == 120.0
    assert spec.judges[0].generation.temperature == 0.0


def test_unknown_key_is_an_error_naming_its_path():
    with pytest.raises(ValueError, match="judges.0.connection.bogus"):
        EvaluationSpec.model_validate({"judges": [{"name": "m", "connection": {"bogus": 1}}]})


def test_endpoint_is_an_alias_of_base_url():
    spec = JudgeSpec.model_validate({"name": "m", "connection": {"endpoint": "http://h:1/v1"}})
    assert spec.connection.base_url == "http://h:1/v1"


def test_custom_base_url_without_a_key_sends_a_placeholder(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    p = provider_for(JudgeSpec.model_validate(judge("http://127.0.0.1:8000/v1")))
    assert p.headers["authorization"] == f"Bearer {PLACEHOLDER_API_KEY}"
    assert p.secrets == []


def test_server_root_gets_v1():
    p = OpenAIProvider(JudgeSpec.model_validate(judge("http://127.0.0.1:8000")))
    assert p.base_url == "http://127.0.0.1:8000/v1"


def test_api_key_env_is_read_and_kept_secret(monkeypatch):
    monkeypatch.setenv("JUDGE_KEY", "sk-very-secret")
    spec = judge(
        "http://h/v1", connection={"api_key_env": "JUDGE_KEY", "headers": {"x-org": "org-secret"}}
    )
    p = provider_for(JudgeSpec.model_validate(spec))
    assert p.headers["authorization"] == "Bearer sk-very-secret"
    assert set(p.secrets) == {"sk-very-secret", "org-secret"}


def test_panel_secrets_lists_keys_and_header_values(monkeypatch, make_panel):
    monkeypatch.setenv("JUDGE_KEY", "sk-very-secret")
    panel = make_panel(
        [
            judge(
                "http://h/v1",
                connection={"api_key_env": "JUDGE_KEY", "headers": {"x-org": "org-secret"}},
            )
        ]
    )
    assert set(panel.secrets()) == {"sk-very-secret", "org-secret"}


def test_missing_key_env_is_a_config_error(monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY", raising=False)
    with pytest.raises(ValueError, match="NO_SUCH_KEY"):
        provider_for(
            JudgeSpec.model_validate(
                judge("http://h/v1", connection={"api_key_env": "NO_SUCH_KEY"})
            )
        )


def test_hosted_openai_without_any_key_is_a_config_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="API key"):
        provider_for(JudgeSpec.model_validate({"name": "gpt-4o-mini"}))


def test_litellm_in_completions_mode_is_refused_with_a_clear_message():
    from redjury.judges.completions import completions_provider_for

    spec = JudgeSpec.model_validate({"name": "m", "connection": {"type": "litellm"}})
    with pytest.raises(ValueError, match="completions mode, connection type LITELLM"):
        completions_provider_for(spec)


def test_unknown_scoring_type_names_the_known_ones(make_panel):
    with pytest.raises(KeyError, match="harmbench"):
        make_panel([judge("http://h/v1", kind="no_such_type")])


@pytest.mark.filterwarnings("ignore::redjury.judges.panel.PanelWarning")
def test_fingerprint_ignores_url_and_timeout_but_not_what_decides(make_panel):
    base = make_panel([judge("http://a:1/v1", "m")])
    moved = make_panel([judge("http://b:2/v1", "m", timeout=99)])
    assert base.judges[0].fingerprint == moved.judges[0].fingerprint
    assert base.fingerprint == moved.fingerprint
    for changed in (
        make_panel([judge("http://a:1/v1", "other")]),
        make_panel([judge("http://a:1/v1", "m", "scorer")]),
        make_panel([judge("http://a:1/v1", "m", generation={"temperature": 0.5})]),
        make_panel([judge("http://a:1/v1", "m", scoring={"system_prompt": "x"})]),
        make_panel([judge("http://a:1/v1", "m", type="OLLAMA")]),
    ):
        assert changed.judges[0].fingerprint != base.judges[0].fingerprint
    assert make_panel([judge("http://a:1/v1", "m")], threshold=5).fingerprint != base.fingerprint
    assert (
        make_panel([judge("http://a:1/v1", "m")], aggregation="mean").fingerprint
        != base.fingerprint
    )
    assert (
        make_panel([judge("http://a:1/v1", "m")], require_all_judges=True).fingerprint
        != base.fingerprint
    )


def test_panel_is_a_registered_agentic_detector_off_by_default():
    from redjury.detectors.base import Family
    from redjury.detectors.registry import get_detector_class

    cls = get_detector_class("judge_panel")
    assert cls.family is Family.AGENTIC and cls.default_enabled is False and cls.hazards == ()


def test_per_endpoint_concurrency_follows_max_concurrency_unless_set():
    assert EvaluationSpec.model_validate({"max_concurrency": 8}).per_endpoint_concurrency == 8
    given = {"max_concurrency": 8, "per_endpoint_concurrency": 3}
    assert EvaluationSpec.model_validate(given).per_endpoint_concurrency == 3
