"""The report: every table (Markdown, CSV, LaTeX) and figure (PNG, PDF) of a run directory,
gathered in `report.md` and `index.html`.

Layout of the output directory:
    report.md, index.html        start here
    tables/<name>.{md,csv,tex}   one file set per table
    figures/<name>.{png,pdf}     one file set per figure
"""
from __future__ import annotations

import html
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from . import figures as figs
from . import evidence, findings, names, path_validation, tables
from .cross_scale import cross_scale_table
from .diagnostics_summary import diagnostics_summary_table
from .isobackbone import isobackbone_figure, isobackbone_table
from .loading import OUTCOMES, RunSet, load_runs
from .ranking import Panel, build_panels
from .released import RELEASED_MODELS_CSV, load_released_models


@dataclass
class Analysis:
    """Runs of a directory grouped into panels: the entry point for users' own scripts."""
    runset: RunSet
    panels: list[Panel]

    def panel(self, suite: str, scale: str | None = None) -> Panel:
        for p in self.panels:
            if p.suite == suite and p.scale == scale:
                return p
        raise KeyError(f"no panel for suite {suite!r} scale {scale!r}; have "
                       + ", ".join(p.key for p in self.panels))

    def suites(self) -> list[str]:
        return sorted({p.suite for p in self.panels})

    def panels_of(self, suite: str) -> list[Panel]:
        return [p for p in self.panels if p.suite == suite]


def analyze(runs_dir: str | os.PathLike) -> Analysis:
    runset = load_runs(runs_dir)
    return Analysis(runset, build_panels(runset))


@dataclass
class Section:
    title: str
    tables: list[tables.Table] = field(default_factory=list)
    text: list[str] = field(default_factory=list)


@dataclass
class Report:
    directory: Path
    report_md: Path
    index_html: Path
    analysis: Analysis
    sections: list[Section]
    figures: list[figs.FigureFile]

    def all_tables(self) -> list[tables.Table]:
        return [t for s in self.sections for t in s.tables]

    def table(self, name: str) -> tables.Table:
        for t in self.all_tables():
            if t.name == name:
                return t
        raise KeyError(name)


def suite_sections(analysis: Analysis) -> list[Section]:
    sections = []
    for suite in analysis.suites():
        panels = analysis.panels_of(suite)
        section = Section(names.suite_title(suite) + f" (`{suite}`)")
        if len(panels) > 1 or suite in names.MULTISCALE_SUITES:
            multi = tables.multiscale_table(panels)
            if multi is not None:
                section.tables.append(multi)
        for p in panels:
            section.tables += [tables.ranking_table(p), tables.benchmark_table(p),
                               tables.trend_table(p), tables.shape_ranking_table(p),
                               tables.shapes_table(p)]
            if suite == names.SUITE_ISO_BACKBONE:
                section.tables.append(isobackbone_table(p))
            section.tables += tables.domain_nll_tables(p)
        diagnostics = diagnostics_summary_table(suite, analysis.runset.runs)
        if diagnostics is not None:
            section.tables.append(diagnostics)
        sections.append(section)
    return sections


def evidence_section(analysis: Analysis) -> Section | None:
    """Per panel: validation coverage, tokens per parameter, seeds, steps, warnings where they
    are thin, and each design's depth slope minus Pre-LN's."""
    if not analysis.panels:
        return None
    table, warnings = evidence.evidence_table(analysis.panels)
    section = Section("Evidence", [table])
    section.text = (["What the verdicts below rest on. Where it is thin, read the rankings as "
                     "provisional:", ""] + [f"- **warning**: {w}" for w in warnings]
                    + ([""] if warnings else []))
    for p in analysis.panels:
        relative = evidence.depth_vs_reference_table(p)
        if relative is not None:
            section.tables.append(relative)
    return section


def findings_section(analysis: Analysis,
                     results: list[findings.FindingResult] | None = None) -> Section:
    results = findings.check_all(analysis.panels) if results is None else results
    lines = findings.untested_summary(results)
    text = [lines[0]] + [f"- {line}" for line in lines[1:]] + [""]
    return Section("Findings", [findings.findings_table(results)], text)


def summary_for_terminal(report: "Report") -> str:
    """The cross-scale table and the findings this directory could test, then what it could
    not: what a reader of the paper asks first (report.md has every row)."""
    parts = []
    for section in report.sections:
        if section.title == "Depth trends across scales":
            parts += [t.to_markdown() for t in section.tables]
        if section.title == "Findings":
            for t in section.tables:
                tested = [row for row in t.rows if row[3] != findings.NOT_RUN]
                if tested:
                    parts.append(tables.Table(t.name, t.title + " (tested here)", t.columns,
                                              tested, t.notes[:1]).to_markdown())
            parts.append("\n".join(["Findings: " + section.text[0]] + section.text[1:]))
    return "\n".join(parts)


def cross_scale_section(analysis: Analysis) -> Section | None:
    table = cross_scale_table(analysis.panels)
    return None if table is None else Section("Depth trends across scales", [table])


def build_report(runs_dir: str | os.PathLike, out_dir: str | os.PathLike, pdf: bool = True,
                 released_models_csv: str | os.PathLike = RELEASED_MODELS_CSV) -> Report:
    """Analyse `runs_dir` and write the full report under `out_dir`."""
    analysis = analyze(runs_dir)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    runset = analysis.runset

    # The paper's findings lead when this directory tests some of them; on a custom suite,
    # which tests none, the user's own rankings come first and the findings after them.
    results = findings.check_all(analysis.panels)
    found = findings_section(analysis, results)
    cross = cross_scale_section(analysis)
    shown = evidence_section(analysis)
    ours = ([shown] if shown else []) + ([cross] if cross else []) + suite_sections(analysis)
    sections = [found] + ours if findings.any_tested(results) else ours + [found]
    status = tables.run_status_table(runset)
    sections.append(Section("Runs not counted", [status]))
    fell_back = path_validation.fell_back_table(runset.runs)
    if fell_back is not None:
        sections.append(Section("Runs that fell back from a fast path", [fell_back]))
    for t in (t for s in sections for t in s.tables):
        t.write(out / "tables")

    released = load_released_models(released_models_csv)
    figure_files = figs.all_figures(analysis.panels, runset.runs, released, out / "figures",
                                    pdf)
    for panel in analysis.panels_of(names.SUITE_ISO_BACKBONE):
        figure = isobackbone_figure(panel, out / "figures", pdf)
        figure_files += [figure] if figure else []
    report = Report(out, out / "report.md", out / "index.html", analysis, sections,
                    figure_files)
    report.report_md.write_text(render_markdown(report), encoding="utf-8")
    report.index_html.write_text(render_html(report), encoding="utf-8")
    return report


def overview_lines(report: Report) -> list[str]:
    runset = report.analysis.runset
    counts = runset.outcome_counts()
    lines = [f"Run directory: `{runset.directory.resolve()}`",
             f"Generated: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
             f"Files: {len(runset.runs) + len(runset.rejected)} "
             f"({', '.join(f'{counts[o]} {o}' for o in OUTCOMES)}, "
             f"{len(runset.rejected)} rejected)",
             "Suites: " + (", ".join(f"`{s}`" for s in runset.suites()) or "none")]
    not_counted = len(runset.runs) - counts["completed"] + len(runset.rejected)
    if not counted_any(report):
        lines.append("**No completed run: there is nothing to rank.** See 'Runs not counted'.")
    if not_counted:
        lines.append(f"**{not_counted} file(s) are not counted in the rankings** (diverged, "
                     "failed, incomplete or rejected); each is listed with its reason under "
                     "'Runs not counted' and flagged in the tables.")
    lines.append("Reading direction: shapes go from shallow-wide (large d/L) to deep-narrow "
                 "(small d/L). Each (design, shape) is reported at its best learning rate. "
                 "Noise: two results are 'within noise' when their 95% intervals "
                 "overlap; 'no interval' when a run file carries none. A cell trained with "
                 "several seeds is their mean, and its interval adds the between-seed spread "
                 "to the validation windows' (see 'Evidence' for how many seeds each rests "
                 "on).")
    return lines


def counted_any(report: Report) -> bool:
    return bool(report.analysis.runset.completed())


def render_markdown(report: Report) -> str:
    parts = ["# DepthBench report", ""]
    parts += [f"- {line}" for line in overview_lines(report)]
    parts += ["", "Tables are also in `tables/` as Markdown, CSV and LaTeX; figures in "
              "`figures/` as PNG and PDF. `index.html` shows everything in a browser.", ""]
    for section in report.sections:
        parts += [f"## {section.title}", ""]
        parts += section.text
        for t in section.tables:
            parts += [t.to_markdown(), f"_Files: `tables/{t.name}.md`, `.csv`, `.tex`_", ""]
    parts += ["## Figures", ""]
    if not report.figures:
        parts.append("_(no figure: no completed run)_")
    for f in report.figures:
        rel = f.png.relative_to(report.directory)
        pdf = f" ([PDF]({f.pdf.relative_to(report.directory)}))" if f.pdf else ""
        parts += [f"### {f.title}{pdf}", "", f"![{f.title}]({rel})", ""]
    return "\n".join(parts) + "\n"


_CSS = """body{font-family:sans-serif;max-width:1400px;margin:1em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:right}
th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}
ul.notes{font-size:12px;color:#555}img{max-width:100%;border:1px solid #ddd}
nav a{margin-right:1em}"""


def render_html(report: Report) -> str:
    out = ["<!DOCTYPE html>", "<html><head><meta charset=\"utf-8\">",
           "<title>DepthBench report</title>", f"<style>{_CSS}</style></head><body>",
           "<h1>DepthBench report</h1>", "<ul>"]
    out += [f"<li>{_inline(line)}</li>" for line in overview_lines(report)]
    out.append("</ul>")
    out.append("<nav>" + "".join(f"<a href=\"#s{i}\">{_inline(s.title)}</a>"
                                 for i, s in enumerate(report.sections))
               + "<a href=\"#figures\">Figures</a></nav>")
    for i, section in enumerate(report.sections):
        out.append(f"<h2 id=\"s{i}\">{_inline(section.title)}</h2>")
        out += [f"<p>{_inline(t)}</p>" for t in section.text
                if t.strip() and not t.startswith("- ")]
        items = [line[2:] for line in section.text if line.startswith("- ")]
        if items:
            out.append("<ul>" + "".join(f"<li>{_inline(t)}</li>" for t in items) + "</ul>")
        for t in section.tables:
            out.append(t.to_html())
            out.append(f"<p><small>Files: <a href=\"tables/{t.name}.md\">md</a> "
                       f"<a href=\"tables/{t.name}.csv\">csv</a> "
                       f"<a href=\"tables/{t.name}.tex\">tex</a></small></p>")
    out.append("<h2 id=\"figures\">Figures</h2>")
    for f in report.figures:
        rel = f.png.relative_to(report.directory).as_posix()
        pdf = (f" (<a href=\"{f.pdf.relative_to(report.directory).as_posix()}\">PDF</a>)"
               if f.pdf else "")
        out.append(f"<h3>{html.escape(f.title)}{pdf}</h3><img src=\"{rel}\" "
                   f"alt=\"{html.escape(f.title)}\">")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _inline(markdown_line: str) -> str:
    """The few inline Markdown marks the overview uses (**bold**, `code`) as HTML."""
    text = html.escape(markdown_line)
    for mark, tag in (("**", "b"), ("`", "code")):
        pieces = text.split(mark)
        text = "".join(p if i % 2 == 0 else f"<{tag}>{p}</{tag}>" for i, p in enumerate(pieces))
    return text
