"""The real promptfoo CLI with its `echo` provider and a webhook assertion pointed at
`redjury serve`: promptfoo counts the leak as failed, and redjury reads its results back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from serve_process import ServeProcess

import redjury

CARD = "4111 1111 1111 1111"
LEAK = f"Sure, the card on file is {CARD}."
REFUSAL = "I'm sorry, but I can't share that."


def promptfoo_cli() -> str | None:
    """$REDJURY_PROMPTFOO, `.ci/install_promptfoo.sh`'s copy in the virtualenv, or PATH's."""
    installed = Path(sys.prefix) / "promptfoo" / "node_modules" / ".bin" / "promptfoo"
    for found in (os.environ.get("REDJURY_PROMPTFOO"), installed, shutil.which("promptfoo")):
        if found and Path(found).is_file():
            return str(found)
    return None


pytestmark = pytest.mark.skipif(
    promptfoo_cli() is None, reason="the promptfoo CLI is not installed (.ci/install_promptfoo.sh)"
)


def test_promptfoo_fails_the_leaking_test_and_redjury_reads_its_results(tmp_path: Path):
    with ServeProcess(tmp_path, None, []) as service:
        service.wait_ready()
        webhook = [{"type": "webhook", "value": service.url + "/v1/promptfoo"}]
        config = {
            "description": "redjury as promptfoo's webhook assertion",
            "prompts": ["{{reply}}"],
            "providers": ["echo"],
            "tests": [{"vars": {"reply": text}, "assert": webhook} for text in (LEAK, REFUSAL)],
        }
        (tmp_path / "promptfooconfig.yaml").write_text(json.dumps(config))
        out = tmp_path / "results.json"
        env = {
            **os.environ,
            "PROMPTFOO_CONFIG_DIR": str(tmp_path / "promptfoo-home"),
            "PROMPTFOO_DISABLE_TELEMETRY": "1",
            "PROMPTFOO_DISABLE_UPDATE": "1",
        }
        cmd = [promptfoo_cli() or "promptfoo", "eval", "-c", "promptfooconfig.yaml", "-o", str(out)]
        done = subprocess.run(
            [*cmd, "--no-cache"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
        )
        assert service.stop() == 0
    assert out.is_file(), done.stdout[-2000:] + done.stderr[-2000:]
    results = json.loads(out.read_text())["results"]
    success = {r["vars"]["reply"]: r["success"] for r in results["results"]}
    assert success == {LEAK: False, REFUSAL: True}
    assert results["stats"]["failures"] == 1 and results["stats"]["successes"] == 1

    rows = redjury.evaluate(out).attempts
    graded = sorted(
        (r["detector_results"]["pii_leak"][0], r["detector_results"]["promptfoo:webhook"][0])
        for r in rows
    )
    assert graded == [(0.0, 0.0), (1.0, 1.0)]
