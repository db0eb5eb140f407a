"""Reflect and what the bank comes to believe: ``pipeline`` (``ReflectPipeline``, CARA; opinions and their
confidence live in ``hindsight_core.opinions``), ``observations``, ``observation_job`` and
``observation_support`` (entity summaries, checked against the raw messages about the entity), and
``profile_merge`` (the bank's background).
"""
