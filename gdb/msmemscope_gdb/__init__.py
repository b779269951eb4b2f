# SPDX-License-Identifier: MIT
"""msmemscope_gdb: the gdb side of msmemscope, loaded by memscope.gdb.

Thin glue over libmsmemscope-replay (through ctypes) and the descriptor
the preloaded hooks share with gdb (hooks/gdbif.h). See doc/gdb.md."""

import gdb

from . import breaks, commands, frames, guard, leaks, pinpoint, session, variables, watch

_session = None


def setup(hooks, replay_lib, replay_cli, launcher, libdir=None):
    """Called once by memscope.gdb with the paths of the recorder, the
    replay library, msmemscope-replay and msmemscope, build tree or
    installed (libdir: the build tree's folder of the replay library,
    None when installed). Sourcing memscope.gdb again keeps the first
    session."""
    global _session
    if _session is not None:
        return _session
    try:
        s = session.Session(hooks, replay_lib, replay_cli, launcher, libdir)
        s.start()
    except OSError as e:
        raise gdb.GdbError("memscope: cannot load %s: %s" % (replay_lib, e))
    commands.MemscopeCommand()
    commands.SetMemscope("set")
    commands.SetMemscope("show")
    commands.IntParameter(s, "depth", "depth", "Set the frames printed per stack (0: all).",
                          "Frames printed per stack", "Frames printed per stack by the memscope commands.")
    commands.IntParameter(s, "top", "top", "Set the loss records and launches printed (0: all).",
                          "Loss records and launches printed",
                          "Loss records (memscope leaks) and launches (memscope at step) printed.")
    commands.IntParameter(s, "diff-lines", "diff_lines", "Set the lines of changed bytes a watch stop prints (0: all).",
                          "Lines of changed bytes printed", "Lines of changed bytes a memscope watch stop prints.")
    commands.OutputParameter(s)
    commands.CallStackParameter(s)
    commands.LevelParameter(s)
    commands.KeepStacktracesParameter(s)
    commands.DeviceParameter(s)
    watch.WatchCommand(s)
    watch.UnwatchCommand(s)
    leaks.LeaksCommand(s)
    commands.AtCommand(s)
    commands.InfoCommand(s)
    commands.BlockCommand(s)
    breaks.BreakCommand(s)
    pinpoint.PinpointCommand(s)
    guard.GuardParameter(s)
    guard.CheckCommand(s)
    breaks.setup_functions()
    variables.setup(s)
    frames.RecorderFrames()
    if s.recording:
        gdb.write("memscope: the program will run with the msmemscope recorder; its logs go to %s/.\n" % s.log_dir)
    gdb.write("memscope: `help memscope' lists the commands.\n")
    _session = s
    return s
