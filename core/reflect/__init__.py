"""Reflect and what the bank comes to believe: ``pipeline`` (``ReflectPipeline``, CARA), ``disposition``,
``grounded_confidence``, ``opinions`` and ``opinion_candidates`` (assessment), ``reinforce`` (opinions moved
by new evidence), ``observations``, ``observation_job`` and ``observation_support`` (entity summaries, checked
against the raw messages about the entity), and ``profile_merge`` (the bank's background).
"""
