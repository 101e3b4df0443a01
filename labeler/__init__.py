"""The label data layer: the store (all SQL) and migrations, importers, models, scales, queues, blinding.

The ground floor: it imports neither :mod:`calibration` nor :mod:`judgelab`.
"""
