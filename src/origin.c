/*-------------------------------------------------------------------------
 *
 * origin.c
 *	  Refusing to generate in a database carried from another server
 *	  without that server's marks and claims.
 *
 * The marks (flake.hwm) and the rekey claims (flake.rekeys) live in the
 * data directory, which pg_upgrade and pg_dump do not carry: a database
 * brought to a new server that way holds ids the new server knows nothing
 * of, and with its clock behind it would issue them again.  What those
 * tools do carry is the database's relations, and each database with
 * flake keeps the extension's table flake_internal.flake_origin: the
 * system identifiers of the servers it was created on (its install writes
 * the one it runs on; pg_dump dumps the rows, pg_upgrade keeps the
 * table's file).
 *
 * flake.hwm names the server that wrote it and the servers whose marks it
 * took over: through flake_take_over() from their data directory, or from
 * their files copied here to be taken over at start (state.c).  Those files
 * hold every id the old server issued, in every database, until it
 * stopped: that take-over is the whole server's.  flake_take_over_ids()
 * reads only the ids of one database: its take-over is that database's,
 * recorded in the database itself, in each row of flake_origin as the
 * server that took it over (taken_over_by).  A record goes where the
 * database goes and no further: DROP DATABASE drops it, a restore of a
 * newer dump (or rows added to the table by another) brings rows without
 * it, and on another server (a dump carried on) it names a server that
 * one has not taken over.  Where that server's state was taken over whole
 * (pg_upgrade, then flake_take_over()), its marks held the ids it took
 * over, and the record counts there too.
 *
 * Before a backend's first id (and before a rekey claim), every row of
 * flake_origin must name this server or one flake.hwm names, or have been
 * taken over by one of those; otherwise flake refuses, with a hint naming
 * flake_take_over().  A check per backend, not per id: the hot path stays
 * as it was.  Only the extension's owner (a superuser: flake is not a
 * trusted extension) writes the table, and flake_take_over_ids() is a
 * superuser's: no other role can write a record.
 *
 * Before 1.4 the table was in the extension's schema, so a dump of such a
 * database loads its rows with COPY <that schema>.flake_origin: in a
 * database at 1.4 that COPY goes to flake_internal.flake_origin, else the
 * rows, and the refusal they bring, would be lost.
 *
 * flake_extension_schema() also tells migrate_owner.c where the extension's types
 * are.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xlog.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "hwm.h"
#include "origin.h"

#define FLAKE_ORIGIN_SCHEMA "flake_internal"
#define FLAKE_ORIGIN_TABLE "flake_origin"
#define FLAKE_ORIGIN_TAKEN_OVER_BY "taken_over_by"

/*
 * A row of flake_origin: a server whose ids the database may hold, and the
 * server that took them over in this database (0: none, or a database at a
 * version before 1.5, without the column).
 */
typedef struct OriginRow
{
	uint64		server;
	uint64		taken_over_by;
} OriginRow;

/* The schema of the extension flake in this database, or InvalidOid. */
Oid
flake_extension_schema(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			schema = InvalidOid;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber,
				F_NAMEEQ, CStringGetDatum("flake"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
		schema = ((Form_pg_extension) GETSTRUCT(tuple))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return schema;
}

/*
 * The relation of the extension's table flake_origin, or InvalidOid: in
 * flake_internal from version 1.4, in the extension's schema at 1.2 and
 * 1.3 (a database not updated yet), none before.  Only a member of the
 * extension counts: a table of that name another role made is not flake's.
 */
static Oid
flake_origin_relid(void)
{
	Oid			extension = get_extension_oid("flake", true);
	Oid			schemas[2];

	if (!OidIsValid(extension))
		return InvalidOid;
	schemas[0] = get_namespace_oid(FLAKE_ORIGIN_SCHEMA, true);
	schemas[1] = flake_extension_schema();
	for (int i = 0; i < (int) lengthof(schemas); i++)
	{
		Oid			relid;

		if (!OidIsValid(schemas[i]))
			continue;
		relid = get_relname_relid(FLAKE_ORIGIN_TABLE, schemas[i]);
		if (OidIsValid(relid) &&
			getExtensionOfObject(RelationRelationId, relid) == extension)
			return relid;
	}
	return InvalidOid;
}

/*
 * The statement to run in place of pstmt, from flake's ProcessUtility hook
 * (flake.c): a COPY FROM into <extension's schema>.flake_origin, where
 * dumps of 1.2 and 1.3 load the table's rows, sent to the extension's
 * flake_internal.flake_origin when no relation of that name is in the
 * extension's schema (a user's table there keeps its own rows); copied
 * first if the tree is read-only (*readOnlyTree then becomes false).  COPY
 * then checks the privileges on flake_internal.flake_origin, as for a
 * dump of 1.4.  Otherwise pstmt itself.
 */
PlannedStmt *
flake_origin_copy_redirect(PlannedStmt *pstmt, bool *readOnlyTree)
{
	CopyStmt   *copy = (CopyStmt *) pstmt->utilityStmt;
	Oid			schema;
	char	   *schema_name;

	if (!IsA(copy, CopyStmt) || !copy->is_from || copy->relation == NULL ||
		copy->relation->schemaname == NULL ||
		strcmp(copy->relation->relname, FLAKE_ORIGIN_TABLE) != 0)
		return pstmt;
	schema = flake_extension_schema();
	schema_name = OidIsValid(schema) ? get_namespace_name(schema) : NULL;
	if (schema_name == NULL ||
		strcmp(copy->relation->schemaname, schema_name) != 0 ||
		OidIsValid(get_relname_relid(FLAKE_ORIGIN_TABLE, schema)) ||
		!OidIsValid(flake_origin_relid()))
		return pstmt;

	if (*readOnlyTree)
		pstmt = copyObject(pstmt);
	*readOnlyTree = false;
	copy = (CopyStmt *) pstmt->utilityStmt;
	copy->relation->schemaname = pstrdup(FLAKE_ORIGIN_SCHEMA);
	return pstmt;
}

/* A bigint column of a row of flake_origin as a system identifier; 0 if NULL */
static uint64
origin_column(HeapTuple tuple, TupleDesc desc, AttrNumber attnum)
{
	bool		isnull;
	Datum		value;

	if (attnum == InvalidAttrNumber)
		return 0;
	value = heap_getattr(tuple, attnum, desc, &isnull);
	return isnull ? 0 : (uint64) DatumGetInt64(value);
}

/*
 * The rows of this database's flake_origin, into *rows (palloc'd); their
 * number.  Without the table (the extension at a version before 1.2, or
 * not installed in this database), none.
 */
static int
origin_rows(OriginRow **rows)
{
	Oid			relid = flake_origin_relid();
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;
	AttrNumber	taken_over_by;
	int			count = 0;
	int			size = 4;

	*rows = palloc(sizeof(OriginRow) * size);
	if (!OidIsValid(relid))
		return 0;

	/* read straight from the heap: no code of anyone's runs */
	rel = table_open(relid, AccessShareLock);
	taken_over_by = get_attnum(relid, FLAKE_ORIGIN_TAKEN_OVER_BY);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		if (count == size)
		{
			size *= 2;
			*rows = repalloc(*rows, sizeof(OriginRow) * size);
		}
		(*rows)[count].server = origin_column(tuple, RelationGetDescr(rel), 1);
		(*rows)[count].taken_over_by = origin_column(tuple, RelationGetDescr(rel),
													 taken_over_by);
		count++;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return count;
}

/*
 * The servers this database's flake_origin names, besides this one, into
 * servers (palloc'd; the caller frees servers->id).
 */
void
flake_origin_servers(FlakeServers *servers)
{
	OriginRow  *rows;
	int			count = origin_rows(&rows);

	servers->writer = 0;
	servers->count = 0;
	servers->id = palloc(0);
	for (int i = 0; i < count; i++)
		flake_hwm_servers_add(servers, rows[i].server);
	pfree(rows);
}

/* Whether a server is this one or one whose state flake.hwm took over */
static bool
server_known(const FlakeServers *servers, uint64 id)
{
	if (id == GetSystemIdentifier())
		return true;
	for (uint32 i = 0; i < servers->count; i++)
		if (servers->id[i] == id)
			return true;
	return false;
}

/*
 * Refuse to go on when a row of this database's flake_origin names a
 * server that is neither this one nor one whose marks flake.hwm holds, and
 * was not taken over in this database by one of those.
 */
void
flake_origin_check(void)
{
	OriginRow  *rows;
	int			count = origin_rows(&rows);
	FlakeServers servers;
	uint64		own = GetSystemIdentifier();
	uint64		missing = 0;

	if (count == 0)
	{
		pfree(rows);
		return;
	}
	flake_hwm_servers(&servers);
	for (int i = 0; i < count && missing == 0; i++)
	{
		if (server_known(&servers, rows[i].server) ||
			(rows[i].taken_over_by != 0 && server_known(&servers, rows[i].taken_over_by)))
			continue;
		missing = rows[i].server;
	}
	pfree(rows);
	pfree(servers.id);

	if (missing != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this database holds ids of another server, whose flake state this server lacks"),
				 errdetail("The database comes from the server with system identifier " UINT64_FORMAT " (through pg_upgrade or pg_dump); the ids and rekey claims it issued are recorded in the files flake.hwm and flake.rekeys of its data directory, and this server (system identifier " UINT64_FORMAT ") has not taken them over, nor the ids of this database.",
						   missing, own),
				 errhint("Take over the old server's state, with no restart, as a superuser: SELECT flake_take_over('/path/to/old/data') with the data directory of the old server, stopped; or, where that server keeps running, SELECT flake_take_over_ids() in this database. See flake's docs/upgrading.md.")));
}

/*
 * Record in this database's flake_origin that this server took over the
 * ids of every server it names (flake_take_over_ids()): each row's
 * taken_over_by becomes this server.  Part of the caller's transaction, so
 * that the record is committed only after the marks it stands for are
 * raised (and in WAL), and a take-over that fails records nothing.  Only
 * the rows the statement's snapshot sees, the one the tables' ids are read
 * with: rows restored meanwhile stay without the record.  A database whose
 * flake is older than 1.5 has no column for the record: refused, nothing
 * taken over.
 */
void
flake_origin_record_take_over(void)
{
	Oid			relid = flake_origin_relid();
	char	   *query;
	Oid			argtypes[1] = {INT8OID};
	Datum		args[1] = {Int64GetDatum((int64) GetSystemIdentifier())};
	SPIPlanPtr	plan;

	if (!OidIsValid(relid))
		return;
	if (get_attnum(relid, FLAKE_ORIGIN_TAKEN_OVER_BY) == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the extension flake in this database is at a version before 1.5"),
				 errdetail("Its flake_origin cannot record that this server took the ids of this database over. Nothing was taken over."),
				 errhint("Update it (ALTER EXTENSION flake UPDATE), then run SELECT * FROM flake_take_over_ids() again.")));

	/* no operator, function or unqualified name: nothing of a role's runs */
	query = psprintf("UPDATE %s SET " FLAKE_ORIGIN_TAKEN_OVER_BY " = $1",
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
												get_rel_name(relid)));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	plan = SPI_prepare(query, 1, argtypes);
	if (plan == NULL)
		elog(ERROR, "could not prepare the record of the take-over: %s",
			 SPI_result_code_string(SPI_result));
	if (SPI_execute_snapshot(plan, args, NULL, GetActiveSnapshot(), InvalidSnapshot,
							 false, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not record the take-over in flake_origin");
	SPI_finish();
	pfree(query);
}
