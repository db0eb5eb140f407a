"""The short two-speaker conversation many tests retain (shared so that each test file does not keep a copy)."""

from __future__ import annotations

CONVERSATION: list[dict[str, str]] = [
    {"speaker": "Caroline", "text": "I went to a LGBTQ support group yesterday and it was so powerful.", "id": "D1:1"},
    {"speaker": "Melanie", "text": "That's great! I painted a sunrise by the lake last week.", "id": "D1:2"},
    {"speaker": "Caroline", "text": "I'm thinking of becoming a counselor in Boston next year.", "id": "D1:3"},
    {"speaker": "Melanie", "text": "My kids love the new puppy, we named him Oscar.", "id": "D1:4"},
    {"speaker": "Caroline", "text": "Oscar is a lovely name! Is he a golden retriever?", "id": "D1:5"},
    {"speaker": "Melanie", "text": "Yes, and he already chewed my favourite running shoes.", "id": "D1:6"},
]
