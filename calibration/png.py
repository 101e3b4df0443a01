"""PNG charts are optional: the renderer (vl-convert) comes with the ``png`` extra.

Markdown and JSON reports need nothing beyond the core install; only ``--png`` renders the
Altair charts to an image, offline, with vl-convert. :func:`png_renderer` is the one place
that imports it, so a missing renderer is one clear error naming the fix, checked before any
work is done rather than after a long run.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from judgelab.labeler.errors import InputError

__all__ = ["PNG_EXTRA_FIX", "png_renderer"]

PNG_EXTRA_FIX = ("install the PNG renderer with `pip install 'judgelab[png]'` (it adds vl-convert-python), "
                 "or leave out --png: the markdown and JSON need nothing more.")


def png_renderer() -> ModuleType:
    """The ``vl_convert`` module that renders Vega-Lite (Altair) charts to PNG.

    Raises:
        InputError: vl-convert is not installed (the ``png`` extra).
    """
    try:
        return importlib.import_module("vl_convert")
    except ImportError as exc:
        raise InputError("writing a PNG needs the vl-convert renderer, which is not installed",
                         fix=PNG_EXTRA_FIX) from exc
