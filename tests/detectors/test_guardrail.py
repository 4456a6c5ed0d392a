from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from redjury.attempts import Attempt
from redjury.detectors.base import Verdict
from redjury.detectors.guardrail import GuardrailDetector


class KeywordGuard:
    """Flags replies containing a keyword; returns the matching categories."""

    def __init__(self, words: dict[str, str] | None = None) -> None:
        self.words = words or {"bomb": "S9", "kill": "S1"}

    def flags(self, text: str) -> list[str]:
        return [cat for word, cat in self.words.items() if word in text]


class BoolGuard:
    def flags(self, text: str) -> bool:
        return "unsafe" in text


class FixedGuard:
    def __init__(self, result: object) -> None:
        self.result = result

    def flags(self, text: str):
        return self.result


class BrokenGuard:
    def flags(self, text: str) -> bool:
        raise RuntimeError("model not loaded")


def judge(guard: object, text: str = "text", hazards=("hate",)):
    d = GuardrailDetector.wrap(guard, hazards=list(hazards))  # type: ignore[arg-type]
    return d.detect(Attempt(id="a", outputs=[text]))[0]


def test_flag_categories_broke_through_and_are_evidence() -> None:
    finding = judge(KeywordGuard(), "how to build a bomb to kill")
    assert finding.verdict is Verdict.BROKE_THROUGH
    assert finding.score == 1.0
    assert finding.evidence == ("S9", "S1")


def test_no_categories_is_held() -> None:
    finding = judge(KeywordGuard(), "a recipe for bread")
    assert finding.verdict is Verdict.HELD
    assert finding.score == 0.0


def test_true_broke_through_false_held() -> None:
    assert judge(BoolGuard(), "unsafe").verdict is Verdict.BROKE_THROUGH
    assert judge(BoolGuard(), "fine").verdict is Verdict.HELD


def test_set_of_categories_is_sorted() -> None:
    assert judge(FixedGuard({"S2", "S10", "S1"})).evidence == ("S1", "S10", "S2")


def test_guardrail_exception_is_inconclusive() -> None:
    finding = judge(BrokenGuard())
    assert finding.verdict is Verdict.INCONCLUSIVE
    assert finding.score is None
    assert finding.reason == "guardrail raised RuntimeError: model not loaded"


@pytest.mark.parametrize("result", [None, "safe", 0.9])
def test_undecided_result_is_inconclusive_never_safe(result: object) -> None:
    finding = judge(FixedGuard(result))
    assert finding.verdict is Verdict.INCONCLUSIVE
    assert finding.reason is not None and type(result).__name__ in finding.reason


def test_attributed_hazards_are_in_details() -> None:
    for guard, text in ((KeywordGuard(), "bomb"), (KeywordGuard(), "bread"), (BrokenGuard(), "x")):
        finding = judge(guard, text, hazards=("violent crimes", "hate"))
        assert finding.details == {"hazards": ["violent crimes", "hate"]}


def test_null_output_is_inconclusive() -> None:
    d = GuardrailDetector.wrap(BoolGuard())
    assert d.detect(Attempt(id="a", outputs=[None]))[0].verdict is Verdict.INCONCLUSIVE


def test_wrap_rejects_an_object_without_flags() -> None:
    with pytest.raises(ValueError, match="flags"):
        GuardrailDetector.wrap(object())  # type: ignore[arg-type]


@pytest.fixture
def guard_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "redjury_test_guards.py").write_text(
        textwrap.dedent(
            """
            class Guard:
                def __init__(self, word="bomb"):
                    self.word = word
                def flags(self, text):
                    return [self.word] if self.word in text else []

            def make(word="bomb"):
                return Guard(word)

            def make_with(word="bomb", **settings):
                return Guard(word)

            INSTANCE = Guard("knife")
            NOT_A_GUARD = 42
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "redjury_test_guards", raising=False)
    return "redjury_test_guards"


def from_config(**config) -> GuardrailDetector:
    return GuardrailDetector(GuardrailDetector.Params(**config))


@pytest.mark.parametrize("attr", ["Guard", "make"])
def test_import_path_builds_guardrail_with_options(guard_module: str, attr: str) -> None:
    d = from_config(
        guardrail=f"{guard_module}:{attr}", options={"word": "poison"}, hazards=["hate"]
    )
    findings = d.detect(Attempt(id="a", outputs=["poison it", "bomb it"]))
    assert [f.verdict for f in findings] == [Verdict.BROKE_THROUGH, Verdict.HELD]
    assert findings[0].details == {"hazards": ["hate"]}


def test_import_path_may_name_a_ready_object(guard_module: str) -> None:
    d = from_config(guardrail=f"{guard_module}:INSTANCE")
    assert d.detect(Attempt(id="a", outputs=["a knife"]))[0].verdict is Verdict.BROKE_THROUGH


@pytest.mark.parametrize(
    "path",
    [
        "no_such_module_xyz:Guard",
        "redjury_test_guards:Missing",
        "redjury_test_guards.Guard",
        "redjury_test_guards:NOT_A_GUARD",
    ],
)
def test_bad_import_path_raises_naming_it(guard_module: str, path: str) -> None:
    # A malformed path fails at once; a module or name that is not there on first use (the
    # guardrail is imported and built only when the run needs it).
    with pytest.raises(ValueError, match=path.split(":")[0]):
        _ = from_config(guardrail=path).guardrail


def test_bad_options_raise_naming_the_path(guard_module: str) -> None:
    detector = from_config(guardrail=f"{guard_module}:make", options={"nope": 1})
    with pytest.raises(ValueError, match="redjury_test_guards:make"):
        detector.detect(Attempt(id="a", outputs=["x"]))


def test_hazards_are_configurable_not_fixed() -> None:
    assert GuardrailDetector.hazards == ()
    assert not GuardrailDetector.default_enabled


@pytest.mark.parametrize("path", [".foo:bar", "foo", "foo:", ":bar", "foo:bar:baz", "foo bar:x"])
def test_guardrail_must_be_an_absolute_import_path(path: str) -> None:
    from pydantic import ValidationError

    from redjury.detectors.guardrail import GuardrailParams

    with pytest.raises(ValidationError, match="absolute import path"):
        GuardrailParams(guardrail=path)


def test_guardrail_module_that_does_not_exist_fails_preflight() -> None:
    from redjury.detectors.guardrail import GuardrailParams

    params = GuardrailParams(guardrail="no_such_redjury_module.inner:factory")
    with pytest.raises(ValueError, match="no module 'no_such_redjury_module.inner'"):
        GuardrailDetector.preflight(params)


def test_factory_options_error_names_the_path_but_not_the_value() -> None:
    from redjury.detectors.guardrail import load_guardrail

    secret = "S3cr3tV4lue"
    with pytest.raises(ValueError) as info:
        load_guardrail(
            "redjury.judges.llamaguard:guardrail",
            {"name": "m", "connection": {"headers": {"X-Key": f"{secret}\r\nX-Evil: 1"}}},
        )
    message = str(info.value)
    assert "connection.headers" in message and "CR or LF" in message
    assert secret not in message and "input_value" not in message


@pytest.fixture
def tripwire_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A package whose import, and whose factory's call, each leave a file behind."""
    pkg = tmp_path / "redjury_tripwire"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        f"open({str(tmp_path / 'IMPORTED')!r}, 'w').close()\n", encoding="utf-8"
    )
    (pkg / "guards.py").write_text(
        textwrap.dedent(
            f"""
            class Guard:
                def flags(self, text):
                    return "bomb" in text

            def make():
                open({str(tmp_path / "CALLED")!r}, "w").close()
                return Guard()
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("redjury_tripwire", "redjury_tripwire.guards"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return tmp_path


def test_checking_a_config_runs_none_of_the_code_it_names(tripwire_package: Path) -> None:
    from redjury.config import parse_config

    config = parse_config(
        {"detectors": [{"type": "guardrail", "guardrail": "redjury_tripwire.guards:make"}]}
    )
    [detector] = config.detector_instances()
    assert not (tripwire_package / "IMPORTED").exists()
    assert not (tripwire_package / "CALLED").exists()
    assert detector.detect(Attempt(id="a", outputs=["a bomb"]))[0].verdict is Verdict.BROKE_THROUGH
    assert (tripwire_package / "IMPORTED").exists() and (tripwire_package / "CALLED").exists()


def test_a_submodule_of_a_missing_or_plain_module_fails_preflight(tripwire_package: Path) -> None:
    from redjury.detectors.guardrail import GuardrailParams, module_exists

    assert module_exists("redjury_tripwire.guards") and module_exists("json.decoder")
    assert not module_exists("redjury_tripwire.nope") and not module_exists("textwrap.inner")
    with pytest.raises(ValueError, match="no module 'redjury_tripwire.missing'"):
        GuardrailDetector.preflight(GuardrailParams(guardrail="redjury_tripwire.missing:f"))
    assert not (tripwire_package / "IMPORTED").exists()


def test_a_run_refused_for_its_input_never_calls_the_factory(tripwire_package: Path) -> None:
    import os

    from redjury_testing import redjury, write_jsonl

    config = tripwire_package / "c.yaml"
    config.write_text(
        'detectors: [{type: guardrail, guardrail: "redjury_tripwire.guards:make"}]\n',
        encoding="utf-8",
    )
    good = {"id": "a", "probe": "p", "outputs": ["a bomb"]}
    bad = write_jsonl(tripwire_package / "bad.jsonl", [good, "not json"])
    env = {"PYTHONPATH": os.pathsep.join([str(tripwire_package), os.environ.get("PYTHONPATH", "")])}
    refused = redjury("run", bad, "--config", config, "--out", tripwire_package / "o1", env=env)
    assert refused.returncode == 2 and "bad.jsonl:2" in refused.stderr
    assert not (tripwire_package / "CALLED").exists()
    accepted = write_jsonl(tripwire_package / "good.jsonl", [good])
    run = redjury("run", accepted, "--config", config, "--out", tripwire_package / "o2", env=env)
    assert run.returncode == 0, run.stderr
    assert (tripwire_package / "CALLED").exists()


@pytest.mark.parametrize(
    ("options", "credentials"),
    [
        ({"api_key": "gk-1", "word": "bomb"}, ["gk-1"]),
        ({"auth": {"user": "u", "password": "pw-2"}}, ["u", "pw-2"]),
        ({"client": {"headers": {"X-Team": "red"}, "timeout": 3}}, ["red"]),
        (
            {"tokens": ["a"], "Bearer-Token": "bt-3", "secret_list": ["s-4", "s-5"]},
            ["bt-3", "s-4", "s-5"],
        ),
        ({"api_key_env": "GUARD_KEY", "token_file": "/k", "keywords": ["x"], "word": "k"}, []),
    ],
)
def test_options_under_a_credential_s_name_are_credentials(
    guard_module: str, options: dict[str, object], credentials: list[str]
) -> None:
    """Masked everywhere, always: a factory's key given in `options` is no less a secret than
    a judge's (the report header's copy of the config held it in clear)."""
    from redjury.detectors.guardrail import credential_options

    assert list(credential_options(options)) == credentials
    detector = from_config(guardrail=f"{guard_module}:make_with", options={"word": "w", **options})
    assert detector.credentials() == credentials
