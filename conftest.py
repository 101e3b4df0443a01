"""Doctest collection over the packages (``--doctest-modules``): skip what runs on import.

The Streamlit entry point and pages draw widgets when imported, and ``python -m judgelab``
starts the command line; none of them holds a doctest.
"""

collect_ignore = ["judgelab/app.py", "judgelab/__main__.py", "judgelab/views"]
