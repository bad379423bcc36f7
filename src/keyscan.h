/*-------------------------------------------------------------------------
 *
 * keyscan.h
 *	  Finding the words that mark a statement carrying a Randflake key.
 *
 * Plain C without PostgreSQL headers, so the scan can be fuzzed alone.
 * Every function reads each byte a bounded number of times: its work is
 * linear in the length of the text, whatever the text.
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
 * The offset of the first randflake_secret, randflake_decode or
 * randflake_key, in any case, in the len bytes at bytes (no terminator
 * needed, none looked for); len when there is none.
 */
extern size_t keyscan_find_key(const char *bytes, size_t len);

/* Do the len bytes at bytes contain one of those words? */
static inline bool
keyscan_mentions_key(const char *bytes, size_t len)
{
	return keyscan_find_key(bytes, len) < len;
}

/* Do the len bytes at bytes contain execute, in any case? */
extern bool keyscan_mentions_execute(const char *bytes, size_t len);

#endif							/* KEYSCAN_H */
