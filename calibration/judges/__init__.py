"""Judge back-ends: the :class:`Judge` protocol, the real Anthropic judge and a fake one."""

from calibration.judges._base import (
    PAIRWISE_FORMATS,
    POINTWISE_FORMATS,
    Format,
    Judge,
    JudgeCall,
    Judgement,
    Kind,
)
from calibration.judges._fake import FakeJudge, TextFeatures, text_features, text_quality

__all__ = [
    "PAIRWISE_FORMATS",
    "POINTWISE_FORMATS",
    "FakeJudge",
    "Format",
    "Judge",
    "JudgeCall",
    "Judgement",
    "Kind",
    "TextFeatures",
    "text_features",
    "text_quality",
]
