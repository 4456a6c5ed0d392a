"""HackAgent's side of the judge-throughput benchmark, run in HackAgent's own virtual
environment: its judge panel over the same attempts, the result as one JSON line on stdout.

Driven the way HackAgent's campaign runner drives it: `build_panel(EvaluationSpec, build_model)`
binds each judge to a LiteLLM model, and `panel.aevaluate(sample)` runs under a semaphore of
`execution.concurrency.judge` samples (default 1, i.e. 3 requests in flight for 3 judges).
The runner's preflight reachability check is not part of this path (and LiteLLM's cost map is
read locally), so nothing reaches beyond 127.0.0.1.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import time  # noqa: E402


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


async def judge_all(args: argparse.Namespace) -> dict:
    from hackagent.core.contracts import Sample
    from hackagent.models.build import build_model
    from hackagent.orchestrator.campaign.resolve import build_panel
    from hackagent.orchestrator.campaign.spec import ConcurrencySpec, EvaluationSpec

    spec = EvaluationSpec.model_validate(
        {
            "judges": [
                {
                    "name": f"judge-{k}",
                    "connection": {"provider": "local", "type": "OPENAI", "endpoint": args.url},
                    "generation": {"temperature": 0.0},
                    "scoring": {"type": "harmbench"},
                }
                for k in "abc"
            ]
        }
    )
    panel = build_panel(spec, build_model)
    concurrency = args.concurrency or ConcurrencySpec().judge
    samples = []
    with open(args.input, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            samples.append(
                Sample(goal=row["goal"], prompt=row["prompt"], response=row["outputs"][0])
            )
    # One panel call before the clock starts: LiteLLM imports itself on first use.
    await panel.aevaluate(samples[-1])
    samples = samples[: args.attempts]
    limit = asyncio.Semaphore(concurrency)

    async def judge(sample: Sample):  # type: ignore[no-untyped-def]
        async with limit:
            return await panel.aevaluate(sample)

    c0, t0 = _cpu(), time.perf_counter()
    verdicts = await asyncio.gather(*(judge(s) for s in samples))
    seconds, cpu = time.perf_counter() - t0, _cpu() - c0
    return {
        "seconds": seconds,
        "cpu_s": cpu,
        "attempts": len(samples),
        "concurrency": concurrency,
        "success": sum(1 for v in verdicts if v.success),
        "errors": sum(1 for v in verdicts if v.error),
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--input", required=True)
    p.add_argument("--url", required=True)
    p.add_argument("--attempts", type=int, required=True)
    p.add_argument("--concurrency", type=int, default=0, help="0: HackAgent's default")
    args = p.parse_args()
    logging.disable(logging.WARNING)
    print(json.dumps(asyncio.run(judge_all(args))))


if __name__ == "__main__":
    main()
