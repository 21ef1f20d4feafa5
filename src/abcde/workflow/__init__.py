"""Workflows: several library steps as one call (the demo, the report of a change).

- :func:`~abcde.workflow.demo.run_demo` — the whole job on the bundled example (``abcde demo``)
- :func:`~abcde.workflow.report.run_report` — impact, quality and exploration in one report
  (``abcde report``)
- :func:`~abcde.workflow.evaluate.evaluate` — the whole job from one read of the inputs
  (``abcde evaluate``), recorded in ``DIR/evaluate.json``
- :func:`~abcde.workflow.report.report_from_evaluation` — an evaluation's report rebuilt with every
  section and the judgements now in ``DIR/quality`` (``abcde report DIR``)

The command line calls these; library users can too. The names below are imported
on first use (PEP 562), so importing one workflow does not import the other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from abcde.util.lazy import lazy_exports

_EXPORTS = {
    "DemoResult": "abcde.workflow.demo",
    "run_demo": "abcde.workflow.demo",
    "ReportResult": "abcde.workflow.report",
    "run_report": "abcde.workflow.report",
    "report_from_evaluation": "abcde.workflow.report",
    "evaluate": "abcde.workflow.evaluate",
    "EvaluateResult": "abcde.workflow.evaluate",
    "read_evaluation": "abcde.workflow.record",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports('abcde.workflow', _EXPORTS, globals())


if TYPE_CHECKING:
    from abcde.workflow.demo import DemoResult, run_demo
    from abcde.workflow.evaluate import EvaluateResult, evaluate
    from abcde.workflow.record import read_evaluation
    from abcde.workflow.report import ReportResult, report_from_evaluation, run_report
