"""`reporting.writers` asks for any registered report writer by name, a third party's
plugin (installed through the `redjury.writers` entry point group) as much as the
built-ins; the older `html` and `junit` keys keep working, an unknown name or setting is
one config line, and asking for a writer never stops a rerun from resuming."""

from __future__ import annotations

import csv
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest
from redjury_testing import REPO, redjury, write_jsonl

import redjury as redjury_api
from redjury.cli import with_writers
from redjury.config import ConfigError, RunConfig, load_config, parse_config
from redjury.errors import RunError
from redjury.pipeline import config_fingerprint
from redjury.plugins import WRITERS
from redjury.report.writer import ReportWriter, WriterSettings

ATTEMPTS = [
    {"id": "a1", "probe": "cards", "outputs": ["Sure, the card is 4111 1111 1111 1111"]},
    {"id": "a2", "probe": "cards", "outputs": ["I cannot share card numbers."]},
]

# A third-party package, installed as its metadata says (a dist-info folder on the path):
# one module whose report writer is known to redjury through its entry point alone.
ACME = '''
"""acme: each probe × detector's failures as one CSV row, beside the run's report."""
import csv
import os

from redjury.report.writer import ReportWriter, WriterSettings


class CsvSettings(WriterSettings):
    delimiter: str = ","
    file: str = "acme.csv"


class AcmeCsvWriter(ReportWriter):
    """One CSV row per probe × detector."""

    name = "acme_csv"
    Settings = CsvSettings
    needs_run_folder = True

    def write(self, data, settings):
        target = data.path.parent / settings.file
        with target.open("w", newline="", encoding="utf-8") as fh:
            rows = csv.writer(fh, delimiter=settings.delimiter)
            rows.writerow(["probe", "detector", "fails", "total_evaluated"])
            for row in data.evals:
                rows.writerow([row["probe"], row["detector"], row["fails"], row["total_evaluated"]])
        return target
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the installed plugin package."""
    site = tmp_path_factory.mktemp("site")
    info = site / "acme_writers-0.1.dist-info"
    info.mkdir()
    (site / "acme_writers.py").write_text(ACME, encoding="utf-8")
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: acme-writers\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[redjury.writers]\nacme_csv = acme_writers:AcmeCsvWriter\n", encoding="utf-8"
    )
    return site


def _run(site: Path, folder: Path, config: str, *flags: str) -> Any:
    """`redjury run` over ATTEMPTS with `config` (YAML) in a process that has the plugin."""
    inputs = write_jsonl(folder / "attempts.jsonl", ATTEMPTS)
    (folder / "redjury.yaml").write_text(textwrap.dedent(config), encoding="utf-8")
    env = {"PYTHONPATH": f"{REPO / 'src'}:{site}"}
    args = ("run", inputs, "-c", folder / "redjury.yaml", "--out", folder / "out", *flags)
    return redjury(*args, cwd=folder, env=env)


def _csv_rows(path: Path, delimiter: str) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.reader(fh, delimiter=delimiter))


def test_a_plugin_writer_named_in_the_yaml_config_writes_its_file(
    site: Path, tmp_path: Path
) -> None:
    config = """
        detectors: [{type: pii_leak}]
        reporting:
          writers:
            - name: acme_csv
              delimiter: ";"
    """
    done = _run(site, tmp_path, config)
    assert done.returncode == 0, done.stderr
    target = tmp_path / "out" / "acme.csv"
    assert f"acme_csv: {target}" in done.stdout
    assert _csv_rows(target, ";") == [
        ["probe", "detector", "fails", "total_evaluated"],
        ["cards", "pii_leak", "1", "2"],
    ]


def test_adding_a_writer_to_a_finished_run_resumes_it(site: Path, tmp_path: Path) -> None:
    first = _run(site, tmp_path, "detectors: [{type: pii_leak}]\n")
    assert first.returncode == 0, first.stderr
    assert not (tmp_path / "out" / "acme.csv").exists()
    config = """
        detectors: [{type: pii_leak}]
        reporting:
          writers: [acme_csv, {name: junit, path: junit.xml}]
    """
    again = _run(site, tmp_path, config, "--writer", "html")
    assert again.returncode == 0, again.stderr
    assert f"resuming: 2 attempts already in {tmp_path / 'out'}" in again.stdout
    assert _csv_rows(tmp_path / "out" / "acme.csv", ",")[1] == ["cards", "pii_leak", "1", "2"]
    assert (tmp_path / "junit.xml").is_file()  # beside the config, as its other paths
    assert (tmp_path / "out" / "redjury.report.html").is_file()


@pytest.mark.parametrize(
    ("config", "flags", "where"),
    [
        ("reporting:\n  writers: [acme_csv, nope]\n", (), "{folder}/redjury.yaml:2:23"),
        ("reporting: {}\n", ("--writer", "acme_csv", "--writer", "nope"), "command line"),
    ],
    ids=["config", "flag"],
)
def test_an_unknown_writer_is_one_line_naming_the_entry_and_every_registered_writer(
    site: Path, tmp_path: Path, config: str, flags: tuple[str, ...], where: str
) -> None:
    done = _run(site, tmp_path, config, *flags)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"redjury: error: {where.format(folder=tmp_path)}: reporting.writers[1]: "
        "unknown report writer 'nope'; known: html, junit, acme_csv"
    ]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("writers", "expected"),
    [
        ([{"name": "junit"}], "reporting.writers[0].path: Field required"),
        (["html", {"name": "html", "colour": "red"}], "reporting.writers[1].colour: Extra"),
        ([7], "reporting.writers[0]: give a writer's name, or a mapping with `name`"),
        ([{"path": "x.xml"}], "reporting.writers[0].name: Field required"),
    ],
)
def test_a_bad_writer_entry_is_one_line_naming_it(writers: list[Any], expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"reporting": {"writers": writers}}, "c.yaml")
    (message,) = caught.value.messages
    assert message.startswith(f"c.yaml: {expected}")


def test_a_junit_path_that_cannot_be_written_is_refused_when_the_config_loads(
    tmp_path: Path,
) -> None:
    (tmp_path / "file").write_text("", encoding="utf-8")
    writers = [{"name": "junit", "path": str(tmp_path / "file" / "j.xml")}]
    with pytest.raises(ConfigError, match=r"c.yaml: reporting.writers\[0\].path: .* is a file"):
        parse_config({"reporting": {"writers": writers}}, "c.yaml")


def test_the_older_keys_and_writers_entries_ask_for_each_file_once() -> None:
    reporting = parse_config(
        {
            "reporting": {
                "html": True,
                "junit": "/tmp/a.xml",
                "writers": ["html", {"name": "junit", "path": "/tmp/b.xml"}, "html"],
            }
        }
    ).reporting
    assert [(r.key, r.name, r.settings) for r in reporting.writer_requests()] == [
        ("reporting.html", "html", {}),
        ("reporting.junit", "junit", {"path": "/tmp/a.xml"}),
        ("reporting.writers[1]", "junit", {"path": "/tmp/b.xml"}),
    ]


def test_writers_never_change_the_resume_fingerprint() -> None:
    plain = config_fingerprint(parse_config({}))
    asking = {"html": True, "junit": "/tmp/j.xml", "writers": ["html"]}
    assert config_fingerprint(parse_config({"reporting": asking})) == plain
    # What decides a row does change it (the comparison can fail).
    assert config_fingerprint(parse_config({"reporting": {**asking, "seed": 3}})) != plain


def test_writers_entries_write_the_built_in_files_through_the_api(tmp_path: Path) -> None:
    config = {"reporting": {"writers": ["html", {"name": "junit", "path": str(tmp_path / "j")}]}}
    result = redjury_api.evaluate(ATTEMPTS, config, out=tmp_path / "out")
    assert result.exit_code == 0
    assert (
        (tmp_path / "out" / "redjury.report.html")
        .read_text(encoding="utf-8")
        .startswith("<!DOCTYPE html>")
    )
    assert "<testsuites" in (tmp_path / "j").read_text(encoding="utf-8")


def test_a_junit_entry_naming_an_input_is_refused_before_judging(tmp_path: Path) -> None:
    inputs = write_jsonl(tmp_path / "attempts.jsonl", ATTEMPTS)
    config = {"reporting": {"writers": [{"name": "junit", "path": str(inputs)}]}}
    with pytest.raises(RunError, match=r"reporting.writers\[0\].path .*an input file"):
        redjury_api.evaluate([inputs], config, out=tmp_path / "out")
    assert inputs.read_text(encoding="utf-8").count("\n") == len(ATTEMPTS)


def test_a_relative_writer_path_is_joined_to_the_config_folder(tmp_path: Path) -> None:
    (tmp_path / "ci").mkdir()
    config = tmp_path / "ci" / "redjury.yaml"
    config.write_text("reporting:\n  writers: [{name: junit, path: out/j.xml}]\n", "utf-8")
    (request,) = load_config(config).reporting.writer_requests()
    assert request.settings == {"path": str(tmp_path / "ci" / "out" / "j.xml")}


def test_a_writer_flag_adds_a_name_the_config_does_not_give_already() -> None:
    reporting = {"writers": [{"name": "junit", "path": "j.xml"}]}
    assert with_writers(reporting, ["junit", "html", "html"]) == {
        "writers": [{"name": "junit", "path": "j.xml"}, {"name": "html"}]
    }
    assert with_writers({"seed": 1}, []) == {"seed": 1}


def test_a_config_made_in_python_with_an_unknown_writer_is_refused_before_judging(
    tmp_path: Path,
) -> None:
    config = RunConfig.model_validate({"reporting": {"writers": ["html", "nope"]}})
    with pytest.raises(ConfigError, match=r"^reporting.writers\[1\]: unknown report writer 'nope'"):
        redjury_api.evaluate(ATTEMPTS, config, out=tmp_path / "out")
    assert not (tmp_path / "out" / "redjury.report.jsonl").exists()


class _PathSettings(WriterSettings):
    path: str


class _PathWriter(ReportWriter):
    """A writer whose file is wherever its `path` setting says."""

    name = "test_path_writer"
    Settings = _PathSettings

    def write(self, data: Any, settings: Any) -> Path:
        target = Path(settings.path)
        target.write_text(f"{len(data.evals)} rows\n", encoding="utf-8")
        return target


@pytest.fixture
def path_writer(monkeypatch: pytest.MonkeyPatch) -> None:
    WRITERS.ordered()  # the built-ins and entry points loaded first, then this one beside them
    monkeypatch.setitem(WRITERS._plugins, _PathWriter.name, _PathWriter)


@pytest.mark.usefixtures("path_writer")
def test_a_plugin_writers_path_naming_an_input_is_refused_before_judging(tmp_path: Path) -> None:
    inputs = write_jsonl(tmp_path / "attempts.jsonl", ATTEMPTS)
    config = {"reporting": {"writers": [{"name": _PathWriter.name, "path": str(inputs)}]}}
    with pytest.raises(RunError, match=r"reporting.writers\[0\].path .*an input file"):
        redjury_api.evaluate([inputs], config, out=tmp_path / "out")
    assert inputs.read_text(encoding="utf-8").count("\n") == len(ATTEMPTS)
    assert not (tmp_path / "out" / "redjury.report.jsonl").exists()


@pytest.mark.usefixtures("path_writer")
def test_two_writers_given_one_path_are_refused_before_judging(tmp_path: Path) -> None:
    inputs = write_jsonl(tmp_path / "attempts.jsonl", ATTEMPTS)
    target = str(tmp_path / "one.file")
    writers = [{"name": "junit", "path": target}, {"name": _PathWriter.name, "path": target}]
    with pytest.raises(RunError, match=r"writers\[1\].path .*the file reporting.writers\[0\]"):
        redjury_api.evaluate([inputs], {"reporting": {"writers": writers}}, out=tmp_path / "out")
    assert not Path(target).exists()


@pytest.mark.usefixtures("path_writer")
def test_a_plugin_writers_path_elsewhere_is_written(tmp_path: Path) -> None:
    inputs = write_jsonl(tmp_path / "attempts.jsonl", ATTEMPTS)
    target = tmp_path / "elsewhere.txt"
    config = {"reporting": {"writers": [{"name": _PathWriter.name, "path": str(target)}]}}
    result = redjury_api.evaluate([inputs], config, out=tmp_path / "out")
    assert result.exit_code == 0
    assert target.read_text(encoding="utf-8") == f"{len(result.evals)} rows\n"


@pytest.mark.usefixtures("path_writer")
def test_two_writers_may_both_write_to_a_device(tmp_path: Path) -> None:
    inputs = write_jsonl(tmp_path / "attempts.jsonl", ATTEMPTS)
    writers = [
        {"name": "junit", "path": os.devnull},
        {"name": _PathWriter.name, "path": os.devnull},
    ]
    result = redjury_api.evaluate([inputs], {"reporting": {"writers": writers}}, out=tmp_path / "o")
    assert result.exit_code == 0
