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

#if defined(__SSE2__) && !defined(FLAKE_PORTABLE)
#include <emmintrin.h>
#endif

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

#if defined(__SSE2__) && !defined(FLAKE_PORTABLE)

/*
 * The batch form: lane b of vector j holds word j of block b, so each
 * instruction below works on the same word of all eight blocks.  The key
 * words are the same for every block and are broadcast.
 */
#define ROTL16X8(v, n) \
	_mm_or_si128(_mm_slli_epi16((v), (n)), _mm_srli_epi16((v), 16 - (n)))

static inline __m128i
key_word(uint16_t k)
{
	return _mm_set1_epi16((short) k);
}

static inline void
sparx_a_x8(__m128i *l, __m128i *r)
{
	*l = _mm_add_epi16(ROTL16X8(*l, 9), *r);
	*r = _mm_xor_si128(ROTL16X8(*r, 2), *l);
}

static inline void
sparx_branch_x8(__m128i *l, __m128i *r, const uint16_t *k)
{
	for (int round = 0; round < SPARX64_ROUNDS_PER_STEP; round++)
	{
		*l = _mm_xor_si128(*l, key_word(k[2 * round]));
		*r = _mm_xor_si128(*r, key_word(k[2 * round + 1]));
		sparx_a_x8(l, r);
	}
}

void
randflake_encrypt_batch(const SparxKey *ks, const uint64_t raw[RANDFLAKE_BATCH],
						uint64_t id[RANDFLAKE_BATCH])
{
	uint16_t	words[4][RANDFLAKE_BATCH] __attribute__((aligned(16)));
	const uint16_t *w = ks->k[SPARX64_SUBKEYS - 1];
	__m128i		x0,
				x1,
				x2,
				x3;

	for (int b = 0; b < RANDFLAKE_BATCH; b++)
	{
		uint16_t	block[4];

		randflake_to_block(raw[b], block);
		for (int j = 0; j < 4; j++)
			words[j][b] = block[j];
	}
	x0 = _mm_load_si128((const __m128i *) words[0]);
	x1 = _mm_load_si128((const __m128i *) words[1]);
	x2 = _mm_load_si128((const __m128i *) words[2]);
	x3 = _mm_load_si128((const __m128i *) words[3]);

	for (int s = 0; s < SPARX64_STEPS; s++)
	{
		__m128i		t;
		__m128i		y0;
		__m128i		y1;

		sparx_branch_x8(&x0, &x1, ks->k[2 * s]);
		sparx_branch_x8(&x2, &x3, ks->k[2 * s + 1]);
		/* the linear layer, as sparx_l */
		t = ROTL16X8(_mm_xor_si128(x0, x1), 8);
		y0 = _mm_xor_si128(_mm_xor_si128(x2, x0), t);
		y1 = _mm_xor_si128(_mm_xor_si128(x3, x1), t);
		x2 = x0;
		x3 = x1;
		x0 = y0;
		x1 = y1;
	}
	_mm_store_si128((__m128i *) words[0], _mm_xor_si128(x0, key_word(w[0])));
	_mm_store_si128((__m128i *) words[1], _mm_xor_si128(x1, key_word(w[1])));
	_mm_store_si128((__m128i *) words[2], _mm_xor_si128(x2, key_word(w[2])));
	_mm_store_si128((__m128i *) words[3], _mm_xor_si128(x3, key_word(w[3])));

	for (int b = 0; b < RANDFLAKE_BATCH; b++)
	{
		uint16_t	block[4] = {words[0][b], words[1][b], words[2][b], words[3][b]};

		id[b] = randflake_from_block(block);
	}
}

#else							/* !__SSE2__ */

void
randflake_encrypt_batch(const SparxKey *ks, const uint64_t raw[RANDFLAKE_BATCH],
						uint64_t id[RANDFLAKE_BATCH])
{
	for (int b = 0; b < RANDFLAKE_BATCH; b++)
		id[b] = randflake_encrypt(ks, raw[b]);
}

#endif
