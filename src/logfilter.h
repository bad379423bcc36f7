/*-------------------------------------------------------------------------
 *
 * logfilter.h
 *	  Keeping randflake keys out of the server log.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_LOGFILTER_H
#define FLAKE_LOGFILTER_H

extern void flake_log_filter_init(void);

#endif							/* FLAKE_LOGFILTER_H */
