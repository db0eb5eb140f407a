"""Extractors: turn retained messages into candidate facts (LLM-based or raw, without an LLM)."""
