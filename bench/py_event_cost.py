#!/usr/bin/env python3
"""Cost of an event with a deep Python stack (docs/internals/PERFORMANCE.md).

    bench/py_event_cost.py [--build DIR] [--pythons P1,P2] [--depth 50]
                           [--pairs N] [--rounds R] [--distinct]

For each interpreter: recurse --depth Python frames (--distinct: call
through --depth different functions, each from its own line, so that no
frame repeats the one before), then make N
cudaMalloc/cudaFree pairs through ctypes on the simulated runtime, timing
the loop with the calling thread's CPU clock (time.thread_time_ns) and
wall clock; untraced and under LD_PRELOAD=libvramtrace.so
(VRAMTRACE_STACK_DEPTH=64, so every Python frame is kept), alternating.
Prints ns per event (a pair is two events) = (traced - untraced) / 2,
medians over rounds. Not part of the suite.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r'''
import ctypes, os, sys, time
sys.setrecursionlimit(10000)
rt = ctypes.CDLL("libsimcudart.so")
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
rt.cudaFree.argtypes = [ctypes.c_void_p]
rt.cudaSetDevice(0)
N = int(sys.argv[2])
def loop():
    p = ctypes.c_void_p()
    m, f, r = rt.cudaMalloc, rt.cudaFree, ctypes.byref(p)
    for _ in range(1000):
        m(r, 4096); f(p)
    t0, w0 = time.thread_time_ns(), time.perf_counter_ns()
    for _ in range(N):
        m(r, 4096); f(p)
    print(time.thread_time_ns() - t0, time.perf_counter_ns() - w0)
def deep(k):
    if k <= 1:
        return loop()
    return deep(k - 1)
if sys.argv[3] == "distinct":
    # depth different functions, each calling the next from its own line
    src = "".join("def f%d():\n    %sreturn f%d()\n" % (i, "x = 1\n    " * (i % 5), i + 1)
                  for i in range(int(sys.argv[1]) - 1))
    src += "def f%d():\n    return loop()\n" % (int(sys.argv[1]) - 1)
    exec(compile(src, "chain.py", "exec"))
    f0()
else:
    deep(int(sys.argv[1]))
'''

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build-bench")
ap.add_argument("--pythons", default="")
ap.add_argument("--depth", type=int, default=50)
ap.add_argument("--pairs", type=int, default=100000)
ap.add_argument("--rounds", type=int, default=7)
ap.add_argument("--distinct", action="store_true",
                help="depth different functions calling each other, not one recursing")
args = ap.parse_args()
build = os.path.abspath(args.build)
sim = os.path.join(build, "tests", "simdriver")
lib = os.path.join(build, "preload", "libvramtrace.so")
pythons = [p for p in args.pythons.split(",") if p]
if not pythons:
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run([sys.executable, os.path.join(here, "..", "tests", "python",
                                                       "find_pythons.py")],
                         capture_output=True, text=True).stdout
    pythons = [l.split()[1] for l in out.splitlines()
               if l.split()[1] != "-" and l.split()[0] in ("3.12", "3.13", "3.14", "3.15")]
tmp = tempfile.mkdtemp(prefix="vt-pycost-")
env0 = {k: v for k, v in os.environ.items() if not k.startswith(("VRAMTRACE_", "LD_PRELOAD"))}
env0["LD_LIBRARY_PATH"] = sim + ":" + os.path.join(sim, "runtime")


def once(py, traced):
    env = dict(env0)
    if traced:
        env.update(LD_PRELOAD=lib, VRAMTRACE_STACK_DEPTH="64",
                   VRAMTRACE_OUTPUT=os.path.join(tmp, "t.vtrace"))
    p = subprocess.run([py, "-c", CHILD, str(args.depth), str(args.pairs),
                        "distinct" if args.distinct else "recursion"], env=env,
                       capture_output=True, text=True, check=True)
    cpu, wall = map(int, p.stdout.split()[-2:])
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    return cpu, wall


print("# Python event cost, %d Python frames (%s), %d pairs, %d rounds, load %s" % (
    args.depth, "distinct functions" if args.distinct else "one recursing", args.pairs,
    args.rounds, " ".join(open("/proc/loadavg").read().split()[:3])))
print("| Python | untraced ns/event (thread CPU) | traced ns/event | tracer ns/event, thread CPU | wall |")
print("|---|---|---|---|---|")
for py in pythons:
    ver = subprocess.run([py, "-c", "import sys, sysconfig; print('%d.%d.%d' % sys.version_info[:3] + ('t' if sysconfig.get_config_var('Py_GIL_DISABLED') else ''))"],
                         capture_output=True, text=True).stdout.strip()
    d_cpu, d_wall, base = [], [], []
    for _ in range(args.rounds):
        u, t = once(py, False), once(py, True)
        d_cpu.append((t[0] - u[0]) / (2 * args.pairs))
        d_wall.append((t[1] - u[1]) / (2 * args.pairs))
        base.append((u[0] / (2 * args.pairs), t[0] / (2 * args.pairs)))
    print("| %s | %.0f | %.0f | %.0f | %.0f |" % (
        ver, statistics.median(b[0] for b in base), statistics.median(b[1] for b in base),
        statistics.median(d_cpu), statistics.median(d_wall)))
