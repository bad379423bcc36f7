/*-------------------------------------------------------------------------
 *
 * publisher.h
 *	  Ask a subscription's publisher what flake there knows.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_PUBLISHER_H
#define FLAKE_PUBLISHER_H

#include "nodes/parsenodes.h"

/* A column of a published table whose default calls one of flake's generators. */
typedef struct FlakePublishedColumn
{
	char	   *schema;
	char	   *table;
	char	   *column;
	char	   *generator;		/* flake_next, ulidflake_next or
								 * randflake_next */
} FlakePublishedColumn;

extern bool flake_subscription_connects(CreateSubscriptionStmt *stmt);
extern bool flake_publisher_id_columns(const char *conninfo, List *publications,
									   List **columns);
extern void flake_receive_check_publisher(CreateSubscriptionStmt *stmt);

#endif							/* FLAKE_PUBLISHER_H */
