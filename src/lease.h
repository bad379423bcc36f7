/*-------------------------------------------------------------------------
 *
 * lease.h
 *	  The node slot allocator: backends lease nodes of a family's node space.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_LEASE_H
#define FLAKE_LEASE_H

#include "datatype/timestamp.h"
#include "port/atomics.h"

/*
 * One node of a family's node space, in shared memory.  The Snowflake
 * family has one for every node, each on a cache line of its own so that
 * backends generating on different nodes do not contend; the Randflake
 * family has one for each node of flake.randflake_nodes, packed.
 *
 * Several backends may hold a node at once: each family advances "last"
 * only by compare-and-swap, so holders never issue the same id.
 */
typedef struct FlakeNode
{
	/*
	 * Snowflake: (timestamp << sequence bits) | sequence of the last id
	 * issued.  Randflake: (second << 17) | sequence of the last id reserved
	 * by any holder.
	 */
	pg_atomic_uint64 last;
	/* ids issued since the node was last leased while free */
	pg_atomic_uint64 issued;
	/* Randflake: monotonic ms at which "last" entered its second */
	pg_atomic_uint64 second_started;
	TimestampTz leased_at;		/* when it was last leased while free */
	pg_atomic_uint32 holders;	/* backends holding the node */
	pg_atomic_uint32 owner;		/* pid of the backend that leased it while
								 * free, until that backend lets go; or 0 */
	int32		id;				/* node id, or -1 when it is not leasable */
} FlakeNode;

typedef union FlakeNodePadded
{
	FlakeNode	node;
	char		pad[PG_CACHE_LINE_SIZE];
} FlakeNodePadded;

/* A family's nodes, as the allocator and the flake_leases view see them. */
typedef struct FlakeNodeSpace
{
	const char *generator;		/* the generator's SQL name */
	FlakeNode  *first;
	Size		stride;			/* bytes from one node to the next */
	int			count;
	int			sequence_bits;	/* below the time in "last" */
	TimestampTz (*to_timestamptz) (int64 time); /* of the time in "last" */
} FlakeNodeSpace;

static inline FlakeNode *
flake_node_at(const FlakeNodeSpace *space, int i)
{
	return (FlakeNode *) ((char *) space->first + i * space->stride);
}

extern void flake_node_init(FlakeNode *node, int32 id);
extern FlakeNode *flake_lease(const FlakeNodeSpace *space,
							  bool (*held) (const FlakeNode *node));
extern void flake_release(FlakeNode *node);
extern void flake_lease_citus_share(FlakeNodeSpace *space, int space_bits,
									int share_bits, const char *setting);
extern bool flake_lease_own_node(int64 node, const char *setting_name,
								 const char *setting, int bits,
								 bool (*citus) (int *first, int *count),
								 const char **own);

#endif							/* FLAKE_LEASE_H */
