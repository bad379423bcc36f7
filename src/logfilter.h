/*-------------------------------------------------------------------------
 *
 * logfilter.h
 *	  Keeping randflake keys out of the server log.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_LOGFILTER_H
#define FLAKE_LOGFILTER_H

#include "nodes/nodes.h"
#include "parser/parse_node.h"

/*
 * flake's refusal of a malformed flake.randflake_secret: its detail gives
 * the value's length only, so the log filter leaves it in place.  So does
 * the refusal of a file named by flake.randflake_secret_file, whose
 * message goes on with the path: its detail gives the file's owner, mode
 * or length.
 */
#define FLAKE_SECRET_REFUSED "invalid value for parameter \"flake.randflake_secret\""
#define FLAKE_SECRET_FILE_REFUSED "invalid value for parameter \"flake.randflake_secret_file\""

extern void flake_log_filter_init(void);
extern void flake_log_filter_after_parse(ParseState *pstate, Query *query);
extern void flake_log_filter_before_utility(Node *stmt);
extern void flake_log_filter_after_utility(Node *stmt);

#endif							/* FLAKE_LOGFILTER_H */
