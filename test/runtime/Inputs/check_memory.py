"""Checks loom-run --print-memory's accounting against the resident set the
kernel measured: what the runtime says it holds must be resident at the
peak, and must explain the peak but for the process's fixed cost (the
libraries, the code, the allocator), `--slack` MiB.

usage: check_memory.py LOG --slack MIB
"""
import re
import sys

log, slack = sys.argv[1], float(sys.argv[sys.argv.index("--slack") + 1])
rows = {}
for line in open(log):
    m = re.match(r"memory: (.+?)\s+([0-9.]+) MiB", line)
    if m:
        rows[m.group(1).strip()] = float(m.group(2))
accounted = rows["accounted"]
peak = rows["resident at peak (VmHWM)"]
print("accounted %.1f MiB, peak %.1f MiB" % (accounted, peak))
if accounted > peak * 1.02:
    print("over: the accounting claims more than was ever resident")
elif peak - accounted > slack:
    print("under: %.1f MiB of the peak is not accounted for" % (peak - accounted))
else:
    print("explained")
