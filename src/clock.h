/*-------------------------------------------------------------------------
 *
 * clock.h
 *	  The clocks ids are made from, and conversions of their milliseconds.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_CLOCK_H
#define FLAKE_CLOCK_H

#include "datatype/timestamp.h"

/* Milliseconds between the Unix epoch and PostgreSQL's (2000-01-01). */
#define FLAKE_PG_EPOCH_UNIX_MS \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000)

/* The wall clock in milliseconds since the Unix epoch. */
extern int64 flake_clock_unix_ms(void);

/* The system's monotonic clock in milliseconds, for pacing. */
extern int64 flake_clock_monotonic_ms(void);

/* Unix milliseconds as a timestamptz. */
static inline TimestampTz
flake_unix_ms_to_timestamptz(int64 unix_ms)
{
	return (unix_ms - FLAKE_PG_EPOCH_UNIX_MS) * 1000;
}

/*
 * The Unix millisecond a finite timestamptz falls in: rounded down, also
 * before 2000, where timestamptz is negative.
 */
static inline int64
flake_timestamptz_to_unix_ms(TimestampTz ts)
{
	return ts / 1000 - (ts % 1000 < 0) + FLAKE_PG_EPOCH_UNIX_MS;
}

#endif							/* FLAKE_CLOCK_H */
