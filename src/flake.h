/*-------------------------------------------------------------------------
 *
 * flake.h
 *	  Declarations shared by the files of the flake extension.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_H
#define FLAKE_H

#include "port/atomics.h"
#include "storage/lwlock.h"
#include "utils/timestamp.h"

/* Milliseconds between the Unix epoch and PostgreSQL's (2000-01-01). */
#define FLAKE_PG_EPOCH_UNIX_MS \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000)

/*
 * Per-node state lives in shared memory for every node of the node space,
 * so that flake_next(node) is safe for any node.  This caps the node space.
 */
#define FLAKE_MAX_NODE_BITS 16

/*
 * How far ahead of issued timestamps the high-water marks are persisted:
 * one fsync per chunk under steady load, and after a restart ids may carry
 * a timestamp up to a chunk ahead of the clock.
 */
#define FLAKE_HWM_CHUNK_MS 1000
#define FLAKE_HWM_CHUNK_S 10

/* The ulidflake layout, which shared memory needs for its floor. */
#define ULID_EPOCH_UNIX_MS	INT64CONST(1704067200000)	/* 2024-01-01 */
#define ULID_ENTROPY_BITS	20
#define ULID_MAX_ENTROPY	((INT64CONST(1) << ULID_ENTROPY_BITS) - 1)

/*
 * The high-water marks of the three families: no id with a later timestamp
 * has been issued.  This is what flake.hwm holds and what flake's WAL
 * records carry.
 */
typedef struct FlakeMarks
{
	int64		snowflake_unix_ms;	/* flake_next() */
	int64		randflake_unix_s;	/* randflake_next() */
	int64		ulidflake_unix_ms;	/* ulidflake_next(), both forms */
} FlakeMarks;

/*
 * One node of a family's node space.  The Snowflake family has one for
 * every node, each on a cache line of its own so that backends generating
 * on different nodes do not contend; the Randflake family has one for each
 * node of flake.randflake_nodes, packed.
 *
 * Several backends may hold a node at once: each family advances "last"
 * only by compare-and-swap, so holders never issue the same id.
 */
typedef struct FlakeNode
{
	/*
	 * Snowflake: (timestamp << sequence bits) | sequence of the last id
	 * issued.  Randflake: (second << 17) | sequence of the last id reserved
	 * by any holder.
	 */
	pg_atomic_uint64 last;
	/* ids issued since the node was last leased while free */
	pg_atomic_uint64 issued;
	/* Randflake: monotonic ms at which "last" entered its second */
	pg_atomic_uint64 second_started;
	TimestampTz leased_at;		/* when it was last leased while free */
	pg_atomic_uint32 holders;	/* backends holding the node */
	pg_atomic_uint32 owner;		/* pid of the backend that leased it while
								 * free, until that backend lets go; or 0 */
	int32		id;				/* node id, or -1 when it is not leasable */
} FlakeNode;

typedef union FlakeNodePadded
{
	FlakeNode	node;
	char		pad[PG_CACHE_LINE_SIZE];
} FlakeNodePadded;

/*
 * Server-wide state, present only when the library is preloaded.  The
 * generators' hot fields are atomics on cache lines of their own; the lock
 * serializes leases and high-water mark writes.
 */
typedef struct FlakeSharedState
{
	union
	{
		pg_atomic_uint64 value; /* last ulidflake value issued */
		char		pad[PG_CACHE_LINE_SIZE];
	}			ulid_last;
	union
	{
		/* the persisted high-water marks; only ids at or below them exist */
		struct
		{
			pg_atomic_uint64 snowflake_ms;	/* Unix ms */
			pg_atomic_uint64 randflake_s;	/* Unix seconds */
			pg_atomic_uint64 ulidflake_ms;	/* Unix ms */
		}			value;
		char		pad[PG_CACHE_LINE_SIZE];
	}			hwm;
	LWLock	   *lock;

	/*
	 * Whether the nodes' floors have been raised to the marks as they stood
	 * when recovery ended (WAL replay may raise the marks after shared memory
	 * was set up from flake.hwm).  Under the lock.
	 */
	bool		floors_final;
	int			nnodes;			/* 1 << flake.node_bits */
	int			nrandflake;		/* nodes in flake.randflake_nodes */
	FlakeNode  *randflake;		/* those nodes, in shared memory too */
	FlakeNodePadded nodes[FLEXIBLE_ARRAY_MEMBER];
} FlakeSharedState;

/* shmem.c */
extern FlakeSharedState *flake_shared;
extern bool flake_recovery_checked;
extern void flake_shmem_init(void);
extern void flake_require_shared(void);
extern void flake_check_recovery(const char *generator);

/*
 * Refuse to generate during recovery: a standby would issue its primary's
 * ids.  A backend checks once after recovery has ended (a server does not
 * go back into recovery without a restart), so after that this is a branch.
 */
static inline void
flake_refuse_in_recovery(const char *generator)
{
	if (unlikely(!flake_recovery_checked))
		flake_check_recovery(generator);
}

/* lease.c */
extern FlakeNode *flake_lease(FlakeNode *first, Size stride, int count,
							  bool (*held) (const FlakeNode *node));
extern void flake_release(FlakeNode *node);

/* highwater.c */
extern void flake_hwm_read(FlakeMarks *marks);
extern void flake_hwm_write(const FlakeMarks *marks);
extern void flake_hwm_current(FlakeMarks *marks);
extern void flake_hwm_publish(const FlakeMarks *marks);

/* wal.c */
typedef enum FlakeHwm
{
	FLAKE_HWM_SNOWFLAKE,		/* flake_next(): Unix ms */
	FLAKE_HWM_RANDFLAKE,		/* randflake_next(): Unix seconds */
	FLAKE_HWM_ULIDFLAKE			/* ulidflake_next(): Unix ms */
} FlakeHwm;

extern void flake_wal_register(void);
extern void flake_hwm_extend(FlakeHwm which, int64 value);

/* A family's mark in shared memory. */
static inline pg_atomic_uint64 *
flake_hwm_mark(FlakeHwm which)
{
	switch (which)
	{
		case FLAKE_HWM_SNOWFLAKE:
			return &flake_shared->hwm.value.snowflake_ms;
		case FLAKE_HWM_RANDFLAKE:
			return &flake_shared->hwm.value.randflake_s;
		case FLAKE_HWM_ULIDFLAKE:
		default:
			return &flake_shared->hwm.value.ulidflake_ms;
	}
}

/*
 * Make sure a family's persisted mark covers value (its time unit) before
 * an id with that time is returned: on the hot path an atomic read, and
 * once per chunk the lock, the file and WAL of flake_hwm_extend.
 */
static inline void
flake_hwm_cover(FlakeHwm which, int64 value)
{
	if (unlikely(value > (int64) pg_atomic_read_u64(flake_hwm_mark(which))))
		flake_hwm_extend(which, value);
}

/* settings.c */
extern char *flake_epoch_string;
extern int64 flake_epoch_unix_ms;
extern int	flake_node_bits;
extern int	flake_sequence_bits;
extern char *flake_nodes_string;
extern char *flake_randflake_nodes_string;
extern char *flake_rekey_nodes_string;
extern int	flake_max_borrow_ms;
extern void flake_define_settings(void);
extern bool flake_reject_setting(const char *name, const char *value);
extern bool flake_parse_epoch(const char *str, int64 *unix_ms);
extern int64 flake_nodes_count(const char *str, int bits);
extern const char *flake_nodes_problem(const char *str, int bits);
extern void flake_nodes_foreach(const char *str, int bits,
								void (*add) (int64 lo, int64 hi, void *arg),
								void *arg);

/*
 * The largest timestamp a flake_next() id holds, in milliseconds since
 * flake.epoch: 63 bits less the node and sequence bits.  Timestamps are
 * compared with it before they are shifted into place, since a wider one
 * would wrap.
 */
static inline int64
flake_max_timestamp(void)
{
	return (INT64CONST(1) << (63 - flake_node_bits - flake_sequence_bits)) - 1;
}

/* entropy.c */
extern void flake_random_refill(void);
extern uint8 flake_random_buf[];
extern int	flake_random_pos;

#define FLAKE_RANDOM_BUFSIZE 1024

/*
 * Return one byte of cryptographically strong randomness.  One call of
 * pg_strong_random costs far more than an id, so bytes are drawn in blocks.
 */
static inline uint8
flake_random_byte(void)
{
	if (unlikely(flake_random_pos >= FLAKE_RANDOM_BUFSIZE))
		flake_random_refill();
	return flake_random_buf[flake_random_pos++];
}

/* logfilter.c */
extern void flake_log_filter_init(void);

/* randflake.c */
extern void flake_define_randflake_secret(void);
extern int32 randflake_node_of(int64 id);

/* clock.c: wall clock in milliseconds since the Unix epoch */
extern int64 flake_clock_unix_ms(void);
/* clock.c: the system's monotonic clock in milliseconds, for pacing */
extern int64 flake_clock_monotonic_ms(void);

/* Convert Unix milliseconds to a timestamptz and back. */
static inline TimestampTz
flake_unix_ms_to_timestamptz(int64 unix_ms)
{
	return (unix_ms - FLAKE_PG_EPOCH_UNIX_MS) * 1000;
}

#endif							/* FLAKE_H */
