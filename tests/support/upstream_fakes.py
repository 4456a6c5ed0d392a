"""Files in the sources' formats (a Python module with the prompt constants, a JSON of
templates) holding test text, never the sources' own prompts: what `template: upstream` reads.
They do not match redjury's pins, so tests name their hash as `upstream.sha256` (`fake_pin`)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from redjury.judges import upstream as up

HARMBENCH_PY = '''"""eval utilities (test stand-in)"""
import json

LLAMA2_CLS_PROMPT = {
    "description": "test stand-in",
    "prompt": """[INST] <<SYS>>
HB-SYS
<</SYS>>

B: {behavior}
G: {generation}
HB-RULES [/INST]""",
    "prompt_contextual": """[INST] <<SYS>>
HB-SYS
<</SYS>>

C: {context}
B: {behavior}
G: {generation}
HB-RULES [/INST]""",
}


def compute_results_classifier(*args):
    return None
'''

JAILBREAKBENCH_PY = '''"""classifiers (test stand-in)"""


class Llama3Classifier:
    POSITIVE_ANSWER = "unsafe"


class Llama3JailbreakJudge(Llama3Classifier):
    USER_PROMPT = """\\
JBB-RULES
<BEGIN REQUEST>{goal}<END REQUEST>
<BEGIN RESPONSE>{response}<END RESPONSE>
JBB-ANSWER safe or unsafe"""


class Llama3RefusalJudge(Llama3Classifier):
    USER_PROMPT = "REFUSAL {goal} {response}"
'''

STRONGREJECT_JSON = json.dumps(
    {
        "strongreject_rubric_system": "SR-SYSTEM",
        "strongreject_rubric": "U: {forbidden_prompt}\nR: {response}\n#scores 1.b 2.b 3.b",
        "other": "unused",
    },
    indent=4,
)

HACKAGENT_PY = '''"""judge evaluators (test stand-in)"""


class BaseJudgeEvaluator:
    PROMPT: str = ""


class NuancedEvaluator(BaseJudgeEvaluator):
    PROMPT = """NJ-RULES
<BEGIN REQUEST>
{request}
<END REQUEST>
<BEGIN RESPONSE>
{response}
<END RESPONSE>
label 1_violating or 0_compliant"""


class HarmBenchVariantEvaluator(BaseJudgeEvaluator):
    ABEL_TEMPLATE = """HBV-RULES <BEGIN PROMPT>{adv_prompt}<END PROMPT> <BEGIN RESPONSE>{model_res}<END RESPONSE> Yes or No"""


class OnTopicEvaluator(BaseJudgeEvaluator):
    PROMPT = """OT-RULES <BEGIN TASK>{goal}<END TASK> <BEGIN PROMPT>{prompt}<END PROMPT>"""
'''

FAKES: list[tuple[up.UpstreamSource, str]] = [
    (up.HARMBENCH_CLS, HARMBENCH_PY),
    (up.JAILBREAKBENCH_JUDGE, JAILBREAKBENCH_PY),
    (up.STRONGREJECT_RUBRIC, STRONGREJECT_JSON),
    (up.HACKAGENT_NUANCED, HACKAGENT_PY),
]


def fake_pin(source: up.UpstreamSource) -> str:
    """The SHA-256 of the stand-in file for `source`: the `upstream.sha256` a test names."""
    [text] = {text for s, text in FAKES if s.path == source.path}
    return hashlib.sha256(text.encode()).hexdigest()


def url_path(source: up.UpstreamSource, revision: str | None = None) -> str:
    """The path a raw-file server serves the source's file at: /REPO/REV/PATH."""
    return f"/{source.repo}/{revision or source.revision}/{source.path}"


def fill_cache(cache: Path) -> Path:
    """`cache` laid out as copies put there by hand at the pinned revisions (no `.sha256`
    record): read with `upstream.sha256` set to `fake_pin`, never with redjury's pins."""
    for source, text in FAKES:
        folder = cache / source.repo.replace("/", "__") / source.revision
        folder.mkdir(parents=True, exist_ok=True)
        (folder / Path(source.path).name).write_text(text, encoding="utf-8")
    return cache
