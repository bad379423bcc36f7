/*
 * test_keyscan.c
 *	  Unit test of the log filter's scan for the words that mark a
 *	  Randflake key (src/keyscan.c), against a plain search written from
 *	  its specification: randflake_secret, randflake_decode or
 *	  randflake_key, in any case, anywhere in the bytes.
 *
 *	  Each word is planted in every case pattern of its "randflake_"
 *	  prefix, at every offset of texts of every length up to a few blocks
 *	  (the vector loop and the tail meet at different offsets), in texts
 *	  of bytes that pass the scan's first test (r, f, _) or none; words cut
 *	  short by the end of the text, near misses and random texts rich in
 *	  the words' letters are compared with the reference.
 *
 * Prints one TAP line per group of checks and exits non-zero on any
 * mismatch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keyscan_reference.h"

#define MAXLEN 300

static int	tests = 0;
static int	failures = 0;

static void
check(int ok, const char *what)
{
	tests++;
	if (!ok)
		failures++;
	printf("%sok %d - %s\n", ok ? "" : "not ", tests, what);
}

/* Does the scan answer as the reference does? */
static int
agrees(const char *bytes, size_t len)
{
	int			expected;

	return scan_exact_copy(bytes, len, &expected) == expected;
}

/* Fill with the bytes of fill, over and over. */
static void
fill_text(char *bytes, size_t len, const char *fill)
{
	size_t		n = strlen(fill);

	for (size_t i = 0; i < len; i++)
		bytes[i] = fill[i % n];
}

/* Every word at every offset of every length, in each of the fills. */
static void
planted(void)
{
	static const char *const fills[] = {
		"x",					/* passes no test */
		"r___fffff_",			/* bytes of the first test everywhere */
		"RANDFLAKE_",			/* the prefix, never a whole word */
		"randflake_sec",		/* a near miss over and over */
	};
	char		bytes[MAXLEN];

	for (size_t f = 0; f < sizeof(fills) / sizeof(fills[0]); f++)
	{
		int			ok = 1;

		for (size_t w = 0; w < REFERENCE_NWORDS; w++)
		{
			size_t		n = strlen(reference_words[w]);

			for (size_t len = 0; len <= MAXLEN; len++)
			{
				fill_text(bytes, len, fills[f]);
				ok &= agrees(bytes, len);
				for (size_t at = 0; at + n <= len; at++)
				{
					fill_text(bytes, len, fills[f]);
					memcpy(bytes + at, reference_words[w], n);
					ok &= agrees(bytes, len);
					ok &= keyscan_mentions_key(bytes, len);
					/* and cut short by the end of the text */
					ok &= agrees(bytes, at + n - 1);
				}
			}
		}
		printf("# fill \"%s\"\n", fills[f]);
		check(ok, "every word at every offset, whole and cut short");
	}
}

/* The words in every case pattern of their first ten letters. */
static void
cases(void)
{
	int			ok = 1;
	char		bytes[64];

	for (size_t w = 0; w < REFERENCE_NWORDS; w++)
		for (unsigned mask = 0; mask < (1u << 10); mask++)
		{
			size_t		n = strlen(reference_words[w]);

			memset(bytes, ' ', sizeof(bytes));
			for (size_t k = 0; k < n; k++)
			{
				char		c = reference_words[w][k];

				bytes[20 + k] = (k < 10 && (mask >> k & 1) && c >= 'a' && c <= 'z') ?
					(char) (c - 'a' + 'A') : c;
			}
			ok &= keyscan_mentions_key(bytes, sizeof(bytes));
			ok &= agrees(bytes, sizeof(bytes));
		}
	check(ok, "every case of the words' letters");
}

/* Near misses: one byte of a word changed, in place. */
static void
near_misses(void)
{
	int			ok = 1;
	char		bytes[100];

	for (size_t w = 0; w < REFERENCE_NWORDS; w++)
	{
		size_t		n = strlen(reference_words[w]);

		for (size_t k = 0; k < n; k++)
			for (int c = 1; c < 256; c++)
			{
				memset(bytes, '.', sizeof(bytes));
				memcpy(bytes + 70, reference_words[w], n);
				bytes[70 + k] = (char) c;

				ok &= agrees(bytes, sizeof(bytes));
			}
	}
	check(ok, "every one-byte change of each word (upper case letters, other bytes, 0x20 apart)");
}

/* Random texts of the words' letters, the prefix and underscores. */
static void
random_texts(void)
{
	static const char pieces[][12] = {
		"r", "R", "f", "F", "_", "randflake_", "RandFlake_", "secret", "DECODE",
		"key", "k", "e", "x", "\xc3\xa9", " "
	};
	char		bytes[4 * MAXLEN];
	int			ok = 1;
	int			found = 0;

	srand(18);
	for (int round = 0; round < 20000; round++)
	{
		size_t		len = 0;
		size_t		want = (size_t) rand() % MAXLEN;

		while (len < want)
		{
			const char *p = pieces[rand() % (int) (sizeof(pieces) / sizeof(pieces[0]))];
			size_t		n = strlen(p);

			memcpy(bytes + len, p, n);
			len += n;
		}
		ok &= agrees(bytes, len);
		found += reference_mentions_key(bytes, len);
	}
	printf("# %d of 20000 random texts hold a word\n", found);
	check(ok && found > 0, "random texts of the words' pieces");
}

int
main(void)
{
	size_t		longest = 0;

	for (size_t w = 0; w < REFERENCE_NWORDS; w++)
		if (strlen(reference_words[w]) > longest)
			longest = strlen(reference_words[w]);
	check(longest == KEYSCAN_LONGEST_WORD, "KEYSCAN_LONGEST_WORD is the longest word's length");
	planted();
	cases();
	near_misses();
	random_texts();
	printf("1..%d\n", tests);
	if (failures)
		fprintf(stderr, "%d of %d checks failed\n", failures, tests);
	return failures != 0;
}
