#!/usr/bin/env python3
"""The committed list of CUDA error names (analyzer/common/cuda_errors.def)
is what the installed toolkit's headers say: regenerated and compared.

    check_cuda_errors.py GENERATOR CUDA_INCLUDE_DIR COMMITTED_DEF"""
import subprocess
import sys

gen, include, committed = sys.argv[1:4]
fresh = subprocess.run([sys.executable, gen, include], capture_output=True, text=True,
                       check=True).stdout
have = open(committed).read()
if fresh != have:
    print("FAIL: %s differs from what %s makes from %s; run it again" % (committed, gen, include))
    sys.exit(1)
names = [l for l in have.splitlines() if l.startswith("X(")]
for want in ('X(2, "CUDA_ERROR_OUT_OF_MEMORY", "cudaErrorMemoryAllocation")',
             'X(0, "CUDA_SUCCESS", "cudaSuccess")'):
    if want not in names:
        print("FAIL: %s lacks %s" % (committed, want))
        sys.exit(1)
print("ok: %d CUDA error codes named as the toolkit names them" % len(names))
