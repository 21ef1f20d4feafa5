"""The HTML, Markdown and JSON report."""

from abcde.report.build import Report, build_report, render_html, render_markdown

__all__ = ["Report", "build_report", "render_html", "render_markdown"]
