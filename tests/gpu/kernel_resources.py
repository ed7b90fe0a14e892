#!/usr/bin/env python3
"""Static launch check of the compiled CUDA kernels (doc/cuda.md, "Static launch check").

Reads the sm_90 cubins that nvcc embedded in the static libraries (depthbench_cuda and the
design objects of depthbench_lib), lists every kernel's registers, static shared memory, stack
frame (local memory: spills and local arrays) and parameter bytes, and checks them against the
launch configuration the code uses, written down in LAUNCHES below with the launch site of each:
  * threads per block <= 1024 and <= the kernel's __launch_bounds__ where it declares one;
  * the registers of one block fit the 64 Ki a block may use (allocated per warp, 256 at a time);
  * static + dynamic shared memory <= 48 KiB at every size the launch site does not opt in
    for (cudaFuncSetAttribute(MaxDynamicSharedMemorySize)), <= 227 KiB where it does;
  * kernel parameters <= 32 764 bytes (the limit of CUDA >= 12.1 on sm_70+).
A kernel that matches no entry of LAUNCHES, or more than one, fails the check (a new kernel must
be added with its launch site), and so does an entry that matches no kernel.

No cuobjdump is needed: the cubins are read straight from the ELF files (see read_cubin for the
fields; checked against ptxas -v when written), which needs the fatbin's cubins uncompressed
(nvcc 13 compresses only the PTX by default).

usage: kernel_resources.py LIBRARY.a|OBJECT.o ...   (prints the table of every kernel)
exit 0: every kernel passes; 1: a check failed; 2: the input could not be read; 77: no sm_90
cubin in it (skipped: the limits above are Hopper's).
"""
import re
import struct
import subprocess
import sys

KIB = 1024
DEFAULT_SHARED = 48 * KIB  # per block without opting in
OPT_IN_SHARED = 227 * KIB  # cudaDevAttrMaxSharedMemoryPerBlockOptin on sm_90
REGISTERS_PER_BLOCK = 64 * KIB
REGISTER_UNIT = 256  # registers are allocated to a warp in units of 256 (8 per thread)
MAX_THREADS = 1024
MAX_PARAMETER_BYTES = 32764
RESERVED_SHARED = 1024  # the part of .nv.shared.<kernel> the driver reserves per block (sm_90)

# The widest rows the norm kernels take in this check, far above any suite's (the 1.6B shape has
# d = 2048); their launch sites opt in once static + dynamic bytes pass 48 KiB.
MAX_NORM_WIDTH = 16384


def flash_tile_bytes(hdp):  # flash_attention.cu: bf16 [rows][HDP + 8] tiles
    return 2 * (hdp + 8)


def reference_row_bytes(hdp):  # attention.cu: fp32 [rows][HDP + 1] tiles
    return 4 * (hdp + 1)


# (pattern on the demangled name, threads per block, largest dynamic shared memory in bytes (an
# int, or a function of the pattern's groups), dynamic bytes above which the launch site opts in
# (None: never), launch site). threads None: a library kernel (cub) launched with the block size
# its __launch_bounds__ declare.
LAUNCHES = [
    # ops/launch.hpp via ops/cuda/launch.cuh: kThreads = 256, no dynamic shared memory.
    (r"db::cuda_launch::for_each_index_kernel<", 256, 0, None, "launch.cuh for_each_index"),
    (r"db::cuda_launch::for_each_row_lanes_kernel<", 256, 0, None,
     "launch.cuh for_each_row_lanes"),
    (r"db::cuda_launch::chunk_sums_kernel<", 256, 0, None, "launch.cuh for_each_row_sum"),
    (r"db::cuda_launch::chunk_sums_lanes_kernel<", 256, 0, None,
     "launch.cuh for_each_row_sum_lanes"),
    (r"db::cuda_launch::add_partials_kernel<", 256, 0, None, "launch.cuh sum_partials"),
    # elementwise.cu: kThreads = 256
    (r"::convert_kernel<", 256, 0, None, "elementwise.cu convert_launch"),
    (r"::axpby_kernel<", 256, 0, None, "elementwise.cu axpby_launch"),
    (r"::truncated_normal_kernel\(", 256, 0, None, "elementwise.cu fill_truncated_normal"),
    (r"::constant_kernel\(", 256, 0, None, "elementwise.cu fill_constant"),
    # adamw.cu: kThreads = 256
    (r"::sum_squares_kernel\(", 256, 0, None, "adamw.cu global_norm_squared"),
    (r"::sum_partials_kernel\(", 256, 0, None, "adamw.cu global_norm_squared"),
    (r"::adamw_kernel\(", 256, 0, None, "adamw.cu adamw_step"),
    # embedding.cu, and the kernels of its cub::DeviceRadixSort::SortPairs: cub launches them
    # with the block size of their __launch_bounds__, except the exclusive sum (one block of at
    # most 1024 threads) and EmptyKernel (never launched: cub reads its attributes)
    (r"::embedding_forward_kernel<", 256, 0, None, "embedding.cu embedding_forward"),
    (r"::iota_kernel\(", 256, 0, None, "embedding.cu embedding_backward"),
    (r"::embedding_backward_sorted_kernel<", 128, 0, None, "embedding.cu embedding_backward"),
    (r"^void cub::.*::DeviceRadixSort(Histogram|Onesweep|SingleTile|Upsweep|Downsweep)Kernel<",
     None, 0, None, "embedding.cu embedding_backward (cub radix sort)"),
    (r"^void cub::.*::DeviceRadixSortExclusiveSumKernel<", 1024, 0, None,
     "embedding.cu embedding_backward (cub radix sort, exclusive sum)"),
    (r"^void cub::.*::EmptyKernel<", 1, 0, None, "cub (never launched)"),
    # rmsnorm.cu: kNormForwardThreads = kThreads = 256, reduce_partials (32, 8); the backward's
    # dg partial row is d floats, opted in when it and the static scratch exceed 48 KiB
    # (norm_row.cuh needs_shared_opt_in)
    (r"::norm_forward_kernel<", 256, 0, None, "rmsnorm.cu rmsnorm_forward, layernorm_forward"),
    (r"::norm_backward_kernel<", 256, 4 * MAX_NORM_WIDTH, DEFAULT_SHARED - 4 * 32,
     "rmsnorm.cu norm_backward"),
    (r"::reduce_partials_kernel\(", 256, 0, None, "rmsnorm.cu add_norm_partials"),
    # add_rmsnorm.cu: the row's sum, d floats, opted in as the norm backward
    (r"::add_norm_forward_kernel<", 256, 4 * MAX_NORM_WIDTH, DEFAULT_SHARED - 4 * 32,
     "add_rmsnorm.cu add_norm_forward"),
    (r"::norm_add_rmsnorm_forward_kernel\(", 256, 4 * MAX_NORM_WIDTH, DEFAULT_SHARED - 4 * 32,
     "add_rmsnorm.cu norm_add_rmsnorm_forward"),
    # qk_norm.cu: 256 threads; the backward's dg terms 2·32·d floats (d <= 256), opted in above
    # 32 KiB (the static 8 KiB exchange rows make up the rest of 48 KiB)
    (r"::qk_norm_forward_kernel<", 256, 0, None, "qk_norm.cu forward"),
    (r"::qk_norm_backward_kernel<", 256, 2 * 32 * 256 * 4, 32 * KIB, "qk_norm.cu backward"),
    # rope.cu, swiglu.cu, attention_convert.cu: 256
    (r"::rope_kernel<", 256, 0, None, "rope.cu rope_launch"),
    (r"::swiglu_forward_kernel<", 256, 0, None, "swiglu.cu forward_launch"),
    (r"::swiglu_backward_kernel<", 256, 0, None, "swiglu.cu backward_launch"),
    (r"::to_padded_bf16_kernel<", 256, 0, None, "attention_convert.cu to_padded"),
    (r"::from_padded_bf16_kernel<", 256, 0, None, "attention_convert.cu from_padded"),
    # cross_entropy.cu: one block of 512 threads per row; the loss sum one block of 256
    (r"::softmax_xent_kernel<", 512, 0, None, "cross_entropy.cu head_pass"),
    (r"::add_sum_kernel\(", 256, 0, None, "cross_entropy.cu head_loss_add"),
    # attention.cu (reference): 256 threads, tiles in dynamic shared memory, always opted in
    (r"::attention_forward_kernel<[^,]+, (\d+)>", 256,
     lambda hdp: 192 * reference_row_bytes(int(hdp)) + 64 * 68 * 4, 0,
     "attention.cu forward_launch"),
    (r"::attention_dkdv_kernel<[^,]+, (\d+)>", 256,
     lambda hdp: 256 * reference_row_bytes(int(hdp)) + 2 * 64 * 72 * 4 + 2 * 64 * 4, 0,
     "attention.cu backward_launch"),
    (r"::attention_dq_kernel<[^,]+, (\d+)>", 256,
     lambda hdp: 256 * reference_row_bytes(int(hdp)) + 64 * 68 * 4, 0,
     "attention.cu backward_launch"),
    (r"::attention_delta_kernel<", 256, 0, None, "attention.cu backward_launch"),
    # flash_attention.cu: kThreads = 128, tiles in dynamic shared memory, always opted in
    (r"::flash_forward_kernel<(\d+)>", 128, lambda hdp: 320 * flash_tile_bytes(int(hdp)), 0,
     "flash_attention.cu forward_launch"),
    (r"::flash_dkdv_kernel<(\d+)>", 128, lambda hdp: 384 * flash_tile_bytes(int(hdp)) + 4 * 4 * 64,
     0, "flash_attention.cu backward_launch"),
    (r"::flash_dq_kernel<(\d+)>", 128, lambda hdp: 384 * flash_tile_bytes(int(hdp)), 0,
     "flash_attention.cu backward_launch"),
    (r"::flash_delta_kernel\(", 256, 0, None, "flash_attention.cu backward_launch"),
    # moda_attention.cu, moda_depth_merge.cu: 4 warps per block
    (r"::moda_forward_kernel\(", 128, 0, None, "moda_attention.cu moda_attention_forward"),
    (r"::moda_row_dot_kernel\(", 128, 0, None, "moda_attention.cu moda_attention_backward"),
    (r"::moda_query_backward_kernel\(", 128, 0, None,
     "moda_attention.cu moda_attention_backward"),
    (r"::moda_key_backward_kernel\(", 128, 0, None, "moda_attention.cu moda_attention_backward"),
    (r"::merge_forward_kernel<", 128, 0, None, "moda_depth_merge.cu merge_forward"),
    (r"::merge_backward_kernel<", 128, 0, None, "moda_depth_merge.cu merge_backward"),
]

# ---- reading the files ----------------------------------------------------------------------


def archive_members(data, path):
    """The members of a System V / GNU ar archive (a CMake static library)."""
    if not data.startswith(b"!<arch>\n"):
        raise ValueError(f"{path}: not an ar archive (thin archives are not read)")
    pos, long_names = 8, b""
    while pos + 60 <= len(data):
        header = data[pos:pos + 60]
        name = header[:16].decode().rstrip()
        size = int(header[48:58].decode().strip())
        body = data[pos + 60:pos + 60 + size]
        pos += 60 + size + (size & 1)
        if name == "//":
            long_names = body
        elif name.startswith("/") and name[1:].isdigit():
            start = int(name[1:])
            yield long_names[start:long_names.index(b"/\n", start)].decode(), body
        elif name not in ("/", "/SYM64/"):
            yield name.rstrip("/"), body


def elf_sections(elf):
    """{name: (type, offset, size, info)} of a little-endian ELF64 file."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        raise ValueError("not an ELF64 file")
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names = headers[shstrndx][4]
    sections = {}
    for name, kind, _, _, offset, size, _, info, _, _ in headers:
        start = names + name
        sections[elf[start:elf.index(b"\0", start)].decode()] = (kind, offset, size, info)
    return sections


def fatbin_cubins(obj, where):
    """The sm_XX cubins (ELF) of an object's .nv_fatbin section: [(arch, bytes)]."""
    section = elf_sections(obj).get(".nv_fatbin")
    if not section:
        return []
    fatbin = obj[section[1]:section[1] + section[2]]
    cubins, pos = [], 0
    while pos + 16 <= len(fatbin):
        magic, _, header_size, body_size = struct.unpack_from("<IHHQ", fatbin, pos)
        if magic != 0xBA55ED50:
            break
        entry, end = pos + header_size, pos + header_size + body_size
        while entry < end:
            # kind (1 PTX, 2 ELF), version, entry header size, payload size, compressed size, …,
            # arch, name offset/length, flags, …, uncompressed size
            kind, _, entry_header, payload, compressed, _, _, _, arch = struct.unpack_from(
                "<HHIQIIHHI", fatbin, entry)
            body = fatbin[entry + entry_header:entry + entry_header + payload]
            if kind == 2:
                if compressed or body[:4] != b"\x7fELF":
                    raise ValueError(f"{where}: compressed cubin for sm_{arch} (this check "
                                     "reads uncompressed ones: nvcc --no-compress)")
                cubins.append((arch, body))
            entry += entry_header + payload
        pos = end
    return cubins


# .nv.info attribute ids (EIATTR_*) and value formats (EIFMT_*) used below
REGCOUNT, FRAME_SIZE, MAX_THREADS_ATTR, PARAM_SIZE = 0x2F, 0x11, 0x05, 0x19
NVAL, BVAL, HVAL, SVAL = 1, 2, 3, 4


def info_attributes(data):
    """[(attribute, value bytes)] of a .nv.info section."""
    out, pos = [], 0
    while pos + 2 <= len(data):
        fmt, attribute = data[pos], data[pos + 1]
        if fmt == SVAL:
            size, = struct.unpack_from("<H", data, pos + 2)
            out.append((attribute, data[pos + 4:pos + 4 + size]))
            pos += 4 + size
        elif fmt in (HVAL, BVAL):
            out.append((attribute, data[pos + 2:pos + 4]))
            pos += 4
        elif fmt == NVAL:
            out.append((attribute, b""))
            pos += 2
        else:
            raise ValueError(f"unknown .nv.info format {fmt}")
    return out


def read_cubin(cubin):
    """Kernels of one cubin: [{name, registers, shared, stack, max_threads, parameter_bytes}].
    Per function the cubin has .text.<name> (sh_info: its symbol index), .nv.info.<name> for a
    kernel (launch bounds: EIATTR_MAX_THREADS, parameter bytes: EIATTR_CBANK_PARAM_SIZE),
    .nv.shared.<name> (static shared memory plus the reserved 1 KiB) and, in .nv.info, the
    register count and stack frame per symbol index (EIATTR_REGCOUNT, EIATTR_FRAME_SIZE)."""
    sections = elf_sections(cubin)
    body = lambda s: cubin[s[1]:s[1] + s[2]]
    registers, frames = {}, {}
    for attribute, value in info_attributes(body(sections[".nv.info"])):
        if attribute in (REGCOUNT, FRAME_SIZE):
            symbol, amount = struct.unpack("<II", value)
            (registers if attribute == REGCOUNT else frames)[symbol] = amount
    kernels = []
    for section, header in sections.items():
        if not section.startswith(".nv.info."):
            continue
        name = section[len(".nv.info."):]
        symbol = sections[".text." + name][3]
        max_threads, parameter_bytes = None, 0
        for attribute, value in info_attributes(body(header)):
            if attribute == MAX_THREADS_ATTR:
                x, y, z = struct.unpack("<III", value)
                max_threads = x * y * z
            elif attribute == PARAM_SIZE:
                parameter_bytes, = struct.unpack("<H", value)
        shared = sections.get(".nv.shared." + name, (0, 0, 0, 0))[2]
        kernels.append({
            "name": name,
            "registers": registers[symbol],
            "shared": max(0, shared - RESERVED_SHARED),
            "stack": frames.get(symbol, 0),
            "max_threads": max_threads,
            "parameter_bytes": parameter_bytes,
        })
    return kernels


def demangle(names):
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True,
                         check=True).stdout.splitlines()
    return dict(zip(names, out))


def collect(paths):
    """Every sm_90 kernel of the files, once per mangled name (an inline kernel template may be
    in several objects)."""
    kernels = {}
    for path in paths:
        data = open(path, "rb").read()
        members = archive_members(data, path) if path.endswith(".a") else [(path, data)]
        for member, obj in members:
            if obj[:4] != b"\x7fELF":
                continue
            for arch, cubin in fatbin_cubins(obj, f"{path}({member})"):
                if arch == 90:
                    for k in read_cubin(cubin):
                        kernels.setdefault(k["name"], dict(k, source=member))
    return kernels


# ---- the check --------------------------------------------------------------------------------


def block_registers(registers, threads):
    warps = -(-threads // 32)
    per_warp = -(-registers * 32 // REGISTER_UNIT) * REGISTER_UNIT
    return warps * per_warp


def check(kernel, launches):
    """(launch site, problems) of one kernel."""
    name = kernel["pretty"]
    matches = [entry for entry in launches if re.search(entry[0], name)]
    if len(matches) != 1:
        sites = ", ".join(entry[4] for entry in matches)
        return None, [f"matches {len(matches)} entries of LAUNCHES{': ' + sites if sites else ''}"
                      " (add its launch site to tests/gpu/kernel_resources.py)"]
    pattern, threads, dynamic, opt_in_above, site = matches[0]
    problems = []
    bounds = kernel["max_threads"]
    if threads is None:
        if bounds is None:
            return site, ["a library kernel without __launch_bounds__: give its block size"]
        threads = bounds
    if callable(dynamic):
        dynamic = dynamic(*re.search(pattern, name).groups())
    if threads > MAX_THREADS:
        problems.append(f"{threads} threads per block > {MAX_THREADS}")
    if bounds is not None and threads > bounds:
        problems.append(f"{threads} threads per block > __launch_bounds__ {bounds}")
    used = block_registers(kernel["registers"], threads)
    if used > REGISTERS_PER_BLOCK:
        problems.append(f"{kernel['registers']} registers x {threads} threads need {used} "
                        f"> {REGISTERS_PER_BLOCK} registers per block")
    static = kernel["shared"]
    plain = dynamic if opt_in_above is None else min(dynamic, opt_in_above)
    if static + plain > DEFAULT_SHARED:
        problems.append(f"static {static} + dynamic {plain} B shared memory > 48 KiB without "
                        "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)")
    if static + dynamic > OPT_IN_SHARED:
        problems.append(f"static {static} + dynamic {dynamic} B shared memory > 227 KiB")
    if kernel["parameter_bytes"] > MAX_PARAMETER_BYTES:
        problems.append(f"{kernel['parameter_bytes']} B of parameters > {MAX_PARAMETER_BYTES}")
    kernel.update(threads=threads, dynamic=dynamic)
    return site, problems


def main(args):
    if not args or any(a.startswith("-") for a in args):
        print("usage: kernel_resources.py LIBRARY.a|OBJECT.o ...", file=sys.stderr)
        return 2
    try:
        kernels = collect(args)
    except (OSError, ValueError, KeyError, struct.error) as e:
        print(f"kernel_resources: cannot read the cubins: {e}", file=sys.stderr)
        return 2
    if not kernels:  # built for other GPUs only (CMAKE_CUDA_ARCHITECTURES): the limits differ
        print("kernel_resources: no sm_90 cubin in " + " ".join(args) + ": skipped")
        return 77
    pretty = demangle(sorted(kernels))
    failures, matched = [], set()
    rows = []
    for mangled in sorted(kernels, key=lambda m: pretty[m]):
        k = kernels[mangled]
        k["pretty"] = pretty[mangled]
        site, problems = check(k, LAUNCHES)
        matched.update(i for i, e in enumerate(LAUNCHES) if re.search(e[0], k["pretty"]))
        short = re.sub(r"\(anonymous namespace\)::|db::cuda(_launch)?::", "", k["pretty"])
        short = short if len(short) <= 110 else short[:107] + "..."
        rows.append((short, k, site))
        failures += [f"{short}\n    {p}" for p in problems]
    # cub's kernels are written down as a set whose members depend on cub's version
    stale = [e[4] + " /" + e[0] + "/" for i, e in enumerate(LAUNCHES)
             if i not in matched and not e[0].startswith("^void cub::")]
    failures += [f"LAUNCHES entry matches no kernel: {s}" for s in stale]
    # shared memory, stack (local memory per thread) and parameters in bytes
    print(f"{'regs':>4} {'threads':>7} {'static':>7} {'dynamic':>7} {'stack':>6} "
          f"{'params':>6}  kernel  [launch site]")
    for short, k, site in rows:
        print(f"{k['registers']:>4} {k.get('threads') or '?':>7} {k['shared']:>7} "
              f"{k.get('dynamic', '?'):>7} {k['stack']:>6} {k['parameter_bytes']:>6}  "
              f"{short}  [{site}]")
    spilling = sum(1 for _, k, _ in rows if k["stack"] > 0)
    print(f"kernel_resources: {len(rows)} sm_90 kernels, {spilling} with a stack frame (local "
          f"memory), {len(failures)} problems")
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
