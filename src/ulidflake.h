/*-------------------------------------------------------------------------
 *
 * ulidflake.h
 *	  The ulidflake layout, and what ulidflake.c offers the files above it.
 *
 * Plain C without PostgreSQL headers.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_ULIDFLAKE_H
#define FLAKE_ULIDFLAKE_H

#include <stdint.h>

/*
 * A ulidflake is a non-negative int64: 43 bits of milliseconds since
 * 2024-01-01T00:00:00Z, then 20 bits of entropy, whose low 5 bits carry the
 * scalability id (sid) in the scalable form.
 */
#define ULIDFLAKE_EPOCH_UNIX_MS		INT64_C(1704067200000)	/* 2024-01-01 */
#define ULIDFLAKE_TIME_BITS			43
#define ULIDFLAKE_ENTROPY_BITS		20
#define ULIDFLAKE_MAX_ENTROPY		((INT64_C(1) << ULIDFLAKE_ENTROPY_BITS) - 1)
#define ULIDFLAKE_SID_BITS			5
#define ULIDFLAKE_MAX_SID			((1 << ULIDFLAKE_SID_BITS) - 1)

extern void ulidflake_add_shmem(void);
extern void ulidflake_raise_last(int64_t value);
extern void ulidflake_check_nonnegative(int64_t value);

#endif							/* FLAKE_ULIDFLAKE_H */
