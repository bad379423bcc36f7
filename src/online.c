/*-------------------------------------------------------------------------
 *
 * online.c
 *	  flake_migrate_sync(): keep the new key columns of an online migration
 *	  equal to the old ones while the application writes.
 *
 * The online migration (client/flake_migrate_online.c and
 * sql/parts/migrate_online.sql) adds a column of the new type next to each
 * column that changes, fills it in batches, and swaps it in at the end.
 * Until then this BEFORE INSERT OR UPDATE row trigger copies every old
 * column into its new one, so that rows written meanwhile need no second
 * pass.  Each argument is "old:new", two column names of the table.  The
 * old column is a smallint, integer, bigint or whole numeric; the new one a
 * bigint or a ulidflake (stored as a bigint: its cast from bigint only
 * refuses negative values).  It is written in C rather than PL/pgSQL
 * because it runs for every row the application writes during the
 * migration.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/rel.h"

#include "ulidflake.h"

PG_FUNCTION_INFO_V1(flake_migrate_sync);

/* The attribute number of a column named in an argument, or an error. */
static int
sync_column(Relation rel, const char *arg, const char *name)
{
	int			attnum = SPI_fnumber(RelationGetDescr(rel), name);

	if (attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("flake_migrate_sync() argument \"%s\": table \"%s\" has no column \"%s\"",
						arg, RelationGetRelationName(rel), name)));
	return attnum;
}

/* The old column's value as a bigint (NULL stays NULL). */
static int64
sync_value(Oid type, Datum value)
{
	switch (type)
	{
		case INT2OID:
			return DatumGetInt16(value);
		case INT4OID:
			return DatumGetInt32(value);
		case INT8OID:
			return DatumGetInt64(value);
		case NUMERICOID:
			return DatumGetInt64(DirectFunctionCall1(numeric_int8, value));
		default:
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("flake_migrate_sync() copies integer columns, not %s",
							format_type_be(type))));
	}
	pg_unreachable();
}

Datum
flake_migrate_sync(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Trigger    *trigger;
	Relation	rel;
	HeapTuple	tuple;
	int		   *attnums;
	Datum	   *values;
	bool	   *nulls;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!(TRIGGER_FIRED_BY_INSERT(trigdata->tg_event) ||
		  TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event)))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("flake_migrate_sync() must be a BEFORE INSERT OR UPDATE row trigger")));

	trigger = trigdata->tg_trigger;
	rel = trigdata->tg_relation;
	tuple = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ?
		trigdata->tg_newtuple : trigdata->tg_trigtuple;
	attnums = palloc(sizeof(int) * Max(trigger->tgnargs, 1));
	values = palloc(sizeof(Datum) * Max(trigger->tgnargs, 1));
	nulls = palloc(sizeof(bool) * Max(trigger->tgnargs, 1));

	for (int i = 0; i < trigger->tgnargs; i++)
	{
		const char *arg = trigger->tgargs[i];
		char	   *old_name = pstrdup(arg);
		char	   *new_name = strchr(old_name, ':');
		int			old_attnum;
		Oid			new_type;
		bool		isnull;
		Datum		value;

		if (new_name == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("flake_migrate_sync() argument \"%s\" is not old:new", arg)));
		*new_name++ = '\0';
		old_attnum = sync_column(rel, arg, old_name);
		attnums[i] = sync_column(rel, arg, new_name);
		new_type = SPI_gettypeid(RelationGetDescr(rel), attnums[i]);

		value = heap_getattr(tuple, old_attnum, RelationGetDescr(rel), &isnull);
		nulls[i] = isnull;
		values[i] = (Datum) 0;
		if (!isnull)
		{
			int64		id = sync_value(SPI_gettypeid(RelationGetDescr(rel), old_attnum),
										value);

			/* a ulidflake is a bigint that is not negative */
			if (new_type != INT8OID)
				ulidflake_check_nonnegative(id);
			values[i] = Int64GetDatum(id);
		}
	}
	if (trigger->tgnargs > 0)
		tuple = heap_modify_tuple_by_cols(tuple, RelationGetDescr(rel), trigger->tgnargs,
										  attnums, values, nulls);
	return PointerGetDatum(tuple);
}
