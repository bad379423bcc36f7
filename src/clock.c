/*-------------------------------------------------------------------------
 *
 * clock.c
 *	  The wall clock in milliseconds, cheaply, and the monotonic clock.
 *
 * Every id needs the current millisecond, and clock_gettime() costs about
 * as much as the rest of making an id.  Where the CPU has an invariant
 * time-stamp counter, a backend reads the real clock, works out at which
 * counter value that millisecond must be over, and until then answers with
 * the same millisecond the clock would have given.  The counter's rate is
 * measured against the clock as the backend runs, with a safety margin;
 * anything unexpected (no rate yet, the counter going back, a clock step
 * that breaks the measurement) falls back to the real clock.  Ids stay
 * unique and ordered whatever the clock says; this only saves time.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <time.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(FLAKE_PORTABLE)
#include <cpuid.h>
#include <x86intrin.h>
#define FLAKE_HAVE_TSC
#endif

#include "clock.h"

static int64
clock_read_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#ifdef FLAKE_HAVE_TSC

/* Re-measure the counter's rate over at least this many ns of clock. */
#define CALIBRATION_NS		(20 * 1000 * 1000)
/* Give up on the counter this long before the millisecond could end. */
#define MARGIN_NS			(50 * 1000)

static int	tsc_usable = -1;	/* unknown until the first call */
static uint64 tsc_deadline = 0; /* counter value where cached_ms may end */
static uint64 tsc_read = 0;		/* counter at the last real clock read */
static int64 cached_ms = 0;

static uint64 calib_tsc = 0;	/* start of the current rate measurement */
static int64 calib_ns = 0;
static double ticks_per_ns = 0; /* 0 until measured */

static bool
tsc_is_invariant(void)
{
	unsigned int eax,
				ebx,
				ecx,
				edx;

	/* CPUID 0x80000007, EDX bit 8: the counter runs at a constant rate */
	if (__get_cpuid(0x80000000, &eax, &ebx, &ecx, &edx) == 0 || eax < 0x80000007)
		return false;
	__get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx);
	return (edx & (1 << 8)) != 0;
}

static int64
clock_read_ms_calibrating(uint64 tsc)
{
	int64		ns = clock_read_ns();
	int64		span = ns - calib_ns;
	uint64		ticks = tsc - calib_tsc;

	if (calib_ns == 0 || span < 0 || tsc < calib_tsc)
	{
		/* first read, or the clock or counter went back: start over */
		ticks_per_ns = 0;
		calib_ns = ns;
		calib_tsc = tsc;
	}
	else if (span >= CALIBRATION_NS)
	{
		double		rate = (double) ticks / (double) span;

		/* a rate far off the last one means a clock step: start over */
		if (ticks_per_ns != 0 && (rate < ticks_per_ns * 0.9 || rate > ticks_per_ns * 1.1))
			rate = 0;
		ticks_per_ns = rate;
		calib_ns = ns;
		calib_tsc = tsc;
	}

	tsc_read = tsc;
	cached_ms = ns / 1000000;
	if (ticks_per_ns > 0)
	{
		int64		left_ns = 1000000 - ns % 1000000 - MARGIN_NS;

		/* with the rate a tenth too high, the deadline is still early */
		tsc_deadline = left_ns > 0 ? tsc + (uint64) (left_ns * ticks_per_ns * 0.9) : tsc;
	}
	else
		tsc_deadline = tsc;
	return cached_ms;
}

int64
flake_clock_unix_ms(void)
{
	uint64		tsc;

	if (unlikely(tsc_usable < 0))
		tsc_usable = tsc_is_invariant();
	if (!tsc_usable)
		return clock_read_ns() / 1000000;

	tsc = __rdtsc();
	if (tsc >= tsc_read && tsc < tsc_deadline)
		return cached_ms;
	return clock_read_ms_calibrating(tsc);
}

#else							/* !FLAKE_HAVE_TSC */

int64
flake_clock_unix_ms(void)
{
	return clock_read_ns() / 1000000;
}

#endif

/*
 * The monotonic clock is one for the whole system and does not step with
 * the wall clock, so backends can compare its readings to pace a node's
 * seconds while the wall clock is behind.
 */
int64
flake_clock_monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
