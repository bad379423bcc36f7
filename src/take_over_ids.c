/*-------------------------------------------------------------------------
 *
 * take_over_ids.c
 *	  flake_take_over_ids(): a restored database's ids take over the servers
 *	  they came from, in that database.
 *
 * It reads every column of ids of the database (a full scan, table_ids.c)
 * and raises the marks to the newest time found, as flake_take_over() does
 * with a stopped server's files (state.c); the servers its flake_origin
 * names are taken over in this database only, recorded there (origin.c),
 * not in flake.hwm.  The old server's rekey claims are in its flake.rekeys,
 * not in the dump; so the ids themselves are claimed: each id on a node of
 * flake.rekey_nodes claims its node, and each ulidflake id its band (any
 * may be a rekey's), for the milliseconds such ids span, merged per node
 * and band.  A later rekey here of those times takes another node or band.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_class.h"
#include "commands/dbcommands.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "claims.h"
#include "origin.h"
#include "table_ids.h"
#include "settings.h"
#include "shmem.h"
#include "snowflake.h"
#include "snowflake_settings.h"
#include "ulidflake.h"


PG_FUNCTION_INFO_V1(flake_take_over_ids);

/*
 * The rekey claims that the ids of a database make, one per node of
 * flake.rekey_nodes and per ulidflake band that its ids use.
 */
typedef struct HeldClaims
{
	bool	   *rekey_node;		/* by node: one of flake.rekey_nodes */
	HTAB	   *claims;			/* HeldClaim by node (-1 - band) */
} HeldClaims;

typedef struct HeldClaim
{
	int32		node;			/* the key */
	FlakeRekeyClaim claim;
} HeldClaim;


/* flake_nodes_foreach callback: mark the nodes lo to hi. */
static void
mark_rekey_nodes(int64 lo, int64 hi, void *arg)
{
	for (int64 n = lo; n <= hi; n++)
		((bool *) arg)[n] = true;
}

static void
held_claims_init(HeldClaims *held)
{
	HASHCTL		ctl;

	held->rekey_node = palloc0(sizeof(bool) << snowflake_node_bits);
	flake_nodes_foreach(snowflake_rekey_nodes_string, snowflake_node_bits,
						mark_rekey_nodes, held->rekey_node);
	ctl.keysize = sizeof(int32);
	ctl.entrysize = sizeof(HeldClaim);
	ctl.hcxt = CurrentMemoryContext;
	held->claims = hash_create("flake held rekey claims", 64, &ctl,
							   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/*
 * Claim for an id the database holds what a rekey of its millisecond could
 * give it again: its node if it is one of flake.rekey_nodes (in ms since
 * flake.epoch), its band if it is a ulidflake (since the ulidflake epoch).
 * No rekey makes randflake ids.  A FlakeIdVisitor: arg is the HeldClaims.
 */
static void
hold_claim(FlakeHwm family, int64 id, void *arg)
{
	HeldClaims *held = (HeldClaims *) arg;
	int32		node;
	int64		ms;
	HeldClaim  *entry;
	bool		found;

	if (family == FLAKE_HWM_SNOWFLAKE)
	{
		node = snowflake_node_of(id);
		if (!held->rekey_node[node])
			return;
		ms = id >> (snowflake_node_bits + snowflake_sequence_bits);
	}
	else if (family == FLAKE_HWM_ULIDFLAKE)
	{
		node = -1 - (int32) (id & (FLAKE_REKEY_BANDS - 1));
		ms = id >> ULIDFLAKE_ENTROPY_BITS;
	}
	else
		return;
	entry = hash_search(held->claims, &node, HASH_ENTER, &found);
	if (!found)
	{
		memset(&entry->claim, 0, sizeof(entry->claim));
		entry->claim.node = node;
		entry->claim.first_ms = entry->claim.last_ms = ms;
	}
	entry->claim.first_ms = Min(entry->claim.first_ms, ms);
	entry->claim.last_ms = Max(entry->claim.last_ms, ms);
}

/* The claims held, as an array for the take-over; their number. */
static uint32
held_claims(HeldClaims *held, FlakeRekeyClaim **claims)
{
	HASH_SEQ_STATUS status;
	HeldClaim  *entry;
	uint32		n = 0;

	*claims = palloc(sizeof(FlakeRekeyClaim) * Max(hash_get_num_entries(held->claims), 1));
	hash_seq_init(&status, held->claims);
	while ((entry = hash_seq_search(&status)) != NULL)
		(*claims)[n++] = entry->claim;
	return n;
}

/*
 * flake_take_over_ids(): take over the servers this database's flake_origin
 * names from the ids the database holds, with no access to those servers:
 * after a restore of a dump of a running server, with the rekey claims its
 * ids hold.  Only in this database: other databases from those servers
 * hold other ids.  Returns the servers, the newest time found per family (NULL
 * where none) and the number of ids read.
 */
Datum
flake_take_over_ids(PG_FUNCTION_ARGS)
{
	FlakeOtherState other;
	FlakeServers origin;
	HeldClaims	held;
	Relation	pg_class;
	TableScanDesc scan;
	HeapTuple	tuple;
	int64		ids = 0;
	TupleDesc	tupdesc;
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, false};

	flake_take_over_check("flake_take_over_ids()",
						  "it reads every table of the database and raises the state the ids of every database depend on.");
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	flake_origin_record_take_over();
	memset(&other, 0, sizeof(other));
	other.servers.id = palloc(0);
	flake_origin_servers(&origin);
	held_claims_init(&held);

	/* every table with a column of ids, read straight from the heap */
	pg_class = table_open(RelationRelationId, AccessShareLock);
	scan = table_beginscan_catalog(pg_class, 0, NULL);
	while (HeapTupleIsValid(tuple = heap_getnext(scan, ForwardScanDirection)))
	{
		Form_pg_class form = (Form_pg_class) GETSTRUCT(tuple);
		Relation	rel;
		FlakeIdColumn *columns;
		int			ncolumns;

		if (form->relkind != RELKIND_RELATION || form->relpersistence == RELPERSISTENCE_TEMP)
			continue;
		rel = table_open(form->oid, AccessShareLock);
		ncolumns = flake_id_columns(rel, &columns);
		if (ncolumns > 0)
			ids += flake_scan_ids(rel, columns, ncolumns, FLAKE_RECEIVE_MAX_AHEAD_MS,
								  NULL, &other.marks, hold_claim, &held);
		pfree(columns);
		table_close(rel, AccessShareLock);
	}
	table_endscan(scan);
	table_close(pg_class, AccessShareLock);

	other.nclaims = held_claims(&held, &other.claims);
	flake_take_over_state(&other, &origin, &values[0], &nulls[0]);
	ereport(LOG,
			(errmsg("flake took over the state of %u other servers from the " INT64_FORMAT " ids of database \"%s\"",
					origin.count, ids, get_database_name(MyDatabaseId))));
	values[4] = Int64GetDatum(ids);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc),
													  values, nulls)));
}
