# SPDX-License-Identifier: MIT
"""msmemscope's boot module: with Python stacks recorded (msmemscope
--call-stack=python:N), the launcher puts this folder first on PYTHONPATH,
so every Python interpreter of the recorded program imports msmemscope at
start-up, before the program's first line: the import installs the
profile hook that keeps each thread's Python frames for the recorder.
Then it runs the sitecustomize module that this one hides, if there is
one further on the path, as Python would have."""


def _boot():
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    try:
        import msmemscope  # noqa: F401 (the import installs the hook)
    except Exception as e:  # another interpreter than the package's
        sys.stderr.write("msmemscope: warning: no Python frames are recorded in %s (Python %s): %s\n"
                         % (sys.executable, sys.version.split()[0], e))
    import importlib.machinery
    import importlib.util

    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_boot()
del _boot
