/*
 * fuzz_sparx.c
 *	  libFuzzer harness for the Sparx-64/128 cipher and the randflake id
 *	  permutation (src/sparx.c).
 *
 * Build and run (see test/fuzz/README.md):
 *
 *	clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc \
 *		test/fuzz/fuzz_sparx.c src/sparx.c -o /tmp/fz_sparx
 *	/tmp/fz_sparx -max_total_time=60
 *
 * The input is read as a 16-byte key, an 8-byte block and an 8-byte
 * randflake value (missing bytes are 0).  The known-answer tests live in
 * the unit tests; this checks the properties that must hold for every key
 * and block:
 *
 * 1. The key schedule writes every byte of the SparxKey and nothing but
 *	  the key: two expansions into blocks prefilled differently are equal.
 *	  Key and schedule sit in heap blocks of exactly their size, so ASan
 *	  reports any access past them.
 * 2. sparx64_decrypt(sparx64_encrypt(x)) == x and the other way round,
 *	  on an exact 8-byte heap block.
 * 3. randflake_decrypt(randflake_encrypt(v)) == v and the other way round,
 *	  and randflake_encrypt(v) is sparx64_encrypt of v's 8 little-endian
 *	  bytes read as four big-endian words, the output read back the same
 *	  way (the byte order of gosuda/randflake v1.8.0, which the README's
 *	  "randflake_next()" names as the reference, and whose vectors are in
 *	  test/data), here done byte by byte through memory.
 * 4. randflake_encrypt_batch gives what randflake_encrypt gives, lane by
 *	  lane, on exact heap blocks.
 *
 * Any failed check aborts, which libFuzzer reports as a crash with the
 * input that caused it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sparx.h"

#define KEY_BYTES 16

static void
fail(const char *what, const uint8_t *key, uint64_t value)
{
	fprintf(stderr, "fuzz_sparx: %s; key", what);
	for (int i = 0; i < KEY_BYTES; i++)
		fprintf(stderr, "%s%02x", i ? "" : " ", key[i]);
	fprintf(stderr, ", value 0x%016llx\n", (unsigned long long) value);
	abort();
}

static void *
checked_malloc(size_t size)
{
	void	   *p = malloc(size);

	if (p == NULL)
		abort();
	return p;
}

static uint64_t
block_to_u64(const uint16_t block[4])
{
	return (uint64_t) block[0] | (uint64_t) block[1] << 16 |
		(uint64_t) block[2] << 32 | (uint64_t) block[3] << 48;
}

/* The randflake block of v, going through v's little-endian bytes. */
static void
reference_to_block(uint64_t v, uint16_t block[4])
{
	uint8_t		bytes[8];

	for (int i = 0; i < 8; i++)
		bytes[i] = (uint8_t) (v >> (8 * i));
	for (int i = 0; i < 4; i++)
		block[i] = (uint16_t) (bytes[2 * i] << 8 | bytes[2 * i + 1]);
}

static uint64_t
reference_from_block(const uint16_t block[4])
{
	uint64_t	v = 0;

	for (int i = 0; i < 4; i++)
	{
		v |= (uint64_t) (block[i] >> 8) << (16 * i);
		v |= (uint64_t) (block[i] & 0xff) << (16 * i + 8);
	}
	return v;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t		input[KEY_BYTES + 16] = {0};
	uint8_t    *key = checked_malloc(KEY_BYTES);
	SparxKey   *ks = checked_malloc(sizeof(SparxKey));
	SparxKey   *ks2 = checked_malloc(sizeof(SparxKey));
	uint16_t   *block = checked_malloc(4 * sizeof(uint16_t));
	uint16_t	plain[4];
	uint16_t	ref[4];
	uint64_t	raw = 0;
	uint64_t	id;

	if (size > 0)
		memcpy(input, data, size < sizeof(input) ? size : sizeof(input));
	memcpy(key, input, KEY_BYTES);
	for (int i = 0; i < 4; i++)
		plain[i] = (uint16_t) (input[KEY_BYTES + 2 * i] |
							   input[KEY_BYTES + 2 * i + 1] << 8);
	for (int i = 0; i < 8; i++)
		raw |= (uint64_t) input[KEY_BYTES + 8 + i] << (8 * i);

	/* 1. the key schedule is a function of the key alone */
	memset(ks, 0xa5, sizeof(SparxKey));
	memset(ks2, 0x5a, sizeof(SparxKey));
	sparx64_key_schedule(ks, key);
	sparx64_key_schedule(ks2, key);
	if (memcmp(ks, ks2, sizeof(SparxKey)) != 0)
		fail("key schedule leaves bytes unwritten or is not deterministic",
			 key, 0);

	/* 2. the block cipher is a permutation, decryption its inverse */
	memcpy(block, plain, sizeof(plain));
	sparx64_encrypt(ks, block);
	sparx64_decrypt(ks, block);
	if (memcmp(block, plain, sizeof(plain)) != 0)
		fail("decrypt(encrypt(x)) != x", key, block_to_u64(plain));
	sparx64_decrypt(ks, block);
	sparx64_encrypt(ks, block);
	if (memcmp(block, plain, sizeof(plain)) != 0)
		fail("encrypt(decrypt(x)) != x", key, block_to_u64(plain));

	/* 3. the randflake permutation */
	id = randflake_encrypt(ks, raw);
	if (randflake_decrypt(ks, id) != raw)
		fail("randflake_decrypt(randflake_encrypt(v)) != v", key, raw);
	if (randflake_encrypt(ks, randflake_decrypt(ks, raw)) != raw)
		fail("randflake_encrypt(randflake_decrypt(v)) != v", key, raw);
	reference_to_block(raw, ref);
	sparx64_encrypt(ks, ref);
	if (reference_from_block(ref) != id)
		fail("randflake_encrypt(v) differs from sparx64_encrypt of v's bytes",
			 key, raw);

	/* 4. the batch form agrees with single blocks in every lane */
	{
		uint64_t   *in = checked_malloc(RANDFLAKE_BATCH * sizeof(uint64_t));
		uint64_t   *out = checked_malloc(RANDFLAKE_BATCH * sizeof(uint64_t));

		for (int i = 0; i < RANDFLAKE_BATCH; i++)
			in[i] = raw * (uint64_t) (2 * i + 1) + (uint64_t) i;
		randflake_encrypt_batch(ks, in, out);
		for (int i = 0; i < RANDFLAKE_BATCH; i++)
			if (out[i] != randflake_encrypt(ks, in[i]))
				fail("randflake_encrypt_batch differs from randflake_encrypt",
					 key, in[i]);
		free(out);
		free(in);
	}

	free(block);
	free(ks2);
	free(ks);
	free(key);
	return 0;
}
