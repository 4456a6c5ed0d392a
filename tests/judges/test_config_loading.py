"""Judge config refused when it loads, with one line naming the file or variable: FIFOs and
devices named as templates, rubrics, prompt files or CA bundles; a query in a URL; an API key
holding CR or LF."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from judge_specs import judge
from pydantic import ValidationError
from redjury_testing import redjury, write_jsonl

from redjury.judges.config import ConnectionSpec, EvaluationSpec, JudgeSpec
from redjury.judges.config_checks import MAX_NAMED_FILE_BYTES, read_named_file
from redjury.judges.panel import JudgePanelDetector
from redjury.judges.providers import provider_for
from redjury.judges.scoring.quality import Rubric

SECRET = "sk-query-secret-9"


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "template.txt"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "missing", "large", "binary"])
def test_a_named_file_must_be_a_small_regular_text_file(tmp_path, fifo, kind):
    path = {"fifo": fifo, "/dev/zero": Path("/dev/zero"), "missing": tmp_path / "nope.txt"}.get(
        kind, tmp_path / f"{kind}.txt"
    )
    if kind == "large":
        path.write_bytes(b"x" * (MAX_NAMED_FILE_BYTES + 1))
    elif kind == "binary":
        path.write_bytes(b"\xff\xfe\x00")
    expected = {
        "fifo": "is not a regular file",
        "/dev/zero": "is not a regular file",
        "missing": "cannot read",
        "large": "is larger than 16 MiB",
        "binary": "is not UTF-8 text",
    }[kind]
    with pytest.raises(ValueError, match=expected) as info:
        read_named_file(path, "scoring.template")
    assert str(info.value).startswith("scoring.template: ") and str(path) in str(info.value)


def _panel(spec: dict, tmp_path: Path) -> JudgePanelDetector:
    evaluation = EvaluationSpec.model_validate({"judges": [spec]})
    return JudgePanelDetector.from_spec(evaluation, cache_path=tmp_path / "c.sqlite")


def test_a_fifo_as_template_prompt_file_or_ca_bundle_is_a_load_error(tmp_path, fifo):
    url = "http://127.0.0.1:9/v1"
    cases = [
        (judge(url, scoring={"template": str(fifo)}), "scoring.template"),
        (judge(url, connection={"ca_bundle": str(fifo)}), "connection.ca_bundle"),
        (judge("https://127.0.0.1:9/v1", connection={"ca_bundle": "/dev/zero"}), "ca_bundle"),
    ]
    for spec, what in cases:
        with pytest.raises(ValueError, match="is not a regular file") as info:
            _panel(spec, tmp_path)
        assert what in str(info.value)


def test_a_fifo_as_llamaguard_prompt_file_is_a_load_error(tmp_path, fifo):
    spec = judge(
        "http://127.0.0.1:9/v1",
        kind="llamaguard",
        scoring={
            "template": "upstream",
            "completions": True,
            "upstream": {"prompt_file": str(fifo)},
        },
    )
    with pytest.raises(ValueError, match="prompt_file: .* is not a regular file"):
        _panel(spec, tmp_path)


def test_a_fifo_as_rubric_is_a_load_error(fifo):
    with pytest.raises(ValueError, match="rubric: .* is not a regular file"):
        Rubric(str(fifo))


def test_the_cli_stops_with_exit_2_naming_a_fifo_template(tmp_path, fifo):
    config = tmp_path / "c.yaml"
    spec = judge("http://127.0.0.1:9/v1", scoring={"template": str(fifo)})
    config.write_text(json.dumps({"evaluation": {"judges": [spec]}}))
    attempts = write_jsonl(tmp_path / "a.jsonl", [{"id": "1", "goal": "g", "outputs": ["o"]}])
    result = redjury(
        "run", attempts, "--config", config, "--out", tmp_path / "out", "--no-preflight"
    )
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert "is not a regular file" in line and str(fifo) in line


@pytest.mark.parametrize(
    "url",
    [
        f"https://gw.example/v1?api_key={SECRET}",
        "https://gw.example/v1?",
        f"https://gw.example/v1#{SECRET}",
    ],
)
def test_a_query_in_a_judge_url_is_refused_without_quoting_it(url):
    with pytest.raises(ValidationError) as info:
        ConnectionSpec.model_validate({"base_url": url})
    [error] = info.value.errors()
    assert "query or fragment" in error["msg"] and SECRET not in error["msg"]


def test_a_query_from_ollama_host_is_refused(monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", f"http://127.0.0.1:11434/?key={SECRET}")
    spec = JudgeSpec.model_validate({"name": "m", "connection": {"type": "OLLAMA"}})
    with pytest.raises(ValueError, match="query or fragment") as info:
        provider_for(spec)
    assert SECRET not in str(info.value)


@pytest.mark.parametrize("kind", ["OPENAI", "ANTHROPIC", "AZURE_OPENAI"])
@pytest.mark.parametrize("value", [f"{SECRET}\r\nX-Evil: 1", f"{SECRET}\n", f"{SECRET}\x1b[0m"])
def test_an_api_key_with_cr_or_lf_is_refused_naming_the_variable(monkeypatch, kind, value):
    monkeypatch.setenv("JUDGE_KEY", value)
    spec = JudgeSpec.model_validate(
        judge("http://127.0.0.1:9", type=kind, connection={"api_key_env": "JUDGE_KEY"})
    )
    with pytest.raises(ValueError, match="environment variable JUDGE_KEY holds") as info:
        provider_for(spec)
    assert SECRET not in str(info.value)
