# SPDX-License-Identifier: MIT
"""watch: `memscope watch EXPR [SIZE]`, `memscope unwatch [N]`, and the
report printed when a watched block changed.

gdb only arms a slot of the descriptor (address, size, a new generation);
the hooks snapshot the block at the next operator boundary, compare it at
every boundary after that, and call msmemscope_gdb_stopped() only when it
changed, with the old bytes kept beside the new ones."""

import gdb

from . import fmt, gdbif
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
    variable is an address; any other object is watched where it lies."""
    try:
        value = gdb.parse_and_eval(expr)
    except gdb.error as e:
        raise Error("memscope: cannot evaluate %s: %s" % (expr, e))
    try:
        return _address_of(expr, value)
    except gdb.error as e:
        raise Error("memscope: %s: %s" % (expr, e))


def _address_of(expr, value):
    t = value.type.strip_typedefs()
    if t.code == gdb.TYPE_CODE_FUNC:
        raise Error("memscope: %s is a function; watch data: a pointer, an address or an object.\n%s"
                    % (expr, USAGE))
    if t.code == gdb.TYPE_CODE_PTR:
        return int(value), _target_size(value)
    if t.code == gdb.TYPE_CODE_ARRAY:
        return int(value.address), t.sizeof
    if t.code in (gdb.TYPE_CODE_INT, gdb.TYPE_CODE_ENUM, gdb.TYPE_CODE_CHAR) and value.address is None:
        return int(value), None
    if value.address is None:
        raise Error("memscope: %s is not an address, a pointer nor an object in memory.\n%s" % (expr, USAGE))
    return int(value.address), t.sizeof if t.sizeof > 0 else None


def parse_size(text):
    try:
        size = int(gdb.parse_and_eval(text))
    except (gdb.error, ValueError) as e:
        raise Error("memscope: SIZE %s is not a number: %s\n%s" % (text, e, USAGE))
    if size <= 0:
        raise Error("memscope: SIZE must be at least 1 byte, not %s.\n%s" % (text, USAGE))
    return size


def split_args(arg):
    """EXPR [SIZE]: SIZE is a last word that is a number, when what comes
    before it is an expression of its own (so `p + 16' stays one EXPR)."""
    words = arg.split()
    if len(words) > 1:
        last = words[-1]
        rest = arg.rstrip()[:-len(last)].strip()
        if last.isdigit() or (last.lower().startswith("0x") and len(last) > 2):
            try:
                gdb.parse_and_eval(rest)
                return rest, last
            except gdb.error:
                pass
    return arg.strip(), None


class WatchCommand(Command):
    """Watch a memory block: stop when an operator launch changed it.

Usage: memscope watch [EXPR [SIZE]]

EXPR is evaluated in the current frame. A pointer watches what it points
to; an integer is an address; any other expression (a variable, an array,
a struct member) is watched where it lies. SIZE defaults to the rest of
the heap block that contains the address (from the recorder's log), or
else to the size of EXPR's type.

The recorder compares the block with its last copy at every operator
launch boundary (msmemscope_op_begin and msmemscope_op_end) inside the
program; gdb stops only when it changed, and shows the operator launch
that changed it (name, launch index, step, thread), the changed bytes
old -> new, and where the block was allocated. Changes count from the
next boundary after the watch is set.

With no argument, lists the watches. At most 8 watches at a time;
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
        block_lines, block = [], None
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
        if not size:
            raise Error("memscope: cannot tell how many bytes to watch at 0x%x: no live heap block holds it and %s "
                        "has no sized type; give SIZE.\n%s" % (addr, expr, USAGE))
        try:
            h.inferior.read_memory(addr, size)
        except gdb.MemoryError:
            raise Error("memscope: cannot read %d bytes at 0x%x: not the program's memory." % (size, addr))
        d = h.read()
        slot = next((i for i in range(gdbif.WATCH_MAX) if d.watch[i].size == 0 and i not in self.s.watches), None)
        if slot is None:
            raise Error("memscope: all %d watches are in use; remove one with `memscope unwatch N'." % gdbif.WATCH_MAX)
        h.arm_watch(slot, addr, size, d.watch[slot].generation + 1)
        h.update_armed()
        self.s.watches[slot] = Watch(slot, expr, addr, size, block_lines)
        gdb.write("memscope: watch %d: %s, %s at 0x%x\n" % (slot + 1, expr, fmt.exact_bytes(size), addr))
        for line in block_lines:
            gdb.write(line + "\n")

    def list(self):
        if not self.s.watches:
            gdb.write("memscope: no watches. `memscope watch EXPR [SIZE]' sets one.\n")
            return
        changes = {}
        try:
            d = gdbif.Handle().read()
            changes = {i: d.watch[i].changes for i in self.s.watches}
        except gdbif.NotLoaded:
            pass
        gdb.write("%-4s %-18s %10s %8s  %s\n" % ("Num", "Address", "Size", "Changes", "Expression"))
        for slot in sorted(self.s.watches):
            w = self.s.watches[slot]
            gdb.write("%-4d %-18s %10d %8s  %s\n" % (slot + 1, "0x%x" % w.addr, w.size, changes.get(slot, "?"), w.expr))


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
    name = d.op_name.decode("utf-8", "replace")
    if d.op_launch:
        what = "in operator %s (launch %d, step %d)" % (name, d.op_launch, d.step)
    elif name:
        what = "outside any operator launch, after %s ended (step %d)" % (name, d.step)
    else:
        what = "before the first operator launch (step %d)" % d.step
    label = mine.expr + ", " if mine else ""
    gdb.write("memscope: watch %d (%s%s at 0x%x) changed %s, %s\n"
              % (slot + 1, label, fmt.exact_bytes(w.size), w.addr, what, who))
    size = min(w.size, w.capacity)
    if not w.previous or not w.snapshot or not size:
        gdb.write("  (the recorder kept no copy of the bytes)\n")
    else:
        old = h.read_bytes(w.previous, size)
        new = h.read_bytes(w.snapshot, size)
        changed, lines = fmt.diff_lines(old, new, w.addr)
        gdb.write("  %d of %s changed (old -> new):\n" % (changed, fmt.plural(w.size, "byte")))
        for line in lines:
            gdb.write(line + "\n")
    if mine:
        for line in mine.block_lines:
            gdb.write(line + "\n")


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
    name = d.op_name.decode("utf-8", "replace")
    where = ("in operator %s (launch %d, step %d)" % (name, d.op_launch, d.step)) if d.op_launch \
        else "outside any operator launch (step %d)" % d.step
    gdb.write("memscope: watch %d (%s%s at 0x%x) ends: its block is being freed %s, %s; "
              "the watch is removed.\n" % (slot + 1, label, fmt.exact_bytes(w.size), w.addr, where, who))
    h.disarm_watch(slot, w.generation + 1)
    h.update_armed()
