/*-------------------------------------------------------------------------
 *
 * ulid_text.h
 *	  Crockford Base32 text form of ulidflake values.
 *
 * Plain C without PostgreSQL headers, so the parser can be fuzzed alone.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ULID_TEXT_H
#define ULID_TEXT_H

#include <stddef.h>
#include <stdint.h>

#define ULID_TEXT_LEN 13

typedef enum UlidParseStatus
{
	ULID_PARSE_OK,
	ULID_PARSE_MALFORMED,		/* wrong length or a character not in the
								 * alphabet */
	ULID_PARSE_OUT_OF_RANGE		/* well formed, but above 2^63 - 1 */
} UlidParseStatus;

extern void ulid_encode(uint64_t value, char *dst);
extern UlidParseStatus ulid_parse(const char *src, size_t len, uint64_t *value);

#endif							/* ULID_TEXT_H */
