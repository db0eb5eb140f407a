"""Recall: the four channels (``channels``, registered behind one signature in ``registry``), reciprocal rank
fusion (``fusion``), an optional ``rerank``, and packing under the token budget with distinct evidence first
(``packing``); ``pipeline`` (``RecallPipeline``) runs them.
"""
