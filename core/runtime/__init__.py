"""The background runtime: ``jobs`` (``JobScheduler``: what is queued after a retain, and the retain and
reflect job handlers), ``worker`` (runs queued jobs), ``leases`` (process leases: who holds what, who died)
and ``integrity`` (``hindsight check``: the stores' invariants, and their repair).
"""
