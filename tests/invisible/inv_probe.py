"""What a Python program can see of its own process, then an ending: the
Python side of the invisibility suite (invisible.py).

    python3 inv_probe.py REPORT ENDING [CUDA]

REPORT ("-": stdout) gets the open descriptors 0-255, the next descriptor
os.open() returns, and signal.getsignal() for every signal; then the
save/handle/restore pattern on each fatal signal (a tracer that
broke it would raise TypeError). CUDA (default 1): the simulated driver,
through ctypes, allocates and frees. ENDING: exit, os_exit, segv (with
faulthandler, as pytest runs), sigterm (a launcher stopping the rank),
return.
"""
import ctypes
import faulthandler
import os
import signal
import stat
import sys


def probe(out):
    for fd in range(256):
        try:
            st = os.fstat(fd)
        except OSError:
            continue
        kind = ("file" if stat.S_ISREG(st.st_mode) else "fifo" if stat.S_ISFIFO(st.st_mode)
                else "chr" if stat.S_ISCHR(st.st_mode) else "other")
        out.write("fd %d %s inheritable %s\n" % (fd, kind, os.get_inheritable(fd)))
    fd = os.open("/dev/null", os.O_RDONLY)
    out.write("next open fd %d\n" % fd)
    os.close(fd)
    for sig in sorted(signal.valid_signals()):
        try:
            out.write("sig %d %s\n" % (sig, signal.getsignal(sig)))
        except (ValueError, OSError) as e:
            out.write("sig %d %s\n" % (sig, type(e).__name__))
    for sig in (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGABRT):
        saved = signal.getsignal(sig)
        signal.signal(sig, lambda *a: None)
        signal.signal(sig, saved)  # TypeError if saved is None
        out.write("restored %d %s\n" % (sig, signal.getsignal(sig)))


def allocate(n):
    cu = ctypes.CDLL("libcuda.so.1")
    ctx = ctypes.c_void_p()
    if cu.cuInit(0) or cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) or \
            cu.cuCtxSetCurrent(ctx):
        sys.exit(9)
    ptrs = []
    for i in range(n):
        p = ctypes.c_uint64()
        if cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t((i + 1) << 20)):
            sys.exit(9)
        ptrs.append(p)
    for p in ptrs[::2]:
        cu.cuMemFree_v2(p)


def main():
    report, how = sys.argv[1], sys.argv[2]
    cuda = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    if report == "-":
        probe(sys.stdout)
    else:
        with open(report, "w") as f:
            probe(f)
    if cuda:
        allocate(40)
    print("probe ending", how, flush=True)
    if how == "exit":
        sys.exit(5)
    if how == "os_exit":
        sys.stdout.flush()
        os._exit(6)
    if how == "segv":
        faulthandler.enable()
        ctypes.string_at(8)
    if how == "sigterm":
        os.kill(os.getpid(), signal.SIGTERM)
        signal.pause()


main()
