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
#include <unistd.h>

#include "access/xlog.h"
#include "access/xloginsert.h"
#include "storage/fd.h"

#include "datafile.h"
#include "highwater.h"

#define FLAKE_HWM_FILE		"flake.hwm"
#define FLAKE_HWM_TEMP_FILE	"flake.hwm.tmp"
#define FLAKE_HWM_IMPORT_FILE "flake.hwm.import"
#define FLAKE_HWM_MAGIC		0x464C4B34	/* "FLK4" */
#define FLAKE_HWM_MAGIC_V3	0x464C4B33	/* "FLK3": no servers */
#define FLAKE_HWM_MAGIC_V2	0x464C4B32	/* "FLK2": no ulidflake mark */

typedef struct FlakeHwmFile
{
	uint32		magic;
	uint32		reserved;
	FlakeMarks	marks;
	FlakeServers servers;
	pg_crc32c	crc;			/* of the fields above */
} FlakeHwmFile;

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
 * Read flake.hwm: the marks (0 when there is no file yet), and the
 * servers whose marks they hold besides this one's: those the file lists,
 * and the server that wrote it when that is another (the file was copied
 * from it, see the README's upgrade steps).  A file of the formats before
 * the servers is taken as this server's own (they were written where they
 * lie, unless copied; flake_hwm_read rewrites it at start, naming this
 * server); one before the ulidflake mark has that mark at 0 (those
 * releases kept none).
 * Also for flake.hwm.import, by path.  False when the file is damaged;
 * *found says whether it exists, *old_format whether it is in a format of
 * an earlier release.
 */
static bool
hwm_read_file(const char *path, FlakeMarks *marks, FlakeServers *servers,
			  bool *found, bool *old_format)
{
	union
	{
		FlakeHwmFile v4;
		FlakeHwmFileV3 v3;
		FlakeHwmFileV2 v2;
		char		bytes[sizeof(FlakeHwmFile) + 1];
	}			data;
	int			fd;
	int			nread;
	uint64		own = GetSystemIdentifier();

	memset(marks, 0, sizeof(*marks));
	memset(servers, 0, sizeof(*servers));
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
	memset(&data, 0, sizeof(data));
	nread = read(fd, &data, sizeof(data));
	CloseTransientFile(fd);

	if (nread == sizeof(FlakeHwmFile) && data.v4.magic == FLAKE_HWM_MAGIC &&
		EQ_CRC32C(data.v4.crc, flake_datafile_crc(&data.v4, offsetof(FlakeHwmFile, crc))) &&
		data.v4.servers.count <= FLAKE_HWM_MAX_SERVERS)
	{
		*marks = data.v4.marks;
		for (uint32 i = 0; i < data.v4.servers.count; i++)
			servers_add(servers, data.v4.servers.id[i], own);
		servers_add(servers, data.v4.servers.writer, own);
		servers->writer = data.v4.servers.writer;
	}
	else if (nread == sizeof(FlakeHwmFileV3) && data.v3.magic == FLAKE_HWM_MAGIC_V3 &&
			 EQ_CRC32C(data.v3.crc, flake_datafile_crc(&data.v3, offsetof(FlakeHwmFileV3, crc))))
	{
		*marks = data.v3.marks;
		*old_format = true;
	}
	else if (nread == sizeof(FlakeHwmFileV2) && data.v2.magic == FLAKE_HWM_MAGIC_V2 &&
			 EQ_CRC32C(data.v2.crc, flake_datafile_crc(&data.v2, offsetof(FlakeHwmFileV2, crc))))
	{
		marks->mark[FLAKE_HWM_SNOWFLAKE] = data.v2.snowflake_unix_ms;
		marks->mark[FLAKE_HWM_RANDFLAKE] = data.v2.randflake_unix_s;
		*old_format = true;
	}
	else
		return false;
	return true;
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
	if (!found)
		return;
	for (int i = 0; i < FLAKE_HWM_FAMILIES; i++)
		marks->mark[i] = Max(marks->mark[i], imported.mark[i]);
	for (uint32 i = 0; i < imported_servers.count; i++)
		servers_add(&servers, imported_servers.id[i], GetSystemIdentifier());
	hwm_write_servers(marks, &servers);
	durable_unlink(FLAKE_HWM_IMPORT_FILE, FATAL);
	ereport(LOG,
			(errmsg("flake took over the marks of \"%s\"", FLAKE_HWM_IMPORT_FILE)));
}

/*
 * The other servers whose marks flake.hwm holds (see hwm_read_file), and
 * the one that wrote it (0 if none did in this format).  A damaged file is
 * an error.
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
 * server's), 0 (none) or listed already.  A list that is full keeps the
 * servers it has: the oldest matter most (databases carry the identifier
 * of the server they were created on), and more than
 * FLAKE_HWM_MAX_SERVERS copies of flake.hwm from server to server do not
 * happen.
 */
static void
servers_add(FlakeServers *servers, uint64 id, uint64 own)
{
	if (id == 0 || id == own || servers->count == FLAKE_HWM_MAX_SERVERS)
		return;
	for (uint32 i = 0; i < servers->count; i++)
		if (servers->id[i] == id)
			return;
	servers->id[servers->count++] = id;
}

/*
 * Replace the file with the marks and the other servers (see datafile.c),
 * naming this one as its writer.  A temporary file left behind by a crash
 * is removed at the next start.
 */
static void
hwm_write_servers(const FlakeMarks *marks, const FlakeServers *servers)
{
	FlakeHwmFile data;

	memset(&data, 0, sizeof(data));
	data.magic = FLAKE_HWM_MAGIC;
	data.marks = *marks;
	data.servers = *servers;
	data.servers.writer = GetSystemIdentifier();
	data.crc = flake_datafile_crc(&data, offsetof(FlakeHwmFile, crc));
	flake_datafile_replace(FLAKE_HWM_FILE, FLAKE_HWM_TEMP_FILE,
						   &data, sizeof(data));
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
