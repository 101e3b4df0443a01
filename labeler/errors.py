"""Errors raised by judgelab's library code.

The library raises these; the CLI prints them (the problem, then the fix on its own
line) with a non-zero exit, and the app shows them with ``st.error``.
"""

from __future__ import annotations


class JudgelabError(Exception):
    """Base class for every error judgelab raises on purpose."""


class InputError(JudgelabError):
    """A file or value a user supplied is not acceptable.

    Args:
        problem: What is wrong, in one sentence.
        file: The file it came from, if any.
        row: 1-based data row (header excluded), if the problem is in one row.
        column: Column or field name, if the problem is in one column.
        fix: What the user should do about it.
    """

    def __init__(
        self,
        problem: str,
        *,
        file: str | None = None,
        row: int | None = None,
        column: str | None = None,
        fix: str | None = None,
    ) -> None:
        """Record the problem, where it is and how to fix it."""
        self.problem = problem
        self.file = file
        self.row = row
        self.column = column
        self.fix = fix
        super().__init__(self.message)

    @property
    def message(self) -> str:
        """The problem, prefixed by where it is, followed by the fix."""
        where = []
        if self.file is not None:
            where.append(str(self.file))
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.column is not None:
            where.append(f"column {self.column!r}")
        text = (", ".join(where) + ": " if where else "") + self.problem
        if self.fix:
            # On its own line: a fix run into the problem reads as part of it.
            text += f"\nFix: {self.fix}"
        return text


class ConflictError(InputError):
    """An import would overwrite different data already stored under the same id."""


class StaleLabelError(JudgelabError):
    """A rater's write was based on a label that is no longer the current one.

    Two tabs (or windows) on one invite link: the other one labelled the item after this
    one showed it. Nothing was written; the caller shows the stored label instead.

    Args:
        current_id: The id of the label now stored (``None``: the item has none).
    """

    def __init__(self, current_id: int | None) -> None:
        """Record which label is stored now."""
        self.current_id = current_id
        super().__init__(
            "Not saved: this item was labelled meanwhile, in another tab or window."
            "\nThe stored label is shown now: change it and submit again to replace it,"
            " or go on to the next item."
        )


class AccessError(JudgelabError):
    """A token is missing, unknown or revoked, or lacks the role a page needs."""


class StoreError(JudgelabError):
    """The project database could not be opened or written."""


class JudgeError(JudgelabError):
    """A judge back-end failed in a way retries could not fix."""
