/* SPDX-License-Identifier: MIT */
/* cli.h: small helpers shared by the command-line programs: messages that
 * name the program, die-on-failure allocation, strict long options, JSON
 * string escaping, human-readable byte counts and event kind names. Only
 * src/ uses these; the libraries never print or exit. */
#ifndef MMS_CLI_H
#define MMS_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit statuses shared by the programs. */
#define CLI_EXIT_FAILURE 1 /* the work failed: a bad log, an I/O error */
#define CLI_EXIT_USAGE 2   /* the command line is wrong */

/* The program name that starts every message; set it with cli_init(). */
extern const char *cli_progname;
/* The command whose --help a usage error points to; NULL: cli_progname.
 * A subcommand sets it ("msmemscope-replay transform"). */
extern const char *cli_help_command;

/* Sets cli_progname to the last path component of argv0 (keeps
 * "msmemscope" when argv0 is NULL or empty). */
void cli_init(const char *argv0);

/* Prints "PROG: MESSAGE\n" to stderr and exits with status. */
void die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* Prints "PROG: MESSAGE\nTry 'PROG --help' for more information.\n" to
 * stderr and exits with CLI_EXIT_USAGE. */
void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Prints "PROG: warning: MESSAGE\n" to stderr. */
void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints "PROG: MESSAGE\n" to stderr: an error that fails the command
 * (its status 1) without ending it, where warn() would call it a mere
 * warning. */
void say_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Ends the program by signal sig, its default action, as valgrind does:
 * a shell tells a program killed by a signal from one that exited 128 +
 * N (bash stops a script's loop at a Ctrl-C only when the command it
 * waited for died of SIGINT). Output is flushed first; no core file.
 * Returns only when the signal does not kill. */
void cli_die_of(int sig);

/* malloc, calloc, realloc, strdup and asprintf that die (status 1) with a
 * message when memory runs out. Zero sizes return a valid pointer. */
void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t size);
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Matches argv[*i] against a long option that takes a value (name is
 * "--output"), in both forms "--output=V" and "--output V". Returns 1 and
 * sets *value (advancing *i past a separate value), 0 when argv[*i] is not
 * this option; dies with a usage error when the value is missing. */
int cli_opt_value(int argc, char **argv, int *i, const char *name, const char **value);

/* Matches arg against a long option that takes no value. Returns 1 on a
 * match, 0 otherwise; dies with a usage error on "--name=...". */
int cli_opt_flag(const char *arg, const char *name);

/* Parses a whole decimal unsigned number; returns 0, -1 when s is not
 * one, -2 when it does not fit in 64 bits. */
int cli_parse_u64(const char *s, uint64_t *out);
/* What s is not, for a message: "a whole number", or, where it is one too
 * large for 64 bits, "a whole number up to 18446744073709551615". */
const char *cli_u64_why(const char *s);

/* Writes s (len bytes, any bytes) to f as a quoted JSON string: escapes
 * '"', '\\' and control characters; invalid UTF-8 bytes become U+FFFD. */
void json_put_string(FILE *f, const char *s, size_t len);

/* Formats a byte count for people into buf (cap bytes; 32 is enough):
 * "812 bytes", "4.0 KiB", "1.2 MiB" ... up to TiB. Returns buf. */
const char *human_bytes(uint64_t n, char *buf, size_t cap);

/* The same with the exact count where it was rounded: "812 bytes", or
 * "4.0 KiB (4096 bytes)". Returns buf (64 bytes are enough). */
const char *human_bytes_exact(uint64_t n, char *buf, size_t cap);

/* msMemScope's name of an event kind (enum mms_event_kind): "MALLOC",
 * "OP_LAUNCH", ...; "UNKNOWN" for a value out of range. */
const char *cli_event_kind_name(unsigned kind);

/* Creates the folder dir and its parents where missing (mode 0750, as
 * mkdir -p). Returns 0, or -errno. */
int cli_make_dirs(const char *dir);

#endif /* MMS_CLI_H */
