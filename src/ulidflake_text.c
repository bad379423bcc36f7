/*-------------------------------------------------------------------------
 *
 * ulidflake_text.c
 *	  Crockford Base32 text form of ulidflake values.
 *
 * A value is written as 13 characters, five bits each, most significant
 * first; the first character carries only the top four bits (one of which
 * is the sign bit and must be clear), so it is at most '7'.  Input is
 * case-insensitive but accepts none of Crockford's aliases (I, L, O, U)
 * and no separators: the text form is a key, and one value must have one
 * spelling up to case.
 *
 *-------------------------------------------------------------------------
 */
#include "ulidflake_text.h"

/* the 32 digits, and room for the NUL that the string literal brings */
static const char ulidflake_digits[32 + 1] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/*
 * Digit value of each byte, or -1.  Bytes >= 0x80 are never digits, so
 * multibyte characters are rejected byte by byte.
 */
static const int8_t ulidflake_digit[256] = {
	['0'] = 0 + 1,['1'] = 1 + 1,['2'] = 2 + 1,['3'] = 3 + 1,
	['4'] = 4 + 1,['5'] = 5 + 1,['6'] = 6 + 1,['7'] = 7 + 1,
	['8'] = 8 + 1,['9'] = 9 + 1,
	['A'] = 10 + 1,['B'] = 11 + 1,['C'] = 12 + 1,['D'] = 13 + 1,
	['E'] = 14 + 1,['F'] = 15 + 1,['G'] = 16 + 1,['H'] = 17 + 1,
	['J'] = 18 + 1,['K'] = 19 + 1,['M'] = 20 + 1,['N'] = 21 + 1,
	['P'] = 22 + 1,['Q'] = 23 + 1,['R'] = 24 + 1,['S'] = 25 + 1,
	['T'] = 26 + 1,['V'] = 27 + 1,['W'] = 28 + 1,['X'] = 29 + 1,
	['Y'] = 30 + 1,['Z'] = 31 + 1,
	['a'] = 10 + 1,['b'] = 11 + 1,['c'] = 12 + 1,['d'] = 13 + 1,
	['e'] = 14 + 1,['f'] = 15 + 1,['g'] = 16 + 1,['h'] = 17 + 1,
	['j'] = 18 + 1,['k'] = 19 + 1,['m'] = 20 + 1,['n'] = 21 + 1,
	['p'] = 22 + 1,['q'] = 23 + 1,['r'] = 24 + 1,['s'] = 25 + 1,
	['t'] = 26 + 1,['v'] = 27 + 1,['w'] = 28 + 1,['x'] = 29 + 1,
	['y'] = 30 + 1,['z'] = 31 + 1,
};

size_t
ulidflake_encode(uint64_t value, char *dst)
{
	for (int i = ULIDFLAKE_TEXT_LEN - 1; i >= 0; i--)
	{
		dst[i] = ulidflake_digits[value & 31];
		value >>= 5;
	}
	dst[ULIDFLAKE_TEXT_LEN] = '\0';
	return ULIDFLAKE_TEXT_LEN;
}

/*
 * Parse len bytes at src.  Table entries are digit + 1 so that the
 * zero-initialized rest of the table means "not a digit".
 */
UlidflakeParseStatus
ulidflake_parse(const char *src, size_t len, uint64_t *value)
{
	uint64_t	result = 0;

	if (len != ULIDFLAKE_TEXT_LEN)
		return ULIDFLAKE_PARSE_MALFORMED;

	for (size_t i = 0; i < ULIDFLAKE_TEXT_LEN; i++)
	{
		int			digit = ulidflake_digit[(unsigned char) src[i]] - 1;

		if (digit < 0)
			return ULIDFLAKE_PARSE_MALFORMED;
		result = (result << 5) | (uint64_t) digit;
	}

	/* 13 digits hold 65 bits; the top two and the sign bit must be clear. */
	if (ulidflake_digit[(unsigned char) src[0]] - 1 > 7)
		return ULIDFLAKE_PARSE_OUT_OF_RANGE;

	*value = result;
	return ULIDFLAKE_PARSE_OK;
}
