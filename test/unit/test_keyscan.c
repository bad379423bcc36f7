/*
 * test_keyscan.c
 *	  Unit test of the log filter's scan for the words that mark a
 *	  Randflake key (src/keyscan.c), against a plain search written from
 *	  its specification: the offset of the first randflake_secret,
 *	  randflake_decode or randflake_key, in any case, in the bytes, and
 *	  whether execute is there.
 *
 *	  Each word is planted in every case pattern of its "randflake_"
 *	  prefix, at every offset of texts of every length up to a few blocks
 *	  (the vector loop and the tail meet at different offsets), in texts
 *	  of bytes that pass the scan's first test (r, f, _) or none; words cut
 *	  short by the end of the text, near misses and random texts rich in
 *	  the words' letters are compared with the reference.
 *
 *	  Every path of the scan the build and the CPU have (AVX2, portable) is
 *	  also called directly and compared with the reference.
 *
 *	  The scan's work is counted (the bytes it examines, KEYSCAN_STEP) on
 *	  texts of up to 4 MB made to make it work hardest: it must stay
 *	  within a small constant a byte, the same for every length.  The
 *	  log filter runs it while an error is reported, with interrupts
 *	  held, where a search that is quadratic in the statement's length
 *	  makes a backend that cannot be cancelled (issue 27).
 *
 * Prints one TAP line per group of checks and exits non-zero on any
 * mismatch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the scan itself, with its work counted */
static size_t steps;

#define KEYSCAN_STEP(n) (steps += (n))
#include "keyscan.c"

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

/*
 * The scan's paths, called directly: keyscan_find_key takes the one the
 * CPU allows, and each must answer the same.
 */
typedef size_t (*find_path) (const unsigned char *t, size_t len);

static find_path paths[2];
static const char *path_names[2];
static int	npaths;

static void
find_paths(void)
{
	paths[npaths] = find_portable;
	path_names[npaths++] = "portable";
#ifdef KEYSCAN_AVX2
	if (__builtin_cpu_supports("avx2"))
	{
		paths[npaths] = find_avx2;
		path_names[npaths++] = "AVX2";
	}
#endif
}

/* Do the scans, and each path of the scan, answer as the reference does? */
static int
agrees(const char *bytes, size_t len)
{
	ScanAnswers found;
	ScanAnswers expected;
	int			ok;
	char	   *copy;

	scan_exact_copy(bytes, len, &found, &expected);
	ok = found.key == expected.key && found.execute == expected.execute;
	copy = exact_copy(bytes, len);
	for (int p = 0; p < npaths; p++)
		ok &= paths[p] ((const unsigned char *) copy, len) == expected.key;
	free(copy);
	return ok;
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
					ok &= keyscan_find_key(bytes, len) <= at;
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
		"key", "k", "e", "x", "\xc3\xa9", " ", "execute", "EXEcut", "c", "u", "t"
	};
	char		bytes[4 * MAXLEN];
	int			ok = 1;
	int			found = 0;
	int			found_execute = 0;

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
		found_execute += reference_mentions_execute(bytes, len);
	}
	printf("# %d of 20000 random texts hold a word, %d execute\n", found, found_execute);
	check(ok && found > 0 && found < 20000 && found_execute > 0 && found_execute < 20000,
		  "random texts of the words' pieces");
}

/* execute in every case, at every offset, whole and cut short */
static void
execute_planted(void)
{
	char		bytes[80];
	int			ok = 1;

	for (unsigned mask = 0; mask < (1u << 7); mask++)
		for (size_t at = 0; at + 7 <= sizeof(bytes); at++)
		{
			memset(bytes, 'e', sizeof(bytes));
			for (size_t k = 0; k < 7; k++)
				bytes[at + k] = (mask >> k & 1) ? (char) ("EXECUTE"[k]) : "execute"[k];
			ok &= keyscan_mentions_execute(bytes, sizeof(bytes));
			ok &= agrees(bytes, sizeof(bytes));
			ok &= agrees(bytes, at + 6);
			bytes[at + 3] = 'k';
			ok &= !keyscan_mentions_execute(bytes, sizeof(bytes));
		}
	check(ok, "execute in every case at every offset, whole, cut short and broken");
}

/*
 * The scans' work, counted as the bytes they examine, on texts of 4 KB to
 * 4 MB made of patterns that pass the vector test at as many positions as
 * they can, or spell most of a word over and over: at most a small constant
 * a byte, the same at every length.  A search that compared every position
 * with a long piece, as the filter's once did, counts hundreds of thousands
 * a byte here.
 */
static void
linear_work(void)
{
	static const char *const patterns[] = {
		"x",
		"randflake_",			/* the prefix everywhere, never a word */
		"RandFlake_secre",		/* a near miss over and over */
		"randflake_keY.",		/* a word over and over: found at once */
		"r___f_____",			/* passes the test, fails at once */
		"rrrrfffff_",
		"rrrrRfffffF_____",
		"exec", "executx", "eeeeeeeexecut",
	};
	const size_t most = (size_t) 4 << 20;
	char	   *bytes = malloc(most);
	double		worst = 0;
	int			ok = 1;

	if (bytes == NULL)
		abort();
	for (size_t p = 0; p < sizeof(patterns) / sizeof(patterns[0]); p++)
		for (int path = 0; path < npaths; path++)
		{
			double		first = 0;

			/* lengths 4 kB to 4 MB in turn, up to the first that fails */
			for (int shift = 12; ok && shift <= 22; shift += 2)
			{
				size_t		len = (size_t) 1 << shift;
				double		per_byte;
				size_t		expected;

				fill_text(bytes, len, patterns[p]);
				/* a word at the very end, which the scan must reach */
				memcpy(bytes + len - 16, "randflake_secret", 16);
				expected = reference_find_key(bytes, len);
				steps = 0;
				ok &= paths[path] ((const unsigned char *) bytes, len) == expected;
				ok &= keyscan_mentions_execute(bytes, len) == reference_mentions_execute(bytes, len);
				per_byte = (double) steps / (double) len;
				if (first == 0)
					first = per_byte;

				/*
				 * the same constant at every length (within the ends' share,
				 * smaller the longer the bytes); each length is four times
				 * the one before, which would multiply a quadratic scan's by
				 * four
				 */
				ok &= per_byte <= first * 1.1;
				if (per_byte > worst)
					worst = per_byte;
			}
		}
	free(bytes);
	printf("# at most %.2f steps a byte, paths:", worst);
	for (int path = 0; path < npaths; path++)
		printf(" %s", path_names[path]);
	printf("\n");
	check(ok && worst <= 24, "the scans' work is linear: a bounded number of steps a byte at every length");
}

int
main(void)
{
	size_t		longest = 0;

	for (size_t w = 0; w < REFERENCE_NWORDS; w++)
		if (strlen(reference_words[w]) > longest)
			longest = strlen(reference_words[w]);
	find_paths();
	check(longest == KEYSCAN_LONGEST_WORD, "KEYSCAN_LONGEST_WORD is the longest word's length");
	planted();
	cases();
	near_misses();
	random_texts();
	execute_planted();
	linear_work();
	printf("1..%d\n", tests);
	if (failures)
		fprintf(stderr, "%d of %d checks failed\n", failures, tests);
	return failures != 0;
}
