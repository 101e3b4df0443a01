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

__all__ = [
    "PAIRWISE_FORMATS",
    "POINTWISE_FORMATS",
    "Format",
    "Judge",
    "JudgeCall",
    "Judgement",
    "Kind",
]
