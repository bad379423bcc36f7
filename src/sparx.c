/*-------------------------------------------------------------------------
 *
 * sparx.c
 *	  Sparx-64/128 block cipher and the Randflake id permutation built on it.
 *
 * Sparx-64/128 (Dinu, Perrin, Udovenko, Velichkov, Großschädl, Biryukov,
 * "Design Strategies for ARX with Provable Bounds: SPARX and LAX", 2016) is
 * a 64-bit block cipher with a 128-bit key: 8 steps, each 3 rounds of the
 * keyless Speck-32 round function on each of two 32-bit branches followed
 * by a linear mixing layer, then a whitening key.  This follows the
 * designers' reference code (cryptolu/SPARX ref-c) word for word, as do
 * the Go, Python and TypeScript versions in gosuda/randflake; the official
 * test vector is the first row of test/data/sparx64.tsv.
 *
 * Everything is written out straight: the rounds are inline functions on
 * local 16-bit words and each step is spelt out, so the compiler keeps
 * the whole block in registers, turns the rotations into rol/ror and
 * schedules the two independent branches side by side.  There are no
 * table lookups, so timing does not depend on the key or the data.
 *
 *-------------------------------------------------------------------------
 */
#include "sparx.h"

static inline uint16_t
rotl16(uint16_t x, unsigned n)
{
	return (uint16_t) ((x << n) | (x >> (16 - n)));
}

/* Keyless Speck-32 round, the A of the specification. */
static inline void
sparx_a(uint16_t *l, uint16_t *r)
{
	*l = (uint16_t) (rotl16(*l, 9) + *r);
	*r = rotl16(*r, 2) ^ *l;
}

static inline void
sparx_a_inv(uint16_t *l, uint16_t *r)
{
	*r = rotl16((uint16_t) (*r ^ *l), 14);
	*l = rotl16((uint16_t) (*l - *r), 7);
}

/*
 * One step of one branch: three key additions and rounds with the six
 * words of subkey k.
 */
static inline void
sparx_branch(uint16_t *l, uint16_t *r, const uint16_t *k)
{
	*l ^= k[0];
	*r ^= k[1];
	sparx_a(l, r);
	*l ^= k[2];
	*r ^= k[3];
	sparx_a(l, r);
	*l ^= k[4];
	*r ^= k[5];
	sparx_a(l, r);
}

static inline void
sparx_branch_inv(uint16_t *l, uint16_t *r, const uint16_t *k)
{
	sparx_a_inv(l, r);
	*l ^= k[4];
	*r ^= k[5];
	sparx_a_inv(l, r);
	*l ^= k[2];
	*r ^= k[3];
	sparx_a_inv(l, r);
	*l ^= k[0];
	*r ^= k[1];
}

/*
 * The linear layer L_2: a Feistel-like mix of the left branch into the
 * right one, then the branches swap.
 */
static inline void
sparx_l(uint16_t x[4])
{
	uint16_t	t = rotl16((uint16_t) (x[0] ^ x[1]), 8);
	uint16_t	x0 = x[0];
	uint16_t	x1 = x[1];

	x[0] = x[2] ^ x0 ^ t;
	x[1] = x[3] ^ x1 ^ t;
	x[2] = x0;
	x[3] = x1;
}

static inline void
sparx_l_inv(uint16_t x[4])
{
	uint16_t	t = rotl16((uint16_t) (x[2] ^ x[3]), 8);
	uint16_t	x2 = x[2];
	uint16_t	x3 = x[3];

	x[2] = x[0] ^ x2 ^ t;
	x[3] = x[1] ^ x3 ^ t;
	x[0] = x2;
	x[1] = x3;
}

static inline void
sparx_step(uint16_t x[4], const SparxKey *ks, int s)
{
	sparx_branch(&x[0], &x[1], ks->k[2 * s]);
	sparx_branch(&x[2], &x[3], ks->k[2 * s + 1]);
	sparx_l(x);
}

static inline void
sparx_step_inv(uint16_t x[4], const SparxKey *ks, int s)
{
	sparx_l_inv(x);
	sparx_branch_inv(&x[0], &x[1], ks->k[2 * s]);
	sparx_branch_inv(&x[2], &x[3], ks->k[2 * s + 1]);
}

/*
 * Encrypt x in place.  The steps are spelt out rather than looped over:
 * -O2 does not reliably unroll a loop of this size, and a rolled loop
 * costs the index arithmetic and keeps the block from being scheduled
 * across step boundaries.
 */
static inline void
sparx_encrypt_block(const SparxKey *ks, uint16_t x[4])
{
	const uint16_t *w = ks->k[SPARX64_SUBKEYS - 1];

	sparx_step(x, ks, 0);
	sparx_step(x, ks, 1);
	sparx_step(x, ks, 2);
	sparx_step(x, ks, 3);
	sparx_step(x, ks, 4);
	sparx_step(x, ks, 5);
	sparx_step(x, ks, 6);
	sparx_step(x, ks, 7);
	x[0] ^= w[0];
	x[1] ^= w[1];
	x[2] ^= w[2];
	x[3] ^= w[3];
}

static inline void
sparx_decrypt_block(const SparxKey *ks, uint16_t x[4])
{
	const uint16_t *w = ks->k[SPARX64_SUBKEYS - 1];

	x[0] ^= w[0];
	x[1] ^= w[1];
	x[2] ^= w[2];
	x[3] ^= w[3];
	sparx_step_inv(x, ks, 7);
	sparx_step_inv(x, ks, 6);
	sparx_step_inv(x, ks, 5);
	sparx_step_inv(x, ks, 4);
	sparx_step_inv(x, ks, 3);
	sparx_step_inv(x, ks, 2);
	sparx_step_inv(x, ks, 1);
	sparx_step_inv(x, ks, 0);
}

/*
 * Expand a 128-bit key.  Subkey c is the first six words of the key state
 * after c applications of the key permutation (K_perm_64_128), whose
 * round constant is c + 1.
 *
 * The key state is not wiped afterwards: the first subkey is the key's
 * first six words and the rest follow from it, so the schedule is as
 * secret as the key and whoever holds it must guard it as such.
 */
void
sparx64_key_schedule(SparxKey *ks, const uint8_t key[16])
{
	uint16_t	m[8];

	for (int i = 0; i < 8; i++)
		m[i] = (uint16_t) (key[2 * i] << 8 | key[2 * i + 1]);

	for (int c = 0; c < SPARX64_SUBKEYS; c++)
	{
		uint16_t	m6;
		uint16_t	m7;

		for (int i = 0; i < SPARX64_SUBKEY_WORDS; i++)
			ks->k[c][i] = m[i];

		sparx_a(&m[0], &m[1]);
		m[2] += m[0];
		m[3] += m[1];
		m[7] += (uint16_t) (c + 1);

		/* rotate the state right by one 32-bit branch */
		m6 = m[6];
		m7 = m[7];
		for (int i = 7; i >= 2; i--)
			m[i] = m[i - 2];
		m[0] = m6;
		m[1] = m7;
	}
}

void
sparx64_encrypt(const SparxKey *ks, uint16_t block[4])
{
	uint16_t	x[4] = {block[0], block[1], block[2], block[3]};

	sparx_encrypt_block(ks, x);
	block[0] = x[0];
	block[1] = x[1];
	block[2] = x[2];
	block[3] = x[3];
}

void
sparx64_decrypt(const SparxKey *ks, uint16_t block[4])
{
	uint16_t	x[4] = {block[0], block[1], block[2], block[3]};

	sparx_decrypt_block(ks, x);
	block[0] = x[0];
	block[1] = x[1];
	block[2] = x[2];
	block[3] = x[3];
}

/*
 * Block word i is bytes 2i and 2i+1 of the little-endian uint64, the
 * first one high: the uint64's 16-bit word i with its bytes swapped.  A
 * 16-bit byte swap is a rotation by 8, one instruction, and it works the
 * same on a big-endian host since it is arithmetic, not memory layout.
 */
static inline void
randflake_to_block(uint64_t v, uint16_t x[4])
{
	x[0] = rotl16((uint16_t) v, 8);
	x[1] = rotl16((uint16_t) (v >> 16), 8);
	x[2] = rotl16((uint16_t) (v >> 32), 8);
	x[3] = rotl16((uint16_t) (v >> 48), 8);
}

static inline uint64_t
randflake_from_block(const uint16_t x[4])
{
	return (uint64_t) rotl16(x[0], 8) |
		(uint64_t) rotl16(x[1], 8) << 16 |
		(uint64_t) rotl16(x[2], 8) << 32 |
		(uint64_t) rotl16(x[3], 8) << 48;
}

uint64_t
randflake_encrypt(const SparxKey *ks, uint64_t raw)
{
	uint16_t	x[4];

	randflake_to_block(raw, x);
	sparx_encrypt_block(ks, x);
	return randflake_from_block(x);
}

uint64_t
randflake_decrypt(const SparxKey *ks, uint64_t id)
{
	uint16_t	x[4];

	randflake_to_block(id, x);
	sparx_decrypt_block(ks, x);
	return randflake_from_block(x);
}
