/*-------------------------------------------------------------------------
 *
 * publisher.c
 *	  Ask a subscription's publisher what flake there knows.
 *
 * A blue/green cutover subscribes green to blue; its rollback later
 * subscribes blue to green, and only blue's flake can protect blue then
 * (receive.c).  A blue at an older flake than green (a cutover for a major
 * upgrade, with flake updated on green only) gets no protection, or less:
 * before 1.4 none, and 1.4 misses the ids that arrived before a column's
 * default, an update or a restore with --disable-triggers.  So green,
 * where the cutover starts, asks the publisher for its flake version over
 * the subscription's own connection and warns, naming the step on blue.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "commands/defrem.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "replication/walreceiver.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "compat.h"
#include "publisher.h"

/* a version "major.minor" as a number to compare; -1 if it is not one */
static int
version_number(const char *version)
{
	int			major;
	int			minor;

	if (version == NULL || sscanf(version, "%d.%d", &major, &minor) != 2)
		return -1;
	return major * 1000 + minor;
}

/* Whether the statement's options let it connect (not connect = false). */
bool
flake_subscription_connects(CreateSubscriptionStmt *stmt)
{
	ListCell   *lc;

	foreach(lc, stmt->options)
	{
		DefElem    *option = lfirst_node(DefElem, lc);

		if (strcmp(option->defname, "connect") == 0 && !defGetBoolean(option))
			return false;
	}
	return true;
}

/*
 * Run a query of ncolumns text columns on the publisher and give each row
 * to found; false where the publisher cannot be asked (the subscription
 * itself then says why).
 */
static bool
ask_publisher(const char *conninfo, const char *sql, int ncolumns,
			  void (*found) (char **values, void *arg), void *arg)
{
	WalReceiverConn *conn;
	WalRcvExecResult *result;
	Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	char	   *error = NULL;
	bool		asked;

	Assert(ncolumns <= (int) lengthof(types));
	load_file("libpqwalreceiver", false);
	conn = flake_walrcv_connect(conninfo, !superuser(), "flake", &error);
	if (conn == NULL)
		return false;
	result = walrcv_exec(conn, sql, ncolumns, types);
	asked = result->status == WALRCV_OK_TUPLES;
	if (asked)
	{
		TupleTableSlot *slot = MakeSingleTupleTableSlot(result->tupledesc,
														&TTSOpsMinimalTuple);
		char	   *values[lengthof(types)];

		while (tuplestore_gettupleslot(result->tuplestore, true, false, slot))
		{
			for (int i = 0; i < ncolumns; i++)
			{
				bool		isnull;
				Datum		value = slot_getattr(slot, i + 1, &isnull);

				values[i] = isnull ? NULL : TextDatumGetCString(value);
			}
			found(values, arg);
		}
		ExecDropSingleTupleTableSlot(slot);
	}
	walrcv_clear_result(result);
	walrcv_disconnect(conn);
	return asked;
}

static void
found_version(char **values, void *arg)
{
	*(char **) arg = values[0];
}

/*
 * The flake version installed in the publisher's database, palloc'd; NULL
 * where flake is not installed there or the publisher cannot be asked.
 */
static char *
publisher_version(const char *conninfo)
{
	char	   *version = NULL;

	(void) ask_publisher(conninfo,
						 "SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'flake'",
						 1, found_version, &version);
	return version;
}

static void
found_id_column(char **values, void *arg)
{
	List	  **columns = (List **) arg;
	FlakePublishedColumn *column = palloc(sizeof(FlakePublishedColumn));

	column->schema = values[0];
	column->table = values[1];
	column->column = values[2];
	column->generator = values[3];
	*columns = lappend(*columns, column);
}

/*
 * The columns of the tables the publications publish whose default, or
 * the default of a partitioned table above them, calls one of flake's
 * generators on the publisher: a list of FlakePublishedColumn, palloc'd.
 * NIL, and false returned, where the publisher cannot be asked.  The
 * query reads catalogs only (the default's dependency on the function),
 * with every name qualified: nothing of a role's runs there.
 */
bool
flake_publisher_id_columns(const char *conninfo, List *publications, List **columns)
{
	StringInfoData sql;
	ListCell   *lc;

	*columns = NIL;
	initStringInfo(&sql);
	appendStringInfoString(&sql,
						   "SELECT DISTINCT t.schemaname::pg_catalog.text, t.tablename::pg_catalog.text,"
						   " a.attname::pg_catalog.text, p.proname::pg_catalog.text"
						   " FROM pg_catalog.pg_publication_tables t"
						   " JOIN pg_catalog.pg_namespace n ON n.nspname = t.schemaname"
						   " JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = t.tablename"
						   " CROSS JOIN LATERAL (SELECT c.oid AS relid UNION"
						   "  SELECT relid FROM pg_catalog.pg_partition_ancestors(c.oid)) r"
						   " JOIN pg_catalog.pg_attrdef d ON d.adrelid = r.relid"
						   " JOIN pg_catalog.pg_attribute a ON a.attrelid = r.relid AND a.attnum = d.adnum"
						   "  AND NOT a.attisdropped"
						   " JOIN pg_catalog.pg_depend dd ON dd.classid = 'pg_catalog.pg_attrdef'::pg_catalog.regclass"
						   "  AND dd.objid = d.oid AND dd.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass"
						   " JOIN pg_catalog.pg_proc p ON p.oid = dd.refobjid"
						   "  AND p.proname OPERATOR(pg_catalog.=) ANY ('{flake_next,ulidflake_next,randflake_next}'::pg_catalog.name[])"
						   " JOIN pg_catalog.pg_depend de ON de.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass"
						   "  AND de.objid = p.oid AND de.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass"
						   "  AND de.deptype = 'e'"
						   " JOIN pg_catalog.pg_extension x ON x.oid = de.refobjid AND x.extname = 'flake'"
						   " WHERE t.pubname OPERATOR(pg_catalog.=) ANY (ARRAY[");
	foreach(lc, publications)
		appendStringInfo(&sql, "%s%s", lc == list_head(publications) ? "" : ", ",
						 quote_literal_cstr(strVal(lfirst(lc))));
	appendStringInfoString(&sql, "]::pg_catalog.name[])");
	return ask_publisher(conninfo, sql.data, 4, found_id_column, columns);
}

/*
 * After CREATE SUBSCRIPTION (flake's ProcessUtility hook): warn where the
 * publisher's database has flake installed at an older version than this
 * server's library.
 */
void
flake_receive_check_publisher(CreateSubscriptionStmt *stmt)
{
	char	   *version;

	if (!flake_subscription_connects(stmt))
		return;
	version = publisher_version(stmt->conninfo);
	if (version == NULL || version_number(version) >= version_number(FLAKE_VERSION))
		return;
	ereport(WARNING,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("the publisher of subscription \"%s\" runs flake %s, older than this server's %s",
					stmt->subname, version, FLAKE_VERSION),
			 errdetail("Ids that a rollback replicates from this server back to it are not protected there in every order of steps (before flake 1.4, in none): it could issue them again."),
			 errhint("Before any rollback to it, install flake %s on the publisher, restart it, and run ALTER EXTENSION flake UPDATE in its database.",
					 FLAKE_VERSION)));
}
