"""Observations (paper section 3): each entity's preference-neutral summary, checked against the raw messages about
it. ``job`` (``ObservationWriter``, the observation job: when an entity is due, writing its observation under one
synthetic document, following supersessions; ``observation_of``, the one lookup of an entity's current observation
that the facade and the explorer call), ``support`` (which sentences the messages and facts bear out:
``check_grounded``, ``grounded_facts``, ``material_about``), ``extract`` (the default observation made of the
entity's checked facts, no model call) and ``summary`` (the model-written summary: its prompt and one structured
call).
"""
