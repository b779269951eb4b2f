# SPDX-License-Identifier: MIT
"""watch: `memscope watch EXPR [SIZE]`, `memscope unwatch [N]`, and the
report printed when a watched block changed.

gdb only arms a slot of the descriptor (address, size, a new generation);
the hooks snapshot the block at the next operator boundary, compare it at
every boundary after that, and call msmemscope_gdb_stopped() only when it
changed, with the old bytes kept beside the new ones."""

import gdb

from . import args, fmt, gdbif, replaylib
from .session import Command, Error, Watch

USAGE = "usage: memscope watch [EXPR [SIZE]]"


def _target_size(value):
    """sizeof what EXPR designates (its target for a pointer), or None."""
    t = value.type.strip_typedefs()
    if t.code == gdb.TYPE_CODE_PTR:
        t = t.target().strip_typedefs()
    if t.code in (gdb.TYPE_CODE_VOID, gdb.TYPE_CODE_FUNC) or t.sizeof <= 0:
        return None
    return t.sizeof


def address_of(expr):
    """EXPR -> (address, sizeof its target or None). A pointer gives the
    address it holds (watch what it points to); an integer that is not a
    variable is an address; any other object is watched where it lies.
    Evaluated with calls into the program refused (args.evaluate)."""
    return args.evaluate(expr, lambda value: _address_of(expr, value), USAGE)


def _address_of(expr, value):
    t = value.type.strip_typedefs()
    if t.code == gdb.TYPE_CODE_FUNC:
        raise Error("memscope: %s is a function; watch data: a pointer, an address or an object.\n%s"
                    % (expr, USAGE))
    if t.code == gdb.TYPE_CODE_PTR:
        return int(value) & args.UINT64_MAX, _target_size(value)
    if t.code in (gdb.TYPE_CODE_INT, gdb.TYPE_CODE_ENUM, gdb.TYPE_CODE_CHAR) and value.address is None:
        return int(value) & args.UINT64_MAX, None
    if value.address is None:
        raise Error("memscope: %s is not an address, a pointer nor an object in the program's memory.\n%s"
                    % (expr, USAGE))
    return int(value.address), t.sizeof if t.sizeof > 0 else None


def parse_size(text):
    return args.number(text, "SIZE", USAGE, 1, args.WATCH_SIZE_MAX)


def _evaluates(text):
    try:
        args.evaluate(text, lambda v: None, USAGE)
        return True
    except gdb.GdbError:
        return False


def split_args(arg):
    """EXPR [SIZE]: SIZE is the last word (`16', `-8', `$n',
    `sizeof(float)*4'), or a last parenthesised group, when what comes
    before it is an expression of its own (so `p + 16' stays one EXPR,
    and `buf -8' is buf with a SIZE of -8, refused)."""
    arg = arg.strip()
    cuts = []
    if arg.endswith(")"):
        depth = 0
        for i in range(len(arg) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(arg[i], 0)
            if depth == 0:
                if i > 0 and arg[i - 1].isspace():
                    cuts.append(i)
                break
    last = arg.rfind(" ")
    last = max(last, arg.rfind("\t"))
    if last > 0:
        cuts.append(last + 1)
    for cut in cuts:
        rest, size = arg[:cut].strip(), arg[cut:].strip()
        if rest and size and _evaluates(rest):
            if _evaluates(size) or cut == cuts[-1]:
                # A last word that does not evaluate after an EXPR that
                # does is a bad SIZE: parse_size says why.
                return rest, size
    # Neither splits nor the whole evaluates: when the last word is a
    # SIZE, the error to give is EXPR's (`m->gamma 64' with m optimized
    # out: say that m->gamma cannot be evaluated, not that `64' is a
    # syntax error).
    if cuts and not _evaluates(arg):
        rest, size = arg[:cuts[-1]].strip(), arg[cuts[-1]:].strip()
        if rest and size and _evaluates(size):
            return rest, size
    return arg, None


def span_warnings(r, addr, size, block):
    """What a watch of [addr, addr + size) covers besides its block: the
    bytes past the block's end and the live block its last byte is in, or
    that it is not in a heap block at all."""
    end = addr + size
    if block is None:
        last = r.block_at(end - 1)
        return ["0x%x is not in a live heap block the recorder knows of (a global, the stack, or memory allocated "
                "before the recorder started)%s." % (
                    addr, "; the watch ends in block 0x%x, %s" % (last.addr, fmt.exact_bytes(last.size))
                    if last is not None else "")]
    block_end = block.addr + block.size
    if end <= block_end:
        return []
    last = r.block_at(end - 1)
    into = ("it ends in another block, 0x%x (%s)" % (last.addr, fmt.exact_bytes(last.size))
            if last is not None and last.addr != block.addr else "it ends outside any live block")
    return ["the watch runs %s past the end of its block (0x%x..0x%x) over other memory: %s. Changes there "
            "count as changes of the watch, and freeing any block in it ends the watch." % (
                fmt.exact_bytes(end - block_end), block.addr, block_end, into)]


def readable(h, addr, size, chunk=1 << 20):
    """Checks that the program can read size bytes at addr, a chunk at a
    time (gdb never holds more than one chunk)."""
    at = addr
    while at < addr + size:
        n = min(chunk, addr + size - at)
        try:
            h.inferior.read_memory(at, n)
        except gdb.MemoryError:
            raise Error("memscope: cannot read %s at 0x%x: 0x%x is not the program's memory."
                        % (fmt.exact_bytes(size), addr, at))
        at += n


class WatchCommand(Command):
    """Watch a memory block: stop when an operator launch changed it.

Usage: memscope watch [EXPR [SIZE]]

EXPR is evaluated in the current frame. A pointer watches what it points
to; an integer is an address; any other expression (a variable, an array,
a struct member) is watched where it lies. SIZE defaults to the rest of
the heap block that contains the address (from the recorder's log), or
else to the size of EXPR's type. SIZE is an expression too (`16',
`sizeof(float)*4', `$n'): the last word, or a last parenthesised group,
when what comes before it is an expression of its own; from 1 byte to
256 MiB. gdb never calls a function in the program to evaluate them: a
call or a string literal is refused.

The recorder compares the block with its last copy at every operator
launch boundary (msmemscope_op_begin and msmemscope_op_end) inside the
program; gdb stops only when it changed, and shows the operator launch
that changed it (name, launch index, step, thread), the changed bytes
old -> new, and where the block was allocated. Changes count from the
next boundary after the watch is set. On Linux 6.7 and later, a watch of
32 KiB or more in the program's private memory is compared only in the
pages the kernel marks written since the last boundary.

A watch that runs past its heap block, or lies in none, is set with a
warning. When the program frees memory in a watch, gdb stops there,
names the block being freed and removes the watch.

Two watches a boundary changed give one stop that shows both; a second
watch of the same bytes is refused. `set memscope diff-lines N' sets how
many lines of changed bytes a stop prints (default 16, 0: all).

With no argument, lists the watches: how many changes each saw, and how
it is checked (Checked: `pages', the pages the kernel marks written, or
`pages N%' for part of it; `bytes', every byte at every boundary; `-',
not yet armed: until the next boundary). At most 8 watches at a time;
`memscope unwatch [N]` removes them."""

    def __init__(self, session):
        super().__init__("memscope watch", gdb.COMMAND_DATA, gdb.COMPLETE_EXPRESSION)
        self.s = session

    def run(self, arg, from_tty):
        if not arg.strip():
            self.list()
            return
        expr, size_text = split_args(arg)
        h = self.s.handle()
        addr, type_size = address_of(expr)
        size = parse_size(size_text) if size_text else None
        block_lines, block, warnings = [], None, []
        with self.s.now() as (log, r):
            block = r.block_at(addr)
            if block is not None:
                if size is None:
                    size = block.addr + block.size - addr
                where = "" if block.addr == addr else " (at +%d)" % (addr - block.addr)
                block_lines.append("  in %s block 0x%x%s, %s, allocated %s:" % (
                    fmt.block_kind(block), block.addr, where, fmt.exact_bytes(block.size),
                    fmt.block_origin(log, block)))
                block_lines += fmt.stack_lines(log, block.stack, self.s.depth)
            else:
                block_lines.append("  not in a live heap block the recorder knows of")
            if size is None:
                size = type_size
            if size and size <= args.WATCH_SIZE_MAX:
                warnings = span_warnings(r, addr, size, block)
        if size is None:
            size = type_size
        if not size:
            raise Error("memscope: cannot tell how many bytes to watch at 0x%x: no live heap block holds it and %s "
                        "has no sized type; give SIZE.\n%s" % (addr, expr, USAGE))
        if size > args.WATCH_SIZE_MAX:
            raise Error("memscope: %s at 0x%x is more than a watch may cover (%s); give a SIZE.\n%s"
                        % (fmt.exact_bytes(size), addr, fmt.exact_bytes(args.WATCH_SIZE_MAX), USAGE))
        if addr + size - 1 > args.UINT64_MAX:
            raise Error("memscope: %s at 0x%x runs past the end of the address space.\n%s"
                        % (fmt.exact_bytes(size), addr, USAGE))
        readable(h, addr, size)
        same = next((n for n, o in self.s.watches.items() if o.addr == addr and o.size == size), None)
        if same is not None:
            raise Error("memscope: watch %d (%s) already watches these %s at 0x%x."
                        % (same + 1, self.s.watches[same].expr, fmt.exact_bytes(size), addr))
        d = h.read()
        slot = next((i for i in range(gdbif.WATCH_MAX) if d.watch[i].size == 0 and i not in self.s.watches), None)
        if slot is None:
            raise Error("memscope: all %d watches are in use; remove one with `memscope unwatch N'." % gdbif.WATCH_MAX)
        h.arm_watch(slot, addr, size, d.watch[slot].generation + 1)
        h.update_armed()
        self.s.watches[slot] = Watch(slot, expr, addr, size, block_lines, block.addr if block else None,
                                     (block.addr, block.size, block.alloc_id, block.op_launch,
                                      replaylib.text(block.op)) if block else None)
        gdb.write("memscope: watch %d: %s, %s at 0x%x\n" % (slot + 1, expr, fmt.exact_bytes(size), addr))
        for line in block_lines:
            gdb.write(line + "\n")
        for line in warnings:
            gdb.write("memscope: warning: %s\n" % line)

    def list(self):
        if not self.s.watches:
            gdb.write("memscope: no watches. `memscope watch EXPR [SIZE]' sets one.\n")
            return
        changes, checked = {}, {}
        try:
            d = gdbif.Handle().read()
            # A change shown with another watch's, whose own stop is to come.
            changes = {i: d.watch[i].changes + sum(1 for m in self.s.merged if m[0] == i) for i in self.s.watches}
            checked = {i: _checked(d.watch[i]) for i in self.s.watches}
        except gdbif.NotLoaded:
            pass
        gdb.write("%-4s %-18s %10s %8s  %-9s  %s\n" % ("Num", "Address", "Size", "Changes", "Checked", "Expression"))
        for slot in sorted(self.s.watches):
            w = self.s.watches[slot]
            gdb.write("%-4d %-18s %10d %8s  %-9s  %s\n" % (slot + 1, "0x%x" % w.addr, w.size, changes.get(slot, "?"),
                                                          checked.get(slot, "?"), w.expr))
        if any(c.startswith("pages") for c in checked.values()):
            gdb.write("(pages: the kernel marks the pages written, and only those are compared at a boundary)\n")


def _checked(w):
    """How the recorder checks a watch: "bytes" (every byte at every
    boundary), "pages" (the kernel tracks its pages) or "pages 60%" (those
    of part of it), "-" before its first boundary."""
    if w.seen != w.generation:
        return "-"
    if not w.tracked:
        return "bytes"
    if w.tracked >= w.size:
        return "pages"
    return "pages %d%%" % max(1, min(99, w.tracked * 100 // w.size))


class UnwatchCommand(Command):
    """Remove memscope watches.

Usage: memscope unwatch [N]

Removes watch N (as `memscope watch' lists them), or all watches."""

    def __init__(self, session):
        super().__init__("memscope unwatch", gdb.COMMAND_DATA)
        self.s = session

    def run(self, arg, from_tty):
        words = arg.split()
        if len(words) > 1 or (words and not words[0].isdigit()):
            raise Error("usage: memscope unwatch [N]")
        if words:
            slot = int(words[0]) - 1
            if slot not in self.s.watches:
                raise Error("memscope: no watch %s; `memscope watch' lists them." % words[0])
            slots = [slot]
        else:
            slots = sorted(self.s.watches)
        if not slots:
            gdb.write("memscope: no watches to remove.\n")
            return
        if self.s.running():
            h = self.s.handle()
            d = h.read()
            for slot in slots:
                h.disarm_watch(slot, d.watch[slot].generation + 1)
            h.update_armed()
        for slot in slots:
            del self.s.watches[slot]
        gdb.write("memscope: removed watch%s %s.\n" % ("es" if len(slots) > 1 else "",
                                                       ", ".join(str(s + 1) for s in slots)))

    def complete(self, text, word):
        return [str(s + 1) for s in sorted(self.s.watches) if str(s + 1).startswith(word or "")]


def report(session, h, d, who):
    """Prints what the hooks found: which launch changed which watch, the
    changed bytes old -> new, and the block."""
    slot = d.hit_watch
    w = d.watch[slot] if slot < gdbif.WATCH_MAX else None
    mine = session.watches.get(slot)
    if w is None or not w.size:
        gdb.write("memscope: watch %d changed (its slot is no longer armed)\n" % (slot + 1))
        return
    name = fmt.name(d.op_name)
    if d.op_launch:
        what = "in operator %s (launch %d, %s)" % (name, d.op_launch, fmt.step_name(d.step))
    elif name:
        what = "outside any operator launch, after %s ended (%s)" % (name, fmt.step_name(d.step))
    else:
        what = "before the first operator launch (%s)" % fmt.step_name(d.step)
    label = mine.expr + ", " if mine else ""
    gdb.write("memscope: watch %d (%s%s at 0x%x) changed %s, %s\n"
              % (slot + 1, label, fmt.exact_bytes(w.size), w.addr, what, who))
    size = min(w.size, w.capacity)
    changes = []  # (watch slot, address, old bytes, new bytes), for memscope pinpoint
    if not w.previous or not w.snapshot or not size:
        gdb.write("  (the recorder kept no copy of the bytes)\n")
    else:
        old, new = h.read_bytes(w.previous, size), h.read_bytes(w.snapshot, size)
        _write_diff(session, w, old, new)
        changes.append((slot, w.addr, old, new))
    if mine:
        for line in mine.block_lines:
            gdb.write(line + "\n")
    # The recorder stops once per changed block, lowest slot first: the
    # other watches this boundary changed are reported here, from their
    # last copy and the bytes now, and their own stops pass silently.
    for j in sorted(session.watches):
        wj = d.watch[j]
        if j <= slot or not wj.size or not wj.snapshot or wj.seen != wj.generation:
            continue
        size = min(wj.size, wj.capacity)
        old, new = h.read_bytes(wj.snapshot, size), h.read_bytes(wj.addr, size)
        if old == new:
            continue
        other = session.watches[j]
        gdb.write("memscope: watch %d (%s, %s at 0x%x) changed too, at the same boundary\n"
                  % (j + 1, other.expr, fmt.exact_bytes(wj.size), wj.addr))
        _write_diff(session, wj, old, new)
        changes.append((j, wj.addr, old, new))
        for line in other.block_lines:
            gdb.write(line + "\n")
        session.merged.add((j, d.op_launch, d.tid))
    from . import pinpoint
    pinpoint.remember(session, d, changes)


def _write_diff(session, w, old, new):
    changed, lines = fmt.diff_lines(old, new, w.addr, max_lines=session.diff_lines)
    gdb.write("  %d of %s changed (old -> new):\n" % (changed, fmt.plural(w.size, "byte")))
    for line in lines:
        gdb.write(line + "\n")


def freed_block(session, tid):
    """The block the thread tid is freeing now (its last release in the
    log: the recorder writes it before it stops), or None."""
    try:
        with replaylib.Log(session.log_path()) as log:
            ev = log.last_release(tid)
            if ev is None:
                return None
            with replaylib.Replay(log, forward_only=False) as r:
                if r.seek(ev[0]):
                    return None
                return r.block_at(ev[1])
    except (gdb.GdbError, replaylib.ReplayError):
        return None


def closing_call():
    """The call that stopped the thread when it makes memory inaccessible
    instead of freeing it (the recorder's mprotect or mmap, which stop
    before the call and before their record: the log's last release is
    another's): "mprotect" or "mmap", else None."""
    try:
        f = gdb.newest_frame()
        for _ in range(8):
            if f is None:
                break
            name = f.name()
            if name in ("mprotect", "mmap", "mmap64"):
                return name[:4] if name != "mprotect" else name
            f = f.older()
    except gdb.error:
        pass
    return None


def report_freed(session, h, d, who):
    """The program is freeing (or unmapping, or reallocating) the block of
    a watch: say so where it happens, and remove the watch, which the
    hooks already stopped comparing."""
    slot = d.hit_watch
    if slot >= gdbif.WATCH_MAX:
        return
    w = d.watch[slot]
    mine = session.watches.pop(slot, None)
    label = mine.expr + ", " if mine else ""
    name = fmt.name(d.op_name)
    where = ("in operator %s (launch %d, %s)" % (name, d.op_launch, fmt.step_name(d.step))) if d.op_launch \
        else "outside any operator launch (%s)" % fmt.step_name(d.step)
    closing = closing_call()
    freed = None if closing else freed_block(session, d.tid)
    own = mine.block_addr if mine else None
    if closing:
        what = "memory in it is being made inaccessible (%s with PROT_NONE)" % closing
    elif freed is None:
        what = "memory in it is being released"
    elif own is not None and freed.addr == own:
        what = "its block is being freed"
    else:
        block = "%s block 0x%x (%s)" % (fmt.block_kind(freed), freed.addr, fmt.exact_bytes(freed.size))
        if freed.addr <= w.addr and w.addr + w.size <= freed.addr + freed.size:
            what = "the %s that holds it is being freed" % block
        else:
            inside = freed.addr >= w.addr and freed.addr + freed.size <= w.addr + w.size
            what = "%s, %s the watch, is being freed" % (block, "in" if inside else "overlapping")
            if own is not None:
                what += " (not the watched block 0x%x: the watch spans past it)" % own
    gdb.write("memscope: watch %d (%s%s at 0x%x) ends: %s %s, %s; "
              "the watch is removed.\n" % (slot + 1, label, fmt.exact_bytes(w.size), w.addr, what, where, who))
    h.disarm_watch(slot, w.generation + 1)
    h.update_armed()
