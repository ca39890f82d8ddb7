"""Drawing a recorded run: a timeline per slot, in the terminal (rich) or as SVG, or trace events
for Perfetto's UI.

Kept apart from the core so that `import trio_supervisor` loads no rendering library: a program
that supervises and never draws pays nothing for drawing.
"""

from .._util import fixup_module_metadata
from ._events import trace_events
from ._render import (
    Bar,
    Row,
    crashed,
    ending,
    legend,
    render_svg,
    render_timeline,
    timeline_rows,
)

__all__ = [
    "Bar",
    "Row",
    "crashed",
    "ending",
    "legend",
    "render_svg",
    "render_timeline",
    "timeline_rows",
    "trace_events",
]

fixup_module_metadata(__name__, globals())
