/*
 * keyscan_reference.h
 *	  The specification of src/keyscan.c done the slow way, shared by its
 *	  unit test (test/unit/test_keyscan.c) and its fuzz harness
 *	  (test/fuzz/fuzz_keyscan.c): randflake_secret, randflake_decode or
 *	  randflake_key, ASCII letters in any case, anywhere in the bytes.
 */
#ifndef KEYSCAN_REFERENCE_H
#define KEYSCAN_REFERENCE_H

#include <stdlib.h>
#include <string.h>

#include "keyscan.h"

static const char *const reference_words[] = {
	"randflake_secret", "randflake_decode", "randflake_key"
};

#define REFERENCE_NWORDS (sizeof(reference_words) / sizeof(reference_words[0]))

/* ASCII only: the scan must not depend on the C library's locale. */
static inline char
reference_lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char) (c - 'A' + 'a') : c;
}

static inline int
reference_mentions_key(const char *bytes, size_t len)
{
	for (size_t w = 0; w < REFERENCE_NWORDS; w++)
	{
		size_t		n = strlen(reference_words[w]);

		for (size_t i = 0; i + n <= len; i++)
		{
			size_t		k = 0;

			while (k < n && reference_lower(bytes[i + k]) == reference_words[w][k])
				k++;
			if (k == n)
				return 1;
		}
	}
	return 0;
}

/*
 * keyscan_mentions_key on a heap copy of exactly len bytes, so that a read
 * past the end shows under ASan or valgrind; *expected is set to the
 * reference's answer.
 */
static inline int
scan_exact_copy(const char *bytes, size_t len, int *expected)
{
	char	   *copy = malloc(len ? len : 1);
	int			found;

	if (copy == NULL)
		abort();
	memcpy(copy, bytes, len);
	found = keyscan_mentions_key(copy, len);
	*expected = reference_mentions_key(copy, len);
	free(copy);
	return found;
}

#endif							/* KEYSCAN_REFERENCE_H */
