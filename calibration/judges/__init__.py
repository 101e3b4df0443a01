"""Judge back-ends: the judge protocols, the Anthropic and OpenAI-compatible judges and a fake one."""

from judgelab.calibration.judges._anthropic import (
    DEFAULT_MODEL,
    AnthropicJudge,
    BatchReadShort,
    BatchStatus,
    JudgeCallError,
    create_batch_once,
    find_batch,
    patiently,
    rejects_sampling_params,
)
from judgelab.calibration.judges._base import Failure, FailureKind, Judge, JudgeCall, Judgement
from judgelab.calibration.judges._fake import SCREEN_QUESTION, FakeJudge, TextFeatures, text_features, text_quality
from judgelab.calibration.judges._openai import (
    OpenAIBatchStatus,
    OpenAIJudge,
    create_openai_batch_once,
    infer_family,
)
from judgelab.calibration.judges._protocols import BatchJudge, BuildingJudge
from judgelab.labeler.scales import PAIRWISE_FORMATS, POINTWISE_FORMATS, Format, Kind

__all__ = [
    "DEFAULT_MODEL",
    "PAIRWISE_FORMATS",
    "POINTWISE_FORMATS",
    "SCREEN_QUESTION",
    "AnthropicJudge",
    "BatchJudge",
    "BatchReadShort",
    "BatchStatus",
    "BuildingJudge",
    "Failure",
    "FailureKind",
    "FakeJudge",
    "Format",
    "Judge",
    "JudgeCall",
    "JudgeCallError",
    "Judgement",
    "Kind",
    "OpenAIBatchStatus",
    "OpenAIJudge",
    "TextFeatures",
    "create_batch_once",
    "create_openai_batch_once",
    "find_batch",
    "infer_family",
    "patiently",
    "rejects_sampling_params",
    "text_features",
    "text_quality",
]
