/*-------------------------------------------------------------------------
 *
 * origin.h
 *	  The servers a database's ids may come from, against flake.hwm's.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_ORIGIN_H
#define FLAKE_ORIGIN_H

#include "nodes/plannodes.h"

#include "hwm.h"

extern Oid	flake_extension_schema(void);
extern void flake_origin_servers(FlakeServers *servers);
extern void flake_origin_check(void);
extern void flake_origin_record_take_over(void);
extern PlannedStmt *flake_origin_copy_redirect(PlannedStmt *pstmt,
											   bool *readOnlyTree);

#endif							/* FLAKE_ORIGIN_H */
