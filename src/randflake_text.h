/*-------------------------------------------------------------------------
 *
 * randflake_text.h
 *	  Text form of randflake ids: the reference codec of gosuda/randflake.
 *
 * Plain C without PostgreSQL headers, so the parser can be fuzzed alone.
 *
 *-------------------------------------------------------------------------
 */
#ifndef RANDFLAKE_TEXT_H
#define RANDFLAKE_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* digits of the largest uint64: ceil(64 / 5) */
#define RANDFLAKE_TEXT_MAXLEN 13

typedef enum RandflakeParseStatus
{
	RANDFLAKE_PARSE_OK,
	RANDFLAKE_PARSE_MALFORMED,	/* empty, or a byte that is neither a digit
								 * nor trailing '=' padding */
	RANDFLAKE_PARSE_OUT_OF_RANGE	/* well formed, but above 2^64 - 1 */
} RandflakeParseStatus;

/*
 * Write value's digits and a terminating NUL to dst, which must have room
 * for RANDFLAKE_TEXT_MAXLEN + 1 bytes; return the number of digits (1-13).
 */
extern size_t randflake_encode(uint64_t value, char *dst);

/*
 * Parse exactly len bytes at src (no terminator needed, none looked for).
 * *value is written only on RANDFLAKE_PARSE_OK.
 */
extern RandflakeParseStatus randflake_parse(const char *src, size_t len,
											uint64_t *value);

#endif							/* RANDFLAKE_TEXT_H */
