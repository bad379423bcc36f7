/*-------------------------------------------------------------------------
 *
 * rekey.c
 *	  Nodes for the ids that flake_migrate() gives existing rows.
 *
 * Rekeyed ids carry the time of their rows, which lies in the past, where
 * live generation may have issued ids on any node it could lease.  So they
 * are made on the nodes of flake.rekey_nodes, which flake.nodes must leave
 * out, and each rekey claims one of those nodes for the milliseconds it
 * fills: no other rekey of this server gets that node for any of them.
 * The claims are kept in a file in the data directory, written before a
 * claim is returned, so they hold for every database and across restarts.
 * A claim is not given back when the migration rolls back: its range is
 * lost, never handed out twice.
 *
 * ulidflake ids have no node: a rekey to ulidflake claims one of 32 bands
 * instead, the low 5 bits of the entropy of the ids it gives (recorded as
 * node -1 - band), so that rekeys of the same times differ there.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fmgr.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"
#include "storage/lwlock.h"
#include "utils/timestamp.h"

#include "datafile.h"
#include "settings.h"
#include "shmem.h"
#include "snowflake_settings.h"

#define FLAKE_REKEYS_FILE		"flake.rekeys"
#define FLAKE_REKEYS_TEMP		"flake.rekeys.tmp"
#define FLAKE_REKEYS_MAGIC		0x464C4B52	/* "FLKR" */

#define FLAKE_REKEY_BANDS		32

/*
 * One claim: a node (or -1 - a ulidflake band) for the milliseconds
 * first_ms to last_ms of its ids.
 */
typedef struct RekeyClaim
{
	int64		first_ms;
	int64		last_ms;
	int32		node;
	int32		reserved;
} RekeyClaim;

typedef struct RekeyFileHeader
{
	uint32		magic;
	uint32		count;			/* claims that follow */
	pg_crc32c	crc;			/* of the claims */
	uint32		reserved;
} RekeyFileHeader;

/* The lowest free node found so far, and the claims it must not meet. */
typedef struct NodeChoice
{
	const RekeyClaim *claims;
	uint32		count;
	int64		first_ms;
	int64		last_ms;
	bool		band;			/* choosing a ulidflake band */
	int32		node;			/* -1: none yet */
} NodeChoice;

PG_FUNCTION_INFO_V1(flake_rekey_claim);

/*
 * Read the claims made so far (none when there is no file yet).  A damaged
 * file is an error: without it, a node's milliseconds could be claimed
 * twice.
 */
static RekeyClaim *
read_claims(uint32 *count)
{
	RekeyFileHeader header;
	RekeyClaim *claims = NULL;
	int			fd;
	Size		size;
	bool		ok;

	*count = 0;
	fd = OpenTransientFile(FLAKE_REKEYS_FILE, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		if (errno == ENOENT)
			return NULL;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", FLAKE_REKEYS_FILE)));
	}
	ok = read(fd, &header, sizeof(header)) == sizeof(header) &&
		header.magic == FLAKE_REKEYS_MAGIC;
	if (ok)
	{
		size = sizeof(RekeyClaim) * header.count;
		claims = palloc(Max(size, 1));
		ok = read(fd, claims, size) == (ssize_t) size &&
			EQ_CRC32C(header.crc, flake_datafile_crc(claims, size));
	}
	if (!ok)
	{
		CloseTransientFile(fd);
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("flake rekey claims file \"%s\" is damaged", FLAKE_REKEYS_FILE),
				 errdetail("It records which nodes and milliseconds earlier rekeys used; without it, rekeyed ids could repeat.")));
	}
	CloseTransientFile(fd);
	*count = header.count;
	return claims;
}

/* Replace the file with the claims, durably (see datafile.c). */
static void
write_claims(const RekeyClaim *claims, uint32 count)
{
	Size		size = sizeof(RekeyClaim) * count;
	char	   *data = palloc(sizeof(RekeyFileHeader) + size);
	RekeyFileHeader *header = (RekeyFileHeader *) data;

	memset(header, 0, sizeof(RekeyFileHeader));
	header->magic = FLAKE_REKEYS_MAGIC;
	header->count = count;
	header->crc = flake_datafile_crc(claims, size);
	memcpy(data + sizeof(RekeyFileHeader), claims, size);
	flake_datafile_replace(FLAKE_REKEYS_FILE, FLAKE_REKEYS_TEMP,
						   data, sizeof(RekeyFileHeader) + size);
	pfree(data);
}

/* flake_nodes_foreach callback: take the lowest node no claim meets. */
static void
choose_node(int64 lo, int64 hi, void *arg)
{
	NodeChoice *choice = (NodeChoice *) arg;

	for (int64 n = lo; n <= hi && choice->node < 0; n++)
	{
		bool		taken = false;

		for (uint32 i = 0; i < choice->count && !taken; i++)
			taken = choice->claims[i].node == (choice->band ? -1 - n : n) &&
				choice->claims[i].first_ms <= choice->last_ms &&
				choice->claims[i].last_ms >= choice->first_ms;
		if (!taken)
			choice->node = (int32) n;
	}
}

/*
 * flake_rekey_claim(first_ms, last_ms, band): claim a node of
 * flake.rekey_nodes for the milliseconds (since flake.epoch) first_ms to
 * last_ms of the ids a rekey is about to give, and return it; with band,
 * a ulidflake band for those milliseconds (since the ulidflake epoch).
 */
Datum
flake_rekey_claim(PG_FUNCTION_ARGS)
{
	int64		first_ms = PG_GETARG_INT64(0);
	int64		last_ms = PG_GETARG_INT64(1);
	bool		band = PG_GETARG_BOOL(2);
	NodeChoice	choice;
	RekeyClaim *claims;
	uint32		count;

	flake_require_shared();
	if (!band && *snowflake_rekey_nodes_string == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("flake.rekey_nodes is empty"),
				 errdetail("Rekeyed ids lie in the past, where live ids may exist on every node of flake.nodes, so they are made on nodes reserved for rekeys."),
				 errhint("Leave some nodes out of flake.nodes, here and on every server that shares keys, and name them in flake.rekey_nodes, for example flake.nodes = '0-1015' and flake.rekey_nodes = '1016-1023'; then restart the server.")));
	if (first_ms < 0 || last_ms < first_ms)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid millisecond range " INT64_FORMAT " to " INT64_FORMAT,
						first_ms, last_ms)));

	LWLockAcquire(flake_shared->lock, LW_EXCLUSIVE);
	claims = read_claims(&count);
	choice.claims = claims;
	choice.count = count;
	choice.first_ms = first_ms;
	choice.last_ms = last_ms;
	choice.band = band;
	choice.node = -1;
	if (band)
		choose_node(0, FLAKE_REKEY_BANDS - 1, &choice);
	else
		flake_nodes_foreach(snowflake_rekey_nodes_string, snowflake_node_bits,
							choose_node, &choice);
	if (choice.node < 0 && band)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("every ulidflake rekey band has been used by rekeys of these times"),
				 errdetail("Each rekey to ulidflake takes one of %d bands for the milliseconds of its rows.",
						   FLAKE_REKEY_BANDS)));
	if (choice.node < 0)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("every node of flake.rekey_nodes has been used by rekeys of these times"),
				 errdetail("flake.rekey_nodes is \"%s\"; each rekey takes a node for the milliseconds of its rows.",
						   snowflake_rekey_nodes_string),
				 errhint("Reserve more nodes in flake.rekey_nodes, leaving them out of flake.nodes.")));

	claims = claims ? repalloc(claims, sizeof(RekeyClaim) * (count + 1))
		: palloc(sizeof(RekeyClaim));
	memset(&claims[count], 0, sizeof(RekeyClaim));
	claims[count].first_ms = first_ms;
	claims[count].last_ms = last_ms;
	claims[count].node = band ? -1 - choice.node : choice.node;
	write_claims(claims, count + 1);
	LWLockRelease(flake_shared->lock);

	PG_RETURN_INT32(choice.node);
}
