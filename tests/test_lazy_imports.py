"""A run pays in imports only for what it configures: `import redjury` and a
detectors-only run load no HTTP client, no Ray, no pandas, no inspect_ai, and only the
detector modules the run names (each checked in a fresh interpreter)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
EXAMPLES = ROOT / "examples"
HEAVY = ("aiohttp", "ray", "pandas", "inspect_ai")
UNUSED_DETECTORS = (
    "redjury.detectors.guardrail",
    "redjury.detectors.schema",
    "redjury.judges.panel",
    "redjury.judges.agentic",
)
PROBE = """
import json, sys
{body}
print(json.dumps(sorted(sys.modules)))
"""
CLI_RUN = """
import sys
from redjury.cli import main
sys.argv = ["redjury", *{argv!r}]
try:
    main()
except SystemExit as exc:
    assert exc.code in (0, 1, None), exc.code
"""


def modules_after(body: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.format(body=body)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_import_redjury_loads_no_heavy_dependency_nor_detector() -> None:
    loaded = modules_after("import redjury")
    assert "redjury" in loaded
    assert not loaded & {*HEAVY, *UNUSED_DETECTORS, "redjury.detectors.jailbreak"}


@pytest.mark.parametrize(
    "config", [None, EXAMPLES / "redjury.yaml"], ids=["default detectors", "example config"]
)
def test_a_detectors_only_run_loads_only_its_detectors(config: Path | None, tmp_path: Path) -> None:
    argv = ["run", str(EXAMPLES / "attempts.jsonl"), "-o", str(tmp_path / "out"), "--no-colour"]
    if config is not None:
        argv += ["-c", str(config)]
    loaded = modules_after(CLI_RUN.format(argv=argv))
    # The run happened and loaded what it uses.
    assert (tmp_path / "out" / "redjury.report.jsonl").is_file()
    assert {"redjury.detectors.jailbreak", "redjury.detectors.pii"} <= loaded
    assert not loaded & {*HEAVY, *UNUSED_DETECTORS}
