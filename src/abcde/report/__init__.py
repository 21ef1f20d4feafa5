"""The HTML, Markdown and JSON report.

- :mod:`abcde.report.build`: what the report contains (:func:`build_report`, :class:`Report`);
- :mod:`abcde.report.charts`: its charts, as Vega-Lite specs (Altair);
- :mod:`abcde.report.render`: the self-contained HTML page (``templates/``, ``static/``);
- :mod:`abcde.report.markdown`: the Markdown summary;
- :mod:`abcde.report.views`: what both show of the sections that take more than a lookup (formatted);
- :mod:`abcde.report.truth`: the ground-truth section computed (each side against a truth, or the
  population's estimates from a truth of sampled entities).
"""

from abcde.report.build import Report, build_report
from abcde.report.markdown import render_markdown
from abcde.report.render import render_html

__all__ = ["Report", "build_report", "render_html", "render_markdown"]
