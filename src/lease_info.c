/*-------------------------------------------------------------------------
 *
 * lease_info.c
 *	  flake_lease_info(), the function behind the flake_leases view: which
 *	  nodes are held, by whom, and how busy.  (lease.c leases the nodes.)
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "lease.h"
#include "randflake.h"
#include "snowflake.h"

/* the columns of flake_leases; version 1.0 declares all but "holders" */
#define LEASE_COLUMNS 7

PG_FUNCTION_INFO_V1(flake_lease_info);

/* Add a row to the flake_leases result for each held node of a space. */
static void
lease_rows(const FlakeNodeSpace *space, ReturnSetInfo *rsinfo)
{
	for (int i = 0; i < space->count; i++)
	{
		FlakeNode  *node = flake_node_at(space, i);
		uint32		holders = pg_atomic_read_u32(&node->holders);
		uint32		owner = pg_atomic_read_u32(&node->owner);
		uint64		issued = pg_atomic_read_u64(&node->issued);
		uint64		last = pg_atomic_read_u64(&node->last);
		Datum		values[LEASE_COLUMNS];
		bool		nulls[LEASE_COLUMNS] = {0};

		if (holders == 0)
			continue;
		values[0] = CStringGetTextDatum(space->generator);
		values[1] = Int32GetDatum(node->id);
		values[2] = Int32GetDatum((int32) owner);
		nulls[2] = (owner == 0);
		values[3] = TimestampTzGetDatum(node->leased_at);
		values[4] = TimestampTzGetDatum(space->to_timestamptz((int64) (last >> space->sequence_bits)));
		nulls[4] = (issued == 0);
		values[5] = Int64GetDatum((int64) issued);
		values[6] = Int32GetDatum((int32) holders);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
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
	FlakeNodeSpace space;

	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != LEASE_COLUMNS &&
		rsinfo->setDesc->natts != LEASE_COLUMNS - 1)
		elog(ERROR, "flake_lease_info() declared with %d columns",
			 rsinfo->setDesc->natts);
	if (snowflake_node_space(&space))
		lease_rows(&space, rsinfo);
	if (randflake_node_space(&space))
		lease_rows(&space, rsinfo);
	PG_RETURN_VOID();
}
