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

FlakeSharedState *flake_shared = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static Size
flake_shmem_size(void)
{
	return add_size(offsetof(FlakeSharedState, nodes),
					mul_size(sizeof(FlakeNodePadded),
							 (Size) 1 << flake_node_bits));
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
mark_leasable(int64 lo, int64 hi, void *arg)
{
	for (int64 n = lo; n <= hi; n++)
		flake_shared->nodes[n].node.leasable = true;
}

/*
 * Create the shared state in the postmaster, at start and again after a
 * backend crash.  Every node starts just above the persisted high-water
 * mark, so no id issued before the restart can be issued again, whatever
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
		int64		hwm = flake_hwm_read();
		int64		floor_ms = hwm - flake_epoch_unix_ms;
		uint64		floor = 0;

		if (floor_ms >= 0)
			floor = ((uint64) floor_ms << flake_sequence_bits) |
				(((uint64) 1 << flake_sequence_bits) - 1);

		pg_atomic_init_u64(&flake_shared->ulid_last.value, 0);
		pg_atomic_init_u64(&flake_shared->snowflake_hwm.value, hwm);
		flake_shared->lock = &(GetNamedLWLockTranche("flake"))->lock;
		flake_shared->nnodes = 1 << flake_node_bits;
		for (int i = 0; i < flake_shared->nnodes; i++)
		{
			FlakeNode  *node = &flake_shared->nodes[i].node;

			pg_atomic_init_u64(&node->last, floor);
			pg_atomic_init_u64(&node->issued, 0);
			pg_atomic_init_u32(&node->owner, 0);
			node->leasable = false;
			node->leased_at = 0;
		}
		flake_nodes_foreach(flake_nodes_string, flake_node_bits,
							mark_leasable, NULL);
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
