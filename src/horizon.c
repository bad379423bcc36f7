/*-------------------------------------------------------------------------
 *
 * horizon.c
 *	  Which open transactions may still commit ids of an ordered family,
 *	  and from which time on.
 *
 * A consumer that reads "id > last AND id < horizon" must never find a row
 * commit below the horizon later.  Each backend has a slot in shared memory
 * (by its PGPROC number) holding, per family, a time at or below every id
 * its transaction issues: written at the transaction's first id, before
 * the id is taken, and cleared by a transaction callback once the
 * transaction has ended (commit and abort callbacks run after the
 * transaction left the proc array, so a new snapshot sees its rows).  The
 * callback is registered at a backend's first id and returns at once for
 * transactions that issued none.
 *
 * A prepared transaction leaves its backend: PREPARE TRANSACTION moves its
 * times into a table under flake's lock, keyed by its transaction id, and
 * into the file flake.prepared (written and synced before the PREPARE
 * record, so a prepared transaction that issued ids is in the file after a
 * restart).  An entry goes when its transaction is no longer in progress.
 * Where the file cannot tell every prepared transaction's times (damaged,
 * unreadable, more entries than max_prepared_transactions now allows, or
 * a standby's or restored backup's copy, which WAL does not carry), every
 * transaction prepared at the first horizon after the start holds the
 * horizon at its lowest until it ends: its ids are unknown.
 *
 * The families compute the horizon (snowflake.c, ulidflake.c): they raise
 * their state to the clock, so that every id taken later lies above it,
 * then take the minimum of the clock and the times held here.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "access/transam.h"
#include "access/twophase.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "postmaster/postmaster.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "clock.h"
#include "compat.h"
#include "datafile.h"
#include "horizon.h"
#include "shmem.h"

#define FLAKE_PREPARED_FILE			"flake.prepared"
#define FLAKE_PREPARED_TEMP_FILE	"flake.prepared.tmp"
#define FLAKE_PREPARED_MAGIC		0x464C4B50	/* "FLKP" */

/* No time held. */
#define HORIZON_NONE	0

/*
 * The time a prepared transaction whose ids are unknown holds: the lowest
 * (1 ms after 1970, before every epoch of ids).
 */
#define HORIZON_UNKNOWN	1

/* The most entries flake.prepared is read with: one per possible backend. */
#define PREPARED_FILE_MAX_ENTRIES	MAX_BACKENDS

/* A backend's slot: a time per family, HORIZON_NONE when not held. */
typedef union HorizonSlot
{
	struct
	{
		pg_atomic_uint64 since[FLAKE_HORIZON_FAMILIES];
		int32		pid;
	}			s;
	char		pad[PG_CACHE_LINE_SIZE];
} HorizonSlot;

/* A prepared transaction's times, in shared memory and in the file. */
typedef struct HorizonPrepared
{
	TransactionId xid;			/* InvalidTransactionId: a free entry */
	int64		since[FLAKE_HORIZON_FAMILIES];
} HorizonPrepared;

/* The file: magic, count, entries, CRC-32C of all before it. */
typedef struct HorizonFileHeader
{
	uint32		magic;
	uint32		count;
} HorizonFileHeader;

typedef struct HorizonShared
{
	int			nslots;
	int			nprepared;		/* capacity: max_prepared_xacts */
	/* whether transactions prepared before the start are to be adopted */
	bool		unknown_prepared;
	/* the entries, under flake's lock, then the slots */
	HorizonPrepared prepared[FLEXIBLE_ARRAY_MEMBER];
} HorizonShared;

static HorizonShared *shared = NULL;
static HorizonSlot *slots = NULL;

bool		flake_horizon_holding[FLAKE_HORIZON_FAMILIES];
static bool holding_any = false;

static const char *const family_names[FLAKE_HORIZON_FAMILIES] = {
	"flake_next", "ulidflake_next"
};

PG_FUNCTION_INFO_V1(flake_horizon_info);

static Size
slots_offset(void)
{
	Size		size = add_size(offsetof(HorizonShared, prepared),
								mul_size(sizeof(HorizonPrepared), max_prepared_xacts));

	return TYPEALIGN(PG_CACHE_LINE_SIZE, size);
}

static int
slot_count(void)
{
	return MaxBackends + NUM_AUXILIARY_PROCS;
}

static Size
horizon_size(void)
{
	return add_size(add_size(slots_offset(), PG_CACHE_LINE_SIZE),
					mul_size(sizeof(HorizonSlot), slot_count()));
}

/*
 * The largest flake.prepared read: more entries than shared memory holds
 * where max_prepared_transactions was lowered (those that fit are kept).
 */
static size_t
prepared_file_size(void)
{
	return sizeof(HorizonFileHeader) +
		(size_t) Max(shared->nprepared, PREPARED_FILE_MAX_ENTRIES) * sizeof(HorizonPrepared) +
		sizeof(pg_crc32c);
}

/*
 * Read flake.prepared into fresh shared memory (in the postmaster).  Where
 * it cannot give every prepared transaction's times, the transactions
 * prepared then are adopted at the first horizon (adopt_unknown_prepared).
 * A standby's or a restored backup's copy may lack its primary's latest
 * entries: WAL does not carry the file.
 */
static void
load_prepared(void)
{
	FlakeFileProblem problem;
	size_t		len;
	char	   *data = flake_datafile_read(FLAKE_PREPARED_FILE, prepared_file_size(),
										   &len, &problem);
	HorizonFileHeader header;
	pg_crc32c	crc;

	if (access(STANDBY_SIGNAL_FILE, F_OK) == 0 ||
		access(RECOVERY_SIGNAL_FILE, F_OK) == 0)
		shared->unknown_prepared = true;
	if (problem.status == FLAKE_FILE_MISSING)
		return;
	if (data != NULL && len >= sizeof(header) + sizeof(crc))
	{
		memcpy(&header, data, sizeof(header));
		memcpy(&crc, data + len - sizeof(crc), sizeof(crc));
		if (header.magic == FLAKE_PREPARED_MAGIC &&
			len == sizeof(header) + (size_t) header.count * sizeof(HorizonPrepared) + sizeof(crc) &&
			crc == flake_datafile_crc(data, len - sizeof(crc)))
		{
			int			n = Min((int) header.count, shared->nprepared);

			memcpy(shared->prepared, data + sizeof(header), n * sizeof(HorizonPrepared));
			if (n < (int) header.count)
			{
				shared->unknown_prepared = true;
				ereport(WARNING,
						(errmsg("flake keeps %d of the %u prepared transactions of \"%s\" (max_prepared_transactions)",
								n, header.count, FLAKE_PREPARED_FILE),
						 errdetail("Every transaction still prepared holds the horizon at its lowest until it ends.")));
			}
			return;
		}
	}
	shared->unknown_prepared = true;
	if (data != NULL)
		problem.status = FLAKE_FILE_DAMAGED;
	ereport(WARNING,
			(flake_datafile_errmsg(FLAKE_PREPARED_FILE, &problem),
			 errdetail("Every transaction still prepared holds the horizon at its lowest until it ends.")));
}

static void
horizon_startup(void *part, bool fresh, const FlakeMarks *marks)
{
	shared = (HorizonShared *) part;
	slots = (HorizonSlot *) ((char *) part + slots_offset());
	if (!fresh)
		return;
	shared->nslots = slot_count();
	shared->nprepared = max_prepared_xacts;
	shared->unknown_prepared = false;
	for (int i = 0; i < shared->nprepared; i++)
		shared->prepared[i].xid = InvalidTransactionId;
	for (int i = 0; i < shared->nslots; i++)
	{
		for (int f = 0; f < FLAKE_HORIZON_FAMILIES; f++)
			pg_atomic_init_u64(&slots[i].s.since[f], HORIZON_NONE);
		slots[i].s.pid = 0;
	}
	load_prepared();
}

/* No raise: the horizon follows the families' state, which moves on its own. */
static const FlakeShmemPart horizon_part = {
	.name = "flake horizon",
	.size = horizon_size,
	.startup = horizon_startup,
};

/* From _PG_init, while shared_preload_libraries are loaded. */
void
flake_horizon_add_shmem(void)
{
	flake_shmem_add_part(&horizon_part);
}

static HorizonSlot *
my_slot(void)
{
	int			i = flake_my_proc_number();

	Assert(i >= 0 && i < shared->nslots);
	return &slots[i];
}

/* Write the prepared entries to flake.prepared; under flake's lock. */
static void
save_prepared(void)
{
	HorizonFileHeader header = {FLAKE_PREPARED_MAGIC, 0};
	StringInfoData buf;
	pg_crc32c	crc;

	for (int i = 0; i < shared->nprepared; i++)
		if (TransactionIdIsValid(shared->prepared[i].xid))
			header.count++;
	initStringInfo(&buf);
	appendBinaryStringInfo(&buf, (char *) &header, sizeof(header));
	for (int i = 0; i < shared->nprepared; i++)
		if (TransactionIdIsValid(shared->prepared[i].xid))
			appendBinaryStringInfo(&buf, (char *) &shared->prepared[i],
								   sizeof(HorizonPrepared));
	crc = flake_datafile_crc(buf.data, buf.len);
	appendBinaryStringInfo(&buf, (char *) &crc, sizeof(crc));
	flake_datafile_replace(FLAKE_PREPARED_FILE, FLAKE_PREPARED_TEMP_FILE,
						   buf.data, buf.len);
	pfree(buf.data);
}

/*
 * Drop the entries of transactions no longer in progress (committed or
 * rolled back prepared transactions, a PREPARE that failed); under flake's
 * lock.  Returns whether one was dropped.
 */
static bool
prune_prepared(void)
{
	bool		dropped = false;

	for (int i = 0; i < shared->nprepared; i++)
	{
		HorizonPrepared *entry = &shared->prepared[i];

		if (TransactionIdIsValid(entry->xid) &&
			!TransactionIdIsInProgress(entry->xid))
		{
			entry->xid = InvalidTransactionId;
			dropped = true;
		}
	}
	return dropped;
}

/*
 * The transactions prepared now (pg_prepared_xacts), in the caller's memory
 * context; *count of them.
 */
static TransactionId *
prepared_now(int *count)
{
	TransactionId *xids;
	MemoryContext caller = CurrentMemoryContext;

	SPI_connect();
	if (SPI_execute("SELECT transaction FROM pg_catalog.pg_prepared_xacts",
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not list the prepared transactions");
	xids = MemoryContextAlloc(caller, sizeof(TransactionId) * Max(SPI_processed, 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		xids[i] = DatumGetTransactionId(SPI_getbinval(SPI_tuptable->vals[i],
													  SPI_tuptable->tupdesc, 1,
													  &isnull));
	}
	*count = (int) SPI_processed;
	SPI_finish();
	return xids;
}

/*
 * Where flake.prepared could not tell every prepared transaction's times
 * (load_prepared), take each transaction prepared now that has no entry as
 * one whose ids are unknown: it holds the horizon at its lowest until it
 * ends, and flake.prepared keeps it so across restarts.  Those prepared
 * since the start without ids are taken too, which holds the horizon
 * longer than needed, never shorter.
 */
static void
adopt_unknown_prepared(void)
{
	int			count;
	TransactionId *xids;

	if (likely(!shared->unknown_prepared))
		return;
	xids = prepared_now(&count);
	LWLockAcquire(flake_shared->lock, LW_EXCLUSIVE);
	if (shared->unknown_prepared)
	{
		(void) prune_prepared();
		for (int i = 0; i < count; i++)
		{
			HorizonPrepared *free_entry = NULL;
			bool		known = false;

			for (int j = 0; j < shared->nprepared; j++)
			{
				if (shared->prepared[j].xid == xids[i])
					known = true;
				else if (free_entry == NULL &&
						 !TransactionIdIsValid(shared->prepared[j].xid))
					free_entry = &shared->prepared[j];
			}
			/* PostgreSQL keeps at most max_prepared_xacts: one is free */
			if (known || free_entry == NULL)
				continue;
			free_entry->xid = xids[i];
			for (int f = 0; f < FLAKE_HORIZON_FAMILIES; f++)
				free_entry->since[f] = HORIZON_UNKNOWN;
		}
		save_prepared();
		shared->unknown_prepared = false;
	}
	LWLockRelease(flake_shared->lock);
	pfree(xids);
}

/*
 * PREPARE TRANSACTION: keep the transaction's times under its transaction
 * id, durably, before it is prepared.  A transaction without one wrote no
 * row.  The slot holds until the PREPARE ends, so the horizon is held
 * throughout; a PREPARE that fails leaves an entry the next horizon drops.
 */
static void
keep_prepared(void)
{
	TransactionId xid = GetTopTransactionIdIfAny();
	HorizonSlot *slot = my_slot();
	HorizonPrepared *free_entry = NULL;

	/* without max_prepared_transactions, PostgreSQL refuses right after */
	if (!TransactionIdIsValid(xid) || shared->nprepared == 0)
		return;
	LWLockAcquire(flake_shared->lock, LW_EXCLUSIVE);
	(void) prune_prepared();
	for (int i = 0; i < shared->nprepared && free_entry == NULL; i++)
		if (!TransactionIdIsValid(shared->prepared[i].xid))
			free_entry = &shared->prepared[i];
	if (free_entry == NULL)
	{
		LWLockRelease(flake_shared->lock);
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("flake cannot keep the horizon of more than max_prepared_xacts (%d) prepared transactions",
						shared->nprepared)));
	}
	free_entry->xid = xid;
	for (int f = 0; f < FLAKE_HORIZON_FAMILIES; f++)
		free_entry->since[f] = (int64) pg_atomic_read_u64(&slot->s.since[f]);
	PG_TRY();
	{
		save_prepared();
	}
	PG_CATCH();
	{
		free_entry->xid = InvalidTransactionId;
		PG_RE_THROW();
	}
	PG_END_TRY();
	LWLockRelease(flake_shared->lock);
}

static void
release(void)
{
	HorizonSlot *slot = my_slot();

	for (int f = 0; f < FLAKE_HORIZON_FAMILIES; f++)
	{
		pg_atomic_write_u64(&slot->s.since[f], HORIZON_NONE);
		flake_horizon_holding[f] = false;
	}
	holding_any = false;
}

static void
horizon_xact_callback(XactEvent event, void *arg)
{
	if (likely(!holding_any))
		return;
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			keep_prepared();
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			release();
			break;
		default:
			break;
	}
}

/*
 * Before a generator's first id of a family in a transaction (while
 * flake_horizon_holding is false): publish that the transaction's ids are
 * at unix_ms or later, the time of the generator's last value before its
 * compare-and-swap.  The barrier orders the write before the generator's
 * compare-and-swap, which a computing horizon may raise (see the file's
 * header).  Without shared memory (ulidflake_next() not preloaded) there
 * is no horizon.
 */
void
flake_horizon_start(FlakeHorizonFamily family, int64 unix_ms)
{
	static bool callback_registered = false;
	HorizonSlot *slot;

	if (shared == NULL)
		return;
	if (!callback_registered)
	{
		RegisterXactCallback(horizon_xact_callback, NULL);
		callback_registered = true;
	}
	slot = my_slot();
	slot->s.pid = MyProcPid;
	pg_atomic_write_u64(&slot->s.since[family], (uint64) unix_ms);
	pg_memory_barrier();
	flake_horizon_holding[family] = true;
	holding_any = true;
}

/*
 * Hold a family's horizon at unix_ms or lower: for ids of a node other than
 * the leased one (flake_next(node)), whose last id may be older.
 */
void
flake_horizon_lower(FlakeHorizonFamily family, int64 unix_ms)
{
	HorizonSlot *slot;

	if (!flake_horizon_holding[family] || shared == NULL)
	{
		flake_horizon_start(family, unix_ms);
		return;
	}
	slot = my_slot();
	if ((uint64) unix_ms < pg_atomic_read_u64(&slot->s.since[family]))
	{
		pg_atomic_write_u64(&slot->s.since[family], (uint64) unix_ms);
		pg_memory_barrier();
	}
}

/*
 * The lowest time (Unix ms) held for a family by an open or prepared
 * transaction, or PG_INT64_MAX.  The caller raised the family's state
 * first, then a barrier: a transaction whose time is not seen here takes
 * its ids above that state.
 */
int64
flake_horizon_held(FlakeHorizonFamily family)
{
	int64		lowest = PG_INT64_MAX;

	adopt_unknown_prepared();
	for (int i = 0; i < shared->nslots; i++)
	{
		uint64		since = pg_atomic_read_u64(&slots[i].s.since[family]);

		if (since != HORIZON_NONE)
			lowest = Min(lowest, (int64) since);
	}

	LWLockAcquire(flake_shared->lock, LW_EXCLUSIVE);
	if (prune_prepared())
		save_prepared();
	for (int i = 0; i < shared->nprepared; i++)
	{
		HorizonPrepared *entry = &shared->prepared[i];

		if (TransactionIdIsValid(entry->xid) && entry->since[family] != HORIZON_NONE)
			lowest = Min(lowest, entry->since[family]);
	}
	LWLockRelease(flake_shared->lock);
	return lowest;
}

/*
 * A standby knows nothing of its primary's open transactions: its horizon
 * is the primary's, once replayed (docs/consumers.md).
 */
void
flake_horizon_refuse_in_recovery(const char *function)
{
	flake_require_shared();
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot execute %s during recovery", function),
				 errdetail("A standby does not see which of its primary's transactions are open."),
				 errhint("Take the horizon on the primary with pg_current_wal_lsn(), and read the standby once pg_last_wal_replay_lsn() has passed that LSN.")));
}

static void
add_holder_row(ReturnSetInfo *rsinfo, int family, int64 since, int32 pid,
			   TransactionId xid)
{
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};

	values[0] = CStringGetTextDatum(family_names[family]);
	values[1] = Int32GetDatum(pid);
	nulls[1] = (pid == 0);
	values[2] = TransactionIdGetDatum(xid);
	nulls[2] = !TransactionIdIsValid(xid);
	if (since == HORIZON_UNKNOWN)
		values[3] = TimestampTzGetDatum(DT_NOBEGIN);
	else
		values[3] = TimestampTzGetDatum(flake_unix_ms_to_timestamptz(since));
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * Rows of the flake_horizon_holders view: each open transaction that holds
 * a family's horizon (by its backend's pid) and each prepared one (by its
 * transaction id), with the time it holds the horizon at: -infinity for a
 * prepared one whose ids are unknown (adopt_unknown_prepared).
 */
Datum
flake_horizon_info(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	if (shared == NULL)
		PG_RETURN_VOID();
	if (!RecoveryInProgress())
		adopt_unknown_prepared();
	for (int i = 0; i < shared->nslots; i++)
		for (int f = 0; f < FLAKE_HORIZON_FAMILIES; f++)
		{
			uint64		since = pg_atomic_read_u64(&slots[i].s.since[f]);

			if (since != HORIZON_NONE)
				add_holder_row(rsinfo, f, (int64) since, slots[i].s.pid,
							   InvalidTransactionId);
		}
	/* entries of transactions that ended are not shown: dropped first */
	LWLockAcquire(flake_shared->lock, LW_EXCLUSIVE);
	if (prune_prepared())
		save_prepared();
	for (int i = 0; i < shared->nprepared; i++)
	{
		HorizonPrepared *entry = &shared->prepared[i];

		if (!TransactionIdIsValid(entry->xid))
			continue;
		for (int f = 0; f < FLAKE_HORIZON_FAMILIES; f++)
			if (entry->since[f] != HORIZON_NONE)
				add_holder_row(rsinfo, f, entry->since[f], 0, entry->xid);
	}
	LWLockRelease(flake_shared->lock);
	PG_RETURN_VOID();
}
