/*-------------------------------------------------------------------------
 *
 * serial_default.h
 *	  flake.serial_default: new serial and identity columns get flake ids.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLAKE_SERIAL_DEFAULT_H
#define FLAKE_SERIAL_DEFAULT_H

#include "nodes/plannodes.h"

extern void serial_default_define_setting(void);
extern void serial_default_enable(void);
extern PlannedStmt *serial_default_rewrite(PlannedStmt *pstmt, bool *readOnlyTree);

#endif							/* FLAKE_SERIAL_DEFAULT_H */
