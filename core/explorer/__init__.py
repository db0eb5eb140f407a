"""The memory explorer: a local web page to see and audit what a memory store holds (``hindsight ui``).

For a bank it shows memories by network with their dates, entities and provenance, the entity graph with each
entity's observation, opinions with their confidence over time, documents and background jobs, and a recall
playground with the full trace; a memory, a document or an entity can be forgotten after a confirmation.
See ``docs/EXPLORER.md``.

Modules: ``auth`` (the write token and which requests it guards), ``queries`` (what each view reads, through the
bank and the store protocols, a page at a time), ``routes`` (the JSON API), ``app`` (the Starlette application
and its security headers), ``server`` (opening the store and running uvicorn), ``cli`` (the ``ui`` command).
The page itself is plain JavaScript modules under ``static/`` with its libraries vendored from npm
(``static/vendor/VENDORED.md``): nothing is fetched from elsewhere at run time.

Importing this package imports nothing else: Starlette and uvicorn (the ``ui`` extra) load when the explorer
starts.
"""
