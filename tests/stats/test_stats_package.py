"""`redjury.stats` resolves its names on first use, so importing it does not load numpy."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import redjury.stats


def test_every_public_name_resolves_to_what_its_module_defines() -> None:
    import importlib

    for name in redjury.stats.__all__:
        value = getattr(redjury.stats, name)
        home = getattr(value, "__module__", None) or ""
        if home.startswith("redjury.stats."):
            assert getattr(importlib.import_module(home), name) is value, name
    assert callable(redjury.stats.hit_at_k)


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        redjury.stats.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_hit_at_k_stays_the_function_after_its_submodule_is_imported() -> None:
    code = textwrap.dedent(
        """
        import redjury.stats.hit_at_k
        from redjury.stats import hit_at_k
        print(hit_at_k([(2, 1)], [1])[1]["score"])
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout) == 0.5


def test_importing_the_cli_and_the_reports_does_not_load_numpy() -> None:
    """A run forks its workers before numpy is loaded; it loads only for the first interval."""
    code = textwrap.dedent(
        """
        import sys
        import redjury.cli, redjury.report.digest, redjury.report.terminal
        import redjury.report.html, redjury.report.junit, redjury.report.summary
        from redjury.stats import CISettings, Correction
        CISettings(); Correction(0.9, 0.9, "config")
        print("numpy" in sys.modules)
        from redjury.stats import confidence_fields
        print("numpy" in sys.modules)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True"]
