/*-------------------------------------------------------------------------
 *
 * highwater.c
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
 * before anything is logged.)  Replay (wal.c) raises the marks, in flake.hwm
 * and in shared memory, wherever WAL is replayed: on a standby, in crash
 * recovery, and when a base backup is restored with its WAL.
 *
 * The file is replaced, never written in place (datafile.c), so a full
 * disk or a crash at any point leaves the old marks or the new ones.
 *
 * The file also names the server that wrote it (its system identifier)
 * and the servers whose marks it took over: pg_upgrade and pg_dump carry
 * a database to a new server without this file, which must then be
 * copied from the old one (origin.c refuses to generate until it is).
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
#include "utils/memutils.h"

#include "datafile.h"
#include "highwater.h"

#define FLAKE_HWM_FILE		"flake.hwm"
#define FLAKE_HWM_TEMP_FILE	"flake.hwm.tmp"
#define FLAKE_HWM_IMPORT_FILE "flake.hwm.import"
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

static void servers_add(FlakeServers *servers, uint64 id, uint64 own);
static void hwm_write_servers(const FlakeMarks *marks,
							  const FlakeServers *servers);

/*
 * Take the marks and the servers out of the contents of a file of the
 * current format or of 1.2's; false when they are not such a file or are
 * damaged.
 */
static bool
hwm_parse(const char *data, Size len, FlakeMarks *marks, FlakeServers *servers)
{
	uint64		own = GetSystemIdentifier();
	FlakeHwmHeader header;
	FlakeHwmFileV4 v4;
	pg_crc32c	crc;

	if (len >= sizeof(header) + sizeof(crc))
	{
		memcpy(&header, data, sizeof(header));
		memcpy(&crc, data + len - sizeof(crc), sizeof(crc));
		if (header.magic == FLAKE_HWM_MAGIC &&
			len == sizeof(header) + sizeof(uint64) * (Size) header.count + sizeof(crc) &&
			EQ_CRC32C(crc, flake_datafile_crc(data, len - sizeof(crc))))
		{
			*marks = header.marks;
			for (uint32 i = 0; i < header.count; i++)
			{
				uint64		id;

				memcpy(&id, data + sizeof(header) + sizeof(uint64) * i, sizeof(id));
				servers_add(servers, id, own);
			}
			servers_add(servers, header.writer, own);
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
		servers_add(servers, v4.id[i], own);
	servers_add(servers, v4.writer, own);
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

/*
 * Read flake.hwm: the marks (0 when there is no file yet), and the
 * servers whose marks they hold besides this one's: those the file lists,
 * and the server that wrote it when that is another (the file was copied
 * from it, see the README's upgrade steps).  A file of the formats before
 * the servers is taken as this server's own (they were written where they
 * lie, unless copied; flake_hwm_read rewrites it at start, naming this
 * server).
 * Also for flake.hwm.import, by path.  False when the file is damaged;
 * *found says whether it exists, *old_format whether it is in a format
 * before the servers.  servers->id is palloc'd in every case.
 */
static bool
hwm_read_file(const char *path, FlakeMarks *marks, FlakeServers *servers,
			  bool *found, bool *old_format)
{
	struct stat st;
	char	   *data;
	int			fd;
	bool		ok;

	memset(marks, 0, sizeof(*marks));
	servers->writer = 0;
	servers->count = 0;
	servers->id = palloc(0);
	*found = false;
	*old_format = false;
	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		if (errno == ENOENT)
			return true;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", path)));
	}
	*found = true;
	if (fstat(fd, &st) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat file \"%s\": %m", path)));
	if (st.st_size > (off_t) MaxAllocSize)
	{
		CloseTransientFile(fd);
		return false;
	}
	data = palloc(Max(st.st_size, 1));
	ok = read(fd, data, st.st_size) == st.st_size;
	CloseTransientFile(fd);

	if (ok && !hwm_parse(data, st.st_size, marks, servers))
		ok = *old_format = hwm_parse_old(data, st.st_size, marks);
	pfree(data);
	return ok;
}

/*
 * Read the high-water marks at start, in the postmaster while it creates
 * shared memory.  A damaged file stops the server: without it, ids issued
 * before could be issued again.
 *
 * A flake.hwm.import, another server's flake.hwm copied here by the
 * operator (see the README's upgrade steps), is taken over first: the
 * marks rise to its marks, and flake.hwm names that server and those it
 * names, before the import is removed (a crash in between takes it over
 * again, which changes nothing).
 */
void
flake_hwm_read(FlakeMarks *marks)
{
	FlakeServers servers;
	FlakeMarks	imported;
	FlakeServers imported_servers;
	bool		found;
	bool		old_format;

	/* a replacement that a crash or a full disk left unfinished */
	if (unlink(FLAKE_HWM_TEMP_FILE) != 0 && errno != ENOENT)
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not remove file \"%s\": %m", FLAKE_HWM_TEMP_FILE)));

	if (!hwm_read_file(FLAKE_HWM_FILE, marks, &servers, &found, &old_format))
		ereport(FATAL,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("flake high-water mark file \"%s\" is damaged", FLAKE_HWM_FILE),
				 errdetail("It records the newest timestamp flake may have issued; without it, ids could repeat."),
				 errhint("If the system clock is known to be past every issued id, remove the file and start the server again.")));
	/* named as this server's now, so that a copy names it */
	if (old_format)
		hwm_write_servers(marks, &servers);

	if (!hwm_read_file(FLAKE_HWM_IMPORT_FILE, &imported, &imported_servers,
					   &found, &old_format))
		ereport(FATAL,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("flake high-water mark file \"%s\" is damaged", FLAKE_HWM_IMPORT_FILE),
				 errhint("Copy flake.hwm of the old server (stopped) to \"%s\" again.",
						 FLAKE_HWM_IMPORT_FILE)));
	if (found)
	{
		for (int i = 0; i < FLAKE_HWM_FAMILIES; i++)
			marks->mark[i] = Max(marks->mark[i], imported.mark[i]);
		for (uint32 i = 0; i < imported_servers.count; i++)
			servers_add(&servers, imported_servers.id[i], GetSystemIdentifier());
		hwm_write_servers(marks, &servers);
		durable_unlink(FLAKE_HWM_IMPORT_FILE, FATAL);
		ereport(LOG,
				(errmsg("flake took over the marks of \"%s\"", FLAKE_HWM_IMPORT_FILE)));
	}
	pfree(servers.id);
	pfree(imported_servers.id);
}

/*
 * The other servers whose marks flake.hwm holds (see hwm_read_file), and
 * the one that wrote it (0 if none did in this format); the caller frees
 * servers->id.  A damaged file is an error.
 */
void
flake_hwm_servers(FlakeServers *servers)
{
	FlakeMarks	marks;
	bool		found;
	bool		old_format;

	if (!hwm_read_file(FLAKE_HWM_FILE, &marks, servers, &found, &old_format))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("flake high-water mark file \"%s\" is damaged", FLAKE_HWM_FILE),
				 errdetail("It records the newest timestamp flake may have issued; without it, ids could repeat.")));
}

/*
 * Add a server's system identifier to the list, unless it is own (this
 * server's), 0 (none) or listed already.  The list has no bound: each
 * server a database may come from must stay in it.
 */
static void
servers_add(FlakeServers *servers, uint64 id, uint64 own)
{
	if (id == 0 || id == own)
		return;
	for (uint32 i = 0; i < servers->count; i++)
		if (servers->id[i] == id)
			return;
	servers->id = repalloc(servers->id, sizeof(uint64) * (servers->count + 1));
	servers->id[servers->count++] = id;
}

/*
 * Replace the file with the marks and the other servers (see datafile.c),
 * naming this one as its writer: in 1.2's format while they fit in it, so
 * that a 1.2 library still reads the file, else in the current one.  A
 * temporary file left behind by a crash is removed at the next start.
 */
static void
hwm_write_servers(const FlakeMarks *marks, const FlakeServers *servers)
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
}

/*
 * Replace the file with the marks, keeping the servers it names.  The
 * caller holds the marks' lock exclusively.
 */
static void
hwm_write(const FlakeMarks *marks)
{
	FlakeServers servers;

	flake_hwm_servers(&servers);
	hwm_write_servers(marks, &servers);
	pfree(servers.id);
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
static void
hwm_publish(FlakeMarkState *state, const FlakeMarks *marks)
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
		XLogRecPtr	lsn;

		marks.mark[which] = value + chunk[which];
		hwm_write(&marks);
		XLogBeginInsert();
		XLogRegisterData((char *) &marks, sizeof(marks));
		lsn = XLogInsert(FLAKE_RMGR_ID, XLOG_FLAKE_MARKS);
		XLogFlush(lsn);
		hwm_publish(state, &marks);
	}
	LWLockRelease(lock);
}

/*
 * Raise the marks to those of a replayed WAL record, in the file and in
 * shared memory.  Marks never go down: a record replayed again changes
 * nothing.
 */
void
flake_hwm_raise(FlakeMarkState *state, LWLock *lock, const FlakeMarks *logged)
{
	FlakeMarks	current;
	FlakeMarks	next;

	LWLockAcquire(lock, LW_EXCLUSIVE);
	flake_hwm_current(state, &current);
	for (int i = 0; i < FLAKE_HWM_FAMILIES; i++)
		next.mark[i] = Max(current.mark[i], logged->mark[i]);
	if (memcmp(&next, &current, sizeof(next)) != 0)
	{
		hwm_write(&next);
		hwm_publish(state, &next);
	}
	LWLockRelease(lock);
}
