"""``--raters``: the one way every command picks raters (names, a prefix, a file, all, or a count).

``assign``, ``design`` and ``agreement`` each used to choose raters their own way (``--rater``
repeated, a count or names, a name prefix). :class:`RaterSelection` is the one grammar; each
command matches it against its own pool of rater names (the active raters, or the raters of
imported pair labels) with :meth:`RaterSelection.pick`.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from judgelab.labeler.errors import InputError

F = TypeVar("F", bound=Callable[..., Any])

#: The grammar, as ``--help`` shows it.
METAVAR = "all|N|NAME,...|PREFIX*|@FILE"

# No "*" right before a letter or a quote: the docs read the help as reStructuredText (emphasis).
GRAMMAR = ("all (every rater), N (that many, the least busy first), names (alice,bob), a prefix ending "
           "in * (crowd-* for crowd-1, crowd-2, ...), or @FILE (a file of names or prefixes, one a line; "
           "# comments)")


@dataclass(frozen=True)
class RaterSelection:
    """Which raters ``--raters`` chose, before it meets a pool of names.

    Attributes:
        text: The option as given (``all`` when it was left out).
        names: Exact names, in the order given.
        patterns: ``*`` patterns (a prefix is ``crowd-*``).
        count: A number of raters instead of names (only where a command takes one).
    """

    text: str = "all"
    names: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    count: int | None = None

    @property
    def everyone(self) -> bool:
        """Whether the selection is every rater of the pool (``all``)."""
        return not self.names and not self.patterns and self.count is None

    def pick(self, pool: Sequence[str], *, what: str = "rater", fix: str = "see `judgelab raters list`.") -> list[str]:
        """The names of ``pool`` this selection picks, in the pool's order.

        Args:
            pool: The names to choose from (e.g. the active raters).
            what: The pool, named in an error (e.g. ``"active rater"``).
            fix: What to do about a name or pattern that picks nobody.

        Raises:
            InputError: A name not in the pool, a pattern matching none of it, or a count (a
                count is read by the command itself, see :attr:`count`).
        """
        if self.count is not None:
            raise InputError(f"--raters {self.text}: a count does not name raters here",
                             fix="give names, a prefix (e.g. 'expert*'), @FILE or all.")
        if self.everyone:
            return list(pool)
        known = set(pool)
        unknown = [n for n in self.names if n not in known]
        if unknown:
            # The old spelling of a prefix (agreement's `--raters expert`) is a name now: say the new one.
            prefixes = [u for u in unknown if any(n.startswith(u) for n in pool)]
            hint = f" (for every name starting {prefixes[0]!r}, write '{prefixes[0]}*')" if prefixes else ""
            raise InputError(f"no {what} named {', '.join(map(repr, unknown))}{hint}", fix=fix)
        empty = [p for p in self.patterns if not any(fnmatch.fnmatchcase(n, p) for n in pool)]
        if empty:
            raise InputError(f"no {what} matches {', '.join(map(repr, empty))}", fix=fix)
        chosen = set(self.names)
        return [n for n in pool if n in chosen or any(fnmatch.fnmatchcase(n, p) for p in self.patterns)]


def parse_raters(text: str | None, *, count: bool = False) -> RaterSelection:
    """Read ``--raters`` (see :data:`GRAMMAR`); ``count`` allows a plain number.

    Raises:
        InputError: An empty value, an unreadable ``@FILE``, or a number where none is taken.
    """
    if text is None or text.strip().lower() == "all":
        return RaterSelection()
    text = text.strip()
    if text.isdigit():
        if not count:
            raise InputError(f"--raters {text}: this command takes names, not a count",
                             fix="give names (alice,bob), a prefix ('crowd-*'), @FILE or all.")
        return RaterSelection(text=text, count=int(text))
    if text.startswith("@"):
        path = Path(text[1:])
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"--raters {text}: cannot read {path}: {exc}",
                             fix="name a UTF-8 text file of rater names, one a line.") from None
        items = [i.strip() for line in lines for i in line.split("#", 1)[0].split(",")]
    else:
        items = [i.strip() for i in text.split(",")]
    items = [i for i in items if i]
    if not items:
        raise InputError(f"--raters {text!r} names no rater", fix="give names (alice,bob), a prefix "
                         "('crowd-*'), @FILE or all.")
    names = tuple(dict.fromkeys(i for i in items if "*" not in i and "?" not in i))
    patterns = tuple(dict.fromkeys(i for i in items if "*" in i or "?" in i))
    return RaterSelection(text=text, names=names, patterns=patterns)


def raters_option(help_text: str, *, count: bool = False) -> Callable[[F], F]:
    """``--raters SPEC``, parsed into a :class:`RaterSelection` (``count``: a number is allowed).

    Args:
        help_text: What the raters are for on this command (the grammar is appended).
        count: Whether a plain number (that many raters) is taken.
    """
    grammar = GRAMMAR if count else GRAMMAR.replace(", N (that many, the least busy first)", "")
    metavar = METAVAR if count else METAVAR.replace("N|", "")

    def convert(ctx: click.Context, param: click.Parameter, value: str | None) -> RaterSelection:
        return parse_raters(value, count=count)

    def decorate(func: F) -> F:
        return click.option("--raters", "raters", default=None, metavar=metavar, callback=convert,
                            help=f"{help_text} One of: {grammar} [default: all].")(func)

    return decorate
