"""Reflect and what the bank comes to believe: ``pipeline`` (``ReflectPipeline``, CARA; opinions and their
confidence live in ``hindsight_core.opinions``, observations in ``hindsight_core.observations``) and
``profile_merge`` (the bank's background).
"""
