/*-------------------------------------------------------------------------
 *
 * keyscan.h
 *	  Finding the words that mark a statement carrying a Randflake key.
 *
 * Plain C without PostgreSQL headers, so the scan can be fuzzed alone.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KEYSCAN_H
#define KEYSCAN_H

#include <stdbool.h>
#include <stddef.h>

/* the length of the longest word, randflake_secret or randflake_decode */
#define KEYSCAN_LONGEST_WORD 16

/*
 * Do the len bytes at bytes (no terminator needed, none looked for) contain
 * randflake_secret, randflake_decode or randflake_key, in any case?
 */
extern bool keyscan_mentions_key(const char *bytes, size_t len);

#endif							/* KEYSCAN_H */
