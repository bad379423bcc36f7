/*-------------------------------------------------------------------------
 *
 * migrate_online.c
 *	  flake_internal.online_log(): note the keys of the rows the application
 *	  changes while an online migration copies a table.
 *
 * The online migration (client/flake_migrate_online.c and
 * sql/parts/online/) copies each table whose columns change
 * type into a new table, in batches, while the application keeps writing
 * the old one.  This AFTER INSERT OR UPDATE OR DELETE row trigger appends
 * the key of every row written meanwhile (the old and the new key of an
 * UPDATE that changes it) to the table's log, whose rows the migration
 * then copies again.  Only the key is logged: the rows are read from the
 * table when the log is applied, which makes the log small and applying it
 * safe to repeat.
 *
 * The trigger's arguments are the log table's qualified name and the key
 * column's name.  The log is written directly, as the row's own table is, without
 * the privilege checks of an INSERT: the role that writes the table needs
 * no right on the log, and its code never runs.  So the log must be one
 * the migration made for this very table: a heap of one column of the
 * key's type, without indexes, owned by the owner of the table, whose
 * comment (which only that owner may set, as the migration's create step
 * does) names the table's oid.  A role that may only create triggers on a
 * table cannot point this one at another table of its owner.  It is
 * written in C because it runs for every row the application writes
 * during the migration.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "commands/comment.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "utils/datum.h"
#include "utils/regproc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "compat.h"

PG_FUNCTION_INFO_V1(flake_migrate_online_log);

/* Where a trigger logs, looked up once per statement. */
typedef struct LogTarget
{
	Oid			trigger;		/* the trigger this is for */
	Oid			log;			/* the log table */
	AttrNumber	attnum;			/* the key column of the trigger's table */
} LogTarget;

/*
 * The log named by the trigger's first argument and the key column named by
 * its second, checked, kept for the rest of the statement.  The lock taken
 * on the log is held until the transaction ends, so what is checked here
 * stays true until then.
 */
static LogTarget *
log_target(FunctionCallInfo fcinfo, Relation rel, Trigger *trigger)
{
	LogTarget  *target = (LogTarget *) fcinfo->flinfo->fn_extra;
	int			attnum = 0;
	Oid			logid = InvalidOid;
	Relation	log;
	char	   *comment = NULL;

	if (target != NULL && target->trigger == trigger->tgoid)
		return target;
	if (trigger->tgnargs == 2)
		attnum = SPI_fnumber(RelationGetDescr(rel), trigger->tgargs[1]);
	if (attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("trigger \"%s\" on \"%s\": flake_internal.online_log() needs a log table and a key column",
						trigger->tgname, RelationGetRelationName(rel))));
	logid = RangeVarGetRelid(makeRangeVarFromNameList(flake_qualified_name_list(trigger->tgargs[0])),
							 RowExclusiveLock, true);
	log = OidIsValid(logid) ? table_open(logid, NoLock) : NULL;
	if (log != NULL)
		comment = GetComment(logid, RelationRelationId, 0);
	if (log == NULL ||
		log->rd_rel->relkind != RELKIND_RELATION ||
		log->rd_rel->relam != HEAP_TABLE_AM_OID ||
		log->rd_rel->relowner != rel->rd_rel->relowner ||
		log->rd_rel->relhasindex ||
		RelationGetDescr(log)->natts != 1 ||
		TupleDescAttr(RelationGetDescr(log), 0)->atttypid !=
		TupleDescAttr(RelationGetDescr(rel), attnum - 1)->atttypid ||
		comment == NULL ||
		strcmp(comment, psprintf("flake_migrate_online: the log of %u", RelationGetRelid(rel))) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("trigger \"%s\" on \"%s\": flake_internal.online_log() needs a log table and a key column",
						trigger->tgname, RelationGetRelationName(rel)),
				 errdetail("The log is the one flake_migrate_online made for the table: a heap of one column of the key's type, "
						   "without indexes, with the table's owner, marked as its log by its comment.")));
	table_close(log, NoLock);

	target = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(LogTarget));
	target->trigger = trigger->tgoid;
	target->log = logid;
	target->attnum = attnum;
	fcinfo->flinfo->fn_extra = target;
	return target;
}

Datum
flake_migrate_online_log(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Trigger    *trigger;
	Relation	rel;
	Relation	log;
	TupleDesc	desc;
	LogTarget  *target;
	AttrNumber	attnum;
	Form_pg_attribute att;
	Datum		keys[2];
	bool		nulls[2];
	int			nkeys = 0;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_AFTER(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("flake_internal.online_log() must be an AFTER row trigger")));
	trigger = trigdata->tg_trigger;
	rel = trigdata->tg_relation;
	desc = RelationGetDescr(rel);
	target = log_target(fcinfo, rel, trigger);
	attnum = target->attnum;
	att = TupleDescAttr(desc, attnum - 1);

	/* the old key of an UPDATE or DELETE, the new one of an INSERT */
	keys[0] = heap_getattr(trigdata->tg_trigtuple, attnum, desc, &nulls[0]);
	nkeys = 1;
	if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
	{
		keys[1] = heap_getattr(trigdata->tg_newtuple, attnum, desc, &nulls[1]);
		if (nulls[0] != nulls[1] ||
			(!nulls[0] && !datumIsEqual(keys[0], keys[1], att->attbyval, att->attlen)))
			nkeys = 2;
	}

	log = table_open(target->log, RowExclusiveLock);
	for (int i = 0; i < nkeys; i++)
	{
		HeapTuple	entry;

		/* a long key may be stored out of line, which the log cannot point at */
		if (att->attlen == -1 && !nulls[i] && VARATT_IS_EXTERNAL(DatumGetPointer(keys[i])))
			keys[i] = PointerGetDatum(detoast_external_attr((struct varlena *) DatumGetPointer(keys[i])));
		entry = heap_form_tuple(RelationGetDescr(log), &keys[i], &nulls[i]);

		simple_heap_insert(log, entry);
		heap_freetuple(entry);
	}
	table_close(log, NoLock);
	return PointerGetDatum(NULL);
}
