/*-------------------------------------------------------------------------
 *
 * lease.c
 *	  The node slot allocator: backends lease nodes from shared memory.
 *
 * A backend leases a node the first time it generates without naming a
 * node, and holds it until it exits.  Taking a free node is a single
 * compare-and-swap of its owner, so no lock is needed; the node's last
 * issued id stays in shared memory across holders, so a new holder
 * continues above its predecessor.
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

PG_FUNCTION_INFO_V1(flake_lease_info);

static inline FlakeNode *
node_at(FlakeNode *first, Size stride, int i)
{
	return (FlakeNode *) ((char *) first + i * stride);
}

/*
 * Lease the first free leasable node of the count nodes at first for this
 * backend.  Returns it, or NULL when every leasable node is taken.  The
 * compare-and-swap is a full barrier, so the node's last id, published by
 * its previous holder before it let go, is read after it.
 */
FlakeNode *
flake_lease(FlakeNode *first, Size stride, int count)
{
	for (int i = 0; i < count; i++)
	{
		FlakeNode  *node = node_at(first, stride, i);
		uint32		free_owner = 0;

		if (node->id >= 0 &&
			pg_atomic_read_u32(&node->owner) == 0 &&
			pg_atomic_compare_exchange_u32(&node->owner, &free_owner,
										   (uint32) MyProcPid))
		{
			node->leased_at = GetCurrentTimestamp();
			pg_atomic_write_u64(&node->issued, 0);
			return node;
		}
	}
	return NULL;
}

/*
 * End this backend's lease.  Runs from before_shmem_exit, possibly while
 * exiting on an error, so it takes no lock: clearing the owner is a single
 * atomic exchange, a full barrier that publishes the node's last id first.
 */
void
flake_release(FlakeNode *node)
{
	(void) pg_atomic_exchange_u32(&node->owner, 0);
}

/*
 * Add a row to the flake_leases result for each leased node of an array.
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
		uint32		owner = pg_atomic_read_u32(&node->owner);
		uint64		issued = pg_atomic_read_u64(&node->issued);
		Datum		values[6];
		bool		nulls[6] = {false, false, false, false, false, false};

		if (owner == 0)
			continue;
		values[0] = CStringGetTextDatum(generator);
		values[1] = Int32GetDatum(node->id);
		values[2] = Int32GetDatum((int32) owner);
		values[3] = TimestampTzGetDatum(node->leased_at);
		values[4] = TimestampTzGetDatum(to_timestamptz((int64) (pg_atomic_read_u64(&node->last) >> sequence_bits)));
		nulls[4] = (issued == 0);
		values[5] = Int64GetDatum((int64) issued);
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
 * Rows of the flake_leases view: one per leased node of either family.
 * A Randflake holder publishes its last id when it starts a second and
 * when it lets go, so its row lags by at most the current second.
 */
Datum
flake_lease_info(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
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
