/*-------------------------------------------------------------------------
 *
 * keyscan.c
 *	  Find the words that mark a statement carrying a Randflake key.
 *
 * The log filter (logfilter.c) looks for randflake_secret, randflake_decode
 * and randflake_key, in any case, in the statement and the text of every
 * log entry.  With log_statement = 'all' that is every statement, so the
 * scan must cost little next to writing the statement to the log: it reads
 * the text in place, without copying or lower-casing it.
 *
 * Every word begins with "randflake_".  A position is compared with the
 * words only where an r, an f four bytes on and a _ nine bytes on stand
 * there (r and f in either case), which few positions of any text pass.
 * That test is made for 64 positions at a time in a loop without branches,
 * which compilers turn into vector instructions (GCC 12 and later, and
 * clang, at -O2): on the 96 KB statement of test/bench/logging, 1.4
 * instructions a byte with SSE2 and 0.8 with AVX2, against 24 for the
 * byte-by-byte search with pg_strncasecmp() before it (callgrind).
 *
 * Plain C without PostgreSQL headers, so it can be tested and fuzzed alone.
 *
 *-------------------------------------------------------------------------
 */
#include "keyscan.h"

/*
 * x86-64 CPUs that have AVX2 (most since 2013) get a version of the scan
 * compiled for it, chosen when it runs; FLAKE_PORTABLE builds leave it out,
 * to test the other one.
 */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(FLAKE_PORTABLE)
#define KEYSCAN_AVX2
#endif

/*
 * Positions tested at a time: the more, the fewer times the vector of
 * results is reduced to one answer.
 */
#define BLOCK			64

/* the length of the shortest word, and how far past a position the test reads */
#define SHORTEST		13
#define LOOKAHEAD		9

static const char *const key_words[] = {
	"randflake_secret", "randflake_decode", "randflake_key"
};

/* ASCII letters in lower case, every other byte as it is */
static inline unsigned char
ascii_lower(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') ? (unsigned char) (c - 'A' + 'a') : c;
}

/*
 * Could a word begin at t[i]: r, f four bytes on, _ nine bytes on?  ORing
 * 0x20 maps R to r and F to f and no other byte to them; _ is compared as
 * it is.  No branch, so that a loop of these becomes vector instructions.
 */
static inline int
candidate(const unsigned char *t, size_t i)
{
	return ((t[i] | 0x20) == 'r') & ((t[i + 4] | 0x20) == 'f') &
		(t[i + LOOKAHEAD] == '_');
}

/* Does one of the words begin at p, in any case, before end? */
static bool
word_at(const char *p, const char *end)
{
	for (size_t w = 0; w < sizeof(key_words) / sizeof(key_words[0]); w++)
	{
		const char *word = key_words[w];
		size_t		i = 0;

		while (word[i] != '\0' && p + i < end &&
			   ascii_lower((unsigned char) p[i]) == (unsigned char) word[i])
			i++;
		if (word[i] == '\0')
			return true;
	}
	return false;
}

/*
 * The scan, compiled into each version below for that version's
 * instruction set.
 */
#ifdef KEYSCAN_AVX2
__attribute__((always_inline))
#endif
static inline bool
scan(const char *bytes, size_t len)
{
	const unsigned char *t = (const unsigned char *) bytes;
	const char *end = bytes + len;
	size_t		i = 0;

	for (; i + BLOCK + LOOKAHEAD <= len; i += BLOCK)
	{
		unsigned char any = 0;

		for (int j = 0; j < BLOCK; j++)
			any |= candidate(t, i + j);
		if (any)
			for (int j = 0; j < BLOCK; j++)
				if (candidate(t, i + j) && word_at(bytes + i + j, end))
					return true;
	}
	for (; i + SHORTEST <= len; i++)
		if (candidate(t, i) && word_at(bytes + i, end))
			return true;
	return false;
}

#ifdef KEYSCAN_AVX2
/* 32 positions an instruction instead of SSE2's 16: about half the time */
__attribute__((target("avx2")))
static bool
scan_avx2(const char *bytes, size_t len)
{
	return scan(bytes, len);
}
#endif

bool
keyscan_mentions_key(const char *bytes, size_t len)
{
#ifdef KEYSCAN_AVX2
	if (__builtin_cpu_supports("avx2"))
		return scan_avx2(bytes, len);
#endif
	return scan(bytes, len);
}
