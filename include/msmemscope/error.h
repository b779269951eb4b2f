/* SPDX-License-Identifier: MIT */
/* msmemscope/error.h: the replay library's error codes and mms_strerror().
 *
 * Functions of the replay library return 0 (or a count) on success and a
 * negative error code on failure: -errno for system errors, or one of the
 * MMS_E* codes below. mms_strerror() explains any of them. The library
 * never prints or exits. */
#ifndef MSMEMSCOPE_API_ERROR_H
#define MSMEMSCOPE_API_ERROR_H



#ifdef __cplusplus
extern "C" {
#endif

/* Format errors, outside the errno range. */
enum mms_error {
	MMS_EBADMAGIC = -10001,  /* not a msmemscope log */
	MMS_EVERSION = -10002,   /* a log of another format version */
	MMS_ETRUNCATED = -10003, /* the file ends inside its header or a chunk */
	MMS_ECORRUPT = -10004,   /* bytes that do not decode */
	MMS_EORDER = -10005,     /* events out of order or an address handed out twice */
	MMS_EUSAGE = -10006,     /* an argument the function does not accept */
	MMS_EOVERLOG = -10007,   /* an output file would replace a log being read */
	MMS_ENOTFILE = -10008,   /* an output path that is not a file and cannot be written
	                            in place (a block device, a socket; a database or an
	                            index on a device or a FIFO) */
};

/* Explains an error code returned by this library. Never NULL. */
const char *mms_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* MSMEMSCOPE_API_ERROR_H */
