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
 * their files copied here to be taken over at start (state.c).  Before a
 * backend's first id (and before a rekey claim), every server in
 * flake_origin must be this one or one flake.hwm names; otherwise flake
 * refuses, with a hint naming flake_take_over().  A check per backend,
 * not per id: the hot path stays as it was.
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
#include "commands/extension.h"
#include "nodes/parsenodes.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "hwm.h"
#include "origin.h"

#define FLAKE_ORIGIN_SCHEMA "flake_internal"
#define FLAKE_ORIGIN_TABLE "flake_origin"

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

/*
 * The servers this database's flake_origin names, besides this one, into
 * servers (palloc'd; the caller frees servers->id).  Without the table (the
 * extension at a version before 1.2, or not installed in this database),
 * none.
 */
void
flake_origin_servers(FlakeServers *servers)
{
	Oid			relid = flake_origin_relid();
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;

	servers->writer = 0;
	servers->count = 0;
	servers->id = palloc(0);
	if (!OidIsValid(relid))
		return;

	/* read straight from the heap: no code of anyone's runs */
	rel = table_open(relid, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		bool		isnull;
		Datum		id = heap_getattr(tuple, 1, RelationGetDescr(rel), &isnull);

		if (!isnull)
			flake_hwm_servers_add(servers, (uint64) DatumGetInt64(id));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
}

/*
 * Refuse to go on when this database's flake_origin names a server that
 * is neither this one nor one whose marks flake.hwm holds.
 */
void
flake_origin_check(void)
{
	FlakeServers origin;
	FlakeServers servers;
	uint64		own = GetSystemIdentifier();
	uint64		missing = 0;

	flake_origin_servers(&origin);
	if (origin.count == 0)
		return;
	flake_hwm_servers(&servers);
	for (uint32 o = 0; o < origin.count && missing == 0; o++)
	{
		bool		known = false;

		for (uint32 i = 0; i < servers.count && !known; i++)
			known = servers.id[i] == origin.id[o];
		if (!known)
			missing = origin.id[o];
	}
	pfree(origin.id);
	pfree(servers.id);

	if (missing != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this database holds ids of another server, whose flake state this server lacks"),
				 errdetail("The database comes from the server with system identifier " UINT64_FORMAT " (through pg_upgrade or pg_dump); the ids and rekey claims it issued are recorded in the files flake.hwm and flake.rekeys of its data directory, and this server (system identifier " UINT64_FORMAT ") has not taken them over.",
						   missing, own),
				 errhint("Take over the old server's state, with no restart, as a superuser: SELECT flake_take_over('/path/to/old/data') with the data directory of the old server, stopped; or, where that server keeps running, SELECT flake_take_over_ids() in this database. See \"Upgrading and uninstalling\" in flake's README.")));
}
