/*-------------------------------------------------------------------------
 *
 * random.h
 *	  Buffered cryptographically strong randomness.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_RANDOM_H
#define FLAKE_RANDOM_H

#define FLAKE_RANDOM_BUFSIZE 1024

extern uint8 flake_random_buf[];
extern int	flake_random_pos;
extern void flake_random_refill(void);

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

#endif							/* FLAKE_RANDOM_H */
