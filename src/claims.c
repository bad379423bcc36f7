/*-------------------------------------------------------------------------
 *
 * claims.c
 *	  The rekey claims, in flake.rekeys and in WAL.
 *
 * Each rekey claims a node of flake.rekey_nodes (or a ulidflake band) for
 * the milliseconds of its ids (rekey.c).  Before a claim is used it is
 * added to flake.rekeys, replaced durably (datafile.c), and logged in a
 * WAL record of flake's resource manager, flushed, as the marks are
 * (highwater.c).  Replay (wal.c) adds the claims to the file wherever WAL
 * is replayed: on a standby, in crash recovery, and when a base backup is
 * restored with its WAL.  So a promoted standby or a restored server
 * never claims again what its primary claimed up to the last record it
 * replayed.
 *
 * Claims of one node that overlap or touch are merged into one, which
 * also makes replaying a record again change nothing; the file holds at
 * most FLAKE_REKEY_MAX_CLAIMS claims.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/xlog.h"
#include "access/xloginsert.h"
#include "storage/fd.h"

#include "claims.h"
#include "datafile.h"

#define FLAKE_REKEYS_FILE		"flake.rekeys"
#define FLAKE_REKEYS_TEMP		"flake.rekeys.tmp"
#define FLAKE_REKEYS_IMPORT		"flake.rekeys.import"
#define FLAKE_REKEYS_MAGIC		0x464C4B52	/* "FLKR" */

typedef struct RekeyFileHeader
{
	uint32		magic;
	uint32		count;			/* claims that follow */
	pg_crc32c	crc;			/* of the claims */
	uint32		reserved;
} RekeyFileHeader;

/*
 * Take the claims out of the contents of a flake.rekeys file (palloc'd);
 * false when they are not such a file or are damaged.
 */
static bool
parse_claims(const char *data, Size len, FlakeRekeyClaim **claims,
			 uint32 *count)
{
	RekeyFileHeader header;
	Size		size;

	if (len < sizeof(header))
		return false;
	memcpy(&header, data, sizeof(header));
	size = sizeof(FlakeRekeyClaim) * (Size) header.count;
	if (header.magic != FLAKE_REKEYS_MAGIC || len != sizeof(header) + size ||
		!EQ_CRC32C(header.crc, flake_datafile_crc(data + sizeof(header), size)))
		return false;
	*claims = palloc(Max(size, 1));
	memcpy(*claims, data + sizeof(header), size);
	*count = header.count;
	return true;
}

/*
 * Read the claims of a file (none when it does not exist).  A damaged file
 * is an error, with hint (if not NULL) saying what to do: without it, a
 * node's milliseconds could be claimed twice.
 */
static FlakeRekeyClaim *
read_claims_file(const char *path, uint32 *count, bool *found,
				 const char *hint)
{
	FlakeRekeyClaim *claims = NULL;
	struct stat st;
	char	   *data;
	int			fd;
	bool		ok;

	*count = 0;
	*found = false;
	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		if (errno == ENOENT)
			return NULL;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", path)));
	}
	*found = true;
	if (fstat(fd, &st) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat file \"%s\": %m", path)));
	data = palloc(Max(st.st_size, 1));
	ok = read(fd, data, st.st_size) == st.st_size &&
		parse_claims(data, st.st_size, &claims, count);
	CloseTransientFile(fd);
	pfree(data);
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("flake rekey claims file \"%s\" is damaged", path),
				 errdetail("It records which nodes and milliseconds earlier rekeys used; without it, rekeyed ids could repeat."),
				 hint != NULL ? errhint("%s", hint) : 0));
	return claims;
}

/* The claims made so far, from flake.rekeys. */
FlakeRekeyClaim *
flake_claims_read(uint32 *count)
{
	bool		found;

	return read_claims_file(FLAKE_REKEYS_FILE, count, &found, NULL);
}

/* Replace the file with the claims, durably (see datafile.c). */
static void
write_claims(const FlakeRekeyClaim *claims, uint32 count)
{
	Size		size = sizeof(FlakeRekeyClaim) * count;
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

/*
 * Merge claim into the count claims (which have room for one more): a
 * claim of the same node that overlaps or touches it is taken into it and
 * removed.  Returns the new count; *changed is left alone when a claim
 * covers it already.
 */
static uint32
merge_claim(FlakeRekeyClaim *claims, uint32 count, FlakeRekeyClaim claim,
			bool *changed)
{
	uint32		kept = 0;

	for (uint32 i = 0; i < count; i++)
	{
		FlakeRekeyClaim *c = &claims[i];

		if (c->node == claim.node && c->first_ms <= claim.first_ms &&
			c->last_ms >= claim.last_ms)
			return count;
		/* first_ms - 1 cannot overflow: first_ms >= 0 */
		if (c->node == claim.node && c->first_ms - 1 <= claim.last_ms &&
			claim.first_ms - 1 <= c->last_ms)
		{
			claim.first_ms = Min(claim.first_ms, c->first_ms);
			claim.last_ms = Max(claim.last_ms, c->last_ms);
			continue;
		}
		claims[kept++] = *c;
	}
	claims[kept++] = claim;
	*changed = true;
	return kept;
}

/*
 * Add claims to flake.rekeys; with log, also log them in WAL and flush it,
 * so that they are durable and reach standbys before the caller uses them
 * (the file comes first, so that a full data directory fails the claim
 * before anything is logged).  Without log, from replay: claims there
 * already change nothing.  The caller holds the claims' lock exclusively.
 */
void
flake_claims_add(const FlakeRekeyClaim *added, uint32 nadded, bool log)
{
	FlakeRekeyClaim *claims;
	uint32		count;
	uint32		merged;
	bool		changed = false;

	claims = flake_claims_read(&count);
	claims = claims ? repalloc(claims, sizeof(FlakeRekeyClaim) * (count + nadded))
		: palloc(sizeof(FlakeRekeyClaim) * Max(nadded, 1));
	merged = count;
	for (uint32 i = 0; i < nadded; i++)
		merged = merge_claim(claims, merged, added[i], &changed);
	if (log && merged > FLAKE_REKEY_MAX_CLAIMS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("flake.rekeys holds %u claims, the most it may hold",
						count),
				 errdetail("Each rekey claims a node of flake.rekey_nodes for the milliseconds of its rows.")));
	if (changed)
		write_claims(claims, merged);
	if (log)
	{
		XLogBeginInsert();
		XLogRegisterData((char *) added, sizeof(FlakeRekeyClaim) * nadded);
		XLogFlush(XLogInsert(FLAKE_RMGR_ID, XLOG_FLAKE_REKEY_CLAIMS));
	}
	pfree(claims);
}

/*
 * At start, in the postmaster (no other process runs, so no lock): take
 * over the claims of flake.rekeys.import, another server's flake.rekeys
 * copied here by the operator (see the README's upgrade steps), then
 * remove it.  A crash in between takes them over again, which changes
 * nothing.  Not logged in WAL (it cannot be written yet): a standby made
 * before this start lacks them, and refuses to generate in the databases
 * that came from the other server until it is made again (origin.c).
 */
void
flake_claims_import(void)
{
	FlakeRekeyClaim *claims;
	uint32		count;
	bool		found;

	claims = read_claims_file(FLAKE_REKEYS_IMPORT, &count, &found,
							  "Copy flake.rekeys of the old server (stopped) to \"" FLAKE_REKEYS_IMPORT "\" again.");
	if (!found)
		return;
	flake_claims_add(claims, count, false);
	durable_unlink(FLAKE_REKEYS_IMPORT, FATAL);
	ereport(LOG,
			(errmsg("flake took over the rekey claims of \"%s\"", FLAKE_REKEYS_IMPORT)));
}
