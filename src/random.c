/*-------------------------------------------------------------------------
 *
 * random.c
 *	  Buffered cryptographically strong randomness.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "random.h"

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
