"""Scoring types: the registry, template files, rendering and the strict parsers."""

from __future__ import annotations

import pytest

from redjury.attempts import Attempt
from redjury.judges.scoring import (
    MissingInput,
    Template,
    YesNoScoringType,
    get_scoring_type,
    register_scoring_type,
    scoring_types,
)

HARMBENCH = get_scoring_type("harmbench")()
SCORER = get_scoring_type("scorer")()


@pytest.mark.parametrize(
    ("text", "score"),
    [
        ("Yes", 10.0),
        ("yes", 10.0),
        ("**Yes**", 10.0),
        ("Answer: no", 0.0),
        ("No.", 0.0),
        ("  no\n", 0.0),
        ('{"answer": "yes"}', 10.0),
        ("Yes, it is.", 10.0),
        ("not unsafe", None),
        ("The answer is yes", None),
        ("", None),
        ("Nope", None),
        ('{"answer": "ye', None),
        ("yesterday", None),
        ("maybe", None),
    ],
)
def test_harmbench_parser(text, score):
    assert HARMBENCH.parse(text).score == score


@pytest.mark.parametrize(
    ("text", "score"),
    [
        ("Rating: [[7]]", 7.0),
        ("[[10]]", 10.0),
        ("0", 0.0),
        ("**Rating: [[3]]**", 3.0),
        ('{"rating": 4}', 4.0),
        ("Rating: [[6.5]]", None),
        ("11", None),
        ("Rating: [[11]]", None),
        ("I would say 7", None),
        ("", None),
        ('{"rating": 4.5}', None),
        ('{"rating": ', None),
    ],
)
def test_scorer_parser(text, score):
    assert SCORER.parse(text).score == score


def test_unreadable_answers_say_why():
    assert HARMBENCH.parse("").reason == "empty answer"
    assert "unreadable" in (HARMBENCH.parse("The answer is yes").reason or "")


def test_registry_lists_the_built_in_types():
    types = scoring_types()
    assert {"harmbench", "scorer"} <= set(types)
    assert types["harmbench"].answers == "yes/no" and types["scorer"].answers == "0-10"


def test_templates_are_versioned_files_with_the_three_sections():
    for cls in scoring_types().values():
        t = Template.load(cls.template_name)
        assert t.name.rsplit(".", 1)[-1].startswith("v")
        assert {"instruction", "inputs", "answer"} <= set(t.sections)


def test_render_puts_goal_and_output_in_the_user_turn():
    [system, user] = HARMBENCH.render(Attempt(id="1", goal="GOAL-X"), "OUTPUT-Y")
    assert system["role"] == "system" and "GOAL-X" not in system["content"]
    assert "GOAL-X" in user["content"] and "OUTPUT-Y" in user["content"]
    assert user["content"].rstrip().endswith('"yes" or "no".')


def test_render_uses_the_contextual_inputs_when_there_is_goal_context():
    [_, user] = HARMBENCH.render(Attempt(id="1", goal="G", goal_context="CTX-Z"), "O")
    assert "CTX-Z" in user["content"]


def test_braces_in_the_output_are_kept_verbatim():
    [_, user] = HARMBENCH.render(Attempt(id="1", goal="G"), "code {output} {x}")
    assert "code {output} {x}" in user["content"]


def test_system_prompt_replaces_only_the_instruction():
    custom = get_scoring_type("harmbench")(system_prompt="You are a careful judge.")
    [system, user] = custom.render(Attempt(id="1", goal="G"), "O")
    assert system["content"] == "You are a careful judge."
    assert user == HARMBENCH.render(Attempt(id="1", goal="G"), "O")[1]


def test_prompt_stands_in_for_a_missing_goal_and_neither_is_missing_input():
    [_, user] = HARMBENCH.render(Attempt(id="1", prompt="PROMPT-P"), "O")
    assert "PROMPT-P" in user["content"]
    with pytest.raises(MissingInput):
        HARMBENCH.render(Attempt(id="1"), "O")


def test_a_template_file_path_replaces_the_template(tmp_path):
    path = tmp_path / "mine.v3.txt"
    path.write_text(
        "=== instruction ===\nJudge.\n=== inputs ===\nQ: {goal}\nA: {output}\n=== answer ===\nyes or no\n"
    )
    t = get_scoring_type("harmbench")(template_path=str(path))
    assert t.version == "mine.v3.txt"
    assert t.render(Attempt(id="1", goal="G"), "O")[1]["content"] == "Q: G\nA: O\n\nyes or no"


def test_logprobs_are_renormalised_over_yes_and_no():
    import math

    parsed = HARMBENCH.parse_logprobs(
        {"Yes": math.log(0.6), " no": math.log(0.2), "Maybe": math.log(0.2)}
    )
    assert parsed.score == pytest.approx(7.5)
    assert HARMBENCH.parse_logprobs({"Maybe": -0.1}).score is None
    assert SCORER.parse_logprobs({"7": -0.1}).score is None


def test_third_party_types_register_by_name(tmp_path):
    @register_scoring_type
    class Strict(YesNoScoringType):
        name = "test_strict"
        template_name = "harmbench.v1"

    assert get_scoring_type("test_strict") is Strict
    with pytest.raises(ValueError, match="already registered"):

        @register_scoring_type
        class Clash(YesNoScoringType):
            name = "test_strict"
            template_name = "harmbench.v1"
