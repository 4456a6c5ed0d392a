"""LLM judges: scoring types (prompt + parser), providers, the async engine, cache and panel."""
