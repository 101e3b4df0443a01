"""The judge side: judges, the runner, formats, perturbations, probes, statistics, designs, reports.

Imports only :mod:`labeler` (the label data layer) below it; the shell (:mod:`judgelab`)
sits above it.
"""
