"""Run a snippet in a child Python process, for inputs that could crash the interpreter.

``run_in_child(code, timeout)`` returns (returncode, stdout, stderr); a segfault shows as a
negative return code (-11) instead of killing the test run, a hang as a TimeoutExpired.
"""

import os
import subprocess
import sys
import textwrap


def run_in_child(code, timeout=120):
    env = dict(os.environ, GPX_SKIP_WARMUP="1")
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=env)
    return proc.returncode, proc.stdout, proc.stderr


def assert_clean_exit(code, timeout=120):
    """The snippet exits 0 (it catches the errors it expects itself and prints what it found)."""
    rc, out, err = run_in_child(code, timeout)
    assert rc == 0, f"child exited with {rc}\nstdout:\n{out[-2000:]}\nstderr:\n{err[-4000:]}"
    return out
