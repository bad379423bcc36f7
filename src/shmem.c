/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  Server-wide state of the generators, in shared memory.
 *
 * The state is reserved only when flake is in shared_preload_libraries.
 * Code that uses it checks flake_shared for NULL first.  Each family adds
 * a part of its own from _PG_init (flake_shmem_add_part), so this file
 * knows no family's layout: it reads the marks at start and hands them to
 * every part.  Taking over another server's state (take_over.c,
 * take_over_ids.c) raises the marks and every part under the lock, here.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "tcop/utility.h"
#include "utils/array.h"
#include "utils/timestamp.h"

#include "clock.h"
#include "hwm.h"
#include "layout.h"
#include "origin.h"
#include "shmem.h"
#include "state.h"

/* the Snowflake, ulidflake and Randflake families, and the horizon */
#define FLAKE_MAX_PARTS 4

FlakeSharedState *flake_shared = NULL;

/* Whether this backend has seen recovery ended; see flake_check_recovery. */
bool		flake_recovery_checked = false;

static const FlakeShmemPart *parts[FLAKE_MAX_PARTS];
static int	nparts = 0;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
flake_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(sizeof(FlakeSharedState));
	for (int i = 0; i < nparts; i++)
		RequestAddinShmemSpace(add_size(parts[i]->size(), PG_CACHE_LINE_SIZE));
	RequestNamedLWLockTranche("flake", 1);
}

/*
 * Create the shared state in the postmaster, at start and again after a
 * backend crash.  Every generator starts just above the persisted marks, so
 * no id issued before the restart can be issued again, whatever the clock
 * says now.  WAL replay may raise the marks further (crash recovery, a
 * standby, a restored backup); flake_check_recovery raises the state to
 * them before the first id.  Another server's files copied here to be
 * taken over (flake.rekeys.import, flake.hwm.import) are merged first.
 * Files that cannot be used leave the server running, its generators
 * refused (state.c).
 */
static void
flake_shmem_startup(void)
{
	bool		found;
	FlakeMarks	marks = {0};

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	flake_shared = ShmemInitStruct("flake", sizeof(FlakeSharedState), &found);
	if (!found)
	{
		flake_state_start(&flake_shared->state, &marks);
		flake_hwm_init(&flake_shared->marks.value, &marks);
		flake_shared->lock = &(GetNamedLWLockTranche("flake"))->lock;
		flake_shared->floors_final = false;
		flake_shared->layout_read = flake_layout_read(FLAKE_LAYOUT_FILE,
													  &flake_shared->layout,
													  &flake_shared->layout_problem);

		/*
		 * A flake.layout read that flake.written does not name (that file
		 * lost and made again since, or a crash in between) is recorded
		 * there, as flake_state_start() does for flake.hwm and flake.rekeys:
		 * else a later loss of flake.layout reads as a server from before
		 * 1.5, which takes any layout.
		 */
		if (flake_shared->layout_read)
			flake_datafile_set_written(FLAKE_WRITTEN_LAYOUT);
		flake_shared->layout_status = FLAKE_LAYOUT_UNCHECKED;
	}
	for (int i = 0; i < nparts; i++)
	{
		bool		part_found;
		void	   *part = ShmemInitStruct(parts[i]->name, parts[i]->size(),
										   &part_found);

		parts[i]->startup(part, !part_found, &marks);
	}
	LWLockRelease(AddinShmemInitLock);
}

/* From _PG_init, while shared_preload_libraries are loaded. */
void
flake_shmem_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = flake_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = flake_shmem_startup;
}

/* From _PG_init, after flake_shmem_init: a family's part. */
void
flake_shmem_add_part(const FlakeShmemPart *part)
{
	if (nparts == FLAKE_MAX_PARTS)
		elog(ERROR, "too many parts of flake's shared memory");
	parts[nparts++] = part;
}

/*
 * Refuse to generate without the shared state: ids could then repeat
 * across backends.
 */
void
flake_require_shared(void)
{
	if (flake_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("flake is not loaded through shared_preload_libraries"),
				 errdetail("The id generators keep their state in shared memory, which must be set up at server start."),
				 errhint(FLAKE_PRELOAD_HINT)));
}

/*
 * Refuse to take over another server's state (flake_take_over(),
 * flake_take_over_ids(): the function, and why only superusers may) but to
 * a superuser on a primary, with the shared state.
 */
void
flake_take_over_check(const char *function, const char *why)
{
	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to take over another server's flake state"),
				 errdetail("Only superusers may: %s", why)));
	flake_require_shared();
	PreventCommandIfReadOnly(function);
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot take over another server's flake state during recovery"),
				 errhint("Take it over on the primary: standbys follow it through WAL.")));
}

/* A mark as a timestamptz (unit: ms, or s), NULL where there is none. */
static Datum
mark_datum(int64 mark, int64 ms_per_unit, bool *isnull)
{
	*isnull = mark <= 0;
	return TimestampTzGetDatum(flake_unix_ms_to_timestamptz(mark * ms_per_unit));
}

/*
 * Take over another server's state, and return what the take-over
 * functions show of it in values[0..3] (nulls[0..3]): the servers shown
 * (bigint[]) and the newest time of each family, NULL where it has none.
 */
void
flake_take_over_state(const FlakeOtherState *other, const FlakeServers *shown,
					  Datum *values, bool *nulls)
{
	Datum	   *servers;

	/* no backend passes to its first id until the families are raised */
	LWLockAcquire(flake_shared->lock, LW_EXCLUSIVE);
	flake_state_take_over(&flake_shared->state, &flake_shared->marks.value, other);
	flake_shmem_raise();
	LWLockRelease(flake_shared->lock);

	servers = palloc(sizeof(Datum) * Max(shown->count, 1));
	for (uint32 i = 0; i < shown->count; i++)
		servers[i] = Int64GetDatum((int64) shown->id[i]);
	values[0] = PointerGetDatum(construct_array(servers, shown->count, INT8OID,
												sizeof(int64), FLOAT8PASSBYVAL,
												TYPALIGN_DOUBLE));
	nulls[0] = false;
	values[1] = mark_datum(other->marks.mark[FLAKE_HWM_SNOWFLAKE], 1, &nulls[1]);
	values[2] = mark_datum(other->marks.mark[FLAKE_HWM_ULIDFLAKE], 1, &nulls[2]);
	values[3] = mark_datum(other->marks.mark[FLAKE_HWM_RANDFLAKE], 1000, &nulls[3]);
}

/*
 * Raise every family's state just above the marks, as they are now.  The
 * caller holds the lock exclusively, having raised the marks, so that no
 * backend passes flake_check_recovery to its first id before.
 */
void
flake_shmem_raise(void)
{
	FlakeMarks	marks;

	flake_hwm_current(&flake_shared->marks.value, &marks);
	for (int i = 0; i < nparts; i++)
		if (parts[i]->raise != NULL)
			parts[i]->raise(&marks);
}

/*
 * The slow path of flake_refuse_in_recovery: refuse during recovery, while
 * flake's files cannot be used (state.c: each call reads them again), and
 * in a database carried from another server whose marks this one lacks
 * (origin.c); the first time after recovery, raise every part's state to
 * the marks that WAL replay left (a promoted standby set up its shared
 * memory from the flake.hwm it had at start; crash recovery and a restored
 * backup replay marks too).  No generator has run in this shared memory
 * before that, since each one passes here first; one backend raises the
 * state, under the lock, before any id is issued.  Where the marks rise
 * later (flake_take_over(), a repair), the backend that raises them raises
 * the parts too, under the lock; a backend refused by the origin check
 * takes the lock below before its first id, so it comes after.
 */
void
flake_check_recovery(const char *generator)
{
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot execute %s during recovery", generator),
				 errdetail("This server is a standby or is still replaying WAL; ids made here could repeat its primary's."),
				 errhint("Generate ids on the primary. A standby generates ids once it is promoted.")));

	if (flake_shared != NULL)
	{
		/*
		 * Read without the lock first: a problem is set at start, or in WAL
		 * replay, before any backend gets here; one found later (a take-over
		 * or repair that reads a file damaged meanwhile) refuses the backends
		 * that have not generated yet, and every move of a mark (hwm.c).
		 */
		if (flake_shared->state.generation.set)
		{
			FlakeState	state;

			LWLockAcquire(flake_shared->lock, LW_EXCLUSIVE);
			if (flake_state_retry(&flake_shared->state, &flake_shared->marks.value))
				flake_shmem_raise();
			state = flake_shared->state;
			LWLockRelease(flake_shared->lock);
			flake_state_refuse(&state, false);
		}

		/* a database carried from another server needs that server's marks */
		flake_origin_check();

		LWLockAcquire(flake_shared->lock, LW_EXCLUSIVE);
		if (!flake_shared->floors_final)
		{
			flake_shmem_raise();
			flake_shared->floors_final = true;
		}
		LWLockRelease(flake_shared->lock);
	}
	flake_recovery_checked = true;
}
