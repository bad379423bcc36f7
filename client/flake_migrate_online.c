/*-------------------------------------------------------------------------
 *
 * flake_migrate_online.c
 *	  Migrate a serial or identity key to flake ids while the application
 *	  keeps reading and writing the tables.
 *
 * The extension plans (flake_internal.online_plan() in
 * sql/parts/online/: the steps left to do, made again from the
 * catalogs at every run); this program runs the steps, which a function
 * cannot, since the copy commits in batches and each step is a transaction
 * of its own, which only the top level of a session can do.  Every step
 * leaves the tables usable, so the program can be stopped at any point and
 * run again to continue.  Steps that take a lock stronger than the
 * application's wait at most --lock-timeout for each lock and are tried
 * again, so that the application's statements queue behind them only that
 * long.  A run that begins a migration, and the dry run, first rehearse
 * every step in a transaction they roll back (rehearse()), so that a
 * statement that would fail is found before anything changes.
 *
 * Exit codes: 0 done (or the dry run, or --until, done), 1 an error, 2 bad
 * arguments, 3 the checks refuse the migration (or a step would fail), 4 a
 * lock could not be taken in --retries tries, 5 stopped by a signal.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <time.h>
#include <unistd.h>

#include "libpq-fe.h"

#define EXIT_DONE		0
#define EXIT_ERROR		1
#define EXIT_USAGE		2
#define EXIT_BLOCKED	3
#define EXIT_LOCKS		4
#define EXIT_STOPPED	5

/*
 * The advisory lock that the sessions of --jobs hold shared while they run,
 * by the oid of the key's table ($1)
 */
#define JOBS_LOCK "hashtext('flake_migrate_online --jobs'), CAST(CAST($1 AS oid) AS integer)"

/*
 * The plan's columns, in the order of PLAN_SELECT: what plan_migration()
 * selects from flake_internal.online_plan() (or online_undo(), which has
 * no batches)
 */
typedef enum PlanColumn
{
	PLAN_STEP,
	PLAN_PHASE,
	PLAN_TABLE,					/* the table the step changes, or NULL */
	PLAN_ACTION,
	PLAN_LOCK,
	PLAN_STATEMENT,				/* for a copy step: its batch's INSERT */
	PLAN_BATCH,					/* copy: the next batch's end; swap: what it
								 * runs */
	PLAN_TOTAL,					/* copy: the rows to copy */
	PLAN_RESUME					/* copy: where an earlier run stopped */
} PlanColumn;

#define PLAN_SELECT "SELECT step, phase, rel::text, action, lock, statement, "

/* The value of a column of step i of the plan */
static inline const char *
plan_value(const PGresult *plan, int i, PlanColumn column)
{
	return PQgetvalue(plan, i, column);
}

static const char *const phases[] = {
	"create", "copy", "apply", "index", "analyze", "swap", "validate", NULL
};

typedef struct Options
{
	const char *dbname;
	const char *table;
	const char *column;
	const char *generator;
	const char *also;			/* comma-separated, or NULL */
	const char *until;			/* the last phase to run, or NULL */
	int			dry_run;
	int			undo;
	int			quiet;
	long		batch_size;
	long		sleep_ms;
	long		lock_timeout_ms;
	long		retries;
	long		apply_rows;
	long		pause_ms;
	long		jobs;
} Options;

static PGconn *conn;
static PGcancel *volatile cancel;
static volatile sig_atomic_t stopped;
static const char *const *conn_keywords;
static const char *const *conn_values;
static pid_t pacer;				/* the process pausing the writes, or 0 */
static const char *say_prefix;	/* a table's, in a session of --jobs */

static void
on_signal(int signo)
{
	char		errbuf[1];

	stopped = 1;
	/* PQcancel() is safe in a signal handler */
	if (cancel != NULL)
		PQcancel(cancel, errbuf, sizeof(errbuf));
}

static double
now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static void say(const Options *opt, const char *fmt,...) __attribute__((format(printf, 2, 3)));

static void
say(const Options *opt, const char *fmt,...)
{
	va_list		ap;

	if (opt->quiet)
		return;
	if (say_prefix != NULL)
		printf("[%s] ", say_prefix);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

/*
 * Exit after a failed statement: a signal, a lost connection or an error,
 * each with what it leaves behind.
 */
static void pacer_stop(void);
static void set_session(void);

static void
fail(PGresult *res, const char *what)
{
	pacer_stop();
	if (stopped)
	{
		fprintf(stderr, "flake_migrate_online: stopped during %s; the tables are consistent and in use as before.\n"
				"Run the same command again to continue, or with --undo to undo.\n", what);
		exit(EXIT_STOPPED);
	}
	/* an error of libpq's own, without a SQLSTATE: the connection broke */
	if (PQstatus(conn) == CONNECTION_BAD ||
		(res != NULL && PQresultErrorField(res, PG_DIAG_SQLSTATE) == NULL))
	{
		fprintf(stderr, "flake_migrate_online: connection lost during %s: %s"
				"Every step that committed stays; run the same command again to continue.\n",
				what, res ? PQresultErrorMessage(res) : PQerrorMessage(conn));
		exit(EXIT_ERROR);
	}
	fprintf(stderr, "flake_migrate_online: %s failed: %s", what,
			res ? PQresultErrorMessage(res) : PQerrorMessage(conn));
	exit(EXIT_ERROR);
}

/* Run a statement that returns no rows, or exit. */
static void
run(const char *sql, const char *what)
{
	PGresult   *res = PQexec(conn, sql);

	if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)
		fail(res, what);
	PQclear(res);
}

static PGresult *
query(const char *sql, int nparams, const char *const *params, const char *what)
{
	PGresult   *res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);

	if (PQresultStatus(res) != PGRES_TUPLES_OK && PQresultStatus(res) != PGRES_COMMAND_OK)
		fail(res, what);
	return res;
}

/*
 * A short step under ACCESS EXCLUSIVE (or SHARE ROW EXCLUSIVE): one
 * transaction that waits at most lock_timeout for each lock, tried again
 * after a pause that grows, up to retries times.
 */
static void
run_short(const Options *opt, const char *sql, const char *what)
{
	char		set[64];

	snprintf(set, sizeof(set), "SET lock_timeout = %ld", opt->lock_timeout_ms);
	run(set, "SET lock_timeout");
	for (long attempt = 1;; attempt++)
	{
		PGresult   *res;
		const char *state;

		/* the swap's snapshots come after its locks (see its function) */
		run("BEGIN ISOLATION LEVEL READ COMMITTED", what);
		res = PQexec(conn, sql);
		if (PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK)
		{
			PQclear(res);
			run("COMMIT", what);
			break;
		}
		state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		if (stopped || state == NULL ||
			(strcmp(state, "55P03") != 0 && strcmp(state, "40P01") != 0))
			fail(res, what);
		PQclear(res);
		run("ROLLBACK", what);
		if (attempt >= opt->retries)
		{
			fprintf(stderr, "flake_migrate_online: %s: no lock after %ld tries of %ld ms; the tables are consistent.\n"
					"Run the same command again later, or with a longer --lock-timeout or more --retries.\n",
					what, attempt, opt->lock_timeout_ms);
			exit(EXIT_LOCKS);
		}
		say(opt, "  lock not free (try %ld of %ld), trying again\n", attempt, opt->retries);
		sleep_ms(attempt < 20 ? 100 * attempt : 2000);
		if (stopped)
			fail(NULL, what);
	}
	/* not RESET, which would give back the role's */
	run("SET lock_timeout = 0", "SET lock_timeout");
}

/*
 * Copy the rows of one table into its copy: batches of batch_size rows in
 * key order, each its own transaction, from the last key copied (resume
 * gives it when an earlier run stopped) up to the largest key at the start
 * (the log has the rows written since), with a progress line at most once
 * a second.
 */
static void
run_copy(const Options *opt, const char *table, const char *insert,
		 const char *bounds, const char *resume, long total)
{
	char		size[32];
	char	   *last = NULL;
	char	   *end;
	long		done = 0;
	long		batches = 0;
	double		start = now_seconds();
	double		shown = start;
	PGresult   *res;

	snprintf(size, sizeof(size), "%ld", opt->batch_size);
	res = query(resume, 0, NULL, "finding where the copy stopped");
	if (!PQgetisnull(res, 0, 0))
	{
		last = strdup(PQgetvalue(res, 0, 0));
		say(opt, "  copy %s: continuing after key %s\n", table, last);
	}
	end = PQgetisnull(res, 0, 1) ? NULL : strdup(PQgetvalue(res, 0, 1));
	PQclear(res);
	for (;;)
	{
		const char *bound_params[3] = {last, size, end};
		const char *insert_params[2];
		char	   *next;
		double		t;

		res = query(bounds, 3, bound_params, "the next batch");
		if (stopped)
			fail(NULL, "the copy");
		if (PQgetisnull(res, 0, 0))
		{
			PQclear(res);
			break;
		}
		next = strdup(PQgetvalue(res, 0, 0));
		PQclear(res);
		insert_params[0] = last;
		insert_params[1] = next;
		res = query(insert, 2, insert_params, "a batch of the copy");
		done += atol(PQcmdTuples(res));
		PQclear(res);
		free(last);
		last = next;
		batches++;
		t = now_seconds();
		if (t - shown >= 1.0)
		{
			double		rate = done / (t - start);

			if (total > done)
				say(opt, "  copy %s: %ld of about %ld rows (%.0f%%), %.0f rows/s, about %.0f s left\n",
					table, done, total, 100.0 * done / total, rate, (total - done) / rate);
			else
				say(opt, "  copy %s: %ld rows, %.0f rows/s\n", table, done, rate);
			shown = t;
		}
		if (opt->sleep_ms > 0)
			sleep_ms(opt->sleep_ms);
	}
	free(last);
	free(end);
	say(opt, "  copy %s: done, %ld rows in %ld batches in %.1f s\n", table, done, batches, now_seconds() - start);
}

/*
 * A session of a child process's own (the parent's, whose connection it
 * inherited, is not to be touched), which on_signal() cancels, with the
 * program's settings: whether it could connect.
 */
static int
open_own_session(void)
{
	cancel = NULL;
	conn = PQconnectdbParams(conn_keywords, conn_values, 1);
	if (PQstatus(conn) != CONNECTION_OK)
		return 0;
	cancel = PQgetCancel(conn);
	set_session();
	return 1;
}

/*
 * Pausing the application's writes while the logs are applied.  Each
 * pass applies what the application wrote during the pass before; under a
 * write load that keeps every core busy, the apply is one session among
 * the application's many, and may apply no faster than they write: the
 * logs then never shrink (pgroll's backfill never ends so).  Then a second
 * session, in a child process, pauses the writes: it holds LOCK TABLE ...
 * IN SHARE ROW EXCLUSIVE MODE on the tables for --pause milliseconds
 * (reads go on), lets the writes go for as long, and so on until the
 * passes end.  The application's writers soon all wait, and the apply has
 * what the readers leave of the machine.  That mode stops writes but not
 * the checks of foreign keys (ROW SHARE), so a session that writes to one
 * table and checks a key in another never holds what the pause waits for
 * while it waits for the pause; one that writes to two tables in one
 * transaction may, and then the pause gives up first: its lock waits at
 * most --lock-timeout (less than deadlock_timeout), or is left for the next
 * turn.  So a write waits at most about --lock-timeout + --pause.  The
 * child stops at SIGTERM (cancelling its pause), or by itself within a turn
 * if this process is gone.
 */
static void
pacer_run(const Options *opt, const PGresult *plan, int first, int last, pid_t parent)
{
	char		lock[1024];
	char		sleep_sql[64];
	long		paused = 0;
	long		missed = 0;
	PGresult   *res;

	if (!open_own_session())
		_exit(EXIT_ERROR);
	snprintf(lock, sizeof(lock), "SET lock_timeout = %ld", opt->lock_timeout_ms);
	run(lock, "SET lock_timeout");
	snprintf(sleep_sql, sizeof(sleep_sql), "SELECT pg_sleep(%.3f)", opt->pause_ms / 1000.0);
	snprintf(lock, sizeof(lock), "LOCK TABLE ");
	for (int i = first; i <= last; i++)
		snprintf(lock + strlen(lock), sizeof(lock) - strlen(lock), "%s%s",
				 i > first ? ", " : "", plan_value(plan, i, PLAN_TABLE));
	snprintf(lock + strlen(lock), sizeof(lock) - strlen(lock), " IN SHARE ROW EXCLUSIVE MODE");
	while (!stopped && getppid() == parent)
	{
		PQclear(PQexec(conn, "BEGIN"));
		res = PQexec(conn, lock);
		if (PQresultStatus(res) == PGRES_COMMAND_OK)
		{
			PQclear(PQexec(conn, sleep_sql));
			paused++;
		}
		else
			missed++;
		PQclear(res);
		PQclear(PQexec(conn, "ROLLBACK"));
		if (!stopped)
			sleep_ms(opt->pause_ms);
	}
	say(opt, "  writes paused %ld times for %ld ms (%ld times the lock was not free)\n",
		paused, opt->pause_ms, missed);
	PQfinish(conn);
	_exit(EXIT_DONE);
}

/* Pause the writes to the tables of apply steps first to last from now on. */
static void
pacer_start(const Options *opt, const PGresult *plan, int first, int last)
{
	pid_t		parent = getpid();
	pid_t		pid;

	say(opt, "  the logs do not shrink: pausing the writes to the tables for %ld ms at a time\n",
		opt->pause_ms);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0)
		pacer_run(opt, plan, first, last, parent);
	/* without it (fork failed) the passes go on as before */
	pacer = pid > 0 ? pid : 0;
}

static void
pacer_stop(void)
{
	if (pacer > 0)
	{
		kill(pacer, SIGTERM);
		waitpid(pacer, NULL, 0);
		pacer = 0;
	}
}

/*
 * Apply the logs of the apply steps first to last of the plan (consecutive
 * steps: the last ones, one a table, before the swap), each pass in one
 * REPEATABLE READ transaction (so that every copy equals its table as of
 * one snapshot), until a pass finds at most apply_rows entries in all, or
 * after 20 passes: the swap applies the rest under its locks.  All tables
 * in each pass, not one table after another: under a steady write load the
 * logs of the tables applied first would grow again while the others are
 * applied, and the swap, which applies what is left of every log, would
 * hold its locks that much longer.  A pass that finds more than half the
 * entries of the pass before starts the pauses of the writes (above).
 */
static void
run_apply(const Options *opt, const PGresult *plan, int first, int last)
{
	char		tables[1024] = "";
	long		before = 0;

	for (int i = first; i <= last; i++)
		snprintf(tables + strlen(tables), sizeof(tables) - strlen(tables), "%s%s",
				 i > first ? ", " : "", plan_value(plan, i, PLAN_TABLE));
	for (int pass = 1;; pass++)
	{
		double		started = now_seconds();
		long		entries = 0;

		run("BEGIN ISOLATION LEVEL REPEATABLE READ", "applying the log");

		/*
		 * the tables and copies were just read and written, so their pages
		 * are cached: at the server's random_page_cost (4 by default) the
		 * planner would hash a whole copy of millions of rows for a log of
		 * tens of thousands of keys rather than look them up by its index,
		 * which took a third of the time here
		 */
		run("SET LOCAL random_page_cost = 1.1", "applying the log");
		for (int i = first; i <= last; i++)
		{
			PGresult   *res = PQexec(conn, plan_value(plan, i, PLAN_STATEMENT));

			if (PQresultStatus(res) != PGRES_COMMAND_OK)
				fail(res, "applying the log");
			entries += atol(PQcmdTuples(res));
			PQclear(res);
		}
		run("COMMIT", "applying the log");
		say(opt, "  apply %s: %ld log entries in %.1f s\n", tables, entries, now_seconds() - started);
		if (entries <= opt->apply_rows || pass >= 20)
			break;
		if (pass > 1 && entries > before / 2 && opt->pause_ms > 0 && pacer == 0)
			pacer_start(opt, plan, first, last);
		before = entries;
	}
	pacer_stop();
}

/*
 * How messages name step i of the plan: "step N (phase: action of table)".
 * The buffer is the next call's.
 */
static const char *
step_title(const PGresult *plan, int i)
{
	static char title[256];

	snprintf(title, sizeof(title), "step %s (%s: %s of %s)", plan_value(plan, i, PLAN_STEP),
			 plan_value(plan, i, PLAN_PHASE), plan_value(plan, i, PLAN_ACTION), plan_value(plan, i, PLAN_TABLE));
	return title;
}

static int
phase_rank(const char *phase)
{
	for (int i = 0; phases[i] != NULL; i++)
		if (strcmp(phases[i], phase) == 0)
			return i;
	return -1;
}

/* Whether step i of the plan comes after the phase of --until. */
static int
after_until(const Options *opt, const PGresult *plan, int i)
{
	return opt->until != NULL && phase_rank(plan_value(plan, i, PLAN_PHASE)) > phase_rank(opt->until);
}

/*
 * Whether a run began the migration the plan is of: a step after the
 * create step of a table is in the plan without it (the copy, the indexes,
 * the logs are there), or the swap is done (the plan is the validation).
 */
static int
migration_begun(const PGresult *plan)
{
	int			swap = 0;

	for (int i = 0; i < PQntuples(plan); i++)
	{
		const char *phase = plan_value(plan, i, PLAN_PHASE);
		int			created = 0;

		swap |= strcmp(phase, "swap") == 0;
		if (phase_rank(phase) <= phase_rank("create") || phase_rank(phase) >= phase_rank("swap"))
			continue;
		for (int j = 0; j < i && !created; j++)
			created = strcmp(plan_value(plan, j, PLAN_PHASE), "create") == 0 &&
				strcmp(plan_value(plan, j, PLAN_TABLE), plan_value(plan, i, PLAN_TABLE)) == 0;
		if (!created)
			return 1;
	}
	return !swap;
}

/*
 * Run step i of the plan, with the apply steps right after it before step
 * limit (run_apply() takes them together): the last step run.
 */
static int
run_step(const Options *opt, const PGresult *plan, int i, int limit)
{
	const char *phase = plan_value(plan, i, PLAN_PHASE);
	const char *table = plan_value(plan, i, PLAN_TABLE);
	const char *statement = plan_value(plan, i, PLAN_STATEMENT);
	double		started = now_seconds();
	int			last = i;
	char		what[256];

	snprintf(what, sizeof(what), "%s", step_title(plan, i));
	say(opt, "%s\n", what);
	if (strcmp(phase, "copy") == 0)
		run_copy(opt, table, statement, plan_value(plan, i, PLAN_BATCH),
				 plan_value(plan, i, PLAN_RESUME), atol(plan_value(plan, i, PLAN_TOTAL)));
	else if (strcmp(phase, "apply") == 0)
	{
		while (last + 1 < limit && strcmp(plan_value(plan, last + 1, PLAN_PHASE), "apply") == 0)
		{
			last++;
			say(opt, "%s\n", step_title(plan, last));
		}
		run_apply(opt, plan, i, last);
	}
	else if (strcmp(phase, "index") == 0 || strcmp(phase, "analyze") == 0 ||
			 strcmp(phase, "validate") == 0)
	{
		/* their locks let the application read and write */
		run(statement, what);
	}
	else
		run_short(opt, statement, what);
	if (stopped)
		fail(NULL, what);
	say(opt, "  %.1f s\n", now_seconds() - started);
	return last;
}

/*
 * A session of --jobs, in a child process: the steps of one table before
 * step end, in order, in a session of its own.  It holds an advisory lock
 * shared with the others until it exits, which a later run waits for (see
 * main()), and stops (SIGTERM, which cancels its statement) when the
 * program is gone.
 */
static void
run_table(const Options *opt, const PGresult *plan, int end, const char *table,
		  const char *table_oid, pid_t parent)
{
	const char *params[1] = {table_oid};

#ifdef __linux__
	prctl(PR_SET_PDEATHSIG, SIGTERM);
#endif
	if (getppid() != parent)
		exit(EXIT_STOPPED);
	if (!open_own_session())
	{
		fprintf(stderr, "flake_migrate_online: %s", PQerrorMessage(conn));
		exit(EXIT_ERROR);
	}
	PQclear(query("SELECT pg_advisory_lock_shared(" JOBS_LOCK ")", 1, params,
				  "starting a session of --jobs"));
	say_prefix = table;
	for (int i = 0; i < end && !stopped && getppid() == parent; i++)
		if (strcmp(plan_value(plan, i, PLAN_TABLE), table) == 0 && !after_until(opt, plan, i))
			i = run_step(opt, plan, i, end);
	if (stopped || getppid() != parent)
	{
		stopped = 1;
		fail(NULL, "the steps of the tables");
	}
	PQfinish(conn);
	exit(EXIT_DONE);
}

/*
 * With --jobs=N, the steps of each table before the last applies of all
 * (create, copy, index, apply, analyze: none waits for another table's)
 * run in sessions of their own, N tables at a time; the last applies, the
 * swap and the validation then run here as without it.  On a machine whose
 * cores the application keeps busy, each session has its share of them, so
 * the tables are copied in about the time of the longest.  Returns the
 * first step not run.  When one fails, the others are stopped and the
 * program exits as it did; a signal stops them all (exit 5).  Either way
 * every committed step stays, as in a run of one session.
 */
static int
run_tables(const Options *opt, const PGresult *plan, const char *table_oid)
{
	int			n = PQntuples(plan);
	int			end = 0;
	int			ntables = 0;
	int			forked = 0;
	int			running = 0;
	int			failed = 0;
	int			killed = 0;
	pid_t		parent = getpid();
	const char **tables = malloc(sizeof(char *) * (n + 1));
	pid_t	   *pids = calloc(n + 1, sizeof(pid_t));

	if (tables == NULL || pids == NULL)
		fail(NULL, "allocating the sessions of --jobs");
	while (end < n && phase_rank(plan_value(plan, end, PLAN_PHASE)) < phase_rank("swap"))
		end++;
	while (end > 0 && strcmp(plan_value(plan, end - 1, PLAN_PHASE), "apply") == 0)
		end--;
	for (int i = 0; i < end; i++)
	{
		int			known = 0;

		for (int t = 0; t < ntables && !known; t++)
			known = strcmp(tables[t], plan_value(plan, i, PLAN_TABLE)) == 0;
		if (!known)
			tables[ntables++] = plan_value(plan, i, PLAN_TABLE);
	}
	if (ntables < 2)
	{
		free(tables);
		free(pids);
		return 0;
	}
	fflush(stdout);
	fflush(stderr);
	while ((forked < ntables && !failed && !stopped) || running > 0)
	{
		int			status;
		pid_t		pid;

		while (!failed && !stopped && running < opt->jobs && forked < ntables)
		{
			pid = fork();
			if (pid == 0)
				run_table(opt, plan, end, tables[forked], table_oid, parent);
			if (pid < 0)
			{
				fprintf(stderr, "flake_migrate_online: could not start a session of --jobs: %s\n",
						strerror(errno));
				failed = EXIT_ERROR;
				break;
			}
			pids[forked++] = pid;
			running++;
		}
		pid = waitpid(-1, &status, WNOHANG);
		if (pid == 0 || (pid < 0 && errno == EINTR))
		{
			if ((stopped || failed) && !killed)
			{
				for (int t = 0; t < forked; t++)
					if (pids[t] > 0)
						kill(pids[t], SIGTERM);
				killed = 1;
			}
			sleep_ms(50);
			continue;
		}
		if (pid < 0)
			break;
		for (int t = 0; t < forked; t++)
			if (pids[t] == pid)
			{
				pids[t] = 0;
				if (WIFSIGNALED(status))
					fprintf(stderr, "flake_migrate_online: the session of --jobs for %s ended by signal %d\n",
							tables[t], WTERMSIG(status));
			}
		running--;
		if (!failed && !(WIFEXITED(status) && WEXITSTATUS(status) == EXIT_DONE))
			failed = WIFEXITED(status) ? WEXITSTATUS(status) : EXIT_ERROR;
	}
	free(tables);
	free(pids);
	if (stopped)
		fail(NULL, "the steps of the tables");
	if (failed)
		exit(failed);
	return end;
}

/*
 * Rehearse a migration that has not begun: every step of the plan in one
 * transaction that is rolled back, the copy's statements and the
 * validation's only prepared (parsed and checked against the catalogs,
 * which the swap rehearsed has changed as the run would), the rest run on
 * the empty copies.  A statement that would fail fails here, before
 * anything changes, and the run or the dry run is refused (exit 3).  It
 * takes the locks of the create and swap steps for a moment, waiting at
 * most --lock-timeout for each, tried again as they are.
 */
static void
rehearse(const Options *opt, const PGresult *plan)
{
	char		set[64];

	snprintf(set, sizeof(set), "SET LOCAL lock_timeout = %ld", opt->lock_timeout_ms);
	say(opt, "rehearsal: every step in one transaction, rolled back\n");
	for (long attempt = 1;; attempt++)
	{
		PGresult   *res = NULL;
		const char *state;
		int			i;

		run("BEGIN", "the rehearsal");
		run(set, "SET lock_timeout");
		for (i = 0; i < PQntuples(plan); i++)
		{
			const char *phase = plan_value(plan, i, PLAN_PHASE);

			if (strcmp(phase, "copy") == 0)
			{
				/* the batch, the next batch's end, where a copy stopped */
				static const PlanColumn copy_columns[] = {PLAN_STATEMENT, PLAN_BATCH, PLAN_RESUME};

				for (int c = 0; c < 3; c++)
				{
					res = PQprepare(conn, "", plan_value(plan, i, copy_columns[c]), 0, NULL);
					if (PQresultStatus(res) != PGRES_COMMAND_OK)
						break;
					PQclear(res);
					res = NULL;
				}
			}
			else if (strcmp(phase, "validate") == 0)
				res = PQprepare(conn, "", plan_value(plan, i, PLAN_STATEMENT), 0, NULL);
			else
				res = PQexec(conn, plan_value(plan, i, PLAN_STATEMENT));
			if (res != NULL && PQresultStatus(res) != PGRES_COMMAND_OK &&
				PQresultStatus(res) != PGRES_TUPLES_OK)
				break;
			PQclear(res);
			res = NULL;
		}
		if (res == NULL)
		{
			run("ROLLBACK", "the rehearsal");
			say(opt, "  every step ran, rolled back\n");
			return;
		}
		state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		if (stopped || state == NULL)
			fail(res, "the rehearsal");
		if (strcmp(state, "55P03") != 0 && strcmp(state, "40P01") != 0)
		{
			fprintf(stderr, "blocked: %s would fail: %sNothing was changed.\n",
					step_title(plan, i), PQresultErrorMessage(res));
			exit(EXIT_BLOCKED);
		}
		PQclear(res);
		run("ROLLBACK", "the rehearsal");
		if (attempt >= opt->retries)
		{
			fprintf(stderr, "flake_migrate_online: the rehearsal: no lock after %ld tries of %ld ms; nothing was changed.\n"
					"Run the same command again later, or with a longer --lock-timeout or more --retries.\n",
					attempt, opt->lock_timeout_ms);
			exit(EXIT_LOCKS);
		}
		say(opt, "  lock not free for %s (try %ld of %ld), trying again\n",
			step_title(plan, i), attempt, opt->retries);
		sleep_ms(attempt < 20 ? 100 * attempt : 2000);
		if (stopped)
			fail(NULL, "the rehearsal");
	}
}

/*
 * Check that the session is the owner of a table the migration changes.
 * Its statements run the table's code (index expressions, constraints,
 * the planner's folding of them) with the session's rights.  A session
 * that only did SET ROLE to the owner would not do: the owner's code could
 * RESET ROLE and act with the rights of the role that connected, a
 * superuser's perhaps.  So the session must have logged in as the owner.
 */
static void
check_owner(const char *table)
{
	const char *params[1] = {table};
	PGresult   *res = query("SELECT c.relowner::regrole::text, c.oid::regclass::text, "
							"c.relowner = (SELECT r.oid FROM pg_roles r WHERE r.rolname = session_user) "
							"FROM pg_class c WHERE c.oid = CAST(CAST($1 AS regclass) AS oid)",
							1, params, "looking up the owner of a table");

	if (strcmp(PQgetvalue(res, 0, 2), "t") != 0)
	{
		fprintf(stderr, "flake_migrate_online: must connect as the owner of table %s, %s (SQLSTATE 42501)\n"
				"The migration runs the code of the table (index expressions, constraints) with the rights\n"
				"of the role it connects as; connect as its owner (for example -d 'user=%s ...').\n",
				PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 0));
		exit(EXIT_ERROR);
	}
	PQclear(res);
}

/*
 * The session's own settings, whatever the role's or the database's (ALTER
 * ROLE or DATABASE ... SET, PGOPTIONS): READ COMMITTED by default (the
 * swap needs it; the apply asks for REPEATABLE READ), writes allowed, no
 * statement, transaction or idle timeouts (an index build may take hours,
 * and --sleep idles between batches), no lock timeout but the short
 * steps' own (run_short), the copies in the database's tablespace, keys
 * as text in a form that reads back the same (the batches go by them),
 * warnings only (ADD CONSTRAINT USING INDEX says it renames the index: the
 * plan says so), no JIT compilation (the catalog queries of the checks,
 * which the swap runs under its locks, cost the planner enough to be
 * compiled, and compiling them took longer than running them), and
 * search_path pg_catalog, pg_temp.  Settings this
 * server lacks (transaction_timeout before PostgreSQL 17) are left out.
 * session_replication_role, which only a superuser may set, changes
 * nothing: the program writes only the copies and logs, which have no
 * triggers, rules or foreign keys, and the log triggers fire always.
 */
static void
set_session(void)
{
	run("SELECT pg_catalog.set_config(s.name, v.setting, false) "
		"FROM (VALUES ('default_transaction_isolation', 'read committed'), ('default_transaction_read_only', 'off'), "
		"('statement_timeout', '0'), ('transaction_timeout', '0'), ('idle_in_transaction_session_timeout', '0'), "
		"('idle_session_timeout', '0'), ('lock_timeout', '0'), "
		"('default_tablespace', ''), ('default_table_access_method', 'heap'), "
		"('extra_float_digits', '3'), ('DateStyle', 'ISO'), ('IntervalStyle', 'postgres'), ('jit', 'off'), "
		"('client_min_messages', 'warning'), ('search_path', 'pg_catalog, pg_temp')) v(name, setting) "
		"JOIN pg_catalog.pg_settings s ON s.name OPERATOR(pg_catalog.=) v.name",
		"setting up the session");
}

/* The oid of a table, by its qualified name. */
static char *
lookup_table(const char *name)
{
	const char *params[1] = {name};
	PGresult   *res = query("SELECT CAST(CAST($1 AS regclass) AS oid)", 1, params, "looking up the table");
	char	   *oid = strdup(PQgetvalue(res, 0, 0));

	PQclear(res);
	return oid;
}

static void
usage(void)
{
	printf("flake_migrate_online moves a serial or identity key, and the columns that\n"
		   "reference it, to flake ids while the application keeps writing.\n\n"
		   "Usage:\n  flake_migrate_online [OPTION]... -t TABLE\n\n"
		   "Options:\n"
		   "  -d, --dbname=CONNINFO    database to connect to (libpq's PG* variables apply)\n"
		   "  -t, --table=TABLE        the table whose key is migrated\n"
		   "  -c, --column=COLUMN      the key column (default: id)\n"
		   "  -g, --generator=NAME     flake_next, randflake_next or ulidflake_next\n"
		   "                           (default: flake_next)\n"
		   "  -a, --also=LIST          columns holding the key without a foreign key,\n"
		   "                           as table.column,... (flake_migrate's also)\n"
		   "  -n, --dry-run            print every step with its lock, rehearse them,\n"
		   "                           change nothing\n"
		   "      --undo               undo a migration that has not swapped yet\n"
		   "      --until=PHASE        stop after PHASE (create, copy, apply, index,\n"
		   "                           analyze, swap); run again to go on\n"
		   "  -b, --batch-size=N       rows per copy transaction (default: 20000)\n"
		   "      --sleep=MS           pause between batches (default: 0)\n"
		   "      --apply-rows=N       apply the log until a pass finds at most N entries;\n"
		   "                           the swap applies the rest (default: 1000)\n"
		   "      --pause=MS           when the logs do not shrink, pause the writes to\n"
		   "                           the tables for MS at a time, every other MS; 0: never\n"
		   "                           (default: 200)\n"
		   "  -j, --jobs=N             copy N tables at a time, each in a session of its\n"
		   "                           own (default: 1)\n"
		   "      --lock-timeout=MS    longest wait for one lock (default: 200)\n"
		   "      --retries=N          tries of a step that waits too long (default: 100)\n"
		   "  -q, --quiet              print only errors\n"
		   "      --help               show this help, then exit\n\n"
		   "Exit codes: 0 done, 1 error, 2 bad arguments, 3 refused by the checks,\n"
		   "4 a lock not taken in --retries tries, 5 stopped by a signal.  Stopped\n"
		   "anywhere, the tables stay consistent and in use: run the command again to\n"
		   "continue, or with --undo to undo.\n");
}

static long
number_arg(const char *arg, const char *name, long min)
{
	char	   *end;
	long		value = strtol(arg, &end, 10);

	if (*arg == '\0' || *end != '\0' || value < min)
	{
		fprintf(stderr, "flake_migrate_online: invalid %s \"%s\": a whole number of at least %ld\n",
				name, arg, min);
		exit(EXIT_USAGE);
	}
	return value;
}

static void
parse_options(int argc, char **argv, Options *opt)
{
	static const struct option longopts[] = {
		{"dbname", required_argument, NULL, 'd'},
		{"table", required_argument, NULL, 't'},
		{"column", required_argument, NULL, 'c'},
		{"generator", required_argument, NULL, 'g'},
		{"also", required_argument, NULL, 'a'},
		{"dry-run", no_argument, NULL, 'n'},
		{"quiet", no_argument, NULL, 'q'},
		{"batch-size", required_argument, NULL, 'b'},
		{"undo", no_argument, NULL, 1},
		{"until", required_argument, NULL, 2},
		{"sleep", required_argument, NULL, 3},
		{"lock-timeout", required_argument, NULL, 4},
		{"retries", required_argument, NULL, 5},
		{"apply-rows", required_argument, NULL, 6},
		{"help", no_argument, NULL, 7},
		{"pause", required_argument, NULL, 8},
		{"jobs", required_argument, NULL, 'j'},
		{NULL, 0, NULL, 0}
	};
	int			c;

	*opt = (Options)
	{
		.dbname = "",.column = "id",.generator = "flake_next",
			.batch_size = 20000,.lock_timeout_ms = 200,.retries = 100,.apply_rows = 1000,.pause_ms = 200,.jobs = 1
	};
	while ((c = getopt_long(argc, argv, "d:t:c:g:a:nqb:j:", longopts, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				opt->dbname = optarg;
				break;
			case 't':
				opt->table = optarg;
				break;
			case 'c':
				opt->column = optarg;
				break;
			case 'g':
				opt->generator = optarg;
				if (strcmp(optarg, "flake_next") != 0 && strcmp(optarg, "randflake_next") != 0 &&
					strcmp(optarg, "ulidflake_next") != 0)
				{
					fprintf(stderr, "flake_migrate_online: invalid generator \"%s\": flake_next, randflake_next or ulidflake_next\n", optarg);
					exit(EXIT_USAGE);
				}
				break;
			case 'a':
				opt->also = optarg;
				break;
			case 'n':
				opt->dry_run = 1;
				break;
			case 'q':
				opt->quiet = 1;
				break;
			case 'b':
				opt->batch_size = number_arg(optarg, "batch size", 1);
				break;
			case 'j':
				opt->jobs = number_arg(optarg, "jobs", 1);
				break;
			case 1:
				opt->undo = 1;
				break;
			case 2:
				opt->until = optarg;
				if (phase_rank(optarg) < 0 || strcmp(optarg, "validate") == 0)
				{
					fprintf(stderr, "flake_migrate_online: invalid phase \"%s\" for --until\n", optarg);
					exit(EXIT_USAGE);
				}
				break;
			case 3:
				opt->sleep_ms = number_arg(optarg, "sleep", 0);
				break;
			case 4:
				opt->lock_timeout_ms = number_arg(optarg, "lock timeout", 1);
				break;
			case 5:
				opt->retries = number_arg(optarg, "retries", 1);
				break;
			case 6:
				opt->apply_rows = number_arg(optarg, "apply rows", 0);
				break;
			case 7:
				usage();
				exit(EXIT_DONE);
			case 8:
				opt->pause_ms = number_arg(optarg, "pause", 0);
				break;
			default:
				fprintf(stderr, "Try \"flake_migrate_online --help\" for more information.\n");
				exit(EXIT_USAGE);
		}
	}
	if (optind < argc || opt->table == NULL)
	{
		fprintf(stderr, "flake_migrate_online: %s\nTry \"flake_migrate_online --help\" for more information.\n",
				opt->table == NULL ? "name the table with -t TABLE" : "too many arguments");
		exit(EXIT_USAGE);
	}
}

/*
 * Connect to the database of -d, as flake_migrate_online (the sessions of
 * --jobs connect with the same parameters), and let SIGINT and SIGTERM
 * cancel what runs.
 */
static void
connect_database(const Options *opt)
{
	static const char *keywords[3];
	static const char *values[3];

	keywords[0] = "dbname";
	values[0] = opt->dbname;
	keywords[1] = "application_name";
	values[1] = "flake_migrate_online";
	keywords[2] = values[2] = NULL;
	conn_keywords = keywords;
	conn_values = values;
	conn = PQconnectdbParams(keywords, values, 1);
	if (PQstatus(conn) != CONNECTION_OK)
	{
		fprintf(stderr, "flake_migrate_online: %s", PQerrorMessage(conn));
		exit(EXIT_ERROR);
	}
	cancel = PQgetCancel(conn);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
}

/*
 * The table's qualified name.  The table is named as in the caller's
 * session, through its search_path (with the types qualified: that path may
 * put a schema of look-alikes before pg_catalog); nothing after this may
 * find objects through that path, so set_session() pins it next.
 */
static char *
qualify_table(const char *name)
{
	const char *params[1] = {name};
	PGresult   *res;
	char	   *qualified;

	res = query("SELECT pg_catalog.quote_ident(n.nspname) OPERATOR(pg_catalog.||) '.' "
				"OPERATOR(pg_catalog.||) pg_catalog.quote_ident(c.relname) "
				"FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace "
				"WHERE c.oid OPERATOR(pg_catalog.=) CAST(CAST($1 AS pg_catalog.regclass) AS pg_catalog.oid)",
				1, params, "looking up the table");
	qualified = strdup(PQgetvalue(res, 0, 0));
	PQclear(res);
	return qualified;
}

/*
 * Wait at most half the server's deadlock_timeout for a lock.  A lock this
 * program waits for may close a cycle with the application's sessions (the
 * swap's second table, say, while an insert into it waits for the first to
 * check its foreign key).  The first session of the cycle to have waited
 * deadlock_timeout is cancelled; ours give up at half of it, so that it is
 * never one of the application's.
 */
static void
cap_lock_timeout(Options *opt)
{
	PGresult   *res;
	long		half;

	res = query("SELECT setting FROM pg_settings WHERE name = 'deadlock_timeout'", 0, NULL,
				"reading deadlock_timeout");
	half = atol(PQgetvalue(res, 0, 0)) / 2;
	if (half < opt->lock_timeout_ms)
	{
		opt->lock_timeout_ms = half > 0 ? half : 1;
		say(opt, "the server's deadlock_timeout is %s ms: waiting at most %ld ms for a lock\n",
			PQgetvalue(res, 0, 0), opt->lock_timeout_ms);
	}
	PQclear(res);
}

static void
require_extension(void)
{
	PGresult   *res;

	res = query("SELECT FROM pg_extension e WHERE e.extname = 'flake'", 0, NULL, "looking up the extension");
	if (PQntuples(res) != 1)
	{
		fprintf(stderr, "flake_migrate_online: extension flake is not installed in this database\n");
		exit(EXIT_ERROR);
	}
	PQclear(res);
}

/*
 * One run at a time: the oid of the table, locked against other runs (not
 * by the dry run).  A run killed while its backend waited for a lock leaves
 * that backend to finish its statement (a batch of the copy, say) before it
 * notices, and the next run must not plan before it ends.  The lock is the
 * table's, and the name is looked up again once it is held: after waiting
 * for a run that swapped, the name is that of another table (the copy
 * swapped in), whose lock is taken instead.  Then it waits for the sessions
 * of an earlier run's --jobs (run_table()) to end.
 */
static char *
wait_for_earlier_runs(const Options *opt)
{
	char	   *table_oid = lookup_table(opt->table);
	const char *params[1];

	if (opt->dry_run)
		return table_oid;
	for (;;)
	{
		char	   *locked = table_oid;

		params[0] = locked;
		PQclear(query("SELECT pg_advisory_lock(hashtext('flake_migrate_online'), CAST(CAST($1 AS oid) AS integer))",
					  1, params, "waiting for an earlier run to end"));
		table_oid = lookup_table(opt->table);
		if (strcmp(table_oid, locked) == 0)
			break;
		PQclear(query("SELECT pg_advisory_unlock(hashtext('flake_migrate_online'), CAST(CAST($1 AS oid) AS integer))",
					  1, params, "waiting for an earlier run to end"));
		free(locked);
	}
	params[0] = table_oid;
	PQclear(query("SELECT pg_advisory_lock(" JOBS_LOCK "), pg_advisory_unlock(" JOBS_LOCK ")",
				  1, params, "waiting for an earlier run to end"));
	return table_oid;
}

/* The steps left to do, or to undo, from the extension (flake_internal). */
static PGresult *
plan_migration(const Options *opt)
{
	const char *params[4];

	params[0] = opt->table;
	params[1] = opt->column;
	params[2] = opt->undo ? opt->also : opt->generator;
	params[3] = opt->also;
	if (opt->undo)
		return query(PLAN_SELECT "NULL, NULL, NULL "
					 "FROM flake_internal.online_undo(CAST(CAST($1 AS oid) AS regclass), CAST($2 AS name), string_to_array($3, ','))",
					 3, params, "planning the migration");
	return query(PLAN_SELECT "batch, total, resume "
				 "FROM flake_internal.online_plan(CAST(CAST($1 AS oid) AS regclass), CAST($2 AS name), $3, string_to_array($4, ','))",
				 4, params, "planning the migration");
}

/*
 * Exit where the plan says the migration is refused (its check rows, exit
 * 3) or already done; otherwise check that this role owns every table the
 * plan changes, the referencing ones too.
 */
static void
check_plan(const Options *opt, const PGresult *plan)
{
	int			blocked = 0;

	for (int i = 0; i < PQntuples(plan); i++)
	{
		const char *phase = plan_value(plan, i, PLAN_PHASE);

		if (strcmp(phase, "check") == 0)
		{
			fprintf(stderr, "blocked: %s\n", plan_value(plan, i, PLAN_STATEMENT));
			blocked = 1;
		}
		else if (strcmp(phase, "done") == 0)
		{
			say(opt, "done: %s\n", plan_value(plan, i, PLAN_STATEMENT));
			exit(EXIT_DONE);
		}
	}
	if (blocked)
		exit(EXIT_BLOCKED);
	for (int i = 0; i < PQntuples(plan); i++)
		if (!PQgetisnull(plan, i, PLAN_TABLE))
			check_owner(plan_value(plan, i, PLAN_TABLE));
	if (PQntuples(plan) == 0)
		say(opt, "nothing to do\n");
}

/* The dry run: each step of the plan, as it would run. */
static void
print_plan(const Options *opt, const PGresult *plan)
{
	for (int i = 0; i < PQntuples(plan); i++)
	{
		const char *phase = plan_value(plan, i, PLAN_PHASE);

		if (after_until(opt, plan, i))
			continue;
		printf("%s\n  lock: %s\n  %s\n", step_title(plan, i), plan_value(plan, i, PLAN_LOCK),
			   plan_value(plan, i, PLAN_STATEMENT));
		if (strcmp(phase, "copy") == 0)
			printf("  batches: %s\n", plan_value(plan, i, PLAN_BATCH));
		else if (strcmp(phase, "swap") == 0)
			printf("  which runs:\n  %s\n", plan_value(plan, i, PLAN_BATCH));
	}
}

/*
 * Run the plan's steps: with --jobs, the tables' steps before the last
 * applies in sessions of their own first (run_tables()), then the rest here.
 */
static void
run_plan(const Options *opt, const PGresult *plan, const char *table_oid)
{
	int			first = opt->undo || opt->jobs < 2 ? 0 : run_tables(opt, plan, table_oid);

	for (int i = first; i < PQntuples(plan); i++)
		if (!after_until(opt, plan, i))
			i = run_step(opt, plan, i, PQntuples(plan));
	say(opt, opt->until ? "stopped after phase %s as asked; run again without --until to go on\n"
		: opt->undo ? "undone\n" : "done\n", opt->until);
}

int
main(int argc, char **argv)
{
	Options		opt;
	PGresult   *plan;
	int			begun;

	parse_options(argc, argv, &opt);
	connect_database(&opt);
	opt.table = qualify_table(opt.table);
	set_session();
	cap_lock_timeout(&opt);
	require_extension();
	opt.table = wait_for_earlier_runs(&opt);
	check_owner(opt.table);

	plan = plan_migration(&opt);
	check_plan(&opt, plan);
	/* a run that begins the migration rehearses it first, the dry run after */
	begun = opt.undo || migration_begun(plan);
	if (opt.dry_run)
	{
		print_plan(&opt, plan);
		if (!begun)
			rehearse(&opt, plan);
	}
	else
	{
		if (!begun)
			rehearse(&opt, plan);
		run_plan(&opt, plan, opt.table);
	}
	PQclear(plan);
	PQfinish(conn);
	return EXIT_DONE;
}
