/*
 * keyscan_reference.h
 *	  The specification of src/keyscan.c done the slow way, shared by its
 *	  unit test (test/unit/test_keyscan.c) and its fuzz harness
 *	  (test/fuzz/fuzz_keyscan.c): the offset of the first randflake_secret,
 *	  randflake_decode or randflake_key, ASCII letters in any case, in the
 *	  bytes; and whether execute is there, in any case.
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

/* Does word (lower case) stand at bytes[i], in any case, before len? */
static inline int
reference_word_at(const char *bytes, size_t len, size_t i, const char *word)
{
	size_t		n = strlen(word);
	size_t		k = 0;

	if (i + n > len)
		return 0;
	while (k < n && reference_lower(bytes[i + k]) == word[k])
		k++;
	return k == n;
}

/* the offset of the first of the words, or len */
static inline size_t
reference_find_key(const char *bytes, size_t len)
{
	for (size_t i = 0; i < len; i++)
		for (size_t w = 0; w < REFERENCE_NWORDS; w++)
			if (reference_word_at(bytes, len, i, reference_words[w]))
				return i;
	return len;
}

static inline int
reference_mentions_key(const char *bytes, size_t len)
{
	return reference_find_key(bytes, len) < len;
}

static inline int
reference_mentions_execute(const char *bytes, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (reference_word_at(bytes, len, i, "execute"))
			return 1;
	return 0;
}

/*
 * A heap copy of exactly len bytes, so that a read past the end shows under
 * ASan or valgrind.
 */
static inline char *
exact_copy(const char *bytes, size_t len)
{
	char	   *copy = malloc(len ? len : 1);

	if (copy == NULL)
		abort();
	memcpy(copy, bytes, len);
	return copy;
}

/* what the scans answer: the first word's offset, whether execute is there */
typedef struct ScanAnswers
{
	size_t		key;
	int			execute;
} ScanAnswers;

/* The scans on an exact copy, and the reference's answers. */
static inline void
scan_exact_copy(const char *bytes, size_t len, ScanAnswers *found, ScanAnswers *expected)
{
	char	   *copy = exact_copy(bytes, len);

	found->key = keyscan_find_key(copy, len);
	found->execute = keyscan_mentions_execute(copy, len);
	expected->key = reference_find_key(copy, len);
	expected->execute = reference_mentions_execute(copy, len);
	free(copy);
}

#endif							/* KEYSCAN_REFERENCE_H */
