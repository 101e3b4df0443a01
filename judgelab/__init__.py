"""judgelab: the shell around the judge side and the label data layer.

The Streamlit app (:mod:`judgelab.app`, pages in ``views/``), session and access
(:mod:`judgelab.session`), the admin view-model (:mod:`judgelab.admin`), the command
line (:mod:`judgelab.cli`) and the demo (:mod:`judgelab.demo`). Imports run one way:
``judgelab -> calibration -> labeler``.
"""

#: The one version of the distribution: the wheel's metadata reads it from here
#: (``[tool.setuptools.dynamic]``) and ``judgelab --version`` prints it.
__version__ = "0.1.0"
