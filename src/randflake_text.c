/*-------------------------------------------------------------------------
 *
 * randflake_text.c
 *	  Text form of randflake ids: the reference codec of gosuda/randflake.
 *
 * An id is written as the base-32 digits 0-9a-v of its 64 bits read as
 * unsigned, most significant first, without padding or leading zeros
 * (so 0 is "0" and the longest text is 13 digits).  This is what the
 * reference's Encode/Decode do, so texts move freely between the two.
 *
 * Parsing accepts upper case too and ignores trailing '=' padding, as the
 * reference does, but is stricter where the reference is silently lossy:
 * an empty text (the reference reads 0), '=' anywhere but at the end (the
 * reference stops at the first one and ignores what follows) and values
 * above 64 bits (the reference wraps) are errors.  Leading zeros are
 * accepted in any number: they do not change the value.
 *
 *-------------------------------------------------------------------------
 */
#include <stdbool.h>

#include "randflake_text.h"

/* the 32 digits, and room for the NUL that the string literal brings */
static const char randflake_digits[32 + 1] = "0123456789abcdefghijklmnopqrstuv";

/*
 * Value of the base-32 digit c, or -1.  Ranges rather than a table: the
 * whole alphabet is three runs, and bytes >= 0x80 (parts of multibyte
 * characters) fall outside all of them.
 */
static inline int
randflake_digit(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'v')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'V')
		return c - 'A' + 10;
	return -1;
}

size_t
randflake_encode(uint64_t value, char *dst)
{
	char		buf[RANDFLAKE_TEXT_MAXLEN];
	size_t		n = 0;

	/* least significant digit first, into the end of buf */
	do
	{
		buf[RANDFLAKE_TEXT_MAXLEN - 1 - n] = randflake_digits[value & 31];
		value >>= 5;
		n++;
	} while (value != 0);

	for (size_t i = 0; i < n; i++)
		dst[i] = buf[RANDFLAKE_TEXT_MAXLEN - n + i];
	dst[n] = '\0';
	return n;
}

/*
 * The whole text is checked for form before its value is: a text that is
 * not made of digits is malformed whatever its length.
 */
RandflakeParseStatus
randflake_parse(const char *src, size_t len, uint64_t *value)
{
	const unsigned char *s = (const unsigned char *) src;
	uint64_t	result = 0;
	bool		overflow = false;

	while (len > 0 && s[len - 1] == '=')
		len--;
	if (len == 0)
		return RANDFLAKE_PARSE_MALFORMED;

	for (size_t i = 0; i < len; i++)
	{
		int			digit = randflake_digit(s[i]);

		if (digit < 0)
			return RANDFLAKE_PARSE_MALFORMED;
		/* shifting out any set bit would lose it */
		if (result >> 59 != 0)
			overflow = true;
		result = (result << 5) | (uint64_t) digit;
	}

	if (overflow)
		return RANDFLAKE_PARSE_OUT_OF_RANGE;
	*value = result;
	return RANDFLAKE_PARSE_OK;
}
