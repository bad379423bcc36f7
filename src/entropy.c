/*-------------------------------------------------------------------------
 *
 * entropy.c
 *	  Buffered cryptographically strong randomness, and the wall clock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <time.h>

#include "flake.h"

uint8		flake_random_buf[FLAKE_RANDOM_BUFSIZE];

/* Starts exhausted, so each backend fills its own buffer on first use. */
int			flake_random_pos = FLAKE_RANDOM_BUFSIZE;

void
flake_random_refill(void)
{
	if (!pg_strong_random(flake_random_buf, FLAKE_RANDOM_BUFSIZE))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate random values")));
	flake_random_pos = 0;
}

int64
flake_clock_unix_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
