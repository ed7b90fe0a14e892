"""Docs that cannot drift (doc/user-guide.md, "Runnable examples"): checks doc/*.md, README.md
and jobs/README.md against the binary.

1. Every fenced block opened with ```sh runnable runs, in order, in one temporary folder per
   document with the installed `depthbench` and `depthbench-report` on PATH (the build is
   installed into a temporary prefix first, as the docs' readers do); each command must exit 0, or the
   status its comment documents (`# exits 2`).
2. Every `--option` written after `depthbench COMMAND` (in a code block or an inline code span)
   is an option of that command's `--help`, and COMMAND is a command.
3. The exit-status table of doc/sweeps.md is what the binary does: a completed run, a stop by
   SIGUSR1 and a command error each end with the status of the row that describes them.
4. Every fenced block opened with ```cpp compiles NAME (a complete source file, e.g. the design
   of doc/designs.md "Adding a design") compiles against src/ as C++20 with warnings as errors
   (syntax and templates; nothing is linked). model.extra_design_in_one_file builds and runs
   the design block as a design file of the build.

usage: doc_examples.py SOURCE_DIR BUILD_DIR MPIRUN
"""
from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

FENCE = re.compile(r"^```(\S*)\s*(.*)$")
EXITS = re.compile(r"#.*\bexits (\d+)\b")
COMMAND = re.compile(r"(?:^|[\s/`(])depthbench\s+([a-z][a-z-]*)([^|;&#`\n]*)")
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9_.-]*[a-z0-9])(?![\w.])")  # not --model.KEY
HEREDOC = re.compile(r"<<-?\s*'?\"?(\w+)'?\"?")

failures: list[str] = []


def documents(source: Path) -> list[Path]:
    return sorted(source.glob("doc/*.md")) + [source / "README.md", source / "jobs/README.md"]


def fenced_blocks(text: str):
    """(info, first line number, lines) of every fenced code block."""
    block, info, start = None, "", 0
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line.strip())
        if match and block is None:
            block, info, start = [], (match.group(1) + " " + match.group(2)).strip(), number + 1
        elif line.strip() == "```" and block is not None:
            yield info, start, block
            block = None
        elif block is not None:
            block.append(line)


def checked_script(doc: str, start: int, lines: list[str]) -> str:
    """The block as a bash script that stops at the first command whose status is not the one
    documented (0 unless its comment says `# exits N`)."""
    out, i = [], 0
    while i < len(lines):
        first = i
        command = lines[i]
        while command.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            command += "\n" + lines[i]
        heredoc = HEREDOC.search(command)
        if heredoc:  # copied verbatim up to its terminator
            while i + 1 < len(lines) and lines[i].strip() != heredoc.group(1):
                i += 1
                command += "\n" + lines[i]
        i += 1
        if not command.strip() or command.strip().startswith("#"):
            continue
        expected = EXITS.search(command)
        want = int(expected.group(1)) if expected else 0
        where = f"{doc}:{start + first}"
        out.append(command)
        out.append(f'status=$?; if [ "$status" -ne {want} ]; then echo "{where}: exited $status, '
                   f'the doc says {want}" >&2; exit 1; fi')
    return "\n".join(out) + "\n"


def run_runnable_blocks(source: Path, env: dict) -> int:
    count = 0
    for path in documents(source):
        doc = str(path.relative_to(source))
        blocks = [(start, lines) for info, start, lines in fenced_blocks(path.read_text())
                  if info.split() == ["sh", "runnable"]]
        if not blocks:
            continue
        with tempfile.TemporaryDirectory(prefix="depthbench-doc-") as folder:
            for start, lines in blocks:
                count += 1
                script = checked_script(doc, start, lines)
                result = subprocess.run(["bash", "-c", script], cwd=folder, env=env, text=True,
                                        capture_output=True, timeout=600)
                if result.returncode != 0:
                    failures.append(f"{doc}:{start}: runnable block failed:\n"
                                    f"{result.stderr[-2000:]}{result.stdout[-1000:]}")
    return count


def help_options(env: dict, command: str, cache: dict) -> set[str] | None:
    if command not in cache:
        program = ["depthbench-report", "report"] if command == "report" else ["depthbench", command]
        result = subprocess.run(program + ["--help"], env=env, text=True, capture_output=True)
        cache[command] = set(OPTION.findall(result.stdout)) if result.returncode == 0 else None
    return cache[command]


def documented_failure(line: str) -> bool:
    """A command documented to fail (`# exits 2`) may show a wrong option on purpose."""
    expected = EXITS.search(line)
    return bool(expected) and expected.group(1) != "0"


def check_option_names(source: Path, env: dict) -> int:
    usage = subprocess.run(["depthbench", "--help"], env=env, text=True, capture_output=True)
    commands = set(re.findall(r"^  (\w+) ", usage.stdout, re.M))
    cache: dict = {}
    checked = 0
    for path in documents(source):
        doc = str(path.relative_to(source))
        text = path.read_text()
        # Code spans and blocks only: prose may say "depthbench is ...".
        spans = [(start, line) for _, start, lines in fenced_blocks(text)
                 for line in "\n".join(lines).replace("\\\n", " ").splitlines()]
        for number, line in enumerate(text.splitlines(), 1):
            spans += [(number, span) for span in re.findall(r"`([^`]+)`", line)]
        for number, span in spans:
            if documented_failure(span):
                continue
            for command, rest in COMMAND.findall(span):
                if command not in commands:
                    failures.append(f"{doc}:{number}: 'depthbench {command}' is not a command")
                    continue
                options = help_options(env, command, cache)
                for option in OPTION.findall(rest):
                    checked += 1
                    if options is not None and option not in options:
                        failures.append(f"{doc}:{number}: depthbench {command} has no {option}")
        for number, line in enumerate(text.splitlines(), 1):  # the report entry point
            if documented_failure(line):
                continue
            for rest in re.findall(r"depthbench-report\s([^`|;#]*)", line):
                for option in OPTION.findall(rest):
                    checked += 1
                    if option not in help_options(env, "report", cache):
                        failures.append(f"{doc}:{number}: depthbench-report has no {option}")
    return checked


CITED = re.compile(r"(?<![\w./-])((?:src|tests|doc|postprocess|scripts|jobs|bench|cmake)"
                   r"/[\w./-]*\w)")
BARE_DOC = re.compile(r"(?<![\w./-])([A-Z][A-Za-z_-]*\.md)\b")


def check_cited_files(source: Path) -> int:
    """Every file of the repository that the docs and the code cite exists."""
    tracked = subprocess.run(["git", "ls-files"], cwd=source, text=True, capture_output=True)
    names = {Path(f).name for f in tracked.stdout.split()}
    code = [source / f for f in tracked.stdout.split()
            if f.startswith(("src/", "tests/", "postprocess/", "cmake/", "scripts/", "bench/"))
            or f.endswith("CMakeLists.txt")]
    files = documents(source) + [f for f in code if f.suffix in {
        ".cpp", ".hpp", ".cu", ".cuh", ".py", ".sh", ".txt", ".cmake", ".in"}]
    checked = 0
    for path in files:
        if "build" in path.relative_to(source).parts[:1]:
            continue
        where = str(path.relative_to(source))
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for match in CITED.finditer(line):
                cited = match.group(1)
                placeholder = re.search(r"[A-Z]{3,}", cited) or "$" in line[match.end():][:2]
                if any(c in cited for c in "*{}") or placeholder:
                    continue  # a pattern or a placeholder (SUITE, NAME, $1)
                checked += 1
                stem = source / cited.rstrip(".")  # src/io/safetensors: its .hpp/.cpp
                if not stem.exists() and not list(stem.parent.glob(stem.name + ".*")):
                    failures.append(f"{where}:{number}: cites {cited}, which does not exist")
            for cited in BARE_DOC.findall(line):
                checked += 1
                if cited not in names:
                    failures.append(f"{where}:{number}: cites {cited}, which is not in the "
                                    f"repository")
    return checked


def exit_status_table(source: Path) -> list[tuple[int, str]]:
    text = (source / "doc/sweeps.md").read_text()
    table = text[text.index("Exit status"):]
    rows = []
    for line in table.splitlines()[1:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.strip().startswith("|") and len(cells) >= 2 and cells[0].isdigit():
            rows.append((int(cells[0]), cells[1]))
        elif rows and not line.strip().startswith("|"):
            break
    return rows


def documented(rows, pattern: str) -> set[int]:
    found = {status for status, meaning in rows if re.search(pattern, meaning, re.I)}
    if not found:
        failures.append(f"doc/sweeps.md: no exit-status row matches /{pattern}/: {rows}")
    return found


def check_exit_table(source: Path, env: dict, folder: Path) -> None:
    rows = exit_status_table(source)
    subprocess.run(["depthbench", "tokenize", "--tokenizer", "bytes", "--format", "fortunes",
                    "--input", "/usr/share/games/fortunes/fortunes", "--val-fraction", "0.1",
                    "--out", "data"], cwd=folder, env=env, check=True, capture_output=True)

    def train(name: str, steps: int):
        return ["depthbench", "train", "--model.n_layer", "1", "--model.d_model", "16",
                "--model.n_head", "2", "--model.vocab_size", "257", "--train.steps", str(steps),
                "--train.seq_len", "16", "--train.global_batch", "2", "--train.micro_batch", "2",
                "--train.val_windows", "2", "--train.log_interval", "1", "--train.threads", "1",
                "--data.train_files", "data/train_*.npy", "--data.val_files", "data/val_*.npy",
                "--output.dir", "runs", "--output.name", name]

    def expect(what: str, status: int, allowed: set[int]):
        if allowed and status not in allowed:
            failures.append(f"doc/sweeps.md: {what} exited {status}, the table says "
                            f"{sorted(allowed)}")

    done = subprocess.run(train("done", 2), cwd=folder, env=env, capture_output=True)
    expect("a completed train", done.returncode, documented(rows, r"final file|completed"))

    # SIGUSR1 once the first step is logged: the handler is installed by then.
    stopped = subprocess.Popen(train("stopped", 1000000), cwd=folder, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    for line in stopped.stdout:
        if re.search(r"\bstep\b", line):
            stopped.send_signal(signal.SIGUSR1)
            break
    stopped.stdout.read()
    expect("train stopped by SIGUSR1", stopped.wait(timeout=300), documented(rows, r"signal"))

    bad = subprocess.run(["depthbench", "sweep", "demo.ini", "--ranks-per-run", "0"], cwd=folder,
                         env=env, capture_output=True)
    expect("sweep --ranks-per-run 0", bad.returncode,
           documented(rows, r"error of the command|command.line|bad suite"))


def check_compiled_blocks(source: Path, folder: Path) -> int:
    """Compiles every ```cpp compiles NAME block; returns how many there are."""
    count = 0
    compiler = os.environ.get("CXX", "c++")
    for doc in documents(source):
        if not doc.exists():
            continue
        for info, start, lines in fenced_blocks(doc.read_text()):
            words = info.split()
            if words[:2] != ["cpp", "compiles"] or len(words) < 3:
                continue
            count += 1
            file = folder / words[2]
            file.write_text("\n".join(lines) + "\n")
            result = subprocess.run(
                [compiler, "-std=c++20", "-fsyntax-only", "-fopenmp", "-Wall", "-Wextra",
                 "-Werror", "-I", str(source / "src"), str(file)],
                capture_output=True, text=True)
            if result.returncode != 0:
                failures.append(f"{doc.relative_to(source)}:{start}: {words[2]} does not "
                                f"compile:\n{result.stderr[-3000:]}")
    return count


def main() -> int:
    source, build, mpirun = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve(), sys.argv[3]
    with tempfile.TemporaryDirectory(prefix="depthbench-docs-") as scratch:
        prefix = Path(scratch) / "prefix"
        subprocess.run(["cmake", "--install", str(build), "--prefix", str(prefix)], check=True,
                       stdout=subprocess.DEVNULL)
        bin_dir = prefix / "bin"
        # `mpirun` in the examples: as root it needs --allow-run-as-root (doc/user-guide.md says
        # so once); the wrapper adds what this machine needs.
        wrapper = Path(scratch) / "wrappers"
        wrapper.mkdir()
        (wrapper / "mpirun").write_text("#!/bin/sh\nexec " + " ".join(
            shlex.quote(part) for part in mpirun.replace(";", " ").split()) + ' "$@"\n')
        (wrapper / "mpirun").chmod(0o755)
        env = dict(os.environ, PATH=f"{wrapper}:{bin_dir}:{os.environ['PATH']}")
        env.pop("PYTHONPATH", None)
        blocks = run_runnable_blocks(source, env)
        options = check_option_names(source, env)
        cited = check_cited_files(source)
        table = Path(scratch) / "table"
        table.mkdir()
        check_exit_table(source, env, table)
        compiled_folder = Path(scratch) / "compiled"
        compiled_folder.mkdir()
        compiled = check_compiled_blocks(source, compiled_folder)
    for failure in failures:
        print("FAIL:", failure)
    print(f"docs: {blocks} runnable blocks, {options} option names, {cited} cited files, "
          f"{compiled} compiled files, the exit-status table: "
          + ("ok" if not failures else f"{len(failures)} problem(s)"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
