"""``python -m judgelab``: the same command line as ``judgelab``."""

from judgelab.cli import main

main()
