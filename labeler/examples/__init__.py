"""The bundled examples: a rubric, answers from two families, probe pairs and a judge spec.

They ship inside the package (package data), so the demo, ``estimate --dataset sample`` and
``judgelab examples DIR`` work from an installed wheel in any folder, not only from a clone.
This module is the one place that finds them: everything else asks :func:`example_path`
(or :func:`write_examples` for a copy a user can edit). Their ``README.md`` says what each
file holds and how it was made.

>>> example_path("rubric.toml").name
'rubric.toml'
>>> sorted(EXAMPLES)[:2]
['README.md', 'answers.jsonl']
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from judgelab.labeler.errors import InputError

__all__ = ["EXAMPLES", "example_path", "write_examples"]

#: Each bundled file and what it is for (``judgelab examples DIR`` prints these).
EXAMPLES: dict[str, str] = {
    "rubric.toml": "the support-reply rubric (5 criteria, 1-5): `judgelab import rubric`",
    "answers.jsonl": "70 tickets with a reply from each of two families: `judgelab import answers`",
    "pairs.jsonl": "34 similar-quality answer pairs for the probes: `--dataset FILE` (the `sample`)",
    "judge_spec.toml": "a complete judge spec (pairwise template, verdict rule, authors): `--judge-spec`",
    "truth.csv": "the author's 1-5 quality of every answer (the demo simulates raters from it)",
    "gold.csv": "6 gold items and 2 attention checks with their correct scores: `judgelab gold import`",
    "README.md": "what each file holds and how it was written",
}


def example_path(name: str) -> Path:
    """The installed path of the bundled example file ``name`` (read it, do not edit it).

    Raises:
        InputError: ``name`` is not a bundled example, or the installation lost it.
    """
    if name not in EXAMPLES:
        raise InputError(f"there is no bundled example {name!r}", fix=f"use one of {', '.join(EXAMPLES)}.")
    resource = files(__name__) / name
    # A wheel installs as plain files, so the resource is a real path that importers can open;
    # a zipped install (zipimport) would not be, and is refused with the fix rather than
    # half-working.
    if not isinstance(resource, Path) or not resource.is_file():
        raise InputError(
            f"the bundled example {name} is missing from this installation ({resource})",
            fix="reinstall judgelab from its wheel or sdist (`pip install --force-reinstall judgelab`).",
        )
    return resource


def write_examples(folder: str | Path, *, overwrite: bool = False) -> list[Path]:
    """Copy every bundled example into ``folder`` (created if absent), for a user to read and edit.

    Args:
        folder: Where to write the files.
        overwrite: Replace files that already exist there (else they are refused: nothing is lost).

    Returns:
        The paths written, in :data:`EXAMPLES` order.

    Raises:
        InputError: A file of the same name already exists and ``overwrite`` is false, or
            ``folder`` is a file.
    """
    target = Path(folder)
    if target.exists() and not target.is_dir():
        raise InputError(f"{target} is a file, not a folder", fix="name a folder (it is created if absent).")
    clashes = [target / name for name in EXAMPLES if (target / name).exists()]
    if clashes and not overwrite:
        raise InputError(
            f"{', '.join(str(p) for p in clashes)} already exist{'s' if len(clashes) == 1 else ''}",
            fix="choose another folder, or pass --force to replace them.",
        )
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name in EXAMPLES:
        path = target / name
        path.write_bytes(example_path(name).read_bytes())
        written.append(path)
    return written
