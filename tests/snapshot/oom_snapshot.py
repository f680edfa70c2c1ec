#!/usr/bin/env python3
"""A small PyTorch memory snapshot whose trace ends in an oom entry:
PyTorch's fragmented OOM - 8 MiB live in a 20 MiB segment, 16 MiB asked
with 4 MiB free on the device. No time_us. Used by tests/simulate (the
request that failed is tried again in the model) and tests/html (its
failure marker on the page).

    oom_snapshot.py FILE    writes it with Python's pickle (protocol 4)"""
import pickle
import sys

MiB = 1 << 20
BASE = 0x7f0000000000
oom_snapshot = {
    "segments": [{"device": 0, "address": BASE, "total_size": 20 * MiB, "stream": 0,
                  "segment_type": "large", "allocated_size": 8 * MiB, "active_size": 8 * MiB,
                  "requested_size": 8 * MiB,
                  "blocks": [{"address": BASE, "size": 8 * MiB, "requested_size": 8 * MiB,
                              "state": "active_allocated", "frames": []},
                             {"address": BASE + 8 * MiB, "size": 12 * MiB, "requested_size": 0,
                              "state": "inactive", "frames": []}]}],
    "device_traces": [[
        {"action": "segment_alloc", "addr": BASE, "size": 20 * MiB, "stream": 0, "frames": []},
        {"action": "alloc", "addr": BASE, "size": 8 * MiB, "stream": 0, "frames": []},
        {"action": "oom", "size": 16 * MiB, "device_free": 4 * MiB, "stream": 0, "frames": []},
    ]],
}


def write(path):
    with open(path, "wb") as f:
        pickle.dump(oom_snapshot, f, protocol=4)


if __name__ == "__main__":
    write(sys.argv[1])
