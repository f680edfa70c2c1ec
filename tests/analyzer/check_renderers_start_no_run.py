#!/usr/bin/env python3
"""report/ and export/ render the run stage's finished result: they start
no analysis and hold no reader (docs/internals/ARCHITECTURE.md, the
house's table; the commands in analyzer/cli/ start the read). Their static
libraries must call nothing that reads a trace or starts a run: none of
their undefined symbols may be the run stage's door (vt_run_traces,
vt_analysis_run*), the reader's (vt_reader_*) or the replay's feeding
(vt_replay_init, vt_replay_feed*, vt_replay_finish).

    check_renderers_start_no_run.py NM LIB...

Exit 1 naming the library and the symbol otherwise (fit/'s library, which
starts its own runs, is the suite's case that must fail).
"""
import re
import subprocess
import sys

FORBIDDEN = re.compile(r"^(vt_run_traces|vt_analysis_run\w*|vt_reader_\w+|vt_replay_init|"
                       r"vt_replay_feed\w*|vt_replay_finish)$")

nm, libs = sys.argv[1], sys.argv[2:]
bad = []
for lib in libs:
    out = subprocess.run([nm, "-u", lib], capture_output=True, text=True, check=True).stdout
    names = sorted({line.split()[-1] for line in out.splitlines() if line.strip()
                    and not line.endswith(":")})
    bad += ["%s calls %s" % (lib, n) for n in names if FORBIDDEN.match(n)]
if not libs:
    bad.append("no library given")
for b in bad:
    print("FAIL:", b)
print("%d libraries, %s" % (len(libs), "%d calls that read a trace" % len(bad) if bad else "none reads a trace"))
sys.exit(1 if bad else 0)
