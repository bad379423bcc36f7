/*-------------------------------------------------------------------------
 *
 * take_over.c
 *	  flake_take_over(data_directory): another server's flake state, taken
 *	  over while this server runs.
 *
 * pg_upgrade and a restored dump carry databases to a new server without
 * the old one's flake.hwm and flake.rekeys, and flake refuses to generate
 * in them until this server has taken those over (origin.c).  This is the
 * one step for that: given the old server's data directory, it reads the
 * two files there and merges them as the start-up import does (state.c),
 * with no restart, logged in WAL so that standbys follow.
 *
 * The old server must be stopped cleanly, and stay so (its files hold
 * every id it issued only once it issues no more): a directory whose
 * postmaster.pid names a live process is refused, as is one whose
 * pg_control says it was not shut down cleanly, a base backup not
 * recovered (backup_label), this server's own directory and anything that
 * is not a data directory of PostgreSQL 15 or later.  Its files are read
 * as flake reads its own (datafile.c): regular files only, never blocking.
 * The other server's system identifier comes from its pg_control (or, after
 * pg_upgrade --link, pg_control.old), whose first fields every major
 * keeps in place; its checksum is checked where the major is this one's.
 *
 * Superusers only (checked in C, besides EXECUTE revoked from PUBLIC): it
 * reads files of the server's filesystem and raises the state every
 * database's ids depend on.  Like nextval(), it is not undone by ROLLBACK.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/htup_details.h"
#include "catalog/pg_control.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/builtins.h"

#include "datafile.h"
#include "shmem.h"
#include "snowflake.h"
#include "state.h"

/* pg_control_version of PostgreSQL 13 to 16; flake runs on 15 and later */
#define OLDEST_CONTROL_VERSION 1300

PG_FUNCTION_INFO_V1(flake_take_over);

/* The largest postmaster.pid read: its lines are far shorter */
#define POSTMASTER_PID_MAX_SIZE 8192

/*
 * Read a file of the other server's data directory (palloc'd, *len
 * bytes) as flake reads its own (datafile.c): a regular file, opened
 * without blocking, at most max_size bytes; NULL where it is missing.
 * Anything else is refused, naming it.
 */
static char *
other_file(const char *path, size_t max_size, size_t *len)
{
	FlakeFileProblem problem;
	char	   *data = flake_datafile_read(path, max_size, len, &problem);

	if (data != NULL || problem.status == FLAKE_FILE_MISSING)
		return data;
	errno = problem.saved_errno;
	ereport(ERROR,
			(problem.status == FLAKE_FILE_UNREADABLE ?
			 errcode_for_file_access() : errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 problem.status == FLAKE_FILE_UNREADABLE ?
			 errmsg("could not read file \"%s\": %m", path) :
			 problem.status == FLAKE_FILE_TOO_LARGE ?
			 errmsg("file \"%s\" is larger than PostgreSQL writes it (at most %zu bytes)",
					path, max_size) :
			 problem.status == FLAKE_FILE_NOT_REGULAR ?
			 errmsg("file \"%s\" is not a regular file", path) :
			 errmsg("could not read file \"%s\" whole", path),
			 errdetail("Nothing was taken over."),
			 errhint("Give flake_take_over() the data directory of the old server, stopped, as PostgreSQL left it.")));
	return NULL;				/* keep compiler quiet */
}

/* The words of pg_controldata for a cluster state */
static const char *
cluster_state(DBState state)
{
	switch (state)
	{
		case DB_STARTUP:
			return "starting up";
		case DB_SHUTDOWNED:
			return "shut down";
		case DB_SHUTDOWNED_IN_RECOVERY:
			return "shut down in recovery";
		case DB_SHUTDOWNING:
			return "shutting down";
		case DB_IN_CRASH_RECOVERY:
			return "in crash recovery";
		case DB_IN_ARCHIVE_RECOVERY:
			return "in archive recovery";
		case DB_IN_PRODUCTION:
			return "in production";
	}
	return "unrecognized status code";
}

/*
 * Refuse a directory whose server was not shut down cleanly, as its
 * pg_control says (every major keeps the state at its place, and its
 * values): its flake.hwm holds the marks of every id it issued only once
 * it stopped cleanly.  A crashed server's file may be older than the WAL
 * it would replay; a base backup's is as old as the copy, and the server
 * it came from issued ids after.  A server stopped in recovery (a
 * standby, or a backup whose recovery ran) has its marks up to the WAL it
 * replayed.
 */
static void
refuse_unclean(const char *directory, const char *name, DBState state)
{
	if (state == DB_SHUTDOWNED || state == DB_SHUTDOWNED_IN_RECOVERY)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("the server of data directory \"%s\" was not shut down cleanly", directory),
			 errdetail("Its \"%s\" says \"%s\": its flake.hwm may lack the marks of ids it issued last, which could then be issued again. Nothing was taken over.",
					   name, cluster_state(state)),
			 errhint("Start that server and stop it cleanly (pg_ctl stop -D \"%s\"), then take over its state.",
					 directory)));
}

/*
 * Refuse a base backup whose recovery has not run: its backup_label (or
 * tablespace_map) is still there.  Its files are those of when it was
 * copied, and its server issued ids after.
 */
static void
refuse_backup(const char *directory)
{
	static const char *const names[] = {"backup_label", "tablespace_map"};

	for (size_t i = 0; i < lengthof(names); i++)
	{
		char		path[MAXPGPATH];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", directory, names[i]);
		if (lstat(path, &st) != 0 && errno == ENOENT)
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("data directory \"%s\" is a base backup whose recovery has not run", directory),
				 errdetail("It has a %s: its flake state is as old as the copy, and the server it was copied from may have issued ids since, which could then be issued again. Nothing was taken over.",
						   names[i]),
				 errhint("Take over the data directory of the server the backup was taken from, once stopped cleanly; or start a server on the backup with its WAL, let recovery finish, stop it cleanly (pg_ctl stop -D \"%s\"), and take over its state then.",
						 directory)));
	}
}

/*
 * The system identifier of the server of a data directory, from its
 * pg_control (pg_control.old where pg_upgrade --link disabled it), once
 * it says the server was shut down cleanly.
 */
static uint64
directory_system_identifier(const char *directory)
{
	static const char *const names[] = {"global/pg_control", "global/pg_control.old"};
	ControlFileData control;

	for (size_t i = 0; i < lengthof(names); i++)
	{
		char		path[MAXPGPATH];
		char	   *data;
		size_t		got;

		snprintf(path, sizeof(path), "%s/%s", directory, names[i]);
		data = other_file(path, PG_CONTROL_FILE_SIZE, &got);
		if (data == NULL)
			continue;
		memset(&control, 0, sizeof(control));
		memcpy(&control, data, Min(got, sizeof(control)));
		pfree(data);
		if (got < offsetof(ControlFileData, checkPoint) ||
			control.pg_control_version < OLDEST_CONTROL_VERSION ||
			control.pg_control_version > 9999)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("\"%s\" is not a data directory of PostgreSQL 15 or later", directory),
					 errdetail("Its \"%s\" is not a pg_control file of those releases.", names[i])));
		if (control.pg_control_version == PG_CONTROL_VERSION)
		{
			pg_crc32c	crc;

			INIT_CRC32C(crc);
			COMP_CRC32C(crc, &control, offsetof(ControlFileData, crc));
			FIN_CRC32C(crc);
			if (got < sizeof(control) || !EQ_CRC32C(crc, control.crc))
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("the pg_control file of data directory \"%s\" is damaged", directory),
						 errdetail("Its checksum is wrong: \"%s\".", path)));
		}
		refuse_unclean(directory, names[i], control.state);
		return control.system_identifier;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("\"%s\" is not a PostgreSQL data directory", directory),
			 errdetail("It has no global/pg_control."),
			 errhint("Give the data directory of the server the databases came from, as its postgresql.conf names it in data_directory.")));
	return 0;					/* keep compiler quiet */
}

/*
 * Refuse the directory of a running server: the process its postmaster.pid
 * names is alive (as pg_ctl status sees it).
 */
static void
refuse_running(const char *directory)
{
	char		path[MAXPGPATH];
	char	   *data;
	size_t		len;
	long		pid = 0;

	snprintf(path, sizeof(path), "%s/postmaster.pid", directory);
	data = other_file(path, POSTMASTER_PID_MAX_SIZE, &len);
	if (data == NULL)
		return;
	data = repalloc(data, len + 1);
	data[len] = '\0';
	if (sscanf(data, "%ld", &pid) != 1)
		pid = 0;
	pfree(data);
	/* a single-user backend writes its pid negated */
	pid = labs(pid);
	if (pid > 0 && (kill((pid_t) pid, 0) == 0 || errno == EPERM))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("the server of data directory \"%s\" is running", directory),
				 errdetail("Its postmaster.pid names process %ld, which is alive. A running server's flake state grows with every id it issues, so it cannot be taken over.",
						   pid),
				 errhint("Stop that server (pg_ctl stop -D \"%s\"), for good, and take over its state then. If it is not running, its postmaster.pid was left by a crash: start and stop that server once.",
						 directory)));
}

/*
 * Check the directory given and return its server's system identifier:
 * an absolute path to a data directory of another server, stopped.
 */
static uint64
other_directory(const char *directory)
{
	struct stat st;
	struct stat own;

	if (!is_absolute_path(directory))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("data directory \"%s\" is not an absolute path", directory),
				 errhint("Give the old server's data directory as an absolute path, such as '/var/lib/postgresql/15/main'.")));
	if (stat(directory, &st) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open data directory \"%s\": %m", directory)));
	if (!S_ISDIR(st.st_mode))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("\"%s\" is not a directory", directory),
				 errhint("Give the old server's data directory, not one of its files.")));
	if (stat(DataDir, &own) == 0 && st.st_dev == own.st_dev && st.st_ino == own.st_ino)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("\"%s\" is this server's own data directory", directory),
				 errhint("Give the data directory of the server the databases came from.")));
	refuse_running(directory);
	refuse_backup(directory);
	return directory_system_identifier(directory);
}

/*
 * flake_take_over(data_directory): take over the flake state of the
 * server of that data directory, and return it: the server's system
 * identifier, the servers whose state it held (it first), its marks
 * (NULL where it has none), and how many rekey claims it held.
 */
Datum
flake_take_over(PG_FUNCTION_ARGS)
{
	char	   *directory = text_to_cstring(PG_GETARG_TEXT_PP(0));
	uint64		system_identifier;
	FlakeOtherState other;
	TupleDesc	tupdesc;
	Datum		values[6];
	bool		nulls[6] = {false, false, false, false, false, false};

	flake_take_over_check("flake_take_over()",
						  "it reads files of the server's filesystem and raises the state the ids of every database depend on.");
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	canonicalize_path(directory);
	system_identifier = other_directory(directory);
	flake_state_read_other(directory, system_identifier, &other);
	snowflake_check_other_layout(directory, other.marks.mark[FLAKE_HWM_SNOWFLAKE]);

	flake_take_over_state(&other, &other.servers, &values[1], &nulls[1]);
	ereport(LOG,
			(errmsg("flake took over the state of the server with system identifier " UINT64_FORMAT " from \"%s\"",
					system_identifier, directory)));
	values[0] = Int64GetDatum((int64) system_identifier);
	values[5] = Int32GetDatum((int32) other.nclaims);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc),
													  values, nulls)));
}
