"""LlamaIndex integration for Hindsight Memory."""
