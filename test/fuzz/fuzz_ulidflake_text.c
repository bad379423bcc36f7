/*
 * fuzz_ulidflake_text.c
 *	  libFuzzer harness for the ulidflake text codec (src/ulidflake_text.c).
 *
 * Build and run (see test/fuzz/README.md):
 *
 *	clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc \
 *		test/fuzz/fuzz_ulidflake_text.c src/ulidflake_text.c -o /tmp/fz_ulid
 *	/tmp/fz_ulid -max_total_time=60
 *
 * Each input is used three ways:
 *
 * 1. Raw: the bytes, copied to a heap block of exactly their length (so
 *	  ASan reports any read past len), go to ulidflake_parse.  Its status and
 *	  value must match a slow reference parser written from the
 *	  specification; on ULIDFLAKE_PARSE_OK, ulidflake_encode of the value must give
 *	  back the input in upper case, and on any other status the output
 *	  value must be left alone.
 * 2. Mapped: the first 13 bytes are mapped onto the alphabet (either case),
 *	  which makes a well-formed text from every input, so the round trip
 *	  text -> value -> text is exercised on every run rather than only on
 *	  the rare raw input that happens to be valid.
 * 3. Value: the first 8 bytes, as a little-endian uint64, are encoded into
 *	  an exact 13-byte block; the text must be 13 alphabet characters, and
 *	  parsing it must give the value back when it fits 63 bits, or
 *	  ULIDFLAKE_PARSE_OUT_OF_RANGE when the sign bit is set.
 *
 * Any failed check aborts, which libFuzzer reports as a crash with the
 * input that caused it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ulidflake_text.h"

static const char alphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

#define POISON UINT64_C(0xA5A5A5A5A5A5A5A5)

static void
fail(const char *what, const char *text, size_t len)
{
	fprintf(stderr, "fuzz_ulidflake_text: %s; text (%zu bytes):", what, len);
	for (size_t i = 0; i < len; i++)
		fprintf(stderr, " %02x", (unsigned char) text[i]);
	fprintf(stderr, "\n");
	abort();
}

/* ASCII only: the codec must not depend on the C library's locale. */
static char
ascii_upper(char c)
{
	return (c >= 'a' && c <= 'z') ? (char) (c - 'a' + 'A') : c;
}

/* Index of c in the alphabet, case-insensitively, or -1. */
static int
reference_digit(char c)
{
	char		u = ascii_upper(c);

	for (int i = 0; i < 32; i++)
		if (alphabet[i] == u)
			return i;
	return -1;
}

/* The specification, done the slow way. */
static UlidflakeParseStatus
reference_parse(const char *src, size_t len, uint64_t *value)
{
	uint64_t	result = 0;

	if (len != ULIDFLAKE_TEXT_LEN)
		return ULIDFLAKE_PARSE_MALFORMED;
	for (size_t i = 0; i < len; i++)
		if (reference_digit(src[i]) < 0)
			return ULIDFLAKE_PARSE_MALFORMED;
	if (reference_digit(src[0]) > 7)
		return ULIDFLAKE_PARSE_OUT_OF_RANGE;
	for (size_t i = 0; i < len; i++)
		result = result * 32 + (uint64_t) reference_digit(src[i]);
	*value = result;
	return ULIDFLAKE_PARSE_OK;
}

/* Parse text, compare with the reference, and check the round trip. */
static void
check_text(const char *text, size_t len)
{
	char	   *copy = malloc(len ? len : 1);
	uint64_t	value = POISON;
	uint64_t	expected = POISON;
	UlidflakeParseStatus status;
	UlidflakeParseStatus expected_status;

	if (copy == NULL)
		abort();
	memcpy(copy, text, len);

	status = ulidflake_parse(copy, len, &value);
	expected_status = reference_parse(copy, len, &expected);

	if (status != ULIDFLAKE_PARSE_OK && status != ULIDFLAKE_PARSE_MALFORMED &&
		status != ULIDFLAKE_PARSE_OUT_OF_RANGE)
		fail("ulidflake_parse returned an unknown status", copy, len);
	if (status != expected_status)
		fail(status == ULIDFLAKE_PARSE_OK ? "accepted text the reference rejects" :
			 expected_status == ULIDFLAKE_PARSE_OK ? "rejected valid text" :
			 "wrong rejection status (malformed vs out of range)",
			 copy, len);

	if (status == ULIDFLAKE_PARSE_OK)
	{
		char	   *encoded = malloc(ULIDFLAKE_TEXT_LEN + 1);

		if (encoded == NULL)
			abort();
		if (value != expected)
			fail("parsed value differs from the reference", copy, len);
		if (value > (uint64_t) INT64_MAX)
			fail("parsed value does not fit 63 bits", copy, len);
		ulidflake_encode(value, encoded);
		for (size_t i = 0; i < ULIDFLAKE_TEXT_LEN; i++)
			if (encoded[i] != ascii_upper(copy[i]))
				fail("encode(parse(x)) != upper(x)", copy, len);
		free(encoded);
	}
	else if (value != POISON)
		fail("ulidflake_parse wrote the value of rejected text", copy, len);

	free(copy);
}

/* Encode value and parse it back. */
static void
check_value(uint64_t value)
{
	char	   *encoded = malloc(ULIDFLAKE_TEXT_LEN + 1);
	uint64_t	back = POISON;
	UlidflakeParseStatus status;

	if (encoded == NULL)
		abort();
	ulidflake_encode(value, encoded);
	for (size_t i = 0; i < ULIDFLAKE_TEXT_LEN; i++)
		if (memchr(alphabet, encoded[i], 32) == NULL)
			fail("ulidflake_encode wrote a character outside the alphabet",
				 encoded, ULIDFLAKE_TEXT_LEN);

	status = ulidflake_parse(encoded, ULIDFLAKE_TEXT_LEN, &back);
	if (value <= (uint64_t) INT64_MAX)
	{
		if (encoded[0] > '7')
			fail("first character above 7 for a 63-bit value",
				 encoded, ULIDFLAKE_TEXT_LEN);
		if (status != ULIDFLAKE_PARSE_OK || back != value)
			fail("parse(encode(v)) != v", encoded, ULIDFLAKE_TEXT_LEN);
	}
	else if (status != ULIDFLAKE_PARSE_OUT_OF_RANGE)
		fail("encode(v) with the sign bit set is not out of range",
			 encoded, ULIDFLAKE_TEXT_LEN);
	free(encoded);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char		mapped[ULIDFLAKE_TEXT_LEN];
	uint64_t	value = 0;

	/* 1. the raw bytes */
	check_text((const char *) data, size);

	/* 2. the bytes mapped onto well-formed text (missing bytes are 0) */
	for (size_t i = 0; i < ULIDFLAKE_TEXT_LEN; i++)
	{
		uint8_t		b = i < size ? data[i] : 0;
		char		c = alphabet[b & 31];

		if ((b & 32) && c >= 'A' && c <= 'Z')
			c = (char) (c - 'A' + 'a');
		mapped[i] = c;
	}
	check_text(mapped, ULIDFLAKE_TEXT_LEN);

	/* 3. the first 8 bytes as a value, and that value without its sign bit */
	for (size_t i = 0; i < 8 && i < size; i++)
		value |= (uint64_t) data[i] << (8 * i);
	check_value(value);
	check_value(value & (uint64_t) INT64_MAX);

	return 0;
}
