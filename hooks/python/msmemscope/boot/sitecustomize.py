# SPDX-License-Identifier: MIT
"""msmemscope's boot module: with Python stacks recorded (msmemscope
--call-stack=python:N) or aten operators (msmemscope --level=op, the
recording key torch_ops=1), the launcher puts this folder first on
PYTHONPATH, so every Python interpreter of the recorded program imports
msmemscope at start-up, before the program's first line: the import
installs the profile hook that keeps each thread's Python frames for the
recorder. With torch_ops, the program's own import of torch, whenever it
comes, is followed by msmemscope.torch.ops(): every aten operator is then
an operator launch, with no change to the program (torch is never
imported here). Then it runs the sitecustomize module that this one
hides, if there is one further on the path, as Python would have."""


def _config_key(os, name, default):
    """A key of the recording's configuration (MSMEMSCOPE_CONFIG)."""
    for part in os.environ.get("MSMEMSCOPE_CONFIG", "").split(";"):
        key, sep, value = part.partition("=")
        if sep and key.strip() == name:
            return value.strip()
    return default


class _AfterTorch:
    """A finder first on sys.meta_path that waits for the import of torch:
    it finds torch's spec with the finders after it, and has its loader
    call msmemscope.torch.ops() once torch's module has run. It leaves
    sys.meta_path at its first use."""

    def find_spec(self, name, path=None, target=None):
        import sys

        if name != "torch":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        run = getattr(loader, "exec_module", None)
        if run is None:
            return spec

        def exec_module(module):
            run(module)
            _torch_ops()

        try:
            loader.exec_module = exec_module
        except (AttributeError, TypeError):  # a loader that takes no attribute
            pass
        return spec


def _torch_ops():
    import sys

    # Only PyTorch's torch (its extension torch._C loaded): a module of
    # the program's own that is named torch gets nothing, and libtorch is
    # never loaded into a process that did not load it.
    if not hasattr(sys.modules.get("torch"), "_C"):
        return
    try:
        import msmemscope.torch

        msmemscope.torch.ops()
    except Exception as e:  # torch of another build, no package for it
        sys.stderr.write("msmemscope: warning: --level=op: the aten operators of %s are not recorded: %s\n"
                         % (sys.executable, e))


def _boot():
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    try:
        import msmemscope  # noqa: F401 (the import installs the hook)
    except Exception as e:  # another interpreter than the package's
        # Said only when Python frames were asked for: with torch_ops
        # alone, an interpreter that never imports torch (a build's
        # scripts) stays silent; one that does says it at that import.
        if _config_key(os, "python_stack", "0") not in ("", "0"):
            sys.stderr.write("msmemscope: warning: no Python frames are recorded in %s (Python %s): %s\n"
                             % (sys.executable, sys.version.split()[0], e))
    if _config_key(os, "torch_ops", "0") == "1":
        if "torch" in sys.modules:
            _torch_ops()
        else:
            sys.meta_path.insert(0, _AfterTorch())
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    # The import system's own modules, loaded already: importing
    # importlib.machinery and importlib.util would cost every recorded
    # interpreter some 9 ms at start-up.
    try:
        import _frozen_importlib
        import _frozen_importlib_external

        find_spec = _frozen_importlib_external.PathFinder.find_spec
        from_spec = _frozen_importlib.module_from_spec
    except (ImportError, AttributeError):
        import importlib.machinery
        import importlib.util

        find_spec = importlib.machinery.PathFinder.find_spec
        from_spec = importlib.util.module_from_spec
    spec = find_spec("sitecustomize", path)
    if spec is not None and spec.loader is not None:
        module = from_spec(spec)
        spec.loader.exec_module(module)


_boot()
del _boot
