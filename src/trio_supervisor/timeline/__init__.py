"""Drawing a recorded run: a timeline per slot, in the terminal (rich) or as SVG, or trace events
for Perfetto's UI.

Kept apart from the core so that `import trio_supervisor` loads no rendering library: a program
that supervises and never draws pays nothing for drawing. Every picture takes how it draws each
ending from one table, ``ENDINGS`` (an [`Ending`][trio_supervisor.timeline.Ending] per word; each
stretch that is not an attempt, and a hedge, from ``MARKS``): the terminal, the SVG and the
docs' player agree, and a new ending is one more record there.
"""

from .._util import fixup_module_metadata
from ._events import trace_events
from ._printable import printable
from ._render import (
    COMPACT_LABEL,
    ENDINGS,
    LABEL,
    LOST,
    MARKS,
    Bar,
    Ending,
    Mark,
    Row,
    crashed,
    cut_label,
    ending,
    endings_used,
    legend,
    legend_keys,
    marks_used,
    render_svg,
    render_timeline,
    svg_style,
    ticks,
    timeline_rows,
)

__all__ = [
    "COMPACT_LABEL",
    "ENDINGS",
    "LABEL",
    "LOST",
    "MARKS",
    "Bar",
    "Ending",
    "Mark",
    "Row",
    "crashed",
    "cut_label",
    "ending",
    "endings_used",
    "legend",
    "legend_keys",
    "marks_used",
    "printable",
    "render_svg",
    "render_timeline",
    "svg_style",
    "ticks",
    "timeline_rows",
    "trace_events",
]

fixup_module_metadata(__name__, globals())
