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
 * The old server must be stopped, and stay so (its files hold every id it
 * issued only once it issues no more): a directory whose postmaster.pid
 * names a live process is refused, as is this server's own directory and
 * anything that is not a data directory of PostgreSQL 15 or later.  The
 * other server's system identifier comes from its pg_control (or, after
 * pg_upgrade --link, pg_control.old), whose first fields every major
 * keeps in place; its checksum is checked where the major is this one's.
 *
 * Superusers only (checked here, besides EXECUTE revoked from PUBLIC): it
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
#include "access/xlog.h"
#include "catalog/pg_control.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "tcop/utility.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "clock.h"
#include "hwm.h"
#include "shmem.h"
#include "state.h"

/* pg_control_version of PostgreSQL 13 to 16; flake runs on 15 and later */
#define OLDEST_CONTROL_VERSION 1300

PG_FUNCTION_INFO_V1(flake_take_over);

/*
 * The system identifier of the server of a data directory, from its
 * pg_control (pg_control.old where pg_upgrade --link disabled it).
 */
static uint64
directory_system_identifier(const char *directory)
{
	static const char *const names[] = {"global/pg_control", "global/pg_control.old"};
	ControlFileData control;

	for (size_t i = 0; i < lengthof(names); i++)
	{
		char		path[MAXPGPATH];
		ssize_t		got;
		int			fd;

		snprintf(path, sizeof(path), "%s/%s", directory, names[i]);
		fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
		if (fd < 0 && errno == ENOENT)
			continue;
		if (fd < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not open file \"%s\": %m", path)));
		memset(&control, 0, sizeof(control));
		got = read(fd, &control, sizeof(control));
		CloseTransientFile(fd);
		if (got < (ssize_t) offsetof(ControlFileData, time) ||
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
			if (got != sizeof(control) || !EQ_CRC32C(crc, control.crc))
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("the pg_control file of data directory \"%s\" is damaged", directory),
						 errdetail("Its checksum is wrong: \"%s\".", path)));
		}
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
	FILE	   *file;
	long		pid = 0;

	snprintf(path, sizeof(path), "%s/postmaster.pid", directory);
	file = AllocateFile(path, "r");
	if (file == NULL)
	{
		if (errno == ENOENT)
			return;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", path)));
	}
	if (fscanf(file, "%ld", &pid) != 1)
		pid = 0;
	FreeFile(file);
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
	return directory_system_identifier(directory);
}

/* A mark as a timestamptz (unit: ms, or s), NULL where there is none. */
static Datum
mark_datum(int64 mark, int64 ms_per_unit, bool *isnull)
{
	*isnull = mark <= 0;
	return TimestampTzGetDatum(flake_unix_ms_to_timestamptz(mark * ms_per_unit));
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
	Datum	   *servers;
	Datum		values[6];
	bool		nulls[6] = {false, false, false, false, false, false};

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to take over another server's flake state"),
				 errdetail("Only superusers may: it reads files of the server's filesystem and raises the state the ids of every database depend on.")));
	flake_require_shared();
	PreventCommandIfReadOnly("flake_take_over()");
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot take over another server's flake state during recovery"),
				 errhint("Take it over on the primary: standbys follow it through WAL.")));
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	canonicalize_path(directory);
	system_identifier = other_directory(directory);
	flake_state_read_other(directory, system_identifier, &other);

	/* no backend passes to its first id until the families are raised */
	LWLockAcquire(flake_shared->lock, LW_EXCLUSIVE);
	flake_state_take_over(&flake_shared->state, &flake_shared->marks.value, &other);
	flake_shmem_raise();
	LWLockRelease(flake_shared->lock);
	ereport(LOG,
			(errmsg("flake took over the state of the server with system identifier " UINT64_FORMAT " from \"%s\"",
					system_identifier, directory)));

	servers = palloc(sizeof(Datum) * Max(other.servers.count, 1));
	for (uint32 i = 0; i < other.servers.count; i++)
		servers[i] = Int64GetDatum((int64) other.servers.id[i]);
	values[0] = Int64GetDatum((int64) system_identifier);
	values[1] = PointerGetDatum(construct_array(servers, other.servers.count, INT8OID,
												sizeof(int64), FLOAT8PASSBYVAL,
												TYPALIGN_DOUBLE));
	values[2] = mark_datum(other.marks.mark[FLAKE_HWM_SNOWFLAKE], 1, &nulls[2]);
	values[3] = mark_datum(other.marks.mark[FLAKE_HWM_ULIDFLAKE], 1, &nulls[3]);
	values[4] = mark_datum(other.marks.mark[FLAKE_HWM_RANDFLAKE], 1000, &nulls[4]);
	values[5] = Int32GetDatum((int32) other.nclaims);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc),
													  values, nulls)));
}
