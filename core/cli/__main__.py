"""``python -m hindsight_core.cli``: the ``hindsight`` command."""

from .commands import main

if __name__ == "__main__":
    raise SystemExit(main())
