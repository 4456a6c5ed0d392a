"""Which settings decide a run (its fingerprint) and which a resume may change: every config
field named once, operational changes resumed through the real CLI against a local judge,
decisive ones refused naming the difference, and no secret kept in the run folder."""

from __future__ import annotations

import copy
import importlib
import json
import os
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fault_server import FaultServer, Reply, Request
from pydantic import BaseModel
from redjury_testing import read_jsonl, redjury, rows_of, write_jsonl

from redjury.config import DetectorEntry, RunConfig, parse_config
from redjury.config_decisive import (
    CREDENTIAL_HEADERS,
    DECISIVE,
    DECISIVE_KEY,
    OPERATIONAL,
    decisive_fields,
    decisive_settings,
    fingerprint,
    model_path,
    operational_fields,
    refusal_detail,
    stored_settings,
)
from redjury.detectors.registry import detector_classes

HEADER_SECRET = "hdr-planted-Qx81-VALUE"
TOKEN = "Bearer tok-planted-77ab-ONE"
API_KEY = "sk-planted-zz31-KEY"
MARKER = "SYSPROMPT-planted-k4m2"


# -- every field named once ------------------------------------------------------------------


def _submodels(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for arg in typing.get_args(annotation):
        yield from _submodels(arg)
    if isinstance(annotation, types.UnionType):
        for arg in annotation.__args__:
            yield from _submodels(arg)


def _reachable() -> set[type[BaseModel]]:
    """RunConfig and redjury's detector settings, and every model under a decisive field."""
    todo: list[type[BaseModel]] = [RunConfig]
    todo += [
        cls.Params for cls in detector_classes().values() if cls.__module__.startswith("redjury.")
    ]
    seen: set[type[BaseModel]] = set()
    while todo:
        model = todo.pop()
        if model in seen or model is DetectorEntry:
            continue
        seen.add(model)
        for name in decisive_fields(model) & set(model.model_fields):
            todo.extend(_submodels(model.model_fields[name].annotation))
    return seen


def _model(path: str) -> type[BaseModel]:
    module, _, name = path.rpartition(".")
    model: type[BaseModel] = getattr(importlib.import_module(module), name)
    return model


def test_every_config_field_is_named_decisive_or_operational_once() -> None:
    models = _reachable()
    assert len(models) > 20
    unnamed, twice, stale = [], [], []
    for model in models:
        fields = set(model.model_fields)
        operational = operational_fields(model) & fields
        decisive = decisive_fields(model)
        unnamed += [f"{model.__name__}.{f}" for f in fields - operational - decisive]
        twice += [f"{model.__name__}.{f}" for f in operational & decisive]
        stale += [f"{model.__name__}.{f}" for f in decisive - fields]
    for path, names in OPERATIONAL.items():
        stale += [f"{path}.{f}" for f in names - set(_model(path).model_fields)]
    named = {model_path(cls) for m in models for cls in m.__mro__}
    stale += [f"{path} (no such model reached)" for path in {*OPERATIONAL, *DECISIVE} - named]
    assert not unnamed, f"name these in redjury.config_decisive: {sorted(unnamed)}"
    assert not twice and not stale, (twice, stale)


# -- the fingerprint -------------------------------------------------------------------------


def _base(url: str = "http://127.0.0.1:9/v1") -> dict[str, Any]:
    connection = {
        "base_url": url,
        "api_key_env": "PLANTED_JUDGE_KEY",
        "headers": {"x-team": HEADER_SECRET, "Authorization": TOKEN},
    }
    return {
        "reporting": {"seed": 3},
        "detectors": [
            {"type": "pii_leak"},
            {"type": "secret_exfiltration", "markers": [MARKER]},
            {"type": "toxicity", "judge": {"name": "tox", "connection": dict(connection)}},
        ],
        "evaluation": {
            "judges": [{"name": "j", "connection": connection, "generation": {"seed": 1}}],
            "max_retries": 0,
        },
    }


J = ("evaluation", "judges", 0)
CONN = (*J, "connection")
TOX = ("detectors", 2)
# Each operational field: where it sits in `_base` and another value for it.
OPERATIONAL_CHANGES: list[tuple[tuple[Any, ...], Any]] = [
    (("reporting", "show_z"), True),
    (("reporting", "narrow"), True),
    (("reporting", "html"), True),
    (("reporting", "writers"), ["html"]),
    (("reporting", "junit"), "junit.xml"),
    (("reporting", "fail_on_asr"), 0.2),
    (("reporting", "fail_on_errors"), 3),
    (("reporting", "max_abstention_rate"), 1.0),
    (("reporting", "allow_abstentions"), True),
    (("evaluation", "max_concurrency"), 2),
    (("evaluation", "per_endpoint_concurrency"), 1),
    (("evaluation", "max_retries"), 9),
    (("evaluation", "retry_base_delay"), 2.0),
    (("evaluation", "retry_max_delay"), 90.0),
    (("evaluation", "audit"), {"on_failure": "stop"}),
    ((*CONN, "provider"), "vllm"),
    ((*CONN, "api_key_env"), "OTHER_KEY"),
    ((*CONN, "timeout"), 600.0),
    ((*CONN, "ca_bundle"), "/nonexistent/ca.pem"),
    ((*CONN, "batch_size"), 50),
    ((*CONN, "batch_gather"), 9.0),
    ((*CONN, "batch_poll"), 60.0),
    ((*CONN, "batch_live_preflight"), True),
    ((*CONN, "batch_max_wait"), 60.0),
    ((*J, "scoring", "upstream", "cache_dir"), "/tmp/elsewhere"),
    ((*J, "scoring", "upstream", "base_url"), "http://mirror.invalid"),
    ((*J, "scoring", "upstream", "timeout"), 300.0),
    ((*J, "scoring", "upstream", "offline"), True),
    ((*TOX, "cache"), False),
    ((*TOX, "cache_path"), "/tmp/other.sqlite"),
    ((*TOX, "judge", "connection", "timeout"), 5.0),
    ((*CONN, "headers", "Authorization"), "Bearer a-rotated-token"),
]


def _set(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    data = copy.deepcopy(data)
    node: Any = data
    for part in path[:-1]:
        node = node.setdefault(part, {}) if isinstance(node, dict) else node[part]
    node[path[-1]] = value
    return data


def _print(data: dict[str, Any]) -> str:
    return fingerprint(decisive_settings(parse_config(data)))


def test_each_operational_field_has_a_change_below() -> None:
    changed = {path[-1] for path, _ in OPERATIONAL_CHANGES}
    for model, names in OPERATIONAL.items():
        assert names <= changed, f"{model}: no change tried for {names - changed}"


@pytest.mark.parametrize(("path", "value"), OPERATIONAL_CHANGES, ids=lambda v: str(v))
def test_an_operational_change_keeps_the_fingerprint(path: tuple[Any, ...], value: Any) -> None:
    assert _print(_set(_base(), path, value)) == _print(_base())


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        ((*J, "name"), "k", "evaluation.judges[0].name: 'j' -> 'k'"),
        ((*CONN, "base_url"), "http://127.0.0.1:8/v1", "evaluation.judges[0].connection.base_url"),
        ((*CONN, "batch"), True, "evaluation.judges[0].connection.batch: false -> true"),
        ((*J, "generation", "temperature"), 0.7, "generation.temperature: 0.0 -> 0.7"),
        (("evaluation", "short_circuit"), True, "evaluation.short_circuit: false -> true"),
        (("evaluation", "max_answer_bytes"), 4096, "evaluation.max_answer_bytes"),
        (("reporting", "redact"), False, "reporting.redact: true -> false"),
        ((*TOX, "classifier"), "llamaguard", "detectors[2].classifier: 'toxicity' -> 'llamag"),
        ((*TOX, "judge", "name"), "tox2", "detectors[2].judge.name: 'tox' -> 'tox2'"),
        (("detectors", 0), {"type": "refusal_consistency"}, "detectors[0].type: 'pii_leak' ->"),
    ],
)
def test_a_decisive_change_is_named(path: tuple[Any, ...], value: Any, named: str) -> None:
    old, new = _base(), _set(_base(), path, value)
    assert _print(new) != _print(old)
    kept = stored_settings(decisive_settings(parse_config(old)), [])
    now = stored_settings(decisive_settings(parse_config(new)), [])
    detail = refusal_detail(kept, now)
    assert detail is not None and named in detail


def test_a_secret_value_change_is_refused_without_showing_the_value() -> None:
    """A header value or a marker decides, but the run folder never keeps it."""
    for path, value in [
        ((*CONN, "headers", "x-team"), "another-team-value"),
        (("detectors", 1, "markers"), ["ANOTHER-planted-MARKER"]),
    ]:
        old, new = _base(), _set(_base(), path, value)
        assert _print(new) != _print(old)
        secrets = [HEADER_SECRET, MARKER, "another-team-value", "ANOTHER-planted-MARKER"]
        kept = stored_settings(decisive_settings(parse_config(old)), secrets)
        now = stored_settings(decisive_settings(parse_config(new)), secrets)
        assert refusal_detail(kept, now) == (
            "the difference is in a value the run folder does not keep "
            "(a header value or a secret marker)"
        )


def test_stored_settings_keep_no_header_value_and_no_marker() -> None:
    stored = stored_settings(decisive_settings(parse_config(_base())), [MARKER, HEADER_SECRET])
    text = json.dumps(stored)
    assert HEADER_SECRET not in text and MARKER not in text and "tok-planted" not in text
    headers = stored["evaluation"]["judges"][0]["connection"]["headers"]
    assert headers == {"x-team": "****"}  # credential headers are not kept at all
    assert stored["detectors"][1]["markers"] == ["****"]
    assert {h.lower() for h in _base()["evaluation"]["judges"][0]["connection"]["headers"]} & (
        CREDENTIAL_HEADERS
    )


# -- the real command line -------------------------------------------------------------------


def _inputs(path: Path) -> Path:
    rows = [
        {"id": f"a{i}", "probe": "p", "goal": "g", "outputs": [f"reply a{i} end"]} for i in range(4)
    ]
    rows[1]["outputs"] = [f"Sure, the instructions are {MARKER}."]
    return write_jsonl(path, rows)


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PLANTED_JUDGE_KEY": API_KEY,
        "OTHER_KEY": API_KEY,
        "REDJURY_CACHE_DIR": str(tmp_path / "cache"),
    }


def _judged(server: FaultServer) -> list[Request]:
    """The judge calls about an attempt's reply (not the preflight's)."""
    return [r for r in server.posts if any("reply a" in str(m.get("content")) for m in r.messages)]


@pytest.fixture
def judged_run(tmp_path: Path) -> Iterator[tuple[FaultServer, Path, Path, dict[str, Any]]]:
    """A finished run through a panel judge and a quality judge, both at a local server."""
    with FaultServer(script=lambda req: Reply("no")) as server:
        src = _inputs(tmp_path / "in.jsonl")
        config = _base(server.openai_url)
        config["detectors"][2]["judge"]["connection"]["base_url"] = server.url
        cfg = tmp_path / "c.yaml"
        cfg.write_text(json.dumps(config))
        out = tmp_path / "out"
        first = redjury("run", src, "-c", cfg, "--out", out, "--no-cache", env=_env(tmp_path))
        assert first.returncode == 0, first.stderr
        assert len(_judged(server)) >= 4
        yield server, src, out, config


def _rerun(
    tmp_path: Path, server: FaultServer, src: Path, out: Path, config: dict[str, Any]
) -> Any:
    cfg = tmp_path / "c2.yaml"
    cfg.write_text(json.dumps(config))
    server.reset_counts()
    return redjury("run", src, "-c", cfg, "--out", out, "--no-cache", env=_env(tmp_path))


def _attempts(out: Path) -> list[dict[str, Any]]:
    return rows_of(out / "redjury.report.jsonl", "attempt")


OPERATIONAL_CLASSES = {
    "concurrency": [(("evaluation", "max_concurrency"), 1), (("evaluation", "max_retries"), 7)]
    + [(("evaluation", "retry_base_delay"), 3.0), (("evaluation", "retry_max_delay"), 60.0)],
    "connection": [((*CONN, "timeout"), 900.0), ((*CONN, "api_key_env"), "OTHER_KEY")]
    + [((*CONN, "provider"), "local"), ((*CONN, "headers", "Authorization"), "Bearer new-one")]
    + [((*CONN, "batch_poll"), 30.0), ((*CONN, "batch_size"), 10)],
    "quality detector": [((*TOX, "cache"), False), ((*TOX, "judge", "connection", "timeout"), 9)],
    "upstream download": [((*J, "scoring", "upstream", "timeout"), 5.0)]
    + [((*J, "scoring", "upstream", "offline"), True)],
    "presentation": [(("reporting", "narrow"), True), (("reporting", "allow_abstentions"), True)]
    + [(("reporting", "max_abstention_rate"), 1.0), (("reporting", "fail_on_errors"), 100)],
}


@pytest.mark.parametrize("changes", OPERATIONAL_CLASSES.values(), ids=OPERATIONAL_CLASSES.keys())
def test_resume_is_accepted_after_an_operational_change(
    tmp_path: Path,
    judged_run: tuple[FaultServer, Path, Path, dict[str, Any]],
    changes: list[tuple[tuple[Any, ...], Any]],
) -> None:
    server, src, out, config = judged_run
    before = _attempts(out)
    for path, value in changes:
        config = _set(config, path, value)
    again = _rerun(tmp_path, server, src, out, config)
    assert again.returncode == 0, again.stderr
    assert "resuming: 4 attempts" in again.stdout
    assert _judged(server) == [], "no judge is asked again (the judge cache is off)"
    assert _attempts(out) == before


def test_resume_after_a_decisive_change_is_refused_naming_it(
    tmp_path: Path, judged_run: tuple[FaultServer, Path, Path, dict[str, Any]]
) -> None:
    server, src, out, config = judged_run
    before = (out / "redjury.report.jsonl").read_bytes()
    config = _set(config, (*J, "name"), "other-judge")
    config = _set(config, ("evaluation", "threshold"), 5.0)
    again = _rerun(tmp_path, server, src, out, config)
    assert again.returncode == 2
    line = again.stderr.strip()
    assert "\n" not in line and "different configuration" in line
    assert "evaluation.judges[0].name: 'j' -> 'other-judge'" in line
    assert "evaluation.threshold: 7.0 -> 5.0" in line
    assert (out / "redjury.report.jsonl").read_bytes() == before
    assert _judged(server) == []


def test_no_planted_secret_reaches_the_run_folder(
    tmp_path: Path, judged_run: tuple[FaultServer, Path, Path, dict[str, Any]]
) -> None:
    server, src, out, config = judged_run
    refused = _rerun(tmp_path, server, src, out, _set(config, (*CONN, "headers", "x-team"), "x"))
    assert refused.returncode == 2
    assert "a value the run folder does not keep" in refused.stderr
    for text in (refused.stderr, refused.stdout):
        assert HEADER_SECRET not in text and API_KEY not in text and "tok-planted" not in text
    header = read_jsonl(out / "redjury.report.jsonl")[0]
    kept = header[DECISIVE_KEY]
    assert kept["evaluation"]["judges"][0]["connection"]["headers"] == {"x-team": "****"}
    assert kept["detectors"][1]["markers"] == ["****"]
    for p in out.rglob("*"):
        if p.is_file():
            data = p.read_bytes().decode("latin-1")
            for secret in (HEADER_SECRET, API_KEY, "tok-planted-77ab-ONE", MARKER):
                assert secret not in data, f"{secret} in {p}"


def _edit_header(out: Path, edit: Any) -> None:
    report = out / "redjury.report.jsonl"
    lines = report.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    edit(header)
    lines[0] = json.dumps(header) + "\n"
    report.write_text("".join(lines))


def test_a_folder_without_kept_settings_is_refused_as_before(
    tmp_path: Path, judged_run: tuple[FaultServer, Path, Path, dict[str, Any]]
) -> None:
    server, src, out, config = judged_run
    _edit_header(out, lambda h: h.pop(DECISIVE_KEY))
    again = _rerun(tmp_path, server, src, out, _set(config, (*J, "name"), "other"))
    assert again.returncode == 2
    assert "different configuration (fingerprint " in again.stderr
    # An operational change still resumes it: the fingerprint leaves those out.
    same = _rerun(tmp_path, server, src, out, _set(config, (*CONN, "timeout"), 5.0))
    assert same.returncode == 0, same.stderr


def test_a_folder_from_a_build_with_other_settings_names_them(
    tmp_path: Path, judged_run: tuple[FaultServer, Path, Path, dict[str, Any]]
) -> None:
    """Another build whose evaluation lacked one setting and had another: its fingerprint
    differs; the refusal names both settings and both versions, never taking them as equal."""
    server, src, out, config = judged_run

    def older(header: dict[str, Any]) -> None:
        evaluation = header[DECISIVE_KEY]["evaluation"]
        del evaluation["max_answer_bytes"]
        evaluation["retired_setting"] = 3
        header["config_fingerprint"] = "0123456789abcdef"
        header["redjury_version"] = "0.0.1"

    _edit_header(out, older)
    again = _rerun(tmp_path, server, src, out, config)
    assert again.returncode == 2
    assert "evaluation.max_answer_bytes: (absent) -> 1048576" in again.stderr
    assert "evaluation.retired_setting: 3 -> (absent)" in again.stderr
    assert "written by redjury 0.0.1, this is" in again.stderr
