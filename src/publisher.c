/*-------------------------------------------------------------------------
 *
 * publisher.c
 *	  At CREATE SUBSCRIPTION, tell where the publisher runs an older flake.
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
#include "commands/defrem.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "replication/walreceiver.h"
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

/* Whether the statement's options say not to connect (connect = false). */
static bool
connects(CreateSubscriptionStmt *stmt)
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
 * The flake version installed in the publisher's database, palloc'd; NULL
 * where flake is not installed there or the publisher cannot be asked (the
 * subscription itself then says why).
 */
static char *
publisher_version(const char *conninfo)
{
	WalReceiverConn *conn;
	WalRcvExecResult *result;
	Oid			types[1] = {TEXTOID};
	char	   *error = NULL;
	char	   *version = NULL;

	load_file("libpqwalreceiver", false);
	conn = flake_walrcv_connect(conninfo, !superuser(), "flake", &error);
	if (conn == NULL)
		return NULL;
	result = walrcv_exec(conn,
						 "SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'flake'",
						 1, types);
	if (result->status == WALRCV_OK_TUPLES)
	{
		TupleTableSlot *slot = MakeSingleTupleTableSlot(result->tupledesc,
														&TTSOpsMinimalTuple);
		bool		isnull;

		if (tuplestore_gettupleslot(result->tuplestore, true, false, slot))
		{
			Datum		value = slot_getattr(slot, 1, &isnull);

			if (!isnull)
				version = TextDatumGetCString(value);
		}
		ExecDropSingleTupleTableSlot(slot);
	}
	walrcv_clear_result(result);
	walrcv_disconnect(conn);
	return version;
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

	if (!connects(stmt))
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
