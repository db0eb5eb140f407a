"""A unit's vector and keeping the vector index in step with the graph store: what is embedded and filtered on
(``unit_text``), the vector outbox with its marks (``vector_sync``), and ``reconcile`` at open and on repair.
"""
