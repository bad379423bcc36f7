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

#endif							/* FLAKE_HORIZON_H */
