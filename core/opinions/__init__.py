"""What the bank comes to believe, and how sure it is: the one home of the opinion rule.

``confidence`` (the one file that decides an opinion's confidence: formation from the cited evidence and the
disposition, the update step, the ceiling and the default), ``disposition`` (what each trait does in code, and its
verbalised form for the reflect prompt), ``formed`` (the shape of a formed opinion), ``assess`` (one model call
labels new evidence against an opinion), ``candidates`` (which opinions new facts bear on), ``reinforce`` (the
opinion job: opinions moved by new facts; the stores write the value computed here and compute nothing) and
``coherence`` (reflect's answer made to agree with its computed confidence).
"""
