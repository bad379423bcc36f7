/*-------------------------------------------------------------------------
 *
 * migrate_owner.c
 *	  flake_migrate()'s statements on a table, run as the table's owner.
 *
 * Reading or altering a table runs code its owner wrote: index expressions
 * and predicates (the planner folds them when it plans any query on the
 * table), CHECK constraints (tried by the dry run's probe, evaluated again
 * by ALTER TABLE ... TYPE), row-level security policies.  Run with the
 * caller's rights, that code gets them: a superuser's dry run of a table an
 * ordinary role owns could make the owner a superuser.  So flake_migrate()
 * runs every statement that touches a table as that table's owner, inside
 * a security-restricted operation with a fixed search_path, the way
 * PostgreSQL's own REINDEX, ANALYZE and REFRESH MATERIALIZED VIEW run the
 * code of the tables they process (since CVE-2022-1552; PostgreSQL 17 also
 * fixes their search_path).
 *
 * A security-restricted operation refuses SET ROLE and SET SESSION
 * AUTHORIZATION, temporary tables, cursors WITH HOLD, CLOSE, DISCARD,
 * LISTEN and UNLISTEN, and deferred trigger events.  flake_migrate()'s
 * statements on a table need none of them: they are SELECTs, ALTER TABLE,
 * ALTER and DROP SEQUENCE and COMMENT ON CONSTRAINT, none of which fire
 * triggers.  Its own table, the mapping table, is created and filled by
 * the caller.
 *
 * Only a role that could SET ROLE to the owner may run statements as the
 * owner: that gives nobody more than they have.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "executor/spi.h"
#include "executor/tstoreReceiver.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "compat.h"
#include "origin.h"

/* What running as the owner changed, to put back. */
typedef struct OwnerContext
{
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
} OwnerContext;

PG_FUNCTION_INFO_V1(flake_migrate_as_owner);
PG_FUNCTION_INFO_V1(flake_migrate_read_as_owner);

/* The owner of a relation, locked so that it stays its owner. */
static Oid
table_owner(Oid relid)
{
	HeapTuple	tuple;
	Oid			owner;

	LockRelationOid(relid, AccessShareLock);
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	return owner;
}

/*
 * Become the owner of table relid, in a security-restricted operation whose
 * search_path is pg_catalog and pg_temp, with the extension's schema
 * between them when flake_types is set (ALTER TABLE ... TYPE ulidflake
 * parses CHECK constraints and index expressions again, and needs the
 * type's operators).  The owner reads every row, also under FORCE ROW
 * LEVEL SECURITY, as PostgreSQL's foreign key checks do: a rekey must map
 * every row, whatever the policies let a session see.
 *
 * An error before owner_end() needs nothing put back: aborting the
 * transaction or subtransaction (as PL/pgSQL's exception blocks do) restores
 * the user, the security context and the settings, as it does for
 * PostgreSQL's own index builds.
 */
static void
owner_begin(Oid relid, bool flake_types, OwnerContext *saved)
{
	Oid			owner = table_owner(relid);
	char	   *path;

	if (!flake_can_set_role(GetUserId(), owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be able to SET ROLE \"%s\" to run statements on table \"%s\"",
						GetUserNameFromId(owner, false), get_rel_name(relid)),
				 errdetail("flake_migrate runs each statement on a table as the table's owner, so that the code of the table runs with the owner's rights."),
				 errhint("Run flake_migrate as the owner of the tables, or as a member of their owners.")));

	/*
	 * The extension's schema, where the type and its operators are (these
	 * functions are in flake_internal).
	 */
	if (flake_types)
	{
		Oid			schema = flake_extension_schema();

		if (!OidIsValid(schema))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("extension \"flake\" is not installed in this database")));
		path = psprintf("pg_catalog, %s, pg_temp",
						quote_identifier(get_namespace_name(schema)));
	}
	else
		path = "pg_catalog, pg_temp";

	GetUserIdAndSecContext(&saved->save_userid, &saved->save_sec_context);
	SetUserIdAndSecContext(owner, saved->save_sec_context |
						   SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION |
						   SECURITY_NOFORCE_RLS);
	saved->save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", path, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

/* Back to the caller: settings the statement changed are undone. */
static void
owner_end(const OwnerContext *saved)
{
	AtEOXact_GUC(false, saved->save_nestlevel);
	SetUserIdAndSecContext(saved->save_userid, saved->save_sec_context);
}

/*
 * flake_migrate_as_owner(tbl regclass, statement text, flake_types boolean):
 * run a statement as tbl's owner (see owner_begin); returns the rows it
 * processed.
 */
Datum
flake_migrate_as_owner(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	char	   *statement = text_to_cstring(PG_GETARG_TEXT_PP(1));
	OwnerContext saved;
	uint64		processed;
	int			ret;

	owner_begin(relid, PG_GETARG_BOOL(2), &saved);
	SPI_connect();
	ret = SPI_execute(statement, false, 0);
	if (ret < 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot run statement as the owner of a table: %s",
						SPI_result_code_string(ret))));
	processed = SPI_processed;
	SPI_finish();
	owner_end(&saved);
	PG_RETURN_INT64((int64) processed);
}

/*
 * flake_migrate_read_as_owner(tbl regclass, query text, flake_types
 * boolean): the rows of a query run as tbl's owner (see owner_begin), with
 * the columns the caller declares.  They go straight into the result's
 * tuplestore, which spills to disk: a rekey reads every row of the table.
 */
Datum
flake_migrate_read_as_owner(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	char	   *query = text_to_cstring(PG_GETARG_TEXT_PP(1));
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SPIExecuteOptions options = {0};
	OwnerContext saved;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	options.must_return_tuples = true;
	options.dest = CreateTuplestoreDestReceiver();
	SetTuplestoreDestReceiverParams(options.dest, rsinfo->setResult,
									rsinfo->econtext->ecxt_per_query_memory,
									false, rsinfo->setDesc,
									gettext_noop("query does not return the columns of its column definition list"));

	owner_begin(relid, PG_GETARG_BOOL(2), &saved);
	SPI_connect();
	SPI_execute_extended(query, &options);
	SPI_finish();
	owner_end(&saved);
	options.dest->rDestroy(options.dest);
	PG_RETURN_VOID();
}
