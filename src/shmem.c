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

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "compat.h"
#include "flake.h"
#include "sparx.h"

FlakeSharedState *flake_shared = NULL;

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
init_node(FlakeNode *node, int32 id, uint64 last)
{
	pg_atomic_init_u64(&node->last, last);
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

/*
 * Randflake nodes start exhausted at the high-water mark's second, entered
 * long ago, so that they may move on to the next second at once.
 */
static void
add_randflake_nodes(int64 lo, int64 hi, void *arg)
{
	for (int64 n = lo; n <= hi; n++)
		init_node(&flake_shared->randflake[flake_shared->nrandflake++],
				  (int32) n, *(uint64 *) arg);
}

/*
 * Create the shared state in the postmaster, at start and again after a
 * backend crash.  Every node starts just above the persisted high-water
 * marks, so no id issued before the restart can be issued again, whatever
 * the clock says now.
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
		int64		snowflake_hwm;
		int64		randflake_hwm;
		int64		floor_ms;
		int64		floor_s;
		uint64		floor = 0;
		uint64		randflake_floor = 0;

		flake_hwm_read(&snowflake_hwm, &randflake_hwm);
		floor_ms = snowflake_hwm - flake_epoch_unix_ms;
		if (floor_ms >= 0)
			floor = ((uint64) floor_ms << flake_sequence_bits) |
				(((uint64) 1 << flake_sequence_bits) - 1);
		floor_s = Max(randflake_hwm - RANDFLAKE_EPOCH_UNIX, 0);
		randflake_floor = ((uint64) floor_s << RANDFLAKE_SEQUENCE_BITS) |
			RANDFLAKE_MAX_SEQUENCE;

		pg_atomic_init_u64(&flake_shared->ulid_last.value, 0);
		pg_atomic_init_u64(&flake_shared->hwm.value.snowflake_ms, snowflake_hwm);
		pg_atomic_init_u64(&flake_shared->hwm.value.randflake_s, randflake_hwm);
		flake_shared->lock = &(GetNamedLWLockTranche("flake"))->lock;
		flake_shared->nnodes = 1 << flake_node_bits;
		for (int i = 0; i < flake_shared->nnodes; i++)
			init_node(&flake_shared->nodes[i].node, -1, floor);
		flake_nodes_foreach(flake_nodes_string, flake_node_bits,
							mark_leasable, NULL);

		flake_shared->randflake = (FlakeNode *) ((char *) flake_shared + randflake_offset());
		flake_shared->nrandflake = 0;
		flake_nodes_foreach(flake_randflake_nodes_string, RANDFLAKE_NODE_BITS,
							add_randflake_nodes, &randflake_floor);
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
