"""redjury: judge what an LLM target said during red-team and quality runs."""

__version__ = "0.1.0"
