"""One error base for the whole package, the specific errors exported, every config choice
refused when the config loads, and a typed package whose names hide no subpackage."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import tomllib
import types
from pathlib import Path

import pytest

import redjury
from redjury.config import ConfigError, parse_config

ROOT = Path(__file__).resolve().parents[1]
# A stop signal is taken like Ctrl-C: it must stay outside `Exception`.
NOT_ERRORS = {"redjury.interrupts.StopSignal"}


def _exception_classes() -> list[type[BaseException]]:
    found = []
    for info in pkgutil.walk_packages(redjury.__path__, "redjury."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an integration whose tool is an extra not installed here
            continue
        for _, obj in inspect.getmembers(module, inspect.isclass):
            # Warnings are categories for `warnings.warn`, never raised as errors.
            error = issubclass(obj, BaseException) and not issubclass(obj, Warning)
            if error and obj.__module__ == info.name:
                found.append(obj)
    return found


def test_every_exception_redjury_defines_derives_from_redjury_error() -> None:
    classes = _exception_classes()
    assert len(classes) > 20
    outside = [
        f"{c.__module__}.{c.__qualname__}"
        for c in classes
        if not issubclass(c, redjury.RedjuryError)
        and f"{c.__module__}.{c.__qualname__}" not in NOT_ERRORS
    ]
    assert outside == []


@pytest.mark.parametrize(
    ("name", "other_base"),
    [
        ("AuditError", Exception),
        ("CompareError", ValueError),
        ("ConfigError", ValueError),
        ("InputError", ValueError),
        ("RunError", Exception),
        ("RunInterrupted", Exception),
    ],
)
def test_the_specific_errors_are_exported_and_keep_their_bases(
    name: str, other_base: type[BaseException]
) -> None:
    error = getattr(redjury, name)
    assert name in redjury.__all__
    assert issubclass(error, redjury.RedjuryError) and issubclass(error, other_base)


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ("majority", "'majority' is not threshold, zero_tolerance or pkg.module:Class"),
        ("json:JSONDecoder", "'json:JSONDecoder' is not an Evaluator subclass"),
        ("no_such_module_x:C", "cannot import 'no_such_module_x:C'"),
    ],
)
def test_a_bad_evaluator_type_stops_the_config_in_one_line(policy: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"evaluator": {"type": policy}})
    text = str(caught.value)
    assert text.startswith("config: evaluator.type: ") and message in text
    assert "\n" not in text


def test_the_built_in_policies_still_load() -> None:
    for policy in ("threshold", "zero_tolerance"):
        assert parse_config({"evaluator": {"type": policy}}).evaluator.type == policy


def test_import_redjury_audit_gives_the_subpackage() -> None:
    import redjury.audit

    assert isinstance(redjury.audit, types.ModuleType)
    assert redjury.audit.__name__ == "redjury.audit"
    assert callable(redjury.audit_judges)
    for name in redjury.__all__:  # no public name stands where a subpackage is
        value = getattr(redjury, name)
        sub = f"redjury.{name}"
        if importlib.util.find_spec(sub) is not None:
            assert isinstance(value, types.ModuleType), f"redjury.{name} hides {sub}"


def test_the_package_says_it_is_typed_and_ships_the_marker() -> None:
    assert (ROOT / "src" / "redjury" / "py.typed").is_file()
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in pyproject["tool"]["setuptools"]["package-data"]["redjury"]
