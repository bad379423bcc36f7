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

#endif							/* FLAKE_COMPAT_H */
