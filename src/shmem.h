/*-------------------------------------------------------------------------
 *
 * shmem.h
 *	  Server-wide state in shared memory, and the parts families add to it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_SHMEM_H
#define FLAKE_SHMEM_H

#include "port/atomics.h"
#include "storage/lwlock.h"

#include "hwm.h"
#include "layout.h"
#include "state.h"

/*
 * What every family shares, present only when the library is preloaded:
 * the persisted marks, read on the hot path, on a cache line of their own,
 * and the lock that serializes moving them and other rare writes.
 */
typedef struct FlakeSharedState
{
	union
	{
		FlakeMarkState value;
		char		pad[PG_CACHE_LINE_SIZE];
	}			marks;
	LWLock	   *lock;

	/*
	 * Whether the families' state has been raised to the marks as they stood
	 * when recovery ended (WAL replay may raise the marks after shared memory
	 * was set up from flake.hwm).  Under the lock.
	 */
	bool		floors_final;

	/* what is wrong with flake's files (state.c), under the lock */
	FlakeState	state;

	/*
	 * The layout recorded in flake.layout (layout_read: there and intact),
	 * what reading it found, and where flake_next() stands with it; under the
	 * lock.
	 */
	FlakeLayout layout;
	bool		layout_read;
	FlakeFileProblem layout_problem;
	FlakeLayoutStatus layout_status;
} FlakeSharedState;

/*
 * A family's own part of shared memory.  The callbacks run in the
 * postmaster (startup), and under the lock (raise): in the first backend
 * to generate after recovery, and where the marks rose while the server
 * runs (another server's state taken over, a damaged file repaired), while
 * generators of the family may run.
 */
typedef struct FlakeShmemPart
{
	const char *name;
	Size		(*size) (void);
	/* attach to the part; when fresh, set it up just above the marks */
	void		(*startup) (void *part, bool fresh, const FlakeMarks *marks);

	/*
	 * raise the state just above marks that moved (flake_raise_last); NULL
	 * for a part whose state the marks do not bound
	 */
	void		(*raise) (const FlakeMarks *marks);
} FlakeShmemPart;

/*
 * What to do when flake is not preloaded: add it to the libraries already
 * listed, since a line of its own would replace them.
 */
#define FLAKE_PRELOAD_HINT \
	"Add flake to shared_preload_libraries in postgresql.conf, after the libraries already listed (for example shared_preload_libraries = 'pg_stat_statements,flake'), and restart the server."

extern FlakeSharedState *flake_shared;
extern bool flake_recovery_checked;
extern void flake_shmem_init(void);
extern void flake_shmem_add_part(const FlakeShmemPart *part);
extern void flake_require_shared(void);
extern void flake_check_recovery(const char *generator);
extern void flake_shmem_raise(void);
extern void flake_take_over_check(const char *function, const char *why);
extern void flake_take_over_state(const FlakeOtherState *other,
								  const FlakeServers *shown, Datum *values,
								  bool *nulls);

/*
 * Refuse to generate during recovery: a standby would issue its primary's
 * ids; and in a database carried from another server without its marks.
 * A backend checks until both pass once (a server does not go back into
 * recovery without a restart, a backend does not change databases), so
 * after that this is a branch.
 */
static inline void
flake_refuse_in_recovery(const char *generator)
{
	if (unlikely(!flake_recovery_checked))
		flake_check_recovery(generator);
}

/*
 * Raise a generator's last value to floor, also while generators advance
 * it: by compare-and-swap, so that a generator's own compare-and-swap from
 * a value below floor fails, and it takes its next id above floor.
 */
static inline void
flake_raise_last(pg_atomic_uint64 *last, uint64 floor)
{
	uint64		seen = pg_atomic_read_u64(last);

	while (seen < floor && !pg_atomic_compare_exchange_u64(last, &seen, floor))
		;
}

#endif							/* FLAKE_SHMEM_H */
