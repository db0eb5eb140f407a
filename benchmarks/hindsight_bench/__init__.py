"""Benchmarks of Hindsight Memory (distribution ``hindsight-memory-bench``): LoCoMo, LongMemEval, scale, QA,
LLM retain and entity resolution, run by ``hindsight-bench ...`` or ``hindsight bench ...``.

Each benchmark is its own module; ``cli`` is the command line. Nothing is imported here, so importing the
package (as the engine's command line does to find ``bench``) stays cheap.
"""
