"""Text from a run (a subtask, an output, an error) made safe to draw: nothing in it acts on the
terminal, or on the XML of an SVG."""

from __future__ import annotations

import unicodedata

# What a terminal acts on instead of drawing: C0 and C1 controls (ESC starts a sequence that can
# clear the screen, retitle the window or move the cursor; 0x9b is a CSI of its own), format
# characters (bidirectional overrides reorder what follows), line and paragraph separators, and
# a lone surrogate (written as the raw byte it stands for, a C1 control again).
_ACTING = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_JOINER = "\u200d"  # a format character, but the glue of an emoji sequence: drawn as one glyph


def printable(text: object, *, lines: bool = False) -> str:
    """``text`` as it is safe to draw: each character that would act on a terminal rather than
    be drawn replaced by its Python escape, so that it shows instead (``\\x1b``, ``\\u202e``).

    ```pycon
    >>> printable("pricing\\x1b[2J")
    'pricing\\\\x1b[2J'
    >>> printable("one\\ntwo"), printable("one\\ntwo", lines=True)
    ('one\\\\ntwo', 'one\\ntwo')

    ```

    A subtask, an output or an error can come from a model or a server: every picture of a run
    (the terminal timeline, the SVG) and the course's runner draw them through this one
    function. The characters replaced are the C0 and C1 controls (ESC, BEL, CR, BS, DEL, the
    8-bit CSI ``\\x9b``, a tab), the format characters (the bidirectional overrides; not the
    zero-width joiner of an emoji sequence), line and paragraph separators, and lone surrogates.

    Args:
      text: what to draw (anything: its ``str``).
      lines: keep each newline, for a text of several lines (an answer); otherwise a newline
        is replaced too, and the text stays on one line.

    Returns:
      The text, every such character replaced.
    """
    said = str(text)
    if said.isprintable():  # the usual case: nothing to replace
        return said
    return "".join(
        char
        if char == _JOINER or (lines and char == "\n") or unicodedata.category(char) not in _ACTING
        else char.encode("unicode_escape").decode("ascii")
        for char in said
    )
