"""judgelab."""
