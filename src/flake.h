/*-------------------------------------------------------------------------
 *
 * flake.h
 *	  Declarations shared by the files of the flake extension.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_H
#define FLAKE_H

#include "port/atomics.h"
#include "utils/timestamp.h"

/* Milliseconds between the Unix epoch and PostgreSQL's (2000-01-01). */
#define FLAKE_PG_EPOCH_UNIX_MS \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000)

/*
 * Server-wide state, present only when the library is preloaded.  Fields are
 * updated without locks; each is owned by one generator family.
 */
typedef struct FlakeSharedState
{
	pg_atomic_uint64 ulid_last;	/* last ulidflake value issued */
} FlakeSharedState;

/* shmem.c */
extern FlakeSharedState *flake_shared;
extern void flake_shmem_init(void);

/* entropy.c */
extern void flake_random_refill(void);
extern uint8 flake_random_buf[];
extern int	flake_random_pos;

#define FLAKE_RANDOM_BUFSIZE 1024

/*
 * Return one byte of cryptographically strong randomness.  One call of
 * pg_strong_random costs far more than an id, so bytes are drawn in blocks.
 */
static inline uint8
flake_random_byte(void)
{
	if (unlikely(flake_random_pos >= FLAKE_RANDOM_BUFSIZE))
		flake_random_refill();
	return flake_random_buf[flake_random_pos++];
}

/* Wall clock in milliseconds since the Unix epoch. */
extern int64 flake_clock_unix_ms(void);

/* Convert Unix milliseconds to a timestamptz and back. */
static inline TimestampTz
flake_unix_ms_to_timestamptz(int64 unix_ms)
{
	return (unix_ms - FLAKE_PG_EPOCH_UNIX_MS) * 1000;
}

#endif							/* FLAKE_H */
