#!/usr/bin/env python3
"""Runs a command as a child subreaper: double-forked QEMU processes are
reaped here at once (PID 1 on these machines reaps lazily, which makes
`virsh destroy` wait seconds). Forwards TERM/INT/HUP; exits with the child."""
import ctypes
import os
import signal
import sys

PR_SET_CHILD_SUBREAPER = 36
ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
child = os.fork()
if child == 0:
    os.execv(sys.argv[1], sys.argv[1:])
for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(signum, lambda s, _f: os.kill(child, s))
while True:
    try:
        pid, status = os.wait()
    except ChildProcessError:
        sys.exit(0)
    except InterruptedError:
        continue
    if pid == child:
        sys.exit(os.waitstatus_to_exitcode(status) if status else 0)
