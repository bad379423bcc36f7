/*-------------------------------------------------------------------------
 *
 * state.c
 *	  flake's state files as a whole: what is wrong with them, taking over
 *	  another server's, and repairing them.
 *
 * Four files of the data directory decide whether ids may be generated:
 * flake.hwm (the marks, hwm.c) and flake.rekeys (the rekey claims,
 * claims.c), and another server's two, copied here as flake.hwm.import and
 * flake.rekeys.import to be taken over (the database of a pg_upgrade or a
 * restored dump holds that server's ids: origin.c).  Damage to any of them
 * comes from outside (disk errors, editing, permissions, a file of another
 * release), and only id generation depends on them: so the server always
 * starts, and what a damaged file protects refuses with 55000, naming the
 * file and the repair, until it is repaired:
 *
 * - flake.hwm, either import file, or flake.rekeys while an import waits:
 *	 the generators and rekey claims;
 * - flake.rekeys: rekey claims alone (the generators do not read it).
 *
 * Each refused call reads the files again, so that putting back an intact
 * file (or fixing its permissions) repairs it at the next call, with no
 * restart; waiting imports are then taken over, logged in WAL.  Without an
 * intact file, flake_repair_state() writes one from an operator's
 * statement of the newest time any id was issued at (repair_state.c).
 * Nothing here guesses a mark: a server that cannot read its marks never
 * falls back on the clock, which may be behind ids issued before.
 *
 * WAL replay goes on while a file is damaged: it raises the marks in
 * shared memory only, and keeps the span of the claims it brings; a
 * repair takes both in, so that what the standby or crash recovery
 * replayed is never issued or claimed again.  (That memory ends with the
 * server: after a restart, only WAL replayed since counts.)
 *
 * flake_take_over() merges another server's files from its data directory
 * as the start-up import does, while the server runs (take_over.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "storage/fd.h"

#include "claims.h"
#include "datafile.h"
#include "hwm.h"
#include "state.h"

static void state_refuse(int elevel, const FlakeStateProblem *problem,
						 bool generation);

static void
set_problem(FlakeStateProblem *to, FlakeStateFile file,
			const FlakeFileProblem *problem)
{
	to->set = true;
	to->file = file;
	to->problem = *problem;
}

/* Raise each of marks to the one of other, if higher. */
static void
marks_max(FlakeMarks *marks, const FlakeMarks *other)
{
	for (int i = 0; i < FLAKE_HWM_FAMILIES; i++)
		marks->mark[i] = Max(marks->mark[i], other->mark[i]);
}

/*
 * Claims covering those replayed while flake.rekeys could not be read:
 * every node from the lowest to the highest they named, for their whole
 * span (palloc'd, *count of them).
 */
static FlakeRekeyClaim *
replayed_cover(const FlakeState *state, uint32 *count)
{
	FlakeRekeyClaim *cover;

	*count = (uint32) (state->replayed_max_node - state->replayed_min_node + 1);
	cover = palloc0(sizeof(FlakeRekeyClaim) * *count);
	for (uint32 i = 0; i < *count; i++)
	{
		cover[i].first_ms = state->replayed_first_ms;
		cover[i].last_ms = state->replayed_last_ms;
		cover[i].node = state->replayed_min_node + (int32) i;
	}
	return cover;
}

/* Remove a file taken over (or replaced by what was), if it is there. */
static void
remove_import(const char *path, int elevel)
{
	if (access(path, F_OK) == 0)
		durable_unlink(path, elevel);
}

/* The four files as read by state_read_files. */
typedef struct StateFiles
{
	FlakeMarks	marks;
	FlakeServers servers;
	FlakeFileProblem hwm_problem;
	bool		hwm_ok;
	FlakeRekeyClaim *claims;	/* NULL when they cannot be used */
	uint32		nclaims;
	FlakeFileProblem rekeys_problem;
	FlakeMarks	import_marks;
	FlakeServers import_servers;
	FlakeFileProblem hwm_import_problem;
	bool		hwm_import_ok;
	FlakeRekeyClaim *import_claims;
	uint32		nimport;
	FlakeFileProblem rekeys_import_problem;
	bool		importing;		/* an import file waits, intact or not */
} StateFiles;

/*
 * Whether one of flake.hwm and flake.rekeys (FLAKE_WRITTEN_*), found
 * missing, was lost: it was there in this server's life (state->written,
 * in shared memory), or flake.written says flake wrote it, or (marked)
 * marks are in use.  Two records, so that neither a file moved aside
 * while the server runs nor one moved aside across a restart reads as
 * "nothing issued": shared memory alone ends with the server, and
 * flake.written alone can be moved aside with the file.
 */
static bool
state_lost(const FlakeState *state, uint32 file, bool marked)
{
	return marked || (state->written & file) != 0 ||
		(flake_datafile_written(NULL) & file) != 0;
}

/*
 * Note that a file was there (read, or damaged), or was lost: a missing
 * file that state_lost says was there is made FLAKE_FILE_LOST.  One read
 * intact that flake.written does not name yet (written by 1.3, or a crash
 * came between) is recorded there.
 */
static void
state_note_file(FlakeState *state, uint32 file, FlakeFileProblem *problem,
				bool marked)
{
	if (problem->status == FLAKE_FILE_MISSING)
	{
		if (state_lost(state, file, marked))
			problem->status = FLAKE_FILE_LOST;
		return;
	}
	state->written |= file;
	if (problem->status == FLAKE_FILE_OK)
		flake_datafile_set_written(file);
}

/*
 * Read the four files: this server's (a missing one that was there is
 * lost: state_note_file), and the imports waiting.
 */
static void
state_read_files(FlakeState *state, StateFiles *files, bool marked)
{
	files->hwm_ok = flake_hwm_load(FLAKE_HWM_FILE, &files->marks,
								   &files->servers, &files->hwm_problem);
	state_note_file(state, FLAKE_WRITTEN_HWM, &files->hwm_problem, marked);
	if (files->hwm_problem.status == FLAKE_FILE_LOST)
		files->hwm_ok = false;

	files->claims = flake_claims_load(FLAKE_REKEYS_FILE, &files->nclaims,
									  &files->rekeys_problem);
	state_note_file(state, FLAKE_WRITTEN_REKEYS, &files->rekeys_problem, false);
	if (files->rekeys_problem.status == FLAKE_FILE_LOST)
	{
		pfree(files->claims);
		files->claims = NULL;
	}

	files->hwm_import_ok = flake_hwm_load(FLAKE_HWM_IMPORT_FILE,
										  &files->import_marks,
										  &files->import_servers,
										  &files->hwm_import_problem);
	files->import_claims = flake_claims_load(FLAKE_REKEYS_IMPORT_FILE,
											 &files->nimport,
											 &files->rekeys_import_problem);
	files->importing = files->hwm_import_problem.status != FLAKE_FILE_MISSING ||
		files->rekeys_import_problem.status != FLAKE_FILE_MISSING;
}

/* Set the problems afresh from the files read. */
static void
state_set_problems(FlakeState *state, const StateFiles *files)
{
	state->generation.set = false;
	state->claims.set = false;
	if (files->claims == NULL)
		set_problem(&state->claims, FLAKE_STATE_REKEYS, &files->rekeys_problem);
	if (!files->hwm_ok)
		set_problem(&state->generation, FLAKE_STATE_HWM, &files->hwm_problem);
	else if (!files->hwm_import_ok)
		set_problem(&state->generation, FLAKE_STATE_HWM_IMPORT,
					&files->hwm_import_problem);
	else if (files->import_claims == NULL)
		set_problem(&state->generation, FLAKE_STATE_REKEYS_IMPORT,
					&files->rekeys_import_problem);
	else if (files->importing && files->claims == NULL)
		set_problem(&state->generation, FLAKE_STATE_REKEYS,
					&files->rekeys_problem);
}

/* Add the claims that replay brought while flake.rekeys could not be read. */
static void
state_take_replayed(FlakeState *state, StateFiles *files, bool online)
{
	uint32		ncover;
	FlakeRekeyClaim *cover;
	bool		changed = false;

	if (files->claims == NULL || !state->replayed)
		return;
	cover = replayed_cover(state, &ncover);
	files->nclaims = flake_claims_merge(&files->claims, files->nclaims, cover,
										ncover, &changed);
	if (changed)
		flake_claims_write(files->claims, files->nclaims);
	if (online)
		flake_claims_log(cover, ncover);
	state->replayed = false;
	pfree(cover);
}

/*
 * Take over the imports waiting: their claims merged into flake.rekeys,
 * their marks into *marks and their servers into the servers flake.hwm
 * names (written by the caller).
 */
static void
state_take_imports(StateFiles *files, FlakeMarks *marks, bool online)
{
	bool		changed = false;

	if (files->nimport > 0)
	{
		files->nclaims = flake_claims_merge(&files->claims, files->nclaims,
											files->import_claims,
											files->nimport, &changed);
		if (changed)
			flake_claims_write(files->claims, files->nclaims);
		if (online)
			flake_claims_log(files->import_claims, files->nimport);
	}
	marks_max(marks, &files->import_marks);
	for (uint32 i = 0; i < files->import_servers.count; i++)
		flake_hwm_servers_add(&files->servers, files->import_servers.id[i]);
}

/* Remove the import files taken over, and say so. */
static void
state_remove_imports(const StateFiles *files, int elevel)
{
	remove_import(FLAKE_REKEYS_IMPORT_FILE, elevel);
	remove_import(FLAKE_HWM_IMPORT_FILE, elevel);
	if (files->rekeys_import_problem.status != FLAKE_FILE_MISSING)
		ereport(LOG,
				(errmsg("flake took over the rekey claims of \"%s\"",
						FLAKE_REKEYS_IMPORT_FILE)));
	if (files->hwm_import_problem.status != FLAKE_FILE_MISSING)
		ereport(LOG,
				(errmsg("flake took over the marks of \"%s\"",
						FLAKE_HWM_IMPORT_FILE)));
}

/*
 * With an intact flake.hwm: raise *marks to the file's, take over the
 * imports when nothing refuses, and write the file where that changed it
 * (or where its format names no server).
 */
static void
state_update_marks(FlakeState *state, StateFiles *files, FlakeMarks *marks,
				   bool online)
{
	bool		take_over = files->importing && !state->generation.set;
	bool		write_marks;

	marks_max(marks, &files->marks);
	/* above the file (replayed), or a format that names no server */
	write_marks = memcmp(marks, &files->marks, sizeof(*marks)) != 0 ||
		(files->hwm_problem.status == FLAKE_FILE_OK && files->servers.writer == 0);
	if (take_over)
	{
		state_take_imports(files, marks, online);
		write_marks = true;
	}
	if (write_marks)
	{
		flake_hwm_write(marks, &files->servers);
		if (online)
			flake_hwm_log(marks, files->import_servers.id,
						  take_over ? files->import_servers.count : 0);
	}
	if (take_over)
		state_remove_imports(files, online ? ERROR : FATAL);
}

static void
state_free_files(StateFiles *files)
{
	pfree(files->servers.id);
	pfree(files->import_servers.id);
	if (files->claims != NULL)
		pfree(files->claims);
	if (files->import_claims != NULL)
		pfree(files->import_claims);
}

/*
 * Read the four files, set the problems afresh, and take over the files
 * waiting under the import names when every file they need is intact: the
 * claims first (a server that flake.hwm names has its claims), then the
 * marks and the servers, then the import files are removed (a crash in
 * between takes them over again, which changes nothing).
 *
 * At start (not online), in the postmaster: *marks are the file's, or 0
 * when it cannot be read; nothing is logged in WAL, which cannot be written
 * yet (a standby made before misses the import, and refuses in the
 * databases of the old server after a promotion, until made again).
 *
 * Online, in a backend after recovery, holding the marks' lock
 * exclusively: *marks are the higher of the file's and shared memory's
 * (which WAL replay may have raised while the file could not be read);
 * every change is logged in WAL and the marks are published.  Returns
 * whether they rose, so that the caller raises the families.
 */
static bool
state_load(FlakeState *state, FlakeMarkState *shared, FlakeMarks *marks,
		   bool online)
{
	FlakeMarks	before = {0};
	StateFiles	files;
	bool		marked = false;

	if (online)
		flake_hwm_current(shared, &before);
	for (int i = 0; i < FLAKE_HWM_FAMILIES; i++)
		marked |= before.mark[i] > 0;
	state_read_files(state, &files, marked);
	state_set_problems(state, &files);
	state_take_replayed(state, &files, online);

	*marks = before;
	if (files.hwm_ok)
		state_update_marks(state, &files, marks, online);
	if (online)
		flake_hwm_publish(shared, marks);

	state_free_files(&files);
	return memcmp(marks, &before, sizeof(before)) != 0;
}

/*
 * At start, in the postmaster while it creates shared memory: read the
 * files, take over waiting imports, and return the marks the generators
 * start above.  A file that cannot be used is logged, with its repair; the
 * server starts.
 */
void
flake_state_start(FlakeState *state, FlakeMarks *marks)
{
	memset(state, 0, sizeof(*state));

	/* a replacement that a crash or a full disk left unfinished */
	if (unlink(FLAKE_HWM_TEMP_FILE) != 0 && errno != ENOENT)
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not remove file \"%s\": %m", FLAKE_HWM_TEMP_FILE)));

	(void) state_load(state, NULL, marks, false);
	flake_state_warn(state);
}

/* Log each problem of the files as a WARNING, with its repair. */
void
flake_state_warn(const FlakeState *state)
{
	if (state->generation.set)
		state_refuse(WARNING, &state->generation, true);
	if (state->claims.set &&
		!(state->generation.set && state->generation.file == FLAKE_STATE_REKEYS))
		state_refuse(WARNING, &state->claims, false);
}

/*
 * Refuse (elevel ERROR), or warn, with the file and its repair: the
 * generators too (generation), or rekey claims alone.
 */
static void
state_refuse(int elevel, const FlakeStateProblem *problem, bool generation)
{
	const char *path;
	const char *taken;

	switch (problem->file)
	{
		case FLAKE_STATE_HWM:
			flake_hwm_refuse(elevel, &problem->problem);
			return;
		case FLAKE_STATE_REKEYS:
			flake_claims_refuse(elevel, &problem->problem, generation);
			return;
		case FLAKE_STATE_HWM_IMPORT:
			path = FLAKE_HWM_IMPORT_FILE;
			taken = FLAKE_HWM_FILE;
			break;
		default:
			path = FLAKE_REKEYS_IMPORT_FILE;
			taken = FLAKE_REKEYS_FILE;
			break;
	}
	errno = problem->problem.saved_errno;
	ereport(elevel,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 flake_datafile_errmsg(path, &problem->problem),
			 errdetail("It is another server's %s, copied here to be taken over: until it is, flake_next(), ulidflake_next(), randflake_next() and rekey claims refuse, since databases that came from that server may hold its ids. The rest of the server works.",
					   taken),
			 problem->problem.status == FLAKE_FILE_UNREADABLE ?
			 errhint("Give the server's operating system user read access to it; it is taken over at the next call.") :
			 errhint("Copy %s of the old server (stopped) to \"%s\" again; it is taken over at the next call. Or run SELECT flake_take_over('/path/to/old/data') as a superuser: it takes over the old server's files from its data directory, and removes the files waiting here.",
					 taken, path)));
}

/*
 * Read the files again where one could not be used, so that an intact
 * file put back (or its permissions fixed) repairs it, and waiting imports
 * are taken over.  The caller holds the marks' lock exclusively; when this
 * returns true the marks rose, and the caller raises the families before
 * releasing the lock.
 */
bool
flake_state_retry(FlakeState *state, FlakeMarkState *marks)
{
	FlakeMarks	loaded;

	if (!state->generation.set && !state->claims.set)
		return false;
	return state_load(state, marks, &loaded, true);
}

/*
 * Refuse what the problems of the files refuse: the generators (and rekey
 * claims), or with claims, rekey claims also for flake.rekeys alone.  On a
 * copy of the state taken under the lock, or under it.
 */
void
flake_state_refuse(const FlakeState *state, bool claims)
{
	if (state->generation.set)
		state_refuse(ERROR, &state->generation, true);
	if (claims && state->claims.set)
		state_refuse(ERROR, &state->claims, false);
}

/* Refuse a file of another server's data directory: nothing is taken over. */
static void
other_refuse(const char *path, const FlakeFileProblem *problem)
{
	errno = problem->saved_errno;
	ereport(ERROR,
			(problem->status == FLAKE_FILE_UNREADABLE ?
			 errcode_for_file_access() : errcode(ERRCODE_DATA_CORRUPTED),
			 flake_datafile_errmsg(path, problem),
			 errdetail("Nothing was taken over."),
			 errhint("Give flake_take_over() the data directory of the old server, stopped, with its flake.hwm and flake.rekeys intact and readable by this server's operating system user.")));
}

/*
 * Read another server's state from its data directory: its flake.hwm and
 * flake.rekeys, either of which it never wrote if it is missing (a server
 * writes flake.hwm before its first id, and flake.rekeys at its first rekey
 * claim), unless its flake.written says it did; system_identifier is the server's, from its pg_control, named
 * first.  A file there that cannot be read is an error naming it.
 */
void
flake_state_read_other(const char *directory, uint64 system_identifier,
					   FlakeOtherState *other)
{
	char		path[MAXPGPATH];
	FlakeServers named;
	FlakeFileProblem problem;

	uint32		written = flake_datafile_written(directory);

	snprintf(path, sizeof(path), "%s/%s", directory, FLAKE_HWM_FILE);
	if (!flake_hwm_load(path, &other->marks, &named, &problem))
		other_refuse(path, &problem);
	if (problem.status == FLAKE_FILE_MISSING && (written & FLAKE_WRITTEN_HWM))
	{
		problem.status = FLAKE_FILE_LOST;
		other_refuse(path, &problem);
	}
	other->servers.writer = named.writer;
	other->servers.count = 0;
	other->servers.id = palloc(0);
	flake_hwm_servers_add(&other->servers, system_identifier);
	for (uint32 i = 0; i < named.count; i++)
		flake_hwm_servers_add(&other->servers, named.id[i]);
	pfree(named.id);

	snprintf(path, sizeof(path), "%s/%s", directory, FLAKE_REKEYS_FILE);
	other->claims = flake_claims_load(path, &other->nclaims, &problem);
	if (other->claims == NULL)
		other_refuse(path, &problem);
	if (problem.status == FLAKE_FILE_MISSING && (written & FLAKE_WRITTEN_REKEYS))
	{
		problem.status = FLAKE_FILE_LOST;
		other_refuse(path, &problem);
	}
}

/*
 * Take over another server's state, as the start-up import does: its claims
 * merged into flake.rekeys, then the marks raised to its marks and the
 * servers named in flake.hwm, each logged in WAL (flushed) before the marks
 * are published, so that standbys and restores follow.  Taking over the
 * same state again changes nothing.  Files of this server that cannot be
 * used are refused first, nothing changed; files waiting under the import
 * names that cannot be used are replaced by this, and removed.  The caller
 * holds the marks' lock exclusively, and raises the families before
 * releasing it.
 */
void
flake_state_take_over(FlakeState *state, FlakeMarkState *shared,
					  const FlakeOtherState *other)
{
	FlakeMarks	marks;
	FlakeMarks	file_marks;
	FlakeServers servers;
	FlakeFileProblem problem;
	bool		import_replaced;

	/* the files as they are now, waiting imports taken over if intact */
	(void) state_load(state, shared, &marks, true);
	if (state->claims.set)
		state_refuse(ERROR, &state->claims, false);
	if (state->generation.set && (state->generation.file == FLAKE_STATE_HWM ||
								  state->generation.file == FLAKE_STATE_REKEYS))
		state_refuse(ERROR, &state->generation, true);
	import_replaced = state->generation.set;

	if (other->nclaims > 0)
		flake_claims_add(other->claims, other->nclaims);

	if (!flake_hwm_load(FLAKE_HWM_FILE, &file_marks, &servers, &problem))
		flake_hwm_refuse(ERROR, &problem);
	flake_hwm_current(shared, &marks);
	marks_max(&marks, &file_marks);
	marks_max(&marks, &other->marks);
	for (uint32 i = 0; i < other->servers.count; i++)
		flake_hwm_servers_add(&servers, other->servers.id[i]);
	flake_hwm_write(&marks, &servers);
	flake_hwm_log(&marks, other->servers.id, other->servers.count);
	flake_hwm_publish(shared, &marks);
	pfree(servers.id);

	if (import_replaced)
	{
		remove_import(FLAKE_REKEYS_IMPORT_FILE, ERROR);
		remove_import(FLAKE_HWM_IMPORT_FILE, ERROR);
		(void) state_load(state, shared, &marks, true);
	}
}

/*
 * Replace a flake.hwm and a flake.rekeys that cannot be used by files made
 * from the operator's statement that no id was issued after the time of
 * the accepted marks, nor a rekey made ids of later rows: the marks are
 * raised to accepted (and to what WAL replay brought), and the claims are
 * cover (every rekey node and band up to that time) and the span replay
 * brought.  Logged in WAL.  A file that can be used again (put back
 * meanwhile) is kept; with nothing to repair, or only an import file, it
 * refuses, nothing changed, unless the caller repaired flake.layout
 * (layout_repaired).  The flake.hwm written names no other server:
 * databases whose ids come from servers the damaged file named are
 * refused until those are taken over again.  The caller holds the marks'
 * lock exclusively, and raises the families before releasing it.
 */
void
flake_state_repair(FlakeState *state, FlakeMarkState *shared,
				   const FlakeMarks *accepted, const FlakeRekeyClaim *cover,
				   uint32 ncover, bool layout_repaired)
{
	FlakeMarks	marks;
	bool		hwm_damaged;

	(void) state_load(state, shared, &marks, true);
	hwm_damaged = state->generation.set &&
		state->generation.file == FLAKE_STATE_HWM;
	if (!hwm_damaged && !state->claims.set)
	{
		flake_state_refuse(state, false);
		if (layout_repaired)
			return;
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("flake's state files are intact: there is nothing to repair"),
				 errhint("flake_repair_state() replaces a damaged flake.hwm or flake.rekeys (see \"Damaged state files\" in flake's docs/guarantees.md). To correct a repair made with a wrong time, run SELECT flake_repair_state(t, again => true).")));
	}

	if (hwm_damaged)
	{
		FlakeServers none = {0, 0, palloc(0)};

		flake_hwm_current(shared, &marks);
		marks_max(&marks, accepted);
		flake_hwm_write(&marks, &none);
		flake_hwm_log(&marks, NULL, 0);
		flake_hwm_publish(shared, &marks);
		ereport(LOG,
				(errmsg("flake replaced \"%s\", which could not be used, with marks from flake_repair_state()",
						FLAKE_HWM_FILE)));
	}
	if (state->claims.set)
	{
		FlakeRekeyClaim *claims = palloc(sizeof(FlakeRekeyClaim) * Max(ncover, 1));
		uint32		count = ncover;
		bool		changed = false;

		memcpy(claims, cover, sizeof(FlakeRekeyClaim) * ncover);
		if (state->replayed)
		{
			uint32		nreplayed;
			FlakeRekeyClaim *replayed = replayed_cover(state, &nreplayed);

			count = flake_claims_merge(&claims, count, replayed, nreplayed, &changed);
			pfree(replayed);
			state->replayed = false;
		}
		flake_claims_write(claims, count);
		flake_claims_log(claims, count);
		pfree(claims);
		ereport(LOG,
				(errmsg("flake replaced \"%s\", which could not be used, with claims from flake_repair_state()",
						FLAKE_REKEYS_FILE)));
	}
	(void) state_load(state, shared, &marks, true);
}

/*
 * Redo a repair, the files intact (flake_repair_state(t, again => true)):
 * each mark is raised to accepted, and one above trusted (by family: the
 * end of its layout, or far ahead of the clock) is set to accepted even
 * where lower.  Only those are lowered: no id can carry a time past its
 * layout's end, and a family refuses every id while its last one is more
 * than flake.max_borrow ahead of the clock, so a mark that far ahead was
 * written by a repair (or a take-over), not by ids; below it, ids may
 * carry any time up to the mark, and lowering it could issue them again.
 * The families keep their state in memory until the server restarts
 * (they only rise), so a mark lowered holds from then.  Logged in WAL
 * (the marks-set record where one is lowered).  False, nothing done,
 * where a file cannot be used: the caller repairs it.  The caller holds
 * the marks' lock exclusively, and raises the families before releasing
 * it.
 */
bool
flake_state_repair_again(FlakeState *state, FlakeMarkState *shared,
						 const FlakeMarks *accepted, const FlakeMarks *trusted)
{
	FlakeMarks	current;
	FlakeMarks	marks;
	FlakeServers servers;
	bool		lowered = false;

	(void) state_load(state, shared, &current, true);
	if ((state->generation.set && state->generation.file == FLAKE_STATE_HWM) ||
		state->claims.set)
		return false;
	flake_state_refuse(state, false);
	for (int i = 0; i < FLAKE_HWM_FAMILIES; i++)
	{
		if (current.mark[i] > trusted->mark[i])
		{
			marks.mark[i] = accepted->mark[i];
			lowered |= marks.mark[i] < current.mark[i];
		}
		else
			marks.mark[i] = Max(current.mark[i], accepted->mark[i]);
	}
	if (memcmp(&marks, &current, sizeof(marks)) == 0)
		return true;
	flake_hwm_servers(&servers);
	flake_hwm_write(&marks, &servers);
	pfree(servers.id);
	if (lowered)
		flake_hwm_log_set(&marks);
	else
		flake_hwm_log(&marks, NULL, 0);
	flake_hwm_publish(shared, &marks);
	ereport(LOG,
			(errmsg("flake_repair_state() replaced the marks of \"%s\"%s",
					FLAKE_HWM_FILE, lowered ?
					", lowering those far ahead: they hold once the server restarts" : "")));
	return true;
}

/*
 * Replay a record of marks set by a repair redone: flake.hwm and shared
 * memory take them even where lower.  While flake.hwm cannot be used,
 * shared memory alone, as flake_state_redo_marks does.
 */
void
flake_state_redo_set(FlakeState *state, FlakeMarkState *shared, LWLock *lock,
					 const FlakeMarks *logged)
{
	LWLockAcquire(lock, LW_EXCLUSIVE);
	if (!state->generation.set || state->generation.file != FLAKE_STATE_HWM)
	{
		FlakeMarks	file_marks;
		FlakeServers named;
		FlakeFileProblem problem;

		if (flake_hwm_load(FLAKE_HWM_FILE, &file_marks, &named, &problem) &&
			problem.status == FLAKE_FILE_OK)
			flake_hwm_write(logged, &named);
		pfree(named.id);
	}
	flake_hwm_publish(shared, logged);
	LWLockRelease(lock);
}

/*
 * Replay a record of the marks (and of the servers taken over): raise the
 * marks in flake.hwm and in shared memory.  Marks never go down: a record
 * replayed again changes nothing.  While flake.hwm cannot be used, the
 * marks rise in shared memory only, and the repair takes them in.
 */
void
flake_state_redo_marks(FlakeState *state, FlakeMarkState *shared, LWLock *lock,
					   const FlakeMarks *logged, const uint64 *servers,
					   uint32 count)
{
	FlakeMarks	marks;

	LWLockAcquire(lock, LW_EXCLUSIVE);
	flake_hwm_current(shared, &marks);
	marks_max(&marks, logged);
	if (!state->generation.set || state->generation.file != FLAKE_STATE_HWM)
	{
		FlakeMarks	file_marks;
		FlakeServers named;
		FlakeFileProblem problem;

		bool		ok = flake_hwm_load(FLAKE_HWM_FILE, &file_marks, &named,
										&problem);

		state_note_file(state, FLAKE_WRITTEN_HWM, &problem, false);
		if (!ok || problem.status == FLAKE_FILE_LOST)
		{
			set_problem(&state->generation, FLAKE_STATE_HWM, &problem);
			state_refuse(WARNING, &state->generation, true);
		}
		else
		{
			uint32		before = named.count;

			marks_max(&marks, &file_marks);
			for (uint32 i = 0; i < count; i++)
				flake_hwm_servers_add(&named, servers[i]);
			if (memcmp(&marks, &file_marks, sizeof(marks)) != 0 ||
				named.count != before)
				flake_hwm_write(&marks, &named);
		}
		pfree(named.id);
	}
	flake_hwm_publish(shared, &marks);
	LWLockRelease(lock);
}

/*
 * Replay a record of rekey claims: add them to flake.rekeys (claims there
 * already change nothing), or, while it cannot be used, keep their span
 * for the repair.
 */
void
flake_state_redo_claims(FlakeState *state, LWLock *lock,
						const FlakeRekeyClaim *added, uint32 nadded)
{
	LWLockAcquire(lock, LW_EXCLUSIVE);
	if (!state->claims.set)
	{
		FlakeFileProblem problem;
		uint32		count;
		FlakeRekeyClaim *claims = flake_claims_load(FLAKE_REKEYS_FILE, &count,
													&problem);

		state_note_file(state, FLAKE_WRITTEN_REKEYS, &problem, false);
		if (claims != NULL && problem.status != FLAKE_FILE_LOST)
		{
			bool		changed = false;

			count = flake_claims_merge(&claims, count, added, nadded, &changed);
			if (changed)
				flake_claims_write(claims, count);
			pfree(claims);
			LWLockRelease(lock);
			return;
		}
		set_problem(&state->claims, FLAKE_STATE_REKEYS, &problem);
		state_refuse(WARNING, &state->claims, false);
	}
	for (uint32 i = 0; i < nadded; i++)
	{
		if (!state->replayed)
		{
			state->replayed = true;
			state->replayed_min_node = state->replayed_max_node = added[i].node;
			state->replayed_first_ms = added[i].first_ms;
			state->replayed_last_ms = added[i].last_ms;
			continue;
		}
		state->replayed_min_node = Min(state->replayed_min_node, added[i].node);
		state->replayed_max_node = Max(state->replayed_max_node, added[i].node);
		state->replayed_first_ms = Min(state->replayed_first_ms, added[i].first_ms);
		state->replayed_last_ms = Max(state->replayed_last_ms, added[i].last_ms);
	}
	LWLockRelease(lock);
}
