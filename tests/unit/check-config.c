/* SPDX-License-Identifier: MIT */
/* check-config.c: unit tests of the recording configuration (common/conf.c,
 * compiled in directly): the defaults, the text the writer makes and the
 * parser reads back, bad values and unknown keys, the variables of single
 * keys, and doc/recorder.md listing every key. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"

#define DEFAULT_TEXT "call_stack=0;events=alloc,free,launch;collect=immediate;follow_exec=1;log_level=warn"

static int parse(mms_config_t *c, const char *text, mms_config_error_t *err)
{
	return mms_config_parse(c, text, strlen(text), err);
}

/* The text of c (static buffer). */
static const char *text_of(const mms_config_t *c)
{
	static char buf[1024];
	size_t n = mms_config_format(c, buf, sizeof buf);

	ck_assert_uint_lt(n, sizeof buf);
	ck_assert_uint_eq(strlen(buf), n);
	return buf;
}

START_TEST(test_defaults)
{
	mms_config_t c;

	mms_config_default(&c);
	ck_assert_uint_eq(c.bad, 0);
	ck_assert_uint_eq(c.unknown, 0);
	ck_assert_uint_eq(c.call_stack, 0);
	ck_assert_uint_eq(c.events, MMS_CONFIG_EV_ALLOC | MMS_CONFIG_EV_FREE | MMS_CONFIG_EV_LAUNCH);
	ck_assert_int_eq(c.deferred, 0);
	ck_assert_uint_eq(c.nsteps, 0);
	ck_assert_int_eq(c.follow_exec, 1);
	ck_assert_int_eq(c.log_level, MMS_CONFIG_LOG_WARN);
	ck_assert_int_eq(c.freeres, 1);
	ck_assert_int_eq(c.watch.on, 0);
	ck_assert_uint_eq(c.log_limit, 64ull << 30);
	ck_assert_int_eq(c.clock, MMS_CONFIG_CLOCK_TSC);
	ck_assert_int_eq(c.log_thread, 1);
	ck_assert_int_eq(c.unwind, MMS_CONFIG_UNWIND_WALKER);
	ck_assert_int_eq(c.unwind_check, 0);
	/* The keys the launcher always writes, and no other. */
	ck_assert_str_eq(text_of(&c), DEFAULT_TEXT);
}
END_TEST

START_TEST(test_roundtrip)
{
	mms_config_t c, d;
	char text[1024];

	mms_config_default(&c);
	ck_assert_int_eq(parse(&c,
			       "call_stack=1000;events=launch,access;collect=deferred;steps=2,3,2147483647;"
			       "follow_exec=0;log_level=error;freeres=0;watch=embed:out31,gelu,full-content;"
			       "log_limit=1M;clock=counter;log_thread=0;unwind=libunwind;unwind_check=2",
			       NULL),
			 0);
	ck_assert_uint_eq(c.call_stack, 1000);
	/* access implies alloc and free. */
	ck_assert_uint_eq(c.events,
			  MMS_CONFIG_EV_ALLOC | MMS_CONFIG_EV_FREE | MMS_CONFIG_EV_LAUNCH | MMS_CONFIG_EV_ACCESS);
	ck_assert_int_eq(c.deferred, 1);
	ck_assert_uint_eq(c.nsteps, 3);
	ck_assert_uint_eq(c.steps[2], 2147483647u);
	ck_assert_int_eq(c.watch.on, 1);
	ck_assert_int_eq(c.watch.full_content, 1);
	ck_assert_int_eq(c.watch.out, 31);
	ck_assert_str_eq(c.watch.start, "embed");
	ck_assert_str_eq(c.watch.end, "gelu");
	ck_assert_uint_eq(c.log_limit, 1u << 20);
	ck_assert_int_eq(c.unwind_check, 2);
	snprintf(text, sizeof text, "%s", text_of(&c));
	ck_assert_str_eq(text, "call_stack=1000;events=alloc,free,launch,access;collect=deferred;"
			       "steps=2,3,2147483647;follow_exec=0;log_level=error;freeres=0;"
			       "watch=embed:out31,gelu,full-content;log_limit=1M;clock=counter;log_thread=0;"
			       "unwind=libunwind;unwind_check=2");
	/* What the writer wrote, the parser reads back as it was. */
	mms_config_default(&d);
	ck_assert_int_eq(parse(&d, text, NULL), 0);
	ck_assert_int_eq(memcmp(&c, &d, sizeof c), 0);
	ck_assert_str_eq(text_of(&d), text);
	/* A watch of END only; a size that is no whole K. */
	mms_config_default(&c);
	ck_assert_int_eq(parse(&c, "watch=softmax;log_limit=200000", NULL), 0);
	ck_assert_str_eq(c.watch.start, "");
	ck_assert_int_eq(c.watch.out, -1);
	ck_assert_uint_eq(c.log_limit, 196608); /* rounded down to 4 KiB */
	ck_assert_str_eq(text_of(&c), DEFAULT_TEXT ";watch=softmax;log_limit=192K");
	/* Operator names with ':' (aten's): only a last ":outN" of START
	 * is the output's number. */
	ck_assert_int_eq(parse(&c, "watch=aten::addmm:out1,aten::relu", NULL), 0);
	ck_assert_str_eq(c.watch.start, "aten::addmm");
	ck_assert_int_eq(c.watch.out, 1);
	ck_assert_str_eq(c.watch.end, "aten::relu");
	ck_assert_int_eq(parse(&c, "watch=aten::outer,a:in1", NULL), 0);
	ck_assert_str_eq(c.watch.start, "aten::outer");
	ck_assert_int_eq(c.watch.out, -1);
	ck_assert_str_eq(c.watch.end, "a:in1");
	ck_assert_str_eq(text_of(&c), DEFAULT_TEXT ";watch=aten::outer,a:in1;log_limit=192K");
	/* Empty values: no events, every step, no watch. */
	ck_assert_int_eq(parse(&c, "events=;steps=;watch=", NULL), 0);
	ck_assert_uint_eq(c.events, 0);
	ck_assert_str_eq(text_of(&c), "call_stack=0;events=;collect=immediate;follow_exec=1;log_level=warn;"
				      "log_limit=192K");
}
END_TEST

START_TEST(test_bad_values)
{
	static const char *const bad[] = {
		"call_stack=1001",
		"call_stack=",
		"call_stack=-1",
		"call_stack=12x",
		"events=alloc,,free",
		"events=alloc,",
		"events=malloc",
		"collect=later",
		"steps=0",
		"steps=1,2,3,4,5,6",
		"steps=2147483648",
		"steps=1,,2",
		"follow_exec=yes",
		"follow_exec=2",
		"log_level=debug",
		"watch=a,b,c",
		"watch=a:out1",
		"watch=a,b:out1",
		"watch=a:out,b:out2",
		"watch=a:out32,b",
		"watch=full-content",
		"watch=a,",
		"watch=,b",
		"log_limit=100K",
		"log_limit=12Q",
		"log_limit=0",
		"log_limit=99999999999999999999G",
		"clock=hpet",
		"unwind=gdb",
		"unwind_check=3",
		"watch=abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl",
	};
	mms_config_t c, d;

	mms_config_default(&d);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		mms_config_error_t err = { .expected = NULL };
		const char *eq = strchr(bad[i], '=');

		mms_config_default(&c);
		ck_assert_msg(parse(&c, bad[i], &err) == -EINVAL, "%s was accepted", bad[i]);
		ck_assert_uint_eq(c.bad, 1);
		/* The key keeps its value. */
		c.bad = 0;
		ck_assert_msg(!memcmp(&c, &d, sizeof c), "%s changed the configuration", bad[i]);
		ck_assert_str_eq(err.source, "MSMEMSCOPE_CONFIG");
		ck_assert_int_eq(strncmp(err.key, bad[i], (size_t)(eq - bad[i])), 0);
		ck_assert_uint_eq(strlen(err.key), (size_t)(eq - bad[i]));
		ck_assert_str_eq(err.value, eq + 1);
		ck_assert_ptr_nonnull(err.expected);
	}
	/* The rest of the text is read all the same; the first bad value is
	 * the one described. */
	{
		mms_config_error_t err = { .expected = NULL };

		mms_config_default(&c);
		ck_assert_int_eq(parse(&c, "call_stack=8;collect=later;log_level=loud;follow_exec=0", &err), -EINVAL);
		ck_assert_uint_eq(c.bad, 2);
		ck_assert_uint_eq(c.call_stack, 8);
		ck_assert_int_eq(c.follow_exec, 0);
		ck_assert_str_eq(err.key, "collect");
		ck_assert_str_eq(err.expected, "immediate or deferred");
	}
	ck_assert_int_eq(mms_config_set(&c, "no_such_key", "1", 1, NULL), -ENOENT);
	ck_assert_int_eq(mms_config_set(&c, "call_stack", "16", 2, NULL), 0);
	ck_assert_uint_eq(c.call_stack, 16);
}
END_TEST

START_TEST(test_unknown_keys)
{
	mms_config_error_t err = { .expected = NULL };
	mms_config_t c;

	mms_config_default(&c);
	ck_assert_int_eq(parse(&c, ";call_stack=4;;colour=blue;verbose;events=launch;", &err), 0);
	ck_assert_uint_eq(c.unknown, 2);
	ck_assert_uint_eq(c.bad, 0);
	ck_assert_str_eq(err.unknown, "colour");
	ck_assert_uint_eq(c.call_stack, 4);
	ck_assert_uint_eq(c.events, MMS_CONFIG_EV_LAUNCH);
}
END_TEST

START_TEST(test_getenv)
{
	mms_config_error_t err = { .expected = NULL };
	mms_config_t c;

	setenv("MSMEMSCOPE_CONFIG", "call_stack=6;log_limit=2M;clock=counter", 1);
	setenv("MSMEMSCOPE_LOG_LIMIT", "1m", 1);
	setenv("MSMEMSCOPE_LOG_THREAD", "", 1); /* empty: as unset */
	unsetenv("MSMEMSCOPE_CLOCK");
	unsetenv("MSMEMSCOPE_UNWIND");
	setenv("MSMEMSCOPE_UNWIND_CHECK", "1", 1);
	ck_assert_int_eq(mms_config_getenv(&c, NULL, &err), 0);
	ck_assert_uint_eq(c.call_stack, 6);
	ck_assert_uint_eq(c.log_limit, 1u << 20); /* the variable wins */
	ck_assert_int_eq(c.clock, MMS_CONFIG_CLOCK_COUNTER);
	ck_assert_int_eq(c.log_thread, 1);
	ck_assert_int_eq(c.unwind_check, 1);
	/* The text given replaces MSMEMSCOPE_CONFIG's. */
	ck_assert_int_eq(mms_config_getenv(&c, "events=launch", &err), 0);
	ck_assert_uint_eq(c.call_stack, 0);
	ck_assert_uint_eq(c.events, MMS_CONFIG_EV_LAUNCH);
	ck_assert_uint_eq(c.log_limit, 1u << 20);
	/* A bad variable is named as the source. */
	setenv("MSMEMSCOPE_LOG_THREAD", "no", 1);
	ck_assert_int_eq(mms_config_getenv(&c, "", &err), -EINVAL);
	ck_assert_str_eq(err.source, "MSMEMSCOPE_LOG_THREAD");
	ck_assert_str_eq(err.key, "log_thread");
	ck_assert_str_eq(err.value, "no");
	ck_assert_int_eq(c.log_thread, 1);
	unsetenv("MSMEMSCOPE_CONFIG");
	unsetenv("MSMEMSCOPE_LOG_LIMIT");
	unsetenv("MSMEMSCOPE_LOG_THREAD");
	unsetenv("MSMEMSCOPE_UNWIND_CHECK");
	ck_assert_int_eq(mms_config_getenv(&c, NULL, NULL), 0);
	ck_assert_str_eq(text_of(&c), DEFAULT_TEXT);
}
END_TEST

START_TEST(test_format_cut)
{
	mms_config_t c;
	char buf[16];
	size_t n;

	mms_config_default(&c);
	memset(buf, 'x', sizeof buf);
	n = mms_config_format(&c, buf, sizeof buf);
	ck_assert_uint_eq(n, strlen(DEFAULT_TEXT));
	ck_assert_str_eq(buf, "call_stack=0;ev");
	ck_assert_uint_eq(mms_config_format(&c, NULL, 0), n);
}
END_TEST

/* doc/recorder.md lists every key of the table, with its variable. */
START_TEST(test_documented)
{
	static char doc[1 << 20];
	FILE *f = fopen(MMS_SRCDIR "/doc/recorder.md", "r");
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(doc, 1, sizeof doc - 1, f);
	fclose(f);
	doc[n] = 0;
	for (size_t i = 0; i < mms__conf_nkeys; i++) {
		char want[80];

		snprintf(want, sizeof want, "| `%s` |", mms__conf_keys[i].name);
		ck_assert_msg(strstr(doc, want) != NULL, "doc/recorder.md has no row for the key %s",
			      mms__conf_keys[i].name);
		if (mms__conf_keys[i].env) {
			snprintf(want, sizeof want, "`%s`", mms__conf_keys[i].env);
			ck_assert_msg(strstr(doc, want) != NULL, "doc/recorder.md does not name %s",
				      mms__conf_keys[i].env);
		}
	}
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("config");

	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_bad_values);
	tcase_add_test(tc, test_unknown_keys);
	tcase_add_test(tc, test_getenv);
	tcase_add_test(tc, test_format_cut);
	tcase_add_test(tc, test_documented);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(config_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
