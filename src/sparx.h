/*-------------------------------------------------------------------------
 *
 * sparx.h
 *	  Sparx-64/128 block cipher and the Randflake id permutation built on it.
 *
 * Plain C without PostgreSQL headers, so the cipher can be tested alone
 * (test/unit/test_randflake.c, test/fuzz).
 *
 * A SparxKey holds the expanded key schedule.  Expanding costs about as
 * much as a few encryptions, so callers expand once per secret and keep
 * the result; encryption then touches nothing but the schedule and the
 * block, allocates nothing and cannot fail.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SPARX_H
#define SPARX_H

#include <stdint.h>

/* 8 steps of 3 rounds on each of 2 branches, then whitening */
#define SPARX64_STEPS 8
#define SPARX64_ROUNDS_PER_STEP 3
#define SPARX64_BRANCHES 2

/* one 6-word subkey per branch and step, plus one for the whitening */
#define SPARX64_SUBKEYS (SPARX64_BRANCHES * SPARX64_STEPS + 1)
#define SPARX64_SUBKEY_WORDS (2 * SPARX64_ROUNDS_PER_STEP)

typedef struct SparxKey
{
	uint16_t	k[SPARX64_SUBKEYS][SPARX64_SUBKEY_WORDS];
} SparxKey;

/* key words are big-endian: k[i] = key[2i] << 8 | key[2i + 1] */
extern void sparx64_key_schedule(SparxKey *ks, const uint8_t key[16]);

/* one block of four 16-bit words, in place */
extern void sparx64_encrypt(const SparxKey *ks, uint16_t block[4]);
extern void sparx64_decrypt(const SparxKey *ks, uint16_t block[4]);

/*
 * The Randflake id of a raw value and back: raw's 8 little-endian bytes,
 * read as four big-endian words, encrypted as one block, and the output
 * block read back the same way.  Callers convert to and from int64.
 */
extern uint64_t randflake_encrypt(const SparxKey *ks, uint64_t raw);
extern uint64_t randflake_decrypt(const SparxKey *ks, uint64_t id);

/*
 * RANDFLAKE_BATCH ids at once.  One block is a chain of about 130 dependent
 * instructions; eight side by side fill the 16-bit lanes of a vector
 * register and cost about a quarter of eight separate blocks.
 */
#define RANDFLAKE_BATCH 8

extern void randflake_encrypt_batch(const SparxKey *ks,
									const uint64_t raw[RANDFLAKE_BATCH],
									uint64_t id[RANDFLAKE_BATCH]);

#endif							/* SPARX_H */
