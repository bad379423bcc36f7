/*-------------------------------------------------------------------------
 *
 * publisher.h
 *	  At CREATE SUBSCRIPTION, tell where the publisher runs an older flake.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_PUBLISHER_H
#define FLAKE_PUBLISHER_H

#include "nodes/parsenodes.h"

extern void flake_receive_check_publisher(CreateSubscriptionStmt *stmt);

#endif							/* FLAKE_PUBLISHER_H */
