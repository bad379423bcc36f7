/*-------------------------------------------------------------------------
 *
 * table_ids.c
 *	  The ids a table holds: which columns hold them, and reading them.
 *
 * Ids that arrive from another server (receive.c) or with a restore
 * (take_over_ids.c) decode to their family's time (and node): raising this
 * server's mark and node above every id a database holds is enough for it
 * never to issue one again, with no access to the server that made them.
 *
 * Which columns hold ids: those whose default calls one of flake's
 * generators (flake_next(), ulidflake_next(), randflake_next(), with or
 * without argument; flake.serial_default writes such defaults), of the
 * generator's type or a domain over it; in a partition, also those the
 * defaults of the partitioned tables above it make so (a partition
 * attached without defaults of its own receives rows through its root);
 * and those the table's trigger flake_raise_marks names, whose default is
 * on the publisher only (receive.c).  Randflake ids decrypt with this
 * server's secret, which must then be the sender's.
 *
 * Reading a table runs no code of anyone's: a heap scan, or the end of a
 * btree index with PostgreSQL's own integer operators.  A column of
 * snowflake or ulidflake ids, which grow with time, with such an index is
 * read at the index's end (its newest id, to whose millisecond every node
 * is raised); randflake columns and those without such an index are
 * scanned.  Ids of this server are below its marks, so reading them
 * changes nothing.  A role that is not a superuser may raise the marks up
 * to flake.max_borrow ahead of the clock only.
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
#include "access/relation.h"
#include "catalog/dependency.h"
#include "catalog/pg_am.h"
#include "catalog/pg_opfamily.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_proc.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "clock.h"
#include "compat.h"
#include "origin.h"
#include "randflake.h"
#include "table_ids.h"
#include "shmem.h"
#include "snowflake.h"
#include "snowflake_settings.h"
#include "ulidflake.h"


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
add_default_columns(Relation rel, Relation source, FlakeIdColumn *columns, int *n)
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

/*
 * The column a trigger's argument names, "column=generator" (a column the
 * publisher knows as one of ids: add_trigger), if rel has it with the type
 * the generator returns here (a domain over it too); false otherwise.
 */
bool
flake_id_column_declared(Relation rel, const char *arg, FlakeIdColumn *column)
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
add_declared_columns(Relation rel, FlakeIdColumn *columns, int *n)
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
	funcid = flake_raise_marks_function();
	trigger = OidIsValid(funcid) ? flake_find_trigger(rel, funcid) : NULL;
	for (int i = 0; trigger != NULL && i < trigger->tgnargs; i++)
	{
		FlakeIdColumn column;
		bool		known = false;

		if (!flake_id_column_declared(rel, trigger->tgargs[i], &column))
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
int
flake_id_columns(Relation rel, FlakeIdColumn **columns)
{
	int			n = 0;
	List	   *ancestors = NIL;
	ListCell   *lc;

	if (rel->rd_rel->relispartition)
		ancestors = get_partition_ancestors(RelationGetRelid(rel));

	/* at most one column of ids per attribute */
	*columns = palloc(sizeof(FlakeIdColumn) * Max(RelationGetNumberOfAttributes(rel), 1));
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
bool
flake_decode_id(Relation rel, const FlakeIdColumn *col, Datum value,
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
						 FLAKE_RAISE_MARKS_TRIGGER)));
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
void
flake_raise_to_id(FlakeHwm family, int64 mark, uint64 raw)
{
	flake_hwm_cover(&flake_shared->marks.value, flake_shared->lock, family, mark);
	raise_node(family, raw);
}

/* The function of the trigger, flake_internal.raise_marks(), or InvalidOid. */
Oid
flake_raise_marks_function(void)
{
	Oid			namespace = get_namespace_oid("flake_internal", true);
	Oid			funcid;
	Oid			extension = get_extension_oid("flake", true);

	if (!OidIsValid(namespace) || !OidIsValid(extension))
		return InvalidOid;
	funcid = GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid,
							 CStringGetDatum(FLAKE_RAISE_MARKS_FUNCTION),
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
 * than this server's clock allows (see flake_decode_id): not an error,
 * since a column made one of ids may hold values that are none (a serial
 * key migrated to randflake_next() keeps its numbers), and a restore of
 * such a table must go on.
 */
void
flake_warn_unread(Relation rel, int64 skipped, int64 max_ahead_ms)
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
 * Read every id in the columns of ids of a table (straight from the heap:
 * no code of anyone's runs) into the newest mark of each family, and the
 * rekey claims the ids hold, or where held is NULL raise each id's node
 * above it (the caller covers newest); the number of ids read.  Values too
 * far ahead are refused, or where skipped is given counted there.
 */
int64
flake_scan_ids(Relation rel, const FlakeIdColumn *columns, int ncolumns,
			   int64 max_ahead_ms, int64 *skipped, FlakeMarks *newest,
			   FlakeIdVisitor each, void *arg)
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

			if (!isnull && flake_decode_id(rel, &columns[i], value, max_ahead_ms,
										   skipped, &mark, &raw))
			{
				newest->mark[columns[i].family] = Max(newest->mark[columns[i].family], mark);
				if (each != NULL)
					each(columns[i].family, DatumGetInt64(value), arg);
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
read_index_end(Relation rel, const FlakeIdColumn *col, Relation index,
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
		if (!flake_decode_id(rel, col, value, max_ahead_ms, skipped, &mark, &raw))
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
named_columns(Relation rel, FlakeIdColumn *columns, int ncolumns, List *named)
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
read_columns(Relation rel, FlakeIdColumn *columns, int ncolumns,
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
		(void) flake_scan_ids(rel, columns, nscanned, max_ahead_ms, &skipped, newest, NULL, NULL);
	}
	flake_warn_unread(rel, skipped, max_ahead_ms);
}

/*
 * The trigger of the function a table has, NULL if none: its name and how
 * it is enabled (TRIGGER_FIRES_*).
 */
Trigger *
flake_find_trigger(Relation rel, Oid funcid)
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
void
flake_read_ids(Oid relid, const CopyStmt *copy)
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
		FlakeIdColumn *columns;
		int			ncolumns;

		if (rel == NULL)
			continue;
		if (rel->rd_rel->relkind == RELKIND_RELATION &&
			(ncolumns = flake_id_columns(rel, &columns)) > 0 &&
			(ncolumns = named_columns(rel, columns, ncolumns,
									  copy != NULL ? copy->attlist : NIL)) > 0)
			read_columns(rel, columns, ncolumns, max_ahead_ms, &newest);
		relation_close(rel, AccessShareLock);
	}
	PopActiveSnapshot();
	flake_hwm_cover_all(&flake_shared->marks.value, flake_shared->lock, &newest);
	list_free(relids);
}
