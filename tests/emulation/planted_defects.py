"""Proof that the emulated device catches what matters (doc/cuda.md, "The emulated device").

Each plant below is a defect a GPU kernel author makes: a wrong mma fragment index, a missing
__syncthreads before a shared buffer is refilled, a cp.async.wait_group off by one, a race in a
shared-memory reduction, an out-of-bounds read in a tail block, a missing event wait between the
NCCL stream and the compute stream, a host synchronisation inside a captured graph. For each, this
script copies the one source file with the defect planted, compiles it with the emulated build's
own command (compile_commands.json), links the named gpu test with the planted object ahead of the
libraries (the test's link.txt), runs it and demands that it FAILS, saying what the plant should
make it say. A plant whose text is no longer in the source fails this test too, so the plants
follow the code.

usage: planted_defects.py BUILD_DIR SOURCE_DIR [MPIRUN...]
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

PLANTS = [
    # (name, source, original text, planted text, test, test arguments, expected output)
    ("a wrong mma fragment index", "src/ops/cuda/flash_attention.cu",
     "const int e = c_element_of_a_register(r);",
     "const int e = c_element_of_a_register(r ^ 1);",
     "flash_attention_test", ["--run_test=flash_matches_reference_at_tile_edges"],
     r"has failed"),
    ("a missing __syncthreads before a shared buffer is refilled",
     "src/ops/cuda/flash_attention.cu",
     "    __syncthreads();  // buffer tile % 2 is no longer read: the next iteration refills it\n",
     "",
     "flash_attention_test", ["--run_test=flash_matches_reference_at_tile_edges"],
     r"race"),
    ("a cp.async.wait_group off by one", "src/ops/cuda/flash_attention.cu",
     "cp_async_wait<1>();", "cp_async_wait<2>();",
     "flash_attention_test", ["--run_test=flash_matches_reference_at_tile_edges"],
     r"cp\.async"),
    ("a shared-memory race in a reduction", "src/ops/cuda/adamw.cu",
     "    if (int(threadIdx.x) < stride) s[threadIdx.x] += s[threadIdx.x + stride];\n    __syncthreads();",
     "    if (int(threadIdx.x) < stride) s[threadIdx.x] += s[threadIdx.x + stride];",
     "cuda_ops_test", ["--run_test=adamw_and_global_norm_match_cpu"],
     r"race"),
    ("an out-of-bounds read in a tail block", "src/ops/cuda/attention_convert.cu",
     "dst[i] = __float2bfloat16(col < width ? to_float(src[row * width + col]) : 0.f);",
     "dst[i] = __float2bfloat16(col <= width ? to_float(src[row * width + col]) : 0.f);",
     "cudnn_attention_test", ["--run_test=cudnn_matches_the_reference_for_suite_head_dims"],
     r"out-of-bounds"),
    ("a missing event wait between the NCCL stream and the compute stream",
     "src/ops/cuda/cuda_backend.cpp",
     "    CUDA_CHECK(cudaStreamWaitEvent(reduce_stream_, gradients_written_, 0));\n",
     "",
     "nccl_bucketed_sum_test", [], r"has failed"),
    ("a host synchronisation inside a captured graph", "src/ops/cuda/cuda_graph.cpp",
     "cudaStreamBeginCapture(capture_stream_, cudaStreamCaptureModeThreadLocal);",
     "cudaStreamBeginCapture(capture_stream_, cudaStreamCaptureModeThreadLocal);\n"
     "    cudaStreamSynchronize(capture_stream_);",
     "cuda_graphs_test", ["--run_test=replayed_micro_batches_train_bit_identically_to_eager_ones"],
     r"capture invalidated"),
]
MPI_TESTS = {"nccl_bucketed_sum_test"}


def compile_planted(build, source_dir, source, planted_text, work):
    commands = json.load(open(os.path.join(build, "compile_commands.json")))
    path = os.path.realpath(os.path.join(source_dir, source))
    entry = next((c for c in commands if os.path.realpath(c["file"]) == path), None)
    if entry is None:
        raise RuntimeError(f"{source} is not in compile_commands.json")
    planted = os.path.join(work, os.path.basename(source))
    with open(planted, "w") as f:
        f.write(planted_text)
    args = shlex.split(entry["command"]) if "command" in entry else entry["arguments"]
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-MT", "-MF", "-o"):
            skip = True
            continue
        if a in ("-MD", "-c") or os.path.realpath(os.path.join(entry["directory"], a)) == path:
            continue
        out.append(a)
    obj = os.path.join(work, "planted.o")
    out += ["-O1", "-c", planted, "-o", obj]
    subprocess.run(out, cwd=entry["directory"], check=True)
    return obj


def link_with(build, test, obj, work):
    link_dir = os.path.join(build, "tests")
    link = open(os.path.join(link_dir, "CMakeFiles", f"{test}.dir", "link.txt")).read().split()
    own = next(i for i, a in enumerate(link) if a.endswith(f"{test}.cpp.o"))
    link.insert(own + 1, obj)
    o = link.index("-o")
    link[o + 1] = os.path.join(work, test)
    subprocess.run(link, cwd=link_dir, check=True)
    return os.path.join(work, test)


def main():
    build, source_dir = sys.argv[1], sys.argv[2]
    mpirun = sys.argv[3:] or ["mpirun", "--allow-run-as-root", "--oversubscribe"]
    failures = 0
    for name, source, original, planted, test, test_args, expected in PLANTS:
        started = time.time()
        text = open(os.path.join(source_dir, source)).read()
        if original not in text:
            print(f"FAIL {name}: the plant's text is no longer in {source}")
            failures += 1
            continue
        with tempfile.TemporaryDirectory() as work:
            try:
                obj = compile_planted(build, source_dir, source, text.replace(original, planted, 1),
                                      work)
                program = link_with(build, test, obj, work)
            except (subprocess.CalledProcessError, RuntimeError, StopIteration, ValueError) as e:
                print(f"FAIL {name}: could not build the planted test: {e}")
                failures += 1
                continue
            command = ([*mpirun, "-np", "2"] if test in MPI_TESTS else []) + [program, *test_args]
            run = subprocess.run(command, capture_output=True, text=True, timeout=600)
        output = run.stdout + run.stderr
        caught = run.returncode != 0 and re.search(expected, output)
        line = next((l for l in output.splitlines() if re.search(expected, l)), "")
        print(f"{'caught' if caught else 'FAIL  '} {name}: {test} "
              f"{'failed' if run.returncode else 'passed'} ({time.time() - started:.0f} s)"
              + (f": {line.strip()[:200]}" if line else ""))
        if not caught:
            failures += 1
            print(output[-3000:])
    print(f"{len(PLANTS) - failures} of {len(PLANTS)} planted defects caught")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
