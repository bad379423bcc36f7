/*-------------------------------------------------------------------------
 *
 * claims.c
 *	  The rekey claims, in flake.rekeys and in WAL.
 *
 * Each rekey claims a node of flake.rekey_nodes (or a ulidflake band) for
 * the milliseconds of its ids (migrate_rekey.c).  Before a claim is used it is
 * added to flake.rekeys, replaced durably (datafile.c), and logged in a
 * WAL record of flake's resource manager, flushed, as the marks are
 * (hwm.c).  Replay (wal.c) adds the claims to the file wherever WAL
 * is replayed: on a standby, in crash recovery, and when a base backup is
 * restored with its WAL.  So a promoted standby or a restored server
 * never claims again what its primary claimed up to the last record it
 * replayed.
 *
 * Claims of one node that overlap or touch are merged into one, which
 * also makes replaying a record again change nothing; the file holds at
 * most FLAKE_REKEY_MAX_CLAIMS claims.
 *
 * Reading the file never fails: flake_claims_load says what is wrong with
 * it, and state.c refuses rekey claims alone until it is repaired.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "access/xloginsert.h"

#include "claims.h"
#include "datafile.h"

#define FLAKE_REKEYS_TEMP		"flake.rekeys.tmp"
#define FLAKE_REKEYS_MAGIC		0x464C4B52	/* "FLKR" */

typedef struct RekeyFileHeader
{
	uint32		magic;
	uint32		count;			/* claims that follow */
	pg_crc32c	crc;			/* of the claims */
	uint32		reserved;
} RekeyFileHeader;

/* The largest flake.rekeys: the most claims it may hold */
#define FLAKE_REKEYS_MAX_SIZE	(sizeof(RekeyFileHeader) + \
								 sizeof(FlakeRekeyClaim) * FLAKE_REKEY_MAX_CLAIMS)

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
	if (header.magic != FLAKE_REKEYS_MAGIC ||
		header.count > FLAKE_REKEY_MAX_CLAIMS || len != sizeof(header) + size ||
		!EQ_CRC32C(header.crc, flake_datafile_crc(data + sizeof(header), size)))
		return false;
	*claims = palloc(Max(size, 1));
	memcpy(*claims, data + sizeof(header), size);
	*count = header.count;
	return true;
}

/*
 * Read the claims of a flake.rekeys (this server's, or another's by path;
 * palloc'd, none when it does not exist).  NULL, with the problem, when it
 * cannot be read or is not an intact flake.rekeys.
 */
FlakeRekeyClaim *
flake_claims_load(const char *path, uint32 *count, FlakeFileProblem *problem)
{
	FlakeRekeyClaim *claims = NULL;
	char	   *data;
	size_t		len;

	*count = 0;
	data = flake_datafile_read(path, FLAKE_REKEYS_MAX_SIZE, &len, problem);
	if (data == NULL)
		return problem->status == FLAKE_FILE_MISSING ?
			palloc(sizeof(FlakeRekeyClaim)) : NULL;
	if (!parse_claims(data, len, &claims, count))
	{
		uint32		magic = 0;

		memcpy(&magic, data, Min(len, sizeof(magic)));
		flake_datafile_damaged(problem, data, len, magic == FLAKE_REKEYS_MAGIC);
		claims = NULL;
		*count = 0;
	}
	pfree(data);
	return claims;
}

/*
 * Refuse (elevel ERROR), or warn at start, with what to do, because
 * flake.rekeys cannot be read: without it, a node's milliseconds could be
 * claimed twice.  With import_waits, another server's files wait to be
 * taken over, which needs it: the generators refuse too.
 */
void
flake_claims_refuse(int elevel, const FlakeFileProblem *problem,
					bool import_waits)
{
	ereport(elevel,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 flake_datafile_errmsg(FLAKE_REKEYS_FILE, problem),
			 import_waits ?
			 errdetail("It holds the rekey claims, the nodes and milliseconds earlier rekeys used. Another server's files wait in flake.hwm.import and flake.rekeys.import to be taken over, which needs it: until then flake_next(), ulidflake_next(), randflake_next() and rekey claims refuse, since databases that came from that server may hold its ids. The rest of the server works.%s",
					   problem->status == FLAKE_FILE_UNKNOWN_FORMAT ?
					   " A later release of flake may have written it." : "") :
			 errdetail("It holds the rekey claims, the nodes and milliseconds earlier rekeys used: without them a rekey could use them again, so rekey claims (flake_migrate() with rekey_from) refuse until it is repaired. The generators and the rest of the server work.%s",
					   problem->status == FLAKE_FILE_UNKNOWN_FORMAT ?
					   " A later release of flake may have written it." : ""),
			 problem->status == FLAKE_FILE_UNREADABLE ?
			 errhint("Give the server's operating system user read and write access to it, as to the rest of the data directory; rekeys resume at the next claim.") :
			 errhint("Put back an intact copy of it as it was when damaged or moved away (an older one would let rekeys reuse later claims)%s; rekeys resume at the next claim. Without one, run SELECT flake_repair_state(t) as a superuser, where t is a time later than every id this server issued and every row a rekey gave an id (see \"Damaged state files\" in flake's docs/guarantees.md).",
					 problem->status == FLAKE_FILE_UNKNOWN_FORMAT ?
					 ", or install the release of flake that wrote it and restart" : "")));
}

/*
 * The claims made so far, from flake.rekeys; a file that cannot be read is
 * refused, and so is a missing one where flake wrote one (flake.written):
 * it was lost, and the claims with it.
 */
FlakeRekeyClaim *
flake_claims_read(uint32 *count)
{
	FlakeFileProblem problem;
	FlakeRekeyClaim *claims = flake_claims_load(FLAKE_REKEYS_FILE, count, &problem);

	if (claims != NULL && problem.status == FLAKE_FILE_MISSING &&
		(flake_datafile_written(NULL) & FLAKE_WRITTEN_REKEYS) != 0)
		problem.status = FLAKE_FILE_LOST;
	if (claims == NULL || problem.status == FLAKE_FILE_LOST)
		flake_claims_refuse(ERROR, &problem, false);
	return claims;
}

/* Replace the file with the claims, durably (see datafile.c). */
void
flake_claims_write(const FlakeRekeyClaim *claims, uint32 count)
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
	flake_datafile_set_written(FLAKE_WRITTEN_REKEYS);
}

/* qsort comparator: claims by node, then by first millisecond */
static int
claim_cmp(const void *a, const void *b)
{
	const FlakeRekeyClaim *x = (const FlakeRekeyClaim *) a;
	const FlakeRekeyClaim *y = (const FlakeRekeyClaim *) b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->first_ms != y->first_ms)
		return x->first_ms < y->first_ms ? -1 : 1;
	return 0;
}

/*
 * Merge the nadded claims added into the count claims of *claims (palloc'd;
 * made larger here), and return their number; *changed is set when that
 * changes them.  Claims of one node that overlap or touch become one.
 * Sorted, then merged in one pass: n log n, since this runs under flake's
 * lock with up to FLAKE_REKEY_MAX_CLAIMS claims on each side.
 */
uint32
flake_claims_merge(FlakeRekeyClaim **claims, uint32 count,
				   const FlakeRekeyClaim *added, uint32 nadded, bool *changed)
{
	Size		before_size = sizeof(FlakeRekeyClaim) * count;
	FlakeRekeyClaim *before = palloc(Max(before_size, 1));
	FlakeRekeyClaim *all;
	uint32		kept = 0;

	memcpy(before, *claims, before_size);
	*claims = repalloc(*claims, sizeof(FlakeRekeyClaim) * Max(count + nadded, 1));
	all = *claims;
	memcpy(all + count, added, sizeof(FlakeRekeyClaim) * nadded);
	qsort(all, count + nadded, sizeof(FlakeRekeyClaim), claim_cmp);
	for (uint32 i = 0; i < count + nadded; i++)
	{
		FlakeRekeyClaim *last = kept > 0 ? &all[kept - 1] : NULL;

		/* first_ms - 1 cannot overflow: first_ms >= 0 */
		if (last != NULL && last->node == all[i].node &&
			all[i].first_ms - 1 <= last->last_ms)
		{
			last->last_ms = Max(last->last_ms, all[i].last_ms);
			continue;
		}
		all[kept] = all[i];
		all[kept++].reserved = 0;
	}
	if (kept != count || memcmp(all, before, before_size) != 0)
		*changed = true;
	pfree(before);
	return kept;
}

/*
 * Log claims in WAL and flush it, so that they are durable and reach
 * standbys before the caller uses them.
 */
void
flake_claims_log(const FlakeRekeyClaim *claims, uint32 count)
{
	if (count == 0)
		return;
	XLogBeginInsert();
	XLogRegisterData((char *) claims, sizeof(FlakeRekeyClaim) * count);
	XLogFlush(XLogInsert(FLAKE_RMGR_ID, XLOG_FLAKE_REKEY_CLAIMS));
}

/*
 * Add claims to flake.rekeys and log them in WAL (the file comes first,
 * so that a full data directory fails the claim before anything is
 * logged).  The caller holds the claims' lock exclusively.
 */
void
flake_claims_add(const FlakeRekeyClaim *added, uint32 nadded)
{
	FlakeRekeyClaim *claims;
	uint32		count;
	uint32		merged;
	bool		changed = false;

	claims = flake_claims_read(&count);
	merged = flake_claims_merge(&claims, count, added, nadded, &changed);
	if (merged > FLAKE_REKEY_MAX_CLAIMS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("flake.rekeys holds %u claims, the most it may hold",
						count),
				 errdetail("Each rekey claims a node of flake.rekey_nodes for the milliseconds of its rows.")));
	if (changed)
		flake_claims_write(claims, merged);
	flake_claims_log(added, nadded);
	pfree(claims);
}
