/* SPDX-License-Identifier: MIT */
/* follow.c: reading a log while its program writes it
 * (mms_log_follow()): each look reads what the writer added since the
 * last one, through a mapping the file grows into, and which threads are
 * outside their hooks (the bound a feed may go to, mms_pass_feed()). */
#define _GNU_SOURCE /* process_vm_readv */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "format.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "base-int.h"
#include "log-int.h"

/* A followed log's mapping: this much of the file's address range is
 * mapped at once, so that the file grows into it and nothing moves. */
#define FOLLOW_MAP ((size_t)1 << 40)

/* Which threads are outside their hooks now, read in the process with
 * process_vm_readv() (the reader is the program's parent: the launcher),
 * before the walk: one found outside writes no record stamped before
 * this look began (its guard is set before it takes a stamp, and cleared
 * after the record is published, stores the CPU makes visible in that
 * order), so the previous look's TSC is a stamp it writes nothing
 * before: mms_pass_feed() may go that far past its last record, where a
 * thread that sleeps would otherwise hold every other back. Only for TSC
 * stamps, read here on the same machine; a thread that cannot be read
 * (gone: its memory unmapped) writes nothing more either. A mistake here
 * costs no report: the feed finds any record stamped before what it fed
 * and refuses (MMS_EORDER). */
#define FOLLOW_LAG_NS 100000000u /* 100 ms */

static void look_threads(mms_log_t *log)
{
#ifdef MMS_HAVE_TSC
	struct iovec local[64], remote[64];
	struct mms__thread *th[64];
	int32_t busy[64];
	size_t i, n, k, done;
	uint64_t prev = log->look_tsc, ns;
	struct timespec ts;
	ssize_t got;

	if (log->hdr.clock != MMS_CLOCK_TSC || !log->hdr.pid)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	log->look_tsc = mms_tsc();
	/* A thread not in the log yet (being created, or its first chunk
	 * taken after this look counted the chunks) may have taken a stamp
	 * it has not written: feeds stay FOLLOW_LAG_NS behind this look (in
	 * TSC ticks by the recorder's first (stamp, time) pair), a margin
	 * only a thread stopped that long inside its first hook exceeds (the
	 * feed then refuses, and the log is read again). Nothing is fed
	 * before the program has run that long. */
	if (ns <= log->hdr.start_realtime_ns + 1000000u || log->look_tsc <= log->hdr.start_stamp) {
		log->look_cap = log->hdr.start_stamp ? log->hdr.start_stamp : 1;
	} else {
		double per_ns = (double)(log->look_tsc - log->hdr.start_stamp) / (double)(ns - log->hdr.start_realtime_ns);
		uint64_t lag = (uint64_t)(per_ns * FOLLOW_LAG_NS);

		log->look_cap = log->look_tsc - log->hdr.start_stamp > lag ? log->look_tsc - lag : log->hdr.start_stamp;
		if (!log->look_cap)
			log->look_cap = 1;
	}
	if (!prev)
		return; /* the first look: no earlier one to bound by */
	for (i = 0; i < log->nthreads;) {
		for (n = 0; n < 64 && i < log->nthreads; i++) {
			if (!log->threads[i].busy_addr)
				continue; /* its META not read yet */
			th[n] = &log->threads[i];
			local[n] = (struct iovec){ &busy[n], sizeof(busy[n]) };
			remote[n] = (struct iovec){ (void *)(uintptr_t)th[n]->busy_addr, sizeof(busy[n]) };
			n++;
		}
		for (done = 0; done < n;) {
			/* It stops at a thread it cannot read: that one is
			 * gone (its memory unmapped); the next call goes on
			 * after it. */
			got = process_vm_readv((pid_t)log->hdr.pid, local + done, n - done, remote + done, n - done, 0);
			if (got < 0 && errno != EFAULT)
				return; /* not ours to read (ptrace rules): as without */
			for (k = got < 0 ? 0 : (size_t)got / sizeof(busy[0]); k > 0; k--, done++)
				if (!busy[done])
					th[done]->idle_stamp = prev;
			if (done < n)
				th[done++]->idle_stamp = prev;
		}
	}
#else
	(void)log;
#endif
}

/* Reads what the writer added since the last look. Returns 1 when it
 * found events, 0 when not, or a negative code, which every later look
 * returns too (the tables then hold part of a look). */
static int follow_look(mms_log_t *log)
{
	uint64_t before = log->events;
	struct stat st;
	int rc;

	if (log->follow_err)
		return log->follow_err;
	/* The header's chunk count first, the file's size after: the walk
	 * reads the chunks both hold. The writer gives back the space past
	 * its last chunk when the program exits (trim_file() in
	 * hooks/logfile.c), and a thread still running may count a new chunk
	 * before the file grows to hold it again: a size seen before the
	 * trim, or a count after it, took the walk past the file's end
	 * (SIGBUS in the reader: the launcher died with it, 8 runs of
	 * `msmemscope -- dig -v` in 30). No trim goes below the chunks
	 * counted before it, so those read here stay in the file. */
	mms__log_header_reload(log);
	if (fstat(log->fd, &st))
		rc = -errno;
	else if ((uint64_t)st.st_size > log->map_len)
		rc = -ENOMEM; /* past the mapping: read it once written */
	else
		rc = 0;
	if (!rc) {
		log->size = (size_t)st.st_size;
		if (log->follow == MMS__FOLLOW_LIVE)
			look_threads(log);
		rc = mms__log_scan(log, log->fd);
	}
	/* A cut or damaged log, or one whose end was lost, is read again
	 * once written, the way any log is: following it stops here. At the
	 * last look, the log is what it is. */
	if (!rc && log->follow == MMS__FOLLOW_LIVE &&
	    (log->info.damaged || log->info.cut || log->stop != UINT64_MAX || log->chunks_lost || log->file_cut))
		rc = log->info.damage_error ? log->info.damage_error : MMS_ECORRUPT;
	if (rc)
		return log->follow_err = rc;
	return log->events > before;
}

/* Opens the log at path for mms_log_follow_refresh() to look at it again
 * as it grows: like mms__log_open_file(), over a mapping past the
 * file's end. */
MMS__EXPORT int mms_log_follow(const char *path, mms_log_t **out, mms_open_error_t *err)
{
	mms_log_t *log;
	struct stat st;
	void *map;
	size_t len;
	int fd, rc;

	fd = mms__log_open_regular(path, out, &st, err);
	if (fd < 0)
		return fd;
	if (st.st_size < MMS_HEADER_SIZE) {
		close(fd);
		return mms__open_error(err, MMS_ETRUNCATED, (uint64_t)st.st_size, "the file holds no whole header yet");
	}
	/* Past the file's end: the pages the writer adds show in it as they
	 * come (a shared mapping of the file), and none is touched before
	 * the file holds it. Less where the address space is limited
	 * (valgrind, RLIMIT_AS): a log that outgrows it is read once
	 * written. */
	for (len = FOLLOW_MAP;; len >>= 2) {
		if (len < (size_t)st.st_size || len < ((size_t)1 << 28)) {
			close(fd);
			return -ENOMEM;
		}
		map = mmap(NULL, len, PROT_READ, MAP_SHARED | MAP_NORESERVE, fd, 0);
		if (map != MAP_FAILED)
			break;
	}
	log = mms__log_new(map, (size_t)st.st_size);
	if (!log) {
		munmap(map, len);
		close(fd);
		return -ENOMEM;
	}
	log->map_len = len;
	log->unmap = 1;
	log->follow = MMS__FOLLOW_LIVE;
	log->fd = fd;
	log->path = strdup(path);
	rc = mms__log_read_header(log, err);
	if (!rc)
		rc = follow_look(log);
	/* A fork child's replays start from its parent's heap. */
	if (rc >= 0)
		rc = mms__inherit_load(log, 0);
	if (rc < 0) {
		mms_log_close(log);
		return rc;
	}
	*out = log;
	return 0;
}

MMS__EXPORT int mms_log_follow_refresh(mms_log_t *log)
{
	if (!log || log->follow != MMS__FOLLOW_LIVE)
		return MMS_EUSAGE;
	return follow_look(log);
}

MMS__EXPORT int mms_log_follow_end(mms_log_t *log)
{
	int rc;

	if (!log || log->follow != MMS__FOLLOW_LIVE)
		return MMS_EUSAGE;
	log->follow = MMS__FOLLOW_END;
	rc = follow_look(log);
	return rc < 0 ? rc : 0;
}
