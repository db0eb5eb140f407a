"""A unit's vector and keeping the vector index in step with the graph store: what is embedded and filtered on
(``unit_text``), the vector outbox with its marks (``vector_sync``), ``reconcile`` at open and on repair, and
``reembed``: a bank's vectors rebuilt with another embedder and swapped in at once.
"""
