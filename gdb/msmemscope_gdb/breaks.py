# SPDX-License-Identifier: MIT
"""breaks: `memscope break op NAME [if COND]' and `memscope break step N
[if COND]' as real gdb breakpoints, and what arms them in the program.

Each is a gdb breakpoint on msmemscope_gdb_stopped() (the function the
recorder calls only when gdb must stop), made as `break ... if COND' is,
whose condition says which stop it is for: `$_memscope_op_begins("rope")' or `$_memscope_step_begins(3)',
convenience functions that read the reason from the recorder's
descriptor. So gdb lists them (`info breakpoints'), numbers, deletes,
disables and keeps them across `run', and `condition', `ignore' and
`commands' work on them as on any breakpoint. The recorder is told what
to stop at: the names of the enabled operator breakpoints (break_op, a
list) and the next step one of them (or `at step N') waits for
(break_step); it calls the function only then, so gdb does not stop at
every launch."""

import os
import re

import gdb

from . import args, fmt, gdbif, replaylib
from .session import Command, Error

LOCATION = "msmemscope_gdb_stopped"
USAGE = ("usage: memscope break op NAME [if COND] | memscope break step N [if COND] | "
         "memscope break delete | memscope break")


def _descriptor():
    try:
        return gdbif.Handle(check=False).read()
    except (gdbif.NotLoaded, gdb.error):
        return None


class OpBegins(gdb.Function):
    """$_memscope_op_begins(NAME): 1 when gdb stands at the recorder's stop
    for the start of a launch of operator NAME, else 0."""

    def __init__(self):
        super().__init__("_memscope_op_begins")

    def invoke(self, name):
        d = _descriptor()
        return int(d is not None and d.reason == gdbif.REASON_OP
                   and d.op_name.decode("utf-8", "replace") == name.string("utf-8", "replace"))


class StepBegins(gdb.Function):
    """$_memscope_step_begins(N): 1 when gdb stands at the recorder's stop
    for the start of step N, else 0."""

    def __init__(self):
        super().__init__("_memscope_step_begins")

    def invoke(self, n):
        d = _descriptor()
        return int(d is not None and d.reason == gdbif.REASON_STEP and d.step == int(n))


def setup_functions():
    OpBegins()
    StepBegins()
    # $_memscope_step() and $_memscope_launch(), which the conditions
    # below use, are variables.Now: the recorder's stop's, else the log's.


_WORDS = {"step": "$_memscope_step()", "launch": "$_memscope_launch()"}
_STRING = re.compile(r'''("(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')''')
_WORD = re.compile(r"(?<![\w$.>])\b(step|launch)\b(?!\s*\()")


def translate_cond(cond):
    """COND with the words step and launch (outside string literals) as
    the convenience functions that give them at the stop."""
    parts = _STRING.split(cond)
    return "".join(p if i % 2 else _WORD.sub(lambda m: _WORDS[m.group(1)], p) for i, p in enumerate(parts))


def unquote(name):
    """NAME as typed, less one pair of surrounding quotes ("rope" is rope),
    with \\" and \\\\ inside them read as " and \\ (\\xHH kept for
    fmt.unname())."""
    if len(name) >= 2 and name[0] == name[-1] and name[0] in "\"'":
        return re.sub(r"\\(x[0-9a-fA-F]{2}|.)", lambda m: "\\" + m.group(1) if len(m.group(1)) > 1 else m.group(1),
                      name[1:-1])
    return name


def op_name(typed):
    """The operator name (str, as the recorder compares it) that NAME as
    typed means: unquoted, and a control character written \\xHH as
    messages and the log's names show it (fmt.name()) made that
    character, so that a name copied from a message or completed from
    the log matches."""
    return fmt.unname(unquote(typed))


def _literal(name):
    """name as a gdb string literal's inside, in ASCII whatever gdb's
    charsets: \\ and " escaped, each byte of a control character or of
    a character beyond ASCII in octal (three digits: a hex escape would
    take the digits after it too). $_memscope_op_begins reads it back as
    UTF-8."""
    out = []
    for b in name.encode("utf-8"):
        ch = chr(b)
        if ch in "\\\"":
            out.append("\\" + ch)
        elif b < 0x20 or b >= 0x7f:
            out.append("\\%03o" % b)
        else:
            out.append(ch)
    return "".join(out)


def split_cond(text):
    """'WHAT if COND' -> (WHAT, COND or None); a quoted WHAT may hold ` if '."""
    text = text.strip()
    m = re.match(r'''^("(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')(.*)$''', text)
    head, tail = (m.group(1), m.group(2)) if m else ("", text)
    m2 = re.search(r"(^|\s)if(\s|$)", tail)
    if not m2:
        return text, None
    what = (head + tail[:m2.start()]).strip()
    cond = tail[m2.end():].strip()
    if not cond:
        raise Error("memscope: `if' needs a condition.\n" + USAGE)
    return what, cond


class Break:
    """What a `memscope break' breakpoint stops at: kind "op" (value: the
    operator name) or "step" (value: the step number), and the condition
    as the user typed it."""

    def __init__(self, kind, value, user_cond):
        self.kind, self.value, self.user_cond = kind, value, user_cond

    def condition(self):
        test = ('$_memscope_op_begins("%s")' % _literal(self.value)
                if self.kind == "op" else "$_memscope_step_begins(%d)" % self.value)
        return test if self.user_cond is None else "%s && (%s)" % (test, translate_cond(self.user_cond))

    def shown(self):
        """The operator's name as messages show it (fmt.name())."""
        return fmt.name(self.value)

    def describe(self):
        what = ("each launch of operator %s" % self.shown() if self.kind == "op"
                else "the start of step %d" % self.value)
        return what + (" if " + self.user_cond if self.user_cond else "")


def create(session, brk):
    """A gdb breakpoint on the recorder's stop function for brk, made as
    `break LOCATION if COND' is: pending until the recorder is loaded
    (its condition then parsed there), kept across runs. Returns it."""
    was = gdb.parameter("breakpoint pending")
    gdb.execute("set breakpoint pending on", to_string=True)
    try:
        before = {b.number for b in gdb.breakpoints()}
        gdb.execute("break %s if %s" % (LOCATION, brk.condition()), to_string=True)
    finally:
        gdb.execute("set breakpoint pending %s" % {True: "on", False: "off"}.get(was, "auto"), to_string=True)
    bp = next(b for b in gdb.breakpoints() if b.number not in before)
    bp.silent = True
    session.breaks[bp.number] = brk
    return bp


# What the recorder's break_op field (gdbif.NAME_MAX bytes) holds: names
# of up to NAME_BYTES bytes, and up to NAME_BYTES bytes of them together,
# each counted with one byte for its end (the list's own end takes the
# last byte of the field).
NAME_BYTES = gdbif.NAME_MAX - 1
LIMIT_WORDS = ("the recorder takes up to %d bytes of operator names together, each name counted with one byte "
               "more for its end" % NAME_BYTES)


def _cost(name):
    """The bytes name takes of the recorder's list: its own and its end."""
    return len(name.encode("utf-8")) + 1


def _numbers(nums):
    """'breakpoint 3', 'breakpoints 2 and 3', 'breakpoints 1, 2 and 3'."""
    words = [str(n) for n in nums]
    return "breakpoint%s %s" % ("" if len(words) == 1 else "s",
                                words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1])


def fit(session):
    """(names, left, used): the operator names to arm, those of the enabled
    operator breakpoints in number order that fit (memscope pinpoint's
    first), the [(gdb breakpoint, Break)] whose names did not fit, and the
    bytes the names take."""
    names, used, left = [], 0, []
    if session.pinpoint is not None and not session.pinpoint.reached:
        names.append(session.pinpoint.target.op)  # memscope pinpoint waits for its launch
        used = _cost(names[0])
    for b, k in sorted(ours(session), key=lambda bk: bk[0].number):
        if not b.enabled or k.kind != "op" or k.value in names:
            continue
        if used + _cost(k.value) > NAME_BYTES:
            left.append((b, k))
            continue
        names.append(k.value)
        used += _cost(k.value)
    return names, left, used


def warn_unarmed(session, left, used):
    """Says once, for each set of breakpoints left out, that they are not
    armed and why."""
    nums = frozenset(b.number for b, _ in left)
    if nums == session.unarmed_said:
        return
    session.unarmed_said = nums
    if not nums:
        return
    gdb.write("memscope: warning: %s (operator%s %s) %s not armed, so %s will not stop: %s, and the enabled "
              "operator breakpoints before %s take %d of them. Delete or disable one to make room.\n"
              % (_numbers(sorted(nums)), "" if len(left) == 1 else "s", ", ".join(k.shown() for _, k in left),
                 "is" if len(left) == 1 else "are", "it" if len(left) == 1 else "they", LIMIT_WORDS,
                 "it" if len(left) == 1 else "them", used))


def ours(session):
    """[(gdb breakpoint, Break)] of the memscope breakpoints gdb holds."""
    return [(b, session.breaks[b.number]) for b in gdb.breakpoints()
            if b.number in session.breaks and b.is_valid()]


def arm(session, handle=None, after_step=None):
    """Writes into the running program what the enabled breakpoints (and
    `at step N') wait for: the operator names, and the first wanted step
    after the current one (after_step, or the step the log is in). Does
    nothing when the program does not run with the recorder. When the
    names of the enabled operator breakpoints do not all fit in the
    recorder's list, arms those that do, in breakpoint number order, and
    says once which are left out."""
    try:
        h = handle or gdbif.Handle(check=False)
    except gdbif.NotLoaded:
        return
    bps = [k for b, k in ours(session) if b.enabled]
    session.armed_key = frozenset((k.kind, k.value) for k in bps)
    names, left, used = fit(session)
    h.write_names("break_op", names)
    warn_unarmed(session, left, used)
    wanted = {k.value for k in bps if k.kind == "step"}
    if session.at_target:
        wanted.add(session.at_target)
    if after_step is None:
        after_step = session.current_step() if wanted else 0
    ahead = [n for n in wanted if n > after_step]
    h.write_u64("break_step", min(ahead) if ahead else 0)
    if h.read_u32("version") == gdbif.VERSION:
        h.update_armed()
    else:  # the recorder's constructor has not run: it arms nothing itself
        d = h.read()
        h.write_u32("armed", 1 if names or ahead or any(d.watch[i].size for i in range(gdbif.WATCH_MAX)) else 0)


class BreakCommand(Command):
    """Stop when an operator launch or a step begins: real gdb breakpoints.

Usage: memscope break op NAME [if COND]
       memscope break step N [if COND]
       memscope break delete
       memscope break

`op NAME' stops the program each time an operator named NAME begins
(msmemscope_op_begin); `step N' when step N begins. NAME may be quoted
("rope"); a control character in it is typed \\xHH, as messages show
it. COND is a gdb expression in which `step' and `launch' are the step
and the launch index of the stop: `memscope break op rope if step ==
3'. Each is a gdb breakpoint: `info breakpoints' lists it (on
msmemscope_gdb_stopped, with the condition that says what it stops at),
and `delete', `disable', `condition', `ignore' and `commands' work on it.
They are kept across `run', like gdb's own. `delete' removes them all;
with no argument, lists them."""

    def __init__(self, session):
        super().__init__("memscope break", gdb.COMMAND_BREAKPOINTS)
        self.s = session
        self._names = (None, [])

    def complete(self, text, word):
        words = text.split()
        nwords = len(words) - (0 if text.endswith(" ") or not text else 1)
        if nwords == 0:
            return [w for w in ("op", "step", "delete") if w.startswith(word or "")]
        if nwords == 1 and words[0] == "op":
            return [n for n in self.operator_names() or [] if n.startswith(word or "")]
        return []

    def operator_names(self):
        """The operator names the program's log (or the last run's) holds,
        cached by its size; None when there is no log to ask."""
        try:
            path = self.s.log_path() if self.s.running() else self.s.finished()
            if path is None:
                return None
            key = (path, os.path.getsize(path))
            if self._names[0] != key:
                with replaylib.Log(path) as log:
                    self._names = (key, log.operator_names())
            return self._names[1]
        except (gdb.GdbError, gdb.error, replaylib.ReplayError, OSError, gdbif.NotLoaded):
            return None

    def run(self, arg, from_tty):
        words = arg.split(None, 1)
        if not words:
            return self.list()
        if words[0] == "delete" and len(words) == 1:
            bps = ours(self.s)
            for b, _ in bps:
                b.delete()
            self.s.at_target = 0
            if self.s.running():
                arm(self.s)
            gdb.write("memscope: deleted %s.\n" % (
                "%d operator and step breakpoint%s" % (len(bps), "" if len(bps) == 1 else "s") if bps
                else "no breakpoints (none was set)"))
            return
        if len(words) != 2 or words[0] not in ("op", "step"):
            raise Error(USAGE)
        what, cond = split_cond(words[1])
        if words[0] == "op":
            name = op_name(what)
            if not name:
                raise Error("memscope: no breakpoint made: the operator name is empty.\n" + USAGE)
            if "\0" in name:
                raise Error("memscope: no breakpoint made: an operator's name cannot hold \\x00: "
                            "msmemscope_op_begin() takes a C string.")
            size = len(name.encode("utf-8"))
            if size > NAME_BYTES:
                raise Error("memscope: no breakpoint made: an operator breakpoint's name has at most %d bytes (the "
                            "recorder compares names on their first %d), and %s has %d."
                            % (NAME_BYTES, NAME_BYTES, fmt.name(name), size))
            names, _, used = fit(self.s)
            if name not in names and used + _cost(name) > NAME_BYTES:
                raise Error("memscope: no breakpoint made: %s, and the names armed now and %s would take %d. "
                            "Delete or disable an operator breakpoint first."
                            % (LIMIT_WORDS, fmt.name(name), used + _cost(name)))
            value = name
        else:
            value = args.step_number(what, USAGE)
        if cond is not None:
            self.check_cond(cond)
        seen = self.operator_names() if words[0] == "op" else None
        brk = Break(words[0], value, cond)
        bp = create(self.s, brk)
        gdb.write("memscope: breakpoint %d: stops at %s%s.\n" % (
            bp.number, brk.describe(), " (pending until the program runs with the recorder)" if bp.pending else ""))
        if seen is not None and brk.shown() not in seen:
            gdb.write("memscope: warning: no operator named %s has begun so far%s; the breakpoint waits for "
                      "one.\n" % (brk.shown(), "" if self.s.running() else " in the last run"))
        if self.s.running():
            arm(self.s)

    @staticmethod
    def check_cond(cond):
        """Refuses a condition gdb cannot parse (step and launch as 0)."""
        with args.no_inferior_calls():
            try:
                gdb.parse_and_eval(translate_cond(cond)).fetch_lazy()
            except gdb.error as e:
                raise Error("memscope: bad condition `%s': %s\n%s" % (cond, e, USAGE))

    def list(self):
        bps = ours(self.s)
        if not bps and not self.s.at_target:
            gdb.write("memscope: no operator or step breakpoints. `memscope break op NAME' or "
                      "`memscope break step N' sets one.\n")
            return
        if bps:
            gdb.write("%-4s %-4s %5s  %s\n" % ("Num", "Enb", "Hits", "Stops at"))
        for b, k in bps:
            gdb.write("%-4d %-4s %5d  %s\n" % (b.number, "y" if b.enabled else "n", b.hit_count, k.describe()))
        if self.s.at_target:
            gdb.write("memscope: `at step %d' waits for step %d to begin.\n" % (self.s.at_target, self.s.at_target))
