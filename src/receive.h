/*-------------------------------------------------------------------------
 *
 * receive.h
 *	  Ids that arrive from another server raise this server's marks.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_RECEIVE_H
#define FLAKE_RECEIVE_H

#include "nodes/parsenodes.h"

extern void flake_receive_inserted_constants(Query *query);
extern void flake_receive_subscribed_tables(const char *subname, bool ask);
extern void flake_receive_altered_table(AlterTableStmt *stmt);
extern void flake_receive_copied_table(CopyStmt *stmt);

#endif							/* FLAKE_RECEIVE_H */
