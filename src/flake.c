/*-------------------------------------------------------------------------
 *
 * flake.c
 *	  Module entry point of the flake extension.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/extension.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "parser/analyze.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "horizon.h"
#include "logfilter.h"
#include "origin.h"
#include "publisher.h"
#include "randflake.h"
#include "receive.h"
#include "serial_default.h"
#include "settings.h"
#include "shmem.h"
#include "snowflake.h"
#include "snowflake_settings.h"
#include "ulidflake.h"
#include "wal.h"
#include "compat.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

static ProcessUtility_hook_type prev_process_utility = NULL;
static post_parse_analyze_hook_type prev_post_parse_analyze = NULL;

PG_FUNCTION_INFO_V1(flake_library_version);

/*
 * The version of the library this process runs.  After a package upgrade
 * a server runs the library it loaded at start until it restarts; the
 * install and upgrade scripts call this first (sql/parts/library.sql), so
 * that they refuse with a hint to restart, where a library without it
 * (before 1.4) or older than the script fails on a function it lacks.
 */
Datum
flake_library_version(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(FLAKE_VERSION));
}

/*
 * CREATE EXTENSION flake or ALTER EXTENSION flake UPDATE: the subscriptions
 * made before (before 1.4, which brought the trigger) get it then too.
 */
static bool
is_flake_extension_stmt(Node *stmt)
{
	if (IsA(stmt, CreateExtensionStmt))
		return strcmp(((CreateExtensionStmt *) stmt)->extname, "flake") == 0;
	if (IsA(stmt, AlterExtensionStmt))
		return strcmp(((AlterExtensionStmt *) stmt)->extname, "flake") == 0;
	return false;
}

/*
 * flake's one ProcessUtility hook: flake.serial_default rewrites the column
 * definitions of CREATE and ALTER TABLE before they run, a dump's COPY into
 * flake_origin where it was before 1.4 goes to where it is, the log filter
 * follows the session's prepared statements around each statement, and
 * the tables a subscription replicates into get the trigger that raises
 * the marks above the ids arriving (receive.c), also those subscribed
 * before flake was installed or updated; a table that comes to hold ids
 * flake has not read (ALTER TABLE, COPY FROM) is read; CREATE SUBSCRIPTION
 * tells where the publisher runs an older flake (publisher.c).  The
 * publisher is asked which columns hold ids at every subscription command,
 * DROP SUBSCRIPTION before it runs.
 */
static void
flake_process_utility(PlannedStmt *pstmt, const char *queryString,
					  bool readOnlyTree, ProcessUtilityContext context,
					  ParamListInfo params, QueryEnvironment *queryEnv,
					  DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *stmt;

	pstmt = serial_default_rewrite(pstmt, &readOnlyTree);
	pstmt = flake_origin_copy_redirect(pstmt, &readOnlyTree);
	stmt = pstmt->utilityStmt;
	flake_log_filter_before_utility(stmt);
	/* the last word of the publisher, before the subscription is gone */
	if (IsA(stmt, DropSubscriptionStmt))
		flake_receive_subscribed_tables(((DropSubscriptionStmt *) stmt)->subname, true);
	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context,
							 params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
	flake_log_filter_after_utility(stmt);
	if (IsA(stmt, CreateSubscriptionStmt))
		flake_receive_check_publisher((CreateSubscriptionStmt *) stmt);
	if (IsA(stmt, CreateSubscriptionStmt))
		flake_receive_subscribed_tables(((CreateSubscriptionStmt *) stmt)->subname,
										flake_subscription_connects((CreateSubscriptionStmt *) stmt));
	else if (IsA(stmt, AlterSubscriptionStmt))
		flake_receive_subscribed_tables(((AlterSubscriptionStmt *) stmt)->subname, true);
	else if (is_flake_extension_stmt(stmt))
		flake_receive_subscribed_tables(NULL, true);
	else if (IsA(stmt, AlterTableStmt))
		flake_receive_altered_table((AlterTableStmt *) stmt);
	else if (IsA(stmt, CopyStmt))
		flake_receive_copied_table((CopyStmt *) stmt);
}

/*
 * flake's one post-parse-analyze hook: the log filter notes a Parse
 * message that names a key word, and an INSERT's constant ids raise the
 * marks (receive.c).
 */
static void
flake_post_parse_analyze(ParseState *pstate, Query *query, FLAKE_JUMBLE_STATE * jstate)
{
	if (prev_post_parse_analyze)
		prev_post_parse_analyze(pstate, query, jstate);
	flake_log_filter_after_parse(pstate, query);
	flake_receive_inserted_constants(query);
}

void
_PG_init(void)
{
	/* any invalid value stops here, before anything else is set up */
	flake_settings_begin();
	snowflake_define_settings();
	randflake_define_settings();
	serial_default_define_setting();
	flake_settings_end();
	snowflake_check_settings();

	flake_log_filter_init();
	prev_post_parse_analyze = post_parse_analyze_hook;
	post_parse_analyze_hook = flake_post_parse_analyze;
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = flake_process_utility;

	/*
	 * Shared state can only be set up from shared_preload_libraries.  When
	 * loaded later, flake_next() refuses to run and ulidflake_next() keeps
	 * its state per backend.  The prefix is reserved only then: reserving it
	 * later would drop the server-start settings that decoding still reads.
	 * flake's WAL records can be replayed only with its resource manager
	 * registered, which also happens only here, and flake.serial_default acts
	 * only then (it must act in every session or in none).
	 */
	if (process_shared_preload_libraries_in_progress)
	{
		flake_shmem_init();
		snowflake_add_shmem();
		ulidflake_add_shmem();
		randflake_add_shmem();
		flake_horizon_add_shmem();
		flake_wal_register();
		serial_default_enable();
		MarkGUCPrefixReserved("flake");
	}
	else if (creating_extension)
	{
		/*
		 * CREATE EXTENSION (or ALTER EXTENSION UPDATE) in a server that does
		 * not preload flake loads the library here, in the session.  A
		 * WARNING rather than a NOTICE: the extension is then installed but
		 * half working, and a WARNING also reaches the server log
		 * (log_min_messages) where an administrator sees it.
		 */
		ereport(WARNING,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("flake is not loaded through shared_preload_libraries"),
				 errdetail("Until it is, flake_next() and randflake_next() refuse to run, flake_leases stays empty, ulidflake_next() orders values within a session only, and the Randflake secret is hidden from other roles and from the log only in sessions that loaded flake."),
				 errhint(FLAKE_PRELOAD_HINT)));
	}
}
