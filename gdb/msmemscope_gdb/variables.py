# SPDX-License-Identifier: MIT
"""variables: where the program stands, for gdb expressions, and the
one-line leak report printed when the program exits.

$memscope_step, $memscope_launch, $memscope_op and $memscope_events are
convenience variables, set from the program's log at each stop and from
the finished log at exit, and at gdb's prompt for the selected inferior's
process where gdb debugs several: for printf, display and breakpoint
commands.
gdb evaluates a breakpoint's condition at the hit, before any stop, when
the variables still hold the last stop's values; so a condition that
names them is rewritten to the convenience functions $_memscope_step(),
$_memscope_launch(), $_memscope_op() and $_memscope_events(), which read
the log (or, at a stop of the recorder, its descriptor) at that moment.

All of it reads the log with the same library calls as `memscope info'
and `memscope leaks full', so it says what those commands would, and
none of it ever raises: it runs in gdb's event handlers and in
expressions, where an exception would be a traceback in the middle of
the user's session. A failure gives 0 (or "")."""

import os
import re

import gdb

from . import fmt, gdbif, replaylib
from .session import event_handler, one_line_error

FIELDS = ("step", "launch", "op", "events")
ZERO = {"step": 0, "launch": 0, "op": "", "events": 0}
STOP_FUNCTION = "msmemscope_gdb_stopped"

_session = None


def _step(w):
    """The current step as memscope numbers it: from 1, the run before
    the first step mark being step 1; 0 between `step start' ranges."""
    if w.step == 0:
        return 1
    return w.step if w.in_step else 0


def _values(r, events):
    """{step, launch, op, events} where the replay r stands."""
    w = r.where()
    op = replaylib.text(w.op)
    return {"step": _step(w), "launch": w.op_launch if op else 0, "op": op, "events": events}


def _replay_end(path, live=False):
    """({step, launch, op, events}, None or (live groups, warnings, judged,
    bad frees, unchecked)) of the log at path replayed to its end (the
    program is stopped, or has exited: the log holds all it did); the
    groups of the blocks live there, fmt.log_warnings() of the log, whether
    the scan judged them, the bad frees' counts (double, invalid,
    mismatched), fmt.unchecked_warnings() and _parts(), only when live is
    true. (ZERO, None) when there is no log or it cannot
    be read; raises only for the groups (exit_report says so)."""
    if not path or not os.path.exists(path):
        return dict(ZERO), None
    with replaylib.Log(path) as log, replaylib.Replay(log) as r:
        info = log.info()
        events = info.events
        r.seek(events)
        values = _values(r, events)
        if not live or not events:
            return values, None
        w = r.where()
        return values, (r.group_live(), fmt.log_warnings(info), replaylib.reach_judged(info),
                        (w.double_frees, w.invalid_frees, w.mismatched_frees),
                        fmt.unchecked_warnings(info, log, w.unchecked_frees), _parts(log, w))


def _parts(log, w):
    """None for a log of the whole run; for one recorded in parts, what
    the line at exit says of it instead of "the program freed every
    block" (which would speak of memory the log did not see)."""
    config = log.config()
    config = config[0] if config else None
    if config and config.nsteps:
        how = "with --steps: the memory events of those steps only"
    elif config and config.deferred:
        how = "with collect=deferred: only between msmemscope_start() and msmemscope_stop()"
    elif w.gap_event:
        how = "only while on: msmemscope_stop() paused recording, and what the program did then is not in the log"
    else:
        return None
    if not sum(w.mem[k].allocs for k in range(replaylib.MEM_KIND_COUNT)):
        return "it recorded no block (recorded %s)" % how
    return "every block it recorded was freed (recorded %s)" % how


def from_log(path):
    """{step, launch, op, events} of the log at path replayed to its end;
    ZERO when there is no log or it cannot be read."""
    try:
        return _replay_end(path)[0]
    except Exception:  # noqa: BLE001 -- a failure gives 0 values, never a traceback
        return dict(ZERO)


# The running program's log, followed from one stop to the next: (path,
# Log, Replay), or None. A stop then replays only what the program wrote
# since the last one, not the whole run again (seconds at each stop of a
# long run, and at each hit of a breakpoint whose condition names a
# $memscope_ value).
_follow = None


def _drop_follow():
    global _follow
    f, _follow = _follow, None
    if f is not None:
        for h in (f[2], f[1]):
            try:
                h.close()
            except Exception:  # noqa: BLE001 -- closing what failed must not raise
                pass


def from_running_log(path):
    """from_log() for the log of the program running now: the replay goes
    on from where the last call left it; a fresh one when it cannot (a
    thread's records written late, another log)."""
    global _follow
    try:
        if not path or not os.path.exists(path):
            return dict(ZERO)
        f = _follow
        if f is not None and f[0] == path:
            f[2].follow_refresh()
        else:
            _drop_follow()
            log = replaylib.Log(path, follow=True)
            try:
                f = _follow = (path, log, replaylib.Replay(log))
            except Exception:
                log.close()
                raise
        path, log, r = f
        events = log.info().events
        if r.seek(events):
            raise replaylib.ReplayError("the replay stopped before event %d" % events)
        return _values(r, events)
    except Exception:  # noqa: BLE001 -- then as from_log(), which never raises
        _drop_follow()
        return from_log(path)


def followed(path):
    """(log, replay) of the running program's log at path, replayed to its
    end by the follow that from_running_log() keeps (stopped there at
    this stop already: nothing to read again), or None when there is no
    follow of that log or it cannot go on. Owned by the follow: the
    caller does not close them."""
    f = _follow
    if f is None or f[0] != path:
        return None
    try:
        f[2].follow_refresh()
        events = f[1].info().events
        if f[2].seek(events):
            raise replaylib.ReplayError("the replay stopped before event %d" % events)
    except Exception:  # noqa: BLE001 -- the caller opens the log itself then
        _drop_follow()
        return None
    return f[1], f[2]


def _log_now():
    """The log the values come from: the running program's, else the
    finished log of its last run; None when there is neither."""
    s = _session
    if s is None:
        return None
    return s.run_log if s.running() else s.finished_log


def _string(text):
    # gdb makes a str a char array held by gdb itself, not by the
    # program: printf "%s" and $_streq read it without calling malloc.
    # An empty str would be a char[0], which printf takes for a null
    # pointer to read from the program: "" is a char[1] holding the NUL.
    return text or gdb.parse_and_eval('""')


# (inferior number, log) the values were last set for: a prompt in
# another inferior (`inferior N') sets them again for its process.
_set_for = None


def _key():
    s = _session
    return (gdb.selected_inferior().num, _log_now()) if s is not None else None


def _set(values):
    global _set_for
    _set_for = _key()
    for name in FIELDS:
        v = values[name]
        gdb.set_convenience_variable("memscope_" + name, _string(v) if name == "op" else v)


def _set_quietly(values):
    try:
        _set(values)
    except Exception:  # noqa: BLE001 -- never a traceback from an event handler
        pass


def refresh(path):
    """Sets the variables from the log at path (0 and "" without one)."""
    _set_quietly(from_log(path))


def refresh_running(path):
    """Sets the variables from the running program's log at path."""
    _set_quietly(from_running_log(path))


def clear():
    """The values before any run: step 0, no launch, no operator, no events."""
    refresh(None)


class Now(gdb.Function):
    """$_memscope_step(), $_memscope_launch(), $_memscope_op(),
    $_memscope_events(): where the program stands when the expression is
    evaluated. At a stop of the recorder (a `memscope break' hit), the
    step and launch of that stop, from its descriptor; elsewhere, from
    the log. 0 (or "") when neither can say."""

    def __init__(self, field):
        super().__init__("_memscope_" + field)
        self.field = field

    def invoke(self):
        try:
            v = self._value()
        except Exception:  # noqa: BLE001 -- an expression must not raise a traceback
            v = ZERO[self.field]
        return _string(v) if self.field == "op" else v

    def _value(self):
        if self.field in ("step", "launch") and _at_recorder_stop():
            d = gdbif.Handle(check=False).read()
            return int(d.step if self.field == "step" else d.op_launch)
        s = _session
        if s is not None and s.running():
            return from_running_log(s.run_log)[self.field]
        return from_log(_log_now())[self.field]


def _on_prompt():
    """At gdb's prompt, in an inferior other than the one the values
    were set for (detach-on-fork off): its process's values."""
    try:
        if _key() == _set_for:
            return
        s = _session
        if s.running():
            refresh_running(s.run_log)
        else:
            refresh(s.finished_log)
    except Exception:  # noqa: BLE001 -- an event handler must not leave a traceback
        pass


def _at_recorder_stop():
    """True when the thread gdb evaluates in stands at the recorder's
    stop function, which is where its descriptor tells the stop."""
    try:
        if _session is None or not _session.running():
            return False
        frame = gdb.newest_frame()
        if frame.name() != STOP_FUNCTION:
            return False
        return gdbif.Handle(check=False).read().reason != gdbif.REASON_NONE
    except (gdb.error, gdbif.NotLoaded, ValueError):
        return False


_STRING = re.compile(r'''("(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')''')
_VAR = re.compile(r"\$memscope_(%s)\b(?!\s*\()" % "|".join(FIELDS))


def live_condition(cond):
    """cond with $memscope_X (outside string literals) as $_memscope_X(),
    which reads the value at the hit; None when cond names none."""
    parts = _STRING.split(cond)
    out = "".join(p if i % 2 else _VAR.sub(r"$_memscope_\1()", p) for i, p in enumerate(parts))
    return out if out != cond else None


def _on_breakpoint(bp):
    """A breakpoint made or changed: a condition that names the variables
    is made to read them at the hit. gdb reports the rewrite as one more
    change, which then names none."""
    try:
        cond = bp.condition
        new = live_condition(cond) if cond else None
        if new is not None:
            bp.condition = new
            gdb.write("memscope: breakpoint %d: the condition reads the $memscope_ values at the hit: %s\n"
                      % (bp.number, new))
    except Exception as e:  # noqa: BLE001 -- an event handler must not leave a traceback
        try:
            gdb.write("memscope: breakpoint %d: cannot make its condition read the $memscope_ values at the hit: "
                      "%s\n" % (bp.number, one_line_error(e)))
        except Exception:  # noqa: BLE001
            pass


def setup(session):
    """Registers the functions and the breakpoint handlers, and gives the
    variables their values before any run."""
    global _session
    _session = session
    for field in FIELDS:
        Now(field)
    gdb.events.breakpoint_created.connect(event_handler(_on_breakpoint))
    gdb.events.breakpoint_modified.connect(event_handler(_on_breakpoint))
    gdb.events.before_prompt.connect(event_handler(_on_prompt))
    clear()


def at_exit(path, report, inferior=None):
    """The run's last values from its finished log, and when report is
    true (the program exited, gdb did not kill it) the line printed then:
    the blocks the program left live at exit (its leaks), their bytes and
    loss records, as `memscope leaks full' counts them, and apart what the
    runtimes keep for themselves (not leaks). One replay of the log for
    both. No line when the run recorded nothing (no recorder, no log, no
    event); a failure to read the log is one line, not a traceback."""
    global _set_for
    _drop_follow()
    try:
        values, groups = _replay_end(path, live=report)
    except Exception as e:  # noqa: BLE001 -- an exit handler must not leave a traceback
        _set_quietly(dict(ZERO))
        _set_for = (inferior.num, path) if inferior is not None else None
        if report:
            try:
                gdb.write("memscope: at exit: cannot read the log %s: %s\n" % (path, one_line_error(e)))
            except Exception:  # noqa: BLE001
                pass
        return
    _set_quietly(values)
    # For the inferior that ended, once its process is gone (the finished
    # log): the next prompt does not replay that log again.
    _set_for = (inferior.num, path) if inferior is not None else None
    if groups is None:
        return
    try:
        events = values["events"]
        groups, warnings, judged, bad, unchecked, parts = groups
        groups, kept = replaylib.split_runtime(groups)
        # What the program still pointed to at exit (the recorder's scan
        # then) is not a leak either; nor what a thread still running made
        # as the scan ran, which the scan did not judge.
        # Mappings, pools and device memory still live are no heap leak
        # (the launcher's "other memory still live at exit").
        reachable = [g for g in groups if g["reach"] == replaylib.REACH_REACHABLE]
        # Allocated before recording last stopped (msmemscope_stop(), --steps):
        # freed since or not, the log cannot tell.
        unrecorded = [g for g in groups if g["reach"] == replaylib.REACH_UNRECORDED]
        groups = [g for g in groups if g["reach"] != replaylib.REACH_UNRECORDED]
        late = [g for g in groups if replaylib.unjudged(g, judged)]
        other = [g for g in groups if replaylib.not_heap(g)]
        groups = [g for g in groups if g["reach"] != replaylib.REACH_REACHABLE and not replaylib.unjudged(g, judged)
                  and not replaylib.not_heap(g)]
        blocks = sum(g["blocks"] for g in groups)
        nbytes = sum(g["bytes"] for g in groups)
        kept_blocks = sum(g["blocks"] for g in kept)
        reach_blocks = sum(g["blocks"] for g in reachable)
        kept_note = ("; not leaks: %s, %s, kept by the runtimes for themselves"
                     % (fmt.plural(kept_blocks, "block"), fmt.exact_bytes(sum(g["bytes"] for g in kept)))
                     if kept_blocks else "")
        if reach_blocks:
            kept_note += ("%s %s, %s, still reachable (the program pointed to them)"
                          % ("; not leaks:" if not kept_blocks else " and", fmt.plural(reach_blocks, "block"),
                             fmt.exact_bytes(sum(g["bytes"] for g in reachable))))
        if unrecorded:
            kept_note += ("; %s, %s, allocated before recording stopped, freed later or not (the log cannot tell), "
                          "not counted as leaks" % (fmt.plural(sum(g["blocks"] for g in unrecorded), "block"),
                                                     fmt.exact_bytes(sum(g["bytes"] for g in unrecorded))))
        if late:
            kept_note += ("; %s, %s, %s" % (fmt.plural(sum(g["blocks"] for g in late), "block"),
                                            fmt.exact_bytes(sum(g["bytes"] for g in late)), replaylib.UNJUDGED))
        if other:
            kept_note += ("; %s, %s, of mappings, pools or device memory still live (not heap blocks)"
                          % (fmt.plural(sum(g["blocks"] for g in other), "block"),
                             fmt.exact_bytes(sum(g["bytes"] for g in other))))
        if not blocks and (reach_blocks or late or other or unrecorded):
            gdb.write("memscope: at exit: no leak%s; `memscope leaks full' for the detail.\n" % kept_note)
        elif not blocks and parts:
            gdb.write("memscope: at exit: no leak the log can tell: %s%s; %s recorded.\n"
                      % (parts, kept_note, fmt.plural(events, "event")))
        elif not blocks:
            gdb.write("memscope: at exit: no leak, the program freed every %sblock%s; %s recorded.\n"
                      % ("recorded " if warnings else "", kept_note, fmt.plural(events, "event")))
        else:
            # Without the scan's verdicts (none made: --no-reach-scan, a
            # malloc that replaces glibc's) they were never freed, not
            # known leaked, as msmemscope's reports say.
            said = ("never freed" if all(g["reach"] == replaylib.REACH_UNKNOWN for g in groups) else "leaked")
            gdb.write("memscope: at exit: %s %s, %s, in %s%s; `memscope leaks full' for the detail.\n"
                      % (fmt.plural(blocks, "block"), said, fmt.exact_bytes(nbytes),
                         fmt.plural(len(groups), "loss record"), kept_note))
        # The bad frees (double, invalid, mismatched): errors the leak
        # line would hide.
        words = [fmt.plural(bad[0], "double free")] if bad[0] else []
        if bad[1]:
            words.append(fmt.plural(bad[1], "free") + " of an address that is not a live block")
        if bad[2]:
            words.append(fmt.plural(bad[2], "mismatched free"))
        if words:
            gdb.write("memscope: at exit: also %s (`msmemscope-replay %s --summary' lists them).\n"
                      % (", ".join(words), path))
        for line in warnings + unchecked:
            gdb.write("memscope: warning: %s.\n" % line)
    except Exception as e:  # noqa: BLE001 -- an exit handler must not leave a traceback
        try:
            gdb.write("memscope: at exit: cannot read the log %s: %s\n" % (path, one_line_error(e)))
        except Exception:  # noqa: BLE001
            pass
