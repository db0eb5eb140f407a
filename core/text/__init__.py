"""Text and time as the engine reads it: input messages and timestamps (``inputs``), token counting
(``tokens``), person names and nicknames (``names``), and long texts cut into passages (``passages``).
"""
