/* SPDX-License-Identifier: MIT */
/* exportcheck.c: what the exporters promise about their output files,
 * checked through the library for tests/progs/export.sh: mode 0640; an
 * existing path (a file, or a symlink, dangling or not) refused with
 * -EEXIST unless overwrite, and then replaced without following the link;
 * a missing folder, a cancel at the first or the last progress call: an
 * error and no file, no temporary file; raw addresses as the C stack
 * without a symbolizer; msMemScope's file name.
 *
 * Usage: exportcheck LOG DIR   (DIR empty, created by the caller)
 * Prints one "ok ..." line per check; exits 1 at the first failure. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "msmemscope-replay.h"
#include "progs.h"

static const char *dir;
static mms_log_t *log_;

static void die(const char *fmt, const char *a, int rc)
{
	fprintf(stderr, "exportcheck: ");
	fprintf(stderr, fmt, a);
	fprintf(stderr, ": got %d (%s)\n", rc, rc ? mms_strerror(rc) : "success");
	exit(1);
}

static char *in_dir(const char *name)
{
	return prog_in_dir(dir, name);
}

/* Files in DIR, "name name ..." sorted, for messages and checks. */
static void listing(char *out, size_t len)
{
	struct dirent **v;
	int n, i;
	size_t o = 0;

	out[0] = '\0';
	n = scandir(dir, &v, NULL, alphasort);
	for (i = 0; i < n; i++) {
		if (strcmp(v[i]->d_name, ".") && strcmp(v[i]->d_name, ".."))
			o += (size_t)snprintf(out + o, o < len ? len - o : 0, "%s ", v[i]->d_name);
		free(v[i]);
	}
	if (n >= 0)
		free(v);
}

static void expect_files(const char *what, const char *want)
{
	char got[4096];

	listing(got, sizeof(got));
	if (strcmp(got, want)) {
		fprintf(stderr, "exportcheck: after %s the folder holds '%s', expected '%s'\n", what, got, want);
		exit(1);
	}
}

static void expect_rc(const char *what, int rc, int want)
{
	if (rc != want)
		die("%s", what, rc);
	printf("ok %s\n", what);
}

struct cancel {
	int at_end; /* 0: cancel at the first call; 1: at the call with done == total */
	int calls;
};

static int cancel_cb(void *ctx, uint64_t done, uint64_t total)
{
	struct cancel *c = ctx;

	c->calls++;
	return !c->at_end || done == total;
}

/* Options of one export: the file and whether it may be replaced, and the
 * progress of its pass. */
struct xopt {
	int format;
	int overwrite;
	int (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
};

/* An export in a pass of its own: what the pass or the export failed with. */
static int fn(mms_log_t *log, const char *path, const struct xopt *o)
{
	mms_pass_options_t po = { .progress = o->progress, .progress_ctx = o->progress_ctx };
	mms_export_options_t eo = { .format = o->format, .path = path, .out.overwrite = o->overwrite };
	mms_export_t *x = NULL;
	mms_pass_t *p;
	int rc;

	rc = mms_pass_open(log, &po, &p);
	if (rc)
		return rc;
	rc = mms_export_add(p, &eo, &x);
	if (!rc)
		rc = mms_pass_run(p);
	if (!rc)
		rc = x->status;
	mms_pass_close(p);
	mms_export_free(x);
	return rc;
}

/* The rules every export obeys, for one format. */
static void check_format(const char *ext, int format)
{
	struct xopt o = { .format = format };
	struct cancel c = { 0 };
	char name[64], what[256], want[512];
	struct stat st, st2;

	/* A fresh file, mode 0640 (umask 022 set by main). */
	snprintf(name, sizeof(name), "a.%s", ext);
	snprintf(what, sizeof(what), "%s: export to a new file", ext);
	expect_rc(what, fn(log_, in_dir(name), &o), 0);
	if (lstat(in_dir(name), &st) || !S_ISREG(st.st_mode) || (st.st_mode & 07777) != 0640) {
		fprintf(stderr, "exportcheck: %s: mode %o, expected a regular file of mode 0640\n", name,
			(unsigned)st.st_mode);
		exit(1);
	}
	printf("ok %s: mode 0640\n", ext);

	/* Refused without overwrite, and left alone. */
	snprintf(what, sizeof(what), "%s: an existing file is refused", ext);
	expect_rc(what, fn(log_, in_dir(name), &o), -EEXIST);
	if (lstat(in_dir(name), &st2) || st2.st_ino != st.st_ino || st2.st_mtime != st.st_mtime)
		die("%s: the refused file was touched", ext, 0);
	o.overwrite = 1;
	snprintf(what, sizeof(what), "%s: overwrite replaces it", ext);
	expect_rc(what, fn(log_, in_dir(name), &o), 0);
	if (lstat(in_dir(name), &st2) || !S_ISREG(st2.st_mode) || st2.st_ino == st.st_ino ||
	    (st2.st_mode & 07777) != 0640)
		die("%s: overwrite did not put a new file of mode 0640 in place", ext, 0);
	/* A directory is never replaced, with or without overwrite. */
	snprintf(name, sizeof(name), "dir.%s", ext);
	if (mkdir(in_dir(name), 0755))
		die("cannot make the directory %s", name, -errno);
	snprintf(what, sizeof(what), "%s: overwrite refuses a directory", ext);
	expect_rc(what, fn(log_, in_dir(name), &o), -EISDIR);
	if (lstat(in_dir(name), &st2) || !S_ISDIR(st2.st_mode) || rmdir(in_dir(name)))
		die("%s: the directory was not left in place", ext, 0);
	o.overwrite = 0;

	/* A symlink, even dangling, is refused; overwrite replaces the link
	 * itself, never creating its target. */
	snprintf(name, sizeof(name), "link.%s", ext);
	if (symlink("target", in_dir(name)))
		die("cannot make the symlink %s", name, -errno);
	snprintf(what, sizeof(what), "%s: a dangling symlink is refused", ext);
	expect_rc(what, fn(log_, in_dir(name), &o), -EEXIST);
	o.overwrite = 1;
	snprintf(what, sizeof(what), "%s: overwrite replaces the symlink, not its target", ext);
	expect_rc(what, fn(log_, in_dir(name), &o), 0);
	o.overwrite = 0;
	if (lstat(in_dir(name), &st) || !S_ISREG(st.st_mode) || access(in_dir("target"), F_OK) == 0)
		die("%s: the symlink was followed", ext, 0);

	/* Errors leave nothing behind. */
	snprintf(name, sizeof(name), "missing/b.%s", ext);
	snprintf(what, sizeof(what), "%s: a missing folder", ext);
	expect_rc(what, fn(log_, in_dir(name), &o), -ENOENT);
	snprintf(name, sizeof(name), "c.%s", ext);
	o.progress = cancel_cb;
	o.progress_ctx = &c;
	snprintf(what, sizeof(what), "%s: cancelled at the first progress call", ext);
	expect_rc(what, fn(log_, in_dir(name), &o), -ECANCELED);
	if (c.calls != 1)
		die("%s: the progress callback ran more than once after a cancel", ext, c.calls);
	c.at_end = 1;
	c.calls = 0;
	snprintf(what, sizeof(what), "%s: cancelled at the last progress call", ext);
	expect_rc(what, fn(log_, in_dir(name), &o), -ECANCELED);
	if (c.calls < 2)
		die("%s: the progress callback was not called at the start and at the end", ext, c.calls);
	snprintf(want, sizeof(want), "a.%s link.%s ", ext, ext);
	snprintf(what, sizeof(what), "the %s errors", ext);
	expect_files(what, want);
	printf("ok %s: no partial or temporary file after an error\n", ext);
	unlink(in_dir("a.csv"));
	unlink(in_dir("link.csv"));
	unlink(in_dir("a.db"));
	unlink(in_dir("link.db"));
}

/* Without a symbolizer, the C stack of a MALLOC row is raw addresses. */
static void check_raw_stacks(void)
{
	struct xopt o = { .format = MMS_EXPORT_CSV };
	char line[8192], *p;
	int mallocs = 0, rc;
	FILE *f;

	rc = fn(log_, in_dir("raw.csv"), &o);
	if (rc)
		die("export of %s", "raw.csv", rc);
	f = fopen(in_dir("raw.csv"), "r");
	if (!f)
		die("cannot read %s", "raw.csv", -errno);
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, ",MALLOC,HOST,"))
			continue;
		mallocs++;
		line[strcspn(line, "\n")] = '\0';
		p = strrchr(line, ',') + 1;
		if (strncmp(p, "0x", 2) || strspn(p, "0123456789abcdefx|") != strlen(p))
			die("a MALLOC row's C stack without a symbolizer is '%s', not raw addresses", p, 0);
	}
	fclose(f);
	unlink(in_dir("raw.csv"));
	if (!mallocs)
		die("%s has no MALLOC row", "raw.csv", 0);
	printf("ok csv: raw addresses as C stacks without a symbolizer (%d MALLOC rows)\n", mallocs);
}

static void check_name(void)
{
	mms_log_info_t info;
	char got[64], want[64];
	struct tm tm;
	time_t t;
	int n;

	mms_log_get_info(log_, &info);
	t = (time_t)(info.start_realtime_ns / 1000000000u);
	localtime_r(&t, &tm);
	strftime(want, sizeof(want), "memscope_dump_%Y%m%d%H%M%S.csv", &tm);
	n = mms_export_name(log_, "csv", got, sizeof(got));
	if (n != (int)strlen(want) || strcmp(got, want))
		die("mms_export_name gave '%s'", got, n);
	if (mms_export_name(log_, "db", NULL, 0) != n - 1)
		die("mms_export_name(db) without a buffer: %s", "wrong length", 0);
	printf("ok name: %s\n", got);
}

/* mms_file_write() of len bytes of a pattern into name; returns its
 * code, and with 0 checks the file's bytes and mode. */
static int write_large(const char *name, size_t len)
{
	mms_output_options_t out = { .overwrite = 0 };
	unsigned char *buf = malloc(len), *back = malloc(len);
	struct stat sb;
	size_t i;
	FILE *f;
	int rc;

	if (!buf || !back)
		die("%s", "out of memory", -ENOMEM);
	for (i = 0; i < len; i++)
		buf[i] = (unsigned char)(i * 7 + i / 4099);
	rc = mms_file_write(in_dir(name), buf, len, &out);
	if (!rc) {
		f = fopen(in_dir(name), "rb");
		if (!f || fread(back, 1, len + 1, f) != len || memcmp(buf, back, len))
			die("%s: not the bytes written", name, 0);
		fclose(f);
		if (stat(in_dir(name), &sb) || (sb.st_mode & 0777) != 0640)
			die("%s: not of mode 0640", name, 0);
		unlink(in_dir(name));
	}
	free(buf);
	free(back);
	return rc;
}

/* A file of 6 MiB goes through the writer thread (after the first
 * 512 KiB); a limit on the file's size (RLIMIT_FSIZE, SIGXFSZ ignored)
 * makes a write fail in the thread (3 MiB) and before it (256 KiB). */
static void check_large_file(void)
{
	struct rlimit old, lim;
	static const rlim_t limits[] = { 3u << 20, 256u << 10 };
	char what[128];
	int rc;

	rc = write_large("large.bin", 6u << 20);
	if (rc)
		die("mms_file_write of %s", "6 MiB", rc);
	printf("ok file: 6 MiB written whole, mode 0640\n");
	if (getrlimit(RLIMIT_FSIZE, &old))
		die("%s", "getrlimit", -errno);
	signal(SIGXFSZ, SIG_IGN);
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		if (old.rlim_max != RLIM_INFINITY && old.rlim_max < limits[i])
			continue;
		lim = old;
		lim.rlim_cur = limits[i];
		if (setrlimit(RLIMIT_FSIZE, &lim))
			die("%s", "setrlimit", -errno);
		snprintf(what, sizeof(what), "file: a write error at %llu KiB", (unsigned long long)(limits[i] >> 10));
		expect_rc(what, write_large("large.bin", 6u << 20), -EFBIG);
		if (setrlimit(RLIMIT_FSIZE, &old))
			die("%s", "setrlimit", -errno);
		expect_files(what, "");
	}
	signal(SIGXFSZ, SIG_DFL);
}

int main(int argc, char **argv)
{
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: exportcheck LOG DIR\n");
		return 2;
	}
	dir = argv[2];
	umask(022);
	rc = mms_log_open(argv[1], &log_);
	if (rc)
		die("cannot open %s", argv[1], rc);
	check_format("csv", MMS_EXPORT_CSV);
	check_format("db", MMS_EXPORT_DB);
	check_raw_stacks();
	check_name();
	check_large_file();
	expect_files("all checks", "");
	mms_log_close(log_);
	return 0;
}
