/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  The one place where differences between PostgreSQL versions live.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_COMPAT_H
#define FLAKE_COMPAT_H

#include "utils/elog.h"

#if PG_VERSION_NUM < 150000
#error "flake needs PostgreSQL 15 or later"
#endif

/*
 * PostgreSQL 16 lets input functions report errors softly (for
 * pg_input_is_valid and friends); before it, every input error is an ERROR.
 */
#if PG_VERSION_NUM >= 160000
#define flake_ereturn(context, dummy, ...) ereturn(context, dummy, __VA_ARGS__)
#else
#define flake_ereturn(context, dummy, ...) \
	do { \
		(void) (context); \
		ereport(ERROR, __VA_ARGS__); \
		return dummy; \
	} while (0)
#endif

/*
 * Memory of setting values and their "extra": PostgreSQL 16 keeps it in a
 * memory context of its own and exports functions for it; before, it is
 * plain malloc.
 */
#if PG_VERSION_NUM >= 160000
#define flake_guc_malloc(size) guc_malloc(LOG, size)
#define flake_guc_strdup(str) guc_strdup(LOG, str)
#define flake_guc_free(ptr) guc_free(ptr)
#else
#define flake_guc_malloc(size) malloc(size)
#define flake_guc_strdup(str) strdup(str)
#define flake_guc_free(ptr) free(ptr)
#endif

/*
 * May a role act as another (SET ROLE to it)?  PostgreSQL 16 separates that
 * from membership (GRANT ... WITH SET); before, every member may.  Callers
 * include utils/acl.h.
 */
#if PG_VERSION_NUM >= 160000
#define flake_can_set_role(member, role) member_can_set_role(member, role)
#else
#define flake_can_set_role(member, role) is_member_of_role(member, role)
#endif

/*
 * Whether a role owns a table: PostgreSQL 16 checks the owner of any object
 * with one function (its callers include catalog/pg_class.h).
 */
#if PG_VERSION_NUM >= 160000
#define flake_table_ownercheck(relid, roleid) \
	object_ownercheck(RelationRelationId, relid, roleid)
#else
#define flake_table_ownercheck(relid, roleid) pg_class_ownercheck(relid, roleid)
#endif

/*
 * A qualified name's parts from its text: PostgreSQL 16 adds a context for
 * soft errors (NULL: raise them).  Callers include utils/regproc.h.
 */
#if PG_VERSION_NUM >= 160000
#define flake_qualified_name_list(string) stringToQualifiedNameList(string, NULL)
#else
#define flake_qualified_name_list(string) stringToQualifiedNameList(string)
#endif

/*
 * A sequential scan of a whole table: PostgreSQL 19 adds flags for the
 * caller (its callers include access/tableam.h).
 */
#if PG_VERSION_NUM >= 190000
#define flake_table_beginscan(rel, snapshot) \
	table_beginscan(rel, snapshot, 0, NULL, SO_NONE)
#else
#define flake_table_beginscan(rel, snapshot) table_beginscan(rel, snapshot, 0, NULL)
#endif

/*
 * An index scan: PostgreSQL 18 adds the caller's instrumentation (its
 * callers include access/genam.h).
 */
#if PG_VERSION_NUM >= 180000
#define flake_index_beginscan(rel, index, snapshot, nkeys) \
	index_beginscan(rel, index, snapshot, NULL, nkeys, 0)
#else
#define flake_index_beginscan(rel, index, snapshot, nkeys) \
	index_beginscan(rel, index, snapshot, nkeys, 0)
#endif

/*
 * This backend's PGPROC number: PostgreSQL 17 names it MyProcNumber.
 * Callers include storage/proc.h.
 */
#if PG_VERSION_NUM >= 170000
#define flake_my_proc_number() MyProcNumber
#else
#define flake_my_proc_number() (MyProc->pgprocno)
#endif

/*
 * expression_tree_walker: before PostgreSQL 16 it takes its walker as
 * "bool (*) ()", which C23 (gcc 15's default) reads as taking no
 * arguments; from 16 a macro casts the walker itself.  The cast goes
 * through void (*) (void), which -Wcast-function-type lets match any
 * function type.  Callers include nodes/nodeFuncs.h.
 */
#if PG_VERSION_NUM >= 160000
#define flake_expression_tree_walker(node, walker, context) \
	expression_tree_walker(node, walker, context)
#else
#define flake_expression_tree_walker(node, walker, context) \
	expression_tree_walker(node, (bool (*) ()) (void (*) (void)) (walker), context)
#endif

/*
 * A logical replication connection to a publisher: PostgreSQL 16 adds
 * whether a password must be used, 17 whether it is a replication
 * connection.  Callers include replication/walreceiver.h.
 */
#if PG_VERSION_NUM >= 170000
#define flake_walrcv_connect(conninfo, must_use_password, appname, err) \
	walrcv_connect(conninfo, true, true, must_use_password, appname, err)
#elif PG_VERSION_NUM >= 160000
#define flake_walrcv_connect(conninfo, must_use_password, appname, err) \
	walrcv_connect(conninfo, true, must_use_password, appname, err)
#else
#define flake_walrcv_connect(conninfo, must_use_password, appname, err) \
	walrcv_connect(conninfo, true, appname, err)
#endif

/*
 * post_parse_analyze_hook: PostgreSQL 19 passes the jumble state const.
 */
#if PG_VERSION_NUM >= 190000
#define FLAKE_JUMBLE_STATE const JumbleState
#else
#define FLAKE_JUMBLE_STATE JumbleState
#endif

#endif							/* FLAKE_COMPAT_H */
