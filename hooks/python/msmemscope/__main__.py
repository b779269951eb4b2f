# SPDX-License-Identifier: MIT
"""python3 -m msmemscope [msmemscope options --] script.py [args]: runs the
script under the msmemscope launcher (which records it and reports after
it exits), with this interpreter. Options before "--" are msmemscope's
(msmemscope --help); without "--" every argument is the script's."""

import os
import shutil
import sys

try:
    from ._launcher import LAUNCHER
except ImportError:
    LAUNCHER = None


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write("usage: python3 -m msmemscope [msmemscope options --] script.py [args...]\n"
                         "Records the script with the msmemscope launcher; the options are msmemscope's\n"
                         "(msmemscope --help), given before '--'.\n")
        return 0 if argv else 2
    if "--" in argv:
        cut = argv.index("--")
        opts, rest = argv[:cut], argv[cut + 1:]
    else:
        opts, rest = [], argv
    if not rest:
        sys.stderr.write("msmemscope: no script to run after '--'\n")
        return 2
    launcher = LAUNCHER if LAUNCHER and os.access(LAUNCHER, os.X_OK) else shutil.which("msmemscope")
    if not launcher:
        sys.stderr.write("msmemscope: the msmemscope launcher is neither where this package was built for "
                         "(%s) nor on PATH; install msmemscope or add it to PATH\n" % (LAUNCHER or "unknown"))
        return 127
    args = [launcher] + opts + ["--", sys.executable] + rest
    try:
        os.execv(launcher, args)
    except OSError as e:
        sys.stderr.write("msmemscope: cannot run %s: %s\n" % (launcher, e.strerror))
        return 126


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
