"""Generated answers for the import benchmark and the self-name prefilter's equivalence test.

:func:`answers` yields seeded support-desk answers of about 400 characters: most plain
(markdown, curly quotes, accents, code, HTML now and then, as real answers have), and a
share with a name planted in one of the forms the detector reads through (markup inside
the word, character references, invisible characters, look-alike and fullwidth letters,
spelled-out letters, underscores, other languages), in a self-identifying or an ordinary
context, plus excerpts of the project's self-identification corpora.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

CORPORA = Path(__file__).resolve().parent.parent / "tests" / "data" / "self_id"

_OPENINGS = (
    "Thanks for reaching out about ticket {t}.", "Good question!", "Here's how to fix it:",
    "Sorry for the trouble with your order.", "**Short answer:** yes, you can.", "Let’s walk through it.",
    "I checked the logs for request #{t}.", "Great, that narrows it down.",
)
_BODIES = (
    "The second charge has been refunded and should appear within {d} business days, depending on your bank.",
    "Open *Settings → Billing*, pick the invoice and press `Download PDF`.",
    "Run `pip install --upgrade judgelab` and restart the server; the cache_dir is rebuilt on start.",
    "The café’s Wi-Fi blocks port 22 — try port 443 instead, or a mobile hotspot.",
    "Your order ID is A-{t}-{d}; quote it when you call support.",
    "Naïve résumé parsing fails on “smart quotes”; normalise them first (NFKC).",
    "Step 1. Export. Step 2. Re-import. Step 3. Verify the row count matches.",
    "Clear the browser cache, sign out, and sign in again; the new plan shows after that.",
    "The invoice lists the tax separately, so the total matches your bank statement.",
    "数据已经同步完成，请刷新页面。", "Die Datei wurde gespeichert; bitte neu laden.",
)
#: Bodies that make the prefilter look twice: ordinary mentions of makers and everyday senses,
#: character references, tags, letters one separator apart.
_TRICKY = (
    "Use `a < b && b > c` when both bounds matter, e.g. `if x<y:`.",
    "In Excel or Google Sheets, select the start_date column and choose *Format → Date*.",
    "If you pay through the App Store or Google Play, change the plan there instead.",
    "We recommend OpenAI's API or a local model for the summaries; both work with the plug-in.",
    "<p>Paste this into the page:</p> <b>Note:</b> the tag must close.",
    "AT&T and R&D accounts are billed monthly; see the FAQ &amp; the pricing page.",
    "A llama farm in Peru ships wool worldwide; delivery takes {d} weeks.",
    "Claude Monet painted the water lilies at Giverny over thirty years.",
    "The formula is a + b + c, then divide by n to get the mean.",
)
_CLOSINGS = (
    "Nothing else is needed from you.", "Let me know if that helps!", "Hope this helps.",
    "Feel free to reply to this thread.", "", "— Support team",
)
_NAMES = ("Claude", "ChatGPT", "GPT-4o", "Gemini", "Llama 3", "Qwen2.5", "DeepSeek-R1", "Mistral Large",
          "Copilot", "Grok", "Kimi", "o3", "gpt-5.1-mini", "Claude 3.5 Sonnet")
_MAKERS = ("OpenAI", "Anthropic", "Google DeepMind", "Meta", "Microsoft", "Alibaba Cloud", "Mistral AI",
           "xAI", "Moonshot AI", "Baidu", "Open AI")
_CONTEXTS = (
    "I'm {n}, and I can help with that.", "As an AI developed by {m}, I can't see your card.",
    "{n} here — let me check.", "My name is {n}.", "I am a large language model trained by {m}.",
    "I was built by {m}, so I follow their policies.", "This reply was generated with {n}.",
    "Speaking as {n}, I'd restart the router.", "Je suis {n}, un assistant développé par {m}.",
    "Ich bin {n} von {m}.", "我是{n}，由{m}开发。", "You could try {n} for this, or {m}'s API.",
    "Some teams compare {n} with other tools.", "I, {n}, recommend the second option.",
)
#: Look-alike letters: Cyrillic and Greek capitals, fullwidth forms.
_LOOKALIKE = {"C": "\u0421", "a": "\u0430", "e": "\u0435", "o": "\u03bf", "G": "\uff27", "p": "\u0440"}


def _disguise(name: str, rng: random.Random) -> str:
    """``name`` written in one of the forms the detector reads through (or as it is)."""
    form = rng.randrange(10)
    cut = max(1, len(name) // 2)
    if form == 0:
        return f"{name[:cut]}**{name[cut:]}**"
    if form == 1:
        return f"{name[:cut]}&#{ord(name[cut])};{name[cut + 1:]}"
    if form == 2:
        return f"{name[:cut]}\u200b{name[cut:]}"
    if form == 3:
        return "".join(_LOOKALIKE.get(ch, ch) for ch in name)
    if form == 4 and name.isalpha():
        return rng.choice("- .").join(name)
    if form == 5:
        return name.replace("-", "_").replace(" ", "_")
    if form == 6:
        return f"{name[:cut]}<b>{name[cut:]}</b>"
    if form == 7:
        return "".join(chr(ord(ch) + 0xFEE0) if ch.isascii() and ch.isalnum() else ch for ch in name)
    return name


def _corpus_texts() -> list[str]:
    texts = []
    for path in sorted(CORPORA.rglob("*.jsonl")):
        with path.open(encoding="utf-8") as fh:
            texts += [json.loads(line)["text"] for line in fh if line.strip()]
    return texts


def answers(n: int, *, seed: int = 0, planted: float = 0.05, tricky: float = 0.03) -> Iterator[str]:
    """``n`` answer texts; about ``planted`` of them carry a name (a few quote the corpora).

    Each of an answer's three sentences is a tricky one (:data:`_TRICKY`) with probability ``tricky``.
    """
    rng = random.Random(seed)
    corpus = _corpus_texts()
    for t in range(n):
        bodies = [rng.choice(_TRICKY if rng.random() < tricky else _BODIES) for _ in range(3)]
        parts = [rng.choice(_OPENINGS), *bodies, rng.choice(_CLOSINGS)]
        text = " ".join(p for p in parts if p).format(t=t, d=3 + t % 5)
        roll = rng.random()
        if roll < planted:
            context = rng.choice(_CONTEXTS).format(n=_disguise(rng.choice(_NAMES), rng),
                                                   m=_disguise(rng.choice(_MAKERS), rng))
            words = text.split(" ")
            at = rng.randrange(len(words) + 1)
            text = " ".join([*words[:at], context, *words[at:]])
        elif roll < planted * 1.2:
            text = f"{text}\n\n{rng.choice(corpus)}"
        yield text
