/*-------------------------------------------------------------------------
 *
 * highwater.h
 *	  The high-water marks: no id with a later timestamp has been issued.
 *
 * Each family has one mark, persisted in flake.hwm and logged in WAL before
 * generators may issue ids up to it.  The functions take the marks' shared
 * state and the lock that serializes their moves as arguments; shmem.c owns
 * both.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_HIGHWATER_H
#define FLAKE_HIGHWATER_H

#include "port/atomics.h"
#include "storage/lwlock.h"

/*
 * How far ahead of issued timestamps the marks are persisted: one fsync per
 * chunk under steady load, and after a restart ids may carry a timestamp up
 * to a chunk ahead of the clock.
 */
#define FLAKE_HWM_CHUNK_MS 1000
#define FLAKE_HWM_CHUNK_S 10

/*
 * flake's WAL resource manager, from the range for extensions (128-255).
 * It must be entered on the PostgreSQL wiki page CustomWALResourceManagers
 * before a release, so that no other extension takes it.  This record
 * carries the three marks (FlakeMarks) after a move; the rekey claims have
 * a record of their own (claims.h).
 */
#define FLAKE_RMGR_ID		211
#define FLAKE_RMGR_NAME		"flake"
#define XLOG_FLAKE_MARKS	0x00

typedef enum FlakeHwm
{
	FLAKE_HWM_SNOWFLAKE,		/* flake_next(): Unix ms */
	FLAKE_HWM_RANDFLAKE,		/* randflake_next(): Unix seconds */
	FLAKE_HWM_ULIDFLAKE,		/* ulidflake_next(), both forms: Unix ms */
	FLAKE_HWM_FAMILIES
} FlakeHwm;

/*
 * The marks of the three families, by FlakeHwm: what flake.hwm and the WAL
 * record hold.
 */
typedef struct FlakeMarks
{
	int64		mark[FLAKE_HWM_FAMILIES];
} FlakeMarks;

/*
 * The servers (system identifiers) of a flake.hwm: the one that wrote it,
 * and the others whose marks it holds because their file was copied to
 * this server (one per upgrade or dump/restore that carried its file, as
 * many as there were).  id is palloc'd; the caller frees it.
 */
typedef struct FlakeServers
{
	uint64		writer;
	uint32		count;
	uint64	   *id;
} FlakeServers;

/* The persisted marks in shared memory; only ids at or below them exist. */
typedef struct FlakeMarkState
{
	pg_atomic_uint64 mark[FLAKE_HWM_FAMILIES];
} FlakeMarkState;

extern void flake_hwm_read(FlakeMarks *marks);
extern void flake_hwm_servers(FlakeServers *servers);
extern void flake_hwm_init(FlakeMarkState *state, const FlakeMarks *marks);
extern void flake_hwm_current(FlakeMarkState *state, FlakeMarks *marks);
extern void flake_hwm_extend(FlakeMarkState *state, LWLock *lock,
							 FlakeHwm which, int64 value);
extern void flake_hwm_raise(FlakeMarkState *state, LWLock *lock,
							const FlakeMarks *logged);

/*
 * Make sure a family's persisted mark covers value (its time unit) before
 * an id with that time is returned: on the hot path an atomic read, and
 * once per chunk the lock, the file and WAL of flake_hwm_extend.
 */
static inline void
flake_hwm_cover(FlakeMarkState *state, LWLock *lock, FlakeHwm which,
				int64 value)
{
	if (unlikely(value > (int64) pg_atomic_read_u64(&state->mark[which])))
		flake_hwm_extend(state, lock, which, value);
}

#endif							/* FLAKE_HIGHWATER_H */
