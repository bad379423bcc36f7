/*
 * fuzz_keyscan.c
 *	  libFuzzer harness for the log filter's scan (src/keyscan.c).
 *
 * Build and run (see test/fuzz/README.md):
 *
 *	clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc \
 *		test/fuzz/fuzz_keyscan.c src/keyscan.c -o /tmp/fz_keyscan
 *	/tmp/fz_keyscan -max_total_time=60
 *
 * Each input is used two ways, each copied to a heap block of exactly its
 * length (so ASan reports any read past the end):
 *
 * 1. Raw: keyscan_find_key must give the offset a slow reference search
 *	  written from the specification gives (the first randflake_secret,
 *	  randflake_decode or randflake_key, ASCII letters in any case), and
 *	  keyscan_mentions_execute the reference's answer.
 * 2. Planted: the first two bytes choose a word and a position; the word
 *	  is written there (in the case pattern of the third byte), and the
 *	  scan must find it there or before, and agree with the reference on
 *	  the text cut short one byte before the word's end.
 *
 * Any failed check aborts, which libFuzzer reports as a crash with the
 * input that caused it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/keyscan_reference.h"

static void
fail(const char *what, const char *bytes, size_t len)
{
	fprintf(stderr, "fuzz_keyscan: %s; text (%zu bytes):", what, len);
	for (size_t i = 0; i < len; i++)
		fprintf(stderr, " %02x", (unsigned char) bytes[i]);
	fprintf(stderr, "\n");
	abort();
}

/* The scans on an exact heap copy, against the reference. */
static size_t
check_text(const char *bytes, size_t len)
{
	ScanAnswers found;
	ScanAnswers expected;

	scan_exact_copy(bytes, len, &found, &expected);
	if (found.key != expected.key)
		fail(found.key < expected.key ? "found a word before the reference's first" :
			 "missed a word the reference finds", bytes, len);
	if (found.execute != expected.execute)
		fail("execute: not the reference's answer", bytes, len);
	return found.key;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *word;
	size_t		n;
	size_t		at;
	char	   *bytes;

	/* 1. the raw bytes */
	check_text((const char *) data, size);

	/* 2. a word planted at a position the input chooses */
	if (size < 3)
		return 0;
	word = reference_words[data[0] % REFERENCE_NWORDS];
	n = strlen(word);
	if (size < n)
		return 0;
	at = data[1] % (size - n + 1);
	bytes = malloc(size);

	if (bytes == NULL)
		abort();
	memcpy(bytes, data, size);
	for (size_t k = 0; k < n; k++)
		bytes[at + k] = (k < 8 && (data[2] >> k & 1) && word[k] >= 'a' && word[k] <= 'z') ?
			(char) (word[k] - 'a' + 'A') : word[k];

	if (check_text(bytes, size) > at)
		fail("missed a planted word", bytes, size);
	check_text(bytes, at + n - 1);
	free(bytes);
	return 0;
}
