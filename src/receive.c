/*-------------------------------------------------------------------------
 *
 * receive.c
 *	  Ids that arrive from another server raise this server's marks.
 *
 * A blue/green cutover moves a database to another server through logical
 * replication while the first keeps running (for a rollback, the other way
 * back later); a dump of a running server is restored elsewhere.  Neither
 * carries flake.hwm, and the receiving server, generating on the same nodes
 * from its own clock, would issue the sender's ids again.  So the ids that
 * arrive are read (table_ids.c).
 *
 * Replication: after CREATE or ALTER SUBSCRIPTION, flake's ProcessUtility
 * hook gives each subscribed table that has a column of ids the trigger
 * flake_raise_marks, enabled for replica sessions only: it fires in the
 * subscription's apply and table-sync workers and nowhere else, so the
 * generators' hot path does not change.  The function itself does nothing
 * outside those workers: a role that gives its own table the trigger
 * cannot raise the marks.  Per row it decodes each id (a
 * decryption for randflake), reads the mark atomically and raises the
 * node's last value with a compare-and-swap; once per chunk of the mark
 * (hwm.c), the file and WAL.  A column whose default is on the publisher
 * only (DDL is not replicated) is named in the trigger's arguments: the
 * publisher is asked at every subscription command (publisher.c).
 *
 * In any order of steps: a table may come to hold ids flake has not read
 * (rows replicated before the extension, its update or a column's
 * default; a partition attached; rows replicated while ENABLE TRIGGER ALL
 * of a --disable-triggers restore had left the trigger firing outside
 * replica sessions; a restore of a dump without flake_origin).  So flake
 * reads the table and raises each id's node, then the marks once, to the
 * newest: when it adds or repairs the trigger (CREATE, ALTER and DROP
 * SUBSCRIPTION, CREATE and ALTER EXTENSION), after ALTER TABLE that makes
 * a column one of ids, attaches a partition or enables triggers, and after
 * COPY FROM; an INSERT's constant ids are read at parse analysis.  An
 * application's COPY may come every second into a large table: one that
 * leaves out the columns of ids brings only this server's and is not
 * read, and one that brings them is read at an index's end where it can
 * be.  None of this is on the generators' path.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_subscription.h"
#include "catalog/pg_subscription_rel.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "parser/parsetree.h"
#include "replication/logicalworker.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "compat.h"
#include "origin.h"
#include "publisher.h"
#include "receive.h"
#include "table_ids.h"
#include "shmem.h"
#include "snowflake_settings.h"


/* The columns of a table that hold ids, cached per table. */
typedef struct ReceivedTable
{
	Oid			relid;
	int			ncolumns;
	FlakeIdColumn *columns;		/* in CacheMemoryContext */
} ReceivedTable;

static HTAB *received_tables = NULL;


PG_FUNCTION_INFO_V1(flake_raise_marks);

static void
forget_table(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	ReceivedTable *table;

	/*
	 * All of them, whatever the relation: a partition's columns of ids follow
	 * the defaults of its ancestors too.
	 */
	hash_seq_init(&status, received_tables);
	while ((table = hash_seq_search(&status)) != NULL)
	{
		pfree(table->columns);
		(void) hash_search(received_tables, &table->relid, HASH_REMOVE, NULL);
	}
}

/* The columns of a table that hold ids, from the cache when they are there. */
static ReceivedTable *
received_table(Relation rel)
{
	ReceivedTable *table;
	bool		found;

	if (received_tables == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(ReceivedTable);
		received_tables = hash_create("flake received tables", 16, &ctl,
									  HASH_ELEM | HASH_BLOBS);
		CacheRegisterRelcacheCallback(forget_table, (Datum) 0);
	}
	table = hash_search(received_tables, &RelationGetRelid(rel), HASH_ENTER, &found);
	if (!found)
	{
		MemoryContext old = MemoryContextSwitchTo(CacheMemoryContext);

		PG_TRY();
		{
			table->columns = NULL;
			table->ncolumns = flake_id_columns(rel, &table->columns);
		}
		PG_CATCH();
		{
			(void) hash_search(received_tables, &RelationGetRelid(rel), HASH_REMOVE, NULL);
			PG_RE_THROW();
		}
		PG_END_TRY();
		MemoryContextSwitchTo(old);
	}
	return table;
}

/*
 * The trigger flake_raise_marks: before each row a subscription's worker
 * inserts or updates, raise the marks above its ids.
 */
Datum
flake_raise_marks(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	HeapTuple	tuple;
	ReceivedTable *table;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BEFORE(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		TRIGGER_FIRED_BY_DELETE(trigdata->tg_event) ||
		TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("flake_internal.raise_marks() must be a BEFORE INSERT OR UPDATE trigger FOR EACH ROW")));
	tuple = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ?
		trigdata->tg_newtuple : trigdata->tg_trigtuple;

	/*
	 * Only ids a subscription's worker applies: any role may give its own
	 * table this trigger, and a superuser's session may load data with
	 * session_replication_role = replica, but neither is an id that arrived
	 * from another server, and raising the marks to ids a role wrote would
	 * let it stop every database's generators.  A subscription's owner is
	 * made so by a superuser.
	 */
	if (!IsLogicalWorker())
		return PointerGetDatum(tuple);
	flake_require_shared();
	table = received_table(trigdata->tg_relation);
	for (int i = 0; i < table->ncolumns; i++)
	{
		const FlakeIdColumn *col = &table->columns[i];
		bool		isnull;
		Datum		value = heap_getattr(tuple, col->attnum,
										 RelationGetDescr(trigdata->tg_relation), &isnull);
		int64		mark;
		uint64		raw;

		if (!isnull && flake_decode_id(trigdata->tg_relation, col, value,
									   FLAKE_RECEIVE_MAX_AHEAD_MS, NULL, &mark, &raw))
			flake_raise_to_id(col->family, mark, raw);
	}
	return PointerGetDatum(tuple);
}

/*
 * The constant an expression of a column is, under the coercions to a
 * domain or relabels that parse analysis adds; NULL if it is none.
 */
static Const *
constant_of(Node *node)
{
	while (node != NULL && (IsA(node, CoerceToDomain) || IsA(node, RelabelType)))
		node = IsA(node, CoerceToDomain) ?
			(Node *) ((CoerceToDomain *) node)->arg : (Node *) ((RelabelType *) node)->arg;
	return node != NULL && IsA(node, Const) ? (Const *) node : NULL;
}

/* Raise the marks above an id an INSERT names, where it is a constant. */
static void
read_constant(Relation rel, const FlakeIdColumn *col, Node *expr, int64 max_ahead_ms,
			  int64 *skipped)
{
	Const	   *value = constant_of(expr);
	int64		mark;
	uint64		raw;

	if (value != NULL && !value->constisnull &&
		flake_decode_id(rel, col, value->constvalue, max_ahead_ms, skipped, &mark, &raw))
		flake_raise_to_id(col->family, mark, raw);
}

/*
 * After parse analysis of an INSERT (flake's post_parse_analyze hook):
 * raise the marks above the ids it names as constants, in VALUES of one
 * row or of many (a dump made with --inserts, ids copied from elsewhere).
 * Raising them before the rows are in is harmless: ids of this server are
 * below its marks already.  Parameters and expressions are not read.
 */
void
flake_receive_inserted_constants(Query *query)
{
	RangeTblEntry *target;
	int			values_index = 0;
	RangeTblEntry *values = NULL;
	Relation	rel;
	ReceivedTable *table;
	int64		max_ahead_ms;
	int64		skipped = 0;
	ListCell   *lc;

	if (query->commandType != CMD_INSERT || query->resultRelation == 0 ||
		creating_extension || flake_shared == NULL || RecoveryInProgress())
		return;
	target = rt_fetch(query->resultRelation, query->rtable);
	if (target->relkind != RELKIND_RELATION && target->relkind != RELKIND_PARTITIONED_TABLE)
		return;
	foreach(lc, query->rtable)
	{
		if (((RangeTblEntry *) lfirst(lc))->rtekind != RTE_VALUES)
			continue;
		values = lfirst(lc);
		values_index = foreach_current_index(lc) + 1;
	}

	/* locked by parse analysis */
	rel = relation_open(target->relid, NoLock);
	table = received_table(rel);
	max_ahead_ms = superuser() ? FLAKE_RECEIVE_MAX_AHEAD_MS : snowflake_max_borrow_ms;
	for (int i = 0; i < table->ncolumns; i++)
	{
		const FlakeIdColumn *col = &table->columns[i];

		foreach(lc, query->targetList)
		{
			TargetEntry *entry = lfirst_node(TargetEntry, lc);
			ListCell   *row;

			if (entry->resno != col->attnum)
				continue;
			if (values != NULL && IsA(entry->expr, Var) &&
				((Var *) entry->expr)->varno == values_index)
			{
				foreach(row, values->values_lists)
					read_constant(rel, col,
								  list_nth(lfirst(row), ((Var *) entry->expr)->varattno - 1),
								  max_ahead_ms, &skipped);
			}
			else
				read_constant(rel, col, (Node *) entry->expr, max_ahead_ms, &skipped);
		}
	}
	flake_warn_unread(rel, skipped, max_ahead_ms);
	relation_close(rel, NoLock);
}

/*
 * Of the publisher's columns of ids for a table (declared: "column=generator"),
 * those it has (the generator's type here) and does not count yet (no
 * default of a generator, not named by its trigger): to be named by its
 * trigger.  Where its column lacks the publisher's default, a warning: its
 * application would find no default there after a cutover.
 */
static List *
columns_to_declare(Relation rel, List *declared, const FlakeIdColumn *columns, int ncolumns)
{
	List	   *added = NIL;
	ListCell   *lc;

	foreach(lc, declared)
	{
		const char *arg = lfirst(lc);
		FlakeIdColumn column;
		bool		known = false;

		if (!flake_id_column_declared(rel, arg, &column))
			continue;
		for (int j = 0; j < ncolumns; j++)
			known |= columns[j].attnum == column.attnum;
		if (known || list_member(added, makeString(pstrdup(arg))))
			continue;
		added = lappend(added, makeString(pstrdup(arg)));
	}
	return added;
}

static void
warn_declared(const char *table, List *added)
{
	ListCell   *lc;

	foreach(lc, added)
	{
		char	   *arg = strVal(lfirst(lc));
		char	   *sep = strchr(arg, '=');
		char	   *column = pnstrdup(arg, sep - arg);

		ereport(WARNING,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("column \"%s\" of table %s has no flake default here, but its publisher's calls %s()",
						column, table, sep + 1),
				 errdetail("flake now reads the ids that arrive in it, so that this server never issues them again."),
				 errhint("Before this server takes the writes, run ALTER TABLE %s ALTER COLUMN %s SET DEFAULT %s(), as on the publisher.",
						 table, quote_identifier(column), sep + 1)));
	}
}

/*
 * Give a subscribed table the trigger, enabled for replica sessions (the
 * subscription's workers), where it has a column of ids and has none yet,
 * and read the ids it holds already (rows that arrived before flake was
 * installed or updated, or before a column's default made it one of ids).
 * A trigger that ENABLE TRIGGER [ALL] (a restore with --disable-triggers)
 * made fire only outside replica sessions, where it does nothing, is put
 * back, and the table read.  The columns the publisher knows as ones of
 * ids (declared, "column=generator"; NIL where it was not asked) that the
 * table does not count yet are named by the trigger's arguments, which
 * flake_id_columns reads: the trigger is made anew with them.  A trigger
 * disabled (the operator's, for a column whose values are no ids) is left
 * as it is, as is one cloned from a partitioned table's.  As the role that
 * changed the subscription or the table, which must own the table (a
 * superuser does): with too few rights, a warning says what is missing.
 * Whether the table was read.
 */
static bool
add_trigger(Oid relid, Oid funcid, List *declared)
{
	Relation	rel = try_relation_open(relid, AccessShareLock);
	FlakeIdColumn *columns;
	int			ncolumns;
	List	   *added = NIL;
	Trigger    *trigger = NULL;
	StringInfoData create;
	char	   *name;
	char	   *trigger_name;

	if (rel == NULL)
		return false;
	if (rel->rd_rel->relkind != RELKIND_RELATION &&
		rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
	{
		relation_close(rel, AccessShareLock);
		return false;
	}
	ncolumns = flake_id_columns(rel, &columns);
	trigger = flake_find_trigger(rel, funcid);
	if (trigger == NULL ||
		(trigger->tgenabled != TRIGGER_DISABLED && !trigger->tgisclone))
		added = columns_to_declare(rel, declared, columns, ncolumns);
	if ((ncolumns == 0 && added == NIL) ||
		(added == NIL && trigger != NULL &&
		 (trigger->tgenabled == TRIGGER_FIRES_ON_REPLICA ||
		  trigger->tgenabled == TRIGGER_DISABLED)))
	{
		relation_close(rel, AccessShareLock);
		return false;
	}
	name = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
									  RelationGetRelationName(rel));
	trigger_name = pstrdup(quote_identifier(trigger != NULL ? trigger->tgname : FLAKE_RAISE_MARKS_TRIGGER));
	initStringInfo(&create);
	appendStringInfo(&create, "CREATE TRIGGER " FLAKE_RAISE_MARKS_TRIGGER " BEFORE INSERT OR UPDATE ON %s"
					 " FOR EACH ROW EXECUTE FUNCTION flake_internal." FLAKE_RAISE_MARKS_FUNCTION "(", name);
	for (int i = 0; added != NIL && trigger != NULL && i < trigger->tgnargs; i++)
		appendStringInfo(&create, "%s%s", i > 0 ? ", " : "", quote_literal_cstr(trigger->tgargs[i]));
	for (int i = 0; i < list_length(added); i++)
		appendStringInfo(&create, "%s%s", create.data[create.len - 1] == '(' ? "" : ", ",
						 quote_literal_cstr(strVal(list_nth(added, i))));
	appendStringInfoChar(&create, ')');
	relation_close(rel, AccessShareLock);
	if (!flake_table_ownercheck(relid, GetUserId()))
	{
		ereport(WARNING,
				(errmsg("ids that replication brings into table %s will not raise flake's high-water marks", name),
				 errdetail("Only the table's owner can give it the trigger " FLAKE_RAISE_MARKS_TRIGGER ", enabled for replica sessions."),
				 errhint("Have the owner or a superuser run ALTER SUBSCRIPTION ... REFRESH PUBLICATION.")));
		return false;
	}
	if (added != NIL && trigger != NULL &&
		SPI_execute(psprintf("DROP TRIGGER %s ON %s", trigger_name, name), false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not drop trigger %s of table %s", trigger_name, name);
	if (added != NIL || trigger == NULL)
	{
		if (SPI_execute(create.data, false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not add trigger " FLAKE_RAISE_MARKS_TRIGGER " to table %s", name);
		trigger_name = FLAKE_RAISE_MARKS_TRIGGER;
	}
	if (SPI_execute(psprintf("ALTER TABLE %s ENABLE REPLICA TRIGGER %s", name, trigger_name),
					false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not enable trigger %s of table %s for replica sessions", trigger_name, name);
	warn_declared(name, added);
	flake_read_ids(relid, NULL);
	return true;
}

/* The relation a subscription of this database replicates into: relid or one above it. */
static Oid
subscribed_relation(Oid relid)
{
	List	   *candidates = list_make1_oid(relid);
	Oid			found = InvalidOid;
	Relation	catalog;
	SysScanDesc scan;
	HeapTuple	tuple;

	if (get_rel_relispartition(relid))
		candidates = list_concat(candidates, get_partition_ancestors(relid));
	catalog = table_open(SubscriptionRelRelationId, AccessShareLock);
	scan = systable_beginscan(catalog, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Oid			srrelid = ((Form_pg_subscription_rel) GETSTRUCT(tuple))->srrelid;

		if (list_member_oid(candidates, srrelid))
			found = srrelid;
	}
	systable_endscan(scan);
	table_close(catalog, AccessShareLock);
	list_free(candidates);
	return found;
}

/*
 * After ALTER TABLE (flake's ProcessUtility hook): where it made a column
 * one of ids (SET DEFAULT, ADD COLUMN, a type), attached a partition, or
 * enabled triggers (which makes flake_raise_marks fire outside replica
 * sessions, where it does nothing), read the ids the table holds, and give
 * a subscribed table the trigger as a subscription would.
 */
void
flake_receive_altered_table(AlterTableStmt *stmt)
{
	Oid			relid;
	Oid			target;
	Oid			funcid;
	bool		changed = false;
	ListCell   *lc;

	if (creating_extension || flake_shared == NULL ||
		!OidIsValid(flake_extension_schema()) ||
		!OidIsValid(funcid = flake_raise_marks_function()))
		return;
	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);

		switch (cmd->subtype)
		{
			case AT_ColumnDefault:
			case AT_AddColumn:
			case AT_AlterColumnType:
			case AT_AttachPartition:
			case AT_EnableTrig:
			case AT_EnableAlwaysTrig:
			case AT_EnableTrigAll:
			case AT_EnableTrigUser:
				changed = true;
				break;
			default:
				break;
		}
	}
	if (!changed ||
		!OidIsValid(relid = RangeVarGetRelid(stmt->relation, NoLock, true)))
		return;
	target = subscribed_relation(relid);
	SPI_connect();
	if (!OidIsValid(target) || !add_trigger(target, funcid, NIL))
		flake_read_ids(relid, NULL);
	/* a partition attached keeps its own trigger's state */
	if (OidIsValid(target))
	{
		List	   *partitions = find_all_inheritors(target, AccessShareLock, NULL);

		foreach(lc, partitions)
		{
			if (lfirst_oid(lc) != target)
				(void) add_trigger(lfirst_oid(lc), funcid, NIL);
		}
	}
	SPI_finish();
}

/*
 * After COPY ... FROM into a table (flake's ProcessUtility hook): a restore
 * of a dump of some tables or schemas only (pg_dump -t, -n, --data-only)
 * carries no flake_origin, so nothing refuses to generate in the database,
 * and its ids came from another server: read them.  Not the whole table
 * on every COPY of an application: a COPY that leaves out the columns of
 * ids brings none, and an index reads the newest (read_columns).
 */
void
flake_receive_copied_table(CopyStmt *stmt)
{
	Oid			relid;

	if (!stmt->is_from || stmt->relation == NULL || creating_extension ||
		flake_shared == NULL || !OidIsValid(flake_extension_schema()) ||
		!OidIsValid(relid = RangeVarGetRelid(stmt->relation, NoLock, true)))
		return;
	flake_read_ids(relid, stmt);
}

/*
 * The columns of ids the publishers of this database's subscriptions know
 * (FlakePublishedColumn): of the enabled ones, and of the one named (a
 * subscription the statement disables, or drops) unless its slot_name is
 * NONE (the way to drop one whose publisher is gone), unless ask is false
 * (a CREATE SUBSCRIPTION told not to connect).  A publisher that cannot be
 * asked adds none: what the triggers name already stays.  Read from the
 * catalog's tuples: a subscription through a foreign server (PostgreSQL
 * 19) has no connection string there, and is not asked.
 */
static List *
published_columns(const char *subname, bool ask)
{
	Relation	catalog;
	SysScanDesc scan;
	HeapTuple	tuple;
	List	   *publishers = NIL;
	List	   *columns = NIL;
	ListCell   *lc;

	if (!ask)
		return NIL;
	catalog = table_open(SubscriptionRelationId, AccessShareLock);
	scan = systable_beginscan(catalog, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_subscription sub = (Form_pg_subscription) GETSTRUCT(tuple);
		TupleDesc	desc = RelationGetDescr(catalog);
		bool		conninfo_null;
		bool		slot_null;
		bool		publications_null;
		Datum		conninfo = heap_getattr(tuple, Anum_pg_subscription_subconninfo, desc, &conninfo_null);
		Datum		publications = heap_getattr(tuple, Anum_pg_subscription_subpublications, desc, &publications_null);
		Datum	   *names;
		int			nnames;
		List	   *names_list = NIL;

		(void) heap_getattr(tuple, Anum_pg_subscription_subslotname, desc, &slot_null);
		if (sub->subdbid != MyDatabaseId || conninfo_null || publications_null ||
			!(sub->subenabled ||
			  (subname != NULL && !slot_null && strcmp(NameStr(sub->subname), subname) == 0)))
			continue;
		deconstruct_array_builtin(DatumGetArrayTypeP(publications), TEXTOID, &names, NULL, &nnames);
		for (int i = 0; i < nnames; i++)
			names_list = lappend(names_list, makeString(TextDatumGetCString(names[i])));
		publishers = lappend(publishers,
							 list_make2(makeString(TextDatumGetCString(conninfo)), names_list));
	}
	systable_endscan(scan);
	table_close(catalog, AccessShareLock);

	/* asked with the catalog released: a publisher may take its time */
	foreach(lc, publishers)
	{
		List	   *publisher = lfirst(lc);
		List	   *found;

		if (flake_publisher_id_columns(strVal(linitial(publisher)), lsecond(publisher), &found))
			columns = list_concat(columns, found);
	}
	return columns;
}

/* Of the publishers' columns of ids, those of a table by its name: "column=generator". */
static List *
declared_for(Oid relid, List *published)
{
	const char *schema = get_namespace_name(get_rel_namespace(relid));
	const char *table = get_rel_name(relid);
	List	   *declared = NIL;
	ListCell   *lc;

	foreach(lc, published)
	{
		FlakePublishedColumn *column = lfirst(lc);

		if (schema != NULL && table != NULL &&
			strcmp(column->schema, schema) == 0 && strcmp(column->table, table) == 0)
			declared = lappend(declared, psprintf("%s=%s", column->column, column->generator));
	}
	return declared;
}

/*
 * After CREATE or ALTER SUBSCRIPTION, CREATE or ALTER EXTENSION, and
 * before DROP SUBSCRIPTION (flake's ProcessUtility hook): give every table
 * this database's subscriptions replicate into, that has a column of ids,
 * the trigger, before their workers start (they start when the
 * transaction commits).  A column holds ids here where its default says so,
 * or its publisher's: asked at each of these commands (published_columns),
 * the last one of a cutover (DISABLE or DROP) included, since a default
 * set on the publisher after this server's schema was copied is not
 * replicated.  Nothing where flake is not preloaded or not installed in
 * this database.
 */
void
flake_receive_subscribed_tables(const char *subname, bool ask)
{
	Oid			funcid;
	Relation	catalog;
	SysScanDesc scan;
	HeapTuple	tuple;
	List	   *relids = NIL;
	List	   *published;
	ListCell   *lc;

	if (flake_shared == NULL || !OidIsValid(flake_extension_schema()))
		return;
	funcid = flake_raise_marks_function();
	catalog = table_open(SubscriptionRelRelationId, AccessShareLock);
	scan = systable_beginscan(catalog, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
		relids = list_append_unique_oid(relids,
										((Form_pg_subscription_rel) GETSTRUCT(tuple))->srrelid);
	systable_endscan(scan);
	table_close(catalog, AccessShareLock);
	if (relids == NIL)
		return;

	/*
	 * The extension in this database is older than the trigger (1.4) while
	 * this library runs: the rows its subscriptions bring are read at each of
	 * these commands only (the cutover's DISABLE or DROP reads what arrived
	 * until then), and in whole at the update.  Said here, rather than found
	 * after a cutover.
	 */
	if (!OidIsValid(funcid))
	{
		ereport(WARNING,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("flake in this database is older than 1.4: the ids its subscriptions bring are read only at subscription and extension commands"),
				 errdetail("Ids that arrive after this command are not read until the next one: a server that takes the writes without one (ALTER SUBSCRIPTION ... DISABLE, DROP SUBSCRIPTION) would issue them again."),
				 errhint("Run ALTER EXTENSION flake UPDATE in this database: it reads the rows received so far and those after.")));
		foreach(lc, relids)
			flake_read_ids(lfirst_oid(lc), NULL);
		return;
	}

	published = published_columns(subname, ask);
	SPI_connect();
	foreach(lc, relids)
		(void) add_trigger(lfirst_oid(lc), funcid, declared_for(lfirst_oid(lc), published));
	SPI_finish();
}
