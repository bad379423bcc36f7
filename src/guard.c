/*-------------------------------------------------------------------------
 *
 * guard.c
 *	  flake_guard(): refuse replicated rows made on this server's own nodes.
 *
 * Servers that write the same tables must generate on disjoint nodes.  A
 * row that logical replication brings in cannot carry an id made on one of
 * this server's own nodes unless another server generates on that node too,
 * that is, unless the servers' node ranges overlap: the row is refused,
 * before the overlap turns into a unique violation somewhere later.
 *
 * The trigger's arguments name the key columns, each as
 *
 *	  column					a bigint of flake_next() ids (flake.nodes)
 *	  column:randflake			a bigint of randflake_next() ids, decoded with
 *								flake.randflake_secret (flake.randflake_nodes)
 *	  column:ulidflake=SIDS		a ulidflake of ulidflake_next(sid) ids, where
 *								SIDS lists this server's sids, as in 0-3,7
 *
 * It checks rows only in a session that applies replicated changes
 * (session_replication_role = replica, as logical replication's apply
 * workers run); rows written here are this server's own.  So it must be
 * enabled with ENABLE REPLICA or ENABLE ALWAYS, and says so otherwise.
 *
 * It checks only ids new to the table: those of an inserted row, and those
 * an update changes.  An update that keeps an id changes a row that is
 * already here, made here or let in when it arrived; with two-way
 * replication, rows made here come back as such updates, carrying ids of
 * this server's own nodes.
 *
 * On Citus the trigger fires on the shards of a distributed table, on the
 * workers: rows that Citus's own shard moves and splits copy between the
 * cluster's nodes pass (they may have been made on any group, this one's
 * included), messages name the distributed table and trigger rather than a
 * shard's, and where the nodes settings are at their defaults, this
 * server's own nodes are its Citus group's share.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "citus.h"
#include "randflake.h"
#include "settings.h"
#include "snowflake.h"
#include "ulidflake.h"
#include "ulidflake_text.h"

typedef enum GuardFamily
{
	GUARD_SNOWFLAKE,
	GUARD_RANDFLAKE,
	GUARD_ULIDFLAKE
} GuardFamily;

typedef struct GuardColumn
{
	int			attnum;
	const char *name;
	GuardFamily family;
	const char *sids;			/* ulidflake: this server's sids, as given */
	uint32		sid_mask;		/* ulidflake: those sids, one bit each */
} GuardColumn;

typedef struct GuardSpec
{
	Oid			trigger;
	int			ncolumns;
	GuardColumn columns[FLEXIBLE_ARRAY_MEMBER];
} GuardSpec;

PG_FUNCTION_INFO_V1(flake_guard);

static void
add_sids(int64 lo, int64 hi, void *arg)
{
	for (int64 sid = lo; sid <= hi; sid++)
		*(uint32 *) arg |= (uint32) 1 << sid;
}

static void
check_type(Relation rel, const char *arg, int attnum, Oid wanted)
{
	Oid			type = SPI_gettypeid(RelationGetDescr(rel), attnum);

	if (type != wanted)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("flake_guard() argument \"%s\": column \"%s\" of table \"%s\" is %s, not %s",
						arg, SPI_fname(RelationGetDescr(rel), attnum),
						RelationGetRelationName(rel), format_type_be(type),
						format_type_be(wanted))));
}

/* The ulidflake type, in the extension's schema (as this function is). */
static Oid
ulidflake_type(Oid guard_oid)
{
	return GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
						   CStringGetDatum("ulidflake"),
						   ObjectIdGetDatum(get_func_namespace(guard_oid)));
}

/* Parse one argument of the trigger into a column to check. */
static void
parse_argument(Oid guard_oid, Relation rel, const char *arg, GuardColumn *col)
{
	char	   *name = pstrdup(arg);
	char	   *family = strchr(name, ':');
	Oid			type;

	if (family != NULL)
		*family++ = '\0';
	col->attnum = SPI_fnumber(RelationGetDescr(rel), name);
	if (col->attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("flake_guard() argument \"%s\": table \"%s\" has no column \"%s\"",
						arg, RelationGetRelationName(rel), name)));
	col->name = name;
	col->sids = NULL;
	col->sid_mask = 0;
	type = SPI_gettypeid(RelationGetDescr(rel), col->attnum);

	if (family == NULL || strcmp(family, "flake") == 0)
	{
		if (family == NULL && type == ulidflake_type(guard_oid))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("flake_guard() argument \"%s\" needs this server's ulidflake sids", arg),
					 errhint("Write it as '%s:ulidflake=SIDS', where SIDS are the sids this server passes to ulidflake_next(sid), such as 0-3.",
							 name)));
		check_type(rel, arg, col->attnum, INT8OID);
		col->family = GUARD_SNOWFLAKE;
	}
	else if (strcmp(family, "randflake") == 0)
	{
		check_type(rel, arg, col->attnum, INT8OID);
		col->family = GUARD_RANDFLAKE;
	}
	else if (strncmp(family, "ulidflake=", 10) == 0)
	{
		const char *problem;

		check_type(rel, arg, col->attnum, ulidflake_type(guard_oid));
		col->family = GUARD_ULIDFLAKE;
		col->sids = family + 10;
		problem = flake_nodes_problem(col->sids, ULIDFLAKE_SID_BITS);
		if (*col->sids == '\0' || problem != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("flake_guard() argument \"%s\": invalid sids \"%s\"", arg, col->sids),
					 errdetail("Sids are numbers 0 to 31 and ranges of them, such as 0-3,7; here %s.",
							   problem ? problem : "none is given")));
		flake_nodes_foreach(col->sids, ULIDFLAKE_SID_BITS, add_sids, &col->sid_mask);
	}
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("flake_guard() argument \"%s\": unknown id family \"%s\"", arg, family),
				 errhint("Name a column as 'column' (flake_next() ids), 'column:randflake' or 'column:ulidflake=SIDS'.")));
}

/* The parsed arguments, kept for the rest of the statement. */
static GuardSpec *
guard_spec(FunctionCallInfo fcinfo, TriggerData *trigdata)
{
	Trigger    *trigger = trigdata->tg_trigger;
	GuardSpec  *spec = (GuardSpec *) fcinfo->flinfo->fn_extra;
	MemoryContext old;

	if (spec != NULL && spec->trigger == trigger->tgoid)
		return spec;
	if (trigger->tgnargs < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("flake_guard() needs the key columns to check as arguments"),
				 errhint("For example: EXECUTE FUNCTION flake_guard('id').")));

	old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
	spec = palloc(offsetof(GuardSpec, columns) + trigger->tgnargs * sizeof(GuardColumn));
	spec->trigger = trigger->tgoid;
	spec->ncolumns = trigger->tgnargs;
	for (int i = 0; i < trigger->tgnargs; i++)
		parse_argument(fcinfo->flinfo->fn_oid, trigdata->tg_relation,
					   trigger->tgargs[i], &spec->columns[i]);
	MemoryContextSwitchTo(old);
	fcinfo->flinfo->fn_extra = spec;
	return spec;
}

/*
 * The table to name in messages: on a Citus worker the trigger fires on a
 * shard; users know, and run commands on, its distributed table.
 */
static const char *
table_name(Relation rel)
{
	const char *table = flake_citus_shard_table(RelationGetRelationName(rel));

	return table != NULL ? table : RelationGetRelationName(rel);
}

/* The trigger's name as created on the table: a shard's has the shard's suffix. */
static const char *
trigger_name(Relation rel, const Trigger *trigger)
{
	const char *suffix = RelationGetRelationName(rel) + strlen(table_name(rel));
	size_t		suffix_len = strlen(suffix);
	size_t		len = strlen(trigger->tgname);

	if (suffix_len > 0 && len > suffix_len &&
		strcmp(trigger->tgname + len - suffix_len, suffix) == 0)
		return pnstrdup(trigger->tgname, len - suffix_len);
	return trigger->tgname;
}

static void
check_value(Relation rel, const GuardColumn *col, Datum value)
{
	int64		id = DatumGetInt64(value);
	const char *own;

	switch (col->family)
	{
		case GUARD_SNOWFLAKE:
			{
				int64		node;

				if (id < 0)
					return;		/* not a flake id: no node to compare */
				node = snowflake_node_of(id);
				if (snowflake_own_node(node, &own))
					ereport(ERROR,
							(errcode(ERRCODE_CHECK_VIOLATION),
							 errmsg("replicated flake id " INT64_FORMAT " in column \"%s\" of table \"%s\" was made on node " INT64_FORMAT ", one of this server's own nodes",
									id, col->name, table_name(rel), node),
							 errdetail("The server it came from has node " INT64_FORMAT " in its flake.nodes, and so has %s: their ranges overlap, so their ids can collide.",
									   node, own),
							 errhint("Give every server that writes this table a disjoint flake.nodes; flake_node(id) shows which node made an id.")));
				break;
			}
		case GUARD_RANDFLAKE:
			{
				int32		node = randflake_node_of(id);

				if (randflake_own_node(node, &own))
					ereport(ERROR,
							(errcode(ERRCODE_CHECK_VIOLATION),
							 errmsg("replicated randflake id " INT64_FORMAT " in column \"%s\" of table \"%s\" was made on node %d, one of this server's own nodes",
									id, col->name, table_name(rel), node),
							 errdetail("The server it came from has node %d in its flake.randflake_nodes, and so has %s: their ranges overlap, so their ids can collide.",
									   node, own),
							 errhint("Give every server that writes this table a disjoint flake.randflake_nodes, and the same flake.randflake_secret.")));
				break;
			}
		case GUARD_ULIDFLAKE:
			{
				int			sid = (int) (id & ULIDFLAKE_MAX_SID);
				char		encoded[ULIDFLAKE_TEXT_LEN + 1];

				if ((col->sid_mask & ((uint32) 1 << sid)) == 0)
					return;
				ulidflake_encode((uint64) id, encoded);
				ereport(ERROR,
						(errcode(ERRCODE_CHECK_VIOLATION),
						 errmsg("replicated ulidflake id %s in column \"%s\" of table \"%s\" has sid %d, one of this server's own sids",
								encoded, col->name, table_name(rel), sid),
						 errdetail("The server it came from generates with sid %d, and so does this server (sids \"%s\"): their values can collide.",
								   sid, col->sids),
						 errhint("Give every server that writes this table its own ulidflake_next(sid) sids.")));
				break;
			}
	}
}

/* Is this an update that leaves the id in column attnum as it was? */
static bool
kept_by_update(TriggerData *trigdata, int attnum, Datum value)
{
	bool		isnull;
	Datum		old;

	if (!TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
		return false;
	old = heap_getattr(trigdata->tg_trigtuple, attnum,
					   RelationGetDescr(trigdata->tg_relation), &isnull);
	/* a guarded column is a bigint or a ulidflake: an int64 by value */
	return !isnull && DatumGetInt64(old) == DatumGetInt64(value);
}

Datum
flake_guard(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	GuardSpec  *spec;
	HeapTuple	tuple;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("flake_guard() can only be called as a trigger")));
	if (!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!(TRIGGER_FIRED_BY_INSERT(trigdata->tg_event) ||
		  TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event)))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("flake_guard() must be a row trigger on INSERT or UPDATE")));
	if (trigdata->tg_trigger->tgenabled == TRIGGER_FIRES_ON_ORIGIN)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("flake_guard() trigger \"%s\" on table \"%s\" does not fire for replicated rows",
						trigger_name(trigdata->tg_relation, trigdata->tg_trigger),
						table_name(trigdata->tg_relation)),
				 errhint("Enable it for rows applied by replication: ALTER TABLE %s ENABLE REPLICA TRIGGER %s;",
						 quote_identifier(table_name(trigdata->tg_relation)),
						 quote_identifier(trigger_name(trigdata->tg_relation,
													   trigdata->tg_trigger)))));

	tuple = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ?
		trigdata->tg_newtuple : trigdata->tg_trigtuple;
	spec = guard_spec(fcinfo, trigdata);
	if (SessionReplicationRole != SESSION_REPLICATION_ROLE_REPLICA ||
		flake_citus_shard_transfer())
		return PointerGetDatum(tuple);

	for (int i = 0; i < spec->ncolumns; i++)
	{
		bool		isnull;
		Datum		value = heap_getattr(tuple, spec->columns[i].attnum,
										 RelationGetDescr(trigdata->tg_relation),
										 &isnull);

		if (!isnull && !kept_by_update(trigdata, spec->columns[i].attnum, value))
			check_value(trigdata->tg_relation, &spec->columns[i], value);
	}
	return PointerGetDatum(tuple);
}
