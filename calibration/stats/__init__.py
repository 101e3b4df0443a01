"""Pure statistics: array-likes in, keyword-only options, frozen :class:`Estimate` out."""

from calibration.stats._result import Estimate

__all__ = ["Estimate"]
