/* SPDX-License-Identifier: MIT */
/* config.c: the recording configuration a log keeps (its "config" META
 * record), read with the one parser of common/conf.c. */
#include "msmemscope/config.h"
#include "msmemscope/error.h"
#include "msmemscope/log.h"
#include "base-int.h"

MMS__EXPORT int mms_log_config(const mms_log_t *log, mms_config_t *cfg)
{
	const char *text;
	size_t len;

	mms_config_default(cfg);
	if (mms_log_meta(log, "config", &text, &len))
		return MMS_EUSAGE;
	mms_config_parse(cfg, text, len, NULL);
	return 0;
}
