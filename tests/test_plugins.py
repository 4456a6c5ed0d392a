"""The plugin registries: loaded once, whole, whichever thread asks first."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest
from fault_server import FaultServer, Reply

# A cold interpreter (nothing registered yet) where 8 threads call `evaluate` with a judge
# config at once; prints the errors they raised as JSON.
EIGHT_THREADS = textwrap.dedent(
    """
    import io, json, sys, threading
    import redjury

    config = {"evaluation": {"judges": [{
        "name": "j", "scoring": {"type": "harmbench"}, "generation": {"seed": 1},
        "connection": {"base_url": sys.argv[1]},
    }]}}
    start, errors, verdicts = threading.Barrier(8), [], []

    def judge(i):
        start.wait()
        try:
            results = redjury.evaluate(
                [{"id": f"a{i}", "probe": "p", "goal": "g", "outputs": ["Sure, here it is"]}],
                config, use_cache=False, preflight=False, stream=io.StringIO(),
            )
            verdicts.append(len(results.attempts))
        except Exception as exc:
            errors.append(repr(exc))

    threads = [threading.Thread(target=judge, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"errors": errors, "judged": verdicts}))
    """
)


@pytest.fixture
def judge_server() -> Iterator[FaultServer]:
    with FaultServer(script=lambda _: Reply("Yes")) as srv:
        yield srv


def test_eight_threads_evaluating_on_a_cold_interpreter_all_find_the_scoring_type(
    judge_server: FaultServer,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", EIGHT_THREADS, judge_server.openai_url],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["errors"] == []
    assert result["judged"] == [1] * 8
    assert len(judge_server.posts) == 8
