"""Doctest collection over the packages (``--doctest-modules``): skip what runs on import.

The Streamlit entry point and pages draw widgets when imported, and ``python -m judgelab``
starts the command line; none of them holds a doctest.
"""

# tests/data holds the scripts that wrote the fixtures with other tools (Inspect, Label Studio);
# they import those tools, which the suite does not need, and hold no test.
collect_ignore = ["judgelab/app.py", "judgelab/__main__.py", "judgelab/views", "tests/data"]
