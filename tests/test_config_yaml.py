"""Reading a config's YAML: errors give file:line:column and quote no text, aliases and
nesting are bounded, and any document whatever gives a config or a ConfigError."""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from redjury.config import ConfigError, RunConfig, load_config
from redjury.config_yaml import MAX_DEPTH, MAX_VALUES

SECRET = "S3cr3tV4lue"


def load_text(text: str | bytes) -> RunConfig:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "c.yaml"
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        return load_config(path)


def error_of(text: str | bytes) -> str:
    with pytest.raises(ConfigError) as info:
        load_text(text)
    (message,) = info.value.messages
    return message.split("c.yaml", 1)[1]


def test_syntax_error_gives_position_and_no_snippet() -> None:
    text = f"evaluation:\n  judges:\n  - name: m\n    connection:\n      headers: {{X-Key: {SECRET}: x}}\n"
    message = error_of(text)
    assert message.startswith(":5:") and "not valid YAML" in message
    assert SECRET not in message and "^" not in message


def test_unclosed_quote_names_where_the_scalar_started() -> None:
    message = error_of(f'headers:\n  X-Key: "{SECRET}\n')
    assert "from line 2 column 10" in message and SECRET not in message


def test_validation_error_names_line_column_and_key_path() -> None:
    message = error_of("reporting:\n  show_z: true\n  bootstrap_num_iterations: lots\n")
    assert message.startswith(":3:3: reporting.bootstrap_num_iterations:")


def test_validation_error_never_echoes_the_value() -> None:
    message = error_of(
        f"evaluation:\n  judges:\n  - name: m\n    connection:\n      timeout: {SECRET}\n"
    )
    assert "evaluation.judges[0].connection.timeout" in message
    assert SECRET not in message and "input_value" not in message


def test_unknown_key_points_at_the_key() -> None:
    assert error_of("reporting:\n\n  bootstrap_iterations: 5\n").startswith(
        ":3:3: reporting.bootstrap_iterations: Extra inputs are not permitted"
    )


def test_non_utf8_names_line_and_column() -> None:
    assert error_of(b"a: 1\nb: caf\xe9\n") == ":2:7: not UTF-8 text; save the file as UTF-8"


def test_alias_bomb_is_refused_without_expanding() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 30)]
    message = error_of("\n".join(lines) + "\n")
    assert f"aliases expand to more than {MAX_VALUES} values" in message


def test_modest_aliases_still_work() -> None:
    cfg = load_text(
        "evaluation:\n  judges:\n"
        "  - name: a\n    connection: &conn {base_url: 'http://h/v1', timeout: 5}\n"
        "  - name: b\n    connection: *conn\n"
    )
    assert [j.connection.timeout for j in cfg.evaluation.judges] == [5.0, 5.0]


def test_self_referring_alias_is_refused() -> None:
    assert "alias refers to the mapping or list that holds it" in error_of(
        "evaluation: &e {judges: [*e]}\n"
    )


def test_deep_nesting_is_refused() -> None:
    depth = MAX_DEPTH + 5
    text = "evaluation: {judges: [{name: m, options: {x: " + "[" * depth + "]" * depth + "}}]}\n"
    assert f"nested deeper than {MAX_DEPTH} levels" in error_of(text)


def test_very_deep_nesting_is_a_config_error() -> None:
    assert "nested too deeply" in error_of("a: " + "[" * 5000 + "]" * 5000 + "\n")


def test_unreadable_value_is_a_position() -> None:
    assert error_of("reporting:\n  seed: " + "9" * 5000 + "\n").startswith(":2:9: not valid YAML")


def test_empty_file_gives_the_defaults() -> None:
    assert load_text("").reporting.bootstrap_num_iterations == 10000


CONFIG_KEYS = [
    "detectors", "type", "evaluator", "threshold", "reporting", "evaluation", "judges",
    "name", "connection", "base_url", "headers", "timeout", "generation", "options",
    "scoring", "seed", "fail_on_asr", "junit", "calibration", "retry_base_delay",
    "bootstrap_num_iterations", "audit", "dataset", "schema", "extra_refusals",
]  # fmt: skip
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | st.text(max_size=20)
    | st.sampled_from(CONFIG_KEYS)
)
trees = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(CONFIG_KEYS) | st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=30,
)
LOAD_SETTINGS = settings(
    max_examples=150,
    deadline=timedelta(seconds=10),
    suppress_health_check=[HealthCheck.too_slow],
)


def loads_or_fails_cleanly(text: str | bytes) -> None:
    try:
        assert isinstance(load_text(text), RunConfig)
    except ConfigError as exc:
        assert exc.messages and all("\n" not in m for m in exc.messages)


@LOAD_SETTINGS
@given(st.text(max_size=300))
def test_any_text_gives_a_config_or_a_config_error(text: str) -> None:
    loads_or_fails_cleanly(text)


@LOAD_SETTINGS
@given(st.binary(max_size=300))
def test_any_bytes_give_a_config_or_a_config_error(raw: bytes) -> None:
    loads_or_fails_cleanly(raw)


@LOAD_SETTINGS
@given(trees)
@example({"\n": None})
@example({"reporting": {"\x1b[31m": 1}})
def test_any_yaml_tree_gives_a_config_or_a_config_error(tree: object) -> None:
    loads_or_fails_cleanly(yaml.safe_dump(tree))


@LOAD_SETTINGS
@given(
    st.lists(
        st.sampled_from(["&a ", "*a", "[", "]", "{", "}", ", ", ": ", "x", "\n  ", "- "]),
        max_size=40,
    )
)
def test_any_anchor_and_alias_soup_gives_a_config_or_a_config_error(parts: list[str]) -> None:
    loads_or_fails_cleanly("evaluation:\n  judges:\n  - name: m\n    options: " + "".join(parts))


def test_control_character_gives_its_position() -> None:
    assert (
        error_of("a: 1\nb: x\x01\n")
        == ":2:5: not valid YAML: control character #x01 is not allowed"
    )


def test_endless_config_file_is_refused() -> None:
    with pytest.raises(ConfigError, match="larger than 16 MiB"):
        load_config("/dev/zero")


def test_syntax_error_names_the_key_path_it_is_under() -> None:
    text = f'evaluation:\n  judges:\n  - name: m\n    connection:\n      headers:\n        X-Key: "{SECRET}\n'
    message = error_of(text)
    assert message.startswith(":7:1: evaluation.judges[0].connection.headers.X-Key: not valid YAML")
    assert SECRET not in message


def test_syntax_error_in_a_flow_list_names_the_item() -> None:
    message = error_of("reporting:\n  seed: 1\n  hit_at_k: [1, 2\nx: 1\n")
    assert message.startswith(":4:2: reporting.hit_at_k[2]: not valid YAML")


def test_duplicate_key_is_refused_at_its_second_place() -> None:
    message = error_of("reporting:\n  seed: 1\n  show_z: true\n  seed: 2\n")
    assert message == ":4:3: the key 'seed' appears twice in one mapping"


def test_merge_keys_still_work() -> None:
    cfg = load_text(
        "evaluation:\n  judges:\n"
        "  - name: a\n    connection: &b {timeout: 5}\n"
        "  - name: c\n    connection: {<<: *b, base_url: 'http://h/v1'}\n"
    )
    assert [j.connection.timeout for j in cfg.evaluation.judges] == [5.0, 5.0]


def test_unknown_key_with_a_newline_stays_on_one_line() -> None:
    assert error_of('reporting:\n  "a\\nb": 1\n') == (
        ":2:3: reporting.'a\\nb': Extra inputs are not permitted"
    )
