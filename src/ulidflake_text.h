/*-------------------------------------------------------------------------
 *
 * ulidflake_text.h
 *	  Crockford Base32 text form of ulidflake values.
 *
 * Plain C without PostgreSQL headers, so the parser can be fuzzed alone.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ULIDFLAKE_TEXT_H
#define ULIDFLAKE_TEXT_H

#include <stddef.h>
#include <stdint.h>

#define ULIDFLAKE_TEXT_LEN 13

typedef enum UlidflakeParseStatus
{
	ULIDFLAKE_PARSE_OK,
	ULIDFLAKE_PARSE_MALFORMED,	/* wrong length or a character not in the
								 * alphabet */
	ULIDFLAKE_PARSE_OUT_OF_RANGE	/* well formed, but above 2^63 - 1 */
} UlidflakeParseStatus;

/*
 * Write value's 13 characters and a terminating NUL to dst, which must have
 * room for ULIDFLAKE_TEXT_LEN + 1 bytes; return the number of characters.
 */
extern size_t ulidflake_encode(uint64_t value, char *dst);

/*
 * Parse exactly len bytes at src (no terminator needed, none looked for).
 * *value is written only on ULIDFLAKE_PARSE_OK.
 */
extern UlidflakeParseStatus ulidflake_parse(const char *src, size_t len,
											uint64_t *value);

#endif							/* ULIDFLAKE_TEXT_H */
