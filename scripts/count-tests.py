#!/usr/bin/env python3
"""Counts test results from meson's JSON test logs and prints, last, the line
"N passed, N failed". Exit status 1 if any test failed or a log is missing."""
import json
import sys

PASSED = {"OK", "EXPECTEDFAIL"}
SKIPPED = {"SKIP"}

passed = failed = skipped = 0
for path in sys.argv[1:]:
    try:
        with open(path, encoding="utf-8") as log:
            lines = [line for line in log if line.strip()]
    except OSError as err:
        print(f"count-tests: {path}: {err.strerror} (did that build fail?)")
        failed += 1
        continue
    for line in lines:
        result = json.loads(line).get("result")
        if result in PASSED:
            passed += 1
        elif result in SKIPPED:
            skipped += 1
        else:
            failed += 1
if skipped:
    print(f"{skipped} skipped")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
