# SPDX-License-Identifier: MIT
"""fmt: text the memscope commands print, in the words and number formats
msmemscope-replay uses (human_bytes, thread labels, stacks)."""

import re

import gdb

from . import replaylib


def human_bytes(n):
    """'512 bytes', '4.0 KiB', '1.5 MiB': src/cli.c's human_bytes()."""
    if n < 1024:
        return "%d bytes" % n
    v, unit = float(n), None
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        v /= 1024
        if v < 1024:
            break
    return "%.1f %s" % (v, unit)


def exact_bytes(n):
    """'4,096 bytes', with the human size beside it from 1 KiB on."""
    if n < 1024:
        return "%d byte%s" % (n, "" if n == 1 else "s")
    return "{:,} bytes ({})".format(n, human_bytes(n))


_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f]")


def name(raw):
    """A name the program gave (bytes, as the recorder keeps it, or str),
    as the replay library reads names from a log: UTF-8, its control
    characters (C0, DEL, C1) written \\xHH, C1's two bytes each, so that
    no message prints them (replay/core/meta.c)."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    return _CONTROLS.sub(lambda m: "".join("\\x%02x" % b for b in m.group().encode("utf-8")), text)


# What name() writes for a control character: \xHH of C0 or DEL, or
# \xc2\xHH of C1.
_ESCAPED = re.compile(r"\\x(?:(?:[01][0-9a-fA-F]|7[fF])|[cC]2\\x[89][0-9a-fA-F])")


def unname(text):
    """The name (str) whose name() is text, as a user types it from a
    message: each \\xHH that name() writes for a control character made
    that character again. Other backslashes stay (name() writes no
    other escape, so a name's own backslash reads as itself)."""
    return _ESCAPED.sub(lambda m: bytes.fromhex(m.group().replace("\\x", "")).decode("utf-8"), text)


def plural(n, noun):
    return "%d %s%s" % (n, noun, "" if n == 1 else "s")


def signed_bytes(v):
    return ("-" if v < 0 else "+") + human_bytes(abs(v))


def stack_lines(log, stack_id, depth, indent="    "):
    """The symbolized allocation stack as lines, numbered as
    msmemscope-replay prints them; at most depth frames (0 = all)."""
    if not stack_id:
        # The recorder ran without stacks only when it recorded neither C
        # nor Python frames: with python_stack alone, blocks allocated
        # where no Python frame ran (the interpreter's start) have none.
        info = log.info()
        config = log.config()
        stacks = config[0].call_stack or config[0].python_stack if config else info.call_stack_depth
        if not stacks:
            return [indent + "(no stack recorded; the recorder ran with call_stack=0)"]
        return [indent + "(no stack recorded for this block%s)" % (
            ": the recorder's table of stack frames was full" if info.stacks_full else "")]
    out = []
    ips = log.stack(stack_id)
    for i, ip in enumerate(ips):
        if depth and i >= depth:
            n = len(ips) - i
            out.append("%s... %d more frame%s (set memscope depth 0 shows all)" % (indent, n, "" if n == 1 else "s"))
            break
        for k, (txt, inlined) in enumerate(log.symbolize(ip)):
            mark = " [inlined]" if inlined else ""
            if k == 0:
                out.append("%s#%-2d %s%s" % (indent, i, txt, mark))
            else:
                out.append("%s    %s%s" % (indent, txt, mark))
    return out


def unchecked_warnings(info, log=None, unchecked=0):
    """Lines saying which checks the log's recording could not make (the
    replay's and the launcher's warnings of the same name): the bad frees'
    lines go with them, not the leaks'. With the log and the frees it did
    not check for their family (Where.unchecked_frees), the module that
    calls its own operators too."""
    out = []
    if info.own_cxx:
        out.append("%s defines %s itself, so mismatched frees are not checked: new and delete are recorded as "
                   "the malloc and free they call"
                   % (replaylib.text(info.own_cxx), replaylib.text(info.own_cxx_op)))
    if unchecked and log is not None:
        own = log.own_operators()
        who = ("%s calls its own %s (a C++ runtime linked into it)" % own if own and own[1]
               else "%s has its own copy of the C++ runtime (linked into it)" % (own[0] if own else "a module"))
        out.append("%s between the malloc and C++ families not told mismatched: %s: the recorder sees its new and "
                   "delete as the malloc and free they call" % (plural(unchecked, "free"), who))
    return out


def log_warnings(info):
    """Lines saying what the log lacks although it is whole (the
    replay's and the launcher's warnings of the same name)."""
    out = []
    if info.own_malloc:
        out.append("%s defines malloc itself (an allocator linked into the program): the calls of its malloc "
                   "family never reach the recorder, so the live blocks and leaks miss them"
                   % replaylib.text(info.own_malloc))
    if info.stacks_full:
        out.append("the recorder's table of stack frames filled up: the stacks of the events after that are cut "
                   "short or absent")
    return out


def step_name(step):
    """'step 3', or for the recorder's step 0 (between "step start"
    ranges) 'outside any step': steps count from 1 in every output."""
    return "step %d" % step if step else "outside any step"


def gdb_thread(tid):
    """'thread 2 "worker" (LWP 1234)' for an OS thread id of the current
    inferior, or 'LWP 1234' when gdb does not list it."""
    for t in gdb.selected_inferior().threads():
        if t.ptid[1] == tid:
            name = t.name
            return 'thread %d%s (LWP %d)' % (t.num, ' "%s"' % name if name else "", tid)
    return "LWP %d" % tid


def block_kind(b):
    kind = replaylib.MEM_NAMES[b.mem] if b.mem < len(replaylib.MEM_NAMES) else "UNKNOWN"
    pool = replaylib.text(b.pool)
    if b.mem == replaylib.MEM_DEVICE:
        return kind + (" on %s" % pool if pool else "")  # CUDA memory: pool names the device
    return kind + (" (pool '%s')" % pool if pool else "")


def block_origin(log, b):
    """"by t0 'infer' in step 3, operator attention (launch 12), owner
    model@kv_cache", each part only when known."""
    out = "by " + log.thread_label(b.thread)
    parts = ["step %d" % b.step] if b.step else []
    op = replaylib.text(b.op)
    if op:
        parts.append("operator %s (launch %d)" % (op, b.op_launch))
    if parts:
        out += " in " + ", ".join(parts)
    owner = replaylib.text(b.owner)
    if owner:
        out += ", owner " + owner
    return out


def _xor(old, new):
    """old ^ new, byte by byte, over their common length: zero where the
    bytes are equal. One XOR of two integers, not a loop in Python: a
    stop's diff of a large block takes no longer than reading it."""
    n = min(len(old), len(new))
    if not n:
        return b""
    return (int.from_bytes(old[:n], "little") ^ int.from_bytes(new[:n], "little")).to_bytes(n, "little")


_CHANGED = re.compile(rb"[^\x00]+")


def diff_ranges(old, new, base, align=8, xor=None):
    """The changed bytes between two equal-length byte strings, as
    (start, end) offsets, each widened to the aligned words (of the
    address base + offset) it touches, adjacent ones merged."""
    ranges = []
    if xor is None:
        xor = _xor(old, new)
    n = len(xor)
    for m in _CHANGED.finditer(xor):
        lo = max(0, m.start() - (base + m.start()) % align)
        last = m.end() - 1
        hi = min(n, last - (base + last) % align + align)
        if ranges and lo <= ranges[-1][1]:
            ranges[-1] = (ranges[-1][0], max(hi, ranges[-1][1]))
        else:
            ranges.append((lo, hi))
    return ranges


def hex_bytes(b):
    return " ".join("%02x" % x for x in b)


def diff_lines(old, new, base, indent="    ", per_line=8, max_lines=16):
    """Lines '+0x40  a0 a1 ... -> 30 31 ...' for the changed words, at
    most max_lines of them (0: all)."""
    out = []
    xor = _xor(old, new)
    changed = len(xor) - xor.count(0)
    for lo, hi in diff_ranges(old, new, base, per_line, xor):
        for at in range(lo, hi, per_line):
            end = min(at + per_line, hi)
            if max_lines and len(out) >= max_lines:
                out.append("%s... (more changed bytes not shown)" % indent)
                return changed, out
            out.append("%s+0x%-4x %s -> %s" % (indent, at, hex_bytes(old[at:end]), hex_bytes(new[at:end])))
    return changed, out
