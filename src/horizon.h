/*-------------------------------------------------------------------------
 *
 * horizon.h
 *	  The horizon: the lowest time at which an open transaction may still
 *	  commit ids of an ordered family.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_HORIZON_H
#define FLAKE_HORIZON_H

/* The families whose ids sort by time. */
typedef enum FlakeHorizonFamily
{
	FLAKE_HORIZON_SNOWFLAKE,	/* flake_next() */
	FLAKE_HORIZON_ULIDFLAKE,	/* ulidflake_next(), both forms */
	FLAKE_HORIZON_FAMILIES
} FlakeHorizonFamily;

/* Whether this backend's transaction holds each family's horizon. */
extern bool flake_horizon_holding[FLAKE_HORIZON_FAMILIES];

extern void flake_horizon_add_shmem(void);
extern void flake_horizon_start(FlakeHorizonFamily family, int64 unix_ms);
extern void flake_horizon_lower(FlakeHorizonFamily family, int64 unix_ms);
extern int64 flake_horizon_held(FlakeHorizonFamily family);
extern void flake_horizon_refuse_in_recovery(const char *function);

/*
 * Before a generator's first id in a transaction: publish that the
 * transaction's ids are at unix_ms or later, the time of the generator's
 * last value before its compare-and-swap.  Afterwards a branch.
 */
static inline void
flake_horizon_hold(FlakeHorizonFamily family, int64 unix_ms)
{
	if (unlikely(!flake_horizon_holding[family]))
		flake_horizon_start(family, unix_ms);
}

#endif							/* FLAKE_HORIZON_H */
