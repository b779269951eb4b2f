#!/bin/sh
# SPDX-License-Identifier: MIT
# sigfwd.sh: the launcher stands where the program's pid was, so a signal
# sent to it reaches the program as it would natively: each of USR1, INT,
# QUIT, ALRM, WINCH, TSTP and CONT sent to the pid a parent started (a
# supervisor, Python's subprocess) is caught by the program's handler, with
# the same exit status and output as without msmemscope (before, USR1 and
# ALRM killed the launcher and orphaned the program, INT and QUIT were
# dropped, TSTP stopped the launcher alone). A program that stops itself
# is seen stopped by its parent (waitpid WUNTRACED), as natively, and
# runs on when continued.
. "$top_srcdir/tests/progs/lib.sh"

[ -x "$MMS_LAUNCHER" ] || fail "the launcher is not built: $MMS_LAUNCHER"

"$MMS_PYTHON" - "$MMS_LAUNCHER" >sigfwd.out 2>&1 <<'PY' || fail "$(cat sigfwd.out)"
import os, signal, subprocess, sys, time

launcher = sys.argv[1]
bad = []


def run(wrap, sig):
    """(status, output) of a shell that traps sig, sent sig once it runs."""
    name = signal.Signals(sig).name[3:]
    if os.path.exists("ready"):
        os.unlink("ready")
    script = "trap 'echo got %s; exit 3' %s; : >ready; i=0; while [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; echo timeout" % (name, name)
    p = subprocess.Popen(wrap + ["/bin/sh", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    t = time.time()
    while not os.path.exists("ready") and time.time() - t < 20:
        time.sleep(0.02)
    p.send_signal(sig)
    out, _ = p.communicate(timeout=60)
    return p.returncode, out.decode().strip()


wrap = [launcher, "--output=out", "-q", "--"]
for sig in (signal.SIGUSR1, signal.SIGINT, signal.SIGQUIT, signal.SIGALRM, signal.SIGWINCH, signal.SIGTSTP,
            signal.SIGCONT, signal.SIGTERM):
    native, recorded = run([], sig), run(wrap, sig)
    print("%-8s native %s, recorded %s" % (signal.Signals(sig).name, native, recorded))
    if native != recorded or native != (3, "got " + signal.Signals(sig).name[3:]):
        bad.append(signal.Signals(sig).name)

# A program that stops itself: its parent sees the job stopped, then
# continues it and sees it end.
for wrap in ([], [launcher, "--output=out", "-q", "--"]):
    p = subprocess.Popen(wrap + ["/bin/sh", "-c", "kill -STOP $$; echo resumed; exit 5"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    t, st = time.time(), None
    while time.time() - t < 20:
        pid, s = os.waitpid(p.pid, os.WUNTRACED | os.WNOHANG)
        if pid:
            st = s
            break
        time.sleep(0.02)
    stopped = st is not None and os.WIFSTOPPED(st)
    os.kill(p.pid, signal.SIGCONT)
    if stopped:
        _, st = os.waitpid(p.pid, 0)
    out = p.stdout.read().decode().strip()
    p.stdout.close()
    code = os.WEXITSTATUS(st) if st is not None and os.WIFEXITED(st) else None
    print("self-stop %s: stopped %s, then %s %r" % ("recorded" if wrap else "native", stopped, code, out))
    if not stopped or code != 5 or out != "resumed":
        bad.append("self-stop " + ("recorded" if wrap else "native"))
if bad:
    print("differ from native: " + ", ".join(bad))
    sys.exit(1)
PY
cat sigfwd.out
note "USR1, INT, QUIT, ALRM, WINCH, TSTP, CONT, TERM reach the program as natively; a self-stop is seen stopped"
