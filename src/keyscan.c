/*-------------------------------------------------------------------------
 *
 * keyscan.c
 *	  Find the words that mark a statement carrying a Randflake key.
 *
 * The log filter (logfilter.c) looks for randflake_secret, randflake_decode
 * and randflake_key, in any case, in the statement and the text of every
 * log entry.  With log_statement = 'all' that is every statement, so the
 * scan must cost little next to writing the statement to the log: it reads
 * the text once, in place, without copying or lower-casing it.  And as it
 * also runs while an error is reported, with interrupts held, its work
 * must be linear in the length of the text whatever the text is.
 *
 * Every word begins with "randflake_".  A position is compared with the
 * words only where an r stands (in either case) and a _ nine bytes on,
 * which few positions of any text pass (the 96 KB statement of
 * test/bench/logging, JSON with snake_case keys, has none); comparing a
 * position reads at most the sixteen bytes of one word, so that even a
 * text made to pass the test everywhere costs a bounded number of steps a
 * byte.  The test is made for many positions at a time: with AVX2
 * instructions, where the CPU has them, 32 positions an instruction,
 * giving the positions that pass as a bit mask (about 0.3 instructions a
 * byte); else in a loop without branches over 256 positions, which
 * compilers turn into vector instructions (SSE2 on any x86-64, NEON on
 * ARM: about 0.8 instructions a byte with SSE2).
 *
 * Plain C without PostgreSQL headers, so it can be tested and fuzzed alone.
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>

#include "keyscan.h"

/*
 * x86-64 CPUs that have AVX2 (most since 2013) get a version of the scan
 * for it, chosen when it runs; FLAKE_PORTABLE builds leave it out, to test
 * the other one.
 */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(FLAKE_PORTABLE)
#define KEYSCAN_AVX2
#include <immintrin.h>
#endif

/*
 * test/unit/test_keyscan.c counts the bytes the scan examines, to check
 * that they grow linearly with the text; elsewhere this is nothing.
 */
#ifndef KEYSCAN_STEP
#define KEYSCAN_STEP(n) ((void) 0)
#endif

/* what every word begins with, and its length */
#define PREFIX			"randflake_"
#define PREFIX_LEN		10
/* the length of the shortest word, and how far past a position the test reads */
#define SHORTEST		13
#define LOOKAHEAD		9
/*
 * positions tested at a time by the portable loop: the more, the fewer
 * times its vector of results is reduced to one answer
 */
#define BLOCK			256

/* ASCII letters in lower case, every other byte as it is */
static inline unsigned char
ascii_lower(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') ? (unsigned char) (c - 'A' + 'a') : c;
}

/*
 * Do the first n bytes at t spell word (in lower case), in any case?
 */
static inline bool
spells(const unsigned char *t, const char *word, size_t n)
{
	for (size_t k = 0; k < n; k++)
	{
		KEYSCAN_STEP(1);
		if (ascii_lower(t[k]) != (unsigned char) word[k])
			return false;
	}
	return true;
}

/*
 * Could a word begin at t[i]: r, and _ nine bytes on?  ORing 0x20 maps R
 * to r and no other byte to it; _ is compared as it is.  No branch, so
 * that a loop of these becomes vector instructions.
 */
static inline int
candidate(const unsigned char *t, size_t i)
{
	return ((t[i] | 0x20) == 'r') & (t[i + LOOKAHEAD] == '_');
}

/*
 * The same as a byte of all ones or all zeros, the form a vector comparison
 * gives, so that a loop ORing them together needs no conversion.
 */
static inline unsigned char
candidate_mask(const unsigned char *t, size_t i)
{
	return (unsigned char) (((t[i] | 0x20) == 'r' ? 0xff : 0) &
							(t[i + LOOKAHEAD] == '_' ? 0xff : 0));
}

/*
 * Does one of the words begin at t, of which len bytes are left?  The
 * prefix, then the rest of the one word its next letter can begin.
 */
static bool
word_at(const unsigned char *t, size_t len)
{
	const char *rest;
	size_t		rest_len;

	if (len < SHORTEST || !spells(t, PREFIX, PREFIX_LEN))
		return false;
	switch (ascii_lower(t[PREFIX_LEN]))
	{
		case 's':
			rest = "secret";
			rest_len = 6;
			break;
		case 'd':
			rest = "decode";
			rest_len = 6;
			break;
		case 'k':
			rest = "key";
			rest_len = 3;
			break;
		default:
			return false;
	}
	return len - PREFIX_LEN >= rest_len && spells(t + PREFIX_LEN, rest, rest_len);
}

/* The positions from start on one at a time, for the end of the text. */
static size_t
find_from(const unsigned char *t, size_t start, size_t len)
{
	for (size_t i = start; i + SHORTEST <= len; i++)
	{
		KEYSCAN_STEP(1);
		if (candidate(t, i) && word_at(t + i, len - i))
			return i;
	}
	return len;
}

/*
 * The portable scan: blocks of positions tested without a branch, and a
 * block where one passes tested again one position at a time.
 */
static size_t
find_portable(const unsigned char *t, size_t len)
{
	size_t		i = 0;

	for (; i + BLOCK + LOOKAHEAD <= len; i += BLOCK)
	{
		unsigned char any = 0;

		KEYSCAN_STEP(BLOCK);
		for (int j = 0; j < BLOCK; j++)
			any |= candidate_mask(t, i + j);
		if (any)
			for (int j = 0; j < BLOCK; j++)
			{
				KEYSCAN_STEP(1);
				if (candidate(t, i + j) && word_at(t + i + j, len - i - j))
					return i + j;
			}
	}
	return find_from(t, i, len);
}

#ifdef KEYSCAN_AVX2
/*
 * 64 positions a round, as two masks of 32 bits with a bit for each
 * position that passes the test: only those are compared with the words.
 */
__attribute__((target("avx2")))
static size_t
find_avx2(const unsigned char *t, size_t len)
{
	const __m256i case_bit = _mm256_set1_epi8(0x20);
	const __m256i r = _mm256_set1_epi8('r');
	const __m256i underscore = _mm256_set1_epi8('_');
	size_t		i = 0;

	for (; i + 64 + LOOKAHEAD <= len; i += 64)
	{
		uint64_t	passed = 0;

		KEYSCAN_STEP(64);
		for (int half = 0; half < 2; half++)
		{
			const unsigned char *p = t + i + 32 * half;
			__m256i		at_r = _mm256_cmpeq_epi8(_mm256_or_si256(_mm256_loadu_si256((const __m256i *) p), case_bit), r);
			__m256i		at_underscore = _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *) (p + LOOKAHEAD)), underscore);

			passed |= (uint64_t) (uint32_t) _mm256_movemask_epi8(_mm256_and_si256(at_r, at_underscore)) << (32 * half);
		}
		for (; passed != 0; passed &= passed - 1)
		{
			size_t		at = i + (size_t) __builtin_ctzll(passed);

			if (word_at(t + at, len - at))
				return at;
		}
	}
	return find_from(t, i, len);
}
#endif

size_t
keyscan_find_key(const char *bytes, size_t len)
{
	const unsigned char *t = (const unsigned char *) bytes;

	if (len < SHORTEST)
		return len;
#ifdef KEYSCAN_AVX2
	if (__builtin_cpu_supports("avx2"))
		return find_avx2(t, len);
#endif
	return find_portable(t, len);
}

/*
 * A plain search: the word is short and its first letter recurs in it
 * only at its end, so each position costs at most its seven bytes.
 */
bool
keyscan_mentions_execute(const char *bytes, size_t len)
{
	const unsigned char *t = (const unsigned char *) bytes;

	for (size_t i = 0; i + 7 <= len; i++)
	{
		KEYSCAN_STEP(1);
		if ((t[i] | 0x20) == 'e' && spells(t + i, "execute", 7))
			return true;
	}
	return false;
}
