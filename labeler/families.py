"""Model families from model names: the one table judgelab reads a family from a model id with.

A judge given no family (``judgelab.calibration.judges.infer_family``) and an import whose file names a
model but no family (``--from otel``) both read it here.
"""

from __future__ import annotations

import re

__all__ = ["infer_family"]

# Model-name prefixes -> family, for the self-preference gap when no family is given.
_FAMILIES = (
    (re.compile(r"^(gpt|o\d|chatgpt|text-davinci|davinci)", re.I), "gpt"),
    (re.compile(r"^(models/)?gemini", re.I), "gemini"),
    (re.compile(r"^claude", re.I), "claude"),
    (re.compile(r"^(meta-llama/|llama)", re.I), "llama"),
    (re.compile(r"^(qwen/|qwen)", re.I), "qwen"),
    (re.compile(r"^(mistralai/|mistral|mixtral)", re.I), "mistral"),
    (re.compile(r"^(google/)?gemma", re.I), "gemma"),
    (re.compile(r"^(deepseek)", re.I), "deepseek"),
)


def infer_family(model: str) -> str | None:
    """The model family a model id names, when its name says (``None`` otherwise).

    >>> infer_family("gpt-4.1-mini"), infer_family("o3"), infer_family("gemini-2.5-flash"), infer_family("x")
    ('gpt', 'gpt', 'gemini', None)
    >>> infer_family("meta-llama/Llama-3.1-8B-Instruct"), infer_family("qwen2.5:7b")
    ('llama', 'qwen')
    """
    name = model.rsplit("/", 1)[-1] if model.startswith(("models/",)) else model
    for pattern, family in _FAMILIES:
        if pattern.match(name) or pattern.match(model):
            return family
    return None
