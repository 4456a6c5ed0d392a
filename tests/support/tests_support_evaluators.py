"""A custom verdict policy loaded by import path in the tests."""

from redjury.evaluators import Evaluator


class Lenient(Evaluator):
    """Fails only scores above 0.8."""

    def test(self, score: float) -> bool:
        return score <= 0.8
