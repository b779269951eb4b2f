# SPDX-License-Identifier: MIT
"""msmemscope: mark the steps, operators, owners and watched buffers of a
Python program for the msmemscope memory recorder, with msMemScope's
Python API (config, start, stop, step, tracer).

Record a program by running it under the launcher:

    msmemscope [options] -- python3 train.py

and, in train.py:

    import msmemscope
    for batch in data:
        with msmemscope.op("forward"):
            loss = model(batch)
        msmemscope.step()

Without the recorder every call does nothing (and costs a function call);
start() then says once, on stderr, how to record the program. See
doc/python.md.
"""

import os
import sys

from . import _msmemscope as _c

__all__ = ["config", "start", "stop", "step", "recording", "op", "owner", "owner_tag", "range", "mark",
           "kernel_launch", "watch", "tracer", "Pool", "pool_alloc", "pool_free"]

# msMemScope's config() keys and the launcher options they are.
_OPTIONS = {
    "call_stack": "--call-stack",
    "events": "--events",
    "collect_mode": "--collect-mode",
    "steps": "--steps",
    "analysis": "--analysis",
    "watch": "--watch",
    "data_format": "--data-format",
    "output": "--output",
    "log_level": "--log-level",
    "level": "--level",
    "keep_stacktraces": "--keep-stacktraces",
    "device": "--device",
}

_config = {}
_said = set()


# What the launcher takes for each option (src/launch-options.c and
# src/analysis.c parse them; keep the two together): config() refuses a
# value the command line it suggests would refuse. Each check returns
# None, or what the option takes ("expected ...").
def _items(value):
    """A list's items: ',' or the full-width '\uff0c' between them, as the launcher reads it."""
    return value.replace("\uff0c", ",").split(",")


def _number(text, low, high):
    """Whether text is a decimal number from low to high."""
    return text.isascii() and text.isdigit() and low <= int(text) <= high


def _check_events(value):
    if value and not all(i in ("alloc", "free", "launch", "access", "traceback") for i in _items(value)):
        return "expected a list of alloc, free, launch, access (alloc and free are always recorded)"
    return None


def _check_call_stack(value):
    for item in _items(value) if value else [""]:
        kind, colon, depth = item.partition(":")
        if kind not in ("c", "python") or (colon and not _number(depth, 0, 1000)):
            return "expected c, c:N or python[:N] (several separated by commas), N from 0 to 1000"
    return None


def _check_steps(value):
    items = _items(value)
    if not value or len(items) > 5 or not all(_number(i, 1, 2**31 - 1) for i in items):
        return "expected 1 to 5 step numbers (from 1 to 2147483647) separated by commas"
    return None


_ANALYSES = ("leaks", "decompose", "inefficient", "watermark", "usage", "leakage", "watch", "guard", "oom")


def _check_analysis(value):
    items = _items(value)
    if len(items) > 1 and items[-1] == "":
        items.pop()  # a trailing comma, which the launcher lets pass
    for item in items if value else []:
        if item.startswith("oom:"):
            if not _number(item[4:], 1, 100000):
                return "expected oom:K with K from 1 to 100000 blocks, not %r" % item
        elif item not in _ANALYSES:
            return "expected a list of %s (oom:K too; empty: record only)" % ", ".join(_ANALYSES)
    return None


def _watch_name(name):
    return 0 < len(name.encode("utf-8")) < 64 and ";" not in name


def _check_watch(value):
    expected = ("expected [START[:outN],]END[,full-content]: operator names of 1 to 63 bytes without ';' or ',', "
                "N from 0 to 31, :outN only on START")
    items = _items(value)
    if items and items[-1] == "full-content":
        items.pop()
    if not value or not 1 <= len(items) <= 2:
        return expected
    start, end = items[0] if len(items) == 2 else None, items[-1]

    def out(name):  # the position of a ":outN" suffix, or -1
        at = name.rfind(":")
        tail = name[at + 4:]
        return at if at >= 0 and name[at + 1:at + 4] == "out" and tail.isascii() and tail.isdigit() else -1

    if out(end) >= 0 or not _watch_name(end):
        return expected
    if start is not None:
        at = out(start)
        if at >= 0 and int(start[at + 4:]) > 31:
            return expected
        if not _watch_name(start[:at] if at >= 0 else start):
            return expected
    return None


def _check_device(value):
    for item in _items(value):
        name = "cuda" if item.startswith("cuda") else "npu" if item.startswith("npu") else None
        rest = item[len(name):] if name else None
        if rest is None or (rest and not (rest[:1] == ":" and _number(rest[1:], 0, 63))):
            return ("expected cuda (every device) or cuda:N (N a device ordinal from 0 to 63), several separated "
                    "by commas; npu and npu:N, msMemScope's spellings, are taken as cuda and cuda:N")
    return None


def _one_of(*names, text=None):
    expected = "expected " + (text or ", ".join(names[:-1]) + " or " + names[-1])
    return lambda value: None if value in names else expected


_CHECKS = {
    "call_stack": _check_call_stack,
    "events": _check_events,
    "collect_mode": _one_of("immediate", "deferred"),
    "steps": _check_steps,
    "analysis": _check_analysis,
    "watch": _check_watch,
    "data_format": _one_of("csv", "db"),
    "output": lambda v: None if 0 < len(v) <= 4096 else "expected a directory path of 1 to 4096 characters",
    "log_level": _one_of("info", "warn", "error"),
    "level": _one_of("op", "kernel", "0", "1", text="op or kernel (0 or 1)"),
    "keep_stacktraces": _one_of("alloc", "alloc-and-free"),
    "device": _check_device,
}


def _stacks_setup():
    """With Python stacks recorded (--call-stack=python:N), the recorder
    reads every thread's frames from the interpreter (CPython 3.11 to
    3.13), or _msmemscope installed its profile hook on the importing
    thread at import (from Python 3.12 on every thread running then);
    threads the threading module starts later then install it at their
    first call, and a profile function set with sys.setprofile() replaces
    the hook on its thread, whose Python frames are then no longer
    recorded."""
    if not _c.stacks_hooked():
        return
    # PyEval_SetProfileAllThreads (3.12) reaches the threads running at
    # import only: threads started later install the hook themselves.
    import threading
    threading.setprofile(_c.stack_thread)
    _c.wrap_setprofile(sys.setprofile)
    sys.setprofile = _c.setprofile


_stacks_setup()


def _imports_setup():
    """While the program runs recorded, what a module allocates while it
    is imported (its top-level code, an extension module's
    initialisation, the libraries it loads) is marked as that module's
    state: CPython keeps every module to the end, so live at exit it is
    not the program's leak. importlib's loading of a module (which every
    import, import_module() and __import__ go through) runs inside the
    recorder's scope for that; the program sees no difference (the
    wrapper is C code: an import's traceback shows no frame of ours)."""
    if not _c.recording():
        return
    try:
        import _frozen_importlib as bootstrap

        load = bootstrap._load_unlocked
    except (ImportError, AttributeError):  # another import system
        return
    bootstrap._load_unlocked = _c.wrap_load(load)


_imports_setup()


def _sweep(collect, mark=_c.exit_sweep):
    """The sweep at exit (see _sweep_setup), between the two records that
    tell the leaks report what it freed. The first record is its first
    call, with no attribute looked up before it: a lookup may push an
    attribute name out of CPython's method cache, and free it, before
    the sweep has begun."""
    mark(0)
    try:
        # CPython's method cache keeps the last attribute name looked up
        # in each of its slots: C code's lookups (PyObject_GetAttrString)
        # make a new string each time, kept there until the slot is reused.
        clear = getattr(sys, "_clear_internal_caches", None) or getattr(sys, "_clear_type_cache", None)
        if clear is not None:
            clear()
        # PyTorch keeps a weak reference to each storage it received from
        # another process (a DataLoader worker's batches) until its cache
        # holds 128 of them; the dead ones go when it next fills.
        red = sys.modules.get("torch.multiprocessing.reductions")
        cache = getattr(red, "shared_cache", None)
        free_dead = getattr(cache, "free_dead_references", None)
        lock = getattr(cache, "lock", None)
        # Never waited for: a daemon thread may hold it at exit.
        if callable(free_dead) and lock is not None and lock.acquire(False):
            try:
                free_dead()
            finally:
                lock.release()
        if collect:
            import gc

            if gc.isenabled():
                gc.collect()
    except Exception:  # a cache of another version: what was freed counts
        pass
    finally:
        mark(1)


def _sweep_setup():
    """At exit, after the program's own exit handlers, the package frees
    what CPython and PyTorch still keep of what the program let go of:
    CPython's method cache and PyTorch's cache of storages shared by other
    processes are emptied, and, when this handler is the last to run (the
    package was imported before any handler was registered, as the
    launcher's boot module imports it), the garbage collection that Python
    makes right after the exit handlers is made a moment earlier, here.
    What the sweep frees is no per-step leak (doc/analyses.md): a step's
    reference cycles, which no collection reached before the loop ended,
    and cache entries no longer count as kept. Nothing the program sees
    changes: its handlers have run, and Python empties the same caches
    and collects the same garbage when it finalizes."""
    if not _c.recording():
        return
    import atexit

    ncallbacks = getattr(atexit, "_ncallbacks", None)
    atexit.register(_sweep, ncallbacks is not None and ncallbacks() == 0)


_sweep_setup()


def _say(key, text):
    """Writes one line on stderr, once per key."""
    if key in _said:
        return
    _said.add(key)
    sys.stderr.write("msmemscope: %s\n" % text)
    sys.stderr.flush()


def recording():
    """True when the msmemscope recorder records this process."""
    return _c.recording()


_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-")


def _quote(arg):
    """arg quoted for a POSIX shell, as shlex.quote() does: shlex (and re
    with it) is not imported, so that config() in a recorded program
    allocates nothing of an import in the program's step."""
    if arg and all(c in _SAFE for c in arg):
        return arg
    return "'" + arg.replace("'", "'\"'\"'") + "'"


def _command_line():
    """The msmemscope command that records this program with config()'s
    options."""
    opts = []
    for key, value in _config.items():
        if key in _OPTIONS:
            opts.append("%s=%s" % (_OPTIONS[key], value))
    if _config and "collect_mode" not in _config:
        # start() and stop() bound the recording, as in msMemScope.
        opts.append("--collect-mode=deferred")
    argv = getattr(sys, "orig_argv", None) or [sys.executable] + sys.argv
    return " ".join(_quote(a) for a in ["msmemscope"] + opts + ["--"] + list(argv))


def config(**options):
    """Sets the recording options, with msMemScope's names: call_stack
    ("c:10" or "c:10,python:5"), events ("alloc,free,launch,access"),
    collect_mode, steps, analysis ("leaks,decompose"), watch, data_format
    ("csv" or "db"), output (a folder), log_level, level ("op" or "0":
    operator launches, a torch program's aten operators with
    msmemscope.torch), device ("npu" or "cuda": every CUDA device;
    "npu:1" or "cuda:1": that device's memory only), and msmemscope's
    keep_stacktraces ("alloc": allocations' stacks only). Values are
    strings (or numbers, lists of them). A value the launcher's option
    would refuse is a ValueError that names it and says what the option
    takes; then none of the options given is set.

    The recorder reads its options when the program starts: under
    `msmemscope -- python3 prog.py` the command line's options apply, and
    config() says on stderr which of its own it could not apply. Without
    the recorder, start() prints the command line that records the program
    with these options."""
    given, bad = {}, []
    for key, value in options.items():
        if key not in _OPTIONS:
            raise TypeError("msmemscope.config(): unknown option %r (known: %s)"
                            % (key, ", ".join(sorted(_OPTIONS))))
        if isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        given[key] = str(value)
        why = _CHECKS[key](given[key])
        if why:
            bad.append("%s=%r: %s" % (key, given[key], why))
    if bad:
        raise ValueError("msmemscope.config(): " + "; ".join(bad))
    token = _c._own_begin()  # the table's memory is the package's, not the step's
    try:
        _config.update(given)
    finally:
        _c._own_end(token)
    if _c.recording() and options:
        given = os.environ.get("MSMEMSCOPE_CONFIG", "")
        keys = ", ".join("%s=%s" % (k, _config[k]) for k in _config)
        _say("config", "config(%s) comes after the recorder started (its configuration: %s); "
             "options apply only on the command line: %s" % (keys, given or "the defaults", _command_line()))


def start():
    """Starts collection (with --collect-mode=deferred, the recorder
    records only between start() and stop()). Without the recorder, says
    once how to record the program."""
    if _c.recording():
        _c.start()
        return
    _say("start", "this process is not recorded, so msmemscope calls do nothing; record it with: %s"
         % _command_line())


def stop():
    """Stops collection until the next start()."""
    _c.stop()


def step():
    """Ends the current step; the code before the first call is step 1."""
    _c.step()


def mark(name):
    """Records a named instant (an MSTX mark)."""
    _c.mark(str(name))


def kernel_launch(name):
    """Records the launch of a kernel, a unit of work below an operator."""
    _c.kernel_launch(str(name))


# What functools.update_wrapper() copies from a function to its wrapper.
_WRAPPER_ASSIGNMENTS = ("__module__", "__name__", "__qualname__", "__doc__", "__annotations__", "__type_params__")


def _wraps(wrapper, fn):
    """wrapper made to look like fn, as functools.wraps(fn) does. Not
    functools itself: importing it (and collections, operator, ... with
    it) where a program first decorates a function would allocate
    thousands of blocks in that step, which the per-step rule then
    blames on the program; and importing it with the package would slow
    the start of every recorded interpreter."""
    for attr in _WRAPPER_ASSIGNMENTS:
        try:
            value = getattr(fn, attr)
        except AttributeError:
            continue
        setattr(wrapper, attr, value)
    wrapper.__dict__.update(getattr(fn, "__dict__", {}))
    wrapper.__wrapped__ = fn
    return wrapper


class _Scope:
    """A with-block, or a decorator of a function, that opens on entry
    and closes on exit (exceptions included)."""

    def __init__(self, name):
        self.name = str(name)

    def __call__(self, fn):
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return _wraps(wrapper, fn)


class op(_Scope):
    """`with msmemscope.op("attention"):` records an operator launch around
    the block (launches nest); also a decorator, @msmemscope.op("name")."""

    def __enter__(self):
        _c.op_begin(self.name)
        return self

    def __exit__(self, *exc):
        _c.op_end()
        return False


class owner(_Scope):
    """`with msmemscope.owner("cache"):` makes the blocks allocated in the
    block belong to owner "cache" (nested owners join with '@')."""

    def __enter__(self):
        _c.owner_push(self.name)
        return self

    def __exit__(self, *exc):
        _c.owner_pop()
        return False


class range(_Scope):
    """`with msmemscope.range("load"):` records an MSTX range around the
    block; a range named "step start" delimits a step."""

    def __enter__(self):
        self.id = _c.range_start(self.name)
        return self

    def __exit__(self, *exc):
        _c.range_end(self.id)
        return False


def _extent(obj, size, call="msmemscope.watch()"):
    """(address, size) of what watch() (or call, named in the error) is given."""
    if isinstance(obj, int):
        if size is None:
            raise TypeError("msmemscope.watch(address, name, size=N): an address needs its size")
        return obj, int(size)
    # A torch tensor (or any object with data_ptr()): its storage's bytes.
    data_ptr = getattr(obj, "data_ptr", None)
    if callable(data_ptr):
        nbytes = getattr(obj, "nbytes", None)
        if nbytes is None:
            nbytes = obj.element_size() * obj.nelement()
        return data_ptr(), int(size if size is not None else nbytes)
    try:
        addr, n = _c.buffer_range(obj)
    except (TypeError, BufferError):
        raise TypeError("%s: %s has neither the buffer protocol nor data_ptr(); pass an address%s"
                        % (call, type(obj).__name__, " and size=" if call.endswith("watch()") else "")) from None
    return addr, int(size if size is not None else n)


def owner_tag(obj, tag):
    """Tags the live block holding obj with owner tag, after the fact: a
    torch tensor (its storage's block), anything with the buffer protocol,
    or an int address. The block belongs to tag for its whole life, in
    decompose at the end and at the peak (msmemscope_owner_tag())."""
    if isinstance(obj, int):
        addr = obj
    elif callable(getattr(obj, "data_ptr", None)):
        addr = obj.data_ptr()
    else:
        addr = _extent(obj, None, "msmemscope.owner_tag()")[0]
    _c.owner_tag(_count("address", addr, "msmemscope.owner_tag()"), str(tag))


def watch(obj, name=None, size=None):
    """Watches the bytes of obj across operator launches: a bytearray,
    memoryview, array, numpy array (anything with the buffer protocol), a
    torch tensor (data_ptr()), or an int address with size=. A launch that
    changes them is reported by the watch analysis (and stops gdb under
    memscope.gdb). Keep obj alive and unresized while it is watched."""
    addr, n = _extent(obj, size)
    addr = _count("address", addr, "msmemscope.watch()")
    n = int(n)
    if not 0 < n < _U64:
        raise ValueError("msmemscope.watch(): size must be from 1 to 2**64 - 1, not %d" % n)
    if addr + n > _U64:
        raise ValueError("msmemscope.watch(): %d bytes at 0x%x go past the end of the address space (2**64)"
                         % (n, addr))
    _c.watch_range(addr, n, None if name is None else str(name))


_U64 = 1 << 64


def _count(what, value, call="msmemscope"):
    """value as an int from 0 to 2**64 - 1, or ValueError naming what
    (and call)."""
    v = int(value)
    if not 0 <= v < _U64:
        raise ValueError("%s: %s must be from 0 to 2**64 - 1, not %d" % (call, what, v))
    return v


def pool_alloc(pool, address, size, total=0, used=0):
    """Records a block a custom allocator of the program's (a pool: a KV
    cache's block manager, an arena of buffers) handed out: pool names it
    (None: "POOL"), address and size are the block's, total the bytes the
    pool holds from the system and used those it has handed out, after
    this block (0: not known). The block is POOL memory in every analysis
    (msmemscope_pool_alloc()); Pool keeps the counts for you."""
    _c.pool_alloc(None if pool is None else str(pool), _count("address", address), _count("size", size),
                  _count("total", total), _count("used", used))


def pool_free(pool, address, size, total=0, used=0):
    """Records a block pool took back (see pool_alloc())."""
    _c.pool_free(None if pool is None else str(pool), _count("address", address), _count("size", size),
                 _count("total", total), _count("used", used))


class Pool:
    """A custom allocator of the program's, named: its blocks are POOL
    memory under that name in the log (decompose, leaks, the dump's
    Event Type). alloc() and free() take a block as an int address, a
    torch tensor (data_ptr()) or an object with the buffer protocol, and
    keep the bytes in use; reserved is what the pool holds from the
    system (its arena), which reserve() changes.

        kv = msmemscope.Pool("kvcache", reserved=arena_bytes)
        kv.alloc(addr, size)      # when the pool hands the block out
        kv.free(addr)             # when it takes it back
    """

    def __init__(self, name, reserved=0):
        self.name = str(name)
        self.reserved = _count("reserved", reserved)
        self.used = 0
        self._sizes = {}

    def reserve(self, nbytes):
        """The pool now holds nbytes from the system (told with its next block)."""
        self.reserved = _count("reserved", nbytes)

    def _block(self, call, block, size):
        """(address, size) of block, or TypeError naming this call."""
        if isinstance(block, int) and size is None and call == "alloc":
            raise TypeError("msmemscope.Pool(%r).alloc(address, size): an address needs its size" % self.name)
        try:
            return _extent(block, size)
        except TypeError:
            raise TypeError("msmemscope.Pool(%r).%s(): %s is neither an int address, a tensor nor a buffer"
                            % (self.name, call, type(block).__name__)) from None

    def alloc(self, block, size=None):
        """Records block (size bytes: needed for an int address) handed
        out; returns its address."""
        addr, n = self._block("alloc", block, size)
        addr, n = _count("address", addr), _count("size", n)
        if addr in self._sizes:
            raise ValueError("msmemscope.Pool(%r).alloc(): 0x%x is handed out already; free() it first"
                             % (self.name, addr))
        token = _c._own_begin()  # the table's memory is the package's
        try:
            self._sizes[addr] = n
        finally:
            _c._own_end(token)
        self.used += n
        _c.pool_alloc(self.name, addr, n, self.reserved, self.used)
        return addr

    def free(self, block):
        """Records block (as alloc() was given it, or its address) taken back."""
        addr = block if isinstance(block, int) else self._block("free", block, 0)[0]
        n = self._sizes.pop(addr, None)
        if n is None:
            raise ValueError("msmemscope.Pool(%r).free(): 0x%x is no block this pool handed out"
                             % (self.name, addr))
        self.used -= n
        _c.pool_free(self.name, addr, n, self.reserved, self.used)


class _Tracer:
    """msMemScope's Python tracer: tracer.start() times every function
    call of the calling thread until tracer.stop(), which writes
    python_trace_{TID}_{timestamp}.csv (FuncInfo, StartTime(ns),
    EndTime(ns), Thread Id, Process Id; times in the clock of the log's
    event times) into the run folder, or the current folder without the
    recorder, and returns its path; python_trace_{TID}_{timestamp}_2.csv
    (_3, ...) when a file has that name already (an earlier session in
    the same second)."""

    def start(self):
        _c.tracer_start()

    def stop(self):
        return _c.tracer_stop()


tracer = _Tracer()
