/*
 * fuzz_randflake_text.c
 *	  libFuzzer harness for the randflake text codec (src/randflake_text.c).
 *
 * Build and run (see test/fuzz/README.md):
 *
 *	clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc \
 *		test/fuzz/fuzz_randflake_text.c src/randflake_text.c -o /tmp/fz_randflake
 *	/tmp/fz_randflake -max_total_time=60
 *
 * The specification (README, "Reference": randflake_encode and
 * randflake_parse; src/randflake_text.c): a text is the
 * base-32 digits 0-9a-v of the uint64, most significant first, without
 * leading zeros; parsing also takes A-V, ignores any run of trailing '=',
 * accepts leading zeros in any number, and rejects as malformed an empty
 * text (after the padding) or one with any other byte, '=' before the end
 * included; a well-formed text whose value needs more than 64 bits is out
 * of range.  Form is checked before value.
 *
 * Each input is used three ways:
 *
 * 1. Raw: the bytes, copied to a heap block of exactly their length (so
 *	  ASan reports any read past len), go to randflake_parse.  Its status
 *	  and value must match a slow reference parser that decides range by
 *	  counting significant digits instead of watching shifts; on
 *	  RANDFLAKE_PARSE_OK, randflake_encode of the value must give back the
 *	  input in lower case without its padding and leading zeros, and on any
 *	  other status the output value must be left alone.
 * 2. Mapped: the first byte chooses how many leading zeros (0-15) and
 *	  trailing '=' (0-3) to add, and the next (up to 13) bytes are mapped
 *	  onto the digits (either case), which makes a well-formed text of 1 to
 *	  31 bytes from every input; this reaches the round trip and the
 *	  64-bit boundary on every run rather than only on the rare raw input
 *	  that happens to be valid.
 * 3. Value: the first 8 bytes, as a little-endian uint64, are encoded into
 *	  an exact RANDFLAKE_TEXT_MAXLEN + 1 byte block; the text must match a
 *	  reference encoder and be NUL-terminated, and parsing it (also in upper
 *	  case and with padding) must give the value back.
 *
 * Any failed check aborts, which libFuzzer reports as a crash with the
 * input that caused it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "randflake_text.h"

static const char digits_lower[] = "0123456789abcdefghijklmnopqrstuv";
static const char digits_upper[] = "0123456789ABCDEFGHIJKLMNOPQRSTUV";

#define POISON UINT64_C(0xA5A5A5A5A5A5A5A5)

static void
fail(const char *what, const char *text, size_t len)
{
	fprintf(stderr, "fuzz_randflake_text: %s; text (%zu bytes):", what, len);
	for (size_t i = 0; i < len; i++)
		fprintf(stderr, " %02x", (unsigned char) text[i]);
	fprintf(stderr, "\n");
	abort();
}

/* Value of c as a digit, either case, or -1: a search of both alphabets. */
static int
reference_digit(char c)
{
	for (int i = 0; i < 32; i++)
		if (digits_lower[i] == c || digits_upper[i] == c)
			return i;
	return -1;
}

/*
 * The specification, done the slow way.  A value fits 64 bits when it has
 * at most 13 significant digits and, with 13, the first is at most 'f'
 * (13 digits hold 65 bits, the first digit's top bit being the 65th).
 */
static RandflakeParseStatus
reference_parse(const char *src, size_t len, uint64_t *value)
{
	size_t		end = len;
	size_t		first = 0;
	uint64_t	result = 0;

	while (end > 0 && src[end - 1] == '=')
		end--;
	if (end == 0)
		return RANDFLAKE_PARSE_MALFORMED;
	for (size_t i = 0; i < end; i++)
		if (reference_digit(src[i]) < 0)
			return RANDFLAKE_PARSE_MALFORMED;

	while (first < end - 1 && reference_digit(src[first]) == 0)
		first++;
	if (end - first > RANDFLAKE_TEXT_MAXLEN)
		return RANDFLAKE_PARSE_OUT_OF_RANGE;
	if (end - first == RANDFLAKE_TEXT_MAXLEN && reference_digit(src[first]) > 15)
		return RANDFLAKE_PARSE_OUT_OF_RANGE;

	for (size_t i = first; i < end; i++)
		result = result * 32 + (uint64_t) reference_digit(src[i]);
	*value = result;
	return RANDFLAKE_PARSE_OK;
}

/*
 * The text of value the slow way: the number of digits from the bit
 * length, then each digit picked out by its position.
 */
static size_t
reference_encode(uint64_t value, char *dst)
{
	size_t		bits = 0;
	size_t		n;

	while (bits < 64 && (value >> bits) != 0)
		bits++;
	n = bits == 0 ? 1 : (bits + 4) / 5;
	for (size_t i = 0; i < n; i++)
		dst[i] = digits_lower[(value >> (5 * (n - 1 - i))) & 31];
	dst[n] = '\0';
	return n;
}

/*
 * Encode value into an exact heap block and check the text against the
 * reference encoder.  Returns the block, which the caller frees.
 */
static char *
checked_encode(uint64_t value, size_t *n)
{
	char	   *encoded = malloc(RANDFLAKE_TEXT_MAXLEN + 1);
	char		expected[RANDFLAKE_TEXT_MAXLEN + 1];
	size_t		expected_n = reference_encode(value, expected);

	if (encoded == NULL)
		abort();
	*n = randflake_encode(value, encoded);
	if (*n < 1 || *n > RANDFLAKE_TEXT_MAXLEN)
		fail("randflake_encode returned a length outside 1-13", expected,
			 expected_n);
	if (*n != expected_n || memcmp(encoded, expected, expected_n + 1) != 0)
		fail("randflake_encode differs from the reference (expected text shown)",
			 expected, expected_n);
	return encoded;
}

/* Parse text, compare with the reference, and check the round trip. */
static void
check_text(const char *text, size_t len)
{
	char	   *copy = malloc(len ? len : 1);
	uint64_t	value = POISON;
	uint64_t	expected = POISON;
	RandflakeParseStatus status;
	RandflakeParseStatus expected_status;

	if (copy == NULL)
		abort();
	memcpy(copy, text, len);

	status = randflake_parse(copy, len, &value);
	expected_status = reference_parse(copy, len, &expected);

	if (status != RANDFLAKE_PARSE_OK && status != RANDFLAKE_PARSE_MALFORMED &&
		status != RANDFLAKE_PARSE_OUT_OF_RANGE)
		fail("randflake_parse returned an unknown status", copy, len);
	if (status != expected_status)
		fail(status == RANDFLAKE_PARSE_OK ? "accepted text the reference rejects" :
			 expected_status == RANDFLAKE_PARSE_OK ? "rejected valid text" :
			 "wrong rejection status (malformed vs out of range)",
			 copy, len);

	if (status == RANDFLAKE_PARSE_OK)
	{
		size_t		end = len;
		size_t		first = 0;
		size_t		n;
		char	   *encoded;

		if (value != expected)
			fail("parsed value differs from the reference", copy, len);

		/* the canonical text: no padding, no leading zeros, lower case */
		while (end > 0 && copy[end - 1] == '=')
			end--;
		while (first < end - 1 && copy[first] == '0')
			first++;
		encoded = checked_encode(value, &n);
		if (n != end - first)
			fail("encode(parse(x)) has the wrong length", copy, len);
		for (size_t i = 0; i < n; i++)
			if (encoded[i] != digits_lower[reference_digit(copy[first + i])])
				fail("encode(parse(x)) != canonical(x)", copy, len);
		free(encoded);
	}
	else if (value != POISON)
		fail("randflake_parse wrote the value of rejected text", copy, len);

	free(copy);
}

/* Parse exactly len bytes of text in a heap block of that size. */
static void
expect_value(const char *text, size_t len, uint64_t value)
{
	char	   *copy = malloc(len);
	uint64_t	back = POISON;

	if (copy == NULL)
		abort();
	memcpy(copy, text, len);
	if (randflake_parse(copy, len, &back) != RANDFLAKE_PARSE_OK || back != value)
		fail("parse(encode(v)) != v", copy, len);
	free(copy);
}

/* Encode value and parse it back, as is, in upper case and padded. */
static void
check_value(uint64_t value, size_t padding)
{
	char		variant[RANDFLAKE_TEXT_MAXLEN + 3];
	size_t		n;
	char	   *encoded = checked_encode(value, &n);

	expect_value(encoded, n, value);

	for (size_t i = 0; i < n; i++)
		variant[i] = digits_upper[reference_digit(encoded[i])];
	expect_value(variant, n, value);

	memcpy(variant, encoded, n);
	memset(variant + n, '=', padding);
	expect_value(variant, n + padding, value);

	free(encoded);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char		mapped[15 + RANDFLAKE_TEXT_MAXLEN + 3];
	size_t		len = 0;
	uint64_t	value = 0;

	/* 1. the raw bytes */
	check_text((const char *) data, size);

	/* 2. the bytes mapped onto well-formed text */
	if (size > 0)
	{
		size_t		zeros = data[0] & 15;
		size_t		padding = (data[0] >> 4) & 3;

		for (size_t i = 0; i < zeros; i++)
			mapped[len++] = '0';
		for (size_t i = 1; i < size && i <= RANDFLAKE_TEXT_MAXLEN; i++)
			mapped[len++] = (data[i] & 32 ? digits_upper : digits_lower)[data[i] & 31];
		if (len == 0)
			mapped[len++] = '0';
		for (size_t i = 0; i < padding; i++)
			mapped[len++] = '=';
		check_text(mapped, len);
	}

	/* 3. the first 8 bytes as a value, and that value cut to fewer bits */
	for (size_t i = 0; i < 8 && i < size; i++)
		value |= (uint64_t) data[i] << (8 * i);
	check_value(value, size % 3);
	check_value(value >> (size % 64), (size + 1) % 3);

	return 0;
}
