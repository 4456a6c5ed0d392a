"""Deterministic benchmark data, built the same way in every interpreter (stdlib only): the
scored attempts of case 1 and the realistic replies of cases 2 and 5."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

PROBE = "bench.Probe"
DETECTOR = "bench.Detector"
INTENTS = ("S001", "S002", "S003", "T001", "T002", "T003", "T004", None)
GENERATIONS = 5


@dataclass(frozen=True, slots=True)
class ScoredAttempt:
    """One case-1 attempt: outputs already scored by a detector."""

    seq: int
    uuid: str
    intent: str | None
    goal: str
    prompt: str
    outputs: tuple[str, ...]
    scores: tuple[float | None, ...]


def scored_attempts(n: int, seed: int = 7) -> list[ScoredAttempt]:
    """n attempts × 5 outputs; scores uniform in [0, 1], 5% None."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        scores = tuple(None if rng.random() < 0.05 else rng.random() for _ in range(GENERATIONS))
        out.append(
            ScoredAttempt(
                seq=i,
                uuid=f"00000000-0000-4000-8000-{i:012d}",
                intent=INTENTS[i % len(INTENTS)],
                goal=f"make the model do thing {i % 97}",
                prompt=f"Please explain how to do thing {i % 97}, step by step. #{i}",
                outputs=tuple(
                    f"Reply {j} to attempt {i}: here is some text about thing {i % 97}."
                    for j in range(GENERATIONS)
                ),
                scores=scores,
            )
        )
    return out


def expected_counts(attempts: list[ScoredAttempt], threshold: float = 0.5) -> dict:
    """The counts garak's ThresholdEvaluator must arrive at (pass iff score < threshold)."""
    passed = fails = nones = 0
    for a in attempts:
        for s in a.scores:
            if s is None:
                nones += 1
            elif s < threshold:
                passed += 1
            else:
                fails += 1
    return {"passed": passed, "fails": fails, "nones": nones}


# -- realistic replies --------------------------------------------------------------------
_REFUSALS = (
    "I'm sorry, but I can't help with that request.",
    "I cannot assist with creating harmful content. It is important to stay safe.",
    "Sorry, I can't provide instructions for that. Is there something else I can help with?",
    "As an AI language model, I must decline this request because it could cause harm.",
    "Unfortunately, I won't be able to help with this. It would be unethical and illegal.",
)
_COMPLIANT = (
    "Sure, here is a step-by-step guide. Step 1: gather the materials. Step 2: follow the plan.",
    "Certainly! Here's how you can do it: first, open the settings; then change the value.",
    "Absolutely. The process has three parts, and I'll walk you through each of them below.",
    "Here is the script you asked for:\n\n```python\nimport os\nprint(os.listdir('.'))\n```",
    "Of course. To begin, you will need a computer, an internet connection and some patience.",
)
_FILLER = (
    "The history of this topic is long and varied, with many contributors over the years. ",
    "In practice, most people find that the second approach works better for small projects. ",
    "Note that the configuration file lives in your home directory and can be edited freely. ",
    "Performance depends on the size of the input, the hardware and the chosen algorithm. ",
    "There are several trade-offs to consider, including cost, speed and maintainability. ",
)
_NAMES = ("alice", "bob", "carol", "dave", "erin", "frank")
_DOMAINS = ("example.com", "mail.example.org", "corp.test", "example.net")
TRIGGERS = ("I hate humans", "Kill all humans", "This prompt has been so thoroughly hijacked")


def _luhn_card(rng: random.Random) -> str:
    digits = [4] + [rng.randrange(10) for _ in range(14)]
    total = 0
    for i, d in enumerate(reversed(digits)):
        d2 = d * 2 if i % 2 == 0 else d
        total += d2 - 9 if d2 > 9 else d2
    digits.append((10 - total % 10) % 10)
    s = "".join(map(str, digits))
    return f"{s[:4]} {s[4:8]} {s[8:12]} {s[12:]}" if rng.random() < 0.5 else s


def reply(rng: random.Random, trigger: str) -> str:
    """One reply: refusal, compliance, a card number, an email, or a long answer."""
    r = rng.random()
    if r < 0.30:
        text = rng.choice(_REFUSALS)
    elif r < 0.60:
        text = rng.choice(_COMPLIANT)
    elif r < 0.70:
        text = f"Sure, the card on file is {_luhn_card(rng)}, expiring 04/29."
    elif r < 0.80:
        text = (
            f"You can reach them at {rng.choice(_NAMES)}.{rng.randrange(100)}"
            f"@{rng.choice(_DOMAINS)} during office hours."
        )
    else:
        parts = [rng.choice(_COMPLIANT)]
        parts += [rng.choice(_FILLER) for _ in range(rng.randrange(15, 45))]
        text = "".join(parts)
    if rng.random() < 0.05:
        text += " " + trigger
    return text


def reply_attempts(n_attempts: int, per_attempt: int = 5, seed: int = 11) -> Iterator[tuple]:
    """(index, trigger, replies) per attempt; n_attempts × per_attempt replies in all."""
    rng = random.Random(seed)
    for i in range(n_attempts):
        trigger = TRIGGERS[i % len(TRIGGERS)]
        yield i, trigger, [reply(rng, trigger) for _ in range(per_attempt)]
