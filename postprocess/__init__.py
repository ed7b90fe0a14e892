"""DepthBench postprocess: run files (HDF5) -> rankings, tables, figures and one report.

Scripting entry points:
    from postprocess import analyze, build_report
    a = analyze("runs/")                       # load + group into panels
    panel = a.panel("main400m")
    panel.trend("hc").slope_per_log_aspect_ratio
    build_report("runs/", "report/")           # everything, as the command does
    depth_trend.depth_trend(panel, "hc")       # slope, bootstrap interval, verdict
    findings.check_all(a.panels)               # the paper's findings against this directory
    compare.compare_table("runs_a/", "runs_b/")
See doc/postprocess.md.
"""
from .loading import NoRunFilesError, Run, RunSet, load_runs, read_run
from .ranking import Cell, Panel, Trend, build_panels, compare_intervals
from .report import Analysis, Report, analyze, build_report
from .tables import Table, Value

__all__ = ["Analysis", "Cell", "NoRunFilesError", "Panel", "Report", "Run", "RunSet", "Table",
           "Trend", "Value", "analyze", "build_panels", "build_report", "compare_intervals",
           "load_runs", "read_run"]
