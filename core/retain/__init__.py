"""Retain: raw first, facts later. ``pipeline`` (``RetainPipeline``: store the raw document, one unit per
message or passage, entities, links, one transaction), ``options`` (``RetainOptions``), ``entities``
(resolution), ``links``, ``fact_job`` (the LLM's facts added beside the raw units) and ``forget``.
"""
