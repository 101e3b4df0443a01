"""judgelab: the shell around the judge side and the label data layer.

The Streamlit app (:mod:`judgelab.app`, pages in ``views/``), session and access
(:mod:`judgelab.session`), the admin view-model (:mod:`judgelab.admin`), the command
line (:mod:`judgelab.cli`) and the demo (:mod:`judgelab.demo`). Imports run one way:
``judgelab -> calibration -> labeler``.
"""
