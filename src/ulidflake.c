/*-------------------------------------------------------------------------
 *
 * ulidflake.c
 *	  The ulidflake type (Ulid-Flake ids) and its generator.
 *
 * A ulidflake is a non-negative int64: 43 bits of milliseconds since
 * 2024-01-01T00:00:00Z, then 20 bits of entropy.  In the scalable form the
 * low 5 entropy bits carry a scalability id (sid), leaving 15 bits
 * (ulidflake.h).  Comparison, hashing and storage reuse the int8 support
 * functions; this file has what differs: text and binary input, the bigint
 * cast, the accessors and the generator.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "citus.h"
#include "clock.h"
#include "compat.h"
#include "horizon.h"
#include "random.h"
#include "hwm.h"
#include "shmem.h"
#include "snowflake_settings.h"
#include "ulidflake.h"
#include "ulidflake_text.h"

#define ULIDFLAKE_END_TEXT		"2302-09-27 15:10:22.207+00 (43 bits of milliseconds)"

/* No sid: the stand-alone form. */
#define ULIDFLAKE_STANDALONE		(-1)

/*
 * The last value issued: server-wide in shared memory when preloaded (see
 * ulidflake_add_shmem), else this backend's own (local_last, set up at the
 * first call).
 */
typedef union UlidflakeShared
{
	pg_atomic_uint64 last;
	char		pad[PG_CACHE_LINE_SIZE];
} UlidflakeShared;

static UlidflakeShared *ulidflake_shared = NULL;
static pg_atomic_uint64 *ulidflake_last = NULL;
static pg_atomic_uint64 local_last;

PG_FUNCTION_INFO_V1(ulidflake_in);
PG_FUNCTION_INFO_V1(ulidflake_out);
PG_FUNCTION_INFO_V1(ulidflake_recv);
PG_FUNCTION_INFO_V1(ulidflake_from_bigint);
PG_FUNCTION_INFO_V1(ulidflake_next);
PG_FUNCTION_INFO_V1(ulidflake_next_sid);
PG_FUNCTION_INFO_V1(ulidflake_timestamp);
PG_FUNCTION_INFO_V1(ulidflake_entropy);
PG_FUNCTION_INFO_V1(ulidflake_sid);
PG_FUNCTION_INFO_V1(ulidflake_from_timestamp);
PG_FUNCTION_INFO_V1(ulidflake_horizon);
PG_FUNCTION_INFO_V1(ulidflake_upper_bound);

Datum
ulidflake_in(PG_FUNCTION_ARGS)
{
	char	   *str = PG_GETARG_CSTRING(0);
	uint64		value;

	switch (ulidflake_parse(str, strlen(str), &value))
	{
		case ULIDFLAKE_PARSE_OK:
			break;
		case ULIDFLAKE_PARSE_OUT_OF_RANGE:
			flake_ereturn(fcinfo->context, (Datum) 0,
						  (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						   errmsg("value \"%s\" is out of range for type ulidflake",
								  str),
						   errhint("The first character of a ulidflake is 0 to 7.")));
		case ULIDFLAKE_PARSE_MALFORMED:
			flake_ereturn(fcinfo->context, (Datum) 0,
						  (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
						   errmsg("invalid input syntax for type ulidflake: \"%s\"",
								  str),
						   errhint("A ulidflake is 13 characters of Crockford Base32: 0-9 and A-Z without I, L, O and U.")));
	}
	PG_RETURN_INT64((int64) value);
}

Datum
ulidflake_out(PG_FUNCTION_ARGS)
{
	int64		value = PG_GETARG_INT64(0);
	char	   *result = palloc(ULIDFLAKE_TEXT_LEN + 1);

	ulidflake_encode((uint64) value, result);
	PG_RETURN_CSTRING(result);
}

/* Refuse a value a ulidflake cannot hold (also for migrate_online.c's copies). */
void
ulidflake_check_nonnegative(int64 value)
{
	if (value < 0)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("value %lld is out of range for type ulidflake",
						(long long) value),
				 errhint("A ulidflake is a non-negative bigint.")));
}

Datum
ulidflake_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	int64		value = pq_getmsgint64(buf);

	ulidflake_check_nonnegative(value);
	PG_RETURN_INT64(value);
}

Datum
ulidflake_from_bigint(PG_FUNCTION_ARGS)
{
	int64		value = PG_GETARG_INT64(0);

	ulidflake_check_nonnegative(value);
	PG_RETURN_INT64(value);
}

static Size
shared_size(void)
{
	return sizeof(UlidflakeShared);
}

/* Raise the last value to the last entropy of the mark's millisecond. */
static void
raise_last(const FlakeMarks *marks)
{
	int64		ms = marks->mark[FLAKE_HWM_ULIDFLAKE] - ULIDFLAKE_EPOCH_UNIX_MS;

	if (ms >= 0)
		flake_raise_last(&ulidflake_shared->last,
						 ((uint64) ms << ULIDFLAKE_ENTROPY_BITS) | ULIDFLAKE_MAX_ENTROPY);
}

static void
shared_startup(void *part, bool fresh, const FlakeMarks *marks)
{
	ulidflake_shared = (UlidflakeShared *) part;
	if (!fresh)
		return;
	pg_atomic_init_u64(&ulidflake_shared->last, 0);
	raise_last(marks);
}

static const FlakeShmemPart shared_part = {
	.name = "flake ulidflake",
	.size = shared_size,
	.startup = shared_startup,
	.raise = raise_last,
};

/*
 * Raise the last value to the last entropy of the millisecond of a value
 * that arrived from another server (receive.c), so that the next one comes
 * after it.  The caller has made the mark cover it.
 */
void
ulidflake_raise_last(int64 value)
{
	flake_raise_last(&ulidflake_shared->last, (uint64) value | ULIDFLAKE_MAX_ENTROPY);
}

/* From _PG_init, while shared_preload_libraries are loaded. */
void
ulidflake_add_shmem(void)
{
	flake_shmem_add_part(&shared_part);
}

/* 24 random bits, drawn only when a new millisecond starts. */
#define ULIDFLAKE_FRESH_UNDRAWN	UINT32_MAX

/*
 * The value to issue after last, given the clock and a random step in
 * [1, 255].  A clock at or behind last's millisecond (same millisecond, or
 * a clock stepped back) grows last by step; carrying out of the entropy bits
 * moves the value into the next millisecond, so it never repeats.  A newer
 * millisecond starts from random entropy, as the reference implementations
 * do.  The scalable form steps above its sid bits and then puts the sid in.
 */
static inline uint64
ulidflake_successor(uint64 last, int64 now_ms, int sid, uint8 step, uint32 *fresh)
{
	if (now_ms > (int64) (last >> ULIDFLAKE_ENTROPY_BITS))
	{
		uint64		entropy;

		if (*fresh == ULIDFLAKE_FRESH_UNDRAWN)
			*fresh = (uint32) flake_random_byte() << 16 |
				(uint32) flake_random_byte() << 8 |
				flake_random_byte();
		entropy = *fresh & ULIDFLAKE_MAX_ENTROPY;
		if (sid != ULIDFLAKE_STANDALONE)
			entropy = (entropy & ~(uint64) ULIDFLAKE_MAX_SID) | (uint64) sid;
		return ((uint64) now_ms << ULIDFLAKE_ENTROPY_BITS) | entropy;
	}
	if (sid == ULIDFLAKE_STANDALONE)
		return last + step;
	return ((((last >> ULIDFLAKE_SID_BITS) + step) << ULIDFLAKE_SID_BITS) | (uint64) sid);
}

static void
ulidflake_clock_behind(int64 ahead)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("the system clock is " INT64_FORMAT " ms behind the last ulidflake issued",
					ahead),
			 errdetail("The clock went back (or the server restarted with an earlier clock). Values continue from the last one issued, but at most flake.max_borrow (%d ms) ahead of the clock.",
					   snowflake_max_borrow_ms),
			 errhint("Check the server's time synchronization. Generation resumes when the clock catches up; a larger flake.max_borrow lets it continue sooner.")));
}

/*
 * A transaction's first value: raise the last value to the end of the
 * clock's previous millisecond, as ulidflake_horizon() does (the next value
 * takes the clock's millisecond anyway), so that the horizon is held at the
 * time of the values to come, not at an idle server's last value (or
 * 2024-01-01, where none was issued); then hold it there.
 */
static pg_noinline void
hold_horizon(void)
{
	int64		now = Min(flake_clock_unix_ms() - ULIDFLAKE_EPOCH_UNIX_MS,
						  INT64CONST(1) << ULIDFLAKE_TIME_BITS);

	if (now > 0)
		flake_raise_last(&ulidflake_shared->last,
						 ((uint64) now << ULIDFLAKE_ENTROPY_BITS) - 1);
	flake_horizon_start(FLAKE_HORIZON_ULIDFLAKE,
						(int64) (pg_atomic_read_u64(&ulidflake_shared->last) >> ULIDFLAKE_ENTROPY_BITS) +
						ULIDFLAKE_EPOCH_UNIX_MS);
}

/*
 * Issue the next value.  Values run ahead of the clock when a millisecond's
 * entropy is used up or the clock went back, but at most flake.max_borrow,
 * as flake_next()'s do: the last value is shared by every role, so without
 * a bound one role's loop would push every session's timestamps into the
 * future (and the mark after them, across restarts).  A value that got
 * there by load waits for the clock; one further ahead than load can
 * explain (the clock went back) fails rather than drift.
 */
static int64
ulidflake_generate(int sid, const char *generator)
{
	uint32		fresh = ULIDFLAKE_FRESH_UNDRAWN;
	uint8		step;
	uint64		last;
	uint64		next;

	flake_refuse_in_recovery(generator);

	if (unlikely(ulidflake_last == NULL))
	{
		if (ulidflake_shared != NULL)
			ulidflake_last = &ulidflake_shared->last;
		else
		{
			pg_atomic_init_u64(&local_last, 0);
			ulidflake_last = &local_last;
		}
	}

	/* Rejection keeps the step uniform in [1, 255]. */
	do
		step = flake_random_byte();
	while (step == 0);

	/* every value below is at or above last's millisecond */
	if (unlikely(!flake_horizon_holding[FLAKE_HORIZON_ULIDFLAKE]) &&
		ulidflake_shared != NULL)
		hold_horizon();
	last = pg_atomic_read_u64(ulidflake_last);
	for (;;)
	{
		int64		now_ms = flake_clock_unix_ms() - ULIDFLAKE_EPOCH_UNIX_MS;
		int64		next_ms;
		int64		ahead;

		if (now_ms < 0 || now_ms >= (INT64CONST(1) << ULIDFLAKE_TIME_BITS))
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("the system clock is outside the ulidflake time range"),
					 errdetail("ulidflake timestamps run from 2024-01-01 00:00:00+00 to " ULIDFLAKE_END_TEXT ".")));

		next = ulidflake_successor(last, now_ms, sid, step, &fresh);

		/* Only running out of 43 bits of time can make the value negative. */
		if ((int64) next < 0)
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("ulidflake timestamp overflow"),
					 errdetail("ulidflake timestamps end at " ULIDFLAKE_END_TEXT ".")));

		next_ms = (int64) (next >> ULIDFLAKE_ENTROPY_BITS);
		ahead = next_ms - now_ms;
		if (unlikely(ahead > snowflake_max_borrow_ms &&
					 next_ms > (int64) (last >> ULIDFLAKE_ENTROPY_BITS)))
		{
			if (ahead > snowflake_max_borrow_ms + FLAKE_HWM_CHUNK_MS)
				ulidflake_clock_behind(ahead);
			/* used up by load: wait for the clock */
			pg_usleep(1000L);
			CHECK_FOR_INTERRUPTS();
			last = pg_atomic_read_u64(ulidflake_last);
			continue;
		}

		if (pg_atomic_compare_exchange_u64(ulidflake_last, &last, next))
			break;
	}

	/*
	 * The value is not returned before the persisted mark covers it.  Until
	 * then it is only in shared memory, which a crash forgets.
	 */
	if (ulidflake_shared != NULL)
		flake_hwm_cover(&flake_shared->marks.value, flake_shared->lock,
						FLAKE_HWM_ULIDFLAKE,
						(int64) (next >> ULIDFLAKE_ENTROPY_BITS) + ULIDFLAKE_EPOCH_UNIX_MS);

	return (int64) next;
}

/*
 * On Citus, stand-alone values carry the group as their sid (the scalable
 * form, groups 0 to 31), so that nodes do not rely on random entropy to
 * differ: see citus.c.
 */
Datum
ulidflake_next(PG_FUNCTION_ARGS)
{
	int32		group = flake_citus_group("ulidflake_next");

	if (group == FLAKE_CITUS_NONE)
		PG_RETURN_INT64(ulidflake_generate(ULIDFLAKE_STANDALONE, "ulidflake_next()"));
	PG_RETURN_INT64(ulidflake_generate((int) flake_citus_share(group, ULIDFLAKE_SID_BITS, 0,
															   "ulidflake_next", NULL),
									   "ulidflake_next()"));
}

Datum
ulidflake_next_sid(PG_FUNCTION_ARGS)
{
	int32		sid = PG_GETARG_INT32(0);

	if (sid < 0 || sid > ULIDFLAKE_MAX_SID)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("scalability id %d is out of range for ulidflake", sid),
				 errhint("A scalability id is 0 to %d.", ULIDFLAKE_MAX_SID)));
	PG_RETURN_INT64(ulidflake_generate(sid, "ulidflake_next(sid)"));
}

Datum
ulidflake_timestamp(PG_FUNCTION_ARGS)
{
	int64		value = PG_GETARG_INT64(0);
	int64		unix_ms = (value >> ULIDFLAKE_ENTROPY_BITS) + ULIDFLAKE_EPOCH_UNIX_MS;

	PG_RETURN_TIMESTAMPTZ(flake_unix_ms_to_timestamptz(unix_ms));
}

Datum
ulidflake_entropy(PG_FUNCTION_ARGS)
{
	int64		value = PG_GETARG_INT64(0);

	PG_RETURN_INT32((int32) (value & ULIDFLAKE_MAX_ENTROPY));
}

Datum
ulidflake_sid(PG_FUNCTION_ARGS)
{
	int64		value = PG_GETARG_INT64(0);

	PG_RETURN_INT32((int32) (value & ULIDFLAKE_MAX_SID));
}

/* The timestamp's millisecond of ulidflake time, refused outside it. */
static int64
timestamp_ms(TimestampTz ts)
{
	int64		ms = 0;

	if (!TIMESTAMP_NOT_FINITE(ts))
		ms = flake_timestamptz_to_unix_ms(ts) - ULIDFLAKE_EPOCH_UNIX_MS;
	if (TIMESTAMP_NOT_FINITE(ts) ||
		ms < 0 || ms >= (INT64CONST(1) << ULIDFLAKE_TIME_BITS))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp \"%s\" is out of range for type ulidflake",
						timestamptz_to_str(ts)),
				 errhint("ulidflake timestamps run from 2024-01-01 00:00:00+00 to " ULIDFLAKE_END_TEXT ".")));
	return ms;
}

/*
 * The smallest ulidflake of the timestamp's millisecond, so that
 * "id >= ulidflake_from_timestamp(t)" selects ids issued at or after t.
 */
Datum
ulidflake_from_timestamp(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(timestamp_ms(PG_GETARG_TIMESTAMPTZ(0)) << ULIDFLAKE_ENTROPY_BITS);
}

/*
 * The largest ulidflake of the timestamp's millisecond, so that
 * "id <= ulidflake_upper_bound(t)" selects ids issued at or before t.
 */
Datum
ulidflake_upper_bound(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64((timestamp_ms(PG_GETARG_TIMESTAMPTZ(0)) << ULIDFLAKE_ENTROPY_BITS) |
					ULIDFLAKE_MAX_ENTROPY);
}

/*
 * The horizon of ulidflake_next(), as flake_horizon() (snowflake.c): the
 * last value is raised to the end of the clock's previous millisecond, so
 * that the next value starts the clock's millisecond from random entropy
 * as it would have.
 */
Datum
ulidflake_horizon(PG_FUNCTION_ARGS)
{
	int64		now;
	int64		held;
	int64		horizon;

	flake_horizon_refuse_in_recovery("ulidflake_horizon()");
	now = Min(flake_clock_unix_ms() - ULIDFLAKE_EPOCH_UNIX_MS,
			  INT64CONST(1) << ULIDFLAKE_TIME_BITS);
	if (now > 0)
		flake_raise_last(&ulidflake_shared->last,
						 ((uint64) now << ULIDFLAKE_ENTROPY_BITS) - 1);
	pg_memory_barrier();
	held = flake_horizon_held(FLAKE_HORIZON_ULIDFLAKE);
	horizon = Max(Min(now, held - ULIDFLAKE_EPOCH_UNIX_MS), 0);
	if (horizon >= (INT64CONST(1) << ULIDFLAKE_TIME_BITS))
		PG_RETURN_INT64(PG_INT64_MAX);
	PG_RETURN_INT64(horizon << ULIDFLAKE_ENTROPY_BITS);
}
