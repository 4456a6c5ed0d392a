"""Patterns a config supplies run in linear time (RE2), and what RE2 cannot express is
refused when the config loads; the built-in phrase lists, still on `re`, are shown safe."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from redjury.config import ConfigError, parse_config
from redjury.detectors.user_patterns import compile_linear

# Each of these took from a minute to forever on a few dozen characters with `re`; the
# subprocess gets a generous limit, far above what linear matching needs.
LONG_RUN_TIMEOUT_S = 120


def run_python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=LONG_RUN_TIMEOUT_S,
    )


def test_overlapping_alternations_in_phrase_entries_run_in_linear_time() -> None:
    done = run_python(
        """
        from redjury.attempts import Attempt
        from redjury.config import parse_config
        config = parse_config({"detectors": [
            {"type": "jailbreak_heuristic", "extra_refusals": ["re:(a|aa)+$", "re:(a|a)+$"],
             "extra_completions": ["re:(a|aa)+$"], "extra_exclusions": ["re:(a|a)+$"]},
            {"type": "refusal_consistency", "extra_refusals": ["re:(a|aa)+$"]},
        ]})
        reply = "Fine. " + "a" * 200_000 + "b"
        for detector in config.detector_instances():
            detector.detect(Attempt(id="x", goal="g", outputs=[reply, reply[:-1]]))
        print("done")
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"


def test_a_nested_repeat_in_a_schema_pattern_runs_in_linear_time(tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "pattern": "^(a+)+$"}},
        "patternProperties": {"^(b|bb)+$": {"type": "integer"}},
        "additionalProperties": False,
    }
    (tmp_path / "s.json").write_text(json.dumps(schema), encoding="utf-8")
    done = run_python(
        """
        import json, sys
        from redjury.attempts import Attempt
        from redjury.detectors.schema import SchemaConformanceDetector, SchemaParams
        detector = SchemaConformanceDetector(SchemaParams(schema=sys.argv[1]))
        replies = [
            json.dumps({"name": "a" * 100_000 + "!"}),
            json.dumps({"b" * 100_000 + "c": 1}),
            json.dumps({"name": "aaa", "bbbb": 2}),
        ]
        findings = detector.detect(Attempt(id="x", outputs=replies))
        print(json.dumps([f.verdict.value for f in findings]))
        """,
        str(tmp_path / "s.json"),
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["FAILED", "FAILED", "PASSED"]


def test_the_built_in_phrase_lists_scan_hostile_replies_in_linear_time() -> None:
    done = run_python(
        """
        from redjury.detectors.phrases import PhraseParams, phrase_matcher
        hostile = [
            "\\n" * 200_000, " " * 200_000, "\\n " * 100_000, "\\r\\n" * 100_000,
            "\\n\\u00a0" * 100_000, "- " * 100_000, "\\n- x" * 50_000, "**" * 100_000,
            "\\n#" * 100_000, "i " * 100_000, "i'm sorry " * 20_000, "\\n**" * 70_000,
            "sure, " * 30_000, "1. " * 60_000, "```" * 60_000,
        ]
        for version in ("v1", "v2", "v3"):
            matcher = phrase_matcher(PhraseParams(phrases=version))
            for text in hostile:
                matcher.scan(text)
        print("done")
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"


@pytest.mark.parametrize(
    ("pattern", "what"),
    [
        ("(no)\\1", "invalid escape sequence"),
        ("no(?=pe)", "invalid perl operator"),
        ("(?<!x)no", "invalid perl operator"),
        ("(?>no)+", "invalid perl operator"),
    ],
)
def test_a_phrase_pattern_re2_cannot_express_is_refused_naming_key_and_pattern(
    pattern: str, what: str
) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(
            {"detectors": [{"type": "refusal_consistency", "extra_refusals": [f"re:{pattern}"]}]}
        )
    message = str(info.value)
    assert "detectors[0].extra_refusals: entry 0:" in message
    assert f"{pattern!r} cannot be matched in linear time ({what}" in message


def test_an_invalid_pattern_is_named_invalid_not_unsupported() -> None:
    with pytest.raises(ValueError, match="not a valid regular expression"):
        compile_linear("(unclosed")


def test_a_schema_pattern_re2_cannot_express_is_refused_naming_file_and_place(
    tmp_path: Path,
) -> None:
    schema = {"properties": {"id": {"pattern": "^(?!admin)\\w+$"}}}
    (tmp_path / "s.json").write_text(json.dumps(schema), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        parse_config({"detectors": [{"type": "schema", "schema": str(tmp_path / "s.json")}]})
    message = str(info.value)
    assert "s.json" in message and "at /properties/id/pattern" in message
    assert "cannot be matched in linear time" in message


def test_a_property_named_pattern_is_not_taken_for_a_pattern(tmp_path: Path) -> None:
    schema = {
        "properties": {"pattern": {"type": "string"}},
        "enum": [{"pattern": "(?=x)"}],
        "patternProperties": {"^x(?:y|yy)+$": {"type": "integer"}},
    }
    (tmp_path / "s.json").write_text(json.dumps(schema), encoding="utf-8")
    parse_config({"detectors": [{"type": "schema", "schema": str(tmp_path / "s.json")}]})
