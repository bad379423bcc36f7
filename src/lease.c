/*-------------------------------------------------------------------------
 *
 * lease.c
 *	  The node slot allocator: backends lease nodes from shared memory.
 *
 * A backend leases one node the first time it generates without naming a
 * node, and holds it until it exits.  Taking a free node is a single
 * compare-and-swap of its owner, so no lock is needed; the node's last
 * issued id stays in shared memory across holders, so a new holder
 * continues above its predecessor.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "flake.h"

/*
 * Lease the first free leasable node of nodes[0 .. count - 1] for this
 * backend.  Returns its index, or -1 when every leasable node is taken.
 */
int
flake_lease(FlakeNodePadded *nodes, int count)
{
	for (int i = 0; i < count; i++)
	{
		FlakeNode  *node = &nodes[i].node;
		uint32		free_owner = 0;

		if (node->leasable &&
			pg_atomic_read_u32(&node->owner) == 0 &&
			pg_atomic_compare_exchange_u32(&node->owner, &free_owner,
										   (uint32) MyProcPid))
		{
			node->leased_at = GetCurrentTimestamp();
			pg_atomic_write_u64(&node->issued, 0);
			return i;
		}
	}
	return -1;
}

/*
 * End this backend's lease.  Runs from before_shmem_exit, possibly while
 * exiting on an error, so it takes no lock: clearing the owner is a single
 * atomic store.
 */
void
flake_release(FlakeNode *node)
{
	pg_atomic_write_u32(&node->owner, 0);
}
