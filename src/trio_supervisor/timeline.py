"""Drawing a recorded run: a timeline per slot, in the terminal (rich) or as SVG.

Kept apart from the core so that `import trio_supervisor` loads no rendering library: a program
that supervises and never draws pays nothing for drawing.
"""

from ._timeline import Bar, Row, render_svg, render_timeline, timeline_rows
from ._util import fixup_module_metadata

__all__ = ["Bar", "Row", "render_svg", "render_timeline", "timeline_rows"]

fixup_module_metadata(__name__, globals())
