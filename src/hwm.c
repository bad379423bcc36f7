/*-------------------------------------------------------------------------
 *
 * hwm.c
 *	  The persisted high-water marks of issued timestamps.
 *
 * Before an id with a timestamp beyond its family's high-water mark is
 * returned, the mark is moved a chunk further ahead, written to a small file
 * in the data directory and logged in WAL, as sequences log ahead of
 * the values they hand out.  After a restart or crash, generation
 * resumes above the marks, so no id is reissued even when the clock has
 * been set back meanwhile.  One write per chunk keeps fsyncs off the hot
 * path.
 *
 * Each time a family's mark moves, flake.hwm is replaced and all three marks
 * are logged in a WAL record of flake's own resource manager; the record is
 * flushed before the generators see the new mark and hand out ids under it.
 * (The file comes first, so that a full data directory fails the move
 * before anything is logged.)  Replay (wal.c, state.c) raises the marks, in flake.hwm
 * and in shared memory, wherever WAL is replayed: on a standby, in crash
 * recovery, and when a base backup is restored with its WAL.
 *
 * The file is replaced, never written in place (datafile.c), so a full
 * disk or a crash at any point leaves the old marks or the new ones.
 *
 * The file also names the server that wrote it (its system identifier)
 * and the servers whose marks it took over: pg_upgrade and pg_dump carry
 * a database to a new server without this file, whose state must then be
 * taken over from the old one (state.c; origin.c refuses to generate
 * until it is).
 *
 * Reading the file never fails: flake_hwm_load says what is wrong with it,
 * and state.c refuses generation alone until it is repaired.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "access/xloginsert.h"
#include "miscadmin.h"

#include "datafile.h"
#include "hwm.h"

#define FLAKE_HWM_MAGIC		0x464C4B35	/* "FLK5": any number of servers */
#define FLAKE_HWM_MAGIC_V4	0x464C4B34	/* "FLK4": at most 13 servers */
#define FLAKE_HWM_MAGIC_V3	0x464C4B33	/* "FLK3": no servers */
#define FLAKE_HWM_MAGIC_V2	0x464C4B32	/* "FLK2": no ulidflake mark */

/*
 * The file: this header, then the other servers' system identifiers
 * (count of them, uint64 each), then the CRC-32C of both.
 */
typedef struct FlakeHwmHeader
{
	uint32		magic;
	uint32		count;
	FlakeMarks	marks;
	uint64		writer;
} FlakeHwmHeader;

/*
 * The file as 1.2 wrote it, with room for 13 other servers.  It is still
 * written while the servers fit, so that a 1.2 library reads it (after a
 * downgrade, or taking it over as flake.hwm.import).
 */
#define FLAKE_HWM_V4_SERVERS 13

typedef struct FlakeHwmFileV4
{
	uint32		magic;
	uint32		reserved;
	FlakeMarks	marks;
	uint64		writer;
	uint32		count;
	uint32		reserved2;
	uint64		id[FLAKE_HWM_V4_SERVERS];
	pg_crc32c	crc;			/* of the fields above */
} FlakeHwmFileV4;

/* The file as releases before the servers wrote it. */
typedef struct FlakeHwmFileV3
{
	uint32		magic;
	uint32		reserved;
	FlakeMarks	marks;
	pg_crc32c	crc;
} FlakeHwmFileV3;

/* The file as releases before the ulidflake mark wrote it. */
typedef struct FlakeHwmFileV2
{
	uint32		magic;
	uint32		reserved;
	int64		snowflake_unix_ms;
	int64		randflake_unix_s;
	pg_crc32c	crc;
} FlakeHwmFileV2;

/* The largest flake.hwm: the current format, naming the most servers */
#define FLAKE_HWM_MAX_SIZE	(sizeof(FlakeHwmHeader) + \
							 sizeof(uint64) * FLAKE_HWM_MAX_SERVERS + sizeof(pg_crc32c))

/*
 * Take the marks and the servers out of the contents of a file of the
 * current format or of 1.2's; false when they are not such a file or are
 * damaged.
 */
static bool
hwm_parse(const char *data, Size len, FlakeMarks *marks, FlakeServers *servers)
{
	FlakeHwmHeader header;
	FlakeHwmFileV4 v4;
	pg_crc32c	crc;

	if (len >= sizeof(header) + sizeof(crc))
	{
		memcpy(&header, data, sizeof(header));
		memcpy(&crc, data + len - sizeof(crc), sizeof(crc));
		if (header.magic == FLAKE_HWM_MAGIC &&
			header.count <= FLAKE_HWM_MAX_SERVERS &&
			len == sizeof(header) + sizeof(uint64) * (Size) header.count + sizeof(crc) &&
			EQ_CRC32C(crc, flake_datafile_crc(data, len - sizeof(crc))))
		{
			*marks = header.marks;
			for (uint32 i = 0; i < header.count; i++)
			{
				uint64		id;

				CHECK_FOR_INTERRUPTS();
				memcpy(&id, data + sizeof(header) + sizeof(uint64) * i, sizeof(id));
				flake_hwm_servers_add(servers, id);
			}
			flake_hwm_servers_add(servers, header.writer);
			servers->writer = header.writer;
			return true;
		}
	}
	if (len != sizeof(v4))
		return false;
	memcpy(&v4, data, sizeof(v4));
	if (v4.magic != FLAKE_HWM_MAGIC_V4 || v4.count > FLAKE_HWM_V4_SERVERS ||
		!EQ_CRC32C(v4.crc, flake_datafile_crc(&v4, offsetof(FlakeHwmFileV4, crc))))
		return false;
	*marks = v4.marks;
	for (uint32 i = 0; i < v4.count; i++)
		flake_hwm_servers_add(servers, v4.id[i]);
	flake_hwm_servers_add(servers, v4.writer);
	servers->writer = v4.writer;
	return true;
}

/*
 * Take the marks out of the contents of a file of the formats before the
 * servers; false when they are not such a file or are damaged.  Those
 * before the ulidflake mark have that mark at 0 (those releases kept
 * none).
 */
static bool
hwm_parse_old(const char *data, Size len, FlakeMarks *marks)
{
	FlakeHwmFileV3 v3;
	FlakeHwmFileV2 v2;

	if (len == sizeof(v3))
	{
		memcpy(&v3, data, sizeof(v3));
		if (v3.magic != FLAKE_HWM_MAGIC_V3 ||
			!EQ_CRC32C(v3.crc, flake_datafile_crc(&v3, offsetof(FlakeHwmFileV3, crc))))
			return false;
		*marks = v3.marks;
		return true;
	}
	if (len != sizeof(v2))
		return false;
	memcpy(&v2, data, sizeof(v2));
	if (v2.magic != FLAKE_HWM_MAGIC_V2 ||
		!EQ_CRC32C(v2.crc, flake_datafile_crc(&v2, offsetof(FlakeHwmFileV2, crc))))
		return false;
	marks->mark[FLAKE_HWM_SNOWFLAKE] = v2.snowflake_unix_ms;
	marks->mark[FLAKE_HWM_RANDFLAKE] = v2.randflake_unix_s;
	return true;
}

/* Whether a magic number is that of a format of flake.hwm this release reads. */
static bool
hwm_magic_known(uint32 magic)
{
	return magic == FLAKE_HWM_MAGIC || magic == FLAKE_HWM_MAGIC_V4 ||
		magic == FLAKE_HWM_MAGIC_V3 || magic == FLAKE_HWM_MAGIC_V2;
}

/*
 * Read a flake.hwm (this server's, or another's by path): the marks (0
 * when there is no file), and the servers whose marks they hold besides
 * this one's: those the file lists, and the server that wrote it when that
 * is another (the file was copied from it).  A file of the formats before
 * the servers names none (servers->writer is 0): it is taken as the
 * server's own where it lies, and rewritten at start naming this server.
 *
 * True when the file was read or does not exist (problem->status says
 * which); false, with the problem, when it cannot be read or is not an
 * intact flake.hwm of a format this release reads.  servers->id is
 * palloc'd in every case; the caller frees it.
 */
bool
flake_hwm_load(const char *path, FlakeMarks *marks, FlakeServers *servers,
			   FlakeFileProblem *problem)
{
	char	   *data;
	size_t		len;
	bool		ok;

	memset(marks, 0, sizeof(*marks));
	servers->writer = 0;
	servers->count = 0;
	servers->id = palloc(0);
	data = flake_datafile_read(path, FLAKE_HWM_MAX_SIZE, &len, problem);
	if (data == NULL)
		return problem->status == FLAKE_FILE_MISSING;
	ok = hwm_parse(data, len, marks, servers) || hwm_parse_old(data, len, marks);
	if (!ok)
	{
		uint32		magic = 0;

		memcpy(&magic, data, Min(len, sizeof(magic)));
		flake_datafile_damaged(problem, data, len, hwm_magic_known(magic));
		memset(marks, 0, sizeof(*marks));
		servers->writer = 0;
		servers->count = 0;
	}
	pfree(data);
	return ok;
}

/*
 * Refuse (elevel ERROR), or warn at start, with what to do, because
 * flake.hwm cannot be read: without its marks, ids issued before could be
 * issued again.
 */
void
flake_hwm_refuse(int elevel, const FlakeFileProblem *problem)
{
	ereport(elevel,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 flake_datafile_errmsg(FLAKE_HWM_FILE, problem),
			 errdetail("It holds flake's high-water marks, the newest times ids may have been issued at: without them ids could repeat, so flake_next(), ulidflake_next(), randflake_next() and rekey claims refuse until it is repaired. The rest of the server works.%s",
					   problem->status == FLAKE_FILE_UNKNOWN_FORMAT ?
					   " A later release of flake may have written it." : ""),
			 problem->status == FLAKE_FILE_UNREADABLE ?
			 errhint("Give the server's operating system user read and write access to it, as to the rest of the data directory; generation resumes at the next call.") :
			 errhint("Put back an intact copy of it as it was when damaged or moved away (an older one would let later ids repeat)%s; generation resumes at the next call. Without one, run SELECT flake_repair_state(t) as a superuser, where t is a time later than every id this server issued (see \"Damaged state files\" in flake's docs/guarantees.md).",
					 problem->status == FLAKE_FILE_UNKNOWN_FORMAT ?
					 ", or install the release of flake that wrote it and restart" : "")));
}

/*
 * The other servers whose marks flake.hwm holds (see flake_hwm_load), and
 * the one that wrote it (0 if none did in this format); the caller frees
 * servers->id.  A file that cannot be read is refused, and so is a missing
 * one where flake wrote one (flake.written) or marks are in use (marked):
 * it was lost, and its marks and servers with it.
 */
static void
hwm_servers(FlakeServers *servers, bool marked)
{
	FlakeMarks	marks;
	FlakeFileProblem problem;

	if (!flake_hwm_load(FLAKE_HWM_FILE, &marks, servers, &problem))
		flake_hwm_refuse(ERROR, &problem);
	if (problem.status == FLAKE_FILE_MISSING &&
		(marked || (flake_datafile_written(NULL) & FLAKE_WRITTEN_HWM) != 0))
	{
		problem.status = FLAKE_FILE_LOST;
		flake_hwm_refuse(ERROR, &problem);
	}
}

void
flake_hwm_servers(FlakeServers *servers)
{
	hwm_servers(servers, false);
}

/*
 * Add a server's system identifier to the list, unless it is this
 * server's, 0 (none) or listed already.  Each server a database may come
 * from must stay in it, so beyond FLAKE_HWM_MAX_SERVERS this refuses.
 */
void
flake_hwm_servers_add(FlakeServers *servers, uint64 id)
{
	if (id == 0 || id == GetSystemIdentifier())
		return;
	for (uint32 i = 0; i < servers->count; i++)
		if (servers->id[i] == id)
			return;
	if (servers->count >= FLAKE_HWM_MAX_SERVERS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("flake.hwm names %d other servers, the most it may name",
						FLAKE_HWM_MAX_SERVERS),
				 errdetail("Each server whose state was taken over here is named, since databases may come from it.")));
	servers->id = repalloc(servers->id, sizeof(uint64) * (servers->count + 1));
	servers->id[servers->count++] = id;
}

/*
 * Replace the file with the marks and the other servers (see datafile.c),
 * naming this one as its writer: in 1.2's format while they fit in it, so
 * that a 1.2 library still reads the file, else in the current one.  A
 * temporary file left behind by a crash is removed at the next start.
 */
void
flake_hwm_write(const FlakeMarks *marks, const FlakeServers *servers)
{
	if (servers->count <= FLAKE_HWM_V4_SERVERS)
	{
		FlakeHwmFileV4 data;

		memset(&data, 0, sizeof(data));
		data.magic = FLAKE_HWM_MAGIC_V4;
		data.marks = *marks;
		data.writer = GetSystemIdentifier();
		data.count = servers->count;
		memcpy(data.id, servers->id, sizeof(uint64) * servers->count);
		data.crc = flake_datafile_crc(&data, offsetof(FlakeHwmFileV4, crc));
		flake_datafile_replace(FLAKE_HWM_FILE, FLAKE_HWM_TEMP_FILE,
							   &data, sizeof(data));
	}
	else
	{
		Size		ids = sizeof(uint64) * servers->count;
		Size		len = sizeof(FlakeHwmHeader) + ids + sizeof(pg_crc32c);
		char	   *data = palloc0(len);
		FlakeHwmHeader *header = (FlakeHwmHeader *) data;
		pg_crc32c	crc;

		header->magic = FLAKE_HWM_MAGIC;
		header->count = servers->count;
		header->marks = *marks;
		header->writer = GetSystemIdentifier();
		memcpy(data + sizeof(FlakeHwmHeader), servers->id, ids);
		crc = flake_datafile_crc(data, len - sizeof(crc));
		memcpy(data + len - sizeof(crc), &crc, sizeof(crc));
		flake_datafile_replace(FLAKE_HWM_FILE, FLAKE_HWM_TEMP_FILE, data, len);
		pfree(data);
	}
	flake_datafile_set_written(FLAKE_WRITTEN_HWM);
}

/*
 * Replace the file with the marks, keeping the servers it names; marked:
 * marks were in use before, so that the file must be there.  The caller
 * holds the marks' lock exclusively.
 */
static void
hwm_write(const FlakeMarks *marks, bool marked)
{
	FlakeServers servers;

	hwm_servers(&servers, marked);
	flake_hwm_write(marks, &servers);
	pfree(servers.id);
}

/*
 * Log the marks in WAL and flush it, before the generators may use them:
 * in the marks' record, or with the servers whose state was taken over
 * (count of them) in the take-over record, so that standbys and restores
 * name them too.
 */
void
flake_hwm_log(const FlakeMarks *marks, const uint64 *servers, uint32 count)
{
	XLogBeginInsert();
	XLogRegisterData((char *) marks, sizeof(*marks));
	if (count > 0)
		XLogRegisterData((char *) servers, sizeof(uint64) * count);
	XLogFlush(XLogInsert(FLAKE_RMGR_ID,
						 count > 0 ? XLOG_FLAKE_TAKE_OVER : XLOG_FLAKE_MARKS));
}

/*
 * Log marks that replace the marks even where lower (a repair redone,
 * state.c), and flush it.
 */
void
flake_hwm_log_set(const FlakeMarks *marks)
{
	XLogBeginInsert();
	XLogRegisterData((char *) marks, sizeof(*marks));
	XLogFlush(XLogInsert(FLAKE_RMGR_ID, XLOG_FLAKE_MARKS_SET));
}

/* Set up the shared state from the marks read at start. */
void
flake_hwm_init(FlakeMarkState *state, const FlakeMarks *marks)
{
	for (int i = 0; i < FLAKE_HWM_FAMILIES; i++)
		pg_atomic_init_u64(&state->mark[i], (uint64) marks->mark[i]);
}

/* The marks as shared memory has them. */
void
flake_hwm_current(FlakeMarkState *state, FlakeMarks *marks)
{
	for (int i = 0; i < FLAKE_HWM_FAMILIES; i++)
		marks->mark[i] = (int64) pg_atomic_read_u64(&state->mark[i]);
}

/*
 * Give the marks to the generators, once they are persisted.  The caller
 * holds the marks' lock exclusively.
 */
void
flake_hwm_publish(FlakeMarkState *state, const FlakeMarks *marks)
{
	for (int i = 0; i < FLAKE_HWM_FAMILIES; i++)
		pg_atomic_write_u64(&state->mark[i], (uint64) marks->mark[i]);
}

/*
 * Make sure the persisted mark of a family covers value (its timestamp unit)
 * before an id with that timestamp is returned: move it a chunk beyond
 * value in the file and in WAL, then give it to the generators.
 */
void
flake_hwm_extend(FlakeMarkState *state, LWLock *lock, FlakeHwm which,
				 int64 value)
{
	/* how far ahead of value a move takes the mark, by FlakeHwm */
	static const int64 chunk[FLAKE_HWM_FAMILIES] = {
		FLAKE_HWM_CHUNK_MS, FLAKE_HWM_CHUNK_S, FLAKE_HWM_CHUNK_MS
	};
	FlakeMarks	marks;

	LWLockAcquire(lock, LW_EXCLUSIVE);
	flake_hwm_current(state, &marks);
	/* another backend may have moved it while we waited */
	if (marks.mark[which] < value)
	{
		bool		marked = false;

		for (int i = 0; i < FLAKE_HWM_FAMILIES; i++)
			marked |= marks.mark[i] > 0;
		marks.mark[which] = value + chunk[which];
		hwm_write(&marks, marked);
		flake_hwm_log(&marks, NULL, 0);
		flake_hwm_publish(state, &marks);
	}
	LWLockRelease(lock);
}

/*
 * Raise the marks to cover marks, exactly, in one write: the newest ids
 * read from a table (table_ids.c).  Not a chunk further, as
 * flake_hwm_extend goes: a later take-over or restart starts every node at
 * the marks, and would start them a chunk ahead of those ids, and of the
 * clock, for nothing.
 */
void
flake_hwm_cover_all(FlakeMarkState *state, LWLock *lock, const FlakeMarks *cover)
{
	FlakeMarks	marks;
	bool		marked = false;
	bool		raised = false;

	LWLockAcquire(lock, LW_EXCLUSIVE);
	flake_hwm_current(state, &marks);
	for (int i = 0; i < FLAKE_HWM_FAMILIES; i++)
	{
		marked |= marks.mark[i] > 0;
		if (cover->mark[i] > marks.mark[i])
		{
			marks.mark[i] = cover->mark[i];
			raised = true;
		}
	}
	if (raised)
	{
		hwm_write(&marks, marked);
		flake_hwm_log(&marks, NULL, 0);
		flake_hwm_publish(state, &marks);
	}
	LWLockRelease(lock);
}
