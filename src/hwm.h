/*-------------------------------------------------------------------------
 *
 * hwm.h
 *	  The high-water marks: no id with a later timestamp has been issued.
 *
 * Each family has one mark, persisted in flake.hwm and logged in WAL before
 * generators may issue ids up to it.  The functions take the marks' shared
 * state and the lock that serializes their moves as arguments; shmem.c owns
 * both.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_HWM_H
#define FLAKE_HWM_H

#include "port/atomics.h"
#include "storage/lwlock.h"

#include "datafile.h"

/*
 * The marks' file, and the name under which another server's flake.hwm is
 * copied into the data directory to be taken over at start (state.c).
 */
#define FLAKE_HWM_FILE			"flake.hwm"
#define FLAKE_HWM_TEMP_FILE		"flake.hwm.tmp"
#define FLAKE_HWM_IMPORT_FILE	"flake.hwm.import"

/*
 * How far ahead of issued timestamps the marks are persisted: one fsync per
 * chunk under steady load, and after a restart ids may carry a timestamp up
 * to a chunk ahead of the clock.
 */
#define FLAKE_HWM_CHUNK_MS 1000
#define FLAKE_HWM_CHUNK_S 10

/*
 * flake's WAL resource manager, from the range for extensions (128-255).
 * It must be entered on the PostgreSQL wiki page CustomWALResourceManagers
 * before a release, so that no other extension takes it.  The marks'
 * record carries the three marks (FlakeMarks) after a move; the take-over
 * record carries the marks after another server's were taken over, then
 * that server's system identifier and those its flake.hwm named (uint64
 * each); the marks-set record (1.4) carries marks that replace the marks
 * even where lower: a repair redone, lowering marks past their layout's
 * end (state.c).  The rekey claims have a record of their own (claims.h).
 */
#define FLAKE_RMGR_ID		211
#define FLAKE_RMGR_NAME		"flake"
#define XLOG_FLAKE_MARKS	0x00
#define XLOG_FLAKE_TAKE_OVER	0x20
#define XLOG_FLAKE_MARKS_SET	0x30

typedef enum FlakeHwm
{
	FLAKE_HWM_SNOWFLAKE,		/* flake_next(): Unix ms */
	FLAKE_HWM_RANDFLAKE,		/* randflake_next(): Unix seconds */
	FLAKE_HWM_ULIDFLAKE,		/* ulidflake_next(), both forms: Unix ms */
	FLAKE_HWM_FAMILIES
} FlakeHwm;

/*
 * The marks of the three families, by FlakeHwm: what flake.hwm and the WAL
 * record hold.
 */
typedef struct FlakeMarks
{
	int64		mark[FLAKE_HWM_FAMILIES];
} FlakeMarks;

/*
 * The servers (system identifiers) of a flake.hwm: the one that wrote it,
 * and the others whose marks it holds because their file was copied to
 * this server (one per upgrade or dump/restore that carried its file, as
 * many as there were).  id is palloc'd; the caller frees it.
 */
typedef struct FlakeServers
{
	uint64		writer;
	uint32		count;
	uint64	   *id;
} FlakeServers;

/*
 * The most other servers a flake.hwm names: one per upgrade or restore
 * that carried a database here, far more than happen.  The bound keeps
 * reading and merging the lists, under flake's lock, short.
 */
#define FLAKE_HWM_MAX_SERVERS	1024

/* The persisted marks in shared memory; only ids at or below them exist. */
typedef struct FlakeMarkState
{
	pg_atomic_uint64 mark[FLAKE_HWM_FAMILIES];
} FlakeMarkState;

extern bool flake_hwm_load(const char *path, FlakeMarks *marks,
						   FlakeServers *servers, FlakeFileProblem *problem);
extern void flake_hwm_refuse(int elevel, const FlakeFileProblem *problem);
extern void flake_hwm_servers(FlakeServers *servers);
extern void flake_hwm_servers_add(FlakeServers *servers, uint64 id);
extern void flake_hwm_write(const FlakeMarks *marks,
							const FlakeServers *servers);
extern void flake_hwm_log(const FlakeMarks *marks, const uint64 *servers,
						  uint32 count);
extern void flake_hwm_log_set(const FlakeMarks *marks);
extern void flake_hwm_init(FlakeMarkState *state, const FlakeMarks *marks);
extern void flake_hwm_current(FlakeMarkState *state, FlakeMarks *marks);
extern void flake_hwm_publish(FlakeMarkState *state, const FlakeMarks *marks);
extern void flake_hwm_extend(FlakeMarkState *state, LWLock *lock,
							 FlakeHwm which, int64 value);
extern void flake_hwm_cover_all(FlakeMarkState *state, LWLock *lock,
								const FlakeMarks *cover);

/*
 * Make sure a family's persisted mark covers value (its time unit) before
 * an id with that time is returned: on the hot path an atomic read, and
 * once per chunk the lock, the file and WAL of flake_hwm_extend.
 */
static inline void
flake_hwm_cover(FlakeMarkState *state, LWLock *lock, FlakeHwm which,
				int64 value)
{
	if (unlikely(value > (int64) pg_atomic_read_u64(&state->mark[which])))
		flake_hwm_extend(state, lock, which, value);
}

#endif							/* FLAKE_HWM_H */
