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
 * line for Snowflake and packed for Randflake, hence the stride.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "flake.h"
#include "sparx.h"

/* the columns of flake_leases; version 1.0 declares all but "holders" */
#define LEASE_COLUMNS 7

PG_FUNCTION_INFO_V1(flake_lease_info);

static inline FlakeNode *
node_at(FlakeNode *first, Size stride, int i)
{
	return (FlakeNode *) ((char *) first + i * stride);
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
 * Lease a node of the count nodes at first for this backend: the first free
 * leasable one, or else the one with the fewest holders, sharing it.  Nodes
 * for which held (when given) is true are skipped.  Returns NULL only when
 * there is no other leasable node.  The atomic operations are full
 * barriers, so the node's last id is read after them.
 */
FlakeNode *
flake_lease(FlakeNode *first, Size stride, int count,
			bool (*held) (const FlakeNode *node))
{
	FlakeNode  *least = NULL;
	uint32		least_holders = PG_UINT32_MAX;

	for (int i = 0; i < count; i++)
	{
		FlakeNode  *node = node_at(first, stride, i);
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
 * Add a row to the flake_leases result for each held node of an array.
 */
static void
lease_rows(FlakeNode *first, Size stride, int count,
		   const char *generator, int sequence_bits,
		   TimestampTz (*to_timestamptz) (int64 time),
		   ReturnSetInfo *rsinfo)
{
	for (int i = 0; i < count; i++)
	{
		FlakeNode  *node = node_at(first, stride, i);
		uint32		holders = pg_atomic_read_u32(&node->holders);
		uint32		owner = pg_atomic_read_u32(&node->owner);
		uint64		issued = pg_atomic_read_u64(&node->issued);
		Datum		values[LEASE_COLUMNS];
		bool		nulls[LEASE_COLUMNS] = {0};

		if (holders == 0)
			continue;
		values[0] = CStringGetTextDatum(generator);
		values[1] = Int32GetDatum(node->id);
		values[2] = Int32GetDatum((int32) owner);
		nulls[2] = (owner == 0);
		values[3] = TimestampTzGetDatum(node->leased_at);
		values[4] = TimestampTzGetDatum(to_timestamptz((int64) (pg_atomic_read_u64(&node->last) >> sequence_bits)));
		nulls[4] = (issued == 0);
		values[5] = Int64GetDatum((int64) issued);
		values[6] = Int32GetDatum((int32) holders);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

static TimestampTz
snowflake_to_timestamptz(int64 ms)
{
	return flake_unix_ms_to_timestamptz(flake_epoch_unix_ms + ms);
}

static TimestampTz
randflake_to_timestamptz(int64 s)
{
	return flake_unix_ms_to_timestamptz((RANDFLAKE_EPOCH_UNIX + s) * 1000);
}

/*
 * Rows of the flake_leases view: one per held node of either family.  A
 * Randflake holder adds its ids to the node's count when it reserves the
 * next range of sequence numbers, so its row lags by at most a range.
 *
 * Version 1.0 of the SQL declares the first six columns only; the rows are
 * built to the declared shape, so that both versions work with one library.
 */
Datum
flake_lease_info(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != LEASE_COLUMNS &&
		rsinfo->setDesc->natts != LEASE_COLUMNS - 1)
		elog(ERROR, "flake_lease_info() declared with %d columns",
			 rsinfo->setDesc->natts);
	if (flake_shared == NULL)
		PG_RETURN_VOID();
	lease_rows(&flake_shared->nodes[0].node, sizeof(FlakeNodePadded),
			   flake_shared->nnodes, "flake_next", flake_sequence_bits,
			   snowflake_to_timestamptz, rsinfo);
	lease_rows(flake_shared->randflake, sizeof(FlakeNode),
			   flake_shared->nrandflake, "randflake_next",
			   RANDFLAKE_SEQUENCE_BITS, randflake_to_timestamptz, rsinfo);
	PG_RETURN_VOID();
}
