"""Equations in the labs' explanations, rendered without a network: ``$...$`` in a text becomes
MathML, which browsers draw natively (Chromium since 109, Firefox and Safari long before), so no
script, stylesheet or font is fetched and nothing has to be served beside the pages.

The TeX is converted on the server by ``latex2mathml`` (a maintained converter). The texts are
the labs' own, not user input. A segment the converter refuses is kept as written, in ``<code>``,
so that a typo shows instead of breaking the page. Write ``\\$`` for a literal dollar sign.
"""

from __future__ import annotations

import functools
import html
import re

from latex2mathml.converter import convert

__all__ = ["with_math", "escaped_with_math", "MATH"]

#: one inline equation: $...$ not preceded by a backslash, no line breaks inside
MATH = re.compile(r"(?<!\\)\$([^$\n]+?)(?<!\\)\$")


@functools.lru_cache(maxsize=512)
def _mathml(tex: str) -> str:
    try:
        return convert(tex)
    except Exception:  # noqa: BLE001 - latex2mathml raises several kinds; the text stays readable
        return f"<code>{html.escape(tex)}</code>"


def with_math(text: str) -> str:
    """``text`` (HTML) with every ``$tex$`` replaced by its MathML and ``\\$`` by ``$``."""
    return MATH.sub(lambda m: _mathml(m.group(1)), text).replace(r"\$", "$")


def escaped_with_math(text: str) -> str:
    """Plain ``text`` (a lesson's) as HTML: escaped, except each ``$tex$``, which becomes MathML."""
    parts, last = [], 0
    for m in MATH.finditer(text):
        parts += [html.escape(text[last:m.start()].replace(r"\$", "$")), _mathml(m.group(1))]
        last = m.end()
    return "".join(parts) + html.escape(text[last:].replace(r"\$", "$"))
