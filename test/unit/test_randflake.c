/*
 * test_randflake.c
 *	  Unit test of the Sparx-64/128 cipher and the Randflake permutation
 *	  against the reference vectors, in both directions, one block at a
 *	  time and in batches.
 *
 *	  test/data/sparx64.tsv: key, plaintext -> ciphertext (block bytes)
 *	  test/data/randflake.tsv: secret, time, node, sequence -> raw -> id
 *
 * Prints one TAP line per vector and exits non-zero on any mismatch.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "randflake.h"
#include "sparx.h"

static int	tests = 0;
static int	failures = 0;

static void
check(int ok, const char *what, int line)
{
	tests++;
	if (!ok)
		failures++;
	printf("%sok %d - %s, line %d\n", ok ? "" : "not ", tests, what, line);
}

static int
parse_hex(const char *hex, uint8_t *out, size_t n)
{
	if (strlen(hex) != 2 * n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (sscanf(hex + 2 * i, "%2" SCNx8, &out[i]) != 1)
			return 0;
	return 1;
}

static FILE *
open_vectors(const char *dir, const char *name)
{
	char		path[1024];
	char		header[1024];
	FILE	   *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (f == NULL || fgets(header, sizeof(header), f) == NULL)
	{
		fprintf(stderr, "cannot read %s\n", path);
		exit(2);
	}
	return f;
}

static void
sparx_vectors(const char *dir)
{
	FILE	   *f = open_vectors(dir, "sparx64.tsv");
	char		line[1024];
	int			lineno = 1;

	while (fgets(line, sizeof(line), f))
	{
		char		key_hex[64],
					plain_hex[64],
					cipher_hex[64];
		uint8_t		key[16],
					plain[8],
					cipher[8];
		uint16_t	block[4];
		SparxKey	ks;
		int			ok = 1;

		lineno++;
		if (sscanf(line, "%63s %63s %63s", key_hex, plain_hex, cipher_hex) != 3 ||
			!parse_hex(key_hex, key, 16) || !parse_hex(plain_hex, plain, 8) ||
			!parse_hex(cipher_hex, cipher, 8))
		{
			check(0, "sparx64.tsv row parses", lineno);
			continue;
		}
		sparx64_key_schedule(&ks, key);
		for (int i = 0; i < 4; i++)
			block[i] = (uint16_t) (plain[2 * i] << 8 | plain[2 * i + 1]);
		sparx64_encrypt(&ks, block);
		for (int i = 0; i < 4; i++)
			ok &= block[i] == (uint16_t) (cipher[2 * i] << 8 | cipher[2 * i + 1]);
		check(ok, "sparx64 encrypts", lineno);
		sparx64_decrypt(&ks, block);
		ok = 1;
		for (int i = 0; i < 4; i++)
			ok &= block[i] == (uint16_t) (plain[2 * i] << 8 | plain[2 * i + 1]);
		check(ok, "sparx64 decrypts", lineno);
	}
	fclose(f);
}

/*
 * The batch form in every lane: raw in lane i, neighbours that differ, the
 * id expected back in lane i and the single-block result in the others.
 */
static int
batch_encrypts(const SparxKey *ks, uint64_t raw, uint64_t id)
{
	for (int lane = 0; lane < RANDFLAKE_BATCH; lane++)
	{
		uint64_t	in[RANDFLAKE_BATCH];
		uint64_t	out[RANDFLAKE_BATCH];

		for (int i = 0; i < RANDFLAKE_BATCH; i++)
			in[i] = i == lane ? raw : raw ^ ((uint64_t) (i + 1) << (7 * i));
		randflake_encrypt_batch(ks, in, out);
		for (int i = 0; i < RANDFLAKE_BATCH; i++)
			if (out[i] != (i == lane ? id : randflake_encrypt(ks, in[i])))
				return 0;
	}
	return 1;
}

static void
randflake_vectors(const char *dir)
{
	FILE	   *f = open_vectors(dir, "randflake.tsv");
	char		line[1024];
	int			lineno = 1;

	while (fgets(line, sizeof(line), f))
	{
		char		secret_hex[64];
		int64_t		unix_s,
					node,
					seq,
					raw,
					id;
		uint8_t		key[16];
		SparxKey	ks;
		uint64_t	expect_raw;

		lineno++;
		if (sscanf(line, "%63s %" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNd64,
				   secret_hex, &unix_s, &node, &seq, &raw, &id) != 6 ||
			!parse_hex(secret_hex, key, 16))
		{
			check(0, "randflake.tsv row parses", lineno);
			continue;
		}
		sparx64_key_schedule(&ks, key);
		expect_raw = ((uint64_t) (unix_s - RANDFLAKE_EPOCH_UNIX) << 34) |
			((uint64_t) node << 17) | (uint64_t) seq;
		check(expect_raw == (uint64_t) raw, "randflake raw layout", lineno);
		check(randflake_encrypt(&ks, (uint64_t) raw) == (uint64_t) id,
			  "randflake encrypts raw to the id", lineno);
		check(randflake_decrypt(&ks, (uint64_t) id) == (uint64_t) raw,
			  "randflake decrypts the id to raw", lineno);
		check(batch_encrypts(&ks, (uint64_t) raw, (uint64_t) id),
			  "randflake encrypts raw to the id in every lane of a batch", lineno);
	}
	fclose(f);
}

int
main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "test/data";

	sparx_vectors(dir);
	randflake_vectors(dir);
	printf("1..%d\n", tests);
	if (failures)
		fprintf(stderr, "%d of %d checks failed\n", failures, tests);
	return failures != 0;
}
