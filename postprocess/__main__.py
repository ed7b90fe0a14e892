"""Command line: `python3 -m postprocess report RUNS_DIR --out REPORT_DIR`, `rank RUNS_DIR`,
`compare DIR_A DIR_B [--out DIR]`; each takes `--designs FILE` (`depthbench designs --json`).

`report` prints the ranking table of each suite, the cross-scale table and the findings, and
last the path of report.md. Exit status: 0 done; 1 report written but no completed run to rank;
2 usage error, an output that cannot be written, or no run file at all.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import names, tables
from .compare import compare_table
from .loading import NoRunFilesError
from .report import analyze, build_report, summary_for_terminal


def output_directory_problem(out: Path) -> str:
    """Why `out` cannot hold a report, checked before any work ('' when it can)."""
    if out.exists() and not out.is_dir():
        return "exists and is not a directory; name a new or existing directory"
    parent = next((p for p in out.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        return f"{parent} is not a directory"
    return ""


def compare_command(args) -> int:
    if args.out:
        problem = output_directory_problem(Path(args.out))
        if problem:
            print(f"postprocess: --out {args.out}: {problem}", file=sys.stderr)
            return 2
    try:
        table = compare_table(args.dir_a, args.dir_b)
        if args.out:
            table.write(Path(args.out))
    except NoRunFilesError as error:
        print(f"postprocess: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"postprocess: cannot write under {args.out}: {error.strerror or error}",
              file=sys.stderr)
        return 2
    print(table.to_markdown())
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m postprocess",
                                     description="DepthBench postprocess: rankings, tables, "
                                                 "figures and one report from run files.")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="write tables, figures, report.md and index.html")
    rep.add_argument("runs_dir", help="directory searched recursively for *.h5 run files")
    rep.add_argument("--out", required=True, help="output directory of the report")
    rep.add_argument("--no-pdf", action="store_true", help="write PNG figures only")
    rank = sub.add_parser("rank", help="print the ranking tables only (writes nothing)")
    rank.add_argument("runs_dir")
    comp = sub.add_parser("compare", help="two run directories side by side, per design and "
                                          "shape, with differences beyond noise")
    comp.add_argument("dir_a")
    comp.add_argument("dir_b")
    comp.add_argument("--out", help="also write compare.{md,csv,tex} into this directory")
    for command in (rep, rank, comp):
        command.add_argument("--designs", metavar="FILE",
                             help="display names and order of the designs: the output of "
                                  "`depthbench designs --json` (default: $DEPTHBENCH_DESIGNS, "
                                  "else what the run files record)")
    args = parser.parse_args(argv)
    if args.designs:
        try:
            names.use_design_catalog_file(args.designs)
        except ValueError as error:
            print(f"postprocess: --designs: {error}", file=sys.stderr)
            return 2
    if args.command == "compare":
        return compare_command(args)

    if args.command == "report":
        problem = output_directory_problem(Path(args.out))
        if problem:
            print(f"postprocess: --out {args.out}: {problem}", file=sys.stderr)
            return 2
    try:
        if args.command == "rank":
            analysis = analyze(args.runs_dir)
        else:
            report = build_report(args.runs_dir, args.out, pdf=not args.no_pdf)
            analysis = report.analysis
    except NoRunFilesError as error:
        print(f"postprocess: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # the output cannot be written (permissions, a full disk, ...)
        print(f"postprocess: cannot write the report under {args.out}: "
              f"{error.strerror or error}" + (f": {error.filename}" if error.filename else ""),
              file=sys.stderr)
        return 2

    for panel in analysis.panels:
        print(tables.ranking_table(panel).to_markdown())
    if args.command == "report":
        print(summary_for_terminal(report))
    runset = analysis.runset
    skipped = len(runset.runs) - len(runset.completed()) + len(runset.rejected)
    if skipped:
        print(f"{skipped} file(s) not counted (diverged, failed, incomplete or rejected); "
              "see 'Runs not counted' in the report.")
        for rej in runset.rejected:
            print(f"  rejected {rej.path}: {rej.reason}", file=sys.stderr)
    if args.command == "report":
        print(f"report: {report.report_md.resolve()}")
    if not runset.completed():
        print("postprocess: no completed run to rank", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # stdout closed early (`| head`): not an error of the report
        sys.stderr.close()
        sys.exit(0)
