/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  Server-wide state of the generators, in shared memory.
 *
 * The state is reserved only when flake is in shared_preload_libraries.
 * Code that uses it checks flake_shared for NULL first.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "compat.h"
#include "flake.h"
#include "sparx.h"

FlakeSharedState *flake_shared = NULL;

/* Whether this backend has seen recovery ended; see flake_check_recovery. */
bool		flake_recovery_checked = false;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* The Randflake nodes follow the Snowflake ones. */
static Size
randflake_offset(void)
{
	return MAXALIGN(add_size(offsetof(FlakeSharedState, nodes),
							 mul_size(sizeof(FlakeNodePadded),
									  (Size) 1 << flake_node_bits)));
}

static Size
flake_shmem_size(void)
{
	return add_size(randflake_offset(),
					mul_size(sizeof(FlakeNode),
							 flake_nodes_count(flake_randflake_nodes_string,
											   RANDFLAKE_NODE_BITS)));
}

static void
flake_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(flake_shmem_size());
	RequestNamedLWLockTranche("flake", 1);
}

static void
init_node(FlakeNode *node, int32 id)
{
	pg_atomic_init_u64(&node->last, 0);
	pg_atomic_init_u64(&node->issued, 0);
	pg_atomic_init_u64(&node->second_started, 0);
	pg_atomic_init_u32(&node->holders, 0);
	pg_atomic_init_u32(&node->owner, 0);
	node->leased_at = 0;
	node->id = id;
}

static void
mark_leasable(int64 lo, int64 hi, void *arg)
{
	for (int64 n = lo; n <= hi; n++)
		flake_shared->nodes[n].node.id = (int32) n;
}

static void
add_randflake_nodes(int64 lo, int64 hi, void *arg)
{
	for (int64 n = lo; n <= hi; n++)
		init_node(&flake_shared->randflake[flake_shared->nrandflake++],
				  (int32) n);
}

static void
raise_to(pg_atomic_uint64 *value, uint64 floor)
{
	if (pg_atomic_read_u64(value) < floor)
		pg_atomic_write_u64(value, floor);
}

/*
 * Raise the state of every generator just above the marks: every Snowflake
 * node (leasable or not, for flake_next(node)) to the last sequence of the
 * mark's millisecond, the ulidflake value to the last entropy of its
 * millisecond, and the Randflake nodes to the last sequence of the mark's
 * second.  The next id of each is then above every id issued before.
 * Called only while no generator runs: when shared memory is created, and
 * before the first id after recovery.
 */
static void
raise_floors(const FlakeMarks *marks)
{
	/* a mark past the layout's end (another epoch?) must not wrap */
	int64		snowflake_ms = Min(marks->snowflake_unix_ms - flake_epoch_unix_ms,
								   flake_max_timestamp() + 1);
	int64		ulid_ms = marks->ulidflake_unix_ms - ULID_EPOCH_UNIX_MS;
	int64		randflake_s = Max(marks->randflake_unix_s - RANDFLAKE_EPOCH_UNIX, 0);
	uint64		randflake_floor;

	if (snowflake_ms >= 0)
	{
		uint64		floor = ((uint64) snowflake_ms << flake_sequence_bits) |
			(((uint64) 1 << flake_sequence_bits) - 1);

		for (int i = 0; i < flake_shared->nnodes; i++)
			raise_to(&flake_shared->nodes[i].node.last, floor);
	}

	if (ulid_ms >= 0)
		raise_to(&flake_shared->ulid_last.value,
				 ((uint64) ulid_ms << ULID_ENTROPY_BITS) | ULID_MAX_ENTROPY);

	/*
	 * Randflake nodes end exhausted at the mark's second; having entered it
	 * long ago (second_started 0), they may move on to the next one at once.
	 */
	randflake_floor = ((uint64) randflake_s << RANDFLAKE_SEQUENCE_BITS) |
		RANDFLAKE_MAX_SEQUENCE;
	for (int i = 0; i < flake_shared->nrandflake; i++)
		raise_to(&flake_shared->randflake[i].last, randflake_floor);
}

/*
 * Create the shared state in the postmaster, at start and again after a
 * backend crash.  Every generator starts just above the persisted marks, so
 * no id issued before the restart can be issued again, whatever the clock
 * says now.  WAL replay may raise the marks further (crash recovery, a
 * standby, a restored backup); flake_check_recovery raises the floors to
 * them before the first id.
 */
static void
flake_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	flake_shared = ShmemInitStruct("flake", flake_shmem_size(), &found);
	if (!found)
	{
		FlakeMarks	marks;

		flake_hwm_read(&marks);
		pg_atomic_init_u64(&flake_shared->ulid_last.value, 0);
		pg_atomic_init_u64(&flake_shared->hwm.value.snowflake_ms, marks.snowflake_unix_ms);
		pg_atomic_init_u64(&flake_shared->hwm.value.randflake_s, marks.randflake_unix_s);
		pg_atomic_init_u64(&flake_shared->hwm.value.ulidflake_ms, marks.ulidflake_unix_ms);
		flake_shared->lock = &(GetNamedLWLockTranche("flake"))->lock;
		flake_shared->floors_final = false;
		flake_shared->nnodes = 1 << flake_node_bits;
		for (int i = 0; i < flake_shared->nnodes; i++)
			init_node(&flake_shared->nodes[i].node, -1);
		flake_nodes_foreach(flake_nodes_string, flake_node_bits,
							mark_leasable, NULL);

		flake_shared->randflake = (FlakeNode *) ((char *) flake_shared + randflake_offset());
		flake_shared->nrandflake = 0;
		flake_nodes_foreach(flake_randflake_nodes_string, RANDFLAKE_NODE_BITS,
							add_randflake_nodes, NULL);

		raise_floors(&marks);
	}
	LWLockRelease(AddinShmemInitLock);
}

void
flake_shmem_init(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = flake_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = flake_shmem_startup;
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
				 errhint("Add this line to postgresql.conf and restart the server:\n"
						 "shared_preload_libraries = 'flake'")));
}

/*
 * The slow path of flake_refuse_in_recovery: refuse during recovery, and
 * the first time after it, raise the floors to the marks that WAL replay
 * left (a promoted standby set up its shared memory from the flake.hwm it
 * had at start; crash recovery and a restored backup replay marks too).
 * No generator has run in this shared memory before that, since each one
 * passes here first; one backend raises the floors, under the lock, before
 * any id is issued.
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
		LWLockAcquire(flake_shared->lock, LW_EXCLUSIVE);
		if (!flake_shared->floors_final)
		{
			FlakeMarks	marks;

			flake_hwm_current(&marks);
			raise_floors(&marks);
			flake_shared->floors_final = true;
		}
		LWLockRelease(flake_shared->lock);
	}
	flake_recovery_checked = true;
}
