/*-------------------------------------------------------------------------
 *
 * receive.c
 *	  Ids that arrive from another server raise this server's marks.
 *
 * A blue/green cutover moves a database to another server through logical
 * replication while the first keeps running (for a rollback, the other way
 * back later); a dump of a running server is restored elsewhere.  Neither
 * carries flake.hwm, and the receiving server, generating on the same nodes
 * from its own clock, would issue the sender's ids again.  What arrives is
 * the ids themselves, and each one decodes to its family's time (and node):
 * raising this server's mark and node above every id it holds is enough
 * for it never to issue one again, with no access to the sender.
 *
 * Which columns hold ids: those whose default calls one of flake's
 * generators (flake_next(), ulidflake_next(), randflake_next(), with or
 * without argument; flake.serial_default writes such defaults), of the
 * generator's type or a domain over it; in a partition, also those the
 * defaults of the partitioned tables above it make so (a partition
 * attached without defaults of its own receives rows through its root).
 * Randflake ids decrypt with this server's secret, which must then be the
 * sender's.
 *
 * Replication: after CREATE or ALTER SUBSCRIPTION, flake's ProcessUtility
 * hook gives each subscribed table that has such a column the trigger
 * flake_raise_marks, enabled for replica sessions only: it fires in the
 * subscription's apply and table-sync workers and nowhere else, so the
 * generators' hot path does not change.  The function itself does nothing
 * outside those workers: a role that gives its own table the trigger
 * cannot raise the marks.  Per row it decodes each id (a
 * decryption for randflake), reads the mark atomically and raises the
 * node's last value with a compare-and-swap; once per chunk of the mark
 * (hwm.c), the file and WAL.
 *
 * In any order of steps: a table may come to hold ids flake has not read
 * (rows replicated before the extension, its update or a column's
 * default; a partition attached; rows replicated while ENABLE TRIGGER ALL
 * of a --disable-triggers restore had left the trigger firing outside
 * replica sessions; a restore of a dump without flake_origin).  So flake
 * reads the table (a heap scan, no code of anyone's) and raises each id's
 * node, then the marks once, to the newest: when it adds or repairs the
 * trigger (CREATE and ALTER SUBSCRIPTION, CREATE and ALTER EXTENSION),
 * after ALTER TABLE that makes a column one of ids, attaches a partition
 * or enables triggers, and after COPY FROM; an INSERT's constant ids are
 * read at parse analysis.  An application's COPY may come every second
 * into a large table: one that leaves out the columns of ids brings only
 * this server's and is not read, and a column of snowflake or ulidflake
 * ids, which grow with time, with a btree index of PostgreSQL's own
 * integer operators is read at the index's end (its newest id, to whose
 * millisecond every node is raised); only randflake columns and those
 * without such an index are scanned.  Ids of this server are below its
 * marks, so reading them changes nothing; none of this is on the
 * generators' path.
 * A role that is not a superuser may raise the marks up to
 * flake.max_borrow ahead of the clock only.
 *
 * Restore: flake_take_over_ids() reads every such column of the database
 * (a full scan) and raises the marks to the newest time found, as
 * flake_take_over() does with a stopped server's files (state.c); the
 * servers its flake_origin names are taken over in this database only,
 * recorded there (origin.c), not in flake.hwm.  The old server's rekey claims are in its flake.rekeys,
 * not in the dump; so the ids themselves are claimed: each id on a node of
 * flake.rekey_nodes claims its node, and each ulidflake id its band (any
 * may be a rekey's), for the milliseconds such ids span, merged per node
 * and band.  A later rekey here of those times takes another node or band.
 *
 * An id more than FLAKE_RECEIVE_MAX_AHEAD_MS ahead of this server's clock
 * is refused, not taken: it was made with other settings or another secret
 * (its decoded time is noise), or by a server whose clock is that far off;
 * raising the marks to it would stop this server's generators until their
 * clock got there.  The bound also limits what a role that writes a
 * publisher's table can do to the subscriber's generators.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/skey.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/pg_am.h"
#include "catalog/pg_index.h"
#include "catalog/pg_opfamily.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "access/xlog.h"
#include "catalog/partition.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_subscription.h"
#include "catalog/pg_subscription_rel.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "replication/logicalworker.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "claims.h"
#include "clock.h"
#include "compat.h"
#include "hwm.h"
#include "origin.h"
#include "publisher.h"
#include "randflake.h"
#include "receive.h"
#include "settings.h"
#include "shmem.h"
#include "snowflake.h"
#include "snowflake_settings.h"
#include "state.h"
#include "ulidflake.h"

/*
 * How far ahead of this server's clock an id that arrives may be: clocks
 * that far apart (and the ids a sender borrowed ahead) are taken; the
 * generators then wait or refuse until their clock gets there.
 */
#define FLAKE_RECEIVE_MAX_AHEAD_MS	(5 * 60 * 1000)

#define RAISE_MARKS_TRIGGER		"flake_raise_marks"
#define RAISE_MARKS_FUNCTION	"raise_marks"

/* A column that holds ids of a family. */
typedef struct ReceivedColumn
{
	AttrNumber	attnum;
	FlakeHwm	family;
} ReceivedColumn;

/* The columns of a table that hold ids, cached per table. */
typedef struct ReceivedTable
{
	Oid			relid;
	int			ncolumns;
	ReceivedColumn *columns;	/* in CacheMemoryContext */
} ReceivedTable;

static HTAB *received_tables = NULL;


PG_FUNCTION_INFO_V1(flake_raise_marks);
PG_FUNCTION_INFO_V1(flake_take_over_ids);

/* flake's generators, by name, and their families. */
static const struct
{
	const char *name;
	FlakeHwm	family;
}			generators[] = {
	{"flake_next", FLAKE_HWM_SNOWFLAKE},
	{"ulidflake_next", FLAKE_HWM_ULIDFLAKE},
	{"randflake_next", FLAKE_HWM_RANDFLAKE},
};

/* The family of a generator's name; false if it names none. */
static bool
family_of_generator(const char *name, FlakeHwm *family)
{
	for (size_t i = 0; i < lengthof(generators); i++)
		if (name != NULL && strcmp(name, generators[i].name) == 0)
		{
			*family = generators[i].family;
			return true;
		}
	return false;
}

/* The generator a function is, by its family; false if not flake's. */
static bool
generator_family(Oid funcid, FlakeHwm *family)
{
	if (get_func_namespace(funcid) != flake_extension_schema())
		return false;
	return family_of_generator(get_func_name(funcid), family);
}

typedef struct GeneratorCall
{
	Oid			type;			/* the column's type */
	FlakeHwm	family;
	bool		found;
} GeneratorCall;

/* flake_expression_tree_walker: a call of a generator that returns the column's type */
static bool
find_generator(Node *node, GeneratorCall *call)
{
	if (node == NULL)
		return false;
	if (IsA(node, FuncExpr))
	{
		FuncExpr   *func = (FuncExpr *) node;

		if (func->funcresulttype == call->type &&
			generator_family(func->funcid, &call->family))
		{
			call->found = true;
			return true;
		}
	}
	return flake_expression_tree_walker(node, find_generator, call);
}

/*
 * Add to columns[*n] the columns of rel that the defaults of source (rel
 * itself, or a partitioned table above it) make columns of ids, by name.
 * A column typed as a domain over the generator's type holds its ids too.
 */
static void
add_default_columns(Relation rel, Relation source, ReceivedColumn *columns, int *n)
{
	TupleDesc	desc = RelationGetDescr(source);

	for (int i = 0; desc->constr != NULL && i < desc->constr->num_defval; i++)
	{
		AttrDefault *def = &desc->constr->defval[i];
		Form_pg_attribute att = TupleDescAttr(desc, def->adnum - 1);
		GeneratorCall call = {getBaseType(att->atttypid), FLAKE_HWM_SNOWFLAKE, false};
		AttrNumber	attnum = def->adnum;

		if (att->attisdropped)
			continue;
		(void) find_generator(stringToNode(def->adbin), &call);
		if (!call.found)
			continue;
		if (source != rel)
		{
			attnum = get_attnum(RelationGetRelid(rel), NameStr(att->attname));
			if (attnum <= 0 ||
				getBaseType(TupleDescAttr(RelationGetDescr(rel), attnum - 1)->atttypid) != call.type)
				continue;
		}
		for (int j = 0; j < *n; j++)
			if (columns[j].attnum == attnum)
				attnum = InvalidAttrNumber;
		if (attnum == InvalidAttrNumber)
			continue;
		columns[*n].attnum = attnum;
		columns[*n].family = call.family;
		(*n)++;
	}
}

static Oid	raise_marks_function(void);
static Trigger *find_trigger(Relation rel, Oid funcid);

/*
 * The column a trigger's argument names, "column=generator" (a column the
 * publisher knows as one of ids: add_trigger), if rel has it with the type
 * the generator returns here (a domain over it too); false otherwise.
 */
static bool
declared_column(Relation rel, const char *arg, ReceivedColumn *column)
{
	const char *sep = strchr(arg, '=');
	char	   *name;
	Oid			funcid;
	AttrNumber	attnum;

	if (sep == NULL || !family_of_generator(sep + 1, &column->family))
		return false;
	name = pnstrdup(arg, sep - arg);
	attnum = get_attnum(RelationGetRelid(rel), name);
	pfree(name);
	funcid = GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid,
							 CStringGetDatum(sep + 1),
							 PointerGetDatum(buildoidvector(NULL, 0)),
							 ObjectIdGetDatum(flake_extension_schema()));
	if (attnum <= 0 || !OidIsValid(funcid) ||
		getBaseType(TupleDescAttr(RelationGetDescr(rel), attnum - 1)->atttypid) !=
		get_func_rettype(funcid))
		return false;
	column->attnum = attnum;
	return true;
}

/* Add to columns[*n] the columns the trigger's arguments name, once each. */
static void
add_declared_columns(Relation rel, ReceivedColumn *columns, int *n)
{
	TriggerDesc *triggers = rel->trigdesc;
	bool		named = false;
	Oid			funcid;
	Trigger    *trigger;

	/* most tables: no trigger with arguments, and no catalog lookup */
	for (int i = 0; triggers != NULL && i < triggers->numtriggers; i++)
		named |= triggers->triggers[i].tgnargs > 0;
	if (!named)
		return;
	funcid = raise_marks_function();
	trigger = OidIsValid(funcid) ? find_trigger(rel, funcid) : NULL;
	for (int i = 0; trigger != NULL && i < trigger->tgnargs; i++)
	{
		ReceivedColumn column;
		bool		known = false;

		if (!declared_column(rel, trigger->tgargs[i], &column))
			continue;
		for (int j = 0; j < *n; j++)
			known |= columns[j].attnum == column.attnum;
		if (!known)
			columns[(*n)++] = column;
	}
}

/*
 * The columns of a table whose default, or the default of a partitioned
 * table it is a partition of (a partition attached without its own
 * defaults receives the rows routed through its root), calls one of
 * flake's generators, and those its trigger names (the publisher's
 * columns of ids: add_trigger); palloc'd in the current memory context.
 * The defaults are read from the relations' descriptors: no code of
 * anyone's runs.
 */
static int
received_columns(Relation rel, ReceivedColumn **columns)
{
	int			n = 0;
	List	   *ancestors = NIL;
	ListCell   *lc;

	if (rel->rd_rel->relispartition)
		ancestors = get_partition_ancestors(RelationGetRelid(rel));

	/* at most one column of ids per attribute */
	*columns = palloc(sizeof(ReceivedColumn) * Max(RelationGetNumberOfAttributes(rel), 1));
	add_default_columns(rel, rel, *columns, &n);
	foreach(lc, ancestors)
	{
		Relation	ancestor = relation_open(lfirst_oid(lc), AccessShareLock);

		add_default_columns(rel, ancestor, *columns, &n);
		relation_close(ancestor, AccessShareLock);
	}
	list_free(ancestors);
	add_declared_columns(rel, *columns, &n);
	return n;
}

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
			table->ncolumns = received_columns(rel, &table->columns);
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

/* An id as a family's generator names it, and its time. */
static const char *const family_generator[FLAKE_HWM_FAMILIES] = {
	"flake_next()", "randflake_next()", "ulidflake_next()"
};

/*
 * Decode an id of a family: its mark value (the family's unit: ms, or s for
 * randflake) and what raising its node takes (raw); false for a value that
 * is not one of the family's ids (negative).  An id too far ahead of this
 * server's clock is refused, or where skipped is given, counted there and
 * not taken.
 */
static bool
decode_received(Relation rel, const ReceivedColumn *col, Datum value,
				int64 max_ahead_ms, int64 *skipped, int64 *mark, uint64 *raw)
{
	int64		id = DatumGetInt64(value);
	int64		unix_ms;

	switch (col->family)
	{
		case FLAKE_HWM_SNOWFLAKE:
			if (id < 0)
				return false;
			*raw = (uint64) id;
			*mark = unix_ms = snowflake_unix_ms_of(id);
			break;
		case FLAKE_HWM_ULIDFLAKE:
			if (id < 0)
				return false;
			*raw = (uint64) id;
			*mark = unix_ms = (id >> ULIDFLAKE_ENTROPY_BITS) + ULIDFLAKE_EPOCH_UNIX_MS;
			break;
		case FLAKE_HWM_RANDFLAKE:
			*raw = randflake_raw_of(id);
			*mark = (int64) (*raw >> (RANDFLAKE_NODE_BITS + RANDFLAKE_SEQUENCE_BITS)) + RANDFLAKE_EPOCH_UNIX;
			unix_ms = *mark * 1000;
			break;
		default:
			return false;
	}
	if (unix_ms - flake_clock_unix_ms() > max_ahead_ms && skipped != NULL)
	{
		(*skipped)++;
		return false;
	}
	if (unix_ms - flake_clock_unix_ms() > max_ahead_ms)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the %s id " INT64_FORMAT " in column \"%s\" of table \"%s\" was made at %s, later than this server's clock allows",
						family_generator[col->family], id,
						NameStr(TupleDescAttr(RelationGetDescr(rel), col->attnum - 1)->attname),
						RelationGetRelationName(rel),
						timestamptz_to_str(flake_unix_ms_to_timestamptz(unix_ms))),
				 errdetail("flake raises this server's high-water marks above the ids it receives, so that it never issues them again, but not more than " INT64_FORMAT " ms ahead of its clock (%d minutes for a subscription's workers and superusers, flake.max_borrow for other roles). Either the id was made with other settings (flake.epoch, flake.node_bits, flake.sequence_bits) or another flake.randflake_secret than this server's, or by a server whose clock is that far ahead.",
						   max_ahead_ms, FLAKE_RECEIVE_MAX_AHEAD_MS / 60000),
				 errhint("Give both servers the same settings, secret and synchronized clocks; a superuser may load ids that far ahead. If the column's values are not ids of this family, disable the trigger %s on the table, or drop the column's default.",
						 RAISE_MARKS_TRIGGER)));
	return true;
}

/*
 * Raise the node of an id (its family's last value, for ulidflake) above
 * it.  The caller makes the mark cover it.
 */
static void
raise_node(FlakeHwm family, uint64 raw)
{
	switch (family)
	{
		case FLAKE_HWM_SNOWFLAKE:
			snowflake_raise_node((int64) raw);
			break;
		case FLAKE_HWM_ULIDFLAKE:
			ulidflake_raise_last((int64) raw);
			break;
		case FLAKE_HWM_RANDFLAKE:
			randflake_raise_node(raw);
			break;
		default:
			break;
	}
}

/* Raise this server's mark and node above an id: see flake_hwm_cover. */
static void
raise_to(FlakeHwm family, int64 mark, uint64 raw)
{
	flake_hwm_cover(&flake_shared->marks.value, flake_shared->lock, family, mark);
	raise_node(family, raw);
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
		const ReceivedColumn *col = &table->columns[i];
		bool		isnull;
		Datum		value = heap_getattr(tuple, col->attnum,
										 RelationGetDescr(trigdata->tg_relation), &isnull);
		int64		mark;
		uint64		raw;

		if (!isnull && decode_received(trigdata->tg_relation, col, value,
									   FLAKE_RECEIVE_MAX_AHEAD_MS, NULL, &mark, &raw))
			raise_to(col->family, mark, raw);
	}
	return PointerGetDatum(tuple);
}

/* The function of the trigger, flake_internal.raise_marks(), or InvalidOid. */
static Oid
raise_marks_function(void)
{
	Oid			namespace = get_namespace_oid("flake_internal", true);
	Oid			funcid;
	Oid			extension = get_extension_oid("flake", true);

	if (!OidIsValid(namespace) || !OidIsValid(extension))
		return InvalidOid;
	funcid = GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid,
							 CStringGetDatum(RAISE_MARKS_FUNCTION),
							 PointerGetDatum(buildoidvector(NULL, 0)),
							 ObjectIdGetDatum(namespace));
	/* flake's own, not a function someone else put there */
	if (!OidIsValid(funcid) ||
		getExtensionOfObject(ProcedureRelationId, funcid) != extension)
		return InvalidOid;
	return funcid;
}

/*
 * Say that values of a table's columns of ids were not read, being later
 * than this server's clock allows (see decode_received): not an error,
 * since a column made one of ids may hold values that are none (a serial
 * key migrated to randflake_next() keeps its numbers), and a restore of
 * such a table must go on.
 */
static void
warn_skipped(Relation rel, int64 skipped, int64 max_ahead_ms)
{
	if (skipped == 0)
		return;
	ereport(WARNING,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg(INT64_FORMAT " values in the columns of ids of table \"%s\" are later than this server's clock allows, and were not read",
					skipped, RelationGetRelationName(rel)),
			 errdetail("flake raises this server's high-water marks above the ids a table holds, but not more than " INT64_FORMAT " ms ahead of its clock (%d minutes for superusers, flake.max_borrow for other roles). Values made before the column's default called a generator are not ids; ids of another server that far ahead could be issued again once this server's clock gets there.",
					   max_ahead_ms, FLAKE_RECEIVE_MAX_AHEAD_MS / 60000),
			 errhint("If they are ids of another server, synchronize the clocks and run SELECT * FROM flake_take_over_ids() as a superuser.")));
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
read_constant(Relation rel, const ReceivedColumn *col, Node *expr, int64 max_ahead_ms,
			  int64 *skipped)
{
	Const	   *value = constant_of(expr);
	int64		mark;
	uint64		raw;

	if (value != NULL && !value->constisnull &&
		decode_received(rel, col, value->constvalue, max_ahead_ms, skipped, &mark, &raw))
		raise_to(col->family, mark, raw);
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
		const ReceivedColumn *col = &table->columns[i];

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
	warn_skipped(rel, skipped, max_ahead_ms);
	relation_close(rel, NoLock);
}

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
 * No rekey makes randflake ids.
 */
static void
hold_claim(HeldClaims *held, FlakeHwm family, int64 id)
{
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
 * Read every id in the columns of ids of a table (straight from the heap:
 * no code of anyone's runs) into the newest mark of each family, and the
 * rekey claims the ids hold, or where held is NULL raise each id's node
 * above it (the caller covers newest); the number of ids read.  Values too
 * far ahead are refused, or where skipped is given counted there.
 */
static int64
scan_table(Relation rel, const ReceivedColumn *columns, int ncolumns,
		   int64 max_ahead_ms, int64 *skipped, FlakeMarks *newest, HeldClaims *held)
{
	TableScanDesc scan = flake_table_beginscan(rel, GetActiveSnapshot());
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	int64		ids = 0;

	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		for (int i = 0; i < ncolumns; i++)
		{
			bool		isnull;
			Datum		value = slot_getattr(slot, columns[i].attnum, &isnull);
			int64		mark;
			uint64		raw;

			if (!isnull && decode_received(rel, &columns[i], value, max_ahead_ms,
										   skipped, &mark, &raw))
			{
				newest->mark[columns[i].family] = Max(newest->mark[columns[i].family], mark);
				if (held != NULL)
					hold_claim(held, columns[i].family, DatumGetInt64(value));
				else
					raise_node(columns[i].family, raw);
				ids++;
			}
		}
		CHECK_FOR_INTERRUPTS();
	}
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	return ids;
}

/*
 * An index whose end holds a column's newest ids: a btree, valid and
 * ready, led by the column itself (no expression, no predicate), with
 * PostgreSQL's own operator family for integers (bigint) or flake's for
 * ulidflake (int8's comparison), so that no code of anyone's runs in its
 * scan; NULL if the table has none.  Opened with AccessShareLock.
 */
static Relation
newest_index(Relation rel, AttrNumber attnum)
{
	Oid			flake = get_extension_oid("flake", true);
	List	   *indexes = RelationGetIndexList(rel);
	Relation	found = NULL;
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index form = index->rd_index;

		if (found == NULL && index->rd_rel->relam == BTREE_AM_OID &&
			form->indisvalid && form->indisready && form->indislive &&
			form->indkey.values[0] == attnum &&
			((index->rd_opfamily[0] == INTEGER_BTREE_FAM_OID &&
			  index->rd_opcintype[0] == INT8OID) ||
			 (OidIsValid(flake) &&
			  getExtensionOfObject(OperatorFamilyRelationId, index->rd_opfamily[0]) == flake)) &&
			heap_attisnull(index->rd_indextuple, Anum_pg_index_indexprs, NULL) &&
			heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL))
			found = index;
		else
			index_close(index, AccessShareLock);
	}
	list_free(indexes);
	return found;
}

/*
 * Raise the marks above the newest id of a column of snowflake or
 * ulidflake ids, which grow with time, found at the end of its index under
 * the values too far ahead (counted in skipped; negative values, none of
 * them ids, come last).  The table's older ids on other nodes are not
 * read: every node is raised to the newest id's millisecond, as a restart
 * raises them to the mark (ulidflake has one last value).
 */
static void
read_index_end(Relation rel, const ReceivedColumn *col, Relation index,
			   int64 max_ahead_ms, int64 *skipped, FlakeMarks *newest)
{
	ScanDirection direction = (index->rd_indoption[0] & INDOPTION_DESC) ?
	ForwardScanDirection : BackwardScanDirection;
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	IndexScanDesc scan = flake_index_beginscan(rel, index, GetActiveSnapshot(), 1);
	ScanKeyData not_null;

	ScanKeyEntryInitialize(&not_null, SK_ISNULL | SK_SEARCHNOTNULL, 1, InvalidStrategy,
						   InvalidOid, InvalidOid, InvalidOid, (Datum) 0);
	index_rescan(scan, &not_null, 1, NULL, 0);
	while (index_getnext_slot(scan, direction, slot))
	{
		bool		isnull;
		Datum		value = slot_getattr(slot, col->attnum, &isnull);
		int64		mark;
		uint64		raw;

		if (isnull || DatumGetInt64(value) < 0)
			break;
		if (!decode_received(rel, col, value, max_ahead_ms, skipped, &mark, &raw))
		{
			CHECK_FOR_INTERRUPTS();
			continue;
		}
		newest->mark[col->family] = Max(newest->mark[col->family], mark);
		if (col->family == FLAKE_HWM_SNOWFLAKE)
		{
			uint64		ms_part = raw & ~(((uint64) 1 << (snowflake_node_bits + snowflake_sequence_bits)) - 1);

			for (uint64 node = 0; node < ((uint64) 1 << snowflake_node_bits); node++)
				snowflake_raise_node((int64) (ms_part | (node << snowflake_sequence_bits)));
		}
		else
			raise_node(col->family, raw);
		break;
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
}

/*
 * Keep of a table's columns of ids those a COPY names (named: its column
 * list; NIL, every column): a column it leaves out takes its default, ids
 * of this server.  Their number.
 */
static int
named_columns(Relation rel, ReceivedColumn *columns, int ncolumns, List *named)
{
	int			n = 0;

	if (named == NIL)
		return ncolumns;
	for (int i = 0; i < ncolumns; i++)
	{
		const char *name = NameStr(TupleDescAttr(RelationGetDescr(rel),
												 columns[i].attnum - 1)->attname);
		ListCell   *lc;

		foreach(lc, named)
		{
			if (strcmp(strVal(lfirst(lc)), name) == 0)
			{
				columns[n++] = columns[i];
				break;
			}
		}
	}
	return n;
}

/*
 * Raise the marks above the ids of some columns of a table: a column of
 * snowflake or ulidflake ids with an index at whose end its newest ids are
 * (newest_index) through that index, the others (randflake ids are
 * encrypted, their order is not their time's; a restore creates indexes
 * after the data) in one scan of the table.
 */
static void
read_columns(Relation rel, ReceivedColumn *columns, int ncolumns,
			 int64 max_ahead_ms, FlakeMarks *newest)
{
	int64		skipped = 0;
	int			nscanned = 0;

	for (int i = 0; i < ncolumns; i++)
	{
		Relation	index = NULL;

		if (columns[i].family != FLAKE_HWM_RANDFLAKE)
			index = newest_index(rel, columns[i].attnum);
		if (index == NULL)
		{
			columns[nscanned++] = columns[i];
			continue;
		}
		elog(DEBUG1, "flake reads the newest ids of table \"%s\" through index \"%s\"",
			 RelationGetRelationName(rel), RelationGetRelationName(index));
		read_index_end(rel, &columns[i], index, max_ahead_ms, &skipped, newest);
		index_close(index, AccessShareLock);
	}
	if (nscanned > 0)
	{
		elog(DEBUG1, "flake reads the ids of table \"%s\" in a scan",
			 RelationGetRelationName(rel));
		(void) scan_table(rel, columns, nscanned, max_ahead_ms, &skipped, newest, NULL);
	}
	warn_skipped(rel, skipped, max_ahead_ms);
}

/*
 * The trigger of the function a table has, NULL if none: its name and how
 * it is enabled (TRIGGER_FIRES_*).
 */
static Trigger *
find_trigger(Relation rel, Oid funcid)
{
	TriggerDesc *triggers = rel->trigdesc;

	for (int i = 0; triggers != NULL && i < triggers->numtriggers; i++)
		if (triggers->triggers[i].tgfoid == funcid)
			return &triggers->triggers[i];
	return NULL;
}

/*
 * Raise this server's marks and nodes above every id a table already holds
 * (its partitions' for a partitioned table): where it came to hold ids
 * flake has not read, or a column became one of ids.  Ids of this server
 * are below its marks already, so reading them changes nothing.  Values
 * too far ahead (more than flake.max_borrow for roles other than
 * superusers: a role could otherwise hold every generator back) are not
 * read, with a warning.  After a COPY (copy given), only the relations it
 * writes (not the children of a table that is not partitioned) and the
 * columns it names.
 */
static void
read_table(Oid relid, const CopyStmt *copy)
{
	int64		max_ahead_ms = superuser() ? FLAKE_RECEIVE_MAX_AHEAD_MS : snowflake_max_borrow_ms;
	FlakeMarks	newest;
	List	   *relids;
	ListCell   *lc;

	if (flake_shared == NULL || RecoveryInProgress())
		return;
	memset(&newest, 0, sizeof(newest));
	if (copy != NULL && get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE)
		relids = list_make1_oid(relid);
	else
		relids = find_all_inheritors(relid, AccessShareLock, NULL);
	/* the rows the statement just wrote too, and every row committed */
	CommandCounterIncrement();
	PushActiveSnapshot(GetLatestSnapshot());
	foreach(lc, relids)
	{
		Relation	rel = try_relation_open(lfirst_oid(lc), AccessShareLock);
		ReceivedColumn *columns;
		int			ncolumns;

		if (rel == NULL)
			continue;
		if (rel->rd_rel->relkind == RELKIND_RELATION &&
			(ncolumns = received_columns(rel, &columns)) > 0 &&
			(ncolumns = named_columns(rel, columns, ncolumns,
									  copy != NULL ? copy->attlist : NIL)) > 0)
			read_columns(rel, columns, ncolumns, max_ahead_ms, &newest);
		relation_close(rel, AccessShareLock);
	}
	PopActiveSnapshot();
	flake_hwm_cover_all(&flake_shared->marks.value, flake_shared->lock, &newest);
	list_free(relids);
}

/*
 * Of the publisher's columns of ids for a table (declared: "column=generator"),
 * those it has (the generator's type here) and does not count yet (no
 * default of a generator, not named by its trigger): to be named by its
 * trigger.  Where its column lacks the publisher's default, a warning: its
 * application would find no default there after a cutover.
 */
static List *
columns_to_declare(Relation rel, List *declared, const ReceivedColumn *columns, int ncolumns)
{
	List	   *added = NIL;
	ListCell   *lc;

	foreach(lc, declared)
	{
		const char *arg = lfirst(lc);
		ReceivedColumn column;
		bool		known = false;

		if (!declared_column(rel, arg, &column))
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
 * received_columns reads: the trigger is made anew with them.  A trigger
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
	ReceivedColumn *columns;
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
	ncolumns = received_columns(rel, &columns);
	trigger = find_trigger(rel, funcid);
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
	trigger_name = pstrdup(quote_identifier(trigger != NULL ? trigger->tgname : RAISE_MARKS_TRIGGER));
	initStringInfo(&create);
	appendStringInfo(&create, "CREATE TRIGGER " RAISE_MARKS_TRIGGER " BEFORE INSERT OR UPDATE ON %s"
					 " FOR EACH ROW EXECUTE FUNCTION flake_internal." RAISE_MARKS_FUNCTION "(", name);
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
				 errdetail("Only the table's owner can give it the trigger " RAISE_MARKS_TRIGGER ", enabled for replica sessions."),
				 errhint("Have the owner or a superuser run ALTER SUBSCRIPTION ... REFRESH PUBLICATION.")));
		return false;
	}
	if (added != NIL && trigger != NULL &&
		SPI_execute(psprintf("DROP TRIGGER %s ON %s", trigger_name, name), false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not drop trigger %s of table %s", trigger_name, name);
	if (added != NIL || trigger == NULL)
	{
		if (SPI_execute(create.data, false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not add trigger " RAISE_MARKS_TRIGGER " to table %s", name);
		trigger_name = RAISE_MARKS_TRIGGER;
	}
	if (SPI_execute(psprintf("ALTER TABLE %s ENABLE REPLICA TRIGGER %s", name, trigger_name),
					false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not enable trigger %s of table %s for replica sessions", trigger_name, name);
	warn_declared(name, added);
	read_table(relid, NULL);
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
		!OidIsValid(funcid = raise_marks_function()))
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
		read_table(relid, NULL);
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
	read_table(relid, stmt);
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
	funcid = raise_marks_function();
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
			read_table(lfirst_oid(lc), NULL);
		return;
	}

	published = published_columns(subname, ask);
	SPI_connect();
	foreach(lc, relids)
		(void) add_trigger(lfirst_oid(lc), funcid, declared_for(lfirst_oid(lc), published));
	SPI_finish();
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
		ReceivedColumn *columns;
		int			ncolumns;

		if (form->relkind != RELKIND_RELATION || form->relpersistence == RELPERSISTENCE_TEMP)
			continue;
		rel = table_open(form->oid, AccessShareLock);
		ncolumns = received_columns(rel, &columns);
		if (ncolumns > 0)
			ids += scan_table(rel, columns, ncolumns, FLAKE_RECEIVE_MAX_AHEAD_MS,
							  NULL, &other.marks, &held);
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
