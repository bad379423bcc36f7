/*-------------------------------------------------------------------------
 *
 * table_ids.h
 *	  The ids a table holds: which columns hold them, and reading them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_TABLE_IDS_H
#define FLAKE_TABLE_IDS_H

#include "nodes/parsenodes.h"
#include "utils/rel.h"

#include "hwm.h"

/*
 * How far ahead of this server's clock an id that arrives may be: clocks
 * that far apart (and the ids a sender borrowed ahead) are taken; the
 * generators then wait or refuse until their clock gets there.
 */
#define FLAKE_RECEIVE_MAX_AHEAD_MS	(5 * 60 * 1000)

/* The trigger of subscribed tables (receive.c), and its function. */
#define FLAKE_RAISE_MARKS_TRIGGER	"flake_raise_marks"
#define FLAKE_RAISE_MARKS_FUNCTION	"raise_marks"

/* A column that holds ids of a family. */
typedef struct FlakeIdColumn
{
	AttrNumber	attnum;
	FlakeHwm	family;
} FlakeIdColumn;

/* Given each id a scan reads (flake_scan_ids), instead of raising its node. */
typedef void (*FlakeIdVisitor) (FlakeHwm family, int64 id, void *arg);

extern int	flake_id_columns(Relation rel, FlakeIdColumn **columns);
extern bool flake_id_column_declared(Relation rel, const char *arg, FlakeIdColumn *column);
extern bool flake_decode_id(Relation rel, const FlakeIdColumn *col, Datum value,
							int64 max_ahead_ms, int64 *skipped, int64 *mark, uint64 *raw);
extern void flake_raise_to_id(FlakeHwm family, int64 mark, uint64 raw);
extern Oid	flake_raise_marks_function(void);
extern Trigger *flake_find_trigger(Relation rel, Oid funcid);
extern void flake_warn_unread(Relation rel, int64 skipped, int64 max_ahead_ms);
extern int64 flake_scan_ids(Relation rel, const FlakeIdColumn *columns, int ncolumns,
							int64 max_ahead_ms, int64 *skipped, FlakeMarks *newest,
							FlakeIdVisitor each, void *arg);
extern void flake_read_ids(Oid relid, const CopyStmt *copy);

#endif							/* FLAKE_TABLE_IDS_H */
