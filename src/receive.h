/*-------------------------------------------------------------------------
 *
 * receive.h
 *	  Ids that arrive from another server raise this server's marks.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_RECEIVE_H
#define FLAKE_RECEIVE_H

extern void flake_receive_subscribed_tables(void);

#endif							/* FLAKE_RECEIVE_H */
