/*-------------------------------------------------------------------------
 *
 * lease.c
 *	  The node slot allocator: backends lease nodes from shared memory.
 *
 * A backend leases a node the first time it generates without naming a
 * node, and holds it until it exits (a Randflake backend may hold several
 * and lets go of those it no longer needs).  A free node is taken with a
 * single compare-and-swap of its holder count, so no lock is needed.  When
 * every node is held, the backend shares the node with the fewest holders:
 * both families advance a node's last id only by compare-and-swap, so
 * holders of one node never issue the same id, and the node's last id
 * stays in shared memory across holders, so a new holder continues above
 * its predecessors.
 *
 * Both families keep their nodes in arrays of FlakeNode, padded to a cache
 * line for Snowflake and packed for Randflake, hence the stride of a
 * FlakeNodeSpace.  The flake_leases view (lease_info.c) reads the same arrays.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/timestamp.h"

#include "citus.h"
#include "lease.h"
#include "settings.h"

/* Set up a node in fresh shared memory; id -1 for one that is not leasable. */
void
flake_node_init(FlakeNode *node, int32 id)
{
	pg_atomic_init_u64(&node->last, 0);
	pg_atomic_init_u64(&node->issued, 0);
	pg_atomic_init_u64(&node->second_started, 0);
	pg_atomic_init_u32(&node->holders, 0);
	pg_atomic_init_u32(&node->owner, 0);
	node->leased_at = 0;
	node->id = id;
}

/* This backend takes a node that had no holder. */
static void
start_lease(FlakeNode *node)
{
	pg_atomic_write_u32(&node->owner, (uint32) MyProcPid);
	node->leased_at = GetCurrentTimestamp();
	pg_atomic_write_u64(&node->issued, 0);
}

/*
 * Lease a node of a node space for this backend: the first free
 * leasable one, or else the one with the fewest holders, sharing it.  Nodes
 * for which held (when given) is true are skipped.  Returns NULL only when
 * there is no other leasable node.  The atomic operations are full
 * barriers, so the node's last id is read after them.
 */
FlakeNode *
flake_lease(const FlakeNodeSpace *space, bool (*held) (const FlakeNode *node))
{
	FlakeNode  *least = NULL;
	uint32		least_holders = PG_UINT32_MAX;

	for (int i = 0; i < space->count; i++)
	{
		FlakeNode  *node = flake_node_at(space, i);
		uint32		holders;

		if (node->id < 0 || (held != NULL && held(node)))
			continue;
		holders = pg_atomic_read_u32(&node->holders);
		if (holders == 0 &&
			pg_atomic_compare_exchange_u32(&node->holders, &holders, 1))
		{
			start_lease(node);
			return node;
		}
		if (holders < least_holders)
		{
			least = node;
			least_holders = holders;
		}
	}

	/* every node is held: share; its holders may have let go meanwhile */
	if (least != NULL && pg_atomic_fetch_add_u32(&least->holders, 1) == 0)
		start_lease(least);
	return least;
}

/*
 * End this backend's hold of a node.  Runs from before_shmem_exit, possibly
 * while exiting on an error, so it takes no lock.
 */
void
flake_release(FlakeNode *node)
{
	uint32		me = (uint32) MyProcPid;

	(void) pg_atomic_compare_exchange_u32(&node->owner, &me, 0);
	(void) pg_atomic_fetch_sub_u32(&node->holders, 1);
}

/*
 * On Citus, narrow a node space whose nodes are in node order (2^space_bits
 * of them) to the share of this database's Citus group, 2^share_bits nodes
 * (see citus.c); setting names what to configure where the group is beyond
 * the space.  Without Citus the space stays whole.
 */
void
flake_lease_citus_share(FlakeNodeSpace *space, int space_bits, int share_bits,
						const char *setting)
{
	int32		group = flake_citus_group(space->generator);
	int64		first;

	if (group == FLAKE_CITUS_NONE)
		return;
	first = flake_citus_share(group, space_bits, share_bits, space->generator,
							  setting);
	space->first = flake_node_at(space, (int) first);
	space->count = 1 << share_bits;
}

/* A nodes setting, quoted for a message. */
static const char *
nodes_text(const char *setting)
{
	if (setting == NULL || *setting == '\0')
		return "'' (the whole node space)";
	return psprintf("\"%s\"", setting);
}

/*
 * Is node one of this server's own for a family: of its nodes setting
 * (setting_name, of bits-bit nodes), or on Citus with the setting at its
 * default, of its group's share (citus() gives it).  *own says which, for a
 * message.  For the families' own_node functions, which flake_guard() asks.
 */
bool
flake_lease_own_node(int64 node, const char *setting_name, const char *setting, int bits,
					 bool (*citus) (int *first, int *count), const char **own)
{
	int			first;
	int			count;

	if (citus(&first, &count))
	{
		*own = psprintf("this server's Citus group, which generates on nodes %d-%d (%s at its default)",
						first, first + count - 1, setting_name);
		return node >= first && node < first + count;
	}
	*own = psprintf("this server's %s %s", setting_name, nodes_text(setting));
	return flake_nodes_contain(setting ? setting : "", bits, node);
}
