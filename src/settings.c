/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  The flake.* configuration settings and their validation.
 *
 * The Snowflake layout (epoch, node and sequence bits) and the nodes this
 * server may lease are fixed at server start: changing them under running
 * generators could reissue ids.  flake.max_borrow only bounds how far ids
 * run ahead of the clock, so it can change on reload.
 *
 * An invalid value of a custom setting would normally only draw a warning
 * and leave the default in place; flake refuses to start instead, since a
 * silently different layout or node set can produce colliding ids.  Values
 * that reach the check hooks are refused through flake_reject_setting();
 * integers that do not parse or are out of range never reach a hook, so
 * they are parsed before their setting is defined (strict_int).  Once
 * running, a reload with an invalid value is refused as PostgreSQL refuses
 * any other, and the old value stays.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/guc.h"

#include "flake.h"
#include "sparx.h"

char	   *flake_epoch_string = NULL;
int64		flake_epoch_unix_ms = INT64CONST(1420070400000);	/* 2015-01-01 */
int			flake_node_bits = 10;
int			flake_sequence_bits = 12;
char	   *flake_nodes_string = NULL;
char	   *flake_randflake_nodes_string = NULL;
char	   *flake_rekey_nodes_string = NULL;
int			flake_max_borrow_ms = 1000;

/* Fewer timestamp bits than this would wrap within a few weeks. */
#define FLAKE_MIN_TIMESTAMP_BITS 31

#define MIN_SEQUENCE_BITS	1
#define MAX_SEQUENCE_BITS	(63 - FLAKE_MIN_TIMESTAMP_BITS)
#define MAX_BORROW_MS		(3600 * 1000)

/* The first value rejected while the settings were being defined. */
static bool defining_settings = false;
static char rejected_name[64];
static char rejected_value[256];
static bool rejected_value_hidden;
static char rejected_detail[256];

/*
 * Stop on an invalid value read at start: a FATAL error in the postmaster,
 * an error in a backend that loads flake without preloading it.  value is
 * NULL for a setting whose value must not be shown.
 */
static void
refuse(const char *name, const char *value, const char *detail)
{
	ereport(process_shared_preload_libraries_in_progress ? FATAL : ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 value ? errmsg("invalid value for parameter \"%s\": \"%s\"", name, value) :
			 errmsg("invalid value for parameter \"%s\"", name),
			 errdetail_internal("%s", detail),
			 errhint("Correct it in postgresql.conf; flake does not start with a layout, node set or key other than the one configured.")));
}

/*
 * Fail a check hook, and remember the first failure while the settings are
 * being defined so that flake_define_settings() can refuse to go on.  value
 * is NULL for a setting whose value must not be shown.
 */
bool
flake_reject_setting(const char *name, const char *value)
{
	if (defining_settings && rejected_name[0] == '\0')
	{
		strlcpy(rejected_name, name, sizeof(rejected_name));
		rejected_value_hidden = (value == NULL);
		strlcpy(rejected_value, value ? value : "", sizeof(rejected_value));
		strlcpy(rejected_detail,
				GUC_check_errdetail_string ? GUC_check_errdetail_string : "",
				sizeof(rejected_detail));
	}
	return false;
}

/*
 * Read an integer setting as given at start, before it is defined: a value
 * that does not parse (units included, for a setting with a unit) or is
 * out of range is refused, where PostgreSQL would warn and use the default.
 * Returns false when the setting is not set.
 */
static bool
strict_int(const char *name, int min, int max, int flags, int *value)
{
	const char *raw = GetConfigOption(name, true, false);
	char		detail[160];

	if (raw == NULL)
		return false;
	if (parse_int(raw, value, flags, NULL) && *value >= min && *value <= max)
		return true;
	if (flags & GUC_UNIT_MS)
		snprintf(detail, sizeof(detail),
				 "%s must be a duration between %d and %d ms; units are us, ms, s, min, h and d.",
				 name, min, max);
	else
		snprintf(detail, sizeof(detail),
				 "%s must be an integer between %d and %d.", name, min, max);
	refuse(name, raw, detail);
	return false;				/* not reached */
}

/*
 * Define an integer setting, after checking its value strictly: see
 * strict_int.
 */
static void
define_int(const char *name, const char *short_desc, const char *long_desc,
		   int *var, int boot, int min, int max, GucContext context, int flags)
{
	int			value;

	(void) strict_int(name, min, max, flags, &value);
	DefineCustomIntVariable(name, short_desc, long_desc, var, boot, min, max,
							context, flags, NULL, NULL, NULL);
}

/* Read exactly n decimal digits. */
static bool
take_digits(const char **p, int n, int *value)
{
	*value = 0;
	for (int i = 0; i < n; i++)
	{
		if (**p < '0' || **p > '9')
			return false;
		*value = *value * 10 + (**p - '0');
		(*p)++;
	}
	return true;
}

/* Days from 1970-01-01 to a proleptic Gregorian date. */
static int64
days_from_civil(int y, int m, int d)
{
	int64		era;
	int			yoe,
				doy,
				doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/*
 * Parse "YYYY-MM-DD[( |T)HH:MM:SS[.fff]][Z|+HH[:MM]|-HH[:MM]]" (UTC when no
 * zone is given) into Unix milliseconds.  The epoch is read before the
 * server's time zone settings are in place, hence a parser of our own.
 */
bool
flake_parse_epoch(const char *str, int64 *unix_ms)
{
	const char *p = str;
	int			y,
				mo,
				d,
				h = 0,
				mi = 0,
				s = 0,
				ms = 0,
				oh = 0,
				om = 0,
				sign = 0;
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	if (!take_digits(&p, 4, &y) || *p++ != '-' ||
		!take_digits(&p, 2, &mo) || *p++ != '-' ||
		!take_digits(&p, 2, &d))
		return false;
	if (*p == ' ' || *p == 'T')
	{
		p++;
		if (!take_digits(&p, 2, &h) || *p++ != ':' ||
			!take_digits(&p, 2, &mi) || *p++ != ':' ||
			!take_digits(&p, 2, &s))
			return false;
		if (*p == '.')
		{
			int			scale = 100;

			p++;
			if (*p < '0' || *p > '9')
				return false;
			/* digits below a millisecond must be zero */
			for (; *p >= '0' && *p <= '9'; p++, scale /= 10)
			{
				if (scale == 0 && *p != '0')
					return false;
				ms += (*p - '0') * scale;
			}
		}
	}
	if (*p == 'Z')
		p++;
	else if (*p == '+' || *p == '-')
	{
		sign = (*p++ == '-') ? -1 : 1;
		if (!take_digits(&p, 2, &oh))
			return false;
		if (*p == ':' && (p++, !take_digits(&p, 2, &om)))
			return false;
	}
	if (*p != '\0' || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
		(mo == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))) ||
		h > 23 || mi > 59 || s > 59 || oh > 15 || om > 59)
		return false;

	*unix_ms = ((days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s) -
				sign * (oh * 3600 + om * 60)) * 1000 + ms;
	return true;
}

static bool
check_epoch(char **newval, void **extra, GucSource source)
{
	int64		unix_ms;

	if (!flake_parse_epoch(*newval, &unix_ms))
	{
		GUC_check_errdetail("flake.epoch must be a UTC timestamp such as \"2015-01-01 00:00:00+00\".");
		return flake_reject_setting("flake.epoch", *newval);
	}
	if (unix_ms < 0)
	{
		GUC_check_errdetail("flake.epoch must not be before 1970-01-01.");
		return flake_reject_setting("flake.epoch", *newval);
	}
	/* ids before the epoch cannot be made: a future epoch is a mistake */
	if (unix_ms > flake_clock_unix_ms())
	{
		GUC_check_errdetail("flake.epoch must not be later than the system clock.");
		return flake_reject_setting("flake.epoch", *newval);
	}
	return true;
}

static void
assign_epoch(const char *newval, void *extra)
{
	(void) flake_parse_epoch(newval, &flake_epoch_unix_ms);
}

/*
 * Parse a node list such as "0-511" or "3,8-15": comma-separated numbers
 * and inclusive ranges, each inside [0, limit), in increasing order without
 * overlap (so that no node can be handed out twice).  Calls add(lo, hi, arg)
 * for each range when add is not NULL.  Returns NULL, or what is wrong.
 */
static const char *
parse_nodes(const char *str, int64 limit,
			void (*add) (int64 lo, int64 hi, void *arg), void *arg)
{
	const char *p = str;
	int64		prev_hi = -1;

	for (;;)
	{
		int64		lo,
					hi;
		char	   *end;

		while (*p == ' ')
			p++;
		if (*p < '0' || *p > '9')
			return "expected a node number or a range such as 0-511";
		lo = strtoll(p, &end, 10);
		p = end;
		hi = lo;
		while (*p == ' ')
			p++;
		if (*p == '-')
		{
			p++;
			while (*p == ' ')
				p++;
			if (*p < '0' || *p > '9')
				return "a range needs an upper end, as in 0-511";
			hi = strtoll(p, &end, 10);
			p = end;
			while (*p == ' ')
				p++;
		}
		if (lo > hi)
			return "a range must not end below its start";
		if (hi >= limit)
			return "a node is outside the node space";
		if (lo <= prev_hi)
			return "nodes must be listed in increasing order, without overlap";
		prev_hi = hi;
		if (add)
			add(lo, hi, arg);
		if (*p == '\0')
			return NULL;
		if (*p++ != ',')
			return "nodes are separated by commas";
	}
}

/*
 * Check a node list against a node space of the given bits; space names
 * that space in the message.
 */
static bool
check_node_list(const char *name, const char *value, int bits, const char *space)
{
	const char *problem;

	if (*value == '\0')
		return true;
	problem = parse_nodes(value, INT64CONST(1) << bits, NULL, NULL);
	if (problem == NULL)
		return true;
	GUC_check_errdetail("%s (%s allows nodes 0 to " INT64_FORMAT ").",
						problem, space, (INT64CONST(1) << bits) - 1);
	return flake_reject_setting(name, value);
}

static bool
check_nodes(char **newval, void **extra, GucSource source)
{
	char		space[32];

	snprintf(space, sizeof(space), "flake.node_bits = %d", flake_node_bits);
	return check_node_list("flake.nodes", *newval, flake_node_bits, space);
}

static bool
check_rekey_nodes(char **newval, void **extra, GucSource source)
{
	char		space[32];

	snprintf(space, sizeof(space), "flake.node_bits = %d", flake_node_bits);
	return check_node_list("flake.rekey_nodes", *newval, flake_node_bits, space);
}

static void
mark_nodes(int64 lo, int64 hi, void *arg)
{
	for (int64 n = lo; n <= hi; n++)
		((bool *) arg)[n] = true;
}

/* The first node of flake.rekey_nodes that flake.nodes also lists. */
typedef struct NodeOverlap
{
	bool	   *leasable;		/* by node: in flake.nodes */
	int64		first;			/* -1 while none is found */
} NodeOverlap;

static void
find_overlap(int64 lo, int64 hi, void *arg)
{
	NodeOverlap *overlap = (NodeOverlap *) arg;

	for (int64 n = lo; n <= hi && overlap->first < 0; n++)
		if (overlap->leasable[n])
			overlap->first = n;
}

/*
 * Rekeyed ids lie in the past, where live ids may exist on any node live
 * generation could lease: the nodes reserved for rekeys must be nodes it
 * never leases.
 */
static void
check_rekey_nodes_apart(void)
{
	NodeOverlap overlap;

	if (flake_rekey_nodes_string == NULL || *flake_rekey_nodes_string == '\0')
		return;
	overlap.leasable = palloc0(sizeof(bool) << flake_node_bits);
	overlap.first = -1;
	flake_nodes_foreach(flake_nodes_string, flake_node_bits, mark_nodes, overlap.leasable);
	flake_nodes_foreach(flake_rekey_nodes_string, flake_node_bits, find_overlap, &overlap);
	pfree(overlap.leasable);
	if (overlap.first >= 0)
		ereport(process_shared_preload_libraries_in_progress ? FATAL : ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("node " INT64_FORMAT " is in both flake.nodes and flake.rekey_nodes",
						overlap.first),
				 errdetail("flake_next() leases the nodes of flake.nodes (every node when it is empty); the ids of rekeys need nodes it never uses."),
				 errhint("Leave the nodes of flake.rekey_nodes out of flake.nodes, for example flake.nodes = '0-1015' and flake.rekey_nodes = '1016-1023'.")));
}

static bool
check_randflake_nodes(char **newval, void **extra, GucSource source)
{
	return check_node_list("flake.randflake_nodes", *newval,
						   RANDFLAKE_NODE_BITS, "the randflake layout");
}

static void
count_range(int64 lo, int64 hi, void *arg)
{
	*(int64 *) arg += hi - lo + 1;
}

/* The number of nodes in a nodes setting known to be valid. */
int64
flake_nodes_count(const char *str, int bits)
{
	int64		count = 0;

	flake_nodes_foreach(str, bits, count_range, &count);
	return count;
}

/*
 * What is wrong with a list in the syntax of the nodes settings, for a node
 * space of the given bits, or NULL.
 */
const char *
flake_nodes_problem(const char *str, int bits)
{
	return parse_nodes(str, INT64CONST(1) << bits, NULL, NULL);
}

/* Parse a nodes setting known to be valid; empty means every node. */
void
flake_nodes_foreach(const char *str, int bits,
					void (*add) (int64 lo, int64 hi, void *arg), void *arg)
{
	if (*str == '\0')
		add(0, (INT64CONST(1) << bits) - 1, arg);
	else
		(void) parse_nodes(str, INT64CONST(1) << bits, add, arg);
}

/*
 * Without preloading, the server-start settings cannot be defined (a backend
 * may not create PGC_POSTMASTER settings), but decoding still needs the
 * layout: take the values from postgresql.conf, checked the same way.
 */
static void
read_postmaster_settings(void)
{
	const char *value;
	char	   *copy;
	int			bits;

	if ((value = GetConfigOption("flake.epoch", true, false)) != NULL)
	{
		copy = pstrdup(value);
		if (check_epoch(&copy, NULL, PGC_S_FILE))
			assign_epoch(copy, NULL);
		flake_epoch_string = copy;
	}
	else
		flake_epoch_string = "2015-01-01 00:00:00+00";
	if (strict_int("flake.node_bits", 0, FLAKE_MAX_NODE_BITS, 0, &bits))
		flake_node_bits = bits;
	if (strict_int("flake.sequence_bits", MIN_SEQUENCE_BITS, MAX_SEQUENCE_BITS, 0, &bits))
		flake_sequence_bits = bits;
	copy = pstrdup((value = GetConfigOption("flake.nodes", true, false)) ? value : "");
	if (check_nodes(&copy, NULL, PGC_S_FILE))
		flake_nodes_string = copy;
}

/*
 * Define the settings, from _PG_init.  The layout settings come before
 * flake.nodes, whose check needs the node space.  Any invalid value is an
 * error here, which stops a server that preloads flake from starting.
 */
void
flake_define_settings(void)
{
	defining_settings = true;
	if (process_shared_preload_libraries_in_progress)
	{
		DefineCustomStringVariable("flake.epoch",
								   "Start of flake_next() timestamps.",
								   "A UTC timestamp; ids count milliseconds from it.",
								   &flake_epoch_string,
								   "2015-01-01 00:00:00+00",
								   PGC_POSTMASTER, 0,
								   check_epoch, assign_epoch, NULL);
		define_int("flake.node_bits",
				   "Bits of a flake_next() id that hold the node.",
				   NULL,
				   &flake_node_bits,
				   10, 0, FLAKE_MAX_NODE_BITS,
				   PGC_POSTMASTER, 0);
		define_int("flake.sequence_bits",
				   "Bits of a flake_next() id that hold the sequence within a millisecond.",
				   NULL,
				   &flake_sequence_bits,
				   12, MIN_SEQUENCE_BITS, MAX_SEQUENCE_BITS,
				   PGC_POSTMASTER, 0);
		DefineCustomStringVariable("flake.nodes",
								   "Nodes this server may lease to flake_next(), such as 0-511 or 3,8-15.",
								   "Empty means the whole node space. Servers that share keys need disjoint sets.",
								   &flake_nodes_string,
								   "",
								   PGC_POSTMASTER, 0,
								   check_nodes, NULL, NULL);
		DefineCustomStringVariable("flake.rekey_nodes",
								   "Nodes reserved for the ids flake_migrate() gives existing rows, such as 1016-1023.",
								   "flake.nodes must leave them out, here and on every server that shares keys. Empty: no rekeys with flake_next.",
								   &flake_rekey_nodes_string,
								   "",
								   PGC_POSTMASTER, 0,
								   check_rekey_nodes, NULL, NULL);
		DefineCustomStringVariable("flake.randflake_nodes",
								   "Nodes this server may lease to randflake_next(), such as 0-1023.",
								   "Servers that share a secret need disjoint sets.",
								   &flake_randflake_nodes_string,
								   "0-131071",
								   PGC_POSTMASTER, 0,
								   check_randflake_nodes, NULL, NULL);
	}
	else
		read_postmaster_settings();
	flake_define_randflake_secret();
	define_int("flake.max_borrow",
			   "How far flake_next() ids may run ahead of the clock.",
			   "When a node's sequence for a millisecond is used up, ids borrow later milliseconds up to this far ahead; beyond it, generation waits for the clock.",
			   &flake_max_borrow_ms,
			   1000, 0, MAX_BORROW_MS,
			   PGC_SIGHUP, GUC_UNIT_MS);
	defining_settings = false;

	if (rejected_name[0] != '\0')
		refuse(rejected_name, rejected_value_hidden ? NULL : rejected_value,
			   rejected_detail);
	check_rekey_nodes_apart();
	if (63 - flake_node_bits - flake_sequence_bits < FLAKE_MIN_TIMESTAMP_BITS)
		ereport(process_shared_preload_libraries_in_progress ? FATAL : ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("flake.node_bits (%d) and flake.sequence_bits (%d) leave %d timestamp bits",
						flake_node_bits, flake_sequence_bits,
						63 - flake_node_bits - flake_sequence_bits),
				 errdetail("A flake_next() id needs at least %d bits of timestamp (about 24 days of milliseconds); node and sequence bits may add up to at most %d.",
						   FLAKE_MIN_TIMESTAMP_BITS, MAX_SEQUENCE_BITS)));
}
