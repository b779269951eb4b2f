/* SPDX-License-Identifier: MIT */
/* abicheck.c: prints the size and field offsets of each public struct the
 * gdb side mirrors with ctypes (gdb/msmemscope_gdb/replaylib.py), one
 * line a struct: "name size field=offset ...", for abi.sh to compare. */
#include <stddef.h>
#include <stdio.h>

#include "msmemscope-replay.h"

#define F(type, field) printf(" %s=%zu", #field, offsetof(type, field))
#define BEGIN(name, type) printf("%s %zu", name, sizeof(type))
#define END() putchar('\n')

int main(void)
{
	BEGIN("Event", mms_event_t);
	F(mms_event_t, id), F(mms_event_t, stamp), F(mms_event_t, time_ns), F(mms_event_t, thread);
	F(mms_event_t, kind), F(mms_event_t, sub), F(mms_event_t, mem), F(mms_event_t, device), F(mms_event_t, addr);
	F(mms_event_t, size), F(mms_event_t, stack), F(mms_event_t, runtime), F(mms_event_t, total);
	F(mms_event_t, used), F(mms_event_t, range_id), F(mms_event_t, name), F(mms_event_t, file_offset),
		F(mms_event_t, flags);
	END();
	BEGIN("LogInfo", mms_log_info_t);
	F(mms_log_info_t, version), F(mms_log_info_t, pid), F(mms_log_info_t, ppid), F(mms_log_info_t, exe);
	F(mms_log_info_t, clock), F(mms_log_info_t, flags), F(mms_log_info_t, cut_errno);
	F(mms_log_info_t, start_realtime_ns), F(mms_log_info_t, lost_events), F(mms_log_info_t, call_stack_depth);
	F(mms_log_info_t, threads), F(mms_log_info_t, nchunks), F(mms_log_info_t, file_size);
	F(mms_log_info_t, complete), F(mms_log_info_t, cut), F(mms_log_info_t, cut_offset);
	F(mms_log_info_t, cut_what), F(mms_log_info_t, stopped), F(mms_log_info_t, damaged);
	F(mms_log_info_t, damage_offset), F(mms_log_info_t, damage), F(mms_log_info_t, damage_error);
	F(mms_log_info_t, damage_count), F(mms_log_info_t, events), F(mms_log_info_t, segments);
	F(mms_log_info_t, last_realtime_ns), F(mms_log_info_t, exec_away), F(mms_log_info_t, bad_stacks),
		F(mms_log_info_t, stacks_full), F(mms_log_info_t, strings_full), F(mms_log_info_t, own_malloc);
	F(mms_log_info_t, own_cxx), F(mms_log_info_t, own_cxx_op);
	F(mms_log_info_t, freeres), F(mms_log_info_t, freeres_skipped), F(mms_log_info_t, freeres_threads);
	F(mms_log_info_t, reach_scan), F(mms_log_info_t, reach_pointers), F(mms_log_info_t, reach_bytes);
	F(mms_log_info_t, reach_ns), F(mms_log_info_t, reach_threads), F(mms_log_info_t, steps_inferred);
	END();
	BEGIN("LogFork", mms_log_fork_t);
	F(mms_log_fork_t, state), F(mms_log_fork_t, parent_pid), F(mms_log_fork_t, parent_log);
	F(mms_log_fork_t, fork_event), F(mms_log_fork_t, blocks), F(mms_log_fork_t, bytes), F(mms_log_fork_t, why);
	F(mms_log_fork_t, fork_step), F(mms_log_fork_t, fork_in_step);
	END();
	BEGIN("OpenError", mms_open_error_t);
	F(mms_open_error_t, offset), F(mms_open_error_t, what);
	END();
	BEGIN("KindSummary", mms_kind_summary_t);
	F(mms_kind_summary_t, allocs), F(mms_kind_summary_t, frees), F(mms_kind_summary_t, bytes_allocated);
	F(mms_kind_summary_t, peak_bytes), F(mms_kind_summary_t, live_blocks), F(mms_kind_summary_t, live_bytes);
	END();
	BEGIN("Block", mms_block_t);
	F(mms_block_t, addr), F(mms_block_t, size), F(mms_block_t, mem), F(mms_block_t, fn);
	F(mms_block_t, thread), F(mms_block_t, stack), F(mms_block_t, alloc_id), F(mms_block_t, alloc_event);
	F(mms_block_t, step), F(mms_block_t, op_launch), F(mms_block_t, op), F(mms_block_t, kernel_launches);
	F(mms_block_t, owner), F(mms_block_t, pool), F(mms_block_t, free_event), F(mms_block_t, free_thread);
	F(mms_block_t, inherited), F(mms_block_t, origin_pid), F(mms_block_t, origin_event);
	F(mms_block_t, runtime), F(mms_block_t, free_stack), F(mms_block_t, device), F(mms_block_t, reach);
	F(mms_block_t, indirect_blocks), F(mms_block_t, indirect_bytes);
	END();
	BEGIN("Where", mms_where_t);
	F(mms_where_t, position), F(mms_where_t, events), F(mms_where_t, step), F(mms_where_t, in_step);
	F(mms_where_t, op_launches), F(mms_where_t, kernel_launches), F(mms_where_t, op);
	F(mms_where_t, op_launch), F(mms_where_t, thread), F(mms_where_t, mem), F(mms_where_t, live_bytes);
	F(mms_where_t, peak_bytes), F(mms_where_t, unmatched_frees), F(mms_where_t, double_allocs);
	F(mms_where_t, double_frees), F(mms_where_t, invalid_frees), F(mms_where_t, mismatched_frees);
	F(mms_where_t, unchecked_frees), F(mms_where_t, gap_event);
	END();
	BEGIN("ReplayOptions", mms_replay_options_t);
	F(mms_replay_options_t, index_path), F(mms_replay_options_t, no_index_file);
	F(mms_replay_options_t, checkpoint_every), F(mms_replay_options_t, forward_only);
	F(mms_replay_options_t, progress), F(mms_replay_options_t, progress_ctx);
	END();
	BEGIN("StackGroup", mms_stack_group_t);
	F(mms_stack_group_t, stack), F(mms_stack_group_t, blocks), F(mms_stack_group_t, bytes);
	F(mms_stack_group_t, addr), F(mms_stack_group_t, size), F(mms_stack_group_t, step), F(mms_stack_group_t, op);
	F(mms_stack_group_t, runtime), F(mms_stack_group_t, mem), F(mms_stack_group_t, device);
	F(mms_stack_group_t, reach), F(mms_stack_group_t, indirect_blocks), F(mms_stack_group_t, indirect_bytes);
	END();
	BEGIN("Frame", mms_frame_t);
	F(mms_frame_t, ip), F(mms_frame_t, function), F(mms_frame_t, file), F(mms_frame_t, line);
	F(mms_frame_t, module), F(mms_frame_t, module_offset), F(mms_frame_t, inlined), F(mms_frame_t, python);
	END();
	BEGIN("ConfigWatch", struct mms_config_watch);
	F(struct mms_config_watch, on), F(struct mms_config_watch, full_content), F(struct mms_config_watch, out);
	F(struct mms_config_watch, start), F(struct mms_config_watch, end);
	END();
	BEGIN("Config", mms_config_t);
	F(mms_config_t, call_stack), F(mms_config_t, events), F(mms_config_t, python_stack), F(mms_config_t, deferred);
	F(mms_config_t, nsteps);
	F(mms_config_t, steps), F(mms_config_t, follow_exec), F(mms_config_t, log_level), F(mms_config_t, freeres);
	F(mms_config_t, reach), F(mms_config_t, watch), F(mms_config_t, log_limit), F(mms_config_t, clock),
		F(mms_config_t, log_thread);
	F(mms_config_t, unwind), F(mms_config_t, unwind_check), F(mms_config_t, guard), F(mms_config_t, guard_redzone);
	F(mms_config_t, guard_quarantine), F(mms_config_t, torch_ops), F(mms_config_t, free_stack),
		F(mms_config_t, devices), F(mms_config_t, unknown);
	F(mms_config_t, bad);
	END();
	BEGIN("GuardFinding", mms_guard_finding_t);
	F(mms_guard_finding_t, kind), F(mms_guard_finding_t, event), F(mms_guard_finding_t, thread);
	F(mms_guard_finding_t, addr), F(mms_guard_finding_t, size), F(mms_guard_finding_t, family);
	F(mms_guard_finding_t, alloc_fn), F(mms_guard_finding_t, alloc_stack), F(mms_guard_finding_t, free_stack);
	F(mms_guard_finding_t, at_stack), F(mms_guard_finding_t, alloc_event), F(mms_guard_finding_t, free_event);
	F(mms_guard_finding_t, since), F(mms_guard_finding_t, since_event), F(mms_guard_finding_t, steps_in_window);
	F(mms_guard_finding_t, launches_in_window), F(mms_guard_finding_t, offset), F(mms_guard_finding_t, length);
	F(mms_guard_finding_t, bytes), F(mms_guard_finding_t, nbytes), F(mms_guard_finding_t, last_launch);
	F(mms_guard_finding_t, last_op), F(mms_guard_finding_t, found_by);
	END();
	BEGIN("Guard", mms_guard_t);
	F(mms_guard_t, findings), F(mms_guard_t, nfindings), F(mms_guard_t, by_kind), F(mms_guard_t, checks);
	F(mms_guard_t, guard_on), F(mms_guard_t, status);
	END();
	return 0;
}
