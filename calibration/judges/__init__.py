"""Judge back-ends: the :class:`Judge` protocol, the real Anthropic judge and a fake one."""

from calibration.judges._anthropic import (
    DEFAULT_MODEL,
    AnthropicJudge,
    BatchStatus,
    JudgeCallError,
    create_batch_once,
    find_batch,
    patiently,
    rejects_sampling_params,
)
from calibration.judges._base import Failure, FailureKind, Judge, JudgeCall, Judgement
from calibration.judges._fake import FakeJudge, TextFeatures, text_features, text_quality
from labeler.scales import PAIRWISE_FORMATS, POINTWISE_FORMATS, Format, Kind

__all__ = [
    "DEFAULT_MODEL",
    "PAIRWISE_FORMATS",
    "POINTWISE_FORMATS",
    "AnthropicJudge",
    "BatchStatus",
    "Failure",
    "FailureKind",
    "FakeJudge",
    "Format",
    "Judge",
    "JudgeCall",
    "JudgeCallError",
    "Judgement",
    "Kind",
    "TextFeatures",
    "create_batch_once",
    "find_batch",
    "patiently",
    "rejects_sampling_params",
    "text_features",
    "text_quality",
]
