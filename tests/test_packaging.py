"""The package as users get it: one version, `redjury --version`, typed, its data declared.

The built wheel itself is installed and run in a clean virtualenv by `.ci/check_wheel.sh`.
"""

from __future__ import annotations

import tomllib

from redjury_testing import REPO, redjury

import redjury as package


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def test_version_prints_the_package_version() -> None:
    proc = redjury("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"redjury {package.__version__}\n"


def test_the_version_is_written_in_one_place() -> None:
    config = _pyproject()
    assert "version" not in config["project"]
    assert "version" in config["project"]["dynamic"]
    assert config["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "redjury.version.__version__"
    }


def test_the_wheel_declares_py_typed_and_the_resources() -> None:
    data = _pyproject()["tool"]["setuptools"]["package-data"]["redjury"]
    assert {"py.typed", "resources/**/*"} <= set(data)
    assert (REPO / "src" / "redjury" / "py.typed").is_file()


def test_the_changelog_has_an_unreleased_section_first() -> None:
    headings = [
        ln
        for ln in (REPO / "CHANGELOG.md").read_text(encoding="utf-8").splitlines()
        if ln.startswith("## ")
    ]
    assert headings[0] == "## Unreleased"
    assert any(h.startswith(f"## {package.__version__} - ") for h in headings)
