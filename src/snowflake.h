/*-------------------------------------------------------------------------
 *
 * snowflake.h
 *	  The Snowflake family (flake_next()): what snowflake.c offers the files
 *	  above it.  Its layout is in snowflake_settings.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_SNOWFLAKE_H
#define FLAKE_SNOWFLAKE_H

#include "lease.h"

extern void snowflake_add_shmem(void);
extern bool snowflake_node_space(FlakeNodeSpace *space);
extern int32 snowflake_node_of(int64 id);
extern bool snowflake_own_node(int64 node, const char **own);
extern int64 snowflake_unix_ms_of(int64 id);
extern void snowflake_raise_node(int64 id);
extern bool snowflake_repair_layout(void);
extern void snowflake_check_other_layout(const char *directory,
										 int64 mark_unix_ms);

#endif							/* FLAKE_SNOWFLAKE_H */
