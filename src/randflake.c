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
 * keeps its state in local memory, so the hot path is a counter and a share
 * of one batched encryption of eight ids.  It reserves sequence numbers
 * from a node RANDFLAKE_RESERVE at a time, by compare-and-swap of the
 * node's last reserved id in shared memory, and issues them from local
 * memory.  Since every reservation is a compare-and-swap, several backends
 * may hold one node (when every node is held, a backend shares the least
 * shared one, see lease.c) and never issue the same id; a new holder
 * continues above everything reserved before; after a crash, shared memory
 * starts afresh above the high-water mark.
 *
 * A node moves into a new second when the clock does, or, when its
 * sequence of the second is used up, once a real second (by the monotonic
 * clock) has passed since it entered that second: so with the clock
 * stepped back, ids continue from the last second issued at no more than
 * 131072 per second per node, never further ahead of the clock than the
 * step.  A backend that needs more leases further nodes, up to half of
 * flake.randflake_nodes (so one busy backend cannot take them all), and
 * beyond that waits for its nodes' next second; each real second it starts
 * again from its first node and lets go of the nodes it did not need in
 * the second before.
 *
 * The secret (flake.randflake_secret, or the file that
 * flake.randflake_secret_file names) is readable by superusers only and is
 * kept out of the server log: see check_randflake_secret and
 * check_randflake_secret_file.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/parallel.h"
#include "common/hmac.h"
#include "common/sha2.h"
#include "funcapi.h"
#include "parser/scansup.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "citus.h"
#include "clock.h"
#include "compat.h"
#include "hwm.h"
#include "lease.h"
#include "logfilter.h"
#include "randflake.h"
#include "randflake_text.h"
#include "settings.h"
#include "shmem.h"
#include "sparx.h"

#define RANDFLAKE_KEY_LEN		16
#define RANDFLAKE_MAX_TIME		((INT64CONST(1) << RANDFLAKE_TIME_BITS) - 1)
#define RANDFLAKE_EPOCH_TEXT	"2024-10-27 03:33:20+00"	/* unix 1730000000 */
#define RANDFLAKE_END_TEXT		"2058-11-05 17:10:23+00"
#define RANDFLAKE_RESERVE		256 /* sequence numbers reserved at a time */
#define RANDFLAKE_SECOND_MS		1000
#define RANDFLAKE_DEFAULT_NODES	"0-131071"

/*
 * On Citus, with flake.randflake_nodes at its default, each group leases
 * from a share of 256 nodes (512 groups): see citus.c.
 */
#define RANDFLAKE_CITUS_SHARE_BITS	8

/*
 * What the setting shows and reports in place of the secret; see
 * check_randflake_secret.
 */
#define RANDFLAKE_SECRET_MASK	"********"

/* See key_fingerprint. */
#define RANDFLAKE_FINGERPRINT_LEN	4	/* bytes */
#define RANDFLAKE_FINGERPRINT_INFO	"flake randflake key fingerprint"

/*
 * The most a key file may hold: the key's 32 hexadecimal digits, with
 * white space around them (a line end, the indentation of a YAML block).
 */
#define RANDFLAKE_SECRET_FILE_MAX	256

/*
 * A parsed secret: the GUC "extra" of flake.randflake_secret and of
 * flake.randflake_secret_file.
 */
typedef struct RandflakeSecret
{
	bool		set;
	uint8		key[RANDFLAKE_KEY_LEN];
	SparxKey	schedule;
	char		fingerprint[2 * RANDFLAKE_FINGERPRINT_LEN + 1];
	char		problem[320];	/* why the key file cannot be used, or "" */
} RandflakeSecret;

/* A node this backend holds, and the range it reserved there. */
typedef struct RandflakeLease
{
	FlakeNode  *node;
	uint64		last;			/* (second << 17) | sequence of its last id */
	uint64		reserved;		/* the end of its range; ids up to it are its */
	uint64		unpublished;	/* ids not yet added to the node's count */
} RandflakeLease;

/* The nodes of flake.randflake_nodes, in shared memory. */
typedef struct RandflakeShared
{
	int			nnodes;
	FlakeNode	nodes[FLEXIBLE_ARRAY_MEMBER];
} RandflakeShared;

static char *randflake_nodes_string = NULL; /* flake.randflake_nodes */
static RandflakeShared *randflake_shared = NULL;
static char *randflake_secret_string = NULL;
static const RandflakeSecret *randflake_secret = NULL;
static char *randflake_secret_file_string = NULL;
static const RandflakeSecret *randflake_file_secret = NULL;
static bool both_secrets_set = false;	/* see warn_if_both_set */
static uint64 secret_generation = 0;	/* counts assignments of the secrets */

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

/*
 * The nodes this backend holds, used in order: it moves to the next one
 * when the current one has no ids left for now.  A round starts from the
 * first node in each new second of the clock, and a second after the last
 * round started (by the wall clock's milliseconds, which pass at the real
 * rate even when the clock is behind the ids).
 */
static RandflakeLease *leases = NULL;
static int	nleases = 0;
static int	max_leases = 0;
static int	current_lease = 0;
static int	round_used = 0;		/* leases used in this round */
static int64 round_started_ms = 0;	/* Unix ms */
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
 * Parse a key of 32 hex digits (len characters at value) into secret, with
 * its schedule and fingerprint.  False if it is not one.
 */
static bool
parse_secret(const char *value, size_t len, RandflakeSecret *secret)
{
	if (len != 2 * RANDFLAKE_KEY_LEN)
		return false;
	for (size_t i = 0; i < len; i++)
		if (hex_digit(value[i]) < 0)
			return false;
	for (int i = 0; i < RANDFLAKE_KEY_LEN; i++)
		secret->key[i] = (uint8) (hex_digit(value[2 * i]) << 4 |
								  hex_digit(value[2 * i + 1]));
	sparx64_key_schedule(&secret->schedule, secret->key);
	key_fingerprint(secret->key, secret->fingerprint);
	secret->set = true;
	return true;
}

/* Hand a parsed secret to PostgreSQL as a setting's extra, and wipe it. */
static bool
secret_extra(RandflakeSecret *secret, void **extra)
{
	*extra = flake_guc_malloc(sizeof(RandflakeSecret));
	if (*extra != NULL)
		memcpy(*extra, secret, sizeof(RandflakeSecret));
	explicit_bzero(secret, sizeof(RandflakeSecret));
	return *extra != NULL;
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
	if (len > 0 && strcmp(value, RANDFLAKE_SECRET_MASK) != 0 &&
		!parse_secret(value, len, &secret))
	{
		GUC_check_errmsg(FLAKE_SECRET_REFUSED);
		GUC_check_errdetail("The secret must be 32 hexadecimal digits (16 bytes); the value given has %zu characters%s.",
							len, len == 2 * RANDFLAKE_KEY_LEN ? ", not all of them hexadecimal digits" : "");
		GUC_check_errhint("Generate one with: openssl rand -hex 16");
		return flake_reject_setting("flake.randflake_secret", NULL);
	}
	if (!secret_extra(&secret, extra))
		return false;

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

/*
 * Check the file named by flake.randflake_secret_file, and read the key
 * from it: the file must be private to the server's user (see
 * flake_read_private_file) and hold the key's 32 hex digits, with white
 * space around them at most.  It is read again at each reload, by the
 * postmaster and by each backend, as every setting in the configuration
 * is checked again; a refused file leaves the key in force as it was.
 * At start nothing is in force yet, and a file that cannot be used is
 * taken with what is wrong with it, never stopping the server.
 *
 * The messages give the path, the file's owner and mode, and the length
 * of what it holds, never any of it.  A parallel worker, restoring its
 * leader's settings, does not read the file: the functions that need the
 * key are not run in parallel workers (as for the secret's mask above).
 */
static bool
check_randflake_secret_file(char **newval, void **extra, GucSource source)
{
	char		content[RANDFLAKE_SECRET_FILE_MAX];
	const char *start = content;
	size_t		len;
	RandflakeSecret secret;
	bool		ok = true;

	memset(&secret, 0, sizeof(secret));
	if (**newval != '\0' && !InitializingParallelWorker)
	{
		ok = flake_read_private_file(*newval, content, sizeof(content));
		if (ok)
		{
			len = strlen(content);
			while (len > 0 && scanner_isspace(content[len - 1]))
				len--;
			while (len > 0 && scanner_isspace(*start))
				start++, len--;
			ok = parse_secret(start, len, &secret);
			if (!ok)
				GUC_check_errdetail("The file must hold 32 hexadecimal digits (16 bytes), with nothing else but white space around them; it holds %zu characters%s.",
									len, len == 2 * RANDFLAKE_KEY_LEN ? ", not all of them hexadecimal digits" : "");
		}
		explicit_bzero(content, sizeof(content));
	}
	if (!ok && process_shared_preload_libraries_in_progress)
	{
		/*
		 * At start, a key file that cannot be used must not keep the server
		 * down: a standby never needs the key, and an HA manager takes a
		 * server that does not start for a crashed one.  The setting holds
		 * what is wrong, and the functions that need the key refuse with it
		 * (server_key) until a reload reads a usable file.
		 */
		strlcpy(secret.problem, GUC_check_errdetail_string ? GUC_check_errdetail_string : "?",
				sizeof(secret.problem));
		GUC_check_errdetail_string = NULL;
	}
	else if (!ok)
	{
		GUC_check_errhint("Generate a key with: openssl rand -hex 16");
		return flake_reject_setting("flake.randflake_secret_file", *newval);
	}
	return secret_extra(&secret, extra);
}

static const char *
fingerprint_or_none(const RandflakeSecret *secret)
{
	return secret != NULL && secret->set ? secret->fingerprint : "none";
}

/*
 * Ids made under two keys are distinct only by chance, so the log records
 * which key each setting gave from when, by fingerprint: once per change,
 * by the postmaster (every backend re-reads the settings too), and at
 * start.  old is the setting's key before, secret its new one.
 */
static void
log_key_change(const char *name, const RandflakeSecret *old,
			   const RandflakeSecret *secret)
{
	if (IsUnderPostmaster)
		return;
	/* at start, the default comes first, then the configured key */
	if (process_shared_preload_libraries_in_progress)
	{
		if (secret->problem[0] != '\0')
			ereport(WARNING,
					(errmsg("%s: the file cannot be used, randflake_next() refuses until it can", name),
					 errdetail_internal("%s", secret->problem),
					 errhint("Install the key file, and reload (SELECT pg_reload_conf()). The rest of the server works without it.")));
		else if (secret->set)
			ereport(LOG,
					(errmsg("%s has key fingerprint %s", name, secret->fingerprint)));
	}
	else if (old != NULL &&
			 (secret->set != old->set ||
			  memcmp(secret->key, old->key, RANDFLAKE_KEY_LEN) != 0))
	{
		/*
		 * The function is named in the hint: the log filter hides a detail
		 * that names it.
		 */
		ereport(LOG,
				(errmsg("%s changed from key fingerprint %s to %s", name,
						fingerprint_or_none(old), fingerprint_or_none(secret)),
				 errdetail("Randflake ids made from now on are encrypted with the new key; ids made before decode only with the old key, and ids made under the two keys are distinct only by chance."),
				 errhint("Decode ids made before with randflake_decode(id, '\\x<old key>').")));
	}
}

/*
 * The key in force: the file's, when flake.randflake_secret_file names
 * one, else flake.randflake_secret's.
 */
static const RandflakeSecret *
secret_in_force(void)
{
	if (randflake_file_secret != NULL &&
		(randflake_file_secret->set || randflake_file_secret->problem[0] != '\0'))
		return randflake_file_secret;
	return randflake_secret;
}

/*
 * Both settings set keeps the key in the configuration, which the file is
 * there to avoid: the postmaster warns when it comes to that, at start or
 * at a reload.
 */
static void
warn_if_both_set(void)
{
	bool		both;

	both = randflake_secret != NULL && randflake_secret->set &&
		randflake_file_secret != NULL && randflake_file_secret->set;
	if (both && !both_secrets_set && !IsUnderPostmaster)
		ereport(WARNING,
				(errmsg("flake.randflake_secret is set, and flake.randflake_secret_file too: the key of the file is used"),
				 errhint("Remove flake.randflake_secret from the configuration, so that the key is in the file alone.")));
	both_secrets_set = both;
}

/* Assign the key of the setting name, whose parsed key is at *var. */
static void
assign_key(const char *name, const RandflakeSecret **var, void *extra)
{
	log_key_change(name, *var, extra);
	*var = extra;
	secret_generation++;
	warn_if_both_set();
}

static void
assign_randflake_secret(const char *newval, void *extra)
{
	assign_key("flake.randflake_secret", &randflake_secret, extra);
}

static void
assign_randflake_secret_file(const char *newval, void *extra)
{
	assign_key("flake.randflake_secret_file", &randflake_file_secret, extra);
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

static bool
check_randflake_nodes(char **newval, void **extra, GucSource source)
{
	return flake_check_node_list("flake.randflake_nodes", *newval,
								 RANDFLAKE_NODE_BITS, "the randflake layout");
}

/*
 * Define the settings, from _PG_init, between flake_settings_begin() and
 * flake_settings_end().  Without preloading, the nodes setting (fixed at
 * server start) is not defined: generating needs preloading anyway.
 */
void
randflake_define_settings(void)
{
	if (process_shared_preload_libraries_in_progress)
		DefineCustomStringVariable("flake.randflake_nodes",
								   "Nodes this server may lease to randflake_next(), such as 0-1023.",
								   "Servers that share a secret need disjoint sets.",
								   &randflake_nodes_string,
								   RANDFLAKE_DEFAULT_NODES,
								   PGC_POSTMASTER, 0,
								   check_randflake_nodes, NULL, NULL);
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
	DefineCustomStringVariable("flake.randflake_secret_file",
							   "File that holds the key of randflake_next() ids, in place of flake.randflake_secret.",
							   "Owned by the server's user with mode 0600, or by root with mode 0640; read again at each reload.",
							   &randflake_secret_file_string,
							   "",
							   PGC_SIGHUP,
							   GUC_SUPERUSER_ONLY | GUC_NOT_IN_SAMPLE,
							   check_randflake_secret_file,
							   assign_randflake_secret_file,
							   NULL);
}

static const SparxKey *
server_key(void)
{
	const RandflakeSecret *secret = secret_in_force();

	if (secret != NULL && secret->problem[0] != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the key file \"%s\" that flake.randflake_secret_file names cannot be used",
						randflake_secret_file_string),
				 errdetail_internal("%s", secret->problem),
				 errhint("Install the file, owned by the server's user with mode 0600 and holding the key's 32 hexadecimal digits, and reload (SELECT pg_reload_conf()).")));
	if (secret == NULL || !secret->set)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("flake.randflake_secret is not set"),
				 errdetail("Randflake ids are encrypted with the server's secret key."),
				 errhint("Add one of these lines to postgresql.conf, and reload (SELECT pg_reload_conf()): the first names a file that holds the key, 32 hexadecimal digits such as the output of \"openssl rand -hex 16\", and that only the server's user can read; the second gives the key itself.\n"
						 "flake.randflake_secret_file = '/path/to/key'\n"
						 "flake.randflake_secret = '<32 hex digits>'\n"
						 "Avoid ALTER SYSTEM, which also writes the key into postgresql.auto.conf.")));
	return &secret->schedule;
}

static Size
shared_size(void)
{
	return add_size(offsetof(RandflakeShared, nodes),
					mul_size(sizeof(FlakeNode),
							 flake_nodes_count(randflake_nodes_string,
											   RANDFLAKE_NODE_BITS)));
}

static void
add_node(int64 lo, int64 hi, void *arg)
{
	for (int64 n = lo; n <= hi; n++)
		flake_node_init(&randflake_shared->nodes[randflake_shared->nnodes++],
						(int32) n);
}

/*
 * Raise every node to the last sequence of the mark's second.  Nodes end
 * exhausted at that second; having entered it long ago (second_started 0),
 * they may move on to the next one at once.
 */
static void
raise_nodes(const FlakeMarks *marks)
{
	int64		second = Max(marks->mark[FLAKE_HWM_RANDFLAKE] - RANDFLAKE_EPOCH_UNIX, 0);
	uint64		floor;

	floor = ((uint64) second << RANDFLAKE_SEQUENCE_BITS) | RANDFLAKE_MAX_SEQUENCE;

	for (int i = 0; i < randflake_shared->nnodes; i++)
		flake_raise_last(&randflake_shared->nodes[i].last, floor);
}

static void
shared_startup(void *part, bool fresh, const FlakeMarks *marks)
{
	randflake_shared = (RandflakeShared *) part;
	if (!fresh)
		return;
	randflake_shared->nnodes = 0;
	flake_nodes_foreach(randflake_nodes_string, RANDFLAKE_NODE_BITS,
						add_node, NULL);
	raise_nodes(marks);
}

static const FlakeShmemPart shared_part = {
	.name = "flake randflake nodes",
	.size = shared_size,
	.startup = shared_startup,
	.raise = raise_nodes,
};

/*
 * An id that arrives from another server (receive.c), decrypted with this
 * server's secret: (second << 34) | (node << 17) | sequence.
 */
uint64_t
randflake_raw_of(int64_t id)
{
	return randflake_decrypt(server_key(), (uint64) id);
}

/*
 * Raise the node of a decrypted id that arrived from another server to the
 * last sequence of its second, so that this server's next range on that
 * node comes after it; nothing where this server has no such node.  The
 * caller has made the mark cover it.
 */
void
randflake_raise_node(uint64_t raw)
{
	int32		node = (int32) ((raw >> RANDFLAKE_SEQUENCE_BITS) & RANDFLAKE_MAX_NODE);
	uint64		floor = ((raw >> (RANDFLAKE_NODE_BITS + RANDFLAKE_SEQUENCE_BITS)) << RANDFLAKE_SEQUENCE_BITS) |
	RANDFLAKE_MAX_SEQUENCE;
	FlakeNode  *nodes = randflake_shared->nodes;
	int			i = node - nodes[0].id;

	/*
	 * the nodes are in the order of flake.randflake_nodes: one range by
	 * default
	 */
	if (i < 0 || i >= randflake_shared->nnodes || nodes[i].id != node)
		for (i = 0; i < randflake_shared->nnodes && nodes[i].id != node; i++)
			;
	if (i < randflake_shared->nnodes)
		flake_raise_last(&nodes[i].last, floor);
}

/* From _PG_init, while shared_preload_libraries are loaded. */
void
randflake_add_shmem(void)
{
	flake_shmem_add_part(&shared_part);
}

static TimestampTz
second_to_timestamptz(int64 second)
{
	return flake_unix_ms_to_timestamptz((RANDFLAKE_EPOCH_UNIX + second) * 1000);
}

/* The node space, for leasing and flake_leases; false if not preloaded. */
bool
randflake_node_space(FlakeNodeSpace *space)
{
	if (randflake_shared == NULL)
		return false;
	space->generator = "randflake_next";
	space->first = randflake_shared->nodes;
	space->stride = sizeof(FlakeNode);
	space->count = randflake_shared->nnodes;
	space->sequence_bits = RANDFLAKE_SEQUENCE_BITS;
	space->to_timestamptz = second_to_timestamptz;
	return true;
}

/*
 * The nodes this backend leases from: flake.randflake_nodes, or on Citus
 * with the default setting, the share of this database's group (the nodes
 * are then in shared memory in node order).
 */
static void
lease_space(FlakeNodeSpace *space)
{
	(void) randflake_node_space(space);
	if (strcmp(randflake_nodes_string, RANDFLAKE_DEFAULT_NODES) == 0)
		flake_lease_citus_share(space, RANDFLAKE_NODE_BITS,
								RANDFLAKE_CITUS_SHARE_BITS, "flake.randflake_nodes");
}

/*
 * The nodes of this server's Citus group, when randflake_next() leases from
 * them (flake.randflake_nodes at its default, preloaded, Citus in this
 * database).
 */
static bool
randflake_citus_nodes(int *first, int *count)
{
	FlakeNodeSpace space;

	if (randflake_shared == NULL)
		return false;
	lease_space(&space);
	if (space.count == randflake_shared->nnodes)
		return false;
	*first = space.first->id;
	*count = space.count;
	return true;
}

/*
 * Is node one of this server's own randflake_next() nodes (of
 * flake.randflake_nodes, or of its Citus group's share)?  *own names them,
 * for flake_guard()'s message.
 */
bool
randflake_own_node(int64 node, const char **own)
{
	return flake_lease_own_node(node, "flake.randflake_nodes", randflake_nodes_string,
								RANDFLAKE_NODE_BITS, randflake_citus_nodes, own);
}

/* Add the ids issued on a node to its count in flake_leases. */
static void
publish_issued(RandflakeLease *lease)
{
	pg_atomic_fetch_add_u64(&lease->node->issued, lease->unpublished);
	lease->unpublished = 0;
}

static void
release_leases(int code, Datum arg)
{
	for (int i = 0; i < nleases; i++)
	{
		publish_issued(&leases[i]);
		flake_release(leases[i].node);
	}
	nleases = 0;
}

static bool
held_here(const FlakeNode *node)
{
	for (int i = 0; i < nleases; i++)
		if (leases[i].node == node)
			return true;
	return false;
}

static void
lease_node(void)
{
	FlakeNodeSpace space;
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

	/*
	 * A backend holds at most half of the nodes (and at least one), so there
	 * is always a node it does not hold yet.
	 */
	lease_space(&space);
	node = flake_lease(&space, held_here);
	Assert(node != NULL);
	leases[nleases].node = node;
	leases[nleases].last = 0;
	leases[nleases].reserved = 0;
	leases[nleases].unpublished = 0;
	nleases++;
}

/*
 * Start a round from the first node, letting go of the nodes the last round
 * did not reach: the current rate does not need them.
 */
static void
start_round(int64 now_ms)
{
	if (round_used > 0)
	{
		while (nleases > round_used)
		{
			nleases--;
			publish_issued(&leases[nleases]);
			flake_release(leases[nleases].node);
		}
	}
	current_lease = 0;
	round_used = 0;
	round_started_ms = now_ms;
}

/*
 * Reserve the next range of a held node and return its first id, or 0 when
 * the node has none to give for now (no id is 0: nodes start at (0, 131071)
 * or later, and ids come after that).
 *
 * After the node's last reserved id (s, q) comes (now, 0) when the clock is
 * past s, else (s, q + 1): a clock that stepped back continues from the last
 * second reserved.  A node whose sequence of s is used up moves on to
 * (s + 1, 0) once a real second has passed since it entered s (right away
 * after a restart, where nodes start used up at the high-water mark); so
 * it runs ahead of the clock by no more than the clock stepped back.
 */
static uint64
reserve(RandflakeLease *lease, int64 now, int64 mono_ms)
{
	FlakeNode  *node = lease->node;
	uint64		seen = pg_atomic_read_u64(&node->last);

	for (;;)
	{
		int64		second = (int64) (seen >> RANDFLAKE_SEQUENCE_BITS);
		uint64		start;
		uint64		end;

		if (now > second)
			start = (uint64) now << RANDFLAKE_SEQUENCE_BITS;
		else if ((seen & RANDFLAKE_MAX_SEQUENCE) < RANDFLAKE_MAX_SEQUENCE)
			start = seen + 1;
		else if (mono_ms - (int64) pg_atomic_read_u64(&node->second_started) >= RANDFLAKE_SECOND_MS)
			start = (uint64) (second + 1) << RANDFLAKE_SEQUENCE_BITS;
		else
			return 0;
		end = Min(start + RANDFLAKE_RESERVE - 1, start | RANDFLAKE_MAX_SEQUENCE);

		second = (int64) (start >> RANDFLAKE_SEQUENCE_BITS);
		if (unlikely(second > RANDFLAKE_MAX_TIME))
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("randflake_next() timestamp overflow"),
					 errdetail("Randflake ids hold 30 bits of seconds since " RANDFLAKE_EPOCH_TEXT ", which ran out at " RANDFLAKE_END_TEXT ".")));
		flake_hwm_cover(&flake_shared->marks.value, flake_shared->lock,
						FLAKE_HWM_RANDFLAKE, RANDFLAKE_EPOCH_UNIX + second);

		/* on failure, seen is what another holder reserved meanwhile */
		if (pg_atomic_compare_exchange_u64(&node->last, &seen, end))
		{
			if ((start ^ seen) >> RANDFLAKE_SEQUENCE_BITS)
				pg_atomic_write_u64(&node->second_started, (uint64) mono_ms);
			publish_issued(lease);
			lease->last = start;
			lease->reserved = end;
			high_second = Max(high_second, second);
			return start;
		}
	}
}

/*
 * The next id when the current range is used up or the clock moved on:
 * reserve a range on the first held node that has one, leasing a further
 * node if need be, or wait for a node's next second.
 */
static uint64
randflake_next_range(int64 now_ms, int64 now)
{
	static int	leasable = 0;	/* nodes this backend may lease from */
	int64		mono_ms = flake_clock_monotonic_ms();
	int			max_held;

	if (leasable == 0)
	{
		FlakeNodeSpace space;

		lease_space(&space);
		leasable = space.count;
	}
	max_held = Max(1, leasable / 2);

	if (now > high_second ||
		(uint64) (now_ms - round_started_ms) >= RANDFLAKE_SECOND_MS)
		start_round(now_ms);
	for (;;)
	{
		uint64		next;

		if (current_lease == nleases)
		{
			if (nleases < max_held)
				lease_node();
			else
			{
				/* every node this backend may hold is used up for now */
				pg_usleep(1000L);
				CHECK_FOR_INTERRUPTS();
				mono_ms = flake_clock_monotonic_ms();
				current_lease = 0;
				continue;
			}
		}
		next = reserve(&leases[current_lease], now, mono_ms);
		if (next != 0)
		{
			round_used = Max(round_used, current_lease + 1);
			return next;
		}
		current_lease++;
	}
}

/* The raw value of an id: (second << 34) | (node << 17) | sequence. */
static inline uint64
raw_id(const RandflakeLease *lease, uint64 next)
{
	return ((next >> RANDFLAKE_SEQUENCE_BITS) << (RANDFLAKE_NODE_BITS + RANDFLAKE_SEQUENCE_BITS)) |
		((uint64) lease->node->id << RANDFLAKE_SEQUENCE_BITS) |
		(next & RANDFLAKE_MAX_SEQUENCE);
}

/*
 * The raw value of the next id: from the current node's reserved range
 * while it lasts, the clock is not past its second and the round goes on.
 */
static uint64
randflake_generate(int64 now_ms, int64 now)
{
	RandflakeLease *lease;
	uint64		next;

	if (likely(current_lease < nleases &&
			   (uint64) (now_ms - round_started_ms) < RANDFLAKE_SECOND_MS))
	{
		lease = &leases[current_lease];
		if (likely(lease->last < lease->reserved &&
				   (int64) (lease->last >> RANDFLAKE_SEQUENCE_BITS) >= now))
		{
			lease->unpublished++;
			return raw_id(lease, ++lease->last);
		}
	}
	next = randflake_next_range(now_ms, now);
	lease = &leases[current_lease];
	lease->unpublished++;
	return raw_id(lease, next);
}

Datum
randflake_next(PG_FUNCTION_ARGS)
{
	const SparxKey *key;
	int64		now_ms;
	int64		now;
	uint64		raw[RANDFLAKE_BATCH];

	flake_require_shared();
	if (unlikely(flake_citus_recheck))
		(void) flake_citus_read_group("randflake_next");
	key = server_key();
	now_ms = flake_clock_unix_ms();
	now = now_ms / 1000 - RANDFLAKE_EPOCH_UNIX;
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
		raw[i] = randflake_generate(now_ms, now);
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
	values[0] = TimestampTzGetDatum(second_to_timestamptz(second));
	values[1] = Int32GetDatum((int32) ((raw >> RANDFLAKE_SEQUENCE_BITS) & RANDFLAKE_MAX_NODE));
	values[2] = Int32GetDatum((int32) (raw & RANDFLAKE_MAX_SEQUENCE));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc),
													  values, nulls)));
}

/* The node of an id, decrypted with the server's secret (for flake_guard). */
int32_t
randflake_node_of(int64_t id)
{
	uint64		raw = randflake_decrypt(server_key(), (uint64) id);

	return (int32) ((raw >> RANDFLAKE_SEQUENCE_BITS) & RANDFLAKE_MAX_NODE);
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
	const RandflakeSecret *secret = secret_in_force();

	if (secret == NULL || !secret->set)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(secret->fingerprint));
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
