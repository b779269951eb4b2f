# SPDX-License-Identifier: MIT
"""msmemscope.torch: PyTorch for the msmemscope recorder, as msMemScope
does it for PyTorch: every aten operator is an operator launch (named
"aten::mm", ...), and the blocks of a model are tagged by role, so that
`--analysis=decompose` shows weight, gradient, optimizer_state, activation
and aten at the end and at the peak.

    import msmemscope.torch
    model, opt = Net(), torch.optim.SGD(...)
    msmemscope.torch.track(model, opt)
    for x, y in data:
        ...
        msmemscope.step()

Without the recorder every call does nothing. See doc/python.md.
"""

import os

import torch

from . import _msmemscope as _c

try:  # the C++ RecordFunction callback, built where configure found libtorch
    from . import _torchops
except ImportError:
    _torchops = None

__all__ = ["ops", "track", "tag"]

# The roles, with msMemScope's names.
WEIGHT = "weight"
GRADIENT = "gradient"
OPTIMIZER_STATE = "optimizer_state"
ACTIVATION = "activation"
ATEN = "aten"


def _config():
    """The recording configuration (MSMEMSCOPE_CONFIG: key=value;...)."""
    keys = {}
    for part in os.environ.get("MSMEMSCOPE_CONFIG", "").split(";"):
        key, sep, value = part.partition("=")
        if sep:
            keys[key.strip()] = value.strip()
    return keys


def _events():
    """The events the recording takes (--events; --level adds launch)."""
    events = _config().get("events", "alloc,free,launch")
    return [e.strip() for e in events.split(",")]


_how = None    # how aten operators are recorded: "record_function", "dispatch", None
_mode = None   # the TorchDispatchMode fallback, while it is pushed
_step_hooks = None  # the fallback's optimizer step hooks (torch 2.0 and later)
_optimizer_depth = 0
_step_code = None   # torch.optim.Optimizer._optimizer_step_code, while wrapped


def _note_optimizer():
    """Wraps torch.optim.Optimizer._optimizer_step_code, which torch calls
    at the end of every optimizer step (1.13 and 2.x alike, inside the step's
    record_function and before its post hooks), to tell the recorder which
    optimizer's step is ending: of a program's several optimizers (a GAN's
    two), the steps of one are its inferred steps (doc/python.md)."""
    global _step_code
    import itertools
    import weakref
    import torch.optim
    code = getattr(torch.optim.Optimizer, "_optimizer_step_code", None)
    if _step_code is not None or code is None:
        return
    # Each optimizer's number, from 1: id() would give a new optimizer the
    # place of one freed (a loop that makes one per iteration would seem
    # to alternate two).
    numbers, count = weakref.WeakKeyDictionary(), itertools.count(1)

    def _optimizer_step_code(self, *a, **k):
        try:
            n = numbers.get(self)
            if n is None:
                n = numbers[self] = next(count)
        except TypeError:  # not hashable, or no weak reference to it
            n = 0
        _c.optimizer_key(n)
        return code(self, *a, **k)

    _step_code = code
    torch.optim.Optimizer._optimizer_step_code = _optimizer_step_code


def _unnote_optimizer():
    global _step_code
    if _step_code is not None:
        import torch.optim
        torch.optim.Optimizer._optimizer_step_code = _step_code
        _step_code = None


def _optimizer_pre(*_):
    global _optimizer_depth
    _optimizer_depth += 1


def _optimizer_post(*_):
    """The end of an optimizer step, the outermost of nested ones (a
    GradScaler's, ZeroRedundancyOptimizer's): a step the recorder infers
    where the program marks none. The C++ callback sees torch.optim's
    record_function "Optimizer.step#..." for the same."""
    global _optimizer_depth
    if _optimizer_depth:
        _optimizer_depth -= 1
        if not _optimizer_depth:
            _c.optimizer_step()


def _hook_optimizer_steps():
    """The fallback's inferred steps: torch.optim's global step hooks,
    from torch 2.0 (none before: no steps are inferred then)."""
    import torch.optim.optimizer as o
    if not hasattr(o, "register_optimizer_step_post_hook"):
        return None
    return (o.register_optimizer_step_pre_hook(_optimizer_pre), o.register_optimizer_step_post_hook(_optimizer_post))


def _dispatch_mode():
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Ops(TorchDispatchMode):
        """Each aten operator the dispatcher runs below autograd is a
        launch; what it allocates belongs to "aten" unless tagged later.
        Operators an operator runs inside itself are not seen here (the
        mode is off inside), so launches do not nest."""

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            _c.op_begin(func._schema.name)
            _c.owner_push(ATEN)
            try:
                return func(*args, **(kwargs or {}))
            finally:
                _c.owner_pop()
                _c.op_end()

    return _Ops()


def ops(enable=True, via=None):
    """Records every aten operator as an operator launch named as torch
    names it ("aten::addmm"), and files what an operator allocates under
    owner "aten" until a role tags it: through libtorch's RecordFunction
    (msmemscope._torchops, built where configure found libtorch-dev),
    else through a TorchDispatchMode. Only when the process is recorded
    with operator launches (--events with launch, the default;
    --level=op adds it). With --events=...,access the C++ callback also
    declares each operator's input storages read at its start and its
    outputs written at its end, for the inefficient analysis (the
    fallback does not). The end of each optimizer step is a step the
    recorder infers (of a loop with several optimizers, each iteration's
    last), which counts where the program marks none itself
    (doc/python.md). via="dispatch" takes the fallback even where the
    C++ callback is built. Returns how: "record_function", "dispatch", or
    None when operators are not recorded. ops(False) stops."""
    global _how, _mode, _step_hooks
    if via not in (None, "record_function", "dispatch"):
        raise ValueError("msmemscope.torch.ops(via=%r): record_function or dispatch" % (via,))
    if not enable:
        _unnote_optimizer()
        if _how == "record_function":
            _torchops.disable()
        elif _mode is not None:
            _mode.__exit__(None, None, None)
            _mode = None
            for h in _step_hooks or ():
                h.remove()
            _step_hooks = None
        _how = None
        return None
    if _how is not None:
        return _how
    events = _events()
    if not _c.recording() or "launch" not in events:
        return None
    if via == "record_function" and _torchops is None:
        raise RuntimeError("msmemscope.torch.ops(via='record_function'): msmemscope._torchops is not built "
                           "(configure found no libtorch; Debian: apt-get install -y libtorch-dev)")
    if via != "dispatch" and _torchops is not None and _torchops.enable("access" in events):
        _how = "record_function"
    else:
        _mode = _dispatch_mode()
        _mode.__enter__()
        _step_hooks = _hook_optimizer_steps()
        _how = "dispatch"
    _note_optimizer()
    return _how


def _block(t):
    """The address of the block that holds t's storage: its start, where
    a view's data_ptr() may point inside (a replay finds a block by its
    start at once, by an address inside it only by a search)."""
    try:
        return t.untyped_storage().data_ptr()
    except AttributeError:  # torch before 2.0
        return t.storage().data_ptr()


def tag(tensors, role):
    """Tags the storage blocks of tensors (a tensor or an iterable of
    them; None entries skipped) with owner role. Each block is tagged once
    per call."""
    if isinstance(tensors, torch.Tensor):
        tensors = (tensors,)
    seen = set()
    for t in tensors:
        if t is None:
            continue
        ptr = _block(t)
        if ptr and ptr not in seen:
            seen.add(ptr)
            _c.owner_tag(ptr, role)


def _state_tensors(optimizer):
    for state in optimizer.state.values():
        for value in state.values():
            if isinstance(value, torch.Tensor):
                yield value


# The _saved_* attributes of each autograd node type that may hold tensors.
_saved_names = {}


def _saved_tensors(node):
    names = _saved_names.get(type(node))
    if names is None:
        names = [a for a in dir(node)
                 if a.startswith("_saved_") and not a.endswith(("_sym_sizes", "_sym_strides"))]
        _saved_names[type(node)] = names
    for name in names:
        try:
            value = getattr(node, name)
        except RuntimeError:  # freed already (backward ran)
            continue
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, (tuple, list)):
            for v in value:
                if isinstance(v, torch.Tensor):
                    yield v


def _outputs(out):
    if isinstance(out, torch.Tensor):
        yield out
    elif isinstance(out, (tuple, list)):
        for o in out:
            yield from _outputs(o)
    elif isinstance(out, dict):
        for o in out.values():
            yield from _outputs(o)


def _own(fn):
    """Runs fn as msmemscope's own work: what it allocates (the autograd
    nodes' saved tensors it unpacks, the sets it builds) is marked the
    package's in the log, not the program's, so that no report calls it
    the program's leak (a leaked graph keeps what the tracker unpacked)."""
    def own(*args, **kwargs):
        token = _c._own_begin()
        try:
            return fn(*args, **kwargs)
        finally:
            _c._own_end(token)
    own.__name__ = fn.__name__
    own.__doc__ = fn.__doc__
    return own


class _Tracker:
    """What track() keeps: the model, the optimizer, and the pointers of
    the weights (a weight saved for backward stays a weight)."""

    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.weights = set()

    @_own
    def tag_weights(self):
        params = list(self.model.parameters())
        self.weights = {_block(p) for p in params}
        tag(params, WEIGHT)

    @_own
    def tag_gradients(self):
        tag((p.grad for p in self.model.parameters()), GRADIENT)

    @_own
    def tag_state(self):
        if self.optimizer is not None:
            tag(_state_tensors(self.optimizer), OPTIMIZER_STATE)

    @_own
    def forward_hook(self, module, inputs, output):
        """After the forward: the tensors the graph saved for backward."""
        seen = set()
        stack = [t.grad_fn for t in _outputs(output) if t.grad_fn is not None]
        saved = []
        while stack:
            node = stack.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            saved.extend(t for t in _saved_tensors(node) if _block(t) not in self.weights)
            stack.extend(n for n, _ in node.next_functions)
        tag(saved, ACTIVATION)


def track(model, optimizer=None, ops_too=True):
    """Tags the memory of a model by role, as msMemScope's decompose
    classifies PyTorch's: its parameters as "weight" (now), the .grad
    storages as "gradient" and the optimizer's state (momentum buffers,
    Adam's moments) as "optimizer_state" at each optimizer.step(), the
    tensors the forward saved for backward as "activation" after each
    forward of model, and, with ops_too, what aten operators allocate as
    "aten" (ops()). A tag names a block for its whole life, the peak
    included. Without an optimizer, call tag() yourself. Returns the
    model. Does nothing when the process is not recorded."""
    if not _c.recording():
        return model
    if ops_too:
        ops()
    tracker = _Tracker(model, optimizer)
    tracker.tag_weights()
    tracker.tag_gradients()
    model.register_forward_hook(tracker.forward_hook)
    if optimizer is not None:
        tracker.tag_state()
        step = optimizer.step

        def tracked_step(*args, **kwargs):
            tracker.tag_gradients()
            result = step(*args, **kwargs)
            tracker.tag_state()
            tracker.tag_weights()
            return result

        optimizer.step = tracked_step
    return model
