"""Supersession without a model: a new statement that says something changed supersedes the earlier one it changes.

"We moved to Porto last month" supersedes "I live in Lisbon" when the code can see all of this: the same speaker
says both, about themself (not "my friend moved"); the new one states a change (a cue such as moved, quit, sold,
postponed, broke up, no longer, now) and is no question, plan or wish; the earlier one states the same attribute
(home, job, partner, pet, ...: a lexicon of terms per attribute) and is close in meaning (the vector index finds it
among the new unit's nearest neighbours). A wrong supersession hides a true memory, so every rule leans to saying
nothing: a restatement ("still in Lisbon"), an addition ("I also work weekends"), a story about the past ("when I
was a kid we lived in Faro") or another person's news supersede nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any, Protocol

import numpy as np

from ..config import SupersessionSettings
from ..extract.base import ExtractedFact
from ..models import FACT_CITES_KEY, SUPERSEDED_BY_KEY, Memory, Network
from ..stores.base import SearchStore, Supersession, UnitStore, VectorIndex

NETWORKS = (Network.WORLD, Network.EXPERIENCE)
"""Only statements about the world and the agent's experience supersede one another (never opinions or
observations, which follow their evidence)."""


@dataclass(frozen=True)
class Attribute:
    """One kind of attribute a person has at a time: the words that state it, and the cues that say it changed."""

    name: str
    terms: re.Pattern[str]
    changes: re.Pattern[str]


def _words(*alternatives: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(alternatives) + r")\b", re.IGNORECASE)


_DATE_WORDS = (r"\d|january|february|march|april|may|june|july|august|september|october|november|december|"
               r"next|this|the (?:\d|end|start|first|second)|monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
               r"spring|summer|autumn|fall|winter")
_PROFESSIONS = (r"teacher|nurse|postman|postwoman|engineer|developer|programmer|designer|architect|accountant|barista|"
                r"driver|chef|cook|doctor|lawyer|journalist|manager|analyst|consultant|officer|assistant|technician|"
                r"electrician|plumber|carpenter|mechanic|paramedic|cashier|waiter|waitress|clerk|supervisor|"
                r"pharmacist|dentist|vet|librarian|translator|writer|editor|photographer|scientist|researcher|"
                r"firefighter|police officer|soldier|pilot|receptionist|secretary|student|intern|head|director|"
                r"associate|solicitor|barrister|paralegal|apprentice|midwife|ranger|forester|surveyor|copywriter|"
                r"bartender|tutor|courier|freelancer|contractor|"
                r"lecturer|professor|tester|hygienist|surgeon|therapist|carer|caregiver|cleaner|builder|farmer|miner")
_PETS = (r"cats?|dogs?|pupp(?:y|ies)|kittens?|pets?|hamsters?|rabbits?|parrots?|(?:gold)?fish|turtles?|chooks?|"
         r"chickens?|hens?")
_LANGUAGES = (r"spanish|french|german|japanese|italian|chinese|mandarin|cantonese|korean|portuguese|vietnamese|thai|"
              r"arabic|hindi|urdu|bengali|tamil|russian|ukrainian|polish|czech|dutch|swedish|norwegian|danish|finnish|"
              r"greek|turkish|hebrew|indonesian|malay|tagalog|swahili|gaelic|welsh|irish|catalan|basque|latin")
_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_DATED = re.compile(rf"\b(?:{_DATE_WORDS}|tomorrow|tonight|week|month|year)", re.IGNORECASE)


ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute("home",
              # bare "home" is a direction or a feeling ("on my way home", "a family away from home")
              _words(r"live[sd]?", r"living", r"apartment", r"flat", r"house", r"(?:my|our|new) home",
                     r"home (?:is|in)", r"neighbou?rhood",
                     r"rent(?:ing)?", r"place", r"bungalow", r"condo", r"cottage", r"dorm", r"share ?house",
                     r"flatshare", r"houseshare",
                     # "three years in Capitol Hill": how long one has lived somewhere
                     r"(?:\w+ )?(?:years?|months?) (?:in|living in) (?-i:[A-Z])\w*"),
              # "moved to Porto", never "moved the christening to March" (an event) or "moved to 9 September"
              _words(rf"moved (?:to|into|in|out|away|back|house)(?! (?:{_DATE_WORDS}))", r"relocated",
                     # never a place visited: "took a trip to a new place"
                     r"(?<!to a )(?<!visit a )(?<!visited a )(?<!explore a )(?<!exploring a )"
                     r"new (?:place|apartment|flat|house|home)", r"settled in", r"shifted to", r"moved in",
                     r"bought (?:a|our|my) (?:first )?(?:house|flat|apartment|home)",
                     r"unpacking (?:the )?(?:last )?boxes",
                     r"(?:we|i)'?ve left (?-i:[A-Z])\w+", r"(?:we|i)'?(?:re|m) in (?-i:[A-Z])\w+ now",
                     r"living in \w+ now", r"now live", r"live in \w+ now",
                     # a move looked back on: "Moving to Denver was the best call"
                     r"(?:moving|relocating|the move) (?:back )?to (?-i:[A-Z])\w+(?: \w+)? (?:was|has been)")),
    Attribute("job",
              # the speaker's own work: "I work at", "my job", "working as" (not "that's what worked for my gran")
              # "I've been busy with work" names no job: the verb, not the noun after a preposition
              _words(r"(?:i|i'?m|i'?ve been|we) (?:\w+ ){0,2}(?<!with )(?<!from )(?<!at )(?<!of )(?<!after )"
                     r"(?<!before )(?:work(?:s|ed|ing)?|employed|hired)",
                     r"my (?:\w+ )?(?:job|position|career|shifts?|boss|profession)", r"work(?:ing)? (?:as|at|for)",
                     rf"(?:i'?m|i am|being) an? (?:\w+ ){{0,3}}(?:{_PROFESSIONS})", rf"(?:{_PROFESSIONS}) life",
                     r"has me on",
                     # "I teach English at ...", "Thirty-one years at Harrogate library", "Day shifts as a midwife"
                     r"(?:i|we) (?:\w+ )?(?:teach|lecture|tutor)(?:es)?",
                     r"(?:years?|months?) at (?:the )?(?-i:[A-Z])\w*",
                     rf"shifts? as an? (?:\w+ )?(?:{_PROFESSIONS})"),
              _words(r"quit (?:my |the |our )?(?:job|position|company)", r"resigned",
                     r"left (?:my|the|our) (?:job|company|position)", r"(?:got|was|been) fired", r"laid off",
                     r"got hired", r"new job", r"started (?:a new job|working)", r"promoted", r"now work(?:ing)?",
                     r"switched (?:jobs|careers)",
                     r"(?:i|i'?ve|i'?m) (?:just |finally )?retired", r"career change",
                     r"first (?:week|day|month) (?:at|as)",
                     r"no longer work", r"don'?t work .{0,30} anymore", r"left nursing", r"left teaching",
                     rf"i'?m (?:now )?an? (?:\w+ ){{0,3}}(?:{_PROFESSIONS}) now", r"onboarding (?:week|day)",
                     r"first (?:term|week|day|month|shift) as", r"day \w+ at the", r"as a trainee",
                     # "started at Leeds General", "handed in my notice", "TD let me go", "my last day was Friday"
                     r"started (?:work(?:ing)? )?at (?:the |a )?(?:(?-i:[A-Z])\w*|(?:\w+ ){0,2}?(?:pharmacy|hospital|"
                     r"clinic|office|firm|company|bank|shop|store|agency|bakery|cafe|restaurant|hotel|factory|"
                     r"warehouse|practice)\b)",
                     r"transferred to (?:the |our |a )?(?:\w+ ){0,2}(?:office|branch|site|store|base|depot|ward)",
                     r"back on (?:night|day|early|late|weekend) shifts", r"handed in (?:my|her|his) notice",
                     # "TD let me go in the spring cuts", never "let me go and check"
                     r"let (?:me|him|her) go(?=\s*(?:[.!,;]|$|in the\b|after\b|last\b|because\b|when\b))",
                     r"(?:freelanc(?:er|ing)|self-employed) since",
                     # "Friday was my last day", never "my last day of school" (a term ends, not a job)
                     # (nor "yesterday was my last day in Paris": a trip)
                     r"(?:was|is) my last day(?=\s*[.!,;]|\s*$)",
                     r"my last day at (?:work|the (?:office|firm|company|job|hospital|school))",
                     # the clause is the word: "Retired! Friday was my last day" (not "Mine retired")
                     r"^retired(?=\s*[!.,]|\s+(?:now|at last|finally|as of))",
                     r"(?:was|been|got|just got) (?:made|named|appointed|promoted to) (?:the )?(?:new )?"
                     r"(?:head|director|manager|lead|chief|partner|principal|supervisor|dean)")),
    Attribute("partner",
              _words(r"boyfriend", r"girlfriend", r"partner", r"husband", r"wife", r"fianc[eé]e?", r"dating",
                     r"married", r"engaged", r"single", r"relationship", r"together", r"anniversary"),
              _words(r"broke up", r"split up", r"divorced", r"separated", r"got married", r"got engaged",
                     r"new (?:boyfriend|girlfriend|partner)", r"single (?:again|now)", r"ended (?:it|things)",
                     r"no longer (?:together|dating|with)",
                     # "Jake's my ex now", "Kofi proposed", "we called it off"
                     r"(?:'s|’s|is) my ex\b",
                     # a proposal of marriage, not of a plan: "Kofi proposed!", "he proposed at the beach"
                     r"proposed(?=\s*(?:[.!,;]|$|to (?:me|him|her)\b|last\b|yesterday\b|at the\b|on the\b))",
                     r"(?:we'?re|we are|i'?m|i am) (?:now )?engaged",
                     r"called (?:it|the wedding|the engagement) off")),
    Attribute("pet",
              _words(_PETS, r"aquarium"),
              # A loss, never an addition: a new puppy does not replace the cat ("we adopted another puppy").
              # things "die" too: "my watch died halfway", "the phone died"
              _words(r"(?<!phone )(?<!watch )(?<!battery )(?<!laptop )(?<!engine )(?<!computer )(?<!car )died",
                     r"passed away",
                     # a pet by its name: "After Fritz passed in the spring" (not "Ngozi passed her exams", not kin)
                     r"(?!(?:Grandpa|Grandma|Gran|Granny|Grandad|Nana|Mum|Mom|Dad|Uncle|Aunt|Auntie|Time|Years?|"
                     r"Months?|Weeks?|Days?|Summer|Winter|Spring|Autumn|It|He|She|They|That|This|Bill|Law)\b)"
                     r"(?-i:[A-Z])\w+ passed(?= (?:in|last|on|recently|this|over)\b|\s*[.,!])",
                     r"put down", r"rehomed", r"gave (?:him|her|them) away",
                     r"lost (?:him|her|our|my)", r"gave (?:the|our|my) \w+ to",
                     # a pet that ran away or was taken: "the cat went missing", "a fox got both chooks"
                     rf"(?:{_PETS}|(?-i:[A-Z])\w+) (?:ran away|went missing|was killed|were killed|got killed)",
                     r"(?:a |the )?(?:fox|hawk|coyote|snake|eagle|dingo)e?s? (?:got|took|killed)")),
    Attribute("vehicle",
              _words(r"car", r"bike", r"motorcycle", r"motorbike", r"scooter", r"truck", r"van", r"drive", r"driving",
                     r"drives"),
              _words(r"(?:sold|bought|got|crashed|totall?ed|replaced|traded in|switched to|upgraded to) "
                     r"(?:a |an |my |the |our )?(?:new |second-hand |used |old |brand new )?(?:[\w-]+ )?"
                     r"(?:car|bike|motorcycle|motorbike|scooter|truck|van|ute)",
                     r"new (?:car|bike|motorcycle|scooter|truck|van)")),
    Attribute("diet",
              _words(r"vegetarian", r"vegan", r"meat", r"eat(?:ing)?", r"diet", r"gluten", r"dairy", r"keto",
                     r"steak", r"beef", r"pork", r"bacon", r"burgers?", r"sausages?",
                     r"pescatarian", r"sugar"),
              _words(r"stopped eating", r"gave up (?:meat|sugar|dairy|gluten|fish|alcohol)",
                     r"went (?:fully |full )?(?:vegan|vegetarian|keto|pescatarian)", r"no longer eat",
                     r"started eating", r"quit (?:meat|sugar|dairy)", r"back to eating",
                     r"switched to (?:a )?(?:vegan|vegetarian|keto|plant-based)", r"not (?:vegan|vegetarian) anymore",
                     r"stop(?:ped)? the (?:[\w-]+ )?diet", r"eating \w+ again",
                     # "been off meat since March", "I'm done with meat"
                     r"(?:been|gone|went|i'?m) off (?:meat|sugar|dairy|gluten|alcohol|booze|red meat)",
                     r"done with (?:meat|sugar|dairy|alcohol|booze|red meat)")),
    Attribute("team",
              _words(r"support(?:er)?", r"fan", r"root(?:ing)? for", r"team", r"club"),
              _words(r"switched (?:teams|allegiance)", r"now (?:support|root for)", r"no longer support",
                     r"(?:not|no longer) a \w+ fan")),
    # the club one plays at: joining another replaces it ("joined a rowing club" after "padel at the club"), but
    # only a statement about a club, never one about being a fan ("a Harry Potter fan project")
    Attribute("club",
              _words(r"club", r"team", r"league", r"squad"),
              _words(r"joined (?:a|the) (?:\w+ ){0,2}(?:club|team|league|squad)")),
    Attribute("sport",
              _words(r"football", r"soccer", r"rugby", r"cricket", r"basketball", r"netball", r"hockey", r"tennis",
                     r"padel", r"squash", r"volleyball", r"baseball", r"league", r"play (?:centre|center|striker|"
                     r"goalie|keeper|defence|defense|midfield|wing|forward|back)", r"(?:my|our) team"),
              # "hung up my boots": the idiom of a sportsman retiring
              _words(r"hung up (?:my|the|our) (?:boots|gloves|racket|racquet|skates|spikes|cleats)",
                     r"retired from (?:football|soccer|rugby|cricket|basketball|netball|hockey|tennis|playing)",
                     r"(?:stopped|quit|gave up) (?:playing|football|soccer|rugby|cricket|basketball|netball|hockey|"
                     r"tennis|padel|squash)")),
    Attribute("school",
              _words(r"stud(?:y|ying|ies)", r"student", r"university", r"college", r"school", r"major(?:ing)?",
                     r"degree", r"course", r"program(?:me)?", r"exams?", r"classes", r"lectures?", r"semester",
                     r"thesis", r"diploma", r"cert(?:ificate)?",
                     r"(?:first|second|third|fourth|final|last) year (?:of|at)"),
              _words(r"transferred", r"switched (?:majors|my major|to)", r"dropped out", r"graduated",
                     r"changed (?:my )?major", r"enrolled", r"now (?:study|studying)", r"started (?:at|studying)",
                     # studies finished: "got my certificate", "passed my finals", "being a chartered accountant"
                     r"got (?:my|her|his|the) (?:\w+ )?(?:certificate|diploma|degree|qualification|results)",
                     r"passed (?:my|all my|the|her|his) (?:\w+ )?(?:exams|finals|boards|papers)",
                     r"finished (?:my|her|his) (?:\w+ )?(?:degree|course|studies|diploma|masters|master'?s|phd|"
                     r"thesis|honou?rs)",
                     r"started (?:my|her|his|a) (?:\w+ )?(?:master'?s|masters|phd|degree|course|apprenticeship|"
                     r"diploma|studies)",
                     r"(?:i'?m|being|now|finally|officially) (?:now |finally |officially )?(?:a |an )?(?:fully )?"
                     r"(?:chartered|certified|qualified|licensed|registered) (?!to\b)")),
    Attribute("event",
              _words(r"wedding", r"party", r"appointment", r"meeting", r"ceremony", r"trip", r"flight", r"concert",
                     r"surgery", r"interview", r"scheduled", r"booked", r"planned", r"date"),
              _words(r"postponed", r"rescheduled", r"moved (?:it|the \w+) to", r"pushed (?:it |the \w+ )?back",
                     r"cancell?ed", r"brought (?:it )?forward", r"delayed", r"changed the date", r"new date",
                     # moved to a date: "moved Ella's 21st to 16 December", "the ceilidh's moved to 14 October"
                     rf"moved (?:[\w'’]+ ){{0,3}}to (?:the )?(?:\d{{1,2}}(?:st|nd|rd|th)?\b|{_MONTHS}|next \w+|"
                     r"(?:mon|tues|wednes|thurs|fri|satur|sun)day)")),
    Attribute("habit",
              _words(r"run(?:s|ning)?", r"smok(?:e|es|ing)", r"gym", r"yoga", r"swim(?:ming)?", r"drink(?:ing)?",
                     r"coffee", r"meditat(?:e|ing)", r"routine", r"cycl(?:e|ing)", r"workouts?"),
              _words(r"quit (?:smoking|drinking|running|the gym|coffee|caffeine|alcohol)",
                     # "I quit completely", "I've quit for good": quit with no object
                     r"(?:i|i'?ve|we|we'?ve) (?:finally |just |actually )?quit(?=\s*(?:[.!,;]|$|completely|"
                     r"for good|altogether|entirely|cold turkey))",
                     r"(?:stopped|gave up) (?:smoking|drinking|running|coffee|caffeine|alcohol)")),
    Attribute("device",
              _words(r"phone", r"iphone", r"android", r"laptop", r"computer", r"pixel", r"samsung", r"macbook",
                     r"tablet"),
              _words(r"new (?:phone|laptop|computer|tablet)",
                     r"(?:switched to|upgraded to|bought|got) (?:a |an |the |my )?(?:new )?(?:[\w-]+ )?(?:phone|laptop|"
                     r"iphone|pixel|android|macbook|tablet|computer)")),
    Attribute("hobby",
              _words(r"paint(?:ing)?", r"guitar", r"piano", r"knit(?:ting)?", r"photography", r"hobby", r"chess",
                     r"pottery", r"climbing", r"dance|dancing", r"violin", r"baking"),
              # taking up a hobby adds one ("picked up the guitar" leaves the chess): only giving one up changes it
              _words(r"(?:stopped|quit|gave up|no longer) (?:playing |doing |going to )?(?:the |my )?"
                     r"(?:painting|guitar|piano|knitting|photography|chess|pottery|climbing|dancing|dance|violin|baking)")),
    Attribute("health",
              _words(r"medication", r"meds", r"pills?", r"diagnos(?:is|ed)", r"allerg(?:y|ic)", r"insulin",
                     r"therapy", r"treatment", r"dose", r"prescri(?:bed|ption)", r"\d+ ?(?:mg|mcg)", r"inhaler",
                     r"chemo(?:therapy)?", r"painkillers?", r"ibuprofen", r"paracetamol", r"physio(?:therapy)?",
                     r"antidepressants?", r"steroids?"),
              _words(r"stopped taking", r"switched (?:to|from)", r"new (?:medication|meds|prescription)",
                     r"changed (?:my )?dose", r"off (?:the|my) (?:meds|medication|pills)", r"no longer (?:take|on)",
                     r"(?:raised|lowered|increased|reduced|upped|changed) (?:my |the )?(?:\w+ )?dose",
                     r"new (?:\w+ ){0,3}inhaler",
                     r"finished (?:my |the |her |his |their )?(?:last )?(?:round of |course of )?"
                     r"(?:chemo|treatment|course|radiotherapy)",
                     r"(?:haven'?t|no longer|don'?t) (?:needed|need|take|taken) (?:a single |any |my |the )?"
                     r"(?:\w+ )?(?:painkillers?|pills?|meds|medication|inhaler|insulin)")),
    Attribute("name",
              _words(r"name", r"calls? me", r"nickname", r"go by", r"surname"),
              _words(r"changed my (?:name|surname)", r"now go by", r"call me \w+ now", r"took (?:his|her) name",
                     r"go by \w+ now")),
    Attribute("language",
              _words(r"learning", _LANGUAGES, r"lessons"),
              _words(rf"switched to (?:learning )?(?:{_LANGUAGES})", r"switched to learning", r"now learning")),
)

# A change said without a verb of the lexicon: "not even on weekends anymore", "I cycle to work instead", "since
# starting physio I haven't ...". It changes the attributes whose terms the same clause has.
_GENERIC_CHANGE = re.compile(
    r"\b(?:no longer|anymore|any more|these days|nowadays)\b|(?<![.!?] )(?<!^)\binstead\b(?! of \w+ing)|"
    r"\bsince (?:starting|switching|moving|quitting|i (?:started|switched|moved|quit|began))\b.{0,60}?"
    r"\b(?:i|we) (?:haven'?t|have not|no longer|don'?t|do not|hardly|rarely|only)\b", re.IGNORECASE)

# Another person's change, told by the speaker: "Uncle Ray retired in January!", "Mum finished her last round of
# chemo", "Vikram was made head of the department". The subject opens the clause and the cue follows it.
_KIN = (r"mum|mom|mam|mother|dad|father|sister|brother|son|daughter|husband|wife|partner|boyfriend|girlfriend|"
        r"fianc[eé]e?|grandma|grandpa|gran|granny|grandad|grandmother|grandfather|nana|uncle|aunt|auntie|aunty|"
        r"cousin|niece|nephew|stepdad|stepmum|stepmom|(?:mother|father|sister|brother)-in-law")
_KNOWN = r"friend|mate|buddy|pal|colleague|coworker|co-worker|neighbou?r|boss|flatmate|roommate|housemate|manager"
_TITLES = r"uncle|aunt|auntie|aunty|cousin|grandma|grandpa|granny|gran|nana|dr|mr|mrs|ms|miss"
_SUBJECT = re.compile(
    rf"^(?:(?:my|our)\s+(?:(?:older|younger|big|little|baby|best|old|eldest|oldest|youngest|dear)\s+)?"
    rf"(?:(?P<kin>{_KIN})|(?:{_KNOWN}))(?:,?\s+(?P<kname>(?-i:[A-Z])[\w'-]+))?"
    rf"|(?:(?P<title>{_TITLES})\.?\s+)?(?P<name>(?-i:[A-Z])[\w'-]+))"
    r"(?:\s+and\s+(?:his|her|their)\s+(?:\w+\s+)?\w+)?"
    r"\s*,?\s*(?:(?:has|had|have|'s|’s|is|was|were|just|finally|officially|actually|recently|got|been|also|now)\s+)*$",
    re.IGNORECASE)
_NOT_SUBJECTS = frozenset({
    "mine", "ours", "yours", "everyone", "somebody", "nobody", "update", "news", "guess", "good", "great", "big",
    "sadly", "luckily", "honestly", "well", "yes", "yeah", "no", "okay", "ok", "oh", "wow", "last", "next", "first",
    "apparently", "officially", "anyway", "btw", "fun", "fact", "plus", "still", "turns", "life", "work", "school",
})
_KIN_WORDS = re.compile(rf"^(?:{_KIN})$", re.IGNORECASE)
# What a third person's change says that the speaker's own does not ("Ray retired", "he quit his job").
_THIRD_CHANGES: dict[str, re.Pattern[str]] = {
    "job": _words(r"retired", r"(?:quit|left) (?:his|her|their) (?:job|company|position|firm)",
                  r"lost (?:his|her|their) job", r"(?:was|got|been) (?:fired|laid off|made redundant|sacked)",
                  r"(?:got|landed|started) a (?:new )?job", r"now works?"),
}
# How a third person's state is told: "Vikram is a lecturer at ...", "Ray is still driving trucks".
_THIRD_TERMS: dict[str, re.Pattern[str]] = {
    "job": _words(r"(?:works?|working|worked) (?:as|at|for|in|on)", r"job",
                  rf"(?:is|'s|’s|was) (?:still )?an? (?:\w+ ){{0,3}}(?:{_PROFESSIONS})",
                  r"driv(?:es|ing) (?:\w+ )?(?:trucks?|lorr(?:y|ies)|taxis?|cabs?|buses|vans?)", r"retire[sd]?",
                  r"retirement"),
}
_ELIDED = re.compile(r"^(?:just |finally |officially )?(?:[a-z]{3,}ed|got|sold|quit|left|hung|took|gave|"
                     r"made|bought|went|broke|split|lost)\b", re.IGNORECASE)
"""A clause that opens with its verb in the past ("Got my certificate", "Sold the Vespa") is the speaker's own; one
that opens with a gerund only when the gerund is the cue ("Unpacking the last boxes in Valencia"), never a general
remark ("Dealing with a new car breaking down is such a hassle")."""
_HEDGE = _words(r"if", r"would", r"i'?d", r"we'?d", r"probably", r"might", r"maybe", r"perhaps",
                r"thinking (?:about|of)", r"considering",
                r"plan(?:ning)? to", r"want(?:s|ed)? to", r"hope to", r"hoping to", r"could", r"should", r"wish",
                r"someday", r"one day", r"going to", r"gonna", r"will", r"might", r"dream", r"imagine")
_WISH = _words(r"if", r"would", r"i'?d", r"we'?d", r"probably", r"might", r"maybe", r"perhaps", r"could", r"should",
               r"wish", r"hope to", r"hoping to",
               r"thinking (?:about|of)", r"considering", r"someday", r"one day", r"dream", r"imagine")
_ADDITION_WORDS = r"also|as well|another|part[- ]time|on the side"
_SAME = re.compile(rf"\b(?:still|again|{_ADDITION_WORDS})\b|[, ]too[.!]?$", re.IGNORECASE)
# An addition ("also", "another", "on the side") tells of something beside the earlier value. "Still" and "again"
# do not keep a statement from standing for now: "I can lift patients again", "I'm still not chasing anyone".
_ADDITION = re.compile(rf"\b(?:{_ADDITION_WORDS})\b", re.IGNORECASE)
# "back in" tells a story only with a time after it ("back in 2019", "back in college"): "I'm allowed back in the
# group rides" is news of now; so is being or getting "used to" something.
_PAST_STORY = _words(r"when i was", r"as a kid", r"as a child", r"growing up", r"years ago",
                     r"(?<!not )(?<!['’]m )(?<!am )(?<!are )(?<!is )(?<!be )(?<!get )(?<!got )(?<!getting )used to",
                     r"back then", r"back in (?:the day|those days|my \w+ days|(?:the )?'?\d+s?|(?:high )?school|"
                     r"college|uni(?:versity)?)", r"in high school", r"in college")
# A negation just before a change's cue ("Kevin and I are NOT getting divorced", "we aren't moving") denies it,
# whatever the cue's words; a cue that needs the negation ("I don't eat meat anymore") is not denied by it.
_DENIED = re.compile(r"\b(?:not|never|(?:is|are|was|were|do|does|did|have|has|had|wo|ca|could|would|should)n['’]?t)"
                     r"\s+(?:\w+\s+)?$", re.IGNORECASE)
_NEEDS_NEGATION = _words(r"any ?more", r"no more")
_NEGATED = re.compile(r"\b(?:didn'?t|did not|haven'?t|have not|hasn'?t|never|not|won'?t|will not|don'?t|"
                      r"doesn'?t|can'?t|cannot|wouldn'?t)\s+(?:\w+\s+){0,2}?"
                      r"(?:move|moved|quit|sell|sold|leave|left|break|broke|postpone|postponed|switch|switched|"
                      r"change|changed|adopt|adopted|stop|stopped)\b", re.IGNORECASE)
# An earlier message that reports a past event ("I spent the weekend repairing my sailboat") stays true when things
# change later ("I sold the sailboat"): only a statement of how things are can be superseded.
_PAST_EVENT = _words(r"yesterday", r"last (?:week|weekend|night|month|year|summer|spring|autumn|fall|winter|monday|"
                     r"tuesday|wednesday|thursday|friday|saturday|sunday)", r"this (?:morning|afternoon)", r"ago",
                     r"(?:the )?(?:other|past) (?:day|week|weekend)", r"spent the (?:weekend|day|morning|evening)",
                     r"(?:i|we) (?:just )?(?:went|spent|repaired|fixed|visited|saw|met|watched|played|finished|tried)")
_FIRST_PERSON = _words(r"i", r"i'?m", r"i'?ve", r"i'?d", r"i'?ll", r"my", r"me", r"we", r"we'?re", r"we'?ve", r"our",
                       r"us", r"mine")
_OTHERS = _words(r"an? (?:\w+ )?(?:friend|buddy|mate|pal|colleague|neighbou?r) of (?:mine|ours)",
                 r"my (?:\w+ )?(?:friend|buddy|mate|pal|sister|brother|mom|mum|mother|dad|father|cousin|neighbou?r|"
                 r"colleague|coworker|"
                 r"husband|wife|partner|boyfriend|girlfriend|fianc[eé]e?|flatmate|manager|team|teacher|doctor|"
                 r"co-worker|boss|roommate|flatmate|aunt|uncle|son|daughter|parents|grandma|grandpa|grandmother|"
                 r"grandfather|niece|nephew|kids?|children|friends|family|relatives?|grandparents|in-laws|"
                 r"neighbou?rs)", r"(?:one|some|two|both|many|most) of (?:my|our) \w+", r"he", r"she", r"they", r"his",
                 r"her",
                 r"their", r"he'?s", r"she'?s", r"they'?re")
_SPEAKER = re.compile(r"^([^:\n]{1,60}):\s+")


def speaker_and_body(memory: Memory) -> tuple[str | None, str]:
    """A raw message's speaker (``"Speaker: text"``) and its words; a fact's subject is its first entity."""
    m = _SPEAKER.match(memory.text)
    if m is not None and memory.cites is None:
        return m.group(1).strip(), memory.text[m.end():]
    return None, memory.text


@dataclass(frozen=True)
class Change:
    """What a new statement says changed: its speaker, the attributes it changes (by the lexicon), the things it
    names as changed ("sold the Enfield", "Miguel and I broke up": lower-cased words), and the cue found."""

    speaker: str
    attributes: frozenset[str]
    cue: str
    objects: frozenset[str] = frozenset()
    subject: frozenset[str] = frozenset()
    """For another person's change: the words that name them (a name, a kin word: "ray", "mum", "patricia")."""
    family: bool = False
    """Whether the subject is the speaker's kin ("Mum"): then only the speaker's own messages name the same person."""
    generic: bool = False
    """Whether the cue is a generic one ("anymore", "instead"): the earlier statement must then be closer in meaning
    (``GENERIC_MARGIN``)."""


# A change that names what it changes: the verb and its object ("sold the Enfield", "left Amazon", "dropped
# German", "cancelled Goa") or the subject and its verb ("Miguel and I broke up", "the party is moving to 2 September",
# "Miso died"). The named thing links the change to the earlier statement that has the same word.
_OBJECT_CUES = (r"left|quit|dropped|ditched|cancell?ed|sold|traded(?: in)?|replaced|swapped|gave up(?: on)?|"
                r"given up(?: on)?|paused|"
                r"stopped|got rid of|postponed|rescheduled|switched(?: from)?|moved (?:out of|away from)|"
                r"hung up|retired from|bye bye|goodbye to|no more")
# The object is a thing named before, so no indefinite article ("left a lasting impression", "quit a job"); a
# second word belongs to it only when capitalised ("the Royal Enfield", not "left playing catchup"); a gerund
# after the verb is the activity given up ("stopped reading Ducks"), whose own object follows it.
_VERB_OBJECT = re.compile(
    rf"\b(?P<cue>{_OBJECT_CUES})\s+(?:(?P<ger>[a-z]+ing)\s+)?"
    r"(?:(?:the|my|our|his|her|their|old|that|this|on|from|out|of|with)\s+)*"
    r"(?P<obj>[A-Za-zÀ-ÿ][\w'-]*(?:\s+(?-i:[A-Z])[\w'-]*)?)", re.IGNORECASE)
# "gone" only with its auxiliary ("the Defender is gone", never "too far gone", "once you're gone")
_SUBJECT_VERB = re.compile(
    r"\b([A-Za-zÀ-ÿ][\w'-]*)(?:\s+and\s+I)?(?:(?:'s|\s+is|\s+has|\s+have|\s+was|\s+got)?\s+"
    r"(?:broke up|split up|moving to|moved to|been moved to|postponed|rescheduled|cancell?ed|died|passed away|"
    r"passed(?= (?:in|last|on|recently|this|over)\b|\s*[.,!])|"
    r"written off|got written off|stolen)|(?:'s|’s|\s+is|\s+was|\s+has been|\s+have been)\s+gone)\b",
    re.IGNORECASE)
# "left" in its other senses ("left my phone running", "left early"): a leaving names a proper noun ("left
# Amazon", "left Sydney"), a field without an article ("left journalism") or an institution one belongs to.
_LEFT_THINGS = frozenset({
    "job", "company", "firm", "band", "team", "club", "school", "university", "uni", "college", "church", "gym",
    "army", "navy", "course", "programme", "program", "group", "choir", "orchestra", "league", "office", "agency",
    "startup", "practice", "department", "city", "town", "country", "flat", "apartment", "house", "industry",
})
# A gerund given up "for good" is a habit ("No more surfing for me"); followed by anything else it is an episode
# ("I stopped watching towards the end").
_GIVEN_UP = re.compile(r"\s*(?:$|[.!,;]|for (?:me|good|now)\b|anymore\b|any more\b|altogether\b|completely\b|"
                       r"entirely\b|since\b|at all\b)", re.IGNORECASE)
# Someone else ("you", "they") just before the verb: "I assumed you stopped reading it", "they'll quit".
# ("I told you I sold the Enfield" is the speaker's: an "I" or "we" between them is the subject).
_OTHER_SUBJECT = re.compile(r"\b(?:you|u|ya|youre|you'?re|you'?ve|you'?d|they|they'?ll|theyll|he|she|it)\s+"
                            r"(?:(?!(?:i|we)\b)\w+\s+){0,2}$", re.IGNORECASE)
_NOT_NAMES = frozenset({
    "i", "we", "you", "he", "she", "they", "it", "me", "us", "them", "my", "our", "your", "his", "her", "their", "the",
    "a", "an", "this", "that", "these", "those", "and", "but", "so", "just", "finally", "also", "then", "now", "all",
    "everything", "something", "nothing", "work", "job", "home", "today", "yesterday", "week", "month", "year",
    "completely", "entirely", "totally", "again", "there", "here", "up", "out", "off", "in", "on", "to", "for",
    "time", "thing", "things", "way", "lot", "bit", "one", "day", "night", "morning", "evening", "weekend",
    # what follows "left", "stopped" or "no more" when no thing is named: "left early", "stopped by", "no more than"
    "early", "late", "soon", "yet", "already", "behind", "alone", "together", "without", "after", "before", "because",
    "since", "while", "when", "what", "which", "who", "about", "around", "over", "than", "into", "onto", "by", "at",
    "as", "if", "too", "very", "much", "many", "more", "less", "some", "any", "other", "others", "another", "each",
    "every", "both", "either", "neither", "such", "like", "same", "him", "people", "someone", "anyone", "everyone",
    "talking", "working", "trying", "doing", "going", "being", "having", "feeling", "worrying", "complaining",
    # conjunctions and prepositions that follow a verb used intransitively: "quit though", "quit cause ..."
    "though", "cause", "cuz", "coz", "bc", "towards", "toward", "through", "across", "along", "during", "until",
    "till", "far", "youre", "start", "got", "get", "go", "went", "really", "realistically", "honestly", "anyway",
    "with", "from", "of",
})


# An event moved to a date names the event: "We've moved Ella's 21st to 16 December" -> ella, 21st.
_MOVED_TO_DATE = re.compile(
    rf"\bmoved\s+((?:[\w'’]+\s+){{1,3}}?)to\s+(?:the\s+)?(?:\d|(?:{_MONTHS})\b|next\b|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)day)", re.IGNORECASE)


def _named(clause: str) -> set[str]:
    """The lower-cased words a change clause names as changed (see ``_VERB_OBJECT``, ``_SUBJECT_VERB``,
    ``_MOVED_TO_DATE``)."""
    out: set[str] = set()
    for m in _MOVED_TO_DATE.finditer(clause):
        for w in m.group(1).casefold().replace("’", "'").split():
            w = w.removesuffix("'s")
            if w not in _NOT_NAMES and len(w) >= 3 and "'" not in w:
                out.add(w)
    for m in _VERB_OBJECT.finditer(clause):
        if _OTHER_SUBJECT.search(clause[:m.start()]):
            continue
        cue = m.group("cue").casefold()
        if cue.startswith("dropped") and re.match(r"(?:\s+\w+){0,3}\s+off\b", clause[m.end("obj"):], re.IGNORECASE):
            continue  # "dropped the kids off"
        words = [w for w in m.group("obj").split()
                 if w.casefold() not in _NOT_NAMES and len(w) >= 3 and "'" not in w]
        gerund = m.group("ger")
        if gerund is not None and not words and gerund.casefold() not in _NOT_NAMES \
                and _GIVEN_UP.match(clause[m.end("ger"):]):
            words = [gerund]  # "No more surfing for me": the activity itself
        if cue == "left" and m.start("obj") > m.end("cue") + 1:  # "left my phone", "left the band"
            words = [w for w in words if w[:1].isupper() or w.casefold() in _LEFT_THINGS]
        out.update(w.casefold() for w in words)
    for m in _SUBJECT_VERB.finditer(clause):
        w = m.group(1).casefold().replace("’", "'").removesuffix("'s")  # "the ceilidh's moved to ..."
        if w not in _NOT_NAMES and len(w) >= 3 and "'" not in w:
            out.add(w)
    return out


def _clauses(text: str) -> list[str]:
    # "so" joins two clauses after a comma ("A fox got both chooks, so we've got a cat"); elsewhere it is an
    # intensifier ("was so well organised")
    return [c.strip() for c in re.split(r"(?<=[.!?;])\s+|\s+(?:but|and then)\s+|,\s+so\s+", text) if c.strip()]


_ASKS = re.compile(r"^(?:any|anyone|anybody|does|do|did|is|are|was|were|can|could|would|will|should|what|where|who|"
                   r"how|when|why|which|has|have|got|tips|thoughts|ideas)\b", re.IGNORECASE)


def _stated(clause: str) -> str | None:
    """The statement a clause makes: itself, or for one that ends in a question ("My girlfriend Sienna and I are doing
    the Great Ocean Road in March, Bec, any tips?") the part before the question, None when it all asks."""
    if not clause.endswith("?"):
        return clause
    parts = re.split(r",\s+", clause)[:-1]
    kept: list[str] = []
    for part in parts:
        if _ASKS.match(part):
            break
        kept.append(part)
    return ", ".join(kept) or None


def _statements(body: str) -> list[str]:
    """The clauses of an earlier message that state something (``_stated`` of each)."""
    return [stated for clause in _clauses(body) if (stated := _stated(clause)) is not None]


def _opening(clause: str) -> str:
    """A clause without a leading discourse word ("Also, we postponed ..." is a change, not an addition)."""
    return re.sub(r"^(?:also|anyway|oh|so|well|okay|ok|and|btw|by the way|update|news)[,:!]?\s+", "", clause,
                  flags=re.IGNORECASE)


_THEM = _words(r"them", r"him", r"her", r"they", r"their", r"the couple", r"those two")
"""Words that make a named person's engagement or break-up someone else's news ("So happy for them")."""

_NAME_THEN_PRONOUN = re.compile(r"^(?P<name>(?-i:[A-Z])[\w-]+)(?:'s|’s)?\s[^.!?;]*?,\s*(?:and\s+)?(?:he|she)\s+"
                                r"(?:(?:just|finally|has|had|'s)\s+)?$")
"""A clause that names someone and goes on with "he" or "she" before its change: the change is the named person's."""


def _is_adverb(word: str) -> bool:
    """An adverb opening a clause ("Honestly", "Sadly"), not a name that ends like one ("Lily", "Emily", "Kelly")."""
    return word.endswith("ly") and (len(word) >= 6 or word in _SHORT_ADVERBS)


_SHORT_ADVERBS = frozenset({"sadly", "oddly", "only", "early", "truly", "duly", "fully", "newly", "madly", "badly",
                            "daily", "rly"})


def _subject(before: str) -> tuple[frozenset[str], bool] | None:
    """The other person a change clause opens with ("Uncle Ray ", "Mum ", "My sister Ines has "): the words that name
    them and whether they are kin (no words: someone unnamed, "my friend"); None when the clause does not open with
    a person."""
    m = _SUBJECT.match(before.strip())
    if m is None:
        return None
    if m.group("name") is not None:
        name = m.group("name").removesuffix("'s").removesuffix("’s")
        key = name.casefold()
        if (key in _NOT_NAMES or key in _NOT_SUBJECTS or key.endswith("ing") or _is_adverb(key) or len(key) < 2
                or "'" in key or _FIRST_PERSON.fullmatch(name) or _OTHERS.fullmatch(name)):
            return None
        kin = _KIN_WORDS.match(key) is not None and m.group("title") is None
        return frozenset({key}), kin
    words = {w.casefold() for w in (m.group("kin"), m.group("kname")) if w}
    if not words:
        return frozenset(), False  # "my friend": nobody a later message can name again
    return frozenset(words), m.group("kname") is None


def _cues(clause: str, third: bool) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for attr in ATTRIBUTES:
        cue = attr.changes.search(clause)
        if cue is None and third and attr.name in _THIRD_CHANGES:
            cue = _THIRD_CHANGES[attr.name].search(clause)
        if cue is not None:
            found.append((attr.name, cue.group(0)))
    return found


_ADDED = re.compile(r"\b(?:as well|on the side)\b|[, ]too[.!]?$", re.IGNORECASE)


def _same(clause: str, attributes: Sequence[str], cue_at: int) -> bool:
    """A restatement or an addition ("still", "also", "again", "another") up to the end of the change's phrase, not
    counting the cues' own words: "I'm eating garlic again" and "..., I'll never complain again" are changes."""
    end = re.search(r"[,;]", clause[cue_at:])
    phrase = clause[: cue_at + end.start()] if end is not None else clause
    for name in attributes:
        phrase = ATTRIBUTES_BY_NAME[name].changes.sub(" ", phrase)
    return _SAME.search(phrase) is not None or _ADDED.search(clause) is not None


# What keeps a later message from standing for how things are now, though it is about the same thing (recall's
# later-first order, ``plain_statement``): a visit or trip, an age in a story, an addition ("... too, for fun").
_AWAY = _words(r"visit(?:ing|ed)?", r"trip", r"holiday", r"vacation", r"while (?:in|at|visiting)",
               r"spent (?:the |a )?(?:\w+ )?(?:weekend|week|day|night|half-term|summer|holidays?)",
               r"for the (?:\w+ )?weekend", r"(?:went|go|going) to (?:a|the|an) (?:\w+ )?(?:game|match|gig|concert)")
_AGE_STORY = re.compile(r"\b(?:at|aged?) (?:\d{1,2}|(?:thir|four|fif|six|seven|eigh|nine)teen|twenty)\b", re.IGNORECASE)
_TOO = re.compile(r"\s(?:too|as well)(?=[,.!;]|$)", re.IGNORECASE)
_OUR_OTHERS = _words(r"our (?:\w+ )?(?:friends?|neighbou?rs?|parents|kids|children|family|relatives|cousins?)")
_SMALL_TALK = _words(r"(?:i'?m|im|i am|all|we'?re) (?:\w+ )?(?:great|good|well|ok|okay|fine|alright)",
                     r"thanks? (?:you )?for asking", r"good (?:night|morning|evening)", r"nice to (?:meet|talk|chat)",
                     r"talk (?:to you )?(?:soon|later|tomorrow)", r"see (?:you|ya) (?:soon|later|tomorrow)")
_ASKS_UNMARKED = re.compile(r"^(?:(?:hey|hi|so|oh|and|but|well|ok|okay),?\s+)?(?:have|do|did|are|were|can|could|would|"
                            r"will|is)\s+(?:you|u|ya)\b", re.IGNORECASE)
"""A question without its question mark ("Hey have you ever eaten ..."), as real chat writes them."""
_OWN_OPENING = re.compile(r"^(?:just |finally |officially |now |still )?(?:[a-z]{3,}(?:ed|ing)|got|sold|quit|left|hung|"
                          r"took|gave|made|bought|went|broke|split|lost|found|had|came|won|began|met|saw|spent|kept|"
                          r"sent|built|paid|felt|heard)\b", re.IGNORECASE)
"""A clause that opens with its verb, its subject left out: the speaker's ("Found a charger", "Plugging the Kia in
every night now")."""


def plain_statement(memory: Memory) -> bool:
    """Whether a memory states how things are for its subject (``subject_of``): it says something (not only asks),
    and none of what it says is a plan or wish, an addition ("also", "on the side", "... too"), a story of the past,
    a negated change, a visit or trip, or, for a raw message, news of someone else. Recall's later-first order moves
    only such a memory ahead of an earlier one of the same subject."""
    subject = subject_of(memory)
    if subject is None:
        return False
    speaker, body = speaker_and_body(memory)
    # Small talk ("Talk to you tomorrow! Good night", "I'm doing great, thanks for asking") and questions without
    # their mark state nothing; what is left of a message must.
    said = [left for clause in _statements(body) if not _ASKS_UNMARKED.match(clause)
            and (left := _SMALL_TALK.sub("", clause).strip(" ,.!;-"))]
    if sum(len(clause.split()) for clause in said) < 4:  # nothing said, or "Thanks, Mel!"
        return False
    own = speaker == subject
    # The speaker's own state is said of the speaker ("I", "my", "we", or a clause opening with its verb: "Sold the
    # Enfield"); a remark about the world ("The NFL is full of talent") states nothing about them.
    if own and not any(_FIRST_PERSON.search(clause) or _OWN_OPENING.match(clause) for clause in said):
        return False
    for clause in said:
        if (_HEDGE.search(clause) or _ADDITION.search(clause) or _TOO.search(clause) or _PAST_STORY.search(clause)
                or _AGE_STORY.search(clause) or _NEGATED.search(clause) or _AWAY.search(clause)):
            return False
        # A fact, or a message telling of someone else, speaks of its subject in the third person; in a message of
        # the speaker's own, "he", "my sister" is someone else.
        if own and (_OTHERS.search(clause) or _OUR_OTHERS.search(clause)):
            return False
    return True


_FACT_SUBJECT = re.compile(r"^((?-i:[A-Z])[\w-]+)\s")
_TOLD_OF = re.compile(
    rf"^(?:(?:my|our)\s+(?:(?:older|younger|big|little|baby|best|eldest|youngest)\s+)?(?:{_KIN}|{_KNOWN}),?\s+)?"
    r"(?P<name>(?-i:[A-Z])[\w-]+)(?:'s|’s)?\s", re.IGNORECASE)


def subject_of(memory: Memory) -> str | None:
    """Whom a memory is about: the person a raw message opens with when it tells of someone else ("Bec: Lily's
    finished her honours", "Chidi: My sister Ngozi is a resident now" -> Lily, Ngozi; a name of the message's
    entities, in a first clause without "I", "my", "we"), else its speaker; the person an LLM fact opens with when
    it is one of the fact's entities ("Zoe started as a trainee vet nurse" -> Zoe; "Zoe's brother ..." -> None);
    else None."""
    speaker, body = speaker_and_body(memory)
    if speaker is not None:
        told = _told_of(memory, body)
        return told if told is not None and told.casefold() != speaker.casefold() else speaker
    if memory.cites is None:
        return None
    m = _FACT_SUBJECT.match(memory.text)
    if m is None or m.group(1).casefold() not in {e.casefold() for e in memory.entities}:
        return None
    return m.group(1)


def _told_of(memory: Memory, body: str) -> str | None:
    clauses = _clauses(body)
    if not clauses:
        return None
    m = _TOLD_OF.match(clauses[0])
    if m is None or m.group("name").casefold() not in {e.casefold() for e in memory.entities}:
        return None
    kin = m.start("name") > 0  # "My sister Ngozi ...": the name after the kin word
    if not kin and _FIRST_PERSON.search(clauses[0]):
        return None  # "Ellie set up my new iPhone": the speaker's own phone
    return m.group("name")


def change_of(memory: Memory) -> Change | None:
    """The change a raw message states about its speaker or about another person it names first ("Uncle Ray
    retired"), or None (a question, a plan or wish, a restatement, an addition, a story about the past, news of
    someone unnamed, a negated change, no cue)."""
    speaker, body = speaker_and_body(memory)
    if speaker is None:
        return None
    for clause in (_opening(c) for c in _clauses(body)):
        if clause.endswith("?"):
            continue
        found = _cues(clause, third=True)
        objects = _named(clause)
        generic = None
        if not found and not objects:
            generic = _GENERIC_CHANGE.search(clause)
            if generic is None:
                continue
            found = [(a.name, generic.group(0)) for a in ATTRIBUTES if a.terms.search(clause)]
            if not found:
                continue
        cues = [c for _, c in found] or [m.group(0) for m in chain(_VERB_OBJECT.finditer(clause),
                                                                   _SUBJECT_VERB.finditer(clause))]
        cue_at = min((at for c in cues if (at := clause.lower().find(c.lower())) >= 0), default=0)
        before = clause[:cue_at]
        if (_HEDGE.search(before) or _same(clause, [a for a, _ in found], cue_at) or _PAST_STORY.search(clause)
                or _NEGATED.search(clause) or (_DENIED.search(before) and not _NEEDS_NEGATION.match(cues[0]))
                or (generic is not None and _UNSETTLED.search(clause))):
            continue
        subject = _subject(before) if before.strip() else None
        if subject is None and (named_first := _NAME_THEN_PRONOUN.match(before)) is not None:
            subject = _subject(named_first.group("name"))  # "Tomek's no longer in Norway, he got a job at ..."
        if subject is not None:
            if generic is not None or not subject[0]:
                continue
            if subject[1]:  # kin are no pets: "my dad passed away"
                found = [(a, c) for a, c in found if a != "pet"]
                if not found:
                    continue
            if ({a for a, _ in found} == {"partner"} and not subject[1] and _FIRST_PERSON.search(body)
                    and not _OTHERS.search(body) and not _THEM.search(body)):  # "Sam proposed! Happy for them"
                # "Jake's my ex now", "Kofi proposed! I said yes": the speaker's own relationship, named by the partner
                return Change(speaker, frozenset({"partner"}), cues[0], frozenset(objects) | subject[0])
            return Change(speaker, frozenset(a for a, _ in found), cues[0], frozenset(objects), subject[0],
                          subject[1])
        found = [(a, c) for a, c in found if a not in _THIRD_CHANGES or _THIRD_CHANGES[a].search(c) is None
                 or ATTRIBUTES_BY_NAME[a].changes.search(clause) is not None]
        if not found and not objects:
            continue
        if _OTHERS.search(before):
            continue
        own = _FIRST_PERSON.search(clause) or cue_at == 0 or _ELIDED.match(clause)
        if not own and not objects and not _EVENT.search(clause):
            continue
        return Change(speaker, frozenset(a for a, _ in found), cues[0], frozenset(objects),
                      generic=generic is not None)
    return None


GENERIC_MARGIN = 0.15
"""How much closer than ``min_similarity`` an earlier statement must be to be changed by a generic cue."""
_EVENT = _words(r"wedding", r"party", r"trip", r"flight", r"ceremony", r"ceilidh", r"concert")
ATTRIBUTES_BY_NAME = {a.name: a for a in ATTRIBUTES}
# A one-off or a plan told with a generic cue ("I had tea instead this morning", "I'll drive instead") is no change
# of how things are.
_UNSETTLED = _words(r"this (?:morning|afternoon|evening)", r"tonight", r"today", r"yesterday", r"last night",
                    r"tomorrow", r"\w+'ll", r"will", r"going to", r"gonna", r"let'?s", r"for now", r"for once",
                    r"trying(?: to| out)?", r"try to")


def _stem_at(word: str, text: str) -> int:
    """Where ``text`` holds ``word`` or a form of it ("journalism" ~ "journalist", "surf" ~ "surfing", "ute's"):
    the character offset, or -1."""
    for m in re.finditer(r"[\w-]+", text.casefold()):
        other = m.group(0)
        if other == word:
            return m.start()
        shorter, longer = sorted((word, other), key=len)
        if len(shorter) >= 4 and longer.startswith(shorter):
            return m.start()
        n = 0
        for a, b in zip(word, other, strict=False):
            if a != b:
                break
            n += 1
        if n >= 6 and n >= 0.75 * min(len(word), len(other)):
            return m.start()
    return -1


def names(memory: Memory, speaker: str, objects: frozenset[str]) -> str | None:
    """Which of ``objects`` an earlier raw message of ``speaker`` is about, stated as how things are (not asked,
    planned or told as a story of the past), or None."""
    who, body = speaker_and_body(memory)
    if who is None or who.casefold() != speaker.casefold() or not objects:
        return None
    for clause in _statements(body):
        if _PAST_STORY.search(clause) or _PAST_EVENT.search(clause):
            continue
        for word in sorted(objects):
            at = _stem_at(word, clause)
            if at >= 0 and not _WISH.search(clause[:at]):
                return word
    return None


def states(memory: Memory, speaker: str, attributes: frozenset[str]) -> str | None:
    """Which of ``attributes`` an earlier raw message of ``speaker`` states about them (first person, not a question,
    a plan or a story about the past), or None."""
    who, body = speaker_and_body(memory)
    if who is None or who.casefold() != speaker.casefold() or not attributes:
        return None
    for clause in _statements(body):
        if _WISH.search(clause) or _PAST_STORY.search(clause) or _PAST_EVENT.search(clause):
            continue
        for attr in ATTRIBUTES:
            if attr.name not in attributes or not attr.terms.search(clause):
                continue
            own = _FIRST_PERSON.search(clause) or (_GERUND.match(clause) and _FIRST_PERSON.search(body))
            if _OTHERS.search(clause) and not own:
                continue
            if attr.name != "event" and not own:
                continue
            if attr.name == "event" and not _DATED.search(clause):
                continue  # an event's state is its date: "the wedding is on 14 June", not "before the wedding"
            return attr.name
    return None


_GERUND = re.compile(r"^[A-Za-z]{3,}ing\b")
"""A clause that opens with a gerund ("Renting in Bondi is daylight robbery") tells of the speaker when the message
says "I" or "my" elsewhere."""


def tells_of(memory: Memory, change: Change) -> str | None:
    """Which of a third person's ``change.attributes`` an earlier raw message states about them: a clause that names
    them ("Uncle Ray is still driving trucks", "My mum Patricia is doing chemo") and has the attribute's terms, or
    their own first-person statement when they are a speaker of the chat ("Ana: I live in Lisbon"); None otherwise.
    Kin ("Mum") is named again only by the same speaker."""
    who, body = speaker_and_body(memory)
    if who is None or not change.subject:
        return None
    if change.family and who.casefold() != change.speaker.casefold():
        return None
    if not change.family and who.casefold() in change.subject:
        return states(memory, who, change.attributes)
    for clause in _statements(body):
        if _WISH.search(clause) or _PAST_STORY.search(clause) or _PAST_EVENT.search(clause):
            continue
        named = [m for w in change.subject for m in re.finditer(rf"\b{re.escape(w)}\b", clause, re.IGNORECASE)
                 if change.family or m.group(0)[:1].isupper()]
        if not named:
            continue
        at = min(m.start() for m in named)
        for attr in ATTRIBUTES:
            if attr.name not in change.attributes:
                continue
            third = _THIRD_TERMS.get(attr.name)
            term = attr.terms.search(clause, at) or (third.search(clause, at) if third is not None else None)
            if term is None or re.search(r"\b(?:i|i'?m|we|we'?re)\b", clause[at:term.start()], re.IGNORECASE):
                continue
            if attr.name == "event" and not _DATED.search(clause):
                continue
            return attr.name
    return None


class DetectorStore(UnitStore, SearchStore, Protocol):
    """What the detector reads: earlier memories, by id and by keyword."""


class SupersessionDetector:
    """Finds, for a retain's new raw messages, the earlier messages they supersede (see the module)."""

    def __init__(self, store: DetectorStore, index: VectorIndex, settings: SupersessionSettings) -> None:
        """Reads earlier memories through ``store`` and finds close ones with ``index``."""
        self.store = store
        self.index = index
        self.settings = settings

    def __call__(self, bank_id: str, units: Sequence[Memory], facts: Sequence[ExtractedFact],
                 vectors: np.ndarray) -> list[Supersession]:
        """The supersessions to record with ``units`` (none when nothing states a change)."""
        if not self.settings.enabled or len(vectors) != len(units):
            return []
        out: list[Supersession] = self._inherited(bank_id, units)
        batch = {u.id for u in units}
        taken: set[str] = set()
        for unit, vector in zip(units, vectors, strict=True):
            if unit.network not in NETWORKS or unit.cites is not None:
                continue
            change = change_of(unit)
            if change is None:
                continue
            found = self._earlier(bank_id, unit, change, vector, batch | taken)
            if found is not None:
                old, how = found
                taken.add(old.id)
                out.append(Supersession(old.id, unit.id, unit.mentioned_at or unit.created_at,
                                        {"by": "rule", "cue": change.cue, **how}))
        return out

    def _inherited(self, bank_id: str, units: Sequence[Memory]) -> list[Supersession]:
        """New LLM facts that cite only superseded messages are history like their messages: superseded by what
        superseded the first of them (the facts job can run long after a later message changed things)."""
        facts = [u for u in units if u.cites]
        cited = self.store.get_units(bank_id, list(dict.fromkeys(c for f in facts for c in f.cites or ()))) if facts \
            else []
        by_id = {m.id: m for m in cited}
        out: list[Supersession] = []
        for fact in facts:
            sources = [by_id.get(c) for c in fact.cites or ()]
            if not sources or any(m is None or m.superseded_by is None for m in sources):
                continue
            first = sources[0]
            if first is None or first.superseded_by is None or first.valid_until is None:
                continue
            out.append(Supersession(fact.id, first.superseded_by, first.valid_until,
                                    {"by": "rule", "via": first.id}))
        return out

    def follow(self, bank_id: str, changes: Sequence[Supersession]) -> list[Supersession]:
        """Facts that cite only messages superseded now (or before) are superseded with them, by the same memory."""
        old = {c.old_id: c for c in changes}
        if not old:
            return []
        out: list[Supersession] = []
        for uid, meta in self.store.units_with_references(bank_id):
            cites = meta.get(FACT_CITES_KEY)
            if not isinstance(cites, list) or not cites or meta.get(SUPERSEDED_BY_KEY) or uid in old:
                continue
            hit = next((old[str(c)] for c in cites if str(c) in old), None)
            if hit is None:
                continue
            others = [str(c) for c in cites if str(c) not in old]
            if others and any(m.superseded_by is None for m in self.store.get_units(bank_id, others)):
                continue  # it rests on a message that still holds
            out.append(Supersession(uid, hit.new_id, hit.valid_until, {"by": "rule", "via": hit.old_id}))
        return out

    def _earlier(self, bank_id: str, unit: Memory, change: Change, vector: np.ndarray,
                 skip: set[str]) -> tuple[Memory, dict[str, Any]] | None:
        """The earlier statement ``change`` supersedes, with how it was matched: the latest one of the speaker that
        has what the change names, else the closest one of the speaker that states a changed attribute."""
        said = unit.mentioned_at or unit.created_at
        scored = {i: s for i, s in self.index.query(bank_id, vector, self.settings.candidates) if i not in skip}
        keyed = [i for i, _ in self.store.keyword_search(bank_id, " ".join(sorted(change.objects)),
                                                         self.settings.candidates)] if change.objects else []
        ids = list(dict.fromkeys([*scored, *keyed]))
        earlier = [m for m in self.store.get_units(bank_id, [i for i in ids if i not in skip])
                   if m.network in NETWORKS and m.cites is None and not m.superseded_by
                   and (m.mentioned_at or m.created_at) < said]
        named = [(m, w) for m in earlier if (w := names(m, change.speaker, change.objects)) is not None]
        if change.subject and not change.family and change.objects:
            # "Amara: Chidi cancelled Fitness First": the thing named is in what Chidi said of himself
            theirs = [(m, w) for m in earlier if (who := speaker_and_body(m)[0]) is not None
                      and who.casefold() in change.subject and (w := names(m, who, change.objects)) is not None]
            if theirs:
                old, word = max(theirs, key=lambda mw: mw[0].mentioned_at or mw[0].created_at)
                return old, {"named": word, "subject": sorted(change.subject)}
        if change.subject and not named:  # another person's change: the closest earlier statement about them
            for old in sorted((m for m in earlier if scored.get(m.id, -1.0) >= self.settings.min_similarity),
                              key=lambda m: -scored[m.id]):
                attribute = tells_of(old, change)
                if attribute is not None:
                    return old, {"attribute": attribute, "subject": sorted(change.subject),
                                 "similarity": round(float(scored[old.id]), 3)}
            return None
        if change.attributes:  # "Miguel and I broke up": of the statements about Miguel, the one about the relationship
            named = [(m, w) for m, w in named if states(m, change.speaker, change.attributes) is not None] or named
        if change.attributes == frozenset({"event"}):  # an event's state is its date: "Ella's 21st is on 9 December"
            named = [(m, w) for m, w in named if _DATED.search(speaker_and_body(m)[1])]
        if named:
            old, word = max(named, key=lambda mw: mw[0].mentioned_at or mw[0].created_at)
            return old, {"named": word}
        floor = self.settings.min_similarity + (GENERIC_MARGIN if change.generic else 0.0)
        close = sorted((m for m in earlier if scored.get(m.id, -1.0) >= floor),
                       key=lambda m: -scored[m.id])
        for old in close:
            attribute = states(old, change.speaker, change.attributes)
            if attribute is not None:
                return old, {"attribute": attribute, "similarity": round(float(scored[old.id]), 3)}
        return None
