"""Name keys and name knowledge for entity resolution.

``normalise_name`` is the key under which a bank stores one entity: two mentions with the same key are the
same entity, always. It folds away the differences that never distinguish two names: Unicode compatibility
forms, case, diacritics of Latin and Greek letters, typographic apostrophes and hyphens, surrounding quotes
and punctuation, a trailing possessive, and the periods of abbreviations and initials.

The rest of the module is what the resolver knows about names beyond the key: the tokens of a key, a
spacing-insensitive "compact" form, and which given names are short forms (nicknames) of which.
"""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from functools import lru_cache
from pathlib import Path

log = logging.getLogger(__name__)

__all__ = ["compact_name", "is_short_form", "name_tokens", "normalise_name", "short_form_relatives"]

# Typographic variants that NFKC keeps apart from their ASCII form.
_APOSTROPHES = "\u2018\u2019\u201a\u201b\u02b9\u02bb\u02bc\u02bd\u2032\u0060\u00b4\uff07"
_HYPHENS = "\u2010\u2011\u2012\u2013\u2014\u2015\u2043\u2212\ufe58\ufe63\uff0d"
_UNIFY = str.maketrans({**dict.fromkeys(_APOSTROPHES, "'"), **dict.fromkeys(_HYPHENS, "-")})
# Latin letters with no canonical decomposition, so that NFKD alone does not fold them.
_FOLD = str.maketrans({"ø": "o", "ł": "l", "đ": "d", "ħ": "h", "ı": "i", "ŧ": "t", "æ": "ae", "œ": "oe",
                       "þ": "th", "ð": "d", "ŀ": "l"})
# Punctuation stripped from the ends of a name. Deliberately not '#', '+', '@', '&', '%' ("C#", "C++", "@bob").
_EDGE = "'\"«»‹›“”„‟「」『』()[]{}<>.,;:!?¡¿…·•*/\\|~_- \t\r\n"
_PERIOD = re.compile(r"(?<!\d)\.|\.(?!\d)")  # every period but a decimal point
_SPACE = re.compile(r"\s+")
_JOINERS = "\u200c\u200d"  # format characters that spell words in Indic and Arabic scripts; others are dropped


def _is_latin_or_greek(ch: str) -> bool:
    """Whether combining marks on this base letter are diacritics to drop (not so in Indic, Cyrillic, kana)."""
    cp = ord(ch)
    return (cp < 0x0250 or 0x0370 <= cp <= 0x03FF or 0x1E00 <= cp <= 0x1FFF or 0x2C60 <= cp <= 0x2C7F
            or 0xA720 <= cp <= 0xA7FF or 0xAB30 <= cp <= 0xAB6F)


def _strip_diacritics(text: str) -> str:
    out: list[str] = []
    base = ""
    for ch in unicodedata.normalize("NFKD", text):
        if unicodedata.combining(ch):
            if base and _is_latin_or_greek(base):
                continue
        else:
            base = ch
        out.append(ch)
    return unicodedata.normalize("NFC", "".join(out))


def _join_initials(tokens: list[str]) -> list[str]:
    """Join runs of two or more single-letter tokens: "j r r tolkien" -> "jrr tolkien"."""
    out: list[str] = []
    run: list[str] = []
    for tok in [*tokens, ""]:
        if len(tok) == 1 and tok.isalpha():
            run.append(tok)
            continue
        if run:
            out.extend(["".join(run)] if len(run) > 1 else run)
            run = []
        if tok:
            out.append(tok)
    return out


def normalise_name(name: str) -> str:
    """The key of an entity name within a bank: equal keys mean the same entity.

    Steps, in order: Unicode NFKC; typographic apostrophes and hyphens become ``'`` and ``-``; casefold;
    diacritics of Latin and Greek letters removed (NFKD minus combining marks, plus ø/ł/đ/æ/œ/þ... folded;
    marks of other scripts are letters there and are kept); control and invisible format characters dropped
    (not whitespace, nor the joiners ZWJ/ZWNJ); a period between two digits is kept ("2.0"),
    every other period separates words ("St.Louis" -> "st louis"); whitespace collapsed; punctuation and
    quotes stripped from both ends (not ``# + @ & %``: "C#", "C++"); a trailing possessive ``'s`` removed
    ("Mark's" -> "mark"; hence also "McDonald's" -> "mcdonald"); runs of two or more single-letter words
    joined, so initials agree however they are written ("J.R.R. Tolkien", "J. R. R. Tolkien" and
    "JRR Tolkien" -> "jrr tolkien"; "U.S.A." -> "usa"; "Mary J. Blige" -> "mary j blige").

    Returns ``""`` exactly when ``name`` has no letter or digit (for example "", "  ", "?!", "--"): that is
    not a name, and callers skip it. A name with a letter or digit never yields ``""``.
    """
    text = unicodedata.normalize("NFKC", name).translate(_UNIFY).casefold()
    text = _strip_diacritics(text).translate(_FOLD)
    text = "".join(c for c in text if c.isspace() or c in _JOINERS or unicodedata.category(c) not in ("Cc", "Cf"))
    text = _PERIOD.sub(" ", text)
    text = _SPACE.sub(" ", text).strip(_EDGE)
    while text.endswith("'s") and any(c.isalnum() for c in text[:-2]):  # a loop keeps the key idempotent
        text = text[:-2].strip(_EDGE)
    text = " ".join(_join_initials(text.split(" "))) if any(c.isalnum() for c in text) else ""
    if not text and any(c.isalnum() for c in name):
        # Cannot happen with the steps above; kept so that the documented guarantee holds whatever they become.
        text = _SPACE.sub(" ", unicodedata.normalize("NFKC", name).casefold()).strip()
    return text


def name_tokens(key: str) -> list[str]:
    """The words of a normalised name (split on spaces only: "jean-luc" is one given name)."""
    return key.split()


def compact_name(key: str) -> str:
    """A normalised name without spaces, hyphens and apostrophes ("coca-cola" == "coca cola" == "cocacola",
    "o'brien" == "obrien"): the same letters in the same order are one name spelled two ways."""
    return "".join(c for c in key if c not in " -'")


# --------------------------------------------------------------------------------------------------
# nicknames
# --------------------------------------------------------------------------------------------------
# Short forms the package lacks, and pairs it relates that are distinct given names today (Emma/Emily).
_EXTRA_NICKNAMES = Path(__file__).resolve().parent.parent / "data" / "nicknames_extra.json"


@lru_cache(maxsize=1)
def _related_names() -> dict[str, frozenset[str]]:
    """Given name -> the names the tables relate it to, in either direction (keys normalised)."""
    pairs: list[tuple[str, str]] = []
    try:
        from nicknames import name_triplets  # Carlton Northern's hand-curated table, Apache-2.0
    except ImportError:  # pragma: no cover - a declared dependency; degrade to no nickname rule, loudly
        log.warning("the 'nicknames' package is missing: nicknames will not be resolved")
    else:
        pairs.extend((t.name1, t.name2) for t in name_triplets() if t.relationship == "has_nickname")
    extra = json.loads(_EXTRA_NICKNAMES.read_text(encoding="utf-8"))
    pairs.extend((full, nick) for full, nicks in extra["nicknames"].items() for nick in nicks)
    distinct = {frozenset((normalise_name(a), normalise_name(b))) for a, b in extra["distinct_names"]}
    related: dict[str, set[str]] = {}
    for a, b in pairs:
        a, b = normalise_name(a), normalise_name(b)
        if a and b and a != b and frozenset((a, b)) not in distinct:
            related.setdefault(a, set()).add(b)
            related.setdefault(b, set()).add(a)
    return {k: frozenset(v) for k, v in related.items()}


def short_form_relatives(token: str) -> frozenset[str]:
    """Every name the nickname tables relate to ``token`` (a normalised given name), either way."""
    return _related_names().get(token, frozenset())


def is_short_form(short: str, full: str) -> bool:
    """Whether ``short`` is a nickname or short form of the given name ``full`` (both normalised tokens).

    The tables must relate the two; ``short`` must be shorter; and it must not be ``full`` with one letter
    dropped (Jon/John, Ann/Anna, Dan/Dana): such spelling neighbours are distinct names that the tables
    relate historically, and confusing them is exactly the mistake a short-form rule must not make.
    """
    if len(short) >= len(full) or full not in short_form_relatives(short):
        return False
    return not (len(full) - len(short) == 1 and _drops_one_letter(short, full))


def _drops_one_letter(short: str, full: str) -> bool:
    return any(full[:i] + full[i + 1:] == short for i in range(len(full)))
