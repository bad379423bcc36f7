/*-------------------------------------------------------------------------
 *
 * migrate_rekey.c
 *	  Nodes for the ids that flake_migrate() gives existing rows.
 *
 * Rekeyed ids carry the time of their rows, which lies in the past, where
 * live generation may have issued ids on any node it could lease.  So they
 * are made on the nodes of flake.rekey_nodes, which flake.nodes must leave
 * out, and each rekey claims one of those nodes for the milliseconds it
 * fills: no other rekey of this server (or of a standby promoted in its
 * place, or a restore of it) gets that node for any of them.  The claims
 * are kept in flake.rekeys and in WAL (claims.c) before a claim is
 * returned.  A claim is not given back when the migration rolls back: its
 * range is lost, never handed out twice.
 *
 * The milliseconds are those the table's rows span, read here from the
 * table itself, not taken from the caller: a role allowed to claim cannot
 * take nodes for times its rows do not have.  The rows are read straight
 * from the heap, so no code of the table's (policies, functions) runs.
 *
 * ulidflake ids have no node: a rekey to ulidflake claims one of 32 bands
 * instead, the low 5 bits of the entropy of the ids it gives (recorded as
 * node -1 - band), so that rekeys of the same times differ there.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "claims.h"
#include "clock.h"
#include "compat.h"
#include "settings.h"
#include "shmem.h"
#include "snowflake_settings.h"
#include "state.h"
#include "ulidflake.h"

/* ids of one millisecond in one ulidflake band */
#define FLAKE_REKEY_BAND_SEQUENCE_BITS 15

/* The milliseconds a table's rows span, as a rekey numbers them. */
typedef struct RowSpan
{
	int64		first_ms;
	int64		last_ms;
	int64		rows;
} RowSpan;

/* The lowest free node found so far, and the claims it must not meet. */
typedef struct NodeChoice
{
	const FlakeRekeyClaim *claims;
	uint32		count;
	int64		first_ms;
	int64		last_ms;
	bool		band;			/* choosing a ulidflake band */
	int32		node;			/* -1: none yet */
} NodeChoice;

PG_FUNCTION_INFO_V1(flake_rekey_claim);

/* A value of the time column as a timestamptz, as CAST makes it. */
static TimestampTz
time_of(Datum value, Oid type)
{
	if (type == DATEOID)
		return DatumGetTimestampTz(DirectFunctionCall1(date_timestamptz, value));
	if (type == TIMESTAMPOID)
		return DatumGetTimestampTz(DirectFunctionCall1(timestamp_timestamptz, value));
	return DatumGetTimestampTz(value);
}

/*
 * The milliseconds (since epoch_unix_ms) of the rows of rel whose time in
 * column attnum is one ids can carry: not before the epoch, and not after
 * both the clock and every id issued (newest_unix_ms), past which
 * flake_migrate() takes no row.  The last is moved on as a rekey numbers
 * rows: a millisecond with more rows than it has ids (2^sequence_bits)
 * spills into the next ones, so the rows take at most (rows - 1) >>
 * sequence_bits more.
 */
static RowSpan
row_span(Relation rel, AttrNumber attnum, Oid type, int64 epoch_unix_ms,
		 int64 newest_unix_ms, int sequence_bits)
{
	RowSpan		span = {PG_INT64_MAX, -1, 0};
	TableScanDesc scan;
	TupleTableSlot *slot;

	slot = table_slot_create(rel, NULL);
	scan = flake_table_beginscan(rel, GetActiveSnapshot());
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Datum		value = slot_getattr(slot, attnum, &isnull);
		TimestampTz ts;
		int64		unix_ms;

		CHECK_FOR_INTERRUPTS();
		if (isnull)
			continue;
		ts = time_of(value, type);
		if (TIMESTAMP_NOT_FINITE(ts))
			continue;
		unix_ms = flake_timestamptz_to_unix_ms(ts);
		if (unix_ms < epoch_unix_ms || unix_ms > newest_unix_ms)
			continue;
		span.first_ms = Min(span.first_ms, unix_ms - epoch_unix_ms);
		span.last_ms = Max(span.last_ms, unix_ms - epoch_unix_ms);
		span.rows++;
	}
	table_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	if (span.rows > 0)
		span.last_ms += (span.rows - 1) >> sequence_bits;
	return span;
}

/*
 * The span of the rows of the table relid, which the caller must own, by
 * its time column: a timestamptz, timestamp or date (timestamp and date
 * read in the session's TimeZone, as flake_migrate() casts them).
 */
static RowSpan
table_span(Oid relid, Name column, bool band)
{
	Relation	rel;
	AttrNumber	attnum;
	Oid			type;
	FlakeMarks	marks;
	int64		newest_unix_ms;
	RowSpan		span;

	/* before any lock: a role may not queue locks on others' tables */
	if (!flake_table_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(relid));
	rel = table_open(relid, AccessShareLock);
	if (rel->rd_rel->relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", RelationGetRelationName(rel)),
				 errdetail("Only the rows of a plain table are rekeyed.")));
	attnum = get_attnum(relid, NameStr(*column));
	if (attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						NameStr(*column), RelationGetRelationName(rel))));
	type = getBaseType(get_atttype(relid, attnum));
	if (type != TIMESTAMPTZOID && type != TIMESTAMPOID && type != DATEOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of relation \"%s\" is of type %s",
						NameStr(*column), RelationGetRelationName(rel),
						format_type_be(type)),
				 errhint("Rekey from a timestamptz, timestamp or date column.")));

	flake_hwm_current(&flake_shared->marks.value, &marks);
	newest_unix_ms = Max(flake_clock_unix_ms(),
						 marks.mark[band ? FLAKE_HWM_ULIDFLAKE : FLAKE_HWM_SNOWFLAKE]);
	if (band)
		span = row_span(rel, attnum, type, ULIDFLAKE_EPOCH_UNIX_MS,
						newest_unix_ms, FLAKE_REKEY_BAND_SEQUENCE_BITS);
	else
		span = row_span(rel, attnum, type, snowflake_epoch_unix_ms,
						newest_unix_ms, snowflake_sequence_bits);
	table_close(rel, AccessShareLock);
	return span;
}

/* flake_nodes_foreach callback: take the lowest node no claim meets. */
static void
choose_node(int64 lo, int64 hi, void *arg)
{
	NodeChoice *choice = (NodeChoice *) arg;

	for (int64 n = lo; n <= hi && choice->node < 0; n++)
	{
		bool		taken = false;

		for (uint32 i = 0; i < choice->count && !taken; i++)
			taken = choice->claims[i].node == (choice->band ? -1 - n : n) &&
				choice->claims[i].first_ms <= choice->last_ms &&
				choice->claims[i].last_ms >= choice->first_ms;
		if (!taken)
			choice->node = (int32) n;
	}
}

/*
 * flake_rekey_claim(tbl, time_column, band): claim a node of
 * flake.rekey_nodes for the milliseconds (since flake.epoch) that a rekey
 * of tbl by time_column fills, and return it; with band, a ulidflake band
 * for those milliseconds (since the ulidflake epoch).  NULL when no row
 * has a time ids can carry: there is nothing to claim.
 */
Datum
flake_rekey_claim(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	Name		column = PG_GETARG_NAME(1);
	bool		band = PG_GETARG_BOOL(2);
	NodeChoice	choice;
	FlakeRekeyClaim claim;
	FlakeRekeyClaim *claims;
	RowSpan		span;
	uint32		count;

	flake_require_shared();
	if (!band && *snowflake_rekey_nodes_string == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("flake.rekey_nodes is empty"),
				 errdetail("Rekeyed ids lie in the past, where live ids may exist on every node of flake.nodes, so they are made on nodes reserved for rekeys."),
				 errhint("Leave some nodes out of flake.nodes, here and on every server that shares keys, and name them in flake.rekey_nodes, for example flake.nodes = '0-1015' and flake.rekey_nodes = '1016-1023'; then restart the server.")));
	flake_refuse_in_recovery("flake_rekey_claim()");

	span = table_span(relid, column, band);
	if (span.rows == 0)
		PG_RETURN_NULL();

	LWLockAcquire(flake_shared->lock, LW_EXCLUSIVE);
	/* a flake.rekeys that could not be read may have been put back */
	if (flake_state_retry(&flake_shared->state, &flake_shared->marks.value))
		flake_shmem_raise();
	flake_state_refuse(&flake_shared->state, true);
	claims = flake_claims_read(&count);
	choice.claims = claims;
	choice.count = count;
	choice.first_ms = span.first_ms;
	choice.last_ms = span.last_ms;
	choice.band = band;
	choice.node = -1;
	if (band)
		choose_node(0, FLAKE_REKEY_BANDS - 1, &choice);
	else
		flake_nodes_foreach(snowflake_rekey_nodes_string, snowflake_node_bits,
							choose_node, &choice);
	if (choice.node < 0 && band)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("every ulidflake rekey band has been used by rekeys of these times"),
				 errdetail("Each rekey to ulidflake takes one of %d bands for the milliseconds of its rows.",
						   FLAKE_REKEY_BANDS),
				 errhint("Rekey this table with flake_next.")));
	if (choice.node < 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("every node of flake.rekey_nodes has been used by rekeys of these times"),
				 errdetail("flake.rekey_nodes is \"%s\"; each rekey takes a node for the milliseconds of its rows.",
						   snowflake_rekey_nodes_string),
				 errhint("Reserve more nodes in flake.rekey_nodes, leaving them out of flake.nodes on every server that shares keys, and restart the server.")));

	memset(&claim, 0, sizeof(claim));
	claim.first_ms = span.first_ms;
	claim.last_ms = span.last_ms;
	claim.node = band ? -1 - choice.node : choice.node;
	flake_claims_add(&claim, 1);
	LWLockRelease(flake_shared->lock);

	PG_RETURN_INT32(choice.node);
}
