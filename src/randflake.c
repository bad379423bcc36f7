/*-------------------------------------------------------------------------
 *
 * randflake.c
 *	  randflake_next(): Randflake ids, their secret, decoding and text form.
 *
 * A Randflake id is the Sparx-64/128 encryption, under the server's secret,
 * of raw = (seconds since 1730000000) << 34 | node << 17 | sequence, as
 * gosuda/randflake v1.8.0 makes it (see sparx.c for the byte order).  To
 * anyone without the key the ids look random; the key holder reads back
 * their time and node.
 *
 * A backend generates on nodes it leases from flake.randflake_nodes and
 * keeps their state in local memory: only it writes them, so the hot path
 * is a counter and a share of one batched encryption of eight ids.  The last id of a node reaches
 * shared memory when the node starts a new second, every 1024 ids (for the
 * flake_leases view) and when the backend lets go of it, which is what its
 * next holder continues from; after a crash, shared memory starts afresh
 * above the high-water mark.  A backend
 * that uses up a node's 131072 ids of a second leases a further node
 * rather than wait; with the clock stepped back it continues from the last
 * second it issued, and moves to a further node, never repeating an id.
 *
 * The secret (flake.randflake_secret) is readable by superusers only and
 * is kept out of the server log: see check_randflake_secret.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "common/hmac.h"
#include "common/sha2.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "compat.h"
#include "flake.h"
#include "randflake_text.h"
#include "sparx.h"

#define RANDFLAKE_KEY_LEN		16
#define RANDFLAKE_MAX_TIME		((INT64CONST(1) << RANDFLAKE_TIME_BITS) - 1)
#define RANDFLAKE_EPOCH_TEXT	"2024-10-27 03:33:20+00"	/* unix 1730000000 */
#define RANDFLAKE_END_TEXT		"2058-11-05 17:10:23+00"
#define RANDFLAKE_PUBLISH_EVERY	1024	/* ids; a power of 2 */

/*
 * What the setting shows and reports in place of the secret; see
 * check_randflake_secret.
 */
#define RANDFLAKE_SECRET_MASK	"********"

/* See key_fingerprint. */
#define RANDFLAKE_FINGERPRINT_LEN	4	/* bytes */
#define RANDFLAKE_FINGERPRINT_INFO	"flake randflake key fingerprint"

/* A parsed secret: the GUC "extra" of flake.randflake_secret. */
typedef struct RandflakeSecret
{
	bool		set;
	uint8		key[RANDFLAKE_KEY_LEN];
	SparxKey	schedule;
	char		fingerprint[2 * RANDFLAKE_FINGERPRINT_LEN + 1];
} RandflakeSecret;

/* A node this backend holds, and its last id as of this backend. */
typedef struct RandflakeLease
{
	FlakeNode  *node;
	uint64		last;			/* (second << 17) | sequence */
	uint64		issued;
} RandflakeLease;

static char *randflake_secret_string = NULL;
static const RandflakeSecret *randflake_secret = NULL;
static uint64 secret_generation = 0;	/* counts assignments of the secret */

/*
 * Ids encrypted ahead, RANDFLAKE_BATCH at a time: they were reserved from
 * their nodes (so never issued twice) at the second batch_now, under the
 * secret of batch_generation.  They are handed out while the clock is not
 * past that second and the secret is the same; otherwise the rest is
 * dropped, which leaves unused sequence numbers and nothing else.
 */
static uint64 batch[RANDFLAKE_BATCH];
static int	batch_pos = RANDFLAKE_BATCH;
static int64 batch_now;
static uint64 batch_generation;

static RandflakeLease *leases = NULL;
static int	nleases = 0;
static int	max_leases = 0;
static int	current_lease = 0;
static int64 high_second = -1;	/* the latest second this backend issued */

PG_FUNCTION_INFO_V1(randflake_next);
PG_FUNCTION_INFO_V1(randflake_decode);
PG_FUNCTION_INFO_V1(randflake_decode_key);
PG_FUNCTION_INFO_V1(randflake_key_fingerprint);
PG_FUNCTION_INFO_V1(randflake_key_fingerprint_of);
PG_FUNCTION_INFO_V1(randflake_encode_sql);
PG_FUNCTION_INFO_V1(randflake_parse_sql);

static int
hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * A short public name of a key, so that the log can say which key was in
 * force when, and an operator can match a key to it: the first 4 bytes of
 * HMAC-SHA256(key, "flake randflake key fingerprint"), in hex.  HMAC is a
 * pseudo-random function of the key, so the fingerprint tells nothing of
 * the key or its ids beyond telling keys apart (two keys share one with
 * probability 2^-32), and it is not an encryption under Sparx, so it gives
 * no plaintext-ciphertext pair of the cipher.  Writes "unknown" if HMAC
 * fails (out of memory).
 */
static void
key_fingerprint(const uint8 *key, char *out)
{
	ResourceOwner saved = CurrentResourceOwner;
	ResourceOwner owner = NULL;
	pg_hmac_ctx *ctx;
	uint8		mac[PG_SHA256_DIGEST_LENGTH];
	bool		ok;

	/*
	 * With OpenSSL, HMAC contexts belong to the current resource owner; the
	 * postmaster and a backend between transactions have none.
	 */
	if (CurrentResourceOwner == NULL)
		CurrentResourceOwner = owner = ResourceOwnerCreate(NULL, "flake key fingerprint");
	ctx = pg_hmac_create(PG_SHA256);
	ok = ctx != NULL &&
		pg_hmac_init(ctx, key, RANDFLAKE_KEY_LEN) == 0 &&
		pg_hmac_update(ctx, (const uint8 *) RANDFLAKE_FINGERPRINT_INFO,
					   strlen(RANDFLAKE_FINGERPRINT_INFO)) == 0 &&
		pg_hmac_final(ctx, mac, sizeof(mac)) == 0;
	pg_hmac_free(ctx);
	CurrentResourceOwner = saved;
	if (owner != NULL)
		ResourceOwnerDelete(owner);

	if (!ok)
		strlcpy(out, "unknown", 2 * RANDFLAKE_FINGERPRINT_LEN + 1);
	else
		for (int i = 0; i < RANDFLAKE_FINGERPRINT_LEN; i++)
			snprintf(out + 2 * i, 3, "%02x", mac[i]);
	explicit_bzero(mac, sizeof(mac));
}

/*
 * Check a new secret: 32 hex digits, or empty for none.
 *
 * The value never appears in a message: the error text is our own, and a
 * valid secret is replaced by a fixed mask before PostgreSQL stores the
 * setting, so that what it logs on a reload ("parameter ... changed to"),
 * hands to parallel workers or compares is the mask, never the key.  An
 * unset secret is masked the same way, so setting one for the first time
 * is not logged either.  The key itself lives in the setting's extra, and
 * SHOW (superusers only) prints it through show_randflake_secret.  The
 * mask coming back in (a parallel worker restoring the leader's settings)
 * is accepted as "no secret in this process"; the functions that need the
 * secret are not run in parallel workers.
 */
static bool
check_randflake_secret(char **newval, void **extra, GucSource source)
{
	const char *value = *newval;
	size_t		len = strlen(value);
	RandflakeSecret secret;

	memset(&secret, 0, sizeof(secret));
	if (len > 0 && strcmp(value, RANDFLAKE_SECRET_MASK) != 0)
	{
		bool		valid = (len == 2 * RANDFLAKE_KEY_LEN);

		for (size_t i = 0; valid && i < len; i++)
			valid = hex_digit(value[i]) >= 0;
		if (!valid)
		{
			GUC_check_errmsg("invalid value for parameter \"flake.randflake_secret\"");
			GUC_check_errdetail("The secret must be 32 hexadecimal digits (16 bytes); the value given has %zu characters%s.",
								len, len == 2 * RANDFLAKE_KEY_LEN ? ", not all of them hexadecimal digits" : "");
			GUC_check_errhint("Generate one with: openssl rand -hex 16");
			return flake_reject_setting("flake.randflake_secret", NULL);
		}
		for (int i = 0; i < RANDFLAKE_KEY_LEN; i++)
			secret.key[i] = (uint8) (hex_digit(value[2 * i]) << 4 |
									 hex_digit(value[2 * i + 1]));
		sparx64_key_schedule(&secret.schedule, secret.key);
		key_fingerprint(secret.key, secret.fingerprint);
		secret.set = true;
	}

	*extra = flake_guc_malloc(sizeof(RandflakeSecret));
	if (*extra == NULL)
		return false;
	memcpy(*extra, &secret, sizeof(secret));
	explicit_bzero(&secret, sizeof(secret));

	if (strcmp(value, RANDFLAKE_SECRET_MASK) != 0)
	{
		char	   *mask = flake_guc_strdup(RANDFLAKE_SECRET_MASK);

		if (mask == NULL)
			return false;
		explicit_bzero(*newval, len);
		flake_guc_free(*newval);
		*newval = mask;
	}
	return true;
}

static const char *
fingerprint_or_none(const RandflakeSecret *secret)
{
	return secret != NULL && secret->set ? secret->fingerprint : "none";
}

/*
 * Ids made under two keys are distinct only by chance, so the log records
 * which key was in force from when, by fingerprint: once per change, by the
 * postmaster (every backend re-reads the setting too), and at start.
 */
static void
assign_randflake_secret(const char *newval, void *extra)
{
	const RandflakeSecret *secret = (const RandflakeSecret *) extra;

	if (!IsUnderPostmaster)
	{
		/* at start, the default comes first, then the configured key */
		if (process_shared_preload_libraries_in_progress)
		{
			if (secret->set)
				ereport(LOG,
						(errmsg("flake.randflake_secret has key fingerprint %s",
								secret->fingerprint)));
		}
		else if (randflake_secret != NULL &&
				 (secret->set != randflake_secret->set ||
				  memcmp(secret->key, randflake_secret->key, RANDFLAKE_KEY_LEN) != 0))
			ereport(LOG,
					(errmsg("flake.randflake_secret changed from key fingerprint %s to %s",
							fingerprint_or_none(randflake_secret),
							fingerprint_or_none(secret)),
					 errdetail("Randflake ids made from now on are encrypted with the new key; ids made before decode only with randflake_decode(id, old key), and ids made under the two keys are distinct only by chance.")));
	}
	randflake_secret = secret;
	secret_generation++;
}

static const char *
show_randflake_secret(void)
{
	static char hex[2 * RANDFLAKE_KEY_LEN + 1];

	if (randflake_secret == NULL || !randflake_secret->set)
		return "";
	for (int i = 0; i < RANDFLAKE_KEY_LEN; i++)
		snprintf(hex + 2 * i, 3, "%02x", randflake_secret->key[i]);
	return hex;
}

void
flake_define_randflake_secret(void)
{
	DefineCustomStringVariable("flake.randflake_secret",
							   "Key of randflake_next() ids: 32 hexadecimal digits.",
							   "Readable by superusers only. Whoever holds it can read the time and node of every id.",
							   &randflake_secret_string,
							   "",
							   PGC_SIGHUP,
							   GUC_SUPERUSER_ONLY | GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							   check_randflake_secret,
							   assign_randflake_secret,
							   show_randflake_secret);
}

static const SparxKey *
server_key(void)
{
	if (randflake_secret == NULL || !randflake_secret->set)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("flake.randflake_secret is not set"),
				 errdetail("Randflake ids are encrypted with the server's secret key."),
				 errhint("Set it to 32 hexadecimal digits, for example the output of \"openssl rand -hex 16\":\n"
						 "ALTER SYSTEM SET flake.randflake_secret = '<32 hex digits>';\n"
						 "SELECT pg_reload_conf();")));
	return &randflake_secret->schedule;
}

/* Publish a node's last id for the flake_leases view and its next holder. */
static void
publish(RandflakeLease *lease)
{
	pg_atomic_write_u64(&lease->node->last, lease->last);
	pg_atomic_write_u64(&lease->node->issued, lease->issued);
}

static void
release_leases(int code, Datum arg)
{
	for (int i = 0; i < nleases; i++)
	{
		publish(&leases[i]);
		flake_release(leases[i].node);
	}
	nleases = 0;
}

static void
lease_node(void)
{
	FlakeNode  *node;

	/* room first, so that a failure here cannot strand a leased node */
	if (nleases == max_leases)
	{
		int			grown = Max(4, 2 * max_leases);

		if (leases == NULL)
		{
			leases = MemoryContextAlloc(TopMemoryContext, grown * sizeof(RandflakeLease));
			before_shmem_exit(release_leases, (Datum) 0);
		}
		else
			leases = repalloc(leases, grown * sizeof(RandflakeLease));
		max_leases = grown;
	}

	node = flake_lease(flake_shared->randflake, sizeof(FlakeNode),
					   flake_shared->nrandflake);
	if (node == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("all nodes of flake.randflake_nodes are leased"),
				 errdetail("Each backend that calls randflake_next() holds a node until it exits, and one more for each 131072 ids it issues within a second; flake.randflake_nodes is \"%s\".",
						   flake_randflake_nodes_string),
				 errhint("Widen flake.randflake_nodes, or use fewer connections that generate ids.")));

	leases[nleases].node = node;
	leases[nleases].last = pg_atomic_read_u64(&node->last);
	leases[nleases].issued = 0;
	nleases++;
}

/*
 * The raw value of the next id: (second << 34) | (node << 17) | sequence.
 *
 * On a node whose last id is (s, q), the next is (now, 0) when the clock is
 * past s, else (s, q + 1): a clock that stepped back continues from the
 * last second issued.  A node whose sequence of that second is used up
 * moves on to (s + 1, 0) only while that is not ahead of the clock, or
 * just above the high-water mark after a restart; otherwise the backend
 * takes its next node, leasing one more if need be.  In a new second it
 * starts again from its first node.
 */
static uint64
randflake_generate(int64 now)
{
	int64		ceiling;
	int64		second;
	RandflakeLease *lease;
	uint64		next;
	bool		publish_now;

	ceiling = Max(now, flake_shared->randflake_floor_s + 1);
	if (now > high_second)
		current_lease = 0;
	for (;;)
	{
		int64		last_second;

		if (unlikely(current_lease == nleases))
			lease_node();
		lease = &leases[current_lease];
		last_second = (int64) (lease->last >> RANDFLAKE_SEQUENCE_BITS);
		if (now > last_second)
			next = (uint64) now << RANDFLAKE_SEQUENCE_BITS;
		else if ((lease->last & RANDFLAKE_MAX_SEQUENCE) < RANDFLAKE_MAX_SEQUENCE)
			next = lease->last + 1;
		else if (last_second < ceiling)
			next = (uint64) (last_second + 1) << RANDFLAKE_SEQUENCE_BITS;
		else
		{
			publish(lease);
			current_lease++;
			continue;
		}
		break;
	}

	second = (int64) (next >> RANDFLAKE_SEQUENCE_BITS);
	if (unlikely(second > RANDFLAKE_MAX_TIME))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("randflake_next() timestamp overflow"),
				 errdetail("Randflake ids hold 30 bits of seconds since " RANDFLAKE_EPOCH_TEXT ", which ran out at " RANDFLAKE_END_TEXT ".")));
	if (unlikely(RANDFLAKE_EPOCH_UNIX + second >
				 (int64) pg_atomic_read_u64(&flake_shared->hwm.value.randflake_s)))
		flake_hwm_extend(FLAKE_HWM_RANDFLAKE, RANDFLAKE_EPOCH_UNIX + second);

	/* published in a new second, and every so often for flake_leases */
	publish_now = ((next ^ lease->last) >> RANDFLAKE_SEQUENCE_BITS) != 0 ||
		(next & (RANDFLAKE_PUBLISH_EVERY - 1)) == 0;
	lease->last = next;
	lease->issued++;
	if (publish_now)
		publish(lease);
	high_second = Max(high_second, second);

	return ((uint64) second << (RANDFLAKE_NODE_BITS + RANDFLAKE_SEQUENCE_BITS)) |
		((uint64) lease->node->id << RANDFLAKE_SEQUENCE_BITS) |
		(next & RANDFLAKE_MAX_SEQUENCE);
}

Datum
randflake_next(PG_FUNCTION_ARGS)
{
	const SparxKey *key;
	int64		now;
	uint64		raw[RANDFLAKE_BATCH];

	flake_require_shared();
	key = server_key();
	now = flake_clock_unix_ms() / 1000 - RANDFLAKE_EPOCH_UNIX;
	if (batch_pos < RANDFLAKE_BATCH && now <= batch_now &&
		batch_generation == secret_generation)
		PG_RETURN_INT64((int64) batch[batch_pos++]);

	/* a batch is only ever filled once recovery has ended */
	flake_refuse_in_recovery("randflake_next()");
	if (unlikely(now < 0))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the system clock is before the randflake epoch (" RANDFLAKE_EPOCH_TEXT ")")));
	batch_pos = RANDFLAKE_BATCH;
	for (int i = 0; i < RANDFLAKE_BATCH; i++)
		raw[i] = randflake_generate(now);
	randflake_encrypt_batch(key, raw, batch);
	batch_now = now;
	batch_generation = secret_generation;
	batch_pos = 1;
	PG_RETURN_INT64((int64) batch[0]);
}

/* (ts, node, sequence) of an id, decrypted with key. */
static Datum
decode_tuple(FunctionCallInfo fcinfo, const SparxKey *key, int64 id)
{
	uint64		raw = randflake_decrypt(key, (uint64) id);
	int64		second = (int64) (raw >> (RANDFLAKE_NODE_BITS + RANDFLAKE_SEQUENCE_BITS));
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = TimestampTzGetDatum(flake_unix_ms_to_timestamptz((RANDFLAKE_EPOCH_UNIX + second) * 1000));
	values[1] = Int32GetDatum((int32) ((raw >> RANDFLAKE_SEQUENCE_BITS) & RANDFLAKE_MAX_NODE));
	values[2] = Int32GetDatum((int32) (raw & RANDFLAKE_MAX_SEQUENCE));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc),
													  values, nulls)));
}

Datum
randflake_decode(PG_FUNCTION_ARGS)
{
	return decode_tuple(fcinfo, server_key(), PG_GETARG_INT64(0));
}

static void
check_key_length(const bytea *key)
{
	if (VARSIZE_ANY_EXHDR(key) != RANDFLAKE_KEY_LEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a randflake key is %d bytes, not %zu",
						RANDFLAKE_KEY_LEN, (size_t) VARSIZE_ANY_EXHDR(key)),
				 errhint("Pass the secret as bytea, for example decode('<32 hex digits>', 'hex').")));
}

/*
 * Decode with a key given as bytea.  The schedule of the last key is kept
 * with the call site, so decoding a column with one key expands it once.
 */
Datum
randflake_decode_key(PG_FUNCTION_ARGS)
{
	int64		id = PG_GETARG_INT64(0);
	bytea	   *key = PG_GETARG_BYTEA_PP(1);
	RandflakeSecret *cache = (RandflakeSecret *) fcinfo->flinfo->fn_extra;

	check_key_length(key);
	if (cache == NULL)
	{
		cache = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(RandflakeSecret));
		fcinfo->flinfo->fn_extra = cache;
	}
	if (!cache->set || memcmp(cache->key, VARDATA_ANY(key), RANDFLAKE_KEY_LEN) != 0)
	{
		memcpy(cache->key, VARDATA_ANY(key), RANDFLAKE_KEY_LEN);
		sparx64_key_schedule(&cache->schedule, cache->key);
		cache->set = true;
	}
	return decode_tuple(fcinfo, &cache->schedule, id);
}

/* The fingerprint of the server's secret (see key_fingerprint), or NULL. */
Datum
randflake_key_fingerprint(PG_FUNCTION_ARGS)
{
	if (randflake_secret == NULL || !randflake_secret->set)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(randflake_secret->fingerprint));
}

/* The fingerprint of a key given as bytea, to match it to the log. */
Datum
randflake_key_fingerprint_of(PG_FUNCTION_ARGS)
{
	bytea	   *key = PG_GETARG_BYTEA_PP(0);
	char		fingerprint[2 * RANDFLAKE_FINGERPRINT_LEN + 1];

	check_key_length(key);
	key_fingerprint((const uint8 *) VARDATA_ANY(key), fingerprint);
	PG_RETURN_TEXT_P(cstring_to_text(fingerprint));
}

Datum
randflake_encode_sql(PG_FUNCTION_ARGS)
{
	char		buf[RANDFLAKE_TEXT_MAXLEN + 1];

	randflake_encode((uint64) PG_GETARG_INT64(0), buf);
	PG_RETURN_TEXT_P(cstring_to_text(buf));
}

Datum
randflake_parse_sql(PG_FUNCTION_ARGS)
{
	text	   *input = PG_GETARG_TEXT_PP(0);
	uint64		value;

	switch (randflake_parse(VARDATA_ANY(input), VARSIZE_ANY_EXHDR(input), &value))
	{
		case RANDFLAKE_PARSE_OK:
			break;
		case RANDFLAKE_PARSE_OUT_OF_RANGE:
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("value \"%s\" is out of range for a randflake id",
							text_to_cstring(input)),
					 errhint("A randflake id is at most 13 base-32 digits, up to \"fvvvvvvvvvvvv\".")));
			break;
		case RANDFLAKE_PARSE_MALFORMED:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid input syntax for a randflake id: \"%s\"",
							text_to_cstring(input)),
					 errhint("A randflake id is written in the base-32 digits 0-9 and a-v.")));
			break;
	}
	PG_RETURN_INT64((int64) value);
}
