"""Agentic quality detectors: correctness, faithfulness, hallucination, summarization, toxicity,
each asking a judge model through the shared engine (seed 001)."""

from redjury.judges.agentic import correctness, faithfulness, summarization, toxicity

__all__ = ["correctness", "faithfulness", "summarization", "toxicity"]
